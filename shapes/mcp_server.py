"""The MCP server: one tool per shape, offered only while it can answer.

Which tools exist follows what exists (indexes online, documents or tables loaded, a warehouse
configured); it is re-evaluated every `serve.tools_refresh_interval` seconds and a change is
announced to clients listening for `tools_list_changed`. Tool descriptions teach an agent when
to reach for each. A shape's refusal (unknown URI, write attempt, …) comes back as a tool error
in one line, never a stack trace.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import ToolAnnotations
from neo4j.exceptions import DriverError, Neo4jError
from pydantic import Field

from shapes.errors import ShapeError
from shapes.service import Answer, Shapes
from worker.errors import LakegraphError

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


def tool_functions(shapes: Shapes) -> dict[str, tuple[Callable[..., str], str]]:
    """Each shape as a tool function (its signature is the tool's input schema) and its description."""

    def outline(
        uri: Annotated[str | None, Field(description="A URI from an earlier answer; omit for the libraries")] = None,
        depth: Annotated[int, Field(ge=0, le=20, description="Levels below the URI")] = 1,
        format: Format = "text",
    ) -> str:
        return _answer(lambda: shapes.outline(uri, depth), format)

    def search(
        query: Annotated[str, Field(description="Words to find; Lucene syntax is treated as plain text")],
        under: Annotated[str | None, Field(description="Only hits at or below this URI (a library, folder or document)")] = None,
        k: Annotated[int, Field(ge=1, le=200)] = 10,
        expand: Annotated[list[str] | None, Field(description="Synonyms or related phrasings OR-ed in: ['rough idle', 'shudder']")] = None,
        format: Format = "text",
    ) -> str:
        return _answer(lambda: shapes.search(query, under, k, expand or []), format)

    def coverage(
        terms: Annotated[list[str], Field(description="Identifiers such as fault codes or part numbers")],
        under: Annotated[str | None, Field(description="Only count mentions at or below this URI")] = None,
        format: Format = "text",
    ) -> str:
        return _answer(lambda: shapes.coverage(terms, under), format)

    def table_context(
        question: Annotated[str, Field(description="What data you need, in words: 'comeback ratio by model'")],
        k: Annotated[int, Field(ge=1, le=50)] = 5,
        format: Format = "text",
    ) -> str:
        return _answer(lambda: shapes.tables(question, k), format)

    def join_path(
        table_a: Annotated[str, Field(description="A table id or its tail: 'service.work_orders' or 'work_orders'")],
        table_b: Annotated[str, Field(description="The table to reach")],
        max_hops: Annotated[int, Field(ge=1, le=6)] = 3,
        format: Format = "text",
    ) -> str:
        return _answer(lambda: shapes.join_path(table_a, table_b, max_hops), format)

    def run_sql(
        sql: Annotated[str, Field(description="One read-only query (SELECT / WITH … SELECT) in the warehouse's dialect")],
        format: Format = "text",
    ) -> str:
        return _answer(lambda: shapes.run_sql(sql), format)

    def schema(format: Format = "text") -> str:
        return _answer(shapes.schema, format)

    def cypher(
        query: Annotated[str, Field(description="One read-only Cypher query")],
        parameters: Annotated[dict[str, Any] | None, Field(description="Query parameters ($name in the query)")] = None,
        format: Format = "text",
    ) -> str:
        return _answer(lambda: shapes.cypher(query, parameters or {}), format)

    def freshness(format: Format = "text") -> str:
        return _answer(shapes.freshness, format)

    def themes(
        level: Annotated[int, Field(ge=0, le=9, description="0 is the coarsest level; higher zooms in")] = 0,
        theme: Annotated[str | None, Field(description="One theme's id: its summary and its members, a page at a time")] = None,
        cursor: Annotated[str | None, Field(description="Continue where the answer stopped (it gives next_cursor): the themes, or with theme its members")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="With theme: members per page")] = 200,
        format: Format = "text",
    ) -> str:
        return _answer(lambda: shapes.themes(level, theme, cursor, limit), format)

    def theme_changes(
        since: Annotated[str, Field(description="ISO date or time: runs from then on")] = "1970-01-01",
        format: Format = "text",
    ) -> str:
        return _answer(lambda: shapes.theme_changes(since), format)

    return {
        "outline": (outline, "Table of contents of the document library from any URI: folders, documents, sections in reading order, and each node's outbound links (→ rows). Use it to read a document's structure or follow its references."),
        "search": (search, "Full-text search over documents and sections, optionally scoped to a URI subtree (still k hits inside the scope). Pass `expand` with synonyms you know; each hit has its URI, breadcrumb and a highlighted snippet."),
        "coverage": (coverage, "For identifiers (fault codes, part numbers): which appear in NO document or section (exact token match) and where the others appear. Use it to prove a gap — similarity search cannot."),
        "table_context": (table_context, "Find the warehouse tables for a question (business terms, names and descriptions, and vectors when configured, fused by rank), with columns, keys, real join partners and tagged terms."),
        "join_path": (join_path, "How to join table A to table B: declared keys first, then joins learned from the query log by confidence, with the exact ON clauses and each hop's evidence."),
        "run_sql": (run_sql, "Run one read-only SQL query against the warehouse within a row, time and byte budget. Find tables with table_context and joins with join_path first."),
        "schema": (schema, "The graph's labels, relationship types (with counts), properties and indexes — read before writing Cypher."),
        "cypher": (cypher, "Read-only Cypher against the graph, for questions no other tool answers; time-limited and row-capped. Writes, admin procedures and LOAD CSV are refused."),
        "themes": (themes, "Themes of the document library: communities of documents that cite each other or converge on the same targets (Leiden), with stable ids, size, cohesion, what members cite most, central documents and crossovers. Use it for common patterns across bulletins and recalls."),
        "theme_changes": (theme_changes, "How the themes changed run by run since a time: born, dissolved, split, merged, grew, shrank, and documents that moved."),
        "freshness": (freshness, "When the graph last applied a change from each source (documents, warehouse, glossary, query log) and how many events are still queued."),
    }


TOOL_FOR_SHAPE = {"tables": "table_context"}


class LakegraphMCP:
    """An MCPServer whose tool list follows `Shapes.available()`."""

    def __init__(self, shapes: Shapes) -> None:
        self.shapes = shapes
        self.bus = InMemorySubscriptionBus()
        self.server = MCPServer("lakegraph", instructions=INSTRUCTIONS, subscriptions=self.bus, middleware=[self._current_tools])
        self.functions = tool_functions(shapes)
        self.offered: set[str] = set()
        self.lock = threading.Lock()

    def wanted(self) -> set[str]:
        return {TOOL_FOR_SHAPE.get(shape, shape) for shape in self.shapes.available()} & set(self.functions)

    def sync_tools(self) -> bool:
        """Register what can answer now and drop what cannot; True when the list changed."""
        with self.lock:  # the periodic check and a client's request may both get here
            return self._sync_tools()

    def _sync_tools(self) -> bool:
        wanted = self.wanted()
        for name in sorted(self.offered - wanted):
            self.server.remove_tool(name)
        for name in sorted(wanted - self.offered):
            function, description = self.functions[name]
            self.server.add_tool(function, name=name, description=description, structured_output=False,
                                 annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
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
