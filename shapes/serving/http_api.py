"""The HTTP JSON API, an endpoint per shape spec, with an OpenAPI document, /healthz and /metrics.

Every route but /healthz and /openapi.json needs `Authorization: Bearer <token>`. Shapes answer
JSON by default and text with `format=text`; a shape's refusal is a 400 with `{"error": ...}`,
an unreachable engine a 503, never a stack trace.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from neo4j.exceptions import DriverError, Neo4jError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import TypeAdapter
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from shapes.freshness import Freshness
from shapes.serving.metrics import REGISTRY
from shapes.serving.service import Shapes
from shapes.spec import ShapeSpec, value_kind
from shapes.spec.exceptions import ShapeError
from shapes.spec.registry import SPECS
from worker.exceptions import LakegraphError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)
GRAPH_DOWN = (Neo4jError, DriverError, OSError)
OPEN_PATHS = frozenset({"/healthz", "/openapi.json"})
PAGE_PATH = "/themes"
COOKIE = "lakegraph_token"
MAX_BODY = 1_000_000
REF = "#/components/schemas/{model}"
FORMAT = {"type": "string", "enum": ["json", "text"], "default": "json", "description": "json (default) or text"}


def _query_params(spec: ShapeSpec, request: Request) -> dict[str, Any]:
    """A GET's query string as the model's raw input: a list field takes every value, others the last."""
    fields = spec.fields()
    return {
        key: values if key in fields and value_kind(fields[key]) is list else values[-1]
        for key, values in ((key, request.query_params.getlist(key)) for key in request.query_params)
    }


async def _body_params(request: Request) -> dict[str, Any]:
    body = await request.body()
    if len(body) > MAX_BODY:
        raise ShapeError(f"request body over {MAX_BODY} bytes")
    try:
        raw = json.loads(body or b"{}")
    except ValueError:
        raise ShapeError("the body must be a JSON object") from None
    if not isinstance(raw, dict):
        raise ShapeError("the body must be a JSON object")
    return raw


def _handler(shapes: Shapes, spec: ShapeSpec) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        try:
            raw = await _body_params(request) if spec.method == "POST" else _query_params(spec, request)
            output = raw.pop("format", "json")
            if output not in ("json", "text"):
                raise ShapeError("format must be json or text")
            answer = await anyio.to_thread.run_sync(lambda: shapes.ask(spec.name, **raw))
        except ShapeError as refused:
            return JSONResponse({"error": str(refused)}, status_code=400)
        except LakegraphError as failed:
            return JSONResponse({"error": f"unavailable: {failed}"}, status_code=503)
        if output == "text":
            return PlainTextResponse(answer.text())
        return Response(json.dumps(answer.data(), default=str), media_type="application/json")

    return handle


def _answer_schema(output: type, components: dict[str, Any]) -> dict[str, Any]:
    """The answer's JSON schema: the shape's result with its freshness; shared parts go to components."""
    schema = TypeAdapter(output).json_schema(ref_template=REF)
    components.update(schema.pop("$defs", {}))
    freshness = TypeAdapter(Freshness).json_schema(ref_template=REF)
    components.update(freshness.pop("$defs", {}))
    components["Freshness"] = freshness
    schema["properties"]["freshness"] = {"$ref": REF.format(model="Freshness")}
    return schema


def _operation(spec: ShapeSpec, components: dict[str, Any]) -> dict[str, Any]:
    schema = spec.model.model_json_schema()
    properties = {**schema.get("properties", {}), "format": FORMAT}
    required = schema.get("required", [])
    answer = _answer_schema(spec.output, components)
    operation: dict[str, Any] = {
        "operationId": spec.name,
        "summary": spec.purpose,
        "description": spec.guide,
        "security": [{"bearer": []}],
        "responses": {
            "200": {
                "description": "The shape's answer (JSON, or text with format=text), with its freshness",
                "content": {"application/json": {"schema": answer}, "text/plain": {"schema": {"type": "string"}}},
            },
            "400": {"description": 'Refused or bad input: {"error": "..."}'},
            "401": {"description": "Missing or wrong bearer token"},
            "503": {"description": "An engine is unreachable"},
        },
    }
    if spec.method == "GET":
        operation["parameters"] = [
            {"name": name, "in": "query", "required": name in required, "description": prop.get("description", ""), "schema": prop}
            for name, prop in properties.items()
        ]
    else:
        operation["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": required,
                        "properties": properties,
                    }
                }
            },
        }
    return operation


def openapi() -> dict:
    schemas: dict[str, Any] = {}
    paths: dict[str, dict] = {spec.path: {spec.method.lower(): _operation(spec, schemas)} for spec in SPECS.values()}
    paths["/healthz"] = {
        "get": {"summary": "Liveness and the graph's reachability", "responses": {"200": {"description": "ok"}, "503": {"description": "graph down"}}}
    }
    paths["/metrics"] = {
        "get": {"summary": "Prometheus metrics", "security": [{"bearer": []}], "responses": {"200": {"description": "text exposition format"}}}
    }
    paths["/v1/tools"] = {"get": {"summary": "The shapes that can answer now", "security": [{"bearer": []}], "responses": {"200": {"description": "names"}}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "lakegraph", "version": "1", "description": "Shapes of a live lakehouse context graph."},
        "components": {"schemas": schemas, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
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

    found = [Route(spec.path, _handler(shapes, spec), methods=[spec.method]) for spec in SPECS.values()]
    return [*found, Route("/healthz", healthz), Route("/metrics", metrics), Route("/v1/tools", tools), Route("/openapi.json", spec)]


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
        candidates = [header[len("Bearer ") :] if header.startswith("Bearer ") else "", request.cookies.get(COOKIE, "")]
        if scope["path"] == PAGE_PATH:
            candidates.append(request.query_params.get("token", ""))
        return any(hmac.compare_digest(candidate.encode(), self.token) for candidate in candidates if candidate)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS and not self._authorized(scope):
            response = JSONResponse({"error": "missing or wrong bearer token"}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
