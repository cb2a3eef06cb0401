"""The MCP server: one tool per shape, offered only while it can answer.

Which tools exist follows what exists (indexes online, documents or tables loaded, a warehouse
configured); it is re-evaluated every `serve.tools_refresh_interval` seconds and a change is
announced to clients listening for `tools_list_changed`. Tool descriptions teach an agent when
to reach for each. A shape's refusal (unknown URI, write attempt, …) comes back as a tool error
in one line, never a stack trace.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import ToolAnnotations
from neo4j.exceptions import DriverError, Neo4jError
from pydantic import Field, WithJsonSchema

from shapes.serving.service import Answer, Shapes
from shapes.spec import ShapeSpec
from shapes.spec.exceptions import ShapeError
from shapes.spec.registry import SPECS
from worker.exceptions import LakegraphError

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

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


def _answer(call: Callable[[], Answer], output: str) -> str:
    try:
        result = call()
    except ShapeError as refused:
        raise ToolError(str(refused)) from None
    except LakegraphError as failed:
        raise ToolError(f"unavailable: {failed}") from None
    return json.dumps(result.data(), default=str) if output == "json" else result.text()


def tool_function(shapes: Shapes, spec: ShapeSpec) -> Callable[..., str]:
    """The shape as a tool function whose signature the SDK reads as the tool's input schema: each
    parameter advertises its spec's schema but lets any value through, so the spec's model alone
    checks it and a refusal reads as it does on the CLI and over HTTP."""

    def call(format: str = "text", **params: Any) -> str:
        return _answer(lambda: shapes.ask(spec.name, **params), format)

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
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    call.__name__ = spec.name
    return call


class LakegraphMCP:
    """An MCPServer whose tool list follows `Shapes.available()`."""

    def __init__(self, shapes: Shapes) -> None:
        self.shapes = shapes
        self.bus = InMemorySubscriptionBus()
        self.server = MCPServer("lakegraph", instructions=INSTRUCTIONS, subscriptions=self.bus, middleware=[self._current_tools])
        self.functions = {name: tool_function(shapes, spec) for name, spec in SPECS.items()}
        self.offered: set[str] = set()
        self.lock = threading.Lock()

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
                structured_output=False,
                annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
            )
        changed = wanted != self.offered
        self.offered = wanted
        return changed

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

    async def run_stdio(self, interval: float) -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self.keep_tools_current, interval)
            await self.server.run_stdio_async()
            tasks.cancel_scope.cancel()
