"""The Pub/Sub subscriber process (`lakegraph subscribe`, run by `lakegraph up` when a
subscription is configured): BigQuery audit-log messages in, tasks out; a message that cannot be
read is parked as a problem (in Redis while the graph is down) and acknowledged, never retried
forever."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

import redis

from worker import problems
from worker.celery_app import create_app
from worker.errors import LakegraphError
from worker.graph.connection import connect
from worker.runtime import redis_server
from worker.settings import Settings
from worker.warehouse.pubsub_source import AuditLogSubscriber


def run(settings: Settings, say: Callable[[str], None]) -> None:
    """Pull the subscription until SIGINT/SIGTERM."""
    if not settings.pubsub.subscription:
        raise LakegraphError("no Pub/Sub subscription: set pubsub.project and pubsub.subscription")
    app = create_app(settings)
    driver, where = connect(settings)

    def broker() -> redis.Redis:
        return redis_server.broker_client(settings, timeout=5)

    def record_poison(message_id: str, reason: str) -> None:
        problems.park(lambda: (driver, where.database), broker, "pubsub", f"message:{message_id}", "skipped", reason, "", [])

    subscriber = AuditLogSubscriber(settings, lambda task, args: app.send_task(task, args=args), record_poison)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    say(f"subscribed to {settings.pubsub.project}/{settings.pubsub.subscription}")
    with driver:
        subscriber.run(stop)
    say(f"stopped: {dict(subscriber.counts)}")
