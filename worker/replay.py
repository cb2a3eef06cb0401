"""Replaying a recorded problem (`lakegraph errors --replay ID`): the task that repairs its key,
sent again through the broker and awaited, so the one who asked sees the outcome."""

from __future__ import annotations

from collections.abc import Callable

from worker.celery_app import create_app
from worker.exceptions import LakegraphError
from worker.problems import Problem
from worker.settings import Settings

REPLAY_TIMEOUT = 120  # seconds to wait for the repairing task


def replay(settings: Settings, problem: Problem, say: Callable[[str], None]) -> None:
    if not problem.task:
        raise LakegraphError(f"problem {problem.id} has nothing to replay: {problem.reason}")
    result = create_app(settings).send_task(problem.task, args=problem.args)
    say(f"replaying {problem.task}{tuple(problem.args)} as task {result.id}")
    try:
        outcome = result.get(timeout=REPLAY_TIMEOUT)
    except Exception as error:
        raise LakegraphError(f"replay of {problem.id} failed: {type(error).__name__}: {error}") from None
    say(f"done: {outcome}")
