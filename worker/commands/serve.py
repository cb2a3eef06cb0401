"""`lakegraph serve`: the shapes over MCP and HTTP. Apart from the read commands so the command
line can offer it without importing the shape specs."""

from __future__ import annotations

import click

from worker.cli_support import Context, out, pass_context
from worker.exceptions import LakegraphError


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

    from shapes.access import scope
    from shapes.serving import running_server
    from shapes.serving.change_feed import ChangeFeed, stream_client
    from shapes.serving.mcp_server import LakegraphMCP
    from shapes.serving.serve import http_app, listen, run_http
    from shapes.serving.service import Shapes
    from worker.graph.connection import connect

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
        if settings.auth.mode == "oidc":
            scope.check_grants(settings, driver, where.database)
        shapes = Shapes(settings, driver, where.database)
        feed = ChangeFeed(shapes, stream_client(settings), settings.serve.notify_interval)
        mcp = LakegraphMCP(shapes, feed, local=mcp_transport == "stdio") if mcp_transport else None
        if mcp is not None:
            mcp.sync_tools()
        if mcp_transport == "stdio":
            assert mcp is not None
            anyio.run(mcp.run_stdio)
            return
        sock = listen(settings.serve.host, settings.serve.port)
        bound_host, bound_port = sock.getsockname()[:2]
        service = http_app(settings, shapes, feed, mcp, api, (bound_host, bound_port))
        base = f"http://{bound_host}:{bound_port}"
        if mcp is not None:
            out.print(f"MCP       {base}/mcp  (tools: {', '.join(sorted(mcp.offered))})", highlight=False, markup=False)
        if api:
            out.print(f"HTTP API  {base}/v1/...  (OpenAPI: {base}/openapi.json, {base}/healthz, {base}/metrics)", highlight=False, markup=False)
            out.print(f"themes    {base}/themes?token=<token>  (the page authors watch)", highlight=False, markup=False)
        if settings.auth.mode == "oidc":
            out.print(f"auth      OAuth access tokens from {settings.auth.issuer}, for {service.resource}", highlight=False, markup=False)
        else:
            token_source = "serve.token" if settings.serve.token.get_secret_value() else str(running_server.token_file(settings))
            out.print(f"token     Authorization: Bearer <the token in {token_source}>", highlight=False, markup=False)
        sys.stdout.flush()
        run_http(service, sock)
