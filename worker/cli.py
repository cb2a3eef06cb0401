"""The `lakegraph` command line. Expected failures print one line and exit 1; no tracebacks."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from worker import doctor as doctor_module
from worker.errors import LakegraphError
from worker.graph import schema
from worker.graph.connection import connect
from worker.runtime import neo4j_server
from worker.settings import Settings, load_settings

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

# Commands of the design that later issues build; they say so instead of pretending to work.
PLANNED: dict[str, tuple[int, str]] = {
    "demo": (7, "make the demo dataset if absent, then `up` on it"),
    "load": (3, "one-shot load of document roots or the warehouse"),
    "links": (3, "list cross-references, --broken for unresolved ones"),
    "outline": (5, "table of contents from the library or any URI"),
    "search": (5, "scoped full-text search over documents and sections"),
    "themes": (6, "Leiden themes of the link graph"),
    "theme-changes": (6, "the change log of theme runs"),
    "tables": (5, "table context by hybrid retrieval"),
    "join-path": (5, "the real join path between two tables"),
    "joins": (4, "joins learned from query logs"),
    "coverage": (5, "terms no document mentions"),
    "cypher": (5, "read-only Cypher"),
    "sql": (5, "read-only, budgeted warehouse SQL"),
    "errors": (8, "parked work, listed and replayable"),
    "serve": (5, "MCP and HTTP servers"),
}


class Context:
    def __init__(self, config_file: Path | None) -> None:
        self.config_file = config_file
        self._settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config_file)
        return self._settings


pass_context = click.make_pass_decorator(Context)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_file", type=click.Path(path_type=Path), help="User settings file (TOML).")
@click.pass_context
def cli(ctx: click.Context, config_file: Path | None) -> None:
    """lakegraph: a live graph of your lakehouse's context, served to agents."""
    ctx.obj = Context(config_file)


@cli.command()
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


@cli.command()
@pass_context
def init(ctx: Context) -> None:
    """Create the graph's constraints and indexes (idempotent)."""
    driver, where = connect(ctx.settings)
    with driver:
        report = schema.apply(driver, where.database)
    for name in report.created:
        out.print(f"created  {name}")
    out.print(f"{len(report.created)} created, {len(report.existing)} already present on {where.uri}")


@cli.group()
def neo4j() -> None:
    """The local Neo4j + GDS runtime (used when neo4j.uri is not set)."""


@neo4j.command("start")
@pass_context
def neo4j_start(ctx: Context) -> None:
    """Start the local runtime in the background and wait until it answers."""
    began = time.monotonic()
    with err.status("starting Neo4j + GDS (the first start downloads them from Maven Central)"):
        running = neo4j_server.start(ctx.settings)
    out.print(f"Neo4j running at {running.uri} (pid {running.pid}), ready in {time.monotonic() - began:.1f} s")
    out.print(f"user {neo4j_server.LOCAL_USER}, password in {neo4j_server.Neo4jHome.of(ctx.settings).password_file}")


@neo4j.command("stop")
@pass_context
def neo4j_stop(ctx: Context) -> None:
    """Stop the local runtime."""
    stopped = neo4j_server.stop(ctx.settings)
    out.print("Neo4j was not running" if stopped is None else f"stopped Neo4j (pid {stopped.pid})")


@neo4j.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_context
def neo4j_status(ctx: Context, as_json: bool) -> None:
    """Whether the local runtime runs, and where."""
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


@cli.command()
@pass_context
def up(ctx: Context) -> None:
    """Run the whole stack until Ctrl-C: local engines where none is configured, the Celery worker."""
    from worker import supervisor

    began = time.monotonic()

    def ready(stack: supervisor.Stack) -> None:
        names = ", ".join(child.name for child in stack.children)
        out.print(f"[bold green]ready[/] in {time.monotonic() - began:.1f} s ({names}); Ctrl-C stops everything")
        out.print(f"logs in {stack.logs_dir}")

    supervisor.run(ctx.settings, say=lambda line: out.print(line, highlight=False), ready=ready)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_context
def doctor(ctx: Context, as_json: bool) -> None:
    """Each engine: up, down or off, with its version or the reason."""
    statuses = doctor_module.check(ctx.settings)
    if as_json:
        emit_json([status.__dict__ for status in statuses])
    else:
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("engine", "state", "detail"):
            table.add_column(column)
        colors = {"up": "green", "down": "red", "off": "dim"}
        for status in statuses:
            table.add_row(status.engine, f"[{colors[status.state]}]{status.state}[/]", status.detail)
        out.print(table)
    if any(status.state == "down" for status in statuses):
        sys.exit(1)


def _planned(name: str, issue: int, summary: str) -> click.Command:
    @click.command(name, help=f"{summary} (not built yet: issue #{issue}).", context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: tuple[str, ...]) -> None:
        raise LakegraphError(f"`lakegraph {name}` is not built yet (tracked in issue #{issue})")

    return command


for _name, (_issue, _summary) in PLANNED.items():
    cli.add_command(_planned(_name, _issue, _summary))


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except LakegraphError as error:
        err.print(f"[bold red]error:[/] {error}", highlight=False)
        sys.exit(1)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
