"""The themes shape: the current themes of the document link graph, and their change log.

A header whose counts reconcile (documents = grouped + ungrouped), then per theme its stable id,
size and share, cohesion (conductance as a number and a word), the link targets its members
converge on (with how many members cite each), its most central documents, and one crossover
document into each theme it is linked with. No LLM names themes: a theme is what it cites.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from neo4j import Driver

from shapes.errors import ShapeError
from worker.graph.schema import Label, Rel

TOP_TARGETS = 5
TOP_CENTRAL = 3
LATEST_RUN = f"""
MATCH (r:{Label.THEME_RUN})
RETURN r.id AS id, toString(r.started) AS started, r.engine AS engine, r.gamma AS gamma, r.levels AS levels,
       r.duration AS duration
ORDER BY r.started DESC LIMIT 1
"""
DOCUMENT_COUNT = f"MATCH (d:{Label.DOCUMENT}) RETURN count(d) AS n"
MEMBERS = f"""
MATCH (d:{Label.DOCUMENT})-[:{Rel.IN_THEME}]->(t:{Label.THEME} {{level: $level}})
RETURN t.id AS theme, t.conductance AS conductance, collect(d.uri) AS members, collect(d.displayName) AS names
"""
DIRECTED_LINKS = f"""
MATCH (s)-[:{Rel.LINKS_TO}]->(x)
WITH CASE WHEN s:{Label.SECTION} THEN s.doc_uri ELSE s.uri END AS source,
     CASE WHEN x:{Label.SECTION} THEN x.doc_uri ELSE x.uri END AS target
WHERE source <> target
RETURN source, target, count(*) AS links
"""
RUNS_SINCE = f"""
MATCH (r:{Label.THEME_RUN}) WHERE r.started >= datetime($since)
RETURN r.id AS id, toString(r.started) AS started, r.engine AS engine, r.gamma AS gamma, r.documents AS documents,
       r.grouped AS grouped, r.themes AS themes, r.changes AS changes
ORDER BY r.started
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
    size: int
    share: float
    conductance: float
    cohesion: str
    documents: list[str]
    top_targets: list[dict]  # {"uri", "cited_by"}
    central: list[str]
    crossovers: list[dict]  # {"theme", "document", "links"}


@dataclass(frozen=True)
class ThemesResult:
    level: int
    documents: int
    grouped: int
    ungrouped: int
    run: dict | None
    themes: list[ThemeView] = field(default_factory=list)


def themes(driver: Driver, database: str, level: int = 0) -> ThemesResult:
    if not 0 <= level < 10:
        raise ShapeError(f"level must be between 0 and 9, got {level}")
    runs = driver.execute_query(LATEST_RUN, database_=database).records
    total = driver.execute_query(DOCUMENT_COUNT, database_=database).records[0]["n"]
    if not runs:
        return ThemesResult(level, total, 0, total, None)
    run = dict(runs[0])
    if level >= (run["levels"] or 1):
        raise ShapeError(f"the last run has {run['levels']} level(s): use --level 0 to {run['levels'] - 1}")
    groups = {row["theme"]: row for row in driver.execute_query(MEMBERS, level=level, database_=database).records}
    theme_of = {uri: theme for theme, row in groups.items() for uri in row["members"]}
    links = [(row["source"], row["target"], row["links"]) for row in driver.execute_query(DIRECTED_LINKS, database_=database).records]
    cited_by: dict[str, Counter[str]] = defaultdict(Counter)  # theme -> target -> member documents citing it
    degree: dict[str, Counter[str]] = defaultdict(Counter)  # theme -> member -> link weight inside the theme
    crossing: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))  # theme -> other -> member -> links
    for source, target, count in links:
        home = theme_of.get(source)
        if home is not None:
            cited_by[home][target] += 1
        there = theme_of.get(target)
        if home is not None and home == there:
            degree[home][source] += count
            degree[home][target] += count
        elif home is not None and there is not None:
            crossing[home][there][source] += count
            crossing[there][home][target] += count
    views = []
    for theme, row in groups.items():
        members = sorted(row["members"])
        ranked_targets = sorted(cited_by[theme].items(), key=lambda item: (-item[1], item[0]))[:TOP_TARGETS]
        central = sorted(members, key=lambda uri: (-degree[theme][uri], uri))[:TOP_CENTRAL]
        crossovers = [
            {"theme": other, "document": max(sorted(counts), key=lambda uri: counts[uri]), "links": sum(counts.values())}
            for other, counts in sorted(crossing[theme].items())
        ]
        views.append(ThemeView(
            theme, len(members), round(len(members) / total, 4) if total else 0.0, row["conductance"], cohesion(row["conductance"]),
            members, [{"uri": uri, "cited_by": count} for uri, count in ranked_targets], central, crossovers,
        ))
    views.sort(key=lambda view: (-view.size, view.id))
    grouped = len(theme_of)
    return ThemesResult(level, total, grouped, total - grouped, run, views)


@dataclass(frozen=True)
class ThemeChangesResult:
    since: str
    runs: list[dict] = field(default_factory=list)


def theme_changes(driver: Driver, database: str, since: str) -> ThemeChangesResult:
    try:
        datetime.fromisoformat(since)
    except ValueError:
        raise ShapeError(f"since must be an ISO date or time (2026-11-30, 2026-11-30T09:00:00Z), got {since!r}") from None
    rows = driver.execute_query(RUNS_SINCE, since=since, database_=database).records
    return ThemeChangesResult(since, [{**dict(row), "changes": json.loads(row["changes"] or "{}")} for row in rows])


def render(result: ThemesResult) -> str:
    header = (f"{result.documents} documents = {result.grouped} grouped + {result.ungrouped} ungrouped; "
              f"{len(result.themes)} themes at level {result.level}")
    if result.run is None:
        return header + "\n(no themes run yet: `lakegraph themes --refresh`)"
    lines = [header, f"run {result.run['id']} ({result.run['engine']}, gamma {result.run['gamma']}, {result.run['duration']} s)"]
    for view in result.themes:
        lines.append(f"\n{view.id}  {view.size} documents ({view.share:.0%})  cohesion {view.conductance:.2f} ({view.cohesion})")
        if view.top_targets:
            lines.append("  converge on: " + ", ".join(f"{target['uri']} ({target['cited_by']})" for target in view.top_targets))
        lines.append("  central: " + ", ".join(view.central))
        for crossover in view.crossovers:
            lines.append(f"  ↔ {crossover['theme']} via {crossover['document']} ({crossover['links']} links)")
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
        lines.append(f"{run['started']}  {run['id']}  {run['themes']} themes, {run['grouped']}/{run['documents']} grouped: "
                     + ("; ".join(parts) or "no change"))
        lines += [f"    moved {move['document']}: {move['from'] or 'ungrouped'} → {move['to'] or 'ungrouped'}" for move in change.get("moved", [])]
    return "\n".join(lines)
