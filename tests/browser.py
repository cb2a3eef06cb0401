"""The Chromium the browser tests drive with Playwright: Debian's, headless, quiet."""

from __future__ import annotations

import shutil

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("this test needs Chromium (Debian: apt-get install chromium; .ci/run installs it)")
    return found
