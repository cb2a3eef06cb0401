"""An Office file's zip package, opened defensively: what the bytes really are is checked before
anything is unpacked, and only the XML parts a reader asks for are ever decompressed, each
within the limits (`documents.unpacked_bytes` in all, `documents.unpack_ratio` per part) that
stop a zip bomb while it inflates, not after. Pictures, embedded objects and macros are never read.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
import zlib
from dataclasses import dataclass, field

from lxml import etree

from worker.documents.parsers.office.xml import parse_xml

ZIP_MAGIC = b"PK\x03\x04"
CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # an OLE compound file: legacy .doc/.ppt, or encrypted OOXML
CHUNK = 1 << 20
RATIO_SLACK = 1 << 16  # a tiny part may inflate past the ratio without being a bomb
PACKAGE_RELS = "_rels/.rels"
MACROS = "vbaproject.bin"


class OfficeError(ValueError):
    """The bytes are not an Office file this reader will open; the message says why."""


@dataclass(frozen=True)
class UnpackLimits:
    total_bytes: int  # decompressed bytes read from one file, all parts together
    ratio: float  # decompressed over compressed size, per part


@dataclass(frozen=True)
class Relationship:
    target: str  # a part name inside the package, or the target as written when external
    external: bool
    type: str


@dataclass
class Package:
    """The parts of one zip package, read on demand within its limits."""

    archive: zipfile.ZipFile
    limits: UnpackLimits
    unpacked: int = 0
    names: dict[str, zipfile.ZipInfo] = field(default_factory=dict)

    @classmethod
    def open(cls, data: bytes, limits: UnpackLimits, kind: str) -> Package:
        _refuse_impostors(data, kind)
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, EOFError, ValueError) as err:
            raise OfficeError(f"truncated or corrupt zip package: {err}") from None
        package = cls(archive, limits)
        for info in archive.infolist():
            if info.flag_bits & 0x1:
                raise OfficeError(f"encrypted zip entry {info.filename}: needs a password to open")
            package.names[info.filename.lstrip("/").lower()] = info
        return package

    def has(self, name: str) -> bool:
        return name.lstrip("/").lower() in self.names

    def part_names(self) -> list[str]:
        return [info.filename.lstrip("/") for info in self.names.values()]

    def has_macros(self) -> bool:
        """Whether it carries a VBA project (.docm, .pptm, .xlsm, or one renamed): never read here."""
        return any(name.rsplit("/", 1)[-1] == MACROS for name in self.names)

    def read(self, name: str) -> bytes:
        info = self.names.get(name.lstrip("/").lower())
        if info is None:
            raise OfficeError(f"missing part {name}")
        allowed = min(self.limits.total_bytes - self.unpacked, int(self.limits.ratio * info.compress_size) + RATIO_SLACK)
        chunks, size = [], 0
        try:
            with self.archive.open(info) as stream:
                while chunk := stream.read(CHUNK):
                    size += len(chunk)
                    if size > allowed:
                        raise OfficeError(self._bomb(name, info, size))
                    chunks.append(chunk)
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, OSError) as err:
            raise OfficeError(f"truncated or corrupt part {name}: {err}") from None
        self.unpacked += size
        return b"".join(chunks)

    def xml(self, name: str) -> etree._Element:
        return parse_xml(self.read(name), name)

    def relationships(self, part: str) -> dict[str, Relationship]:
        """The relationships of a part (`""` for the package's own), by id; internal targets as part names."""
        folder, base = posixpath.split(part)
        rels_name = posixpath.join(folder, "_rels", f"{base}.rels") if part else PACKAGE_RELS
        if not self.has(rels_name):
            return {}
        found = {}
        for rel in self.xml(rels_name):
            target, mode = rel.get("Target", ""), rel.get("TargetMode", "")
            external = mode.lower() == "external"
            if not external:
                target = posixpath.normpath(target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target))
            found[rel.get("Id", "")] = Relationship(target, external, rel.get("Type", ""))
        return found

    def main_part(self, kind: str) -> str:
        """The package's main document part, as its own relationships name it."""
        for rel in self.relationships("").values():
            if rel.type.endswith("/officeDocument") and not rel.external:
                return rel.target
        raise OfficeError(f"no main document part: not a {kind} package")

    def _bomb(self, name: str, info: zipfile.ZipInfo, size: int) -> str:
        if self.unpacked + size > self.limits.total_bytes:
            return f"zip bomb: unpacking {name} passed documents.unpacked_bytes ({self.limits.total_bytes:,} bytes)"
        return f"zip bomb: {name} inflates past documents.unpack_ratio ({self.limits.ratio:g}x its {info.compress_size:,} compressed bytes)"


def _refuse_impostors(data: bytes, kind: str) -> None:
    """Bytes that are some other kind of file, named as an Office one, refused for what they are."""
    head = data[:1024].lstrip()
    if data.startswith((ZIP_MAGIC, b"PK\x05\x06")):
        return
    if data.startswith(CFB_MAGIC):
        if "EncryptedPackage".encode("utf-16-le") in data:
            raise OfficeError("encrypted: needs a password to open")
        raise OfficeError(f"a legacy binary Office file (OLE compound document), not a {kind} package")
    if head.startswith(b"%PDF-"):
        raise OfficeError(f"not a {kind} package: the bytes are a PDF")
    lowered = head[:200].lower()
    if lowered.startswith((b"<!doctype html", b"<html")) or b"<html" in lowered:
        raise OfficeError(f"not a {kind} package: the bytes are HTML")
    if lowered.startswith(b"<?xml"):
        raise OfficeError(f"not a {kind} package: the bytes are a flat XML file")
    if not data:
        raise OfficeError("empty file")
    raise OfficeError(f"not a {kind} package: no zip signature")
