"""Writing a themes run in transactions of bounded size, made current by one small one; what a
reader sees meanwhile is in worker/graph/theme_store.py.

A run R+1, R being the current run:
1. clears what earlier runs left: a run that became current but did not settle is settled; then
   drafts of runs that never became current, their `until` marks on standing versions, and the
   versions earlier runs retired go, in batches;
2. stages, in batches: a new version (`ThemeDraft`, since R+1) of every theme that is new or whose
   members changed, with its memberships, the `until` R+1 mark on each version it replaces or that
   is gone, and the run's node (`ThemeRunDraft`) with its change log. Readers at R see none of it;
3. switches: one transaction makes the run's node a `ThemeRun`, and readers read at R+1; in it,
   the themes whose members stand take their new score and summary in place (a row per theme);
4. settles in one transaction, one label for each changed theme: the replaced versions become
   `ThemeRetired`, the drafts `Theme`, so naive readers follow in one step too;
5. tidies in batches: each changed document keeps the links this run saw as the next run's
   baseline (see `projection`).

A run that dies at any point leaves every reader on one run's whole themes, and the next run clears
what it left; one that dies before the switch leaves the previous themes served and its documents
still marked as changed (the next run takes them as changed again: a larger frontier, the same
themes)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property

from neo4j import Driver, ManagedTransaction

from worker.exceptions import LakegraphError
from worker.graph import theme_store
from worker.graph.batches import drain, rows_per_batch, transaction_limit, write_in_batches
from worker.graph.engine_errors import explain
from worker.graph.schema import Label, Rel
from worker.themes.model import DocumentGraph, Theme
from worker.themes.summary import ThemeSummary

# What a row costs a transaction up to its commit, measured on Neo4j 5.26 with twice the room the
# worst case took (a deletion touches the neighbours in both nodes' relationship chains).
MEMBERSHIP_BYTES = 4_096  # a membership created
DELETION_BYTES = 8_192  # a membership or a node deleted
MARK_BYTES = 8_192  # a document's link baseline written
THEME_BYTES = 16_384  # a theme's node, its summary's JSON included

# Clearing, in this order (see the module's docstring).
RETIRE = f"MATCH (t:{Label.THEME}) WHERE t.until <= $current REMOVE t:{Label.THEME} SET t:{Label.THEME_RETIRED}"
SETTLE = f"MATCH (t:{Label.THEME_DRAFT}) WHERE t.since <= $current REMOVE t:{Label.THEME_DRAFT} SET t:{Label.THEME}"
LEFTOVERS = f"{Label.THEME_DRAFT}|{Label.THEME_RETIRED}"
CLEAR_MEMBERSHIPS = f"""
MATCH (:{LEFTOVERS})<-[m:{Rel.IN_THEME}]-()
WITH m LIMIT $batch
DELETE m
RETURN count(*) AS n
"""
CLEAR_NODES = f"""
MATCH (t:{LEFTOVERS}|{Label.THEME_RUN_DRAFT})
WITH t LIMIT $batch
DETACH DELETE t
RETURN count(*) AS n
"""
UNMARK = f"""
MATCH (t:{Label.THEME}) WHERE t.until > $current
WITH t LIMIT $batch
SET t.until = null
RETURN count(*) AS n
"""
STAGE_THEMES = f"UNWIND $rows AS row CREATE (t:{Label.THEME_DRAFT}) SET t = row, t.since = $seq, t.run = $run, t.gamma = $gamma"
STAGE_MEMBERS = f"""
UNWIND $rows AS pair
MATCH (t:{Label.THEME_DRAFT} {{id: pair[1]}})
MATCH (d:{Label.DOCUMENT} {{uri: pair[0]}})
CREATE (d)-[:{Rel.IN_THEME}]->(t)
"""
MARK_REPLACED = f"UNWIND $rows AS id MATCH (t:{Label.THEME} {{id: id}}) SET t.until = $seq"
# A standing theme's new score or summary, its members unchanged: in place, the values before kept.
UPDATE_PROPS = f"""
UNWIND $rows AS row
MATCH (t:{Label.THEME} {{id: row.id}})
SET {", ".join(f"t.{theme_store.PREVIOUS}{name} = t.{name}" for name in theme_store.PROPS)}, t.props_since = $seq
SET t += row, t.run = $run, t.gamma = $gamma
"""
STAGE_RUN = f"""
CREATE (r:{Label.THEME_RUN_DRAFT} {{id: $id}})
SET r += $props, r.seq = $seq, r.started = datetime($started)
"""
SWITCH = f"MATCH (r:{Label.THEME_RUN_DRAFT} {{id: $id}}) REMOVE r:{Label.THEME_RUN_DRAFT} SET r:{Label.THEME_RUN}"
SETTLED = f"MATCH (r:{Label.THEME_RUN} {{seq: $current}}) SET r.settled = true"
# The links each changed document had when these themes were computed: the next run's baseline.
# The label goes only if the links are still the ones read: a write since keeps it for the next run.
MARK_THEMED = f"""
UNWIND $rows AS r
MATCH (d:{Label.DOCUMENT} {{uri: r.uri}})
SET d.themed_signature = r.signature, d.themed_links = r.links
WITH d, r WHERE coalesce(d.link_signature, '') = coalesce(r.signature, '')
REMOVE d:{Label.LINKS_CHANGED}
"""
# A run whose edge set proved unchanged is good for this link version too.
CONFIRM_RUN = f"MATCH (r:{Label.THEME_RUN} {{id: $id}}) SET r.link_version = $version"


@dataclass
class Plan:
    """The themes a run writes: new versions of what is new or changed, and the versions that go."""

    staged: list[dict] = field(default_factory=list)  # theme rows written as new versions
    staged_members: list[tuple[str, str]] = field(default_factory=list)  # (document, theme id)
    replaced: list[str] = field(default_factory=list)  # ids of standing versions replaced or gone
    updated: list[dict] = field(default_factory=list)  # theme rows whose members stand: changed in place


def plan(previous: list[Theme], themes: list[Theme], summaries: dict[str, ThemeSummary], summarized: dict[str, ThemeSummary]) -> Plan:
    """Only what differs from the previous run is written: a theme with the same members, score and
    summary keeps its version (and the `run` that made it); one with the same members changes its
    score and summary in place (see worker/graph/theme_store.py); the others get a new version."""
    found = Plan()
    before = {theme.id: theme for theme in previous}
    kept = {theme.id for theme in themes}
    found.replaced = [theme.id for theme in previous if theme.id not in kept]
    for theme in themes:
        old = before.get(theme.id)
        if old == theme and summarized.get(theme.id) == summaries[theme.id]:
            continue
        if old is not None and old.members == theme.members:
            found.updated.append(_row(theme, summaries[theme.id]))
            continue
        if old is not None:
            found.replaced.append(theme.id)
        found.staged.append(_row(theme, summaries[theme.id]))
        found.staged_members += [(uri, theme.id) for uri in sorted(theme.members)]
    return found


def _row(theme: Theme, summary: ThemeSummary) -> dict:
    return {
        "id": theme.id,
        "level": theme.level,
        "size": len(theme.members),
        "conductance": theme.conductance,
        "name": summary.name,
        **{part: json.dumps(getattr(summary, part)) for part in ("top_targets", "central", "crossovers")},
    }


def marks(graph: DocumentGraph) -> list[dict]:
    """Each changed document's links as this run read them (see MARK_THEMED)."""
    now = graph.changed_links
    return [
        {"uri": uri, "signature": change.signature, "links": json.dumps(now[uri], sort_keys=True) if now[uri] else None}
        for uri, change in sorted(graph.changed.items())
    ]


class ThemesWrite:
    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database

    @cached_property
    def limit(self) -> int:
        """The server's transaction memory limit, read once: every batch is sized from it."""
        return transaction_limit(self.driver, self.database)

    def apply(self, changes: Plan, current: int, run_id: str, started: str, gamma: float, props: dict, marked: list[dict]) -> None:
        """Write run `current + 1` (see the module's docstring)."""
        seq = current + 1
        self.clear_leftovers(current)
        params = {"seq": seq, "run": run_id, "gamma": gamma}
        write_in_batches(self.driver, self.database, STAGE_THEMES, changes.staged, rows_per_batch(self.limit, THEME_BYTES), params)
        write_in_batches(self.driver, self.database, STAGE_MEMBERS, changes.staged_members, rows_per_batch(self.limit, MEMBERSHIP_BYTES))
        write_in_batches(self.driver, self.database, MARK_REPLACED, changes.replaced, rows_per_batch(self.limit, MARK_BYTES), {"seq": seq})
        self.driver.execute_query(STAGE_RUN, id=run_id, seq=seq, props=props, started=started, database_=self.database)
        self._switch(run_id, changes.updated, params)
        try:
            self._settle(seq)
            self.mark(marked)
        except Exception as error:
            line = explain(error)
            if line is None:
                raise
            raise LakegraphError(f"themes run {run_id} is current, but settling after it failed ({line}); the next run finishes it") from None

    def clear_leftovers(self, current: int) -> None:
        """Settle a current run that did not, then delete drafts and retired versions (memberships
        first) and take back the `until` marks of runs that never became current, in batches."""
        self._settle(current)
        size = rows_per_batch(self.limit, DELETION_BYTES)
        drain(self.driver, self.database, CLEAR_MEMBERSHIPS, size)
        drain(self.driver, self.database, CLEAR_NODES, size)
        drain(self.driver, self.database, UNMARK, size, {"current": current})

    def _switch(self, run_id: str, updated: list[dict], params: dict) -> None:
        """One transaction: the run becomes current, with the new scores and summaries of the themes
        whose members stand (one row each, never a membership)."""
        with self.driver.session(database=self.database) as session:
            session.execute_write(_switch, run_id, updated, params)

    def _settle(self, current: int) -> None:
        with self.driver.session(database=self.database) as session:
            session.execute_write(_settle, current)

    def mark(self, marked: list[dict]) -> None:
        write_in_batches(self.driver, self.database, MARK_THEMED, marked, rows_per_batch(self.limit, MARK_BYTES))

    def confirm(self, run_id: str, version: int, marked: list[dict]) -> None:
        """The last run stands for this link version: no document-level edge changed."""
        self.mark(marked)
        self.driver.execute_query(CONFIRM_RUN, id=run_id, version=version, database_=self.database)


def _switch(tx: ManagedTransaction, run_id: str, updated: list[dict], params: dict) -> None:
    tx.run(UPDATE_PROPS, rows=updated, **params).consume()
    tx.run(SWITCH, id=run_id).consume()


def _settle(tx: ManagedTransaction, current: int) -> None:
    """The replaced versions first: the uniqueness of a standing theme's id holds at every step."""
    tx.run(RETIRE, current=current).consume()
    tx.run(SETTLE, current=current).consume()
    tx.run(SETTLED, current=current).consume()
