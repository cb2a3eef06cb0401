"""Pub/Sub clients find the emulator only through PUBSUB_EMULATOR_HOST, a process-wide variable:
`lakegraph subscribe` builds one client per subscription in threads of their own, and every one of
them must see the emulator's host while it builds (a thread that saw none would talk to Google)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from worker.settings import load_settings
from worker.shared.google_clients import PUBSUB_EMULATOR_ENV, pubsub_environment


def test_threads_building_clients_at_once_all_see_the_emulator_and_the_variable_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PUBSUB_EMULATOR_ENV, raising=False)
    settings = load_settings(pubsub={"emulator_host": "127.0.0.1:8681"})
    seen: list[str | None] = []
    start = threading.Barrier(8)

    def build() -> None:
        start.wait()
        for _ in range(20):
            with pubsub_environment(settings):
                time.sleep(0.0005)  # a client reading the variable while another thread leaves its block
                seen.append(os.environ.get(PUBSUB_EMULATOR_ENV))

    threads = [threading.Thread(target=build) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == ["127.0.0.1:8681"] * 160
    assert PUBSUB_EMULATOR_ENV not in os.environ
