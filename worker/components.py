"""The composition root: one open graph connection and the write side's components built on it.

Every process that writes — a Celery worker, `load docs`, `load warehouse`, the demo, the
supervisor's warm-up — gets its DocumentSync, WarehouseSync, BridgeRefresh, QueryGraph and
ThemeRunner from here, built on first use, so what a component needs, and how components call
each other (a table event refreshes the bridge), is written once. The components' modules are
imported only when one is first asked for: a process that never runs themes never imports GDS.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from neo4j import Driver

from worker.graph.connection import GraphTarget, connect
from worker.settings import Settings

if TYPE_CHECKING:
    from worker.bridge.refresh import BridgeRefresh, BridgeReport
    from worker.documents.sync import DocumentSync
    from worker.shared.changes import Announcer
    from worker.themes.runner import ThemeRunner
    from worker.warehouse.load import Progress, WarehouseLoadReport
    from worker.warehouse.query_graph import QueryGraph
    from worker.warehouse.sync import WarehouseSync


@dataclass
class Components:
    settings: Settings
    driver: Driver
    where: GraphTarget

    @classmethod
    @contextmanager
    def open(cls, settings: Settings) -> Iterator[Components]:
        """Connect (EngineUnavailable when Neo4j is not there), and close the driver afterwards."""
        driver, where = connect(settings)
        with driver:
            yield cls(settings, driver, where)

    @property
    def database(self) -> str:
        return self.where.database

    @cached_property
    def documents(self) -> DocumentSync:
        from worker.documents.sync import DocumentSync

        return DocumentSync(self.settings, self.driver, self.database, self.announce)

    @cached_property
    def warehouse(self) -> WarehouseSync:
        """A table event also refreshes that table's bridged values, whichever path brought it, and
        relearns the query log through the process's one query graph."""
        from worker.warehouse.sync import WarehouseSync

        return WarehouseSync(self.settings, self.driver, self.database, after_table=self.bridge.refresh, queries=self.query_graph, announce=self.announce)

    @cached_property
    def bridge(self) -> BridgeRefresh:
        from worker.bridge.refresh import BridgeRefresh

        return BridgeRefresh(self.settings, self.driver, self.database)

    @cached_property
    def query_graph(self) -> QueryGraph:
        """One per process: it keeps the resolved query shapes across tasks."""
        from worker.warehouse.query_graph import QueryGraph

        return QueryGraph(self.driver, self.database, self.settings.warehouse.query_dialect, self.announce)

    @cached_property
    def announce(self) -> Announcer:
        """The process's one announcer of committed changes (worker/shared/changes.py)."""
        from worker.shared.changes import announcer

        return announcer(self.settings)

    def load_warehouse(self, progress: Progress = lambda stage, done, total: None) -> tuple[WarehouseLoadReport, BridgeReport]:
        """The one-shot warehouse load (`load warehouse`, the demo): every schema, the glossary, the
        audit-log files, then the bridged values (after the query logs: learned joins pick columns too)."""
        from worker.warehouse.load import load_metadata

        report = load_metadata(self.warehouse, progress)
        progress("values", 0, 1)
        bridged = self.bridge.refresh()
        progress("values", 1, 1)
        return report, bridged

    @cached_property
    def themes(self) -> ThemeRunner:
        from worker.themes.runner import ThemeRunner

        return ThemeRunner(self.settings, self.driver, self.database, self.announce)
