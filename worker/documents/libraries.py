"""The configured document libraries, each as the Library its root names: a folder, or a bucket.

A factory of its own, so that library.py (the base class and folders) never imports its bucket
subclass, and the storage client is imported only where a bucket is configured."""

from __future__ import annotations

import os
from pathlib import Path

from worker.documents.library import FolderLibrary, Library
from worker.settings import GCS_SCHEME, Settings


def libraries(settings: Settings) -> list[Library]:
    conf = settings.documents
    extensions = tuple(conf.extensions)
    found: list[Library] = []
    for entry in conf.libraries:
        if entry.root.startswith(GCS_SCHEME):
            from worker.documents.bucket import BucketLibrary

            found.append(BucketLibrary.at(settings, entry.name, entry.root, extensions))
        else:
            found.append(FolderLibrary(entry.name, Path(os.path.abspath(os.path.expanduser(entry.root))), extensions))
    return found
