"""The read commands of `lakegraph`: each shape as text (default) or `--json`, and `serve`."""

from __future__ import annotations

import json
from collections.abc import Callable

import click

from shapes.service import Answer, Shapes
from worker.cli_support import Context, emit_json, out, pass_context
from worker.errors import LakegraphError
from worker.graph.connection import connect

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def answer(ctx: Context, as_json: bool, call: Callable[[Shapes], Answer]) -> None:
    driver, where = connect(ctx.settings)
    with driver:
        result = call(Shapes(ctx.settings, driver, where.database))
    if as_json:
        emit_json(result.data())
    else:
        out.print(result.text(), highlight=False, markup=False)


@click.command("outline")
@click.argument("uri", required=False)
@click.option("--depth", default=1, show_default=True, help="Levels below the URI to show.")
@json_option
@pass_context
def outline_command(ctx: Context, uri: str | None, depth: int, as_json: bool) -> None:
    """Table of contents from the libraries, or from any URI, with each node's links."""
    answer(ctx, as_json, lambda shapes: shapes.outline(uri, depth))


@click.command("search")
@click.argument("query")
@click.option("--under", help="Only hits at or below this URI.")
@click.option("--expand", multiple=True, help="An expansion term OR-ed in (repeatable): --expand 'rough idle'.")
@click.option("-k", "k", default=10, show_default=True, help="Hits to return.")
@json_option
@pass_context
def search_command(ctx: Context, query: str, under: str | None, expand: tuple[str, ...], k: int, as_json: bool) -> None:
    """Full-text search over documents and sections, scoped to a URI subtree."""
    answer(ctx, as_json, lambda shapes: shapes.search(query, under, k, list(expand)))


@click.command("coverage")
@click.argument("terms", nargs=-1, required=True)
@click.option("--under", help="Only count mentions at or below this URI.")
@json_option
@pass_context
def coverage_command(ctx: Context, terms: tuple[str, ...], under: str | None, as_json: bool) -> None:
    """Which identifiers (fault codes, part numbers) no document or section mentions, and where the others are."""
    answer(ctx, as_json, lambda shapes: shapes.coverage(list(terms), under))


@click.command("tables")
@click.argument("question")
@click.option("-k", "k", default=5, show_default=True, help="Tables to return.")
@json_option
@pass_context
def tables_command(ctx: Context, question: str, k: int, as_json: bool) -> None:
    """Table context: the tables that answer a question, with columns, keys, joins and terms."""
    answer(ctx, as_json, lambda shapes: shapes.tables(question, k))


@click.command("join-path")
@click.argument("table_a")
@click.argument("table_b")
@click.option("--max-hops", default=3, show_default=True, help="Longest chain of joins to consider.")
@json_option
@pass_context
def join_path_command(ctx: Context, table_a: str, table_b: str, max_hops: int, as_json: bool) -> None:
    """The real join path between two tables (declared keys first), with the ON clauses to write."""
    answer(ctx, as_json, lambda shapes: shapes.join_path(table_a, table_b, max_hops))


@click.command("schema")
@json_option
@pass_context
def schema_command(ctx: Context, as_json: bool) -> None:
    """The graph's labels, relationship types, properties and indexes."""
    answer(ctx, as_json, lambda shapes: shapes.schema())


@click.command("cypher")
@click.argument("query")
@click.option("--params", default="{}", help="Query parameters as a JSON object.")
@json_option
@pass_context
def cypher_command(ctx: Context, query: str, params: str, as_json: bool) -> None:
    """Read-only Cypher, in a read transaction with a time limit and a row cap."""
    try:
        parameters = json.loads(params)
    except ValueError as error:
        raise LakegraphError(f"--params is not JSON: {error}") from None
    if not isinstance(parameters, dict):
        raise LakegraphError("--params must be a JSON object")
    answer(ctx, as_json, lambda shapes: shapes.cypher(query, parameters))


@click.command("sql")
@click.argument("query")
@json_option
@pass_context
def sql_command(ctx: Context, query: str, as_json: bool) -> None:
    """Read-only warehouse SQL within a row, time and (BigQuery) byte budget."""
    answer(ctx, as_json, lambda shapes: shapes.run_sql(query))


@click.command("themes")
@click.option("--level", default=0, show_default=True, help="Zoom: 0 is the coarsest level, higher is finer.")
@click.option("--theme", help="One theme with its members, a page at a time (its level is the theme's own).")
@click.option("--cursor", help="Continue where the answer stopped (it gives the cursor): the themes, or with --theme its members.")
@click.option("--limit", default=200, show_default=True, help="With --theme: members per page.")
@click.option("--refresh", is_flag=True, help="Run themes now (the worker's own code path) before answering.")
@click.option("--gamma", type=float, help="With --refresh: Leiden's resolution (default themes.gamma).")
@click.option("--rebuild", is_flag=True, help="With --refresh: Leiden from scratch instead of updating the themes (ids kept by overlap).")
@click.option("--watch", is_flag=True, help="Print again whenever a themes run changes them (Ctrl-C stops).")
@json_option
@pass_context
def themes_command(
    ctx: Context, level: int, theme: str | None, cursor: str | None, limit: int, refresh: bool, gamma: float | None,
    rebuild: bool, watch: bool, as_json: bool,
) -> None:
    """Themes: communities of documents that cite each other, with stable ids."""
    import time

    from worker.themes.runner import ThemeRunner
    from worker.themes.schedule import exclusive_run

    if (gamma is not None or rebuild) and not refresh:
        raise LakegraphError("--gamma and --rebuild apply to a run: add --refresh")
    driver, where = connect(ctx.settings)
    with driver:
        shapes = Shapes(ctx.settings, driver, where.database)
        if refresh:
            with exclusive_run(ctx.settings):
                report = ThemeRunner(ctx.settings, driver, where.database).run(force=True, gamma=gamma, rebuild=rebuild)
            if not as_json:  # with --json the one JSON answer names the run
                out.print(f"themes run {report.run_id}: {report.mode}, {report.engine}, {report.seconds:.2f} s", highlight=False, markup=False)
        shown = None
        while True:
            result = shapes.themes(level, theme, cursor, limit)
            run = result.result.run["id"] if result.result.run else None
            if run != shown:
                if as_json:
                    emit_json(result.data())
                else:
                    out.print(result.text(), highlight=False, markup=False)
                shown = run
            if not watch:
                return
            time.sleep(2)


@click.command("theme-changes")
@click.option("--since", default="1970-01-01", show_default=True, help="ISO date or time: runs from then on.")
@json_option
@pass_context
def theme_changes_command(ctx: Context, since: str, as_json: bool) -> None:
    """The change log of themes runs: born, dissolved, split, merged, grew, shrank, moved documents."""
    answer(ctx, as_json, lambda shapes: shapes.theme_changes(since))


@click.command("freshness")
@json_option
@pass_context
def freshness_command(ctx: Context, as_json: bool) -> None:
    """When the graph last applied a change from each source, and what is still queued."""
    answer(ctx, as_json, lambda shapes: shapes.freshness())


@click.command("serve")
@click.option("--mcp", "mcp_transport", type=click.Choice(["stdio", "http"]), help="Serve MCP over stdio or streamable HTTP (/mcp).")
@click.option("--http", "api", is_flag=True, help="Serve the HTTP JSON API (/v1/..., /openapi.json, /healthz, /metrics).")
@click.option("--host", help="Address to bind (default serve.host, loopback).")
@click.option("--port", type=int, help="Port (default serve.port; 0 picks a free one).")
@pass_context
def serve_command(ctx: Context, mcp_transport: str | None, api: bool, host: str | None, port: int | None) -> None:
    """Serve the shapes to agents: MCP (stdio or HTTP) and the HTTP API, with a bearer token."""
    import logging
    import sys

    import anyio

    from shapes.mcp_server import LakegraphMCP
    from shapes.serve import http_app, listen, run_http, token_file

    if not mcp_transport and not api:
        raise LakegraphError("say what to serve: --mcp stdio, --mcp http, --http, or --mcp http --http")
    if mcp_transport == "stdio" and api:
        raise LakegraphError("--mcp stdio talks over this process's stdin/stdout; serve --http from another process")
    settings = ctx.settings
    if host or port is not None:
        settings = settings.with_section("serve", **{key: value for key, value in (("host", host), ("port", port)) if value is not None})
    logging.basicConfig(stream=sys.stderr, level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    driver, where = connect(settings)
    with driver:
        shapes = Shapes(settings, driver, where.database)
        mcp = LakegraphMCP(shapes) if mcp_transport else None
        if mcp is not None:
            mcp.sync_tools()
        if mcp_transport == "stdio":
            assert mcp is not None
            anyio.run(mcp.run_stdio, settings.serve.tools_refresh_interval)
            return
        service = http_app(settings, shapes, mcp, api)
        sock = listen(settings.serve.host, settings.serve.port)
        bound_host, bound_port = sock.getsockname()[:2]
        base = f"http://{bound_host}:{bound_port}"
        if mcp is not None:
            out.print(f"MCP       {base}/mcp  (tools: {', '.join(sorted(mcp.offered))})", highlight=False, markup=False)
        if api:
            out.print(f"HTTP API  {base}/v1/...  (OpenAPI: {base}/openapi.json, {base}/healthz, {base}/metrics)", highlight=False, markup=False)
            out.print(f"themes    {base}/themes?token=<token>  (the page authors watch)", highlight=False, markup=False)
        token_source = "serve.token" if settings.serve.token.get_secret_value() else str(token_file(settings))
        out.print(f"token     Authorization: Bearer <the token in {token_source}>", highlight=False, markup=False)
        sys.stdout.flush()
        run_http(service, sock)


COMMANDS = (
    outline_command, search_command, coverage_command, tables_command, join_path_command,
    schema_command, cypher_command, sql_command, freshness_command, serve_command, themes_command, theme_changes_command,
)
