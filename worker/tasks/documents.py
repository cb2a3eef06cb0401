"""Document tasks: sync one path, sync a folder, reconcile everything. All level-triggered."""

from __future__ import annotations

from dataclasses import asdict

from worker.celery_app import app
from worker.documents.sync import SOURCE
from worker.tasks import context
from worker.tasks.base import LakegraphTask


class DocumentTask(LakegraphTask):
    problem_source = SOURCE


@app.task(name="lakegraph.sync_document", base=DocumentTask)
def sync_document(library: str, relpath: str) -> str:
    """Make the graph match this file (or its absence) now."""
    return context.documents().sync_path(library, relpath)


@app.task(name="lakegraph.sync_folder", base=DocumentTask)
def sync_folder(library: str, relfolder: str) -> dict:
    """A folder appeared, vanished or moved: make its subtree match the disk."""
    return asdict(context.documents().sync_folder(library, relfolder))


@app.task(name="lakegraph.reconcile_documents", base=DocumentTask)
def reconcile_documents() -> dict:
    """Compare every file with the graph and repair drift (a missed event is repaired, not lost)."""
    return asdict(context.documents().reconcile())
