"""`lakegraph serve`: MCP over stdio or streamable HTTP, and the HTTP JSON API, on one port.

HTTP binds to `serve.host` (loopback by default) and demands a bearer token (shapes/serving/guard.py):
in the local mode `serve.token`, or one generated on first start and kept in the state folder
(mode 0600) for clients to read; in oidc mode an access token from the configured issuer.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount

from shapes.serving import running_server
from shapes.serving.audit import Audit
from shapes.serving.change_feed import ChangeFeed
from shapes.serving.guard import METADATA_PATH, Guard, metadata_routes
from shapes.serving.http_api import routes
from shapes.serving.identity import token_check
from shapes.serving.mcp_server import LakegraphMCP
from shapes.serving.service import Shapes
from shapes.serving.themes_page import routes as page_routes
from worker.settings import Settings

if TYPE_CHECKING:
    from starlette.types import ASGIApp


def bearer_token(settings: Settings) -> str:
    """The configured token, else the stored one, else a new one stored 0600."""
    found = running_server.stored_token(settings)
    if found is not None:
        return found
    path = running_server.token_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(token + "\n")
    return token


@dataclass(frozen=True)
class HttpService:
    app: ASGIApp
    mcp: bool
    api: bool
    resource: str  # this server's public URL: what its tokens must be issued for


def http_app(settings: Settings, shapes: Shapes, feed: ChangeFeed, mcp: LakegraphMCP | None, api: bool, address: tuple[str, int]) -> HttpService:
    """The app for the socket bound at `address`. While it serves the API, the address is
    published for read commands with the same settings (shapes/serving/running_server.py). The
    change feed runs while it serves: MCP subscribers and the themes page hear of changes there."""
    resource = resource_url(settings, address)
    served: list[BaseRoute] = (
        [*routes(shapes), *page_routes(shapes, feed)] if api else [route for route in routes(shapes) if getattr(route, "path", "") == "/healthz"]
    )
    served += metadata_routes(settings, resource)
    mcp_app = mcp.server.streamable_http_app(streamable_http_path="/mcp", host=settings.serve.host) if mcp else None
    if mcp_app is not None:
        served.append(Mount("/", app=mcp_app))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if api:
            running_server.publish(settings, *address)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(feed.run)
                if mcp is None or mcp_app is None:
                    yield
                else:
                    async with mcp_app.router.lifespan_context(mcp_app):
                        tasks.start_soon(mcp.keep_current)
                        yield
                tasks.cancel_scope.cancel()
        finally:
            if api:  # uvicorn's shutdown on SIGTERM/SIGINT runs this before the signal ends the process
                running_server.withdraw(settings)

    app = Starlette(routes=served, lifespan=lifespan)
    shapes.audit = Audit.of(settings)
    check = token_check(settings, bearer_token(settings) if settings.auth.mode == "token" else "", resource)
    metadata_url = resource.rstrip("/") + METADATA_PATH if settings.auth.mode == "oidc" else None
    return HttpService(Guard(app, check, shapes.audit, metadata_url), mcp is not None, api, resource)


def resource_url(settings: Settings, address: tuple[str, int]) -> str:
    """This server's public URL: `auth.resource_url`, else the address it is served at."""
    host, port = address
    return settings.auth.resource_url or f"http://{f'[{host}]' if ':' in host else host}:{port}"


def listen(host: str, port: int) -> socket.socket:
    """Bound and listening here, so port 0 can be reported and a client that connects as soon as the
    address is printed waits in the backlog rather than being refused. IPPROTO_TCP explicitly:
    asyncio turns Nagle off only for sockets that say so, and with Nagle on every keep-alive
    response waits ~40 ms for an ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(socket.SOMAXCONN)
    return sock


def run_http(service: HttpService, sock: socket.socket) -> None:
    server = uvicorn.Server(uvicorn.Config(service.app, log_level="warning", lifespan="on"))
    server.run(sockets=[sock])
