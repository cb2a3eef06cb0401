"""What a caller may ask the write side to do from a served surface: sent to the workers as a
Celery task by name (worker/task_names.py), never run in the serving process, so a request costs
the server one message and the worker applies it under its own locks and debounce."""

from __future__ import annotations

from typing import TYPE_CHECKING

from worker.task_names import CHECK_THEMES

if TYPE_CHECKING:
    from celery import Celery

    from worker.settings import Settings

THEMES_REFRESH = "/v1/themes/refresh"  # POST: the HTTP API's endpoint, the themes page's button


class WriteRequests:
    """A producer of the broker the workers read, built on first use (the embedded Redis may start
    after `serve`) and kept."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.app: Celery | None = None

    def themes_run(self) -> str:
        """Ask for a themes run now (it changes nothing on an unchanged link graph); its task id.
        Raises when the broker cannot be reached: not retried, so the caller hears at once."""
        if self.app is None:
            from worker.celery_app import create_app

            self.app = create_app(self.settings)
        return str(self.app.send_task(CHECK_THEMES, kwargs={"requested": True}, retry=False).id)
