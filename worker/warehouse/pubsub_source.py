"""The Pub/Sub subscription of a Logging sink: audit-log LogEntries in, Celery tasks out; entries
of other methods and services are acknowledged and counted."""

from __future__ import annotations

from worker.pubsub_stream import Message, Poison, RecordPoison, TaskSubscriber
from worker.settings import Settings
from worker.warehouse.audit_log import AuditLogError, Ignored, parse_bytes
from worker.warehouse.events import Send, route


class AuditLogSubscriber(TaskSubscriber):
    def __init__(self, settings: Settings, send: Send, record_poison: RecordPoison) -> None:
        super().__init__(send, record_poison)
        self.settings = settings

    def route(self, message: Message) -> tuple[str, list] | None:
        try:
            event = parse_bytes(message.data)
        except AuditLogError as err:
            raise Poison(str(err)) from None
        routed = route(event, self.settings.warehouse.bigquery_project)
        return None if isinstance(routed, Ignored) else routed
