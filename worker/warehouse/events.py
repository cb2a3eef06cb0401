"""Where each audit-log event goes: query events to the query graph, table events to a one-table
metadata refresh. Shared by the Pub/Sub subscriber, the audit-log folder and JOBS polling."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

from worker.task_names import ABSORB_QUERIES, SYNC_TABLE
from worker.warehouse.audit_log import Event, Ignored, QueryEvent, TableEvent

Send = Callable[[str, list], None]  # task name, args


def route(event: Event, project: str) -> tuple[str, list] | Ignored:
    """The task (name, args) an event asks for, or why it asks for none."""
    if isinstance(event, QueryEvent):
        return ABSORB_QUERIES, [[asdict(event)]]
    if isinstance(event, TableEvent):
        if project and event.project != project:
            return Ignored(f"table event for project {event.project}, not {project}")
        return SYNC_TABLE, [event.dataset, event.table]
    return event


def query_event(data: dict) -> QueryEvent:
    return QueryEvent(**{**data, "referenced_tables": tuple(data["referenced_tables"])})
