"""Read-only Cypher for questions no shape anticipated, and the graph's schema to write it against.

A query is EXPLAINed first and refused unless the planner calls it read-only ("r"), it loads no
files (LOAD CSV), it stays on the configured database, and every procedure it calls is on a short
list of read procedures (GDS calls are refused: projecting a graph allocates server memory). It
then runs in a read transaction with a server-side time limit, and at most `max_rows` rows come
back. Errors are one line in Cypher's own words, never a stack trace. The check and the run are
shapes/access/cypher_runner.py, which alone imports the driver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from shapes.access.tabular import render_rows
from shapes.spec import Params, ShapeSpec, Words

MAX_QUERY = 5000


@dataclass(frozen=True)
class CypherResult:
    query: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    truncated: bool = False
    milliseconds: float = 0.0


def render(result: CypherResult) -> str:
    return render_rows(result.columns, result.rows, result.truncated, result.milliseconds)


class CypherParams(Params):
    query: Words = Field(description="One read-only Cypher query", max_length=MAX_QUERY)
    parameters: dict[str, Any] = Field({}, description="Query parameters ($name in the query), a JSON object")


SPEC = ShapeSpec(
    name="cypher",
    purpose="Read-only Cypher, in a read transaction with a time limit and a row cap.",
    guide="For questions no other shape answers; read schema first. Writes, admin procedures and LOAD CSV are refused.",
    params=CypherParams,
    output=CypherResult,
    capability="cypher",  # raw Cypher reads the whole graph: a grant that gives it gives everything
    scoped=True,
    run=lambda shapes, p, _grant: shapes.cypher(p.query, p.parameters, shapes.settings.shapes.cypher_max_rows, shapes.settings.shapes.cypher_timeout),
    render=render,
    rows=("rows",),
    arguments=("query",),
    method="POST",
)
