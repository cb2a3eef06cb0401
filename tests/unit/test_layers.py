"""The code's layers, read from the imports: the read side (`shapes`) stands on the graph layer and
what both sides share, never on the write side's domain packages; the write side reaches the read
side only from the command line, where the read commands are made from the shapes' specs."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What the read side may import of `worker`: the graph layer, what both sides share (the Google
# clients among it), the settings and exception types, the task names and the recorded problems
# (the backlog and /metrics count them), the broker's client, the embedder its vector search asks,
# and the pid record of a running server; and the Celery app a served request is sent through, by
# task name (shapes/serving/requests.py), to be run by a worker.
READ_SIDE_MAY_USE = (
    "worker.graph",
    "worker.shared",
    "worker.settings",
    "worker.exceptions",
    "worker.task_names",
    "worker.problems",
    "worker.runtime.redis_server",
    "worker.embedding",
    "worker.runtime.processes",
    "worker.celery_app",
)
# Where the write side may import `shapes`: the command line.
COMMAND_LINE = ("worker/cli.py", "worker/commands/")


def imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_the_read_side_stands_on_the_graph_layer_and_what_both_sides_share() -> None:
    crossings = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in modules("shapes")
        for name in imported(path)
        if name.startswith("worker.") and not name.startswith(READ_SIDE_MAY_USE)
    }
    assert crossings == set()


def test_the_write_side_reaches_the_read_side_only_from_the_command_line() -> None:
    crossings = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in modules("worker")
        for name in imported(path)
        if (name == "shapes" or name.startswith("shapes.")) and not str(path.relative_to(ROOT)).startswith(COMMAND_LINE)
    }
    assert crossings == set()
