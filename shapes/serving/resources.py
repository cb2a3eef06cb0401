"""What an agent or author watches, as MCP resources: each is a shape call named by a URI.

The catalogue (`RESOURCES`) is the one declaration: its URI (an RFC 6570 template where it takes a
value), what it is, the shape that answers it and with which parameters, and which changes of the
graph move it (`moved_by`). From it come the MCP resources and templates, the resource links every
tool answer carries (`links`, from each spec's `refers`), which subscriptions are accepted
(`known`), which subscribed URIs a change notifies (`affected`), and the catalogue in
docs/shapes.md.

A place in the library is `lakegraph://outline/<uri>` with the URI's `#` written `%23`, so a
section's resource is one URI a client can subscribe to as it was given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from functools import cached_property
from typing import Any
from urllib.parse import quote

from mcp.shared.uri_template import UriTemplate

from shapes.spec import Refers, ShapeSpec
from worker.shared.changes import Change

SCHEME = "lakegraph://"
OUTLINE_DEPTH = 3  # levels a place's resource shows below it
MAX_LINKS = 50  # resource links one tool answer carries at most (a page's rows bound them already)


def outline_uri(uri: str | None) -> str:
    return f"{SCHEME}outline" if uri is None else f"{SCHEME}outline/{quote(uri, safe='/')}"


THEMES_URI = f"{SCHEME}themes"


def table_uri(table: str) -> str:
    return f"{SCHEME}tables/{quote(table, safe='')}"


def theme_uri(theme: str) -> str:
    return f"{SCHEME}themes/{theme}"


REFERENCE_URIS: dict[Refers, Callable[[str], str]] = {
    "outline": outline_uri,
    "table": table_uri,
    "column": lambda column: table_uri(column.rsplit(".", 1)[0]),
    "theme": theme_uri,
}


def _place_moved(change: Change, place: str | None) -> bool:
    """A document's change moves its own outline and those of the folders and library above it
    (their counts and children); the libraries' list moves with any document."""
    if change.source != "documents":
        return False
    if place is None or not change.keys:
        return True
    return any(key == place or key.startswith((f"{place}/", f"{place}#")) for key in change.keys)


@dataclass(frozen=True)
class ResourceSpec:
    uri: str  # the URI, or an RFC 6570 template of it
    name: str
    description: str
    shape: str
    params: Callable[[dict[str, str]], dict[str, Any]]  # the template's values -> the shape's parameters
    moved_by: Callable[[Change, dict[str, str]], bool]  # (a change, the subscribed URI's values) -> it may answer differently

    @cached_property
    def template(self) -> UriTemplate | None:
        """Parsed once: every subscribed URI is matched against the catalogue at each change."""
        return UriTemplate.parse(self.uri) if "{" in self.uri else None

    def match(self, uri: str) -> dict[str, str] | None:
        """The values of `uri` if it is this resource (a query such as `?cursor=` is not part of a
        subscription's URI), else None."""
        template = self.template
        if template is None:
            return {} if uri == self.uri else None
        found = template.match(uri)
        if found is None or any(isinstance(value, list) for value in found.values()):
            return None
        return {name: str(value) for name, value in found.items()}


def _themes(change: Change, _: dict[str, str]) -> bool:
    return change.source == "themes"


TABLE_SOURCES = ("warehouse", "glossary", "query-log")  # the sources whose changes name tables


def _tables(change: Change, values: dict[str, str]) -> bool:
    return change.source in TABLE_SOURCES and (not change.keys or values["table"] in change.keys)


def _paged(values: dict[str, str]) -> dict[str, Any]:
    return {"cursor": values["cursor"]} if values.get("cursor") else {}


RESOURCES = (
    ResourceSpec(
        f"{SCHEME}outline",
        "libraries",
        "The document libraries and their top folders, with counts.",
        "outline",
        lambda values: {"depth": 2},
        lambda change, values: _place_moved(change, None),
    ),
    ResourceSpec(
        f"{SCHEME}outline/{{+uri}}{{?cursor}}",
        "outline",
        f"A library, folder, document or section ({OUTLINE_DEPTH} levels below it): its sections, links and counts. Write a section's # as %23.",
        "outline",
        lambda values: {"uri": values["uri"], "depth": OUTLINE_DEPTH, **_paged(values)},
        lambda change, values: _place_moved(change, values["uri"]),
    ),
    ResourceSpec(
        f"{SCHEME}themes",
        "themes",
        "The map of themes at the coarsest level: each theme's size, name, central documents and crossovers.",
        "themes",
        lambda values: {},
        _themes,
    ),
    ResourceSpec(
        f"{SCHEME}themes/{{theme}}{{?cursor}}",
        "theme",
        "One theme (an id such as T12): its summary and its member documents, paged.",
        "themes",
        lambda values: {"theme": values["theme"], **_paged(values)},
        _themes,
    ),
    ResourceSpec(
        f"{SCHEME}theme-changes",
        "theme changes",
        "Every themes run's changes: born, grown, shrunk, split, merged, documents moved.",
        "theme_changes",
        lambda values: {},
        _themes,
    ),
    ResourceSpec(
        f"{SCHEME}tables/{{table}}",
        "table",
        "A warehouse table by its id: columns, keys, real join partners and tagged terms.",
        "table",
        lambda values: {"table": values["table"]},
        _tables,
    ),
    ResourceSpec(
        f"{SCHEME}freshness",
        "freshness",
        "When the graph last applied a change from each source, and what is still queued.",
        "freshness",
        lambda values: {},
        lambda change, values: True,
    ),
)


def resolve(uri: str) -> tuple[ResourceSpec, dict[str, str]] | None:
    """The catalogue entry `uri` names and its values."""
    for resource in RESOURCES:
        values = resource.match(uri)
        if values is not None:
            return resource, values
    return None


def known(uri: str) -> bool:
    return resolve(uri) is not None


def affected(change: Change, uris: Iterable[str]) -> set[str]:
    """Of the subscribed `uris`, those `change` may make answer differently."""
    moved = set()
    for uri in uris:
        found = resolve(uri)
        if found is not None and found[0].moved_by(change, found[1]):
            moved.add(uri)
    return moved


def links(spec: ShapeSpec, result: Any) -> dict[str, str]:
    """The resource URIs an answer names -> what it calls them, in the order it names them, at
    most `MAX_LINKS`."""
    found: dict[str, str] = {}
    for kind, value in _references(result, spec.refers):
        found.setdefault(REFERENCE_URIS[kind](value), value)
        if len(found) == MAX_LINKS:
            break
    return found


def _references(value: Any, refers: Mapping[str, Refers]) -> Iterator[tuple[Refers, str]]:
    """(kind, name) for each field named in `refers`, walking dataclasses, dicts and lists."""
    if is_dataclass(value) and not isinstance(value, type):
        items: Iterable[tuple[str, Any]] = ((item.name, getattr(value, item.name)) for item in fields(value))
    elif isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _references(item, refers)
        return
    else:
        return
    for key, item in items:
        kind = refers.get(key) if isinstance(key, str) else None
        if kind is not None and isinstance(item, str) and item:
            yield kind, item
        elif kind is not None and isinstance(item, list):
            yield from ((kind, name) for name in item if isinstance(name, str) and name)
        else:
            yield from _references(item, refers)


CATALOGUE_BEGIN = "<!-- resource catalogue: generated by `python -m shapes.spec.docs`; do not edit -->"
CATALOGUE_END = "<!-- end of resource catalogue -->"


def catalogue() -> str:
    """The catalogue as the Markdown table docs/shapes.md shows."""
    rows = [f"| `{resource.uri}` | {resource.name} | `{resource.shape}` | {resource.description} |" for resource in RESOURCES]
    head = ["| URI (RFC 6570) | name | answered by | what it is |", "|---|---|---|---|"]
    return "\n".join([CATALOGUE_BEGIN, *head, *rows, CATALOGUE_END])
