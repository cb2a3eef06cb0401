"""The one-shot warehouse load's metadata part: every schema, the glossary, the audit-log files
(and a PostgreSQL or MySQL server's statement statistics).
Components.load_warehouse runs it, then the bridge — what `lakegraph load warehouse` and
`lakegraph demo` both run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from worker.warehouse.audit_files import ingest
from worker.warehouse.audit_folder import folder_files
from worker.warehouse.glossary import GlossaryReport
from worker.warehouse.history import history_poller
from worker.warehouse.query_graph import RelearnReport
from worker.warehouse.statements_poller import StatementsPoller, StatementsReport
from worker.warehouse.sync import WarehouseSync

Progress = Callable[[str, int, int], None]  # stage, done, total


@dataclass
class WarehouseLoadReport:
    database: str
    schemas: dict[str, dict] = field(default_factory=dict)
    glossary: GlossaryReport | None = None
    relearned: RelearnReport | None = None  # queries absorbed before their tables, credited now
    query_logs: list[dict] = field(default_factory=list)
    statements: StatementsReport | None = None  # a server's statement statistics, read once


def load_metadata(sync: WarehouseSync, progress: Progress = lambda stage, done, total: None) -> WarehouseLoadReport:
    report = WarehouseLoadReport(sync.connector.database)
    report.schemas = sync.sync_schemas(lambda done, total: progress("warehouse", done, total + 1))
    report.relearned = sync.queries.relearn()
    report.glossary = sync.sync_glossary()
    progress("warehouse", 1, 1)
    files = folder_files(sync.settings.audit_log_path)
    for index, path in enumerate(files):
        progress("query logs", index, len(files))
        report.query_logs.append(ingest(path, sync.queries, sync))
    progress("query logs", len(files), len(files))
    if isinstance(poller := history_poller(sync.settings, sync.driver, sync.database, sync.queries), StatementsPoller):
        report.statements = poller.poll()  # a server's log is only polled: what it holds now, learned now
    return report
