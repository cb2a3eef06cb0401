"""What every `lakegraph` command shares: the consoles, the lazily loaded settings, JSON output."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

if TYPE_CHECKING:
    from worker.settings import Settings

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


class Context:
    last: Context | None = None  # this process's, for the error handler that outlives click's

    def __init__(self, config_file: Path | None) -> None:
        self.config_file = config_file
        self._settings: Settings | None = None
        Context.last = self

    @property
    def loaded(self) -> bool:
        return self._settings is not None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from worker.settings import load_settings

            self._settings = load_settings(self.config_file)
        return self._settings


pass_context = click.make_pass_decorator(Context)


def say(line: str) -> None:
    """A line for the person at the terminal, printed as it is (no markup, no highlighting)."""
    out.print(line, highlight=False, markup=False)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


@contextmanager
def progress_bars(disable: bool = False) -> Iterator[Callable[[str, int, int], None]]:
    """A `progress(stage, done, total)` callback drawing one bar per stage on stderr."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, disable=disable) as bars:
        tasks: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bars.add_task(stage, total=total)
            bars.update(tasks[stage], completed=done, total=total)

        yield progress
