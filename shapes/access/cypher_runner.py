"""The cypher shape's runner: the planner's read-only check, then the query in a read transaction
(shapes/cypher.py says what is refused)."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from datetime import date, datetime, time
from time import perf_counter
from typing import TYPE_CHECKING, Any

from neo4j import READ_ACCESS, Query, unit_of_work
from neo4j.exceptions import Neo4jError
from neo4j.graph import Node, Path, Relationship
from neo4j.time import Date, DateTime, Duration, Time

from shapes.cypher import MAX_QUERY, CypherResult
from shapes.spec.exceptions import ShapeError

if TYPE_CHECKING:
    from neo4j import Driver, ManagedTransaction

PASSED_KEPT = 256  # query texts remembered as passing the read-only check
READ_PROCEDURES = frozenset(
    {
        "db.labels",
        "db.relationshipTypes",
        "db.propertyKeys",
        "db.schema.nodeTypeProperties",
        "db.schema.relTypeProperties",
        "db.schema.visualization",
        "db.index.fulltext.queryNodes",
        "db.index.fulltext.queryRelationships",
        "db.index.vector.queryNodes",
        "db.index.vector.queryRelationships",
    }
)
_PROCEDURE = re.compile(r"^([\w.]+)\(")


def _operators(plan: dict) -> list[tuple[str, str]]:
    found = [(plan.get("operatorType", ""), str(plan.get("args", {}).get("Details", "")))]
    for child in plan.get("children", []):
        found += _operators(child)
    return found


def check_read_only(driver: Driver, database: str, query: str) -> None:
    """Refuse anything the planner does not call a plain read of this database."""
    if not query.strip():
        raise ShapeError("empty query")
    if len(query) > MAX_QUERY:
        raise ShapeError(f"query too long (at most {MAX_QUERY} characters)")
    try:
        with driver.session(database=database, default_access_mode=READ_ACCESS) as session:
            summary = session.run(Query(f"EXPLAIN {query}", timeout=5)).consume()
    except Neo4jError as err:
        raise ShapeError(f"refused: {_message(err)}") from None
    if summary.query_type != "r":
        kinds = {"rw": "it writes", "w": "it writes", "s": "it changes the schema or administers the server"}
        raise ShapeError(f"refused: read-only Cypher only ({kinds.get(summary.query_type or '', 'not a plain read')})")
    for operator, details in _operators(summary.plan or {}):
        name, _, where = operator.partition("@")
        if where and where != database:
            raise ShapeError(f"refused: the query must stay on database {database!r}")
        if name == "LoadCSV":
            raise ShapeError("refused: LOAD CSV reads files or URLs")
        if name == "ProcedureCall":
            match = _PROCEDURE.match(details)
            procedure = match.group(1) if match else details
            if procedure not in READ_PROCEDURES:
                raise ShapeError(f"refused: procedure {procedure} is not allowed (allowed: {', '.join(sorted(READ_PROCEDURES))})")


class CypherShape:
    """Read-only Cypher; a query text the planner passed as a plain read is not planned again
    (agents repeat one query with new parameters; the check depends on the text alone)."""

    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database
        self._passed: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, query: str, parameters: dict, max_rows: int, timeout: float) -> CypherResult:
        with self._lock:
            known = query in self._passed
        if not known:
            check_read_only(self.driver, self.database, query)
            with self._lock:
                self._passed[query] = None
                while len(self._passed) > PASSED_KEPT:
                    self._passed.popitem(last=False)
        return run_cypher(self.driver, self.database, query, parameters, max_rows, timeout)


def run_cypher(driver: Driver, database: str, query: str, parameters: dict, max_rows: int, timeout: float) -> CypherResult:
    """Run a query `check_read_only` passed, in a read transaction with a time limit and a row cap."""

    @unit_of_work(timeout=timeout)
    def read(tx: ManagedTransaction) -> tuple[list[str], list[list[Any]], bool]:
        result = tx.run(query, parameters)
        rows: list[list[Any]] = []
        truncated = False
        for record in result:
            if len(rows) == max_rows:
                truncated = True
                break
            rows.append([_plain(value) for value in record.values()])
        return list(result.keys()), rows, truncated

    began = perf_counter()
    try:
        with driver.session(database=database, default_access_mode=READ_ACCESS) as session:
            columns, rows, truncated = session.execute_read(read)
    except Neo4jError as err:
        raise ShapeError(_message(err)) from None
    return CypherResult(query, columns, rows, truncated, round((perf_counter() - began) * 1000, 1))


def _message(err: Neo4jError) -> str:
    text = (err.message or str(err)).strip().splitlines()[0]
    if "TransactionTimedOut" in (err.code or ""):
        return f"time limit reached: {text}"
    return text


def _plain(value: Any) -> Any:
    """JSON-safe values: nodes and relationships as their properties with labels or type."""
    if isinstance(value, Node):
        return {"labels": sorted(value.labels), **{key: _plain(item) for key, item in value.items()}}
    if isinstance(value, Relationship):
        return {"type": value.type, **{key: _plain(item) for key, item in value.items()}}
    if isinstance(value, Path):
        return [_plain(node) for node in value.nodes]
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, DateTime | Date | Time | datetime | date | time):
        return value.isoformat()
    if isinstance(value, Duration):
        return str(value)
    return value
