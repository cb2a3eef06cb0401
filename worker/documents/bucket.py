"""A document library in Cloud Storage: the objects under gs://bucket/prefix are its files.

The graph is the one a folder holding the same files gives (same URIs, links and outline): an
object's name below the prefix is its relpath, and a listing is ordered as a folder walk is. A
listing carries every object's stamp — its size and MD5, so an object uploaded again with the
same bytes is not even read (its generation instead when it has no MD5, as composed objects) —
and a read is pinned to the generation it stats, so the bytes and the stamp recorded with them
always belong together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from google.api_core.exceptions import NotFound, PreconditionFailed
from google.cloud import storage

from worker.documents.library import Library, Skipped
from worker.settings import GCS_SCHEME, Settings
from worker.shared.google_clients import storage_client

READ_ATTEMPTS = 3  # an object replaced between its stat and its download is stat'ed again


def split_root(root: str) -> tuple[str, str]:
    """gs://bucket/some/prefix/ → ("bucket", "some/prefix")."""
    bucket, _, prefix = root.removeprefix(GCS_SCHEME).partition("/")
    return bucket, prefix.strip("/")


@cache
def _client(project: str, endpoint: str) -> storage.Client:
    """One client per process: a library travels to the loader's parse processes as settings."""
    return storage_client(project, endpoint)


def object_stamp(blob: storage.Blob) -> str:
    return f"{blob.size}:md5:{blob.md5_hash}" if blob.md5_hash else f"{blob.size}:gen:{blob.generation}"


def walk_order(relpath: str) -> tuple[tuple[int, str], ...]:
    """A folder walk's order: a folder's files (by name) before its subfolders (by name)."""
    *folders, name = relpath.split("/")
    return (*((1, folder) for folder in folders), (0, name))


@dataclass(frozen=True)
class BucketLibrary(Library):
    name: str
    bucket: str
    prefix: str  # without leading or trailing slash; "" for the whole bucket
    extensions: tuple[str, ...]
    project: str  # storage.project
    endpoint: str  # storage.endpoint (an emulator), "" for Google's service

    @classmethod
    def at(cls, settings: Settings, name: str, root: str, extensions: tuple[str, ...]) -> BucketLibrary:
        bucket, prefix = split_root(root)
        return cls(name, bucket, prefix, extensions, settings.storage.project, settings.storage.endpoint)

    @property
    def location(self) -> str:
        return f"{GCS_SCHEME}{self.bucket}/{self.prefix}" if self.prefix else f"{GCS_SCHEME}{self.bucket}"

    @property
    def base(self) -> str:
        """The object-name prefix of the library's files."""
        return f"{self.prefix}/" if self.prefix else ""

    def relpath_of(self, object_name: str) -> str | None:
        """The relpath of an object of this library's bucket that is one of its documents, else None."""
        if not object_name.startswith(self.base):
            return None
        relpath = object_name[len(self.base) :]
        return relpath if self.accepts(relpath) else None

    def _bucket(self) -> storage.Bucket:
        return _client(self.project, self.endpoint).bucket(self.bucket)

    def _object_name(self, relpath: str) -> str:
        if PurePosixPath(relpath).is_absolute() or ".." in PurePosixPath(relpath).parts:
            raise Skipped(f"{relpath!r} would leave the library")
        return f"{self.base}{relpath}"

    def is_file(self, relpath: str) -> bool:
        return bool(relpath) and self._bucket().blob(self._object_name(relpath)).exists()

    def is_folder(self, relfolder: str) -> bool:
        prefix = f"{self.base}{relfolder}/" if relfolder else self.base
        return any(True for _ in self._bucket().list_blobs(prefix=prefix, max_results=1))

    def _listed(self, under: str = "") -> list[tuple[str, str]]:
        """Every document below `under` with its stamp, from one listing (no request per object),
        in walk order."""
        prefix = f"{self.base}{under}/" if under else self.base
        listed = ((blob.name[len(self.base) :], object_stamp(blob)) for blob in self._bucket().list_blobs(prefix=prefix))
        return sorted(((relpath, found) for relpath, found in listed if self.accepts(relpath)), key=lambda item: walk_order(item[0]))

    def stamps(self, on_loop: Callable[[Path], None]) -> Iterator[tuple[str, str | None]]:
        yield from self._listed()

    def read_bytes(self, relpath: str, max_bytes: int) -> tuple[bytes, str]:
        """A failure other than absence raises as it is (the task is retried or recorded, and the next
        event or reconcile reads the object again): only Skipped or absence removes a document."""
        name = self._object_name(relpath)
        attempt = 1
        while True:
            blob = self._bucket().get_blob(name)
            if blob is None:
                raise FileNotFoundError(name)
            if (blob.size or 0) > max_bytes:
                raise Skipped(f"larger than documents.max_file_bytes ({blob.size} > {max_bytes} bytes)", object_stamp(blob))
            try:
                return blob.download_as_bytes(if_generation_match=blob.generation), object_stamp(blob)
            except NotFound:
                raise FileNotFoundError(name) from None
            except PreconditionFailed:  # replaced since the stat: stat the new generation
                if attempt == READ_ATTEMPTS:
                    raise
                attempt += 1

    def walk(self, on_loop: Callable[[Path], None], under: str = "") -> Iterator[str]:
        yield from (relpath for relpath, _ in self._listed(under))
