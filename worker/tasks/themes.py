"""Themes tasks: a debounced check that runs Leiden when the link graph changed and has settled."""

from __future__ import annotations

from dataclasses import asdict

from worker import problems, task_names
from worker.celery_app import app
from worker.tasks import context
from worker.tasks.base import LakegraphTask
from worker.themes import failures

SOURCE = "themes"


class ThemesTask(LakegraphTask):
    problem_source = SOURCE


def themes_touched() -> None:
    """Called after a document change: mark themes dirty and schedule the one pending check."""
    scheduler = context.theme_scheduler()
    if scheduler.mark_dirty():
        check_themes.apply_async(countdown=scheduler.quiet)


@app.task(name=task_names.CHECK_THEMES, base=ThemesTask)
def check_themes(requested: bool = False) -> dict:
    """`requested`: a run someone asked for (`POST /v1/themes/refresh`), made now rather than after
    the quiet window; on a link graph unchanged since the last run it changes nothing."""
    scheduler = context.theme_scheduler()
    if requested:
        scheduler.request_run()
    decision = scheduler.decide()
    if decision.action == "wait":
        check_themes.apply_async(countdown=decision.seconds)
        return {"action": "wait", "seconds": decision.seconds}
    if decision.action == "run" and not scheduler.begin_run():
        check_themes.apply_async(countdown=1.0)  # another run holds the lock; look again shortly
        return {"action": "busy"}
    outcome: dict = {"action": decision.action, "report": None}
    if decision.action == "run":
        failed = True
        try:
            outcome["report"] = asdict(context.theme_runner().run())
            failed = False
            failures.cleared(*context.graph_database(), context.broker)
        except Exception as error:
            reason = failures.reason(error)
            if reason is None:
                raise
            # Recorded and retried by a later check, backing off (see ThemeScheduler.end_run), not
            # by the task's retries: a run that fails for want of memory fails the same way at once.
            problems.park(context.graph_database, context.broker, failures.SOURCE, failures.KEY, "failed", reason, task_names.CHECK_THEMES, [])
            outcome = {"action": "failed", "reason": reason}
        finally:
            scheduler.end_run(failed)
    if scheduler.release_check():
        check_themes.apply_async(countdown=scheduler.quiet)
    return outcome
