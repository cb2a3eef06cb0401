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

from neo4j import Driver, ManagedTransaction

from worker.documents import link_version
from worker.errors import LakegraphError
from worker.graph.schema import Label, Rel
from worker.settings import Settings
from worker.themes import frontier
from worker.themes.engines import Engine, GdsEngine, LeidenalgEngine
from worker.themes.identity import assign_ids, changes, theme_number
from worker.themes.model import DocumentGraph, Partition, Theme
from worker.themes.projection import conductance, document_graph
from worker.themes.summary import ThemeSummary, summarize

PREVIOUS_THEMES = f"""
MATCH (t:{Label.THEME})
CALL (t) {{ OPTIONAL MATCH (d:{Label.DOCUMENT})-[:{Rel.IN_THEME}]->(t) RETURN collect(d.uri) AS members }}
RETURN collect([t.id, t.level, t.conductance, members, t.size]) AS themes
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
MARK_THEMED = f"""
UNWIND $rows AS r
MATCH (d:{Label.DOCUMENT} {{uri: r.uri}})
SET d.themed_signature = r.signature, d.themed_links = r.links
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


class ThemeRunner:
    def __init__(self, settings: Settings, driver: Driver, database: str) -> None:
        self.settings = settings
        self.driver = driver
        self.database = database
        self.seen: tuple[str, DocumentGraph] | None = None  # the latest run's id and the graph it saw

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
            version = session.execute_read(link_version.current)
        same_gamma = not force and last is not None and last["gamma"] == gamma
        if same_gamma and last["link_version"] == version:
            return RunReport(False, LINKS_UNCHANGED)
        known = self.seen[1] if self.seen and last is not None and self.seen[0] == last["id"] else None
        graph = document_graph(self.driver, self.database, known)
        moving = graph.frontier
        stored = self.driver.execute_query(PREVIOUS_THEMES, database_=self.database).records[0]["themes"]
        previous = [Theme(theme_id, level, frozenset(members), score) for theme_id, level, score, members, _ in stored]
        deleted = any(len(members) != size for _, _, _, members, size in stored)  # a member document is gone
        if same_gamma and not moving and not deleted:
            with self.driver.session(database=self.database) as session:
                session.execute_write(self._confirm, last["id"], version, self._marks(graph))
            self.seen = (last["id"], graph)
            return RunReport(False, EDGES_UNCHANGED)
        full = rebuild or last is None or last["gamma"] != gamma or not any(theme.level == 0 for theme in previous)
        if full:
            engine = self.engine()
            partition = engine.partition(graph, gamma, conf.random_seed, conf.max_levels)
        else:
            partition = self._update(graph, previous, moving, gamma, last["levels"] or 1)
        next_number = (last["next_theme"] if last else None) or 1 + max((theme_number(t.id) for t in previous), default=0)
        themes, next_number = self._themes(partition, previous, next_number)
        level0 = {theme.id: theme.members for theme in themes if theme.level == 0}
        before = {theme.id: theme.members for theme in previous if theme.level == 0}
        found = changes(before, level0)
        grouped = sum(len(members) for members in level0.values())
        run_id = f"run-{started.strftime('%Y%m%dT%H%M%S.%fZ')}"
        report = RunReport(
            True,
            "",
            run_id,
            partition.engine,
            FULL if full else UPDATE,
            0 if full else len(moving),
            round(time.monotonic() - began, 3),
            len(graph.documents),
            grouped,
            len(graph.documents) - grouped,
            len(level0),
            asdict(found),
        )
        props = {
            "gamma": gamma,
            "engine": partition.engine,
            "mode": report.mode,
            "frontier": report.frontier,
            "link_version": version,
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
        summaries = {
            theme_id: summary
            for level in range(len(partition.levels))
            for theme_id, summary in summarize(graph, {t.id: t.members for t in themes if t.level == level}).items()
        }
        with self.driver.session(database=self.database) as session:
            session.execute_write(self._swap, previous, themes, summaries, gamma, run_id, started.isoformat(), props, self._marks(graph))
        self.seen = (run_id, graph)
        report.seconds = round(time.monotonic() - began, 3)  # the whole run, the write included
        return report

    def _update(self, graph: DocumentGraph, previous: list[Theme], moving: set[str], gamma: float, levels: int) -> Partition:
        """Each stored level updated on its own: its themes held, the frontier free to move."""
        memberships, scores = [], []
        for level in range(levels):
            held = {uri: theme_number(theme.id) for theme in previous if theme.level == level for uri in theme.members}
            membership = frontier.update(graph, held, moving, gamma, self.settings.themes.random_seed)
            memberships.append(membership)
            scores.append(conductance(graph, membership))
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
            groups: dict[int, set[str]] = {}
            for uri, community in membership.items():
                groups.setdefault(community, set()).add(uri)
            kept = {community: frozenset(members) for community, members in groups.items() if len(members) >= self.settings.themes.min_size}
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
        gamma: float,
        run_id: str,
        started: str,
        props: dict,
        marks: list[dict],
    ) -> None:
        """Make the stored themes equal `themes`, in the caller's one transaction."""
        kept = {theme.id for theme in themes}
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
        ]
        tx.run(UPSERT_THEMES, themes=rows, gamma=gamma, run=run_id).consume()
        before = {(uri, theme.id) for theme in previous if theme.id in kept for uri in theme.members}
        after = {(uri, theme.id) for theme in themes for uri in theme.members}
        tx.run(LEAVE, pairs=sorted(before - after)).consume()
        tx.run(JOIN, pairs=sorted(after - before)).consume()
        tx.run(MARK_THEMED, rows=marks).consume()
        tx.run(CREATE_RUN, id=run_id, started=started, props=props).consume()
