"""A themes run: skip when the link graph is unchanged (one counter the document writer keeps, then
whether any document-level link changed), else read the document graph and either update the
previous themes — only the documents at the ends of changed links move (see `frontier`) — or, on
the first run, a new gamma or a rebuild, run Leiden from scratch. Theme ids stay stable by matching
memberships with the previous run's; the changes are logged, and the themes written in batches and
made current in one small transaction (`write`) — a failed run leaves the previous themes served,
never half written."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

import numpy as np
from neo4j import Driver

from worker.documents import link_version
from worker.exceptions import LakegraphError
from worker.graph import theme_store
from worker.graph.batches import rows_per_batch
from worker.graph.schema import Label, Rel
from worker.graph.theme_store import theme_number
from worker.settings import Settings
from worker.shared.changes import Announce, Change, announcer
from worker.themes import frontier, write
from worker.themes.engines import Engine, GdsEngine, LeidenalgEngine
from worker.themes.identity import assign_ids, changes
from worker.themes.model import EDITS_KEPT, DocumentGraph, Partition, Theme
from worker.themes.projection import DOCUMENT_BYTES, document_graph, labelled_conductance
from worker.themes.summary import ThemeLabels, ThemeSummary, summarize, theme_labels
from worker.themes.write import ThemesWrite

# The themes of run $run (see worker/graph/theme_store.py), a row each: no result holds every
# membership at once.
PREVIOUS_THEMES = f"""
MATCH (t:{theme_store.VERSIONS}) WHERE {theme_store.visible("t")}
WITH t, COLLECT {{ MATCH (d:{Label.DOCUMENT})-[:{Rel.IN_THEME}]->(t) RETURN d.uri }} AS members
WITH t, members, {theme_store.props_at("t")}
RETURN t.id AS id, t.level AS level, conductance, size, members, [name, top_targets, central, crossovers] AS summary
"""
LATEST_RUN = f"""
MATCH (r:{Label.THEME_RUN})
RETURN r.id AS id, {theme_store.SEQ.format(node="r")} AS seq, r.gamma AS gamma, r.next_theme AS next_theme,
       r.link_version AS link_version, r.levels AS levels, coalesce(r.settled, r.seq IS NULL) AS settled
ORDER BY r.started DESC LIMIT 1
"""
LINKS_UNCHANGED = "no document's links changed since the last run"
EDGES_UNCHANGED = "no document-level link changed since the last run"


FULL, UPDATE = "full", "update"


@dataclass
class RunReport:
    ran: bool
    reason: str = ""
    run_id: str = ""
    engine: str = ""
    mode: str = ""  # FULL (Leiden from scratch) or UPDATE (only the frontier moved)
    frontier: int = 0  # documents free to move in an update
    seconds: float = 0.0
    documents: int = 0
    grouped: int = 0
    ungrouped: int = 0
    themes: int = 0
    changes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Seen:
    """What the latest run left a worker: the next run after an edit starts from it instead of
    reading every document, membership and summary back (it does after a deletion)."""

    run_id: str
    deletions: int  # the writer's deletion counter when the graph was read
    graph: DocumentGraph
    themes: list[Theme]
    summaries: dict[str, ThemeSummary]


class ThemeRunner:
    def __init__(self, settings: Settings, driver: Driver, database: str, announce: Announce | None = None) -> None:
        """`announce` hears of each run that landed (worker/shared/changes.py)."""
        self.settings = settings
        self.driver = driver
        self.database = database
        self.seen: Seen | None = None
        self.writer = ThemesWrite(driver, database)
        self.announce = announce or announcer(settings)

    def engine(self) -> Engine:
        choice = self.settings.themes.engine
        gds = GdsEngine(self.driver, self.database)
        if choice == "gds" or (choice == "auto" and gds.available()):
            return gds
        return LeidenalgEngine()

    def run(self, force: bool = False, gamma: float | None = None, rebuild: bool = False) -> RunReport:
        """`force` runs even on an unchanged graph (an update then gives the same themes back);
        `rebuild` runs Leiden from scratch, ids still matched by overlap."""
        conf = self.settings.themes
        force = force or rebuild
        gamma = conf.gamma if gamma is None else gamma
        if gamma <= 0:
            raise LakegraphError(f"gamma must be positive, got {gamma}")
        began, started = time.monotonic(), datetime.now(UTC)
        latest = self.driver.execute_query(LATEST_RUN, database_=self.database).records
        last: dict[str, Any] = dict(latest[0]) if latest else {}  # {}: no run yet
        current = last.get("seq", 0)  # the run readers read at (see worker/graph/theme_store.py)
        if last and not last["settled"]:  # it failed after becoming current: finish it
            self.writer.clear_leftovers(current)
        with self.driver.session(database=self.database) as session:
            counters = session.execute_read(link_version.counters)
        same_gamma = not force and bool(last) and last["gamma"] == gamma
        if same_gamma and last["link_version"] == counters.version:
            return RunReport(False, LINKS_UNCHANGED)
        seen = self.seen if self.seen and last and self.seen.run_id == last["id"] and self.seen.deletions == counters.deletions else None
        graph = document_graph(self.driver, self.database, seen.graph if seen else None, rows_per_batch(self.writer.limit, DOCUMENT_BYTES))
        moving = graph.frontier
        if seen:
            previous, summarized, deleted = seen.themes, seen.summaries, False
        else:
            stored = self.driver.execute_query(PREVIOUS_THEMES, run=current, database_=self.database).records
            previous = [Theme(row["id"], row["level"], frozenset(row["members"]), row["conductance"]) for row in stored]
            deleted = any(len(row["members"]) != row["size"] for row in stored)  # a member document is gone
            # A gone member leaves no trace among the changed documents: every summary is computed again.
            summarized = {} if deleted else {row["id"]: _stored_summary(row["summary"]) for row in stored}
        if same_gamma and not moving and not deleted:
            self.writer.confirm(last["id"], counters.version, write.marks(graph))
            self.seen = Seen(last["id"], counters.deletions, graph, previous, summarized)
            return RunReport(False, EDGES_UNCHANGED)
        full = rebuild or not last or last["gamma"] != gamma or not any(theme.level == 0 for theme in previous)
        if full:
            engine = self.engine()
            partition = engine.partition(graph, gamma, conf.random_seed, conf.max_levels)
        else:
            partition = self._update(graph, previous, moving, gamma, last["levels"] or 1)
        next_number = last.get("next_theme") or 1 + max((theme_number(t.id) for t in previous), default=0)
        themes, next_number = self._themes(partition, previous, next_number)
        before, after = _at_level(previous, 0), _at_level(themes, 0)
        differing = _differing(before, after)  # the others took part in no change
        found = changes({key: before[key] for key in differing & before.keys()}, {key: after[key] for key in differing & after.keys()})
        if last:
            found.edited, found.edits = sorted(graph.edits)[:EDITS_KEPT], len(graph.edits)
        grouped = sum(len(theme.members) for theme in themes if theme.level == 0)
        run_id = f"run-{started.strftime('%Y%m%dT%H%M%S.%fZ')}"
        report = RunReport(
            True,
            "",
            run_id,
            partition.engine,
            FULL if full else UPDATE,
            0 if full else len(moving),
            round(time.monotonic() - began, 3),
            counters.documents,
            grouped,
            counters.documents - grouped,
            sum(theme.level == 0 for theme in themes),
            asdict(found),
        )
        props = {
            "gamma": gamma,
            "engine": partition.engine,
            "mode": report.mode,
            "frontier": report.frontier,
            "link_version": counters.version,
            "duration": report.seconds,
            "documents": report.documents,
            "grouped": grouped,
            "ungrouped": report.ungrouped,
            "themes": report.themes,
            "levels": len(partition.levels),
            "min_size": conf.min_size,
            "jaccard_threshold": conf.jaccard_threshold,
            "random_seed": conf.random_seed,
            "next_theme": next_number,
            "changes": json.dumps(report.changes),
        }
        summaries = self._summaries(graph, themes, previous, summarized, moving)
        differences = write.plan(previous, themes, summaries, summarized)
        self.writer.apply(differences, current, run_id, started.isoformat(), gamma, props, write.marks(graph))
        self.announce(Change("themes"))
        self.seen = Seen(run_id, counters.deletions, graph, themes, summaries)
        report.seconds = round(time.monotonic() - began, 3)  # the whole run, the write included
        return report

    @staticmethod
    def _summaries(
        graph: DocumentGraph,
        themes: list[Theme],
        previous: list[Theme],
        summarized: dict[str, ThemeSummary],
        moving: set[str],
    ) -> dict[str, ThemeSummary]:
        """Every theme's summary: those of `summarized` (the previous themes') that nothing touched
        are kept, the rest computed (see `touched_themes`)."""
        found: dict[str, ThemeSummary] = {}
        for level in sorted({theme.level for theme in themes}):
            members, before = _at_level(themes, level), _at_level(previous, level)
            labelled = theme_labels(graph, members)
            only = None
            if summarized and all(theme_id in summarized for theme_id in before):
                only = touched_themes(graph, labelled, members, before, moving)
                found |= {theme_id: summarized[theme_id] for theme_id in members.keys() - only}
            found |= summarize(graph, members, only, labelled)
        return found

    def _update(self, graph: DocumentGraph, previous: list[Theme], moving: set[str], gamma: float, levels: int) -> Partition:
        """Each stored level updated on its own: its themes held, the frontier free to move."""
        memberships, scores = [], []
        for level in range(levels):
            held: dict[str, int] = {}
            for theme in previous:
                if theme.level == level:
                    held.update(dict.fromkeys(theme.members, theme_number(theme.id)))
            labels = frontier.labels(graph, held, moving, gamma, self.settings.themes.random_seed)
            memberships.append(dict(zip(graph.linked, labels.tolist(), strict=True)))
            scores.append(labelled_conductance(graph, labels))
        return Partition(memberships, scores, LeidenalgEngine.name)

    def _themes(self, partition: Partition, previous: list[Theme], next_number: int) -> tuple[list[Theme], int]:
        found: list[Theme] = []
        for level, membership in enumerate(partition.levels):
            kept = {community: members for community, members in _groups(membership).items() if len(members) >= self.settings.themes.min_size}
            named, next_number = assign_ids(
                list(kept.values()),
                [theme for theme in previous if theme.level == level],
                self.settings.themes.jaccard_threshold,
                next_number,
            )
            community_of = {members: community for community, members in kept.items()}
            found += [Theme(theme_id, level, members, partition.conductance[level].get(community_of[members], 0.0)) for theme_id, members in named.items()]
        return found, next_number


def _groups(membership: dict[str, int]) -> dict[int, frozenset[str]]:
    """community -> its members, grouped by one sort instead of a set per document."""
    uris = list(membership)
    communities = np.fromiter(membership.values(), dtype=np.int64, count=len(uris))
    order = np.argsort(communities, kind="stable")
    bounds = [0, *(np.flatnonzero(np.diff(communities[order])) + 1).tolist(), len(uris)]
    ordered = [uris[place] for place in order.tolist()]
    return {int(communities[order[start]]): frozenset(ordered[start:end]) for start, end in pairwise(bounds) if end > start}


def _stored_summary(stored: list) -> ThemeSummary:
    name, *parts = stored
    return ThemeSummary(name, *(json.loads(part) if part else [] for part in parts))


def _at_level(themes: list[Theme], level: int) -> dict[str, frozenset[str]]:
    return {theme.id: theme.members for theme in themes if theme.level == level}


def _differing(before: dict[str, frozenset[str]], after: dict[str, frozenset[str]]) -> set[str]:
    """The theme ids on one side only or with other members on the other."""
    return {theme_id for theme_id in before.keys() | after.keys() if before.get(theme_id) != after.get(theme_id)}


def touched_themes(
    graph: DocumentGraph, labelled: ThemeLabels, members: dict[str, frozenset[str]], before: dict[str, frozenset[str]], moving: set[str]
) -> set[str]:
    """One level's themes whose summary may differ from the last run's: those whose members changed,
    those holding a document at a changed link or a document that changed theme, and those linked to
    a document that changed theme (their crossovers name its theme). A summary reads only the links
    touching its theme and the themes at their other ends, so every other summary stands."""
    differing = _differing(before, members)
    relabelled = {uri for theme_id in differing for uri in members.get(theme_id, frozenset()) ^ before.get(theme_id, frozenset())}
    touched = np.zeros(len(graph.documents), dtype=bool)
    touched[[graph.position[uri] for uri in moving | relabelled if uri in graph.position]] = True
    links = graph.directed_arrays
    near = touched[links.source] | touched[links.target]
    touched[links.source[near]] = touched[links.target[near]] = True
    return (differing & members.keys()) | {labelled.ids[number] for number in set(labelled.label[touched].tolist()) if number >= 0}
