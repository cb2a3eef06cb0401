"""Where a PDF destination points: a page index and, when the destination says, a height on it.

Destinations come as names (looked up in the document's name tree), as arrays `[page /XYZ left
top zoom]`, or as outline items; all end up as a `Point`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pypdf import PdfReader
from pypdf.generic import ArrayObject, Destination, IndirectObject

# Any error: on hostile files pypdf raises far more than PdfReadError (seen: DependencyError for a
# JBIG2 or Brotli stream, DeprecationError for an /A85 filter name, LimitReachedError,
# NotImplementedError, AssertionError, zlib and struct errors), and every read of a part of a PDF
# (a page's text, its links, the outline, the metadata) degrades alone. A parse past its time
# limit is not an Exception (time_limit.ParseTimeout), so it still stops the parse.
READ_ERRORS: tuple[type[Exception], ...] = (Exception,)
_TOP_AT = {"/XYZ": 3, "/FitH": 2, "/FitBH": 2, "/FitR": 5}  # where an array destination keeps its top


@dataclass(frozen=True)
class Point:
    page: int
    top: float | None  # None: the top of the page


class Destinations:
    def __init__(self, reader: PdfReader) -> None:
        self.reader = reader
        self.pages = {page.indirect_reference.idnum: index for index, page in enumerate(reader.pages) if page.indirect_reference is not None}
        self._named: dict[str, Destination] | None = None

    @property
    def named(self) -> dict[str, Destination]:
        if self._named is None:
            try:
                self._named = dict(self.reader.named_destinations)
            except READ_ERRORS:
                self._named = {}
        return self._named

    def of_item(self, item: Destination) -> Point | None:
        try:
            page = self.reader.get_destination_page_number(item)
        except READ_ERRORS:
            return None
        if page is None or page < 0:
            return None
        top = item.get("/Top")
        return Point(page, float(top) if isinstance(top, int | float) else None)

    def resolve(self, dest: object) -> Point | None:
        """A name or an array destination, as found in a GoTo action or an annotation's /Dest."""
        try:
            if isinstance(dest, IndirectObject):
                dest = dest.get_object()
            if isinstance(dest, str | bytes):
                name = dest.decode("latin-1") if isinstance(dest, bytes) else str(dest)
                item = self.named.get(name) or self.named.get(name.lstrip("/"))
                return self.of_item(item) if item is not None else None
            if isinstance(dest, ArrayObject) and dest:
                target = dest[0]
                page = self.pages.get(target.idnum) if isinstance(target, IndirectObject) else int(target)
                if page is None:
                    return None
                at = _TOP_AT.get(str(dest[1])) if len(dest) > 1 else None
                top = dest[at] if at is not None and len(dest) > at else None
                return Point(page, float(top) if isinstance(top, int | float) else None)
        except READ_ERRORS:
            return None
        return None
