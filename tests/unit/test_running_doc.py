"""docs/running.md's table of the processes `lakegraph up` supervises says what the supervisor
starts: each row's command, and the configuration under which it runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from worker.settings import load_settings
from worker.supervisor import children

DOC = Path(__file__).resolve().parents[2] / "docs" / "running.md"
# How the supervisor spells what the table writes as a user would type it.
SPELLED = {f"{sys.executable} -m celery": "celery", f"{sys.executable} -m worker.cli": "lakegraph", sys.executable: "python"}


def documented() -> dict[str, tuple[str, str]]:
    text = DOC.read_text()
    table = text[text.index("<!-- processes:") : text.index("<!-- end of processes -->")]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    return {name: (runs.strip("`"), when) for name, runs, when in rows[1:]}


def started(serve: bool = False, **sections: dict) -> dict[str, str]:
    found = children(load_settings(**sections), serve)
    commands = {}
    for child in found:
        command = " ".join(child.argv)
        for long, short in SPELLED.items():
            command = command.replace(long, short, 1) if command.startswith(long) else command
        commands[child.name] = command
    return commands


@pytest.mark.parametrize(
    ("serve", "sections", "optional"),
    [
        (False, {}, set()),
        (False, {"pubsub": {"subscription": "audit"}}, {"subscribe"}),
        (False, {"storage": {"subscription": "bucket"}}, {"subscribe"}),
        (True, {}, {"serve"}),
    ],
)
def test_the_documented_processes_are_the_ones_started(serve: bool, sections: dict, optional: set[str]) -> None:
    table = documented()
    always = {name for name, (_, when) in table.items() if when.startswith("always")}
    commands = started(serve, **sections)
    assert set(commands) == always | optional
    for name, command in commands.items():
        assert command.startswith(table[name][0]), f"{name}: the table says `{table[name][0]}`, the supervisor runs `{command}`"
