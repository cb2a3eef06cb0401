"""`lakegraph themes --refresh`: a themes run through the worker's own code path (the runner, under
the same exclusive lock as the scheduled runs) before the themes shape answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from worker.cli_support import out
from worker.commands.shapes import CommandExtra
from worker.exceptions import LakegraphError
from worker.task_names import CHECK_THEMES

if TYPE_CHECKING:
    from neo4j import Driver

    from worker.settings import Settings


def refresh_first(settings: Settings, driver: Driver, database: str, as_json: bool, refresh: bool, gamma: float | None, rebuild: bool) -> None:
    from worker import problems
    from worker.runtime import redis_server
    from worker.themes import failures
    from worker.themes.runner import ThemeRunner
    from worker.themes.schedule import exclusive_run

    if (gamma is not None or rebuild) and not refresh:
        raise LakegraphError("--gamma and --rebuild apply to a run: add --refresh")
    if not refresh:
        return
    try:
        with exclusive_run(settings):  # a failure leaves the themes dirty: a running worker retries them
            report = ThemeRunner(settings, driver, database).run(force=True, gamma=gamma, rebuild=rebuild)
    except Exception as error:
        reason = failures.reason(error)
        if reason is None:
            raise
        problems.park_from_command(settings, failures.SOURCE, failures.KEY, reason, CHECK_THEMES)
        raise LakegraphError(reason) from None
    failures.cleared(driver, database, lambda: redis_server.broker_client(settings, timeout=2))
    if not as_json:  # with --json the one JSON answer names the run
        out.print(f"themes run {report.run_id}: {report.mode}, {report.engine}, {report.seconds:.2f} s", highlight=False, markup=False)


REFRESH = CommandExtra(
    options=(
        click.Option(["--refresh"], is_flag=True, help="Run themes now (the worker's own code path) before answering."),
        click.Option(["--gamma"], type=float, help="With --refresh: Leiden's resolution (default themes.gamma)."),
        click.Option(["--rebuild"], is_flag=True, help="With --refresh: Leiden from scratch instead of updating the themes (ids kept by overlap)."),
    ),
    before=refresh_first,
)
