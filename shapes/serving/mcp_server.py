"""The MCP server: one tool per shape, offered only while it can answer, and the resources an agent
watches (shapes/serving/resources.py), with change notifications.

Which tools exist follows what exists (indexes online, documents or tables loaded, a warehouse
configured); it is re-evaluated every `serve.tools_refresh_interval` seconds and a change is
announced to clients listening for `tools_list_changed`. Tool descriptions teach an agent when
to reach for each. Every tool declares its answer's JSON schema (`answer_type`, the same one the
OpenAPI document gives) and returns the answer as `structuredContent`, its text rendering (or
JSON, with `format=json`) for clients that read text, and a resource link to each document,
section, table and theme it names. A shape's refusal (unknown URI, write attempt, …) comes back
as a tool error in one line, never a stack trace.

Subscriptions: a 2026-07-28 client opens `subscriptions/listen` with the resource URIs it watches;
a 2025 client (sessions) sends `resources/subscribe`. Either way an unknown URI is refused with
its name and nothing is registered, and the replica's change feed (shapes/serving/change_feed.py)
notifies each watched URI when its answer moved — as the subscriber's grant sees it: a restricted
caller may watch only what it may read, and hears only of changes within its grant.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.subscriptions import SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ServerEvent, ToolsListChanged
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    EmptyResult,
    ReadResourceResult,
    ResourceLink,
    SubscribeRequestParams,
    TextContent,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from neo4j.exceptions import DriverError, Neo4jError
from pydantic import Field, WithJsonSchema

from shapes.serving import resources
from shapes.serving.change_feed import ChangeFeed, GrantedUpdate, Watch, heard_by
from shapes.serving.guard import caller_of
from shapes.serving.identity import LOCAL, Caller
from shapes.serving.service import Answer, Shapes, answer_type
from shapes.spec import ShapeSpec
from shapes.spec.exceptions import NotFound, ShapeError
from shapes.spec.registry import SPECS
from worker.exceptions import LakegraphError

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.session import ServerSession

    from shapes.serving.audit import Outcome

log = logging.getLogger(__name__)
Format = Annotated[Literal["text", "json"], Field(description="text (compact, for reading) or json (structured)")]
INSTRUCTIONS = """\
lakegraph serves a live graph of a lakehouse: the document library (manuals, bulletins, recalls —
folders, documents, sections and their cross-references) and the warehouse (tables, columns,
declared keys, and the joins analysts really run). Start broad, then narrow: `search` or
`outline` to ground yourself in documents, `table_context` to find the tables for a question,
`join_path` for how to join them, `run_sql` to get the numbers, `coverage` to prove that an
identifier is documented nowhere. Every answer ends with how fresh the graph is. URIs in answers
can be fed back to `outline` and to `search`'s `under`."""


MAX_TTL_SECONDS = 60.0  # the longest a client may keep a resource it read without asking again
NOTIFY_SECONDS = 5.0  # a 2025 session that takes longer to accept a notification is dropped
SESSION_BACKLOG = 1024  # notifications owed to 2025 sessions and not sent yet
# Who made the request being handled: set around each request by `LakegraphMCP._identified` (from
# the HTTP request the guard checked; the local user over stdio). Unset is nobody, never everyone.
CALLER: ContextVar[Caller | None] = ContextVar("lakegraph_mcp_caller", default=None)


def current_caller() -> Caller:
    caller = CALLER.get()
    if caller is None:
        raise ToolError("no caller: this request did not come through lakegraph's guard")
    return caller


def _answer(call: Callable[[], Answer], output: str) -> CallToolResult:
    try:
        answer = call()
    except ShapeError as refused:
        raise ToolError(str(refused)) from None
    except LakegraphError as failed:
        raise ToolError(f"unavailable: {failed}") from None
    data = answer.json()
    linked = resources.links(SPECS[answer.shape], answer.result)
    return CallToolResult(
        content=[
            TextContent(text=data if output == "json" else answer.text()),
            *(ResourceLink(uri=uri, name=name, mime_type="application/json") for uri, name in linked.items()),
        ],
        structured_content=json.loads(data),
    )


def tool_function(shapes: Shapes, spec: ShapeSpec) -> Callable[..., CallToolResult]:
    """The shape as a tool function whose signature the SDK reads as the tool's input schema: each
    parameter advertises its spec's schema but lets any value through, so the spec's model alone
    checks it and a refusal reads as it does on the CLI and over HTTP. Its return annotation names
    the answer's type, from which the SDK publishes the outputSchema and checks every answer."""

    def call(format: str = "text", **params: Any) -> CallToolResult:
        caller = current_caller()
        return _answer(lambda: shapes.ask(spec.name, caller, "mcp", **params), format)

    schemas = spec.model.model_json_schema()["properties"]
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[Any, WithJsonSchema(schemas[name])],
            default=inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True),
        )
        for name, field in spec.fields().items()
    ]
    parameters.append(inspect.Parameter("format", inspect.Parameter.KEYWORD_ONLY, annotation=Format, default="text"))
    returns = Annotated[CallToolResult, answer_type(spec)]
    call.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
    call.__annotations__ = {**{parameter.name: parameter.annotation for parameter in parameters}, "return": returns}
    call.__name__ = spec.name
    return call


def resource_function(shapes: Shapes, resource: resources.ResourceSpec) -> Callable[..., str]:
    """The resource as a function of its template's values (the SDK matches the names): the shape's
    JSON answer, or a resource error in the shape's words."""

    def read(**values: str | None) -> str:
        caller = current_caller()
        try:
            answer = shapes.ask(resource.shape, caller, "mcp", **resource.params({name: value for name, value in values.items() if value}))
        except NotFound as missing:
            raise ResourceNotFoundError(str(missing)) from None
        except ShapeError as refused:
            raise ResourceError(str(refused)) from None
        except LakegraphError as failed:
            raise ResourceError(f"unavailable: {failed}") from None
        return answer.json()

    template = resource.template
    queried = set(template.query_variable_names) if template else set()
    kinds = {name: str | None if name in queried else str for name in (template.variable_names if template else ())}
    read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=None if name in queried else inspect.Parameter.empty)
            for name, kind in kinds.items()
        ],
        return_annotation=str,
    )
    read.__annotations__ = {**kinds, "return": str}  # pydantic reads the hints, the SDK the signature
    read.__name__ = resource.name.replace(" ", "_")
    return read


class CallerBus:
    """The change feed's bus as the MCP listen streams see it: a listener registered while a caller's
    request is served (a listen stream opening) hears only the resource updates of its grant."""

    def __init__(self, bus: SubscriptionBus) -> None:
        self.bus = bus

    async def publish(self, event: ServerEvent) -> None:
        await self.bus.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        grant = current_caller().grant

        def within(event: ServerEvent) -> None:
            if heard_by(event, grant):
                listener(event)

        return self.bus.subscribe(within)


class LakegraphMCP:
    """An MCPServer whose tool list follows `Shapes.available()`."""

    def __init__(self, shapes: Shapes, feed: ChangeFeed, local: bool = False) -> None:
        """`local`: every request is the one local user (stdio, or an in-process client), not a
        caller the HTTP guard identified."""
        self.shapes = shapes
        self.feed = feed
        self.bus = feed.bus
        self.owed, self.owing = anyio.create_memory_object_stream[GrantedUpdate](SESSION_BACKLOG)  # to 2025 sessions
        self.bus.subscribe(self._owe)
        self.local = local
        self.server = MCPServer(
            "lakegraph",
            instructions=INSTRUCTIONS,
            subscriptions=CallerBus(self.bus),
            middleware=[self._identified, self._current_tools, self._watched, self._cache_hint],
        )
        self.functions = {name: tool_function(shapes, spec) for name, spec in SPECS.items()}
        self.offered: set[str] = set()
        self.lock = threading.Lock()
        self.sessions: dict[ServerSession, set[Watch]] = {}  # 2025 clients: what each session subscribed to, within its grant
        for resource in resources.RESOURCES:
            self.server.resource(resource.uri, name=resource.name, description=resource.description, mime_type="application/json")(
                resource_function(shapes, resource)
            )
        lowlevel = self.server._lowlevel_server  # the 2025 subscribe methods have no MCPServer registration
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe)

    def wanted(self) -> set[str]:
        return self.shapes.available()

    def sync_tools(self) -> bool:
        """Register what can answer now and drop what cannot; True when the list changed."""
        with self.lock:  # the periodic check and a client's request may both get here
            return self._sync_tools()

    def _sync_tools(self) -> bool:
        wanted = self.wanted()
        for name in sorted(self.offered - wanted):
            self.server.remove_tool(name)
        for name in sorted(wanted - self.offered):
            self.server.add_tool(
                self.functions[name],
                name=name,
                description=SPECS[name].description,
                structured_output=True,
                annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
            )
        changed = wanted != self.offered
        self.offered = wanted
        return changed

    async def _identified(self, ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        """The request's caller, for the tools and resources it reaches: the one the HTTP guard
        attached to the request, or the local user over stdio."""
        caller = LOCAL if self.local else caller_of(ctx.request) if ctx.request is not None else None
        token = CALLER.set(caller)
        try:
            return await call_next(ctx)
        finally:
            CALLER.reset(token)

    async def _current_tools(self, ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        """A client listing tools, or calling one not offered, sees what exists at this moment,
        not as of the last periodic check."""
        unknown_call = ctx.method == "tools/call" and (ctx.params or {}).get("name") not in self.offered
        if ctx.method == "tools/list" or unknown_call:
            try:
                if await anyio.to_thread.run_sync(self.sync_tools):
                    await self.bus.publish(ToolsListChanged())
            except (LakegraphError, Neo4jError, DriverError) as failed:
                log.warning("tool list not refreshed: %s", failed)
        return await call_next(ctx)

    async def _watched(self, ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        """A listen stream's resource URIs are checked before it opens and watched while it is open."""
        if ctx.method != "subscriptions/listen":
            return await call_next(ctx)
        wanted = (ctx.params or {}).get("notifications", {}).get("resourceSubscriptions") or []
        watches = [await self._watchable(uri) for uri in wanted]
        for watch in watches:
            self.feed.watch(watch)
        try:
            return await call_next(ctx)
        finally:
            for watch in watches:
                self.feed.unwatch(watch)

    async def _cache_hint(self, ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        """A resource read says how long it stays fresh, from the freshness it reports."""
        result = await call_next(ctx)
        if ctx.method == "resources/read" and isinstance(result, ReadResourceResult) and result.contents:
            freshness = json.loads(getattr(result.contents[0], "text", "{}")).get("freshness", {})
            return result.model_copy(update={"ttl_ms": round(ttl_seconds(freshness) * 1000), "cache_scope": "private"})
        return result

    async def _watchable(self, uri: Any) -> Watch:
        """A resource of the catalogue the caller may read, as its grant sees it: within a restricted
        grant, a place or table outside it, or a theme it sees no member of, is refused as a
        subscription in the words a read gets — so no notification ever tells of a change to what it
        may not read. Each subscription, taken or refused, is written to the access audit."""
        caller = current_caller()
        try:
            watch = await self._within(caller, _known(uri))
        except MCPError as refused:
            self._audited(caller, uri, "refused", refused.error.message)
            raise
        self._audited(caller, uri, "ok")
        return watch

    async def _within(self, caller: Caller, uri: str) -> Watch:
        grant = caller.grant
        if grant.everything:
            return Watch(uri, grant)
        found = resources.resolve(uri)
        assert found is not None  # _known
        resource, values = found
        params = resource.params(values)
        if ("uri" in params and not grant.sees_uri(params["uri"])) or ("table" in params and not grant.sees_table(params["table"])):
            raise MCPError(INVALID_PARAMS, f"cannot watch {uri}: not found", {"uri": uri})
        if "theme" in params:
            try:
                await anyio.to_thread.run_sync(lambda: self.shapes.ask(resource.shape, caller, "mcp", **params))
            except ShapeError as refused:
                raise MCPError(INVALID_PARAMS, f"cannot watch {uri}: {refused}", {"uri": uri}) from None
        return Watch(uri, grant)

    def _audited(self, caller: Caller, uri: Any, outcome: Outcome, reason: str = "") -> None:
        if self.shapes.audit is not None:
            self.shapes.audit.record(caller, "mcp", "subscribe", outcome, reason, {"uri": str(uri)})

    async def _subscribe(self, ctx: ServerRequestContext, params: SubscribeRequestParams) -> EmptyResult:
        watch = await self._watchable(str(params.uri))
        held = self.sessions.setdefault(ctx.session, set())
        if watch not in held:
            held.add(watch)
            self.feed.watch(watch)
        return EmptyResult()

    async def _unsubscribe(self, ctx: ServerRequestContext, params: UnsubscribeRequestParams) -> EmptyResult:
        held = self.sessions.get(ctx.session, set())
        for watch in [watch for watch in held if watch.uri == str(params.uri)]:
            held.discard(watch)
            self.feed.unwatch(watch)
        return EmptyResult()

    def _owe(self, event: ServerEvent) -> None:
        """A notification the 2025 sessions may be owed (listen streams take theirs from the bus)."""
        if isinstance(event, GrantedUpdate) and any(watch.heard(event) for held in self.sessions.values() for watch in held):
            try:
                self.owed.send_nowait(event)
            except anyio.WouldBlock:
                log.warning("2025 sessions behind by %d notifications: %s not sent", SESSION_BACKLOG, event.uri)

    async def pay_sessions(self) -> None:
        """Send each owed notification to the 2025 sessions subscribed to it; a session that does not
        take it within NOTIFY_SECONDS, or is gone, is dropped with its subscriptions and a logged
        reason, so one stalled client cannot hold up the others."""
        async for event in self.owing:
            for session, held in list(self.sessions.items()):
                if not any(watch.heard(event) for watch in held):
                    continue
                try:
                    with anyio.fail_after(NOTIFY_SECONDS):
                        await session.send_resource_updated(event.uri)
                except Exception as failed:  # closed, broken or stalled: that session alone is dropped
                    log.info("a session's subscriptions dropped (%s): %s", type(failed).__name__, ", ".join(sorted(watch.uri for watch in held)))
                    for gone in self.sessions.pop(session, set()):
                        self.feed.unwatch(gone)

    async def keep_tools_current(self, interval: float) -> None:
        """Re-evaluate the tool list forever; announce each change to listening clients."""
        while True:
            await anyio.sleep(interval)
            try:
                changed = await anyio.to_thread.run_sync(self.sync_tools)
            except LakegraphError as failed:
                log.warning("tool list not refreshed: %s", failed)
                continue
            except Exception:  # a graph outage must not end the server; the next round retries
                log.exception("tool list not refreshed")
                continue
            if changed:
                log.info("tools now: %s", ", ".join(sorted(self.offered)))
                await self.bus.publish(ToolsListChanged())

    async def keep_current(self) -> None:
        """The tool list kept current and the 2025 sessions notified, until cancelled (the change
        feed runs beside, for every surface of the process)."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self.keep_tools_current, self.shapes.settings.serve.tools_refresh_interval)
            tasks.start_soon(self.pay_sessions)

    async def run_stdio(self) -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self.feed.run)
            tasks.start_soon(self.keep_current)
            await self.server.run_stdio_async()
            tasks.cancel_scope.cancel()


def ttl_seconds(freshness: dict) -> float:
    """How long an answer stays fresh: not at all while events wait in the queue (the graph is about
    to change), else a tenth of the time since the graph last changed, at most MAX_TTL_SECONDS — the
    heuristic HTTP caches apply to a resource by its age (RFC 9111, 4.2.2). Subscribers need no
    guess: they are told."""
    sources = freshness.get("sources", [])
    if not sources or any(source.get("queued") for source in sources):
        return 0.0
    ages = [source["age_seconds"] for source in sources if source.get("age_seconds") is not None]
    return min(MAX_TTL_SECONDS, min(ages) / 10) if ages else 0.0


def _known(uri: Any) -> str:
    """A resource URI of the catalogue, else an MCP error naming it and the forms there are."""
    if not isinstance(uri, str) or not resources.known(uri):
        forms = ", ".join(resource.uri for resource in resources.RESOURCES)
        raise MCPError(INVALID_PARAMS, f"unknown resource {uri!r}: lakegraph serves {forms}", {"uri": uri})
    return uri
