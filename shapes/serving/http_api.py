"""The HTTP JSON API, an endpoint per shape spec, with an OpenAPI document, /healthz and /metrics.

Every route but /healthz and /openapi.json needs `Authorization: Bearer <token>`. Besides the
shapes, `POST /v1/themes/refresh` asks the workers for a themes run now (a grant needs the
`themes-refresh` capability); it answers 202 with the task's id, and the themes' subscribers hear
when the run moved them. Shapes answer
JSON by default and text with `format=text`; a refusal is `{"error": ...}` with its kind's status
(400 bad input, 404 unknown URI, table, theme, value or cursor, 409 a cursor whose answer changed or
an ambiguous name, 413 an oversized body), a method a path does not serve a 405 with `Allow`, an
unreachable engine a 503, never a stack trace. The OpenAPI document lists each of them per
operation, with the error's body.
"""

from __future__ import annotations

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

from shapes.serving.guard import caller_of
from shapes.serving.metrics import REGISTRY
from shapes.serving.requests import THEMES_REFRESH, WriteRequests
from shapes.serving.resources import THEMES_URI
from shapes.serving.service import Shapes, answer_type
from shapes.spec import ShapeSpec, value_kind
from shapes.spec.exceptions import Denied, ShapeError, TooLarge
from shapes.spec.registry import SPECS
from worker.exceptions import LakegraphError

if TYPE_CHECKING:
    from shapes.serving.audit import Outcome
    from shapes.serving.identity import Caller

log = logging.getLogger(__name__)
GRAPH_DOWN = (Neo4jError, DriverError, OSError)
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
        raise TooLarge(f"request body over {MAX_BODY} bytes")
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
            caller = caller_of(request)
            answer = await anyio.to_thread.run_sync(lambda: shapes.ask(spec.name, caller, "http", **raw))
        except ShapeError as refused:
            return JSONResponse({"error": str(refused)}, status_code=refused.status)
        except LakegraphError as failed:
            return JSONResponse({"error": f"unavailable: {failed}"}, status_code=503)
        if output == "text":
            return PlainTextResponse(answer.text())
        return Response(answer.json(), media_type="application/json")

    return handle


def _answer_schema(spec: ShapeSpec, components: dict[str, Any]) -> dict[str, Any]:
    """The answer's JSON schema (the MCP tool's outputSchema); shared parts go to components."""
    schema = TypeAdapter(answer_type(spec)).json_schema(ref_template=REF)
    components.update(schema.pop("$defs", {}))
    return schema


def _operation(spec: ShapeSpec, components: dict[str, Any]) -> dict[str, Any]:
    schema = spec.model.model_json_schema()
    properties = {**schema.get("properties", {}), "format": FORMAT}
    required = schema.get("required", [])
    answer = _answer_schema(spec, components)
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
            **REFUSALS,
            **({"413": _error("The request body is over 1,000,000 bytes")} if spec.method == "POST" else {}),
            **AUTHORIZED,
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


def _error(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    """A response whose body is `{"error": "..."}`."""
    response: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": {"$ref": REF.format(model="Error")}}}}
    if headers:
        response["headers"] = headers
    return response


ERROR = {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}, "additionalProperties": False}
# What every operation can answer besides its 200, and what a method it does not serve gets.
REFUSALS = {
    "400": _error("Refused: the input does not fit the shape (a bound, a query that does not parse, a write)"),
    "403": _error("The token is valid, but its grant does not allow this shape or capability"),
    "404": _error("What the call names is not there: an unknown URI, table, theme, value or column, or a cursor no call of this shape gave"),
    "409": _error("The graph changed under the call: a cursor whose answer changed since it was given, or a name several things have"),
}
AUTHORIZED = {
    "401": _error("Missing or wrong bearer token", {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "Bearer"}}),
    "405": _error("The path does not serve this method", {"Allow": {"schema": {"type": "string"}, "description": "The methods it serves"}}),
    "503": _error("An engine (Neo4j, the warehouse) is unreachable"),
}


def openapi() -> dict:
    schemas: dict[str, Any] = {"Error": ERROR}
    paths: dict[str, dict] = {spec.path: {spec.method.lower(): _operation(spec, schemas)} for spec in SPECS.values()}
    paths["/healthz"] = {
        "get": {
            "summary": "Liveness and the graph's reachability",
            "responses": {
                "200": {"description": "ok", "content": {"application/json": {"schema": HEALTH}}},
                "405": AUTHORIZED["405"],
                "503": {"description": "the graph is down", "content": {"application/json": {"schema": HEALTH}}},
            },
        }
    }
    paths["/metrics"] = {
        "get": {
            "summary": "Prometheus metrics",
            "security": [{"bearer": []}],
            "responses": {
                "200": {"description": "text exposition format", "content": {"text/plain": {"schema": {"type": "string"}}}},
                "403": REFUSALS["403"],
                **AUTHORIZED,
            },
        }
    }
    paths[THEMES_REFRESH] = {
        "post": {
            "summary": "Ask the workers for a themes run now",
            "description": "Queued for a worker (runs after one in progress; changes nothing on an unchanged link graph). Watch the themes resources to hear when it moved them.",
            "security": [{"bearer": []}],
            "responses": {
                "202": {"description": "queued", "content": {"application/json": {"schema": QUEUED}}},
                "403": _error("The grant does not give the themes-refresh capability"),
                **AUTHORIZED,
                "503": _error("The broker the workers read is unreachable"),
            },
        }
    }
    paths["/v1/tools"] = {
        "get": {
            "summary": "The shapes that can answer now",
            "security": [{"bearer": []}],
            "responses": {"200": {"description": "their names", "content": {"application/json": {"schema": TOOLS}}}, **AUTHORIZED},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "lakegraph", "version": "1", "description": "Shapes of a live lakehouse context graph."},
        "components": {"schemas": schemas, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    }


HEALTH = {"type": "object", "required": ["status"], "properties": {"status": {"type": "string", "enum": ["ok", "unavailable"]}, "neo4j": {"type": "string"}}}
QUEUED = {
    "type": "object",
    "required": ["queued", "task_id", "watch"],
    "properties": {"queued": {"type": "string"}, "task_id": {"type": "string"}, "watch": {"type": "string"}},
}
TOOLS = {"type": "object", "required": ["available"], "properties": {"available": {"type": "array", "items": {"type": "string"}}}}


def routes(shapes: Shapes) -> list[Route]:
    async def healthz(request: Request) -> Response:
        try:
            await anyio.to_thread.run_sync(shapes.driver.verify_connectivity)
        except GRAPH_DOWN as failed:
            return JSONResponse({"status": "unavailable", "neo4j": str(failed).splitlines()[0][:200]}, status_code=503)
        return JSONResponse({"status": "ok"})

    async def metrics(request: Request) -> Response:
        if not caller_of(request).grant.may("metrics"):  # its gauges count the whole graph
            return JSONResponse({"error": "the metrics need a grant with the metrics capability"}, status_code=Denied.status)
        try:
            await anyio.to_thread.run_sync(shapes.refresh_gauges)
        except GRAPH_DOWN:  # with the graph down, /metrics still serves the counters
            log.warning("gauges not refreshed: the graph is unreachable")
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    async def tools(request: Request) -> Response:
        return JSONResponse({"available": sorted(await anyio.to_thread.run_sync(shapes.available))})

    async def spec(request: Request) -> Response:
        return JSONResponse(openapi())

    requests = WriteRequests(shapes.settings)

    async def refresh_themes(request: Request) -> Response:
        caller = caller_of(request)
        if not caller.grant.may("themes-refresh"):
            refused = f"a themes refresh needs the 'themes-refresh' capability, which your grants ({', '.join(caller.grant.names)}) do not give"
            _audited(shapes, caller, "denied", refused)
            return JSONResponse({"error": refused}, status_code=Denied.status)
        try:
            task = await anyio.to_thread.run_sync(requests.themes_run)
        except Exception as failed:  # no broker (kombu's errors, or no embedded Redis): the request is not taken
            _audited(shapes, caller, "error", type(failed).__name__)
            return JSONResponse({"error": f"unavailable: the workers' broker cannot be reached ({failed})"}, status_code=503)
        _audited(shapes, caller, "ok")
        return JSONResponse({"queued": "themes run", "task_id": task, "watch": THEMES_URI}, status_code=202)

    found = [serving(spec.path, _handler(shapes, spec), spec.method) for spec in SPECS.values()]
    return [
        *found,
        *(serving(path, endpoint) for path, endpoint in (("/healthz", healthz), ("/metrics", metrics), ("/v1/tools", tools), ("/openapi.json", spec))),
        serving(THEMES_REFRESH, refresh_themes, "POST"),
    ]


def _audited(shapes: Shapes, caller: Caller, outcome: Outcome, reason: str = "") -> None:
    if shapes.audit is not None:
        shapes.audit.record(caller, "http", "themes refresh", outcome, reason)


class EveryMethod(Route):
    """A route that matches its path whatever the method (Starlette makes a function's route
    GET-only), its endpoint answering the methods it does not serve."""

    def __init__(self, path: str, endpoint: Callable[[Request], Awaitable[Response]]) -> None:
        super().__init__(path, endpoint)
        self.methods = None


def serving(path: str, endpoint: Callable[[Request], Awaitable[Response]], method: str = "GET") -> Route:
    """A route that takes every method, so that one it does not serve is a 405 naming those it
    does (`Allow`), not a 404 from whatever is mounted below it (the MCP app at /)."""
    allowed = (method, "HEAD") if method == "GET" else (method,)

    async def handle(request: Request) -> Response:
        if request.method not in allowed:
            error = {"error": f"{request.method} is not served at {path}: {', '.join(allowed)}"}
            return JSONResponse(error, status_code=405, headers={"Allow": ", ".join(allowed)})
        return await endpoint(request)

    return EveryMethod(path, handle)
