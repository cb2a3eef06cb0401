"""Link annotations: `/URI` actions (doc://, relative paths, web URLs), links to other PDFs
(GoToR) and jumps inside the document (GoTo, /Dest) with where they sit on the page.

A link that wraps across lines is drawn as one rectangle per line: consecutive rectangles with
the same target on neighbouring lines (or continuing at the top of the next page) are one link.
"""

from __future__ import annotations

from dataclasses import dataclass

from pypdf import PageObject

from worker.documents.parsers.pdf.destinations import READ_ERRORS, Destinations, Point

WRAP_GAP = 1.5  # rectangle heights between the lines of one wrapped link


@dataclass(frozen=True)
class PageLink:
    page: int
    top: float
    bottom: float
    href: str  # "" for a jump inside the document
    jump: Point | None  # where an internal link goes
    name: str = ""  # the named destination it goes to, if named


def _rect(annotation: dict) -> tuple[float, float]:
    _x0, y0, _x1, y1 = (float(value) for value in annotation["/Rect"])
    return max(y0, y1), min(y0, y1)


def _jump(dest: object, destinations: Destinations) -> tuple[str, Point | None, str] | None:
    point = destinations.resolve(dest) if dest is not None else None
    if point is None:
        return None
    return "", point, str(dest).lstrip("/") if isinstance(dest, str) else ""


def _target(annotation: dict, destinations: Destinations) -> tuple[str, Point | None, str] | None:
    """(href, jump point, destination name): an href for links out, a point for jumps inside."""
    action = annotation.get("/A")
    action = action.get_object() if action is not None else None
    if action is None:
        return _jump(annotation.get("/Dest"), destinations)
    kind = action.get("/S")
    if kind == "/URI" and action.get("/URI"):
        uri = action["/URI"]
        return (uri.decode("utf-8", "replace") if isinstance(uri, bytes) else str(uri)).strip(), None, ""
    if kind == "/GoTo":
        return _jump(action.get("/D"), destinations)
    if kind in ("/GoToR", "/Launch") and action.get("/F") is not None:
        spec = action["/F"].get_object() if hasattr(action["/F"], "get_object") else action["/F"]
        path = str(spec.get("/UF") or spec.get("/F") or "") if hasattr(spec, "get") else str(spec)
        dest = action.get("/D")
        anchor = f"#{dest}" if isinstance(dest, str) and dest else ""
        return (f"{path}{anchor}", None, "") if path else None
    return None


def page_links(page: PageObject, index: int, destinations: Destinations) -> list[PageLink]:
    found = []
    try:
        annotations = page.get("/Annots") or []
        annotations = list(annotations.get_object() if hasattr(annotations, "get_object") else annotations)
    except READ_ERRORS:
        return []
    for reference in annotations:
        try:
            annotation = reference.get_object()
            if annotation.get("/Subtype") != "/Link":
                continue
            target = _target(annotation, destinations)
            if target is None or not (target[0] or target[1]):
                continue
            top, bottom = _rect(annotation)
        except READ_ERRORS:
            continue
        found.append(PageLink(index, top, bottom, *target))
    return found


def merge_wrapped(links: list[PageLink], first_on_page: set[int]) -> list[PageLink]:
    """One link per wrapped run of rectangles (the run keeps its first rectangle's place).
    `first_on_page` holds the positions in `links` of each page's first link."""
    merged: list[PageLink] = []
    for position, link in enumerate(links):
        if merged:
            last = merged[-1]
            previous = links[position - 1]
            same_target = (link.href, link.jump) == (last.href, last.jump)
            height = max(previous.top - previous.bottom, 1.0)
            gap = previous.bottom - link.top
            next_line = link.page == previous.page and -height <= gap <= WRAP_GAP * height
            next_page = link.page == previous.page + 1 and position in first_on_page
            if same_target and (next_line or next_page):
                continue
        merged.append(link)
    return merged
