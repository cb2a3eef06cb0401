"""The live stack's commands: `up` (everything, supervised), and the sources it runs as processes of
their own, `watch` and `subscribe`."""

from __future__ import annotations

import time

import click

from worker.cli_support import Context, out, pass_context, say


@click.command()
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


@click.command()
@pass_context
def watch(ctx: Context) -> None:
    """Watch the document libraries and the audit-log folder; enqueue a task per changed path (run by `up`)."""
    from worker.watch import run

    run(ctx.settings, say)


@click.command()
@pass_context
def subscribe(ctx: Context) -> None:
    """Stream audit-log entries and bucket notifications from Pub/Sub into tasks (run by `up` when configured)."""
    from worker.subscribe import run

    run(ctx.settings, say)
