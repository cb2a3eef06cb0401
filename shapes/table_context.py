"""The table context shape: which tables answer a question, with what an agent needs to query them.

Hybrid retrieval, fused by reciprocal rank (RRF, k=60): full-text over business terms (a table
is found through a term tagged on it or on one of its columns, even when its own name shares no
word with the question), full-text over table names and descriptions, and — when an embedder is
configured — vector search over table and term embeddings. Each returned table carries its
columns, keys, declared and learned join partners, and tagged terms.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from shapes.access.scope import visible_table
from shapes.search import escape
from shapes.spec import Params, ShapeSpec, Words
from shapes.spec.exceptions import NotFound, ShapeError
from worker.embedding.base import Embedder
from worker.graph.schema import (
    BUSINESS_TERM_INDEX,
    TABLE_TEXT_INDEX,
    VECTOR_INDEXES,
    Label,
    Rel,
)
from worker.shared.grants import EVERYTHING, Grant

if TYPE_CHECKING:
    from neo4j import Driver

RRF_K = 60
CANDIDATES = 20
MAX_K = 50
MAX_QUESTION = 1000
# Within a grant each arm keeps its CANDIDATES best the grant sees. A term reaches several tables,
# so CANDIDATES terms mostly fill the term arm; the name arm reads from FIRST_DEPTH times as many
# hits; only when an arm comes back short do both read from GRANTED_DEPTH times as many. An arm
# that holds CANDIDATES tables the grant sees holds its best: any it missed ranks below them.
FIRST_DEPTH = 3
GRANTED_DEPTH = 10

# The two full-text arms in one round trip, each ranked best first: tables found through a term
# tagged on them or on one of their columns (with those terms), and by their own name and text.
BY_TEXT = f"""
CALL () {{
  CALL db.index.fulltext.queryNodes('{BUSINESS_TERM_INDEX}', $lucene, {{limit: $term_limit}}) YIELD node AS term, score
  MATCH (n)-[:{Rel.TAGGED_WITH}]->(term)
  OPTIONAL MATCH (owner:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(n)
  WITH coalesce(owner, n) AS table, max(score) AS score, collect(DISTINCT term.name) AS via
  WHERE {visible_table("table.id")}
  WITH table, via ORDER BY score DESC, table.id LIMIT $keep
  RETURN collect({{id: table.id, via: via}}) AS by_term
}}
CALL () {{
  CALL db.index.fulltext.queryNodes('{TABLE_TEXT_INDEX}', $lucene, {{limit: $limit}}) YIELD node, score
  WHERE {visible_table("node.id")}
  WITH node ORDER BY score DESC, node.id LIMIT $keep
  RETURN collect(node.id) AS by_table
}}
RETURN by_term, by_table
"""
BY_TABLE_VECTOR = f"""
CALL db.index.vector.queryNodes('{VECTOR_INDEXES[Label.TABLE]}', $limit, $vector) YIELD node, score
WHERE {visible_table("node.id")}
RETURN node.id AS id, score ORDER BY score DESC, id LIMIT $keep
"""
BY_TERM_VECTOR = f"""
CALL db.index.vector.queryNodes('{VECTOR_INDEXES[Label.BUSINESS_TERM]}', $limit, $vector) YIELD node AS term, score
MATCH (n)-[:{Rel.TAGGED_WITH}]->(term)
OPTIONAL MATCH (owner:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(n)
WITH coalesce(owner, n) AS table, max(score) AS score
WHERE {visible_table("table.id")}
RETURN table.id AS id, score ORDER BY score DESC, id LIMIT $keep
"""
VECTOR_INDEX_ONLINE = "SHOW VECTOR INDEXES YIELD name, state WHERE name = $name AND state = 'ONLINE' RETURN count(*) AS n"
DETAILS = f"""
UNWIND $ids AS id
MATCH (t:{Label.TABLE} {{id: id}}) WHERE {visible_table("t.id")}
CALL (t) {{
  OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
  OPTIONAL MATCH (c)-[:{Rel.TAGGED_WITH}]->(ct:{Label.BUSINESS_TERM})
  WITH c, collect(ct.name) AS terms ORDER BY c.position
  RETURN collect(CASE WHEN c IS NULL THEN null ELSE {{
    name: c.name, type: c.type, nullable: c.nullable, primary_key: c.is_primary_key,
    description: c.description, terms: terms}} END) AS columns
}}
CALL (t) {{
  OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})-[k:{Rel.REFERENCES}]-(o:{Label.COLUMN}) WHERE {visible_table("o.table")}
  RETURN collect(DISTINCT {{
    column: c.name, other: o.id, direction: CASE WHEN startNode(k) = c THEN 'out' ELSE 'in' END,
    constraint: k.constraint}}) AS declared
}}
CALL (t) {{
  OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})-[j:{Rel.JOINS_WITH}]-(o:{Label.COLUMN}) WHERE {visible_table("o.table")}
  WITH c, o, j ORDER BY j.confidence DESC LIMIT $partners
  RETURN collect(CASE WHEN j IS NULL THEN null ELSE {{
    column: c.name, other: o.id, confidence: j.confidence, executions: j.executions,
    queries: j.distinct_queries, declared: j.declared}} END) AS learned
}}
OPTIONAL MATCH (t)-[:{Rel.TAGGED_WITH}]->(tt:{Label.BUSINESS_TERM})
RETURN t.id AS id, t.name AS name, t.kind AS kind, t.description AS description, columns,
       [d IN declared WHERE d.other IS NOT NULL] AS declared, learned, collect(tt.name) AS terms
"""


@dataclass(frozen=True)
class TableContext:
    id: str
    name: str
    kind: str
    description: str | None
    score: float
    found_by: list[str]  # which retrieval arms ranked it: term, text, vector
    via_terms: list[str]
    terms: list[str]
    columns: list[dict]
    declared_joins: list[dict]
    learned_joins: list[dict]


@dataclass(frozen=True)
class TablesResult:
    question: str
    arms: list[str]  # the arms that ran
    tables: list[TableContext] = field(default_factory=list)


class TableContextShape:
    def __init__(self, driver: Driver, database: str, embedder: Embedder | None = None) -> None:
        self.driver = driver
        self.database = database
        self.embedder = embedder

    def vectors_available(self) -> bool:
        if self.embedder is None:
            return False
        rows = self.driver.execute_query(VECTOR_INDEX_ONLINE, name=VECTOR_INDEXES[Label.TABLE], database_=self.database).records
        return rows[0]["n"] == 1

    def __call__(self, question: str, k: int = 5, partners: int = 8, grant: Grant = EVERYTHING) -> TablesResult:
        """The k tables the grant sees that best answer `question`.
        Within a grant the arms read deeper, so its k best are not crowded out by hidden tables."""
        if not question.strip():
            raise ShapeError("empty question: say what data you are looking for")
        if len(question) > MAX_QUESTION:
            raise ShapeError(f"question too long (at most {MAX_QUESTION} characters)")
        if not 1 <= k <= MAX_K:
            raise ShapeError(f"k must be between 1 and {MAX_K}, got {k}")
        lucene = " OR ".join(escape(word) for word in question.split())
        rankings: dict[str, list[str]] = {}
        scope, limit = {**grant.cypher(), "keep": CANDIDATES}, CANDIDATES if grant.everything else CANDIDATES * FIRST_DEPTH
        found = self._run(BY_TEXT, lucene=lucene, term_limit=CANDIDATES, limit=limit, **scope)[0]
        if not grant.everything and min(len(found["by_term"]), len(found["by_table"])) < CANDIDATES:
            limit = CANDIDATES * GRANTED_DEPTH
            found = self._run(BY_TEXT, lucene=lucene, term_limit=limit, limit=limit, **scope)[0]
        rankings["term"] = [row["id"] for row in found["by_term"]]
        via = {row["id"]: row["via"] for row in found["by_term"]}
        rankings["text"] = found["by_table"]
        if self.vectors_available():
            assert self.embedder is not None
            vector = self.embedder.embed([question])[0]
            rankings["vector"] = [row["id"] for row in self._run(BY_TABLE_VECTOR, vector=vector, limit=limit, **scope)]
            rankings["term-vector"] = [row["id"] for row in self._run(BY_TERM_VECTOR, vector=vector, limit=limit, **scope)]
        fused: dict[str, float] = defaultdict(float)
        arms: dict[str, list[str]] = defaultdict(list)
        for arm, ids in rankings.items():
            for rank, table_id in enumerate(dict.fromkeys(ids)):
                fused[table_id] += 1.0 / (RRF_K + rank + 1)
                arms[table_id].append(arm)
        best = sorted(fused, key=lambda table_id: (-fused[table_id], table_id))[:k]
        details = {row["id"]: row for row in self._run(DETAILS, ids=best, partners=partners, **scope)}
        contexts = [
            self._context(table_id, row, round(fused[table_id], 5), arms[table_id], via.get(table_id, []))
            for table_id in best
            if (row := details.get(table_id)) is not None
        ]
        return TablesResult(question, list(rankings), contexts)

    @staticmethod
    def _context(table_id: str, row: Any, score: float, found_by: list[str], via: list[str]) -> TableContext:
        return TableContext(
            id=table_id,
            name=row["name"],
            kind=row["kind"],
            description=row["description"],
            score=score,
            found_by=found_by,
            via_terms=via,
            terms=sorted(row["terms"]),
            columns=row["columns"],
            declared_joins=row["declared"],
            learned_joins=row["learned"],
        )

    def one(self, table_id: str, partners: int = 8, grant: Grant = EVERYTHING) -> TablesResult:
        """One table's context by its id (its resource, lakegraph://tables/<id>); a table outside
        the grant is not found, in the same words as one that does not exist."""
        found = self._run(DETAILS, ids=[table_id], partners=partners, **grant.cypher())
        if not found:
            raise NotFound(f"no table {table_id!r}: table ids are as table_context and join_path give them")
        return TablesResult(table_id, ["id"], [self._context(table_id, found[0], 0.0, [], [])])

    def _run(self, query: str, **params: object) -> list:
        return self.driver.execute_query(query, params, database_=self.database).records


def render(result: TablesResult) -> str:
    by_id = result.arms == ["id"]  # one table asked for by its id: no ranking to report
    lines = [f"table {result.question}" if by_id else f"{len(result.tables)} tables for {result.question!r} (fused by rank from: {', '.join(result.arms)})"]
    for table in result.tables:
        found = ", ".join(table.found_by) + (f"; via term {', '.join(table.via_terms)}" if table.via_terms else "")
        lines.append(f"\n{table.id}  [{table.kind.lower()}]" + ("" if by_id else f"  score {table.score:.4f}  (found by {found})"))
        if table.description:
            lines.append(f"  {table.description}")
        if table.terms:
            lines.append(f"  terms: {', '.join(table.terms)}")
        for column in table.columns:
            flags = [flag for flag, on in (("PK", column["primary_key"]), ("not null", column["nullable"] is False)) if on]
            extra = f"  ({', '.join(flags)})" if flags else ""
            note = f"  — {column['description']}" if column["description"] else ""
            terms = f"  [{', '.join(column['terms'])}]" if column["terms"] else ""
            lines.append(f"  {column['name']:<24} {column['type'] or '?':<12}{extra}{note}{terms}")
        for join in table.declared_joins:
            arrow = "→" if join["direction"] == "out" else "←"
            lines.append(f"  key  {join['column']} {arrow} {join['other']}  ({join['constraint']})")
        for join in table.learned_joins:
            lines.append(
                f"  join {join['column']} = {join['other']}  confidence {join['confidence']:.2f}, "
                f"{join['executions']} executions in {join['queries']} queries" + (" [declared]" if join["declared"] else "")
            )
    return "\n".join(lines)


class TableContextParams(Params):
    question: Words = Field(description="What data you need, in words: 'comeback ratio by model'", max_length=MAX_QUESTION)
    k: int = Field(5, ge=1, le=MAX_K, description="Tables to return")


class TableParams(Params):
    table: Words = Field(description="A table's id as table_context, join_path or joins gave it: warehouse.service.work_orders", max_length=MAX_QUESTION)


SPEC = ShapeSpec(
    name="table_context",
    purpose="The warehouse tables that answer a question, with columns, keys, real join partners and tagged terms.",
    guide="Business terms, names and descriptions, and vectors when configured, fused by rank; then join_path and run_sql.",
    params=TableContextParams,
    output=TablesResult,
    refers={"id": "table"},
    run=lambda shapes, p, grant: shapes.table_context(p.question, p.k, grant=grant),
    render=render,
    rows=("tables",),
    needs="tables",
    arguments=("question",),
    scoped=True,
)

TABLE_SPEC = ShapeSpec(
    name="table",
    purpose="One warehouse table by its id: columns, keys, real join partners and tagged terms.",
    guide="For a table an earlier answer named (its resource, lakegraph://tables/<id>, can be watched); to find tables, table_context.",
    params=TableParams,
    output=TablesResult,
    refers={"id": "table"},
    run=lambda shapes, p, grant: shapes.table_context.one(p.table, grant=grant),
    render=render,
    rows=("tables",),
    needs="tables",
    arguments=("table",),
    scoped=True,
)
