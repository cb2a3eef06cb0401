"""The base for lakegraph's tasks: late acks, retries with backoff on transient errors, and a
recorded problem (replayable with `lakegraph errors --replay`) once retries run out."""

from __future__ import annotations

import json
import logging

from celery import Task

from worker import problems
from worker.tasks import context

log = logging.getLogger(__name__)


class LakegraphTask(Task):
    acks_late = True
    autoretry_for = context.TRANSIENT_ERRORS
    retry_backoff = True
    retry_backoff_max = 60
    retry_jitter = True
    max_retries = 8
    problem_source = "worker"

    def on_failure(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: object) -> None:
        try:
            driver, where = context.graph()
            problems.record(
                driver, where.database, self.problem_source, f"{self.name} {json.dumps(list(args))}", "failed",
                f"{type(exc).__name__}: {exc}", self.name, list(args),
            )
        except Exception:  # the graph itself is down: Celery's result backend still holds the failure
            log.exception("could not record the failure of %s%s", self.name, args)
