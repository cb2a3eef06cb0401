"""Office files (Word, PowerPoint, Excel, OpenDocument text) read from their XML with lxml, the reader
chosen by measurement (docs/documents.md): the bytes are checked for what they really are, the
package is unpacked within its limits, and every part is parsed without DTDs or entities.
Imported only when a library holds such a file."""

from __future__ import annotations

from collections.abc import Callable

from worker.documents.model import ParsedFile
from worker.documents.parsers.office import docx, odt, pptx, xlsx
from worker.documents.parsers.office.package import OfficeError, Package, UnpackLimits
from worker.documents.parsers.office.xml import UnsafeXml
from worker.documents.rules import DocumentRules

READERS: dict[str, tuple[str, Callable[..., ParsedFile]]] = {
    "docx": ("Word", docx.parse),
    "pptx": ("PowerPoint", pptx.parse),
    "xlsx": ("Excel", xlsx.parse),
    "odt": ("OpenDocument text", odt.parse),
}
MACROS_NOTE = "its macros (vbaProject.bin) were not read or run"


class OfficeRefused(ValueError):
    """The file cannot be read as the Office format its name says; the message says why."""


def parse(fmt: str, data: bytes, rules: DocumentRules) -> ParsedFile:
    kind, reader = READERS[fmt]
    try:
        package = Package.open(data, UnpackLimits(rules.unpacked_bytes, rules.unpack_ratio), kind)
        parsed = reader(package, rules.id_fields, rules.patterns)
    except (OfficeError, UnsafeXml) as err:
        raise OfficeRefused(str(err)) from None
    if package.has_macros():
        parsed.problems.append(MACROS_NOTE)
    return parsed
