"""The `lakegraph` command line. Expected failures print one line and exit 1; no tracebacks."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from shapes.catalog import COMMANDS as SHAPE_COMMANDS
from shapes.serve_command import serve_command
from worker.cli_support import Context, emit_json, err, out, pass_context, progress_bars
from worker.commands.extract_joins import extract_joins_command
from worker.demo.command import demo_command
from worker.errors import EngineUnavailable, LakegraphError

if TYPE_CHECKING:
    from shapes.commands import CommandExtra
    from worker.problems import Problem
    from worker.settings import Settings

COMMAND_SOURCE = "command"  # the source of a command's failures in `lakegraph errors`
# Each command imports what it runs when it runs: `--help`, `--version` and a shape call start
# without the engines' clients (tests/unit/test_cli_start.py, tests/benchmarks/cli_start.py).


def command_extras() -> dict[str, CommandExtra]:
    """Worker-side options of generated read commands: each refreshes through the worker's own code path."""
    from worker.commands import bridge_refresh, themes_refresh

    return {"themes": themes_refresh.REFRESH, "bridge": bridge_refresh.REFRESH}


class LakegraphGroup(click.Group):
    """The read commands are listed from the generated catalog and made from their spec only when
    one is run (or its help shown), so `--version` and `--help` never import the shapes."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *SHAPE_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in SHAPE_COMMANDS and cmd_name not in self.commands:
            from shapes.commands import shape_command
            from shapes.registry import SPECS

            spec = SPECS.for_command(cmd_name)
            self.add_command(shape_command(spec, command_extras().get(spec.name)))
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """One row per command; a shape's row is its catalog purpose."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is not None and command.hidden:
                continue
            rows.append((name, SHAPE_COMMANDS[name] if command is None else command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LakegraphGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakegraph", message="%(prog)s %(version)s")
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
    from worker.graph.connection import connect
    from worker.graph.setup import apply_schema

    driver, where = connect(ctx.settings)
    with driver:
        report = apply_schema(ctx.settings, driver, where.database)
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


@cli.command()
@click.option("--serve", is_flag=True, help="Also serve MCP and the HTTP API (lakegraph serve --mcp http --http).")
@pass_context
def up(ctx: Context, serve: bool) -> None:
    """Run the whole stack until Ctrl-C: local engines where none is configured, the Celery worker."""
    from worker import supervisor

    began = time.monotonic()

    def ready(stack: supervisor.Stack) -> None:
        names = ", ".join(child.name for child in stack.children)
        out.print(f"[bold green]ready[/] in {time.monotonic() - began:.1f} s ({names}); Ctrl-C stops everything")
        out.print(f"logs in {stack.logs_dir}")

    supervisor.run(ctx.settings, say=lambda line: out.print(line, highlight=False, markup=False), ready=ready, serve=serve)


@cli.command()
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


@cli.group()
def load() -> None:
    """One-shot loads, then exit."""


@load.command("docs")
@click.argument("roots", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
def load_docs(ctx: Context, roots: tuple[str, ...], as_json: bool) -> None:
    """Load document libraries (ROOT: PATH or NAME=PATH; default: documents.libraries)."""
    from worker.components import Components
    from worker.documents.loader import load as load_documents
    from worker.graph.setup import apply_schema

    settings = with_roots(ctx.settings, roots)
    if not settings.documents.libraries:
        raise LakegraphError("no document library: pass ROOT arguments or set documents.libraries")
    with Components.open(settings) as components:
        apply_schema(settings, components.driver, components.database)
        with progress_bars(disable=as_json) as progress:
            report = load_documents(components.documents, progress)
    if as_json:
        emit_json({**report.__dict__, "sections_per_second": report.sections_per_second})
        return
    out.print(
        f"{report.documents} documents ({report.read} read, {report.parsed} parsed), {report.sections} sections parsed "
        f"in {report.seconds:.1f} s ({report.sections_per_second:,.0f} sections/s): {report.written} written, {report.unchanged} unchanged, "
        f"{report.deleted} deleted, {report.skipped} skipped, {report.warned} with warnings, {report.conflicts} conflicts; "
        f"{report.linked} links resolved, {report.unresolved} unresolved",
        highlight=False,
    )
    if report.skipped or report.warned or report.conflicts or report.unresolved:
        out.print("see `lakegraph errors` and `lakegraph links --broken`")


@cli.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
def forget(ctx: Context, names: tuple[str, ...], as_json: bool) -> None:
    """Remove whole libraries from the graph (the files are untouched); links into them become unresolved.

    Loads and reconciles never remove a library they were not given: this is the one way to."""
    from worker.documents.writer import DocumentWriter
    from worker.graph.connection import connect

    driver, where = connect(ctx.settings)
    with driver:
        writer = DocumentWriter(driver, where.database, {})
        stored = writer.library_names()
        unknown = [name for name in names if name not in stored]
        if unknown:
            raise LakegraphError(f"no library named {', '.join(unknown)} in the graph (it holds: {', '.join(stored) or 'none'})")
        removed = {name: len(writer.forget_library(name).deleted) for name in names}
    if as_json:
        emit_json({"documents_deleted": removed})
        return
    for name, count in removed.items():
        out.print(f"{name}: {count} documents removed", highlight=False, markup=False)


@load.command("warehouse")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
def load_warehouse(ctx: Context, as_json: bool) -> None:
    """Load the warehouse's metadata, the glossary, and the audit-log files in warehouse.audit_log_dir."""
    from worker.components import Components
    from worker.graph.setup import apply_schema

    with Components.open(ctx.settings) as components:
        apply_schema(ctx.settings, components.driver, components.database)
        with progress_bars(disable=as_json) as progress:
            loaded, bridged = components.load_warehouse(progress)
    reports, terms, logs = loaded.schemas, loaded.glossary, loaded.query_logs
    if as_json:
        emit_json(
            {
                "schemas": reports,
                "glossary": None if terms is None else terms.__dict__,
                "relearned": None if loaded.relearned is None else loaded.relearned.__dict__,
                "query_logs": logs,
                "bridge": bridged.__dict__,
            }
        )
        return
    for name, report in reports.items():
        out.print(
            f"{loaded.database}.{name}: {report['tables_written']} tables and {report['columns_written']} columns "
            f"written, {report['tables_deleted']} tables and {report['columns_deleted']} columns removed, {report['keys']} key columns",
            highlight=False,
            markup=False,
        )
    if loaded.relearned is not None and loaded.relearned.settled:
        relearned = loaded.relearned
        out.print(f"query logs: {relearned.settled} queries that came before their tables learned now ({relearned.runs} runs, {relearned.pairs} join pairs)")
    if terms is not None:
        out.print(f"glossary: {terms.terms} terms, {terms.tagged} tags, {len(terms.unresolved)} terms with unresolved tags")
    runs = sum(log.get("runs", 0) for log in logs)
    pairs = sum(log.get("pairs", 0) for log in logs)
    out.print(
        f"query logs: {len(logs)} files in {ctx.settings.audit_log_path}: {runs} new query runs, {pairs} join pairs updated",
        highlight=False,
        markup=False,
    )
    out.print(bridged.summary(), highlight=False, markup=False)


def with_roots(settings: Settings, roots: tuple[str, ...]) -> Settings:
    """Settings whose libraries are the given roots (NAME=PATH, or PATH named after its folder; PATH may be gs://bucket/prefix)."""
    if not roots:
        return settings
    from pydantic import ValidationError

    from worker.documents.slugs import name_slug
    from worker.settings import GCS_SCHEME

    chosen: list[dict[str, object]] = []
    for root in roots:
        name, _, path = root.rpartition("=")
        if path.startswith(GCS_SCHEME):  # a bucket library: named after its bucket or last prefix folder
            chosen.append({"name": name or name_slug(path.rstrip("/").rsplit("/", 1)[-1]), "root": path})
            continue
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise LakegraphError(f"{folder} is not a folder")
        chosen.append({"name": name or name_slug(folder.resolve().name), "root": folder})
    try:
        return settings.with_section("documents", libraries=chosen)
    except ValidationError as error:
        raise LakegraphError(f"bad ROOT: {error.errors()[0]['msg']}") from None


@cli.command()
@click.option("--replay", "replay_id", help="Run the task that repairs this problem's key again.")
@click.option("--source", help="Only problems of this source (documents, warehouse, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_context
def errors(ctx: Context, replay_id: str | None, source: str | None, as_json: bool) -> None:
    """Recorded problems: skipped inputs, warnings, failed work; --replay ID re-runs one.
    Problems held in Redis while the graph was down are listed too (marked "held")."""
    from worker import problems
    from worker.graph.connection import connect

    held = [problem for problem in _held_problems(ctx.settings) if source is None or problem.source == source]
    try:
        driver, where = connect(ctx.settings)
    except EngineUnavailable:
        if replay_id or as_json or not held:
            raise
        _print_problems(held, [])
        raise
    with driver:
        if replay_id:
            problem = problems.get(driver, where.database, replay_id) or next((p for p in held if p.id == replay_id), None)
            if problem is None:
                raise LakegraphError(f"no recorded problem {replay_id!r}; `lakegraph errors` lists them")
            from worker.replay import replay

            replay(ctx.settings, problem, say)
            return
        found = problems.listing(driver, where.database, source)
    if as_json:
        emit_json([{**problem.__dict__, "held": True} for problem in held] + [{**problem.__dict__, "held": False} for problem in found])
        return
    _print_problems(held, found)


def say(line: str) -> None:
    """A line for the person at the terminal, printed as it is (no markup, no highlighting)."""
    out.print(line, highlight=False, markup=False)


def _print_problems(held: list[Problem], found: list[Problem]) -> None:
    out.print(f"{len(held) + len(found)} recorded problem(s)" + (f", {len(held)} held in Redis until the worker moves them to the graph" if held else ""))
    for problem, mark in [*((problem, " (held)") for problem in held), *((problem, "") for problem in found)]:
        out.print(
            f"{problem.id}  {problem.kind:<8} {problem.source}  {problem.key}{mark}\n"
            f"    {problem.reason} (seen {problem.occurrences}x, last {problem.last_seen})",
            highlight=False,
            markup=False,
        )


def _held_problems(settings: Settings) -> list[Problem]:
    """Problems held in Redis (the graph was down when they happened); none if Redis is unreachable."""
    from redis.exceptions import RedisError

    from worker import problems
    from worker.runtime import redis_server

    try:
        return problems.held(redis_server.broker_client(settings, timeout=2))
    except (RedisError, LakegraphError):
        return []


@cli.command()
@pass_context
def watch(ctx: Context) -> None:
    """Watch the document libraries and the audit-log folder; enqueue a task per changed path (run by `up`)."""
    from worker.watch import run

    run(ctx.settings, say)


@cli.command()
@pass_context
def subscribe(ctx: Context) -> None:
    """Stream audit-log entries and bucket notifications from Pub/Sub into tasks (run by `up` when configured)."""
    from worker.subscribe import run

    run(ctx.settings, say)


for _command in (serve_command, demo_command, extract_joins_command):
    cli.add_command(_command)


def main() -> None:
    # The driver's notices (a transaction retried) are not the terminal's: a command's outcome is
    # its answer or its one error line. Processes that log (`up`, the worker) give the logs a home.
    logging.getLogger("neo4j").addHandler(logging.NullHandler())
    try:
        cli.main(standalone_mode=False)
    except LakegraphError as error:
        err.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False)
        sys.exit(1)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as error:
        from worker.graph.engine_errors import explain

        line = explain(error)
        if line is None:
            raise
        _record_failure(line)
        err.print(f"[bold red]error:[/] {escape(line)}", highlight=False)
        sys.exit(1)


def _record_failure(line: str) -> None:
    """An engine's refusal the command met, recorded for `lakegraph errors` (the command is the key;
    nothing replays a command: its line says what to change first)."""
    from worker import problems

    if Context.last is not None and Context.last.loaded:
        problems.park_from_command(Context.last.settings, COMMAND_SOURCE, " ".join(sys.argv[1:])[:200], line)


if __name__ == "__main__":
    main()
