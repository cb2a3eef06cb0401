"""Streaming pull from one Pub/Sub subscription into a handler, until asked to stop.

Handlers acknowledge a message only after its task is enqueued, so leases never need long
extensions; capping them also caps the stream's ack deadline (else 60 s), which is how soon the
messages a crashed subscriber held are delivered again.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable

from google.cloud import pubsub_v1
from google.cloud.pubsub_v1.subscriber.message import Message

from worker.settings import Settings
from worker.shared.google_clients import pubsub_environment

log = logging.getLogger(__name__)
MAX_OUTSTANDING = 200
LEASE_EXTENSION_SECONDS = 10

RecordPoison = Callable[[str, str], None]  # message id, reason


def create_topic_with_subscription(publisher: pubsub_v1.PublisherClient, project: str, topic_id: str, subscription_id: str) -> str:
    """A topic and a subscription on it that leases messages as `stream` extends them (what a
    deployment's setup makes; the demo and the tests make it on the emulator); the topic's path."""
    topic = publisher.topic_path(project, topic_id)
    publisher.create_topic(name=topic)
    subscriber = pubsub_v1.SubscriberClient()
    try:
        subscriber.create_subscription(name=subscriber.subscription_path(project, subscription_id), topic=topic, ack_deadline_seconds=LEASE_EXTENSION_SECONDS)
    finally:
        subscriber.close()
    return topic


def stream(settings: Settings, subscription: str, handle: Callable[[Message], None], stop: threading.Event) -> None:
    """Stream `subscription` (in pubsub.project) until `stop` is set (or the stream fails for good,
    which raises)."""
    with pubsub_environment(settings):
        subscriber = pubsub_v1.SubscriberClient()
    path = subscriber.subscription_path(settings.pubsub.project, subscription)
    flow = pubsub_v1.types.FlowControl(max_messages=MAX_OUTSTANDING, max_duration_per_lease_extension=LEASE_EXTENSION_SECONDS)
    future = subscriber.subscribe(path, callback=handle, flow_control=flow)
    try:
        while not stop.wait(0.2):
            if future.done():
                future.result()  # raises the stream's error
    finally:
        future.cancel()
        subscriber.close()


class Poison(Exception):
    """The message can never become a task; the message says why."""


class TaskSubscriber(ABC):
    """Messages in, Celery tasks out. A message is acknowledged only after its task is enqueued (a
    failed enqueue is nacked and comes back); poison is recorded as a problem and acknowledged, so it
    is never redelivered forever; a message asking for nothing is acknowledged and counted."""

    def __init__(self, send: Callable[[str, list], None], record_poison: RecordPoison) -> None:
        self.send = send  # task name, args
        self.record_poison = record_poison
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    @abstractmethod
    def route(self, message: Message) -> tuple[str, list] | None:
        """The task (name, args) the message asks for, None for none; Poison if it is unreadable."""

    def _count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1

    def handle(self, message: Message) -> None:
        try:
            routed = self.route(message)
        except Poison as err:
            self.record_poison(message.message_id, str(err))
            self._count("poison")
            message.ack()
            return
        if routed is None:
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
