"""Themes tasks: a debounced check that runs Leiden when the link graph changed and has settled."""

from __future__ import annotations

from dataclasses import asdict

from worker import task_names
from worker.celery_app import app
from worker.tasks import context
from worker.tasks.base import LakegraphTask

SOURCE = "themes"


class ThemesTask(LakegraphTask):
    problem_source = SOURCE


def themes_touched() -> None:
    """Called after a document change: mark themes dirty and schedule the one pending check."""
    scheduler = context.theme_scheduler()
    if scheduler.mark_dirty():
        check_themes.apply_async(countdown=scheduler.quiet)


@app.task(name=task_names.CHECK_THEMES, base=ThemesTask)
def check_themes() -> dict:
    scheduler = context.theme_scheduler()
    decision = scheduler.decide()
    if decision.action == "wait":
        check_themes.apply_async(countdown=decision.seconds)
        return {"action": "wait", "seconds": decision.seconds}
    if decision.action == "run" and not scheduler.begin_run():
        check_themes.apply_async(countdown=1.0)  # another run holds the lock; look again shortly
        return {"action": "busy"}
    report = None
    if decision.action == "run":
        failed = True
        try:
            report = context.theme_runner().run()
            failed = False
        finally:
            scheduler.end_run(failed)
    if scheduler.release_check():
        check_themes.apply_async(countdown=scheduler.quiet)
    return {"action": decision.action, "report": asdict(report) if report else None}
