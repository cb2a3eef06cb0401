"""The Pub/Sub subscriber process (`lakegraph subscribe`, run by `lakegraph up` when a
subscription is configured): BigQuery audit-log entries (pubsub.subscription) and Cloud Storage
object notifications (storage.subscription) in, tasks out. A message that cannot be read is
parked as a problem (in Redis while the graph is down) and acknowledged, never retried forever."""

from __future__ import annotations

import signal
import threading
from collections import Counter
from collections.abc import Callable

import redis

from worker import problems
from worker.celery_app import create_app
from worker.documents.bucket_events import BucketSubscriber
from worker.documents.libraries import libraries
from worker.exceptions import LakegraphError
from worker.graph.connection import connect
from worker.pubsub_stream import TaskSubscriber, stream
from worker.runtime import redis_server
from worker.settings import Settings
from worker.warehouse.pubsub_source import AuditLogSubscriber


def subscriptions(settings: Settings) -> list[str]:
    """The subscriptions this process streams: audit logs, bucket notifications, or both."""
    return [name for name in (settings.pubsub.subscription, settings.storage.subscription) if name]


def run(settings: Settings, say: Callable[[str], None]) -> None:
    """Pull every configured subscription until SIGINT/SIGTERM."""
    if not subscriptions(settings):
        raise LakegraphError("no Pub/Sub subscription: set pubsub.subscription (audit logs) or storage.subscription (bucket notifications)")
    if not settings.pubsub.project:
        raise LakegraphError("pubsub.project is not set: it holds the subscriptions")
    app = create_app(settings)
    driver, where = connect(settings)

    def broker() -> redis.Redis:
        return redis_server.broker_client(settings, timeout=5)

    def poison_recorder(source: str) -> Callable[[str, str], None]:
        def record(message_id: str, reason: str) -> None:
            problems.park(lambda: (driver, where.database), broker, source, f"message:{message_id}", "skipped", reason, "", [])

        return record

    def send(task: str, args: list) -> None:
        app.send_task(task, args=args)

    streams: dict[str, TaskSubscriber] = {}
    if settings.pubsub.subscription:
        streams[settings.pubsub.subscription] = AuditLogSubscriber(settings, send, poison_recorder("pubsub"))
    if settings.storage.subscription:
        streams[settings.storage.subscription] = BucketSubscriber(libraries(settings), send, poison_recorder("documents"))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    failures: list[BaseException] = []

    def pull(subscription: str, subscriber: TaskSubscriber) -> None:
        try:
            stream(settings, subscription, subscriber.handle, stop)
        except BaseException as err:  # one stream failing for good stops the process, which `up` restarts
            failures.append(err)
            stop.set()

    threads = [threading.Thread(target=pull, args=item, name=f"pull-{item[0]}", daemon=True) for item in streams.items()]
    say(f"subscribed to {', '.join(f'{settings.pubsub.project}/{name}' for name in streams)}")
    with driver:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    counts = sum((subscriber.counts for subscriber in streams.values()), Counter())
    say(f"stopped: {dict(counts)}")
    if failures:
        raise failures[0]
