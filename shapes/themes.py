"""The themes shape: the current themes of the document link graph, and their change log.

A header whose counts reconcile (documents = grouped + ungrouped), then per theme its stable id,
size and share, cohesion (conductance as a number and a word), the link targets its members
converge on (with how many members cite each), its most central documents (with their link weight
inside the theme), and its heaviest crossovers into other themes — all computed by the themes run
(`worker/themes/summary.py`), so the answer reads one node per theme, never every member. A theme's
members come from a call of their own (`theme=T12`), in URI order; like every shape's rows, themes
and members are cut to the answer's budget with the cursor that continues (`shapes/spec/budget.py`).
No LLM names themes: a theme is what it cites.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, Field, WithJsonSchema

from shapes.access import scope
from shapes.access.versioned import Versioned
from shapes.freshness import versions
from shapes.spec import Params, ShapeSpec
from shapes.spec.exceptions import NotFound, ShapeError
from worker.graph import theme_store
from worker.graph.schema import Label, Rel
from worker.graph.theme_store import THEME_ID_FORM
from worker.shared.grants import EVERYTHING, Grant

if TYPE_CHECKING:
    from collections.abc import Callable

    from neo4j import Driver

LATEST_RUN = f"""
MATCH (r:{Label.THEME_RUN})
RETURN r.id AS id, {theme_store.SEQ.format(node="r")} AS seq, toString(r.started) AS started, r.engine AS engine, r.mode AS mode, r.frontier AS frontier,
       r.gamma AS gamma, r.levels AS levels, r.duration AS duration
ORDER BY r.started DESC LIMIT 1
"""
DOCUMENT_COUNT = f"MATCH (d:{Label.DOCUMENT}) RETURN count(d) AS n"
# Every theme query reads the versions of one run, $run (see worker/graph/theme_store.py).
THEMES_AT_LEVEL = f"""
MATCH (t:{theme_store.VERSIONS} {{level: $level}}) WHERE {theme_store.visible("t")}
RETURN t.id AS id, {theme_store.props_at("t")}
"""
THEME = f"MATCH (t:{theme_store.VERSIONS} {{id: $theme}}) WHERE {theme_store.visible('t')} RETURN t.level AS level"
MEMBERS = f"""
MATCH (t:{theme_store.VERSIONS} {{id: $theme}}) WHERE {theme_store.visible("t")}
MATCH (d:{Label.DOCUMENT})-[:{Rel.IN_THEME}]->(t) WHERE {scope.visible("d.uri")}
RETURN d.uri AS uri, d.displayName AS name ORDER BY uri
"""
# Within a restricted grant: the documents it sees, and each theme's members among them.
GRANTED_DOCUMENTS = f"MATCH (d:{Label.DOCUMENT}) WHERE {scope.visible('d.uri')} RETURN count(d) AS n"
GRANTED_SIZES = f"""
MATCH (t:{theme_store.VERSIONS} {{level: $level}}) WHERE {theme_store.visible("t")}
MATCH (d:{Label.DOCUMENT})-[:{Rel.IN_THEME}]->(t) WHERE {scope.visible("d.uri")}
RETURN t.id AS id, count(d) AS size
"""
MAX_LEVEL = 9
KEPT_GRANT_SIZES = 64  # (grant, level) pairs kept for one version of the run and the documents
WITHHELD = "withheld within your grant"
RUN_FIELDS = """r.id AS id, toString(r.started) AS started, r.engine AS engine, r.mode AS mode, r.gamma AS gamma,
       r.documents AS documents, r.grouped AS grouped, r.themes AS themes, r.changes AS changes"""
RUNS_SINCE = f"""
MATCH (r:{Label.THEME_RUN}) WHERE r.started >= datetime($since)
RETURN {RUN_FIELDS}
ORDER BY r.started
"""
LATEST_RUNS = f"""
MATCH (r:{Label.THEME_RUN})
RETURN {RUN_FIELDS}
ORDER BY r.started DESC LIMIT $count
"""


def cohesion(conductance: float) -> str:
    """Conductance is the share of a theme's link weight that leaves it: low is cohesive."""
    for limit, word in ((0.1, "tight"), (0.25, "cohesive"), (0.5, "loose")):
        if conductance < limit:
            return word
    return "diffuse"


@dataclass(frozen=True)
class ThemeView:
    id: str
    name: str  # from its own metadata: the folder most members share, the titles of its top targets
    size: int
    share: float
    conductance: float | None  # None: withheld within a restricted grant (it counts every member's links)
    cohesion: str
    top_targets: list[dict]  # {"uri", "cited_by"}
    central: list[dict]  # {"uri", "links"}
    crossovers: list[dict]  # {"theme", "document", "links"}


@dataclass(frozen=True)
class ThemesResult:
    level: int
    documents: int
    grouped: int
    ungrouped: int
    run: dict | None
    themes: list[ThemeView] = field(default_factory=list)
    theme: str | None = None  # asked for one theme: `themes` is that one, `members` its documents
    members: list[dict] = field(default_factory=list)  # {"uri", "name"} in URI order


Sized = tuple[int, dict[str, int]]  # within a grant: the documents it sees, and each theme's members among them


def themes(
    driver: Driver,
    database: str,
    level: int,
    theme: str | None,
    stored: Callable[[dict, int], list[dict]],
    sized: Callable[[Grant, dict | None, int], Sized],
    grant: Grant = EVERYTHING,
) -> ThemesResult:
    """The themes at a level, largest first; or, with `theme`, that theme and its members, all of
    the latest run's. `stored(run, level)` gives the level's stored themes and `sized(grant, run,
    level)` what a restricted grant sees of them (see `ThemesShape`). Within a restricted grant see
    `_granted`."""
    if not 0 <= level <= MAX_LEVEL:
        raise ShapeError(f"level must be between 0 and {MAX_LEVEL}, got {level}")
    runs = driver.execute_query(LATEST_RUN, database_=database).records
    if not runs:
        if theme is not None:
            raise NotFound("no themes run yet: `lakegraph themes --refresh`")
        total = _documents(driver, database) if grant.everything else sized(grant, None, level)[0]
        return ThemesResult(level, total, 0, total, None)
    run = dict(runs[0])
    at = run.pop("seq")
    if theme is not None:
        found = driver.execute_query(THEME, theme=theme, run=at, database_=database).records
        if not found:
            raise NotFound(f"no theme {theme!r} in the last run: `lakegraph themes` lists them")
        level = found[0]["level"]
    if level >= (run["levels"] or 1):
        raise NotFound(f"the last run has {run['levels']} level(s): use --level 0 to {run['levels'] - 1}")
    rows = stored({**run, "seq": at}, level)
    if grant.everything:
        total = _documents(driver, database)
    else:
        total, sizes = sized(grant, {**run, "seq": at}, level)
        rows = _granted(rows, sizes)
        if theme is not None and not any(row["id"] == theme for row in rows):
            raise NotFound(f"no theme {theme!r} in the last run: `lakegraph themes` lists them")
    views = [
        ThemeView(
            **row, share=round(row["size"] / total, 4) if total else 0.0, cohesion=WITHHELD if row["conductance"] is None else cohesion(row["conductance"])
        )
        for row in rows
    ]
    grouped = sum(view.size for view in views)
    if theme is None:
        return ThemesResult(level, total, grouped, total - grouped, run, views)
    members = [dict(row) for row in driver.execute_query(MEMBERS, theme=theme, run=at, **grant.cypher(), database_=database).records]
    return ThemesResult(level, total, grouped, total - grouped, run, [view for view in views if view.id == theme], theme, members)


def _documents(driver: Driver, database: str) -> int:
    return driver.execute_query(DOCUMENT_COUNT, database_=database).records[0]["n"]


def granted_sizes(driver: Driver, database: str, grant: Grant, run: dict | None, level: int) -> Sized:
    """How many documents `grant` sees, and how many members each theme of `run` at `level` has
    among them (none before a first run): both read every document the grant sees."""
    total = driver.execute_query(GRANTED_DOCUMENTS, **grant.cypher(), database_=database).records[0]["n"]
    if run is None:
        return total, {}
    sizes = driver.execute_query(GRANTED_SIZES, level=level, run=run["seq"], **grant.cypher(), database_=database).records
    return total, {row["id"]: row["size"] for row in sizes}


def _granted(rows: list[dict], seen: dict[str, int]) -> list[dict]:
    """A level's themes as a restricted grant sees them: only those with a member it sees, sized
    by those members; the name, cohesion, targets, central documents and crossovers, computed by
    the run over every member, are withheld (the name falls back to the theme's id)."""
    granted = [
        {**row, "name": row["id"], "size": seen[row["id"]], "conductance": None, "top_targets": [], "central": [], "crossovers": []}
        for row in rows
        if row["id"] in seen
    ]
    return sorted(granted, key=lambda row: (-row["size"], row["id"]))


def stored_themes(driver: Driver, database: str, run: int, level: int) -> list[dict]:
    """A level's themes as run `run` left them, largest first, their summaries parsed."""
    rows = [
        {
            "id": row["id"],
            "name": row["name"] or row["id"],
            "size": row["size"],
            "conductance": row["conductance"],
            **{part: json.loads(row[part] or "[]") for part in ("top_targets", "central", "crossovers")},
        }
        for row in driver.execute_query(THEMES_AT_LEVEL, level=level, run=run, database_=database).records
    ]
    return sorted(rows, key=lambda row: (-row["size"], row["id"]))


class ThemesShape:
    """Themes read again only after a new run: a run's themes never change once it is current (see
    worker/graph/theme_store.py), so the latest run's id keys them (at 100k documents, reading
    and parsing a level's 736 themes took most of the call's 200 ms; a page now reads two counters
    and its own rows). What a restricted grant sees of them (`granted_sizes`, which counts every
    document it sees: 15 ms of a 20 ms call at 10k documents) is kept per grant and level until the
    run or the documents change."""

    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database
        self.levels: Versioned[list[dict]] = Versioned(MAX_LEVEL + 1)
        self.sizes: Versioned[Sized] = Versioned(KEPT_GRANT_SIZES)

    def __call__(self, level: int, theme: str | None, grant: Grant = EVERYTHING) -> ThemesResult:
        return themes(self.driver, self.database, level, theme, self._stored, self._sized, grant)

    def _stored(self, run: dict, level: int) -> list[dict]:
        return self.levels.get(run["id"], level, lambda: stored_themes(self.driver, self.database, run["seq"], level))

    def _sized(self, grant: Grant, run: dict | None, level: int) -> Sized:
        version = (run and run["id"], versions(self.driver, self.database, "documents"))
        return self.sizes.get(version, (grant.key, level), lambda: granted_sizes(self.driver, self.database, grant, run, level))


@dataclass(frozen=True)
class ThemeChangesResult:
    since: str
    runs: list[dict] = field(default_factory=list)


def theme_changes(driver: Driver, database: str, since: str, grant: Grant = EVERYTHING) -> ThemeChangesResult:
    """Within a restricted grant a run keeps only the moves of documents the grant sees; its
    counts and its theme-level changes (born, split, grew, ...), which count every member, are
    withheld."""
    return ThemeChangesResult(since, _runs(driver.execute_query(RUNS_SINCE, since=since, database_=database).records, grant))


# RFC 3339's full date, or date-time: what the schema promises (formats date and date-time).
MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}(?:[Tt]\d{2}:\d{2}:\d{2}(?:\.(\d+))?(?:[Zz]|[+-]\d{2}:\d{2}))?")
FRACTION_DIGITS = 6  # what Python's and Cypher's parsers both read


def moment(text: str) -> str:
    """An RFC 3339 date or date-time, checked and written as Cypher's datetime() reads it."""
    found = MOMENT.fullmatch(text)
    if found is None:
        raise ValueError("should be a date (2026-11-30) or a date-time (2026-11-30T09:00:00Z)")
    fraction = found.group(1)
    written = text.upper() if fraction is None else text.upper().replace(f".{fraction}", f".{fraction[:FRACTION_DIGITS]}", 1)
    try:
        datetime.fromisoformat(written)
    except ValueError:
        raise ValueError(f"{text!r} is no such day or time") from None
    return written


Moment = Annotated[
    str,
    AfterValidator(moment),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}], "description": "An RFC 3339 date or date-time"}
    ),
]


def latest_changes(driver: Driver, database: str, count: int, grant: Grant = EVERYTHING) -> list[dict]:
    """The latest `count` runs with their changes, newest first."""
    return _runs(driver.execute_query(LATEST_RUNS, count=count, database_=database).records, grant)


def _runs(rows: list, grant: Grant) -> list[dict]:
    runs = [{**dict(row), "changes": json.loads(row["changes"] or "{}")} for row in rows]
    if grant.everything:
        return runs
    return [
        {
            **run,
            "documents": None,
            "grouped": None,
            "themes": None,
            "changes": _seen_changes(run["changes"], grant),
        }
        for run in runs
    ]


def _seen_changes(changes: dict, grant: Grant) -> dict:
    """A run's moves and edits of the documents `grant` sees, counted among them."""
    edited = [uri for uri in changes.get("edited", []) if grant.sees_uri(uri)]
    return {"moved": [move for move in changes.get("moved", []) if grant.sees_uri(move["document"])], "edited": edited, "edits": len(edited)}


def render(result: ThemesResult) -> str:
    shown = f"theme {result.theme}" if result.theme else f"{len(result.themes)} themes"
    header = f"{result.documents} documents = {result.grouped} grouped + {result.ungrouped} ungrouped; {shown} at level {result.level}"
    if result.run is None:
        return header + "\n(no themes run yet: `lakegraph themes --refresh`)"
    run = result.run
    how = f"update, {run['frontier']} documents free to move" if run["mode"] == "update" else "Leiden from scratch"
    lines = [header, f"run {run['id']} ({how}; {run['engine']}, gamma {run['gamma']}, {run['duration']} s)"]
    for view in result.themes:
        how_cohesive = WITHHELD if view.conductance is None else f"{view.conductance:.2f} ({view.cohesion})"
        lines.append(f"\n{view.id}  {view.name}\n  {view.size} documents ({view.share:.0%})  cohesion {how_cohesive}")
        if view.top_targets:
            lines.append("  converge on: " + ", ".join(f"{target['uri']} ({target['cited_by']})" for target in view.top_targets))
        if view.central:
            lines.append("  central: " + ", ".join(f"{member['uri']} ({member['links']})" for member in view.central))
        for crossover in view.crossovers:
            lines.append(f"  ↔ {crossover['theme']} via {crossover['document']} ({crossover['links']} links)")
    if result.theme:
        lines.append(f"\nmembers of {result.theme}:")
        lines += [f"  {member['name'] or member['uri']}  {member['uri']}" for member in result.members]
    elif result.themes:
        lines.append("\nmembers of a theme: lakegraph themes --theme <id>")
    return "\n".join(lines)


def render_changes(result: ThemeChangesResult) -> str:
    if not result.runs:
        return f"no theme runs since {result.since}"
    lines = []
    for run in result.runs:
        change = run["changes"]
        parts = [f"{kind} {', '.join(change[kind])}" for kind in ("born", "dissolved") if change.get(kind)]
        parts += [f"{old} split into {', '.join(new)}" for old, new in change.get("split", {}).items()]
        parts += [f"{new} merged from {', '.join(old)}" for new, old in change.get("merged", {}).items()]
        parts += [f"{theme} grew by {count}" for theme, count in change.get("grew", {}).items()]
        parts += [f"{theme} shrank by {count}" for theme, count in change.get("shrank", {}).items()]
        counts = WITHHELD if run["themes"] is None else f"{run['themes']} themes, {run['grouped']}/{run['documents']} grouped"
        lines.append(f"{run['started']}  {run['id']}  {counts}: " + ("; ".join(parts) or "no change"))
        lines += [f"    moved {move['document']}: {move['from'] or 'ungrouped'} → {move['to'] or 'ungrouped'}" for move in change.get("moved", [])]
        if change.get("edited"):
            more = change["edits"] - len(change["edited"])
            lines.append(f"    after edits to the links of {', '.join(change['edited'])}" + (f" and {more} more" if more > 0 else ""))
    return "\n".join(lines)


class ThemesParams(Params):
    level: int = Field(0, ge=0, le=MAX_LEVEL, description="Zoom: 0 is the coarsest level, higher is finer")
    theme: str | None = Field(None, pattern=THEME_ID_FORM, description="One theme's id: its summary and its members (its level is the theme's own)")


class ThemeChangesParams(Params):
    since: Moment = Field("1970-01-01", description="An RFC 3339 date or date-time: runs from then on")


SPEC = ShapeSpec(
    name="themes",
    purpose="Themes: communities of documents that cite each other, with stable ids.",
    guide="Leiden over the link graph: per theme its size, cohesion, what members cite most, central documents and crossovers. "
    "Use it for common patterns across bulletins and recalls.",
    params=ThemesParams,
    output=ThemesResult,
    refers={"id": "theme", "theme": "theme", "uri": "outline", "document": "outline"},
    run=lambda shapes, p, grant: shapes.themes(p.level, p.theme, grant),
    render=render,
    rows=("themes", "members"),
    needs="themes",
    scoped=True,
)
CHANGES_SPEC = ShapeSpec(
    name="theme_changes",
    purpose="The change log of themes runs: born, dissolved, split, merged, grew, shrank, moved documents.",
    guide="Run by run since a time.",
    params=ThemeChangesParams,
    output=ThemeChangesResult,
    refers={"uri": "outline"},
    run=lambda shapes, p, grant: theme_changes(shapes.driver, shapes.database, p.since, grant),
    render=render_changes,
    rows=("runs",),
    needs="themes",
    scoped=True,
)
