"""Cloud Storage object notifications (JSON_API_V1, or NONE: the attributes suffice) in, document
syncs out. A notification only names an object: the sync reads the object as it is when it runs,
so notifications may arrive late, twice or out of order — an older generation's never undoes a
newer one, and an overwrite's delete and finalize give the same graph in either order."""

from __future__ import annotations

import json
from collections.abc import Callable

from worker.documents.bucket import BucketLibrary
from worker.documents.library import Library
from worker.pubsub_stream import Message, Poison, RecordPoison, TaskSubscriber
from worker.task_names import SYNC_DOCUMENT

EVENTS = ("OBJECT_FINALIZE", "OBJECT_DELETE", "OBJECT_ARCHIVE", "OBJECT_METADATA_UPDATE")


def object_named(message: Message) -> tuple[str, str]:
    """(bucket, object name) from the attributes, else from a JSON_API_V1 payload."""
    bucket, name = message.attributes.get("bucketId"), message.attributes.get("objectId")
    if bucket and name:
        return bucket, name
    try:
        resource = json.loads(message.data or b"null")
    except ValueError:
        resource = None
    if isinstance(resource, dict) and isinstance(resource.get("bucket"), str) and isinstance(resource.get("name"), str):
        return resource["bucket"], resource["name"]
    raise Poison("not a Cloud Storage notification: no bucketId/objectId attributes and no object resource")


class BucketSubscriber(TaskSubscriber):
    def __init__(self, libraries: list[Library], send: Callable[[str, list], None], record_poison: RecordPoison) -> None:
        super().__init__(send, record_poison)
        # the most specific library first: an object under nested prefixes belongs to the deeper one
        self.libraries = sorted((library for library in libraries if isinstance(library, BucketLibrary)), key=lambda library: -len(library.base))

    def route(self, message: Message) -> tuple[str, list] | None:
        event = message.attributes.get("eventType", "")
        if event and event not in EVENTS:
            return None
        bucket, name = object_named(message)
        for library in self.libraries:
            if library.bucket == bucket and (relpath := library.relpath_of(name)) is not None:
                return SYNC_DOCUMENT, [library.name, relpath]
        return None
