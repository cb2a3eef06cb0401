"""Level-triggered metadata sync: "make the graph match this schema (or this one table) now"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Final

from neo4j import Driver

from worker import problems
from worker.embedding.factory import embedder
from worker.exceptions import LakegraphError
from worker.settings import Settings
from worker.shared.changes import Announce, Change, announcer
from worker.task_names import SYNC_CATALOG_GLOSSARY, SYNC_GLOSSARY
from worker.warehouse import glossary
from worker.warehouse.connectors import connector
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.schema_snapshot import Snapshot
from worker.warehouse.table_search import SearchReport, TableSearchRefresher
from worker.warehouse.writer import MetadataReport, MetadataWriter

SOURCE: Final = "warehouse"


class WarehouseSync:
    def __init__(
        self,
        settings: Settings,
        driver: Driver,
        database: str,
        after_table: Callable[[str, str], object] = lambda schema, table: None,
        queries: QueryGraph | None = None,
        announce: Announce | None = None,
    ) -> None:
        """`after_table(schema, table)` runs after each table event is applied: the composition root
        (worker/components.py) refreshes that table's bridged values there, and passes the process's
        one `queries` (the query log's graph, whose resolved shapes the audit tasks share) and its one
        `announce` (worker/shared/changes.py)."""
        self.settings = settings
        self.driver = driver
        self.database = database
        self.after_table = after_table
        self.connector = connector(settings)
        self.writer = MetadataWriter(driver, database)
        self.announce = announce or announcer(settings)
        self.queries = queries or QueryGraph(driver, database, settings.warehouse.query_dialect, self.announce)
        self.search = TableSearchRefresher(driver, database, embedder(settings))

    def sync_table(self, schema: str, table: str) -> MetadataReport:
        """One table re-read (created, altered or dropped: a dropped table's snapshot is empty),
        then what follows a table event (after_table) — whichever path brought the event."""
        report = self.writer.apply(self.connector.snapshot(schema, table))
        self.announce(Change(SOURCE, (f"{self.connector.database}.{schema}.{table}",)))
        self.refresh_search([schema])
        self.queries.relearn()
        self.after_table(schema, table)
        return report

    def sync_schema(self, schema: str) -> MetadataReport:
        """A whole schema re-read: the drift reconcile; tables no longer there are removed."""
        return self._write_schema(self.connector.snapshot(schema))

    def _write_schema(self, snapshot: Snapshot) -> MetadataReport:
        report = self.writer.apply(snapshot)
        self.announce(Change(SOURCE))
        self.refresh_search([snapshot.schema])
        return report

    def sync_schemas(self, on_schema: Callable[[int, int], None] = lambda done, total: None) -> dict[str, dict]:
        """Every schema of the warehouse. Schemas gone from it are removed — only this database's,
        and only when the connector lists the whole database rather than a configured selection."""
        schemas = self.connector.schemas()
        reports = {}
        outward = []
        for index, schema in enumerate(schemas):
            on_schema(index, len(schemas))
            snapshot = self.connector.snapshot(schema)
            reports[schema] = asdict(self._write_schema(snapshot))
            if snapshot.keys_outward:
                outward.append(snapshot)
        for snapshot in outward:  # a key into a schema written after its own: its columns exist now
            reports[snapshot.schema]["keys"] = self.writer.apply(snapshot).keys
        if self.connector.lists_all_schemas:
            for name, gone in self.writer.prune_schemas(self.connector.database, schemas).items():
                reports[name] = asdict(gone)
                self.announce(Change(SOURCE))
        return reports

    def sync_all(self) -> dict[str, dict]:
        """Every schema, the queries that came before their tables, then the glossary (its tags may
        name tables that just appeared)."""
        reports = self.sync_schemas()
        reports["query_log"] = asdict(self.queries.relearn())
        found = self.sync_glossary()
        if found is not None:
            reports["glossary"] = asdict(found)
        catalog = self.sync_catalog_glossary()
        if catalog is not None:
            reports["knowledge_catalog"] = catalog
        return reports

    def refresh_search(self, schemas: list[str] | None = None) -> SearchReport:
        """Re-read the search text of the tables of `schemas` (names in this warehouse; None: every
        table) and every term, re-embedding whatever text changed. A table event reads its schema:
        a new shard moves its family's search text to it."""
        ids = None if schemas is None else [f"{self.connector.database}.{schema}" for schema in schemas]
        return self.search.refresh(ids)

    def sync_glossary(self) -> glossary.GlossaryReport | None:
        """Make BusinessTerms and their tags match the glossary file; a bad file is recorded, not raised."""
        configured = self.settings.warehouse.glossary_path
        if not configured:
            return None
        path = Path(configured).resolve()
        key = f"glossary:{path}"
        problems.clear(self.driver, self.database, SOURCE, key, ("skipped", "warning"))
        try:
            terms = glossary.read(path)
        except LakegraphError as err:
            problems.record(self.driver, self.database, SOURCE, key, "skipped", str(err), SYNC_GLOSSARY, [])
            return None
        report = glossary.sync(self.driver, self.database, terms)
        self.announce(Change("glossary"))
        self.refresh_search()
        if reason := report.problem_text("tags matching no single table or column"):
            problems.record(self.driver, self.database, SOURCE, key, "warning", reason, SYNC_GLOSSARY, [])
        return report

    def sync_catalog_glossary(self) -> dict | None:
        """Make the terms of each Knowledge Catalog glossary match it. A glossary read whole is
        synced; one that failed keeps its terms and is recorded; one gone loses them."""
        if not self.settings.knowledge_catalog.project:
            return None
        from worker.warehouse.knowledge_catalog import KnowledgeCatalog, source_of  # the Dataplex client, only when configured

        found = KnowledgeCatalog(self.settings).read()

        def record(name: str, kind: problems.Kind, reason: str) -> None:
            problems.record(self.driver, self.database, SOURCE, f"catalog:{name}", kind, reason, SYNC_CATALOG_GLOSSARY, [])

        def clear(name: str) -> None:
            problems.clear(self.driver, self.database, SOURCE, f"catalog:{name}", ("skipped", "warning"))

        synced: dict[str, dict] = {}
        for name, terms in found.glossaries.items():
            report = glossary.sync(self.driver, self.database, terms, source_of(name))
            synced[name] = asdict(report)
            clear(name)
            if reason := report.problem_text("terms linked to no known table or column"):
                record(name, "warning", reason)
        stored = {source.removeprefix(source_of("")) for source in glossary.sources(self.driver, self.database, source_of(""))}
        gone = set(found.gone) | (stored - set(found.glossaries) - set(found.failed) if found.listed else set())
        removed = sorted(source_of(name) for name in gone)
        for name in gone:
            glossary.sync(self.driver, self.database, [], source_of(name))
            clear(name)
        for name, reason in found.failed.items():
            record(name, "skipped", f"not read, its terms kept as they were: {reason}")
        if synced or removed:
            self.announce(Change("glossary"))
            self.refresh_search()
        return {"glossaries": synced, "failed": found.failed, "removed": removed}
