"""Which failures a task retries with backoff (an engine restarting, throttling or unreachable) and
which it parks at once (bad input, a refused path): retrying those would only delay the record."""

from __future__ import annotations

import pytest
import redis
from google.api_core import exceptions as google_errors
from neo4j.exceptions import ConstraintError, ServiceUnavailable, SessionExpired

from worker.exceptions import EngineUnavailable, LakegraphError
from worker.paths import OutsideFolder
from worker.tasks.base import LakegraphTask

pytestmark = pytest.mark.reliability


@pytest.mark.parametrize(
    "error",
    [
        EngineUnavailable("down"),
        ServiceUnavailable("down"),
        SessionExpired("gone"),
        redis.ConnectionError("refused"),
        redis.TimeoutError("slow"),
        google_errors.ServiceUnavailable("503"),
        google_errors.TooManyRequests("429"),
        google_errors.DeadlineExceeded("deadline"),
        ConnectionResetError(),
        TimeoutError(),
    ],
)
def test_transient_failures_are_retried_with_backoff_and_jitter(error: Exception) -> None:
    assert isinstance(error, LakegraphTask.autoretry_for)
    assert LakegraphTask.retry_backoff and LakegraphTask.retry_jitter and LakegraphTask.acks_late


@pytest.mark.parametrize(
    "error",
    [
        OutsideFolder("refused path"),
        LakegraphError("bad config"),
        ConstraintError("conflict"),
        google_errors.BadRequest("bad SQL"),
        ValueError("bad input"),
    ],
)
def test_permanent_failures_are_parked_at_once(error: Exception) -> None:
    assert not isinstance(error, LakegraphTask.autoretry_for)
