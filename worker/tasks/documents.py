"""Document tasks: sync one path, sync a folder, reconcile everything. All level-triggered."""

from __future__ import annotations

from dataclasses import asdict

from worker import task_names
from worker.celery_app import app
from worker.documents.loader import reconcile
from worker.documents.sync import SOURCE
from worker.tasks import context
from worker.tasks.base import LakegraphTask
from worker.tasks.themes import themes_touched

# Outcomes that may have changed the link graph (the themes run itself skips unchanged edge sets).
CHANGED = ("written", "deleted")


class DocumentTask(LakegraphTask):
    problem_source = SOURCE


@app.task(name=task_names.SYNC_DOCUMENT, base=DocumentTask)
def sync_document(library: str, relpath: str) -> str:
    """Make the graph match this file (or its absence) now."""
    outcome = context.documents().sync_path(library, relpath)
    if outcome in CHANGED:
        themes_touched()
    return outcome


@app.task(name=task_names.SYNC_FOLDER, base=DocumentTask)
def sync_folder(library: str, relfolder: str) -> dict:
    """A folder appeared, vanished or moved: make its subtree match the disk."""
    report = context.documents().sync_folder(library, relfolder)
    if any(report.outcomes.get(outcome) for outcome in CHANGED):
        themes_touched()
    return asdict(report)


@app.task(name=task_names.RECONCILE_DOCUMENTS, base=DocumentTask)
def reconcile_documents() -> dict:
    """Compare every file with the graph and repair drift (a missed event is repaired, not lost)."""
    report = reconcile(context.documents())
    if any(report.outcomes.get(outcome) for outcome in CHANGED):
        themes_touched()
    return asdict(report)
