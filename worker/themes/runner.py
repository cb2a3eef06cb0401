"""A themes run: skip when the link graph is unchanged (one counter the document writer keeps, then
whether any document-level link changed), else read the document graph and either update the
previous themes — only the documents at the ends of changed links move (see `frontier`) — or, on
the first run, a new gamma or a rebuild, run Leiden from scratch. Theme ids stay stable by matching
memberships with the previous run's; the changes are logged, and the themes swapped in one
transaction — a failed run leaves the previous themes in place, never half written."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from itertools import pairwise

import numpy as np
from neo4j import Driver, ManagedTransaction

from worker.documents import link_version
from worker.errors import LakegraphError
from worker.graph.schema import Label, Rel
from worker.settings import Settings
from worker.themes import frontier
from worker.themes.engines import Engine, GdsEngine, LeidenalgEngine
from worker.themes.identity import assign_ids, changes, theme_number
from worker.themes.model import DocumentGraph, Partition, Theme
from worker.themes.projection import document_graph, labelled_conductance
from worker.themes.summary import ThemeLabels, ThemeSummary, summarize, theme_labels

PREVIOUS_THEMES = f"""
MATCH (t:{Label.THEME})
CALL (t) {{ OPTIONAL MATCH (d:{Label.DOCUMENT})-[:{Rel.IN_THEME}]->(t) RETURN collect(d.uri) AS members }}
RETURN collect([t.id, t.level, t.conductance, members, t.size, [t.name, t.top_targets, t.central, t.crossovers]]) AS themes
"""
LATEST_RUN = f"""
MATCH (r:{Label.THEME_RUN})
RETURN r.id AS id, r.gamma AS gamma, r.next_theme AS next_theme,
       r.link_version AS link_version, r.levels AS levels
ORDER BY r.started DESC LIMIT 1
"""
# A run whose edge set proved unchanged is good for this link version too.
CONFIRM_RUN = f"MATCH (r:{Label.THEME_RUN} {{id: $id}}) SET r.link_version = $version"
LINKS_UNCHANGED = "no document's links changed since the last run"
EDGES_UNCHANGED = "no document-level link changed since the last run"
# The swap writes only the difference to the previous run: a refresh after one edit touches a
# handful of memberships, not every document's.
DROP_THEMES = f"UNWIND $ids AS id MATCH (t:{Label.THEME} {{id: id}}) DETACH DELETE t"
UPSERT_THEMES = f"""
UNWIND $themes AS th
MERGE (t:{Label.THEME} {{id: th.id}})
SET t.level = th.level, t.gamma = $gamma, t.size = th.size, t.conductance = th.conductance, t.run = $run,
    t.name = th.name, t.top_targets = th.top_targets, t.central = th.central, t.crossovers = th.crossovers
"""
LEAVE = f"""
UNWIND $pairs AS p
MATCH (:{Label.DOCUMENT} {{uri: p[0]}})-[r:{Rel.IN_THEME}]->(:{Label.THEME} {{id: p[1]}})
DELETE r
"""
JOIN = f"""
UNWIND $pairs AS p
MATCH (d:{Label.DOCUMENT} {{uri: p[0]}})
MATCH (t:{Label.THEME} {{id: p[1]}})
MERGE (d)-[:{Rel.IN_THEME}]->(t)
"""
# The links each changed document had when these themes were computed: the next run's baseline.
# The label goes only if the links are still the ones read: a write since keeps it for the next run.
MARK_THEMED = f"""
UNWIND $rows AS r
MATCH (d:{Label.DOCUMENT} {{uri: r.uri}})
SET d.themed_signature = r.signature, d.themed_links = r.links
WITH d, r WHERE coalesce(d.link_signature, '') = coalesce(r.signature, '')
REMOVE d:{Label.LINKS_CHANGED}
"""
CREATE_RUN = f"""
CREATE (r:{Label.THEME_RUN} {{id: $id}})
SET r += $props, r.started = datetime($started)
"""


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
    def __init__(self, settings: Settings, driver: Driver, database: str) -> None:
        self.settings = settings
        self.driver = driver
        self.database = database
        self.seen: Seen | None = None

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
        last = latest[0] if latest else None
        with self.driver.session(database=self.database) as session:
            counters = session.execute_read(link_version.counters)
        same_gamma = not force and last is not None and last["gamma"] == gamma
        if same_gamma and last["link_version"] == counters.version:
            return RunReport(False, LINKS_UNCHANGED)
        seen = self.seen if self.seen and last is not None and self.seen.run_id == last["id"] and self.seen.deletions == counters.deletions else None
        graph = document_graph(self.driver, self.database, seen.graph if seen else None)
        moving = graph.frontier
        if seen:
            previous, summarized, deleted = seen.themes, seen.summaries, False
        else:
            stored = self.driver.execute_query(PREVIOUS_THEMES, database_=self.database).records[0]["themes"]
            previous = [Theme(theme_id, level, frozenset(members), score) for theme_id, level, score, members, _, _ in stored]
            deleted = any(len(members) != size for _, _, _, members, size, _ in stored)  # a member document is gone
            # A gone member leaves no trace among the changed documents: every summary is computed again.
            summarized = {} if deleted else {row[0]: _stored_summary(row[5]) for row in stored}
        if same_gamma and not moving and not deleted:
            with self.driver.session(database=self.database) as session:
                session.execute_write(self._confirm, last["id"], counters.version, self._marks(graph))
            self.seen = Seen(last["id"], counters.deletions, graph, previous, summarized)
            return RunReport(False, EDGES_UNCHANGED)
        full = rebuild or last is None or last["gamma"] != gamma or not any(theme.level == 0 for theme in previous)
        if full:
            engine = self.engine()
            partition = engine.partition(graph, gamma, conf.random_seed, conf.max_levels)
        else:
            partition = self._update(graph, previous, moving, gamma, last["levels"] or 1)
        next_number = (last["next_theme"] if last else None) or 1 + max((theme_number(t.id) for t in previous), default=0)
        themes, next_number = self._themes(partition, previous, next_number)
        before, after = _at_level(previous, 0), _at_level(themes, 0)
        differing = _differing(before, after)  # the others took part in no change
        found = changes({key: before[key] for key in differing & before.keys()}, {key: after[key] for key in differing & after.keys()})
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
        with self.driver.session(database=self.database) as session:
            session.execute_write(self._swap, previous, themes, summaries, summarized, gamma, run_id, started.isoformat(), props, self._marks(graph))
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

    @staticmethod
    def _confirm(tx: ManagedTransaction, run_id: str, version: int, marks: list[dict]) -> None:
        tx.run(MARK_THEMED, rows=marks).consume()
        tx.run(CONFIRM_RUN, id=run_id, version=version).consume()

    @staticmethod
    def _marks(graph: DocumentGraph) -> list[dict]:
        now = graph.changed_links
        return [
            {"uri": uri, "signature": change.signature, "links": json.dumps(now[uri], sort_keys=True) if now[uri] else None}
            for uri, change in sorted(graph.changed.items())
        ]

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

    @staticmethod
    def _swap(
        tx: ManagedTransaction,
        previous: list[Theme],
        themes: list[Theme],
        summaries: dict[str, ThemeSummary],
        summarized: dict[str, ThemeSummary],
        gamma: float,
        run_id: str,
        started: str,
        props: dict,
        marks: list[dict],
    ) -> None:
        """Make the stored themes equal `themes`, in the caller's one transaction, writing only the
        themes that changed (members, conductance or summary; each keeps the `run` that last did)."""
        kept = {theme.id for theme in themes}
        before = {theme.id: theme for theme in previous}
        tx.run(DROP_THEMES, ids=[theme.id for theme in previous if theme.id not in kept]).consume()
        rows = [
            {
                "id": theme.id,
                "level": theme.level,
                "size": len(theme.members),
                "conductance": theme.conductance,
                "name": summaries[theme.id].name,
                **{part: json.dumps(getattr(summaries[theme.id], part)) for part in ("top_targets", "central", "crossovers")},
            }
            for theme in themes
            if before.get(theme.id) != theme or summarized.get(theme.id) != summaries[theme.id]
        ]
        tx.run(UPSERT_THEMES, themes=rows, gamma=gamma, run=run_id).consume()
        moved = [theme for theme in themes if theme.id in before and before[theme.id].members != theme.members]
        left = {(uri, theme.id) for theme in moved for uri in before[theme.id].members - theme.members}
        joined = {(uri, theme.id) for theme in themes for uri in (theme.members - before[theme.id].members if theme.id in before else theme.members)}
        tx.run(LEAVE, pairs=sorted(left)).consume()
        tx.run(JOIN, pairs=sorted(joined)).consume()
        tx.run(MARK_THEMED, rows=marks).consume()
        tx.run(CREATE_RUN, id=run_id, started=started, props=props).consume()


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
