"""Level-triggered metadata sync: "make the graph match this schema (or this one table) now"."""

from __future__ import annotations

from dataclasses import asdict

from neo4j import Driver

from worker.settings import Settings
from worker.warehouse.connectors import connector
from worker.warehouse.writer import MetadataReport, MetadataWriter


class WarehouseSync:
    def __init__(self, settings: Settings, driver: Driver, database: str) -> None:
        self.connector = connector(settings)
        self.writer = MetadataWriter(driver, database)

    def sync_table(self, schema: str, table: str) -> MetadataReport:
        """One table re-read (created, altered or dropped: a dropped table's snapshot is empty)."""
        return self.writer.apply(self.connector.snapshot(schema, table))

    def sync_schema(self, schema: str) -> MetadataReport:
        """A whole schema re-read: the drift reconcile; tables no longer there are removed."""
        return self.writer.apply(self.connector.snapshot(schema))

    def sync_all(self) -> dict[str, dict]:
        return {schema: asdict(self.sync_schema(schema)) for schema in self.connector.schemas()}
