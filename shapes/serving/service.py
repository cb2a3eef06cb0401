"""The shapes as one service: what the CLI, the MCP server and the HTTP API all call.

`ask(name, **params)` runs any shape of the registry (`shapes/spec/registry.py`) with its parameters
checked by the shape's spec. Each call returns an `Answer` — the shape's typed result, how fresh the graph is, and both
renderings (text for agents and people, JSON-ready data). `available()` says which shapes make
sense right now (their indexes exist, their data or engine is there), which is how the MCP server
decides what tools to offer. Calls are counted and timed for /metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, make_dataclass, replace
from functools import cache, cached_property
from time import perf_counter
from typing import TYPE_CHECKING, Any, get_args

from shapes import freshness as freshness_shape
from shapes.access import scope
from shapes.access.reader import ReadDriver
from shapes.access.versioned import Versioned
from shapes.serving.identity import LOCAL, Caller
from shapes.serving.snapshots import Snapshots
from shapes.spec import Needs, Params, ShapeSpec, budget
from shapes.spec.budget import Page
from shapes.spec.exceptions import Denied, ShapeError
from shapes.spec.registry import SPECS, imported
from worker import problems
from worker.exceptions import LakegraphError
from worker.graph.schema import DOCUMENT_TEXT_INDEX, TABLE_TEXT_INDEX, Label
from worker.settings import Settings
from worker.shared.grants import Grant

if TYPE_CHECKING:
    from neo4j import Driver

    from shapes.access.cypher_runner import CypherShape
    from shapes.access.sql_runner import SqlRunner
    from shapes.bridge import BridgeShape
    from shapes.join_path import JoinPathShape
    from shapes.joins import JoinsShape
    from shapes.links import LinksShape
    from shapes.outline import OutlineShape
    from shapes.schema import GraphSchemaShape
    from shapes.serving.audit import Audit, Outcome
    from shapes.table_context import TableContextShape
    from shapes.themes import ThemesShape

ONLINE_INDEXES = "SHOW INDEXES YIELD name, state WHERE state = 'ONLINE' RETURN collect(name) AS names"
HAS_DATA = f"""
RETURN EXISTS {{ MATCH (:{Label.LIBRARY}) }} AS documents, EXISTS {{ MATCH (:{Label.TABLE}) }} AS tables,
       EXISTS {{ MATCH (:{Label.THEME_RUN}) }} AS themes, EXISTS {{ MATCH (:{Label.VALUE}) }} AS values
"""
log = logging.getLogger(__name__)
KEPT_GRANTS = 64  # grants whose tables are kept for one version of the warehouse
FEED = "feed"  # the surface of the change feed's re-reads: counted, not audited (the subscriptions they serve are)
PROBLEM_COUNTS = f"MATCH (p:{Label.PROBLEM}) RETURN p.kind AS kind, count(*) AS n"


@dataclass(frozen=True)
class Answer:
    shape: str
    result: Any
    page: Page
    freshness: freshness_shape.Freshness
    render: Callable[[Any], str]

    def text(self) -> str:
        return "\n\n".join(part for part in (self.render(self.result), render_page(self.page), freshness_shape.render(self.freshness)) if part)

    def data(self) -> dict:
        """The answer as `answer_type(spec)` declares it: the result's fields, its page, its freshness."""
        return {**asdict(self.result), "page": asdict(self.page), "freshness": asdict(self.freshness)}

    def json(self) -> str:
        """`data()` as JSON, its dataclasses read in place (`asdict` deep-copies every row: 10 ms
        for a table context with a few wide tables)."""
        return budget.printed({**vars(self.result), "page": self.page, "freshness": self.freshness})


@cache
def answer_type(spec: ShapeSpec) -> type:
    """The whole answer's type: the shape's result with the page it shows and how fresh the graph
    is. The MCP tool's outputSchema and the OpenAPI response are both read from it."""
    return make_dataclass(
        f"{spec.output.__name__}Answer",
        [("page", Page, field(kw_only=True)), ("freshness", freshness_shape.Freshness, field(kw_only=True))],
        bases=(spec.output,),
        frozen=True,
        namespace={"__module__": spec.output.__module__, "__doc__": f"The {spec.name} answer: {spec.purpose}"},
    )


def render_page(page: Page) -> str:
    """Nothing for a whole answer; otherwise what was shown of how much, and how to go on."""
    if page.overview:
        return f"overview: {page.total} rows summarised to fit {page.budget_tokens} tokens; drill into a URI, or walk every row with cursor={page.next_cursor}"
    if not page.truncated and not page.offset:
        return ""
    shown = f"rows {page.offset + 1}-{page.offset + page.shown} of {page.total}" if page.shown else f"no rows after {page.offset} of {page.total}"
    return f"{shown}; more: the same call with cursor={page.next_cursor}" if page.next_cursor else f"{shown} (the end)"


def _made_on_first_use(home: str) -> Any:
    """A shape's object (and its caches) for the service, `module:Class(driver, database)`, made
    the first time it is asked for, which is when its module is imported."""

    def make(service: Shapes) -> Any:
        return imported(home)(service.driver, service.database)

    return cached_property(make)


class Shapes:
    """`counted`: calls are counted for /metrics (shapes/serving/metrics.py). A one-shot command line call
    is not: nothing would read its counts, and prometheus_client costs its start about 45 ms.
    Each shape's object is made on first use: a command line call loads its own shape only."""

    join_paths: JoinPathShape = _made_on_first_use("shapes.join_path:JoinPathShape")
    schema: GraphSchemaShape = _made_on_first_use("shapes.schema:GraphSchemaShape")
    links: LinksShape = _made_on_first_use("shapes.links:LinksShape")
    themes: ThemesShape = _made_on_first_use("shapes.themes:ThemesShape")
    outlines: OutlineShape = _made_on_first_use("shapes.outline:OutlineShape")
    bridge: BridgeShape = _made_on_first_use("shapes.bridge:BridgeShape")
    joins: JoinsShape = _made_on_first_use("shapes.joins:JoinsShape")
    cypher: CypherShape = _made_on_first_use("shapes.access.cypher_runner:CypherShape")

    def __init__(self, settings: Settings, driver: Driver, database: str, counted: bool = True) -> None:
        self.settings = settings
        self.counted = counted
        self.driver: Driver = ReadDriver(driver)  # type: ignore[assignment]  # the part of Driver shapes use
        self.database = database
        self.probe = freshness_shape.FreshnessProbe(self.driver, database, settings)
        self.snapshots = Snapshots()
        self.tables_seen: Versioned[frozenset[str] | None] = Versioned(KEPT_GRANTS)
        self.audit: Audit | None = None  # set by `serve`: served calls are audited, a command line's are not

    @cached_property
    def sql_runner(self) -> SqlRunner:
        """Built on first use: it imports the warehouse engines' clients (sqlglot, DuckDB)."""
        from shapes.access.sql_runner import SqlRunner

        return SqlRunner(self.settings)

    @cached_property
    def table_context(self) -> TableContextShape:
        """Loading an embedding model is not free, and most calls need none."""
        from shapes.table_context import TableContextShape
        from worker.embedding.factory import embedder

        return TableContextShape(self.driver, self.database, embedder(self.settings))

    def granted_tables(self, grant: Grant) -> frozenset[str] | None:
        """The table ids the grant sees; None for every table. Kept per grant until the warehouse
        changes, as the call's reading stamps it: reading the ids, or even the warehouse's stamp
        on its own, would be most of what a grant costs run_sql."""
        if grant.everything:
            return None
        version = freshness_shape.versions(self.driver, self.database, "warehouse")
        return self.tables_seen.get(version, grant.key, lambda: scope.granted_tables(self.driver, self.database, grant))

    def ask(self, name: str, caller: Caller = LOCAL, surface: str = "cli", /, **raw: Any) -> Answer:
        """Shape `name` with parameters from any surface, checked by its spec's model, answered
        within the caller's grant (shapes/access/scope.py), its rows cut to the call's budget (or
        the overview the shape makes when a first page cannot hold it). The caller and surface are
        positional only: no parameter a client sends can stand in for them."""
        spec = SPECS[name]
        began = perf_counter()
        try:
            params = spec.validate(raw)
            scope.admit(spec, caller.grant)
            result, page, freshness = self._page(spec, params, caller.grant)
        except Denied as denied:
            self._ended(caller, surface, name, raw, began, "denied", str(denied))
            raise
        except ShapeError as refused:
            self._ended(caller, surface, name, raw, began, "refused", str(refused))
            raise
        except Exception as failed:
            self._ended(caller, surface, name, raw, began, "error", type(failed).__name__)
            raise
        self._ended(caller, surface, name, raw, began, "ok")
        return Answer(name, result, page, freshness, spec.render)

    def _ended(self, caller: Caller, surface: str, name: str, raw: dict[str, Any], began: float, outcome: Outcome, reason: str = "") -> None:
        """A call's outcome: counted for /metrics, and written to the access audit when served."""
        if self.counted:
            from shapes.serving.metrics import CALLS, LATENCY

            CALLS.labels(name, outcome).inc()
            LATENCY.labels(name).observe(perf_counter() - began)
        if self.audit is not None and surface != FEED:
            self.audit.record(caller, surface, name, outcome, reason, raw)

    def _page(self, spec: ShapeSpec, params: Params, grant: Grant) -> tuple[Any, Page, freshness_shape.Freshness]:
        call = params.model_dump()
        cursor: str | None = call["cursor"]  # the paging parameters every spec's model adds
        chars = (call["max_tokens"] or self.settings.shapes.answer_tokens) * budget.CHARS_PER_TOKEN
        call_key = budget.call_hash({**call, "grant": grant.key})  # another grant's cursor finds no snapshot of this one
        sid = budget.snapshot_of(cursor) if cursor else ""
        kept = self.snapshots.get(sid, call_key) if sid else None
        reading = self.probe()
        called = freshness_shape.CALL_READING.set(reading)
        try:
            whole = spec.run(self, params, grant) if kept is None else kept
        finally:
            freshness_shape.CALL_READING.reset(called)
        freshness = reading.within(grant)
        other = budget.size(freshness)

        def keep() -> str:
            return sid if kept is not None else self.snapshots.keep(call_key, whole)

        if spec.overview is not None and cursor is None and budget.size(whole) + other > chars:
            summary = spec.overview(whole, chars - other - budget.PAGE_RESERVE)
            if summary is not None:
                return summary, budget.overview_page(summary, spec.rows, call, chars, len(budget.Rows(whole, spec.rows)), keep), freshness
        room = chars
        while True:
            result, page = budget.paginate(whole, spec.rows, call, cursor, room, other, keep)
            text = len(Answer(spec.name, result, page, freshness, spec.render).text())
            if text <= chars or page.shown <= 1:  # the text as printed fits too (a single row is shown whatever it takes)
                return result, replace(page, budget_tokens=chars // budget.CHARS_PER_TOKEN), freshness
            room = room * chars // text - 1  # rows whose text runs longer than their JSON: fewer of them

    def available(self) -> set[str]:
        """The shapes that can answer right now: their index is online and their data is there."""
        indexes = set(self.driver.execute_query(ONLINE_INDEXES, database_=self.database).records[0]["names"])
        present = self.driver.execute_query(HAS_DATA, database_=self.database).records[0]
        holds: dict[Needs, bool] = {
            "graph": True,
            "documents": DOCUMENT_TEXT_INDEX in indexes and present["documents"],
            "themes": present["themes"],
            "tables": TABLE_TEXT_INDEX in indexes and present["tables"],
            "warehouse": self.warehouse_configured(),
            "values": present["values"],
        }
        found = {name for name, spec in SPECS.items() if holds[spec.needs]}
        from shapes.serving.metrics import TOOLS

        for name in SPECS:
            TOOLS.labels(name).set(1 if name in found else 0)
        return found

    def warehouse_configured(self) -> bool:
        if self.settings.warehouse.engine == "bigquery":
            return bool(self.settings.warehouse.bigquery_project)
        if self.settings.warehouse.engine in ("postgres", "mysql"):
            return bool(self.settings.warehouse.url.get_secret_value())
        return self.settings.duckdb_file.exists()

    def refresh_gauges(self) -> None:
        """Parked problems, source ages and backlogs, read just before /metrics is served. Problems
        held in Redis come first: they are the ones that exist while the graph is down."""
        from redis.exceptions import RedisError  # imported by the call, so importing the service stays light

        from shapes.serving.metrics import PROBLEMS, PROBLEMS_HELD, SOURCE_AGE, SOURCE_QUEUED
        from worker.runtime import redis_server

        try:
            PROBLEMS_HELD.set(len(problems.held(redis_server.broker_client(self.settings, timeout=0.5))))
        except (RedisError, LakegraphError):
            log.warning("held problems not counted: Redis is unreachable")
        self.driver.verify_connectivity()
        for source in self.probe().sources:
            if source.age_seconds is not None:
                SOURCE_AGE.labels(source.source).set(source.age_seconds)
            if source.queued is not None:
                SOURCE_QUEUED.labels(source.source).set(source.queued)
        counts = {row["kind"]: row["n"] for row in self.driver.execute_query(PROBLEM_COUNTS, database_=self.database).records}
        for kind in {*get_args(problems.Kind), *counts}:  # a kind whose problems were all replayed reads 0
            PROBLEMS.labels(kind).set(counts.get(kind, 0))
