"""The per-file time limit (worker/documents/time_limit.py): it stops a runaway block in any thread,
several at once, and never lets its exception surface after a block that ended in time."""

from __future__ import annotations

import threading
import time

import pytest

from worker.documents.time_limit import ParseTimeout, time_limit


def spin(limit: float) -> float:
    """Seconds until a busy loop under `limit` is stopped."""
    began = time.monotonic()
    with pytest.raises(ParseTimeout), time_limit(limit):
        while True:
            pass
    return time.monotonic() - began


def test_a_busy_loop_stops_at_its_limit_in_the_main_thread_and_in_others_at_once() -> None:
    assert 0.2 <= spin(0.2) < 1.0
    stopped: list[float] = []
    threads = [threading.Thread(target=lambda limit=limit: stopped.append(spin(limit))) for limit in (0.2, 0.4, 0.6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(round(seconds, 1) >= limit for seconds, limit in zip(sorted(stopped), (0.2, 0.4, 0.6), strict=True)) == [True] * 3
    assert max(stopped) < 2.0


def test_no_timeout_escapes_a_block_that_ended_at_its_deadline() -> None:
    """Blocks that end right at their limit: the exception is raised inside the block or not at all."""
    stopped = ended = 0
    for _ in range(300):
        try:
            with time_limit(0.002):
                deadline = time.monotonic() + 0.002
                while time.monotonic() < deadline:
                    pass
            ended += 1
        except ParseTimeout:
            stopped += 1
        for _ in range(2000):  # bytecodes after the block, where a stray exception would land
            pass
    assert stopped + ended == 300


def test_nested_and_finished_limits_do_not_fire_later() -> None:
    with time_limit(0.05):
        pass
    time.sleep(0.15)  # past the first limit: nothing is raised
    with pytest.raises(ParseTimeout), time_limit(5), time_limit(0.1):
        while True:
            pass


def test_a_swallowed_stop_is_raised_again_until_the_block_ends() -> None:
    """A library's bare `except:` (or a garbage-collector callback that happens to be running)
    can swallow the exception: it comes again, so the block stops soon after its limit."""
    swallowed = 0
    began = time.monotonic()
    with pytest.raises(ParseTimeout), time_limit(0.1):
        while time.monotonic() - began < 5:
            try:
                while True:
                    pass
            except ParseTimeout:
                if swallowed:
                    raise
                swallowed += 1
    assert swallowed == 1
    assert time.monotonic() - began < 1.0


def test_a_block_that_swallows_every_stop_still_ends_in_the_timeout() -> None:
    """Never a late result: a block whose deadline passed ends in ParseTimeout, however it ended."""
    swallowed = 0
    began = time.monotonic()
    with pytest.raises(ParseTimeout), time_limit(0.1):
        while time.monotonic() - began < 0.5:
            try:
                time.sleep(0.01)
            except ParseTimeout:
                swallowed += 1
    assert swallowed >= 2
    time.sleep(0.2)  # the block is over: nothing more arrives
