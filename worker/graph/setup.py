"""The schema as these settings want it: the fixed constraints and indexes, plus vector indexes
sized to the configured embedder (none without one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from worker.embedding.factory import dimensions
from worker.graph import schema
from worker.settings import Settings

if TYPE_CHECKING:
    from neo4j import Driver


def apply_schema(settings: Settings, driver: Driver, database: str) -> schema.SchemaReport:
    return schema.apply(driver, database, vector_dimensions=dimensions(settings))
