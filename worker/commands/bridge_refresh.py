"""`lakegraph bridge --refresh`: the values and their mentions brought up to date through the
worker's own code path before the bridge shape answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from worker.cli_support import out
from worker.commands.shapes import CommandExtra
from worker.exceptions import LakegraphError

if TYPE_CHECKING:
    from neo4j import Driver

    from worker.settings import Settings


def refresh_first(settings: Settings, driver: Driver, database: str, as_json: bool, refresh: bool, rebuild: bool) -> None:
    from worker.bridge.refresh import BridgeRefresh

    if rebuild and not refresh:
        raise LakegraphError("--rebuild applies to a refresh: add --refresh")
    if not refresh:
        return
    report = BridgeRefresh(settings, driver, database).refresh(rebuild=rebuild)
    if not as_json:  # with --json the one JSON answer is the shape's
        out.print(report.summary(), highlight=False, markup=False)


REFRESH = CommandExtra(
    options=(
        click.Option(["--refresh"], is_flag=True, help="Read the identifier columns' values and write new values' mentions before answering."),
        click.Option(["--rebuild"], is_flag=True, help="With --refresh: compute every value's mentions again, not only new values'."),
    ),
    before=refresh_first,
)
