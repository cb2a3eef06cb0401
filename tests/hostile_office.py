"""Hostile Office files, each with the reason lakegraph refuses it (or the note it loads with):
a password-protected .docx (encrypted by msoffcrypto-tool, as Word does: an OLE container with an
EncryptedPackage), macro-enabled .docm and .pptm, zip bombs (one part past the ratio, parts past
the total), a truncated package, XML with external entities and with billion-laughs expansion,
malformed XML, a .docx that is really a PDF, HTML or a legacy .doc, an empty file, a package
without its main part, an encrypted zip entry.

    python -m tests.hostile_office OUT
"""

from __future__ import annotations

import argparse
import io
import struct
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from msoffcrypto.format.ooxml import OOXMLFile

from worker.demo.docx import Paragraph, Run, make_docx
from worker.demo.pdf import make_pdf

DOCUMENT = "word/document.xml"


@dataclass(frozen=True)
class Hostile:
    name: str
    data: bytes
    reason: str  # what `lakegraph errors` says, in part; "" when the file loads
    note: str = ""  # what the loaded document's problems say, in part


def plain_docx(text: str = "Secret procedure") -> bytes:
    return make_docx([Paragraph([Run("Overview")], heading=1), Paragraph([Run(text)])], title="Hostile sample")


def _replace(data: bytes, parts: dict[str, bytes], drop: tuple[str, ...] = ()) -> bytes:
    """The package with some parts replaced or added, others dropped."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            if info.filename not in parts and info.filename not in drop:
                archive.writestr(info.filename, source.read(info))
        for name, content in parts.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _document(body: str, prolog: str = "") -> bytes:
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{prolog}<w:document xmlns:w="{w}"><w:body>{body}</w:body></w:document>'.encode()


def _encrypted(data: bytes) -> bytes:
    out = io.BytesIO()
    OOXMLFile(io.BytesIO(data)).encrypt("hunter2", out)
    return out.getvalue()


def _encrypted_entry(data: bytes) -> bytes:
    """The package with its entries flagged as zip-encrypted (general-purpose bit 0)."""
    raw = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (found := raw.find(signature, start)) >= 0:
            flags = struct.unpack_from("<H", raw, found + offset)[0]
            struct.pack_into("<H", raw, found + offset, flags | 0x1)
            start = found + 4
    return bytes(raw)


def _macro_enabled(data: bytes, vba: str) -> bytes:
    return _replace(data, {vba: b'\xd0\xcf\x11\xe0 Attribute VB_Name = "AutoOpen"\nShell "calc.exe"\n'})


def _pptx() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Macro deck"
    slide.placeholders[1].text = "A slide beside a macro."
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def files() -> list[Hostile]:
    docx = plain_docx()
    laughs = "".join(f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10))
    billion = _document("<w:p><w:r><w:t>&lol9;</w:t></w:r></w:p>", f'<!DOCTYPE w:document [<!ENTITY lol0 "lol">{laughs}]>\n')
    external = _document("<w:p><w:r><w:t>&secret;</w:t></w:r></w:p>", '<!DOCTYPE w:document [<!ENTITY secret SYSTEM "file:///etc/passwd">]>\n')
    padding = " " * (40 << 20)  # 40 MB of spaces: a few dozen KB deflated
    bomb = _document(f"<w:p><w:r><w:t>bomb</w:t></w:r></w:p>{padding}")
    return [
        Hostile("encrypted.docx", _encrypted(docx), "encrypted: needs a password to open"),
        Hostile("encrypted-entries.docx", _encrypted_entry(docx), "encrypted zip entry"),
        Hostile("macro-document.docm", _macro_enabled(docx, "word/vbaProject.bin"), "", "macros (vbaProject.bin) were not read or run"),
        Hostile("macro-deck.pptm", _macro_enabled(_pptx(), "ppt/vbaProject.bin"), "", "macros (vbaProject.bin) were not read or run"),
        Hostile("ratio-bomb.docx", _replace(docx, {DOCUMENT: bomb}), "zip bomb: word/document.xml inflates past documents.unpack_ratio"),
        Hostile("truncated.docx", docx[: len(docx) // 2], "truncated or corrupt zip package"),
        Hostile("external-entity.docx", _replace(docx, {DOCUMENT: external}), "declares a DTD"),
        Hostile("billion-laughs.docx", _replace(docx, {DOCUMENT: billion}), "declares a DTD"),
        Hostile("malformed.docx", _replace(docx, {DOCUMENT: b"<w:document><w:body><w:p>"}), "malformed XML in word/document.xml"),
        Hostile("really-a-pdf.docx", make_pdf([["A PDF named as a Word file"]]), "not a Word package: the bytes are a PDF"),
        Hostile("really-html.docx", b"<!DOCTYPE html><html><body><h1>Export</h1></body></html>", "not a Word package: the bytes are HTML"),
        Hostile("legacy.doc.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 1024, "a legacy binary Office file"),
        Hostile("empty.pptx", b"", "empty file"),
        Hostile("no-main-part.docx", _replace(docx, {}, drop=("_rels/.rels",)), "no main document part"),
    ]


def write(root: Path) -> list[Hostile]:
    root.mkdir(parents=True, exist_ok=True)
    made = files()
    for hostile in made:
        (root / hostile.name).write_bytes(hostile.data)
    return made


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    written = write(parser.parse_args().root)
    sys.stdout.write(f"{len(written)} hostile Office files\n")
