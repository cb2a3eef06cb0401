"""The Pub/Sub subscription of a Logging sink: audit-log LogEntries in, Celery tasks out.

A message is acknowledged only after its task is enqueued (a failed enqueue is nacked and comes
back); a message that is not a LogEntry is recorded as a problem and acknowledged, so poison is
never redelivered forever; entries of other methods and services are acknowledged and counted.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable

from google.cloud import pubsub_v1

from worker.google_clients import pubsub_environment
from worker.settings import Settings
from worker.warehouse.audit_log import AuditLogError, Ignored, parse_bytes
from worker.warehouse.events import Send, route

log = logging.getLogger(__name__)
MAX_OUTSTANDING = 200
# Messages are acknowledged as soon as their task is enqueued, so leases never need long
# extensions; capping them also caps the stream's ack deadline (else 60 s), which is how soon the
# messages a crashed subscriber held are delivered again.
LEASE_EXTENSION_SECONDS = 10

RecordPoison = Callable[[str, str], None]  # message id, reason


class AuditLogSubscriber:
    def __init__(self, settings: Settings, send: Send, record_poison: RecordPoison) -> None:
        self.settings = settings
        self.send = send
        self.record_poison = record_poison
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1

    def handle(self, message: pubsub_v1.subscriber.message.Message) -> None:
        try:
            event = parse_bytes(message.data)
        except AuditLogError as err:
            self.record_poison(message.message_id, str(err))
            self._count("poison")
            message.ack()
            return
        routed = route(event, self.settings.warehouse.bigquery_project)
        if isinstance(routed, Ignored):
            self._count("ignored")
            message.ack()
            return
        try:
            self.send(*routed)
        except Exception as err:  # the broker is down: let Pub/Sub deliver it again
            log.warning("could not enqueue message %s (%s); nacked", message.message_id, err)
            self._count("nacked")
            message.nack()
            return
        self._count("enqueued")
        message.ack()

    def run(self, stop: threading.Event) -> None:
        """Stream until `stop` is set (or the stream fails for good, which raises)."""
        conf = self.settings.pubsub
        with pubsub_environment(self.settings):
            subscriber = pubsub_v1.SubscriberClient()
        path = subscriber.subscription_path(conf.project, conf.subscription)
        flow = pubsub_v1.types.FlowControl(max_messages=MAX_OUTSTANDING, max_duration_per_lease_extension=LEASE_EXTENSION_SECONDS)
        future = subscriber.subscribe(path, callback=self.handle, flow_control=flow)
        try:
            while not stop.wait(0.2):
                if future.done():
                    future.result()  # raises the stream's error
        finally:
            future.cancel()
            subscriber.close()
