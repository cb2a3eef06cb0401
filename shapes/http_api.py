"""The HTTP JSON API on the same shape functions, with an OpenAPI document, /healthz and /metrics.

Every route but /healthz and /openapi.json needs `Authorization: Bearer <token>`. Shapes answer
JSON by default and text with `format=text`; a shape's refusal is a 400 with `{"error": ...}`,
an unreachable engine a 503, never a stack trace.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from neo4j.exceptions import DriverError, Neo4jError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from shapes.errors import ShapeError
from shapes.metrics import REGISTRY
from shapes.service import Answer, Shapes
from worker.errors import LakegraphError

log = logging.getLogger(__name__)
GRAPH_DOWN = (Neo4jError, DriverError, OSError)
OPEN_PATHS = frozenset({"/healthz", "/openapi.json"})
PAGE_PATH = "/themes"
COOKIE = "lakegraph_token"
MAX_BODY = 1_000_000


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # integer, string, array (of strings), object
    description: str
    required: bool = False


@dataclass(frozen=True)
class Endpoint:
    path: str
    method: str
    summary: str
    params: tuple[Param, ...]
    call: Callable[[Shapes, dict[str, Any]], Answer]


FORMAT = Param("format", "string", "json (default) or text")
ENDPOINTS = (
    Endpoint("/v1/outline", "GET", "Table of contents from the libraries or any URI", (
        Param("uri", "string", "Start here; omit for the libraries"), Param("depth", "integer", "Levels below (default 1)"), FORMAT),
        lambda shapes, a: shapes.outline(a.get("uri"), a.get("depth", 1))),
    Endpoint("/v1/search", "GET", "Full-text search over documents and sections", (
        Param("q", "string", "Words to find", True), Param("under", "string", "Only hits at or below this URI"),
        Param("k", "integer", "Hits (default 10)"), Param("expand", "array", "Expansion terms, OR-ed in (repeatable)"), FORMAT),
        lambda shapes, a: shapes.search(a["q"], a.get("under"), a.get("k", 10), a.get("expand", []))),
    Endpoint("/v1/coverage", "GET", "Identifiers no document mentions, and where the others are", (
        Param("term", "array", "An identifier (repeatable)", True), Param("under", "string", "Scope URI"), FORMAT),
        lambda shapes, a: shapes.coverage(a["term"], a.get("under"))),
    Endpoint("/v1/tables", "GET", "Table context: tables for a question, with columns, keys, joins and terms", (
        Param("q", "string", "The question", True), Param("k", "integer", "Tables (default 5)"), FORMAT),
        lambda shapes, a: shapes.tables(a["q"], a.get("k", 5))),
    Endpoint("/v1/join-path", "GET", "The join path between two tables, with ON clauses and evidence", (
        Param("a", "string", "From table", True), Param("b", "string", "To table", True),
        Param("max_hops", "integer", "Longest chain (default 3)"), FORMAT),
        lambda shapes, a: shapes.join_path(a["a"], a["b"], a.get("max_hops", 3))),
    Endpoint("/v1/schema", "GET", "Labels, relationship types, properties and indexes", (FORMAT,),
        lambda shapes, a: shapes.schema()),
    Endpoint("/v1/cypher", "POST", "Read-only Cypher (time-limited, row-capped)", (
        Param("query", "string", "One read-only Cypher query", True), Param("parameters", "object", "Query parameters"), FORMAT),
        lambda shapes, a: shapes.cypher(a["query"], a.get("parameters") or {})),
    Endpoint("/v1/sql", "POST", "Read-only warehouse SQL within a row, time and byte budget", (
        Param("sql", "string", "One read-only query", True), FORMAT),
        lambda shapes, a: shapes.run_sql(a["sql"])),
    Endpoint("/v1/themes", "GET", "Themes of the document link graph (Leiden), with stable ids", (
        Param("level", "integer", "Zoom level (0 coarsest)"), Param("theme", "string", "One theme: its summary and members"),
        Param("cursor", "string", "Continue where the answer stopped: the themes, or with theme its members"),
        Param("limit", "integer", "With theme: members per page (default 200)"), FORMAT),
        lambda shapes, a: shapes.themes(a.get("level", 0), a.get("theme"), a.get("cursor"), a.get("limit", 200))),
    Endpoint("/v1/theme-changes", "GET", "The change log of themes runs", (
        Param("since", "string", "ISO date or time"), FORMAT),
        lambda shapes, a: shapes.theme_changes(a.get("since", "1970-01-01"))),
    Endpoint("/v1/freshness", "GET", "When the graph last applied a change from each source", (FORMAT,),
        lambda shapes, a: shapes.freshness()),
)


def _coerce(endpoint: Endpoint, raw: dict[str, Any]) -> dict[str, Any]:
    known = {param.name: param for param in endpoint.params}
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ShapeError(f"unknown parameter(s) {', '.join(unknown)}; {endpoint.path} takes {', '.join(known) or 'none'}")
    args: dict[str, Any] = {}
    for name, value in raw.items():
        param = known[name]
        if param.type == "integer":
            try:
                args[name] = int(value[-1] if isinstance(value, list) else value)
            except (TypeError, ValueError):
                raise ShapeError(f"{name} must be an integer, got {value!r}") from None
        elif param.type == "array":
            values = value if isinstance(value, list) else [value]
            if not all(isinstance(item, str) for item in values):
                raise ShapeError(f"{name} must be strings")
            args[name] = values
        elif param.type == "object":
            if not isinstance(value, dict):
                raise ShapeError(f"{name} must be a JSON object")
            args[name] = value
        else:
            text = value[-1] if isinstance(value, list) else value
            if not isinstance(text, str):
                raise ShapeError(f"{name} must be a string")
            args[name] = text
    missing = [param.name for param in endpoint.params if param.required and param.name not in args]
    if missing:
        raise ShapeError(f"missing required parameter(s): {', '.join(missing)}")
    return args


def _handler(shapes: Shapes, endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        try:
            if endpoint.method == "POST":
                body = await request.body()
                if len(body) > MAX_BODY:
                    raise ShapeError(f"request body over {MAX_BODY} bytes")
                try:
                    raw = json.loads(body or b"{}")
                except ValueError:
                    raise ShapeError("the body must be a JSON object") from None
                if not isinstance(raw, dict):
                    raise ShapeError("the body must be a JSON object")
            else:
                raw = {key: request.query_params.getlist(key) for key in request.query_params}
            output = raw.pop("format", "json")
            output = output[-1] if isinstance(output, list) else output
            if output not in ("json", "text"):
                raise ShapeError("format must be json or text")
            args = _coerce(endpoint, raw)
            answer = await anyio.to_thread.run_sync(lambda: endpoint.call(shapes, args))
        except ShapeError as refused:
            return JSONResponse({"error": str(refused)}, status_code=400)
        except LakegraphError as failed:
            return JSONResponse({"error": f"unavailable: {failed}"}, status_code=503)
        if output == "text":
            return PlainTextResponse(answer.text())
        return Response(json.dumps(answer.data(), default=str), media_type="application/json")

    return handle


def openapi() -> dict:
    paths: dict[str, dict] = {}
    for endpoint in ENDPOINTS:
        operation: dict[str, Any] = {"summary": endpoint.summary, "security": [{"bearer": []}], "responses": {
            "200": {"description": "The shape's answer (JSON, or text with format=text), with its freshness"},
            "400": {"description": "Refused or bad input: {\"error\": \"...\"}"},
            "401": {"description": "Missing or wrong bearer token"},
            "503": {"description": "An engine is unreachable"},
        }}
        if endpoint.method == "GET":
            operation["parameters"] = [
                {"name": param.name, "in": "query", "required": param.required, "description": param.description,
                 "schema": {"type": "array", "items": {"type": "string"}} if param.type == "array" else {"type": param.type}}
                for param in endpoint.params
            ]
        else:
            operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": {
                "type": "object",
                "required": [param.name for param in endpoint.params if param.required],
                "properties": {param.name: {"type": param.type, "description": param.description} for param in endpoint.params},
            }}}}
        paths[endpoint.path] = {endpoint.method.lower(): operation}
    paths["/healthz"] = {"get": {"summary": "Liveness and the graph's reachability", "responses": {"200": {"description": "ok"}, "503": {"description": "graph down"}}}}
    paths["/metrics"] = {"get": {"summary": "Prometheus metrics", "security": [{"bearer": []}], "responses": {"200": {"description": "text exposition format"}}}}
    paths["/v1/tools"] = {"get": {"summary": "The shapes that can answer now", "security": [{"bearer": []}], "responses": {"200": {"description": "names"}}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "lakegraph", "version": "1", "description": "Shapes of a live lakehouse context graph."},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    }


def routes(shapes: Shapes) -> list[Route]:
    async def healthz(request: Request) -> Response:
        try:
            await anyio.to_thread.run_sync(shapes.driver.verify_connectivity)
        except GRAPH_DOWN as failed:
            return JSONResponse({"status": "unavailable", "neo4j": str(failed).splitlines()[0][:200]}, status_code=503)
        return JSONResponse({"status": "ok"})

    async def metrics(request: Request) -> Response:
        try:
            await anyio.to_thread.run_sync(shapes.refresh_gauges)
        except GRAPH_DOWN:  # with the graph down, /metrics still serves the counters
            log.warning("gauges not refreshed: the graph is unreachable")
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    async def tools(request: Request) -> Response:
        return JSONResponse({"available": sorted(await anyio.to_thread.run_sync(shapes.available))})

    async def spec(request: Request) -> Response:
        return JSONResponse(openapi())

    found = [Route(endpoint.path, _handler(shapes, endpoint), methods=[endpoint.method]) for endpoint in ENDPOINTS]
    return found + [Route("/healthz", healthz), Route("/metrics", metrics), Route("/v1/tools", tools), Route("/openapi.json", spec)]


class BearerToken:
    """ASGI middleware: every HTTP request but the open paths must carry the token — as a bearer
    header (agents, scripts), or as the cookie a browser got by opening the themes page once with
    `?token=` (a browser cannot add headers to an EventSource)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    def _authorized(self, scope: Scope) -> bool:
        request = Request(scope)
        header = request.headers.get("authorization", "")
        candidates = [header[len("Bearer "):] if header.startswith("Bearer ") else "", request.cookies.get(COOKIE, "")]
        if scope["path"] == PAGE_PATH:
            candidates.append(request.query_params.get("token", ""))
        return any(hmac.compare_digest(candidate.encode(), self.token) for candidate in candidates if candidate)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS and not self._authorized(scope):
            response = JSONResponse({"error": "missing or wrong bearer token"}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
