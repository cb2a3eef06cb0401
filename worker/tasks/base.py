"""The base for lakegraph's tasks: late acks, retries with backoff on transient errors, and a
recorded problem (replayable with `lakegraph errors --replay`) once retries run out — held in
Redis when the graph itself is what is down."""

from __future__ import annotations

import json
import logging

from celery import Task
from redis.exceptions import RedisError

from worker import problems
from worker.exceptions import EngineUnavailable
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
        key = f"{self.name} {json.dumps(list(args))}"
        try:
            problems.park(context.graph_database, context.broker, self.problem_source, key, "failed", f"{type(exc).__name__}: {exc}", self.name, list(args))
        except (RedisError, EngineUnavailable):  # both stores down: the log and Celery's failure report remain
            log.exception("could not record the failure of %s%s anywhere", self.name, args)
