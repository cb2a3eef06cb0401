"""The engines' commands: `init` (the graph's constraints and indexes), the local Neo4j runtime
(`neo4j start|stop|status`), `doctor`, and `config` (the effective settings)."""

from __future__ import annotations

import json
import sys
import time

import click
from rich.markup import escape

from worker.cli_support import Context, emit_json, err, out, pass_context


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_context
def config(ctx: Context, as_json: bool) -> None:
    """Print the effective settings, secrets masked."""
    data = ctx.settings.masked()
    if as_json:
        emit_json(data)
        return
    source = ctx.settings.user_file or "none"
    out.print(f"[dim]# defaults: config/lakegraph.toml; user file: {source}; then LAKEGRAPH_* variables[/]")
    for key, value in data.items():
        if not isinstance(value, dict):
            out.print(f"{key} = {json.dumps(value)}", highlight=False)
    for section, values in data.items():
        if isinstance(values, dict):
            out.print(f"\n[{section}]", markup=False, style="bold")
            for key, value in values.items():
                out.print(f"{key} = {json.dumps(value)}", highlight=False)


@click.command()
@pass_context
def init(ctx: Context) -> None:
    """Create the graph's constraints and indexes (idempotent)."""
    from worker.graph.connection import connect
    from worker.graph.setup import apply_schema

    driver, where = connect(ctx.settings)
    with driver:
        report = apply_schema(ctx.settings, driver, where.database)
    for name in report.created:
        out.print(f"created  {name}")
    out.print(f"{len(report.created)} created, {len(report.existing)} already present on {where.uri}")


@click.group()
def neo4j() -> None:
    """The local Neo4j + GDS runtime (used when neo4j.uri is not set)."""


@neo4j.command("start")
@pass_context
def neo4j_start(ctx: Context) -> None:
    """Start the local runtime in the background and wait until it answers."""
    from worker.runtime import neo4j_server

    began = time.monotonic()
    with err.status("starting Neo4j + GDS (the first start downloads them from Maven Central)"):
        running = neo4j_server.start(ctx.settings)
    out.print(f"Neo4j running at {running.uri} (pid {running.pid}), ready in {time.monotonic() - began:.1f} s")
    out.print(f"user {neo4j_server.LOCAL_USER}, password in {neo4j_server.Neo4jHome.of(ctx.settings).password_file}")


@neo4j.command("stop")
@pass_context
def neo4j_stop(ctx: Context) -> None:
    """Stop the local runtime."""
    from worker.runtime import neo4j_server

    stopped = neo4j_server.stop(ctx.settings)
    out.print("Neo4j was not running" if stopped is None else f"stopped Neo4j (pid {stopped.pid})")


@neo4j.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_context
def neo4j_status(ctx: Context, as_json: bool) -> None:
    """Whether the local runtime runs, and where."""
    from worker.runtime import neo4j_server

    running = neo4j_server.status(ctx.settings)
    home = neo4j_server.Neo4jHome.of(ctx.settings)
    if as_json:
        emit_json(None if running is None else {"pid": running.pid, "uri": running.uri, "home": str(home.root)})
    elif running is None:
        out.print(f"Neo4j is not running ({home.root})")
    else:
        out.print(f"Neo4j running at {running.uri} (pid {running.pid}), data in {home.data_dir}")
    if running is None:
        sys.exit(3)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_context
def doctor(ctx: Context, as_json: bool) -> None:
    """Each engine: up, down or off, with its version or the reason."""
    from rich.table import Table

    from worker import doctor as doctor_module

    statuses = doctor_module.check(ctx.settings)
    if as_json:
        emit_json([status.__dict__ for status in statuses])
    else:
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("engine", "state", "detail"):
            table.add_column(column)
        colors = {"up": "green", "down": "red", "off": "dim"}
        for status in statuses:
            table.add_row(status.engine, f"[{colors[status.state]}]{status.state}[/]", escape(status.detail))
        out.print(table)
    if any(status.state == "down" for status in statuses):
        sys.exit(1)
