"""The table context shape: which tables answer a question, with what an agent needs to query them.

Hybrid retrieval over the words each table is searched by (worker/warehouse/table_search.py: its
name and schema, its columns, their descriptions, its business terms, read as words and stemmed
by Lucene's English analyzer), business terms found by their own text, and vectors of the tables'
and terms' text (the model lakegraph ships; none with `embeddings.provider = "none"`), fused by
weighted reciprocal rank. The graph then takes part: the best tables bring the tables they join
by a declared key or a join learned from the query log (weighted by its confidence), so a
question naming two or three tables' concepts gets all of them; and how often analysts query a
table breaks near ties, never more. Each answer says what matched (a name, a column, a term) and
which tables came by a join, over which key.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import Field

from shapes.access.scope import visible_table
from shapes.spec import Params, ShapeSpec, Words
from shapes.spec.exceptions import NotFound, ShapeError
from worker.embedding.base import Embedder
from worker.graph.schema import (
    BUSINESS_TERM_INDEX,
    EMBEDDING_PROPERTY,
    TABLE_TEXT_INDEX,
    VECTOR_INDEXES,
    Label,
    Rel,
)
from worker.shared.grants import EVERYTHING, Grant
from worker.shared.words import meaningful, stem, words

if TYPE_CHECKING:
    from neo4j import Driver

CANDIDATES = 50  # each arm's depth: fused by rank, tables deep in two arms add up (20 measured 7 points worse at 5)
MAX_K = 50
MAX_QUESTION = 4000  # a question with its context pasted in; past it, a clear refusal
MAX_TABLE_ID = 1000
MAX_COLUMNS = 1000
# Words of a question sent to the index: each becomes one clause per field, within Lucene's limit.
MAX_WORDS = 64
# Within a grant each arm keeps its CANDIDATES best the grant sees. A term reaches several tables,
# so CANDIDATES terms mostly fill the term arm; the name arm reads from FIRST_DEPTH times as many
# hits; only when an arm comes back short do both read from GRANTED_DEPTH times as many. An arm
# that holds CANDIDATES tables the grant sees holds its best: any it missed ranks below them.
FIRST_DEPTH = 3
GRANTED_DEPTH = 10
# A table brought by a join scores at most this share of the table that brought it.
JOINED_BELOW = 0.99
# The arms that read the question's own words: between tables fused to the same score, the one
# these rank higher comes first (the vectors' nearness is the looser evidence; measured at k 1).
WORD_ARMS = ("text", "term")


@dataclass(frozen=True)
class Ranking:
    """How the arms are weighed: the defaults are the ones measured best on real questions
    (tests/benchmarks/table_retrieval.py, which tries the others beside them)."""

    rrf_k: int = 5  # sharp: an arm's first tables count far more than its tenth (60, the usual, measured worse)
    # Each arm's weight in the fused score, and each field's boost inside the text arm.
    arms: tuple[tuple[str, float], ...] = (("text", 1.0), ("term", 1.0), ("vector", 1.0), ("term-vector", 0.5))
    fields: tuple[tuple[str, float], ...] = (("search_name", 3.0), ("search_terms", 2.0), ("description", 1.0), ("search_columns", 1.0), ("search_notes", 0.5))
    # A table joined to one of the best gets this share of that table's score, times the join's
    # confidence, never rising above it: the better table brings the lesser.
    join_share: float = 0.5
    # A term is near a question from this vector score on (the index's (1 + cosine) / 2: cosine
    # 0.5): a glossary's few terms are all "nearest" to any question otherwise.
    term_floor: float = 0.75
    # At most this share of a table's score comes from how often it is queried (log-scaled to the most queried).
    usage_share: float = 0.02

    def weight(self, arm: str) -> float:
        return dict(self.arms).get(arm, 0.0)


DEFAULT_RANKING = Ranking()

# The two full-text arms in one round trip, each ranked best first: tables found through a term
# tagged on them or on one of their columns (with those terms), and by their own words.
BY_TEXT = f"""
CALL () {{
  CALL db.index.fulltext.queryNodes('{BUSINESS_TERM_INDEX}', $terms, {{limit: $term_limit}}) YIELD node AS term, score
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
WITH node, score ORDER BY score DESC, node.id LIMIT $keep
RETURN collect(node.id) AS ids
"""
# Within a grant the nearest tables are read among the granted ones alone (the index cannot
# filter; a narrow grant's tables may all lie past any depth of its nearest): exact, and cheap at
# catalogue size.
BY_TABLE_VECTOR_WITHIN = f"""
MATCH (node:{Label.TABLE}) WHERE {visible_table("node.id")}
WITH node, node.{EMBEDDING_PROPERTY} AS embedding WHERE embedding IS NOT NULL
WITH node, vector.similarity.cosine(embedding, $vector) AS score
ORDER BY score DESC, node.id LIMIT $keep
RETURN collect(node.id) AS ids
"""
BY_TERM_VECTOR = f"""
CALL db.index.vector.queryNodes('{VECTOR_INDEXES[Label.BUSINESS_TERM]}', $limit, $vector) YIELD node AS term, score
WHERE score >= $term_floor
MATCH (n)-[:{Rel.TAGGED_WITH}]->(term)
OPTIONAL MATCH (owner:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(n)
WITH coalesce(owner, n) AS table, max(score) AS score
WHERE {visible_table("table.id")}
WITH table, score ORDER BY score DESC, table.id LIMIT $keep
RETURN collect(table.id) AS ids
"""
# Both vector arms in one round trip: the nearest tables (through the index, or among the
# granted ones) and the tables of the nearest terms.
BY_VECTOR = """
CALL () {{ {tables} }}
WITH ids AS by_table
CALL () {{ {terms} }}
RETURN by_table, ids AS by_term
"""
BY_VECTOR_EVERYWHERE = BY_VECTOR.format(tables=BY_TABLE_VECTOR, terms=BY_TERM_VECTOR)
BY_VECTOR_WITHIN = BY_VECTOR.format(tables=BY_TABLE_VECTOR_WITHIN, terms=BY_TERM_VECTOR)
VECTOR_INDEX_ONLINE = "SHOW VECTOR INDEXES YIELD name, state WHERE name = $name AND state = 'ONLINE' RETURN count(*) AS n"
COLUMN_DETAILS = f"""{{
    name: c.name, type: c.type, nullable: c.nullable, primary_key: c.is_primary_key,
    description: c.description, terms: [(c)-[:{Rel.TAGGED_WITH}]->(ct:{Label.BUSINESS_TERM}) | ct.name]}}"""
# The columns past the first ones that the question matched, by table.
MATCHED_COLUMNS = f"""
UNWIND $wanted AS wanted
MATCH (:{Label.TABLE} {{id: wanted.table}})-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN}) WHERE c.name IN wanted.names
RETURN wanted.table AS table, collect({COLUMN_DETAILS}) AS columns
"""
# Each table with every column's name in table order, and the details of all its columns ($columns
# null) or of the first $columns and every key and join column. Which others the question matched
# is read from the names in Python (in Cypher, testing each name of a wide table costs 15 ms).
DETAILS_ROW = f"""
UNWIND $ids AS id
MATCH (t:{Label.TABLE} {{id: id}}) WHERE {visible_table("t.id")}
CALL (t) {{
  OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
  WITH c ORDER BY c.position
  WITH collect(c) AS ordered
  UNWIND range(0, size(ordered) - 1) AS i
  WITH i, ordered[i] AS c
  RETURN collect(c.name) AS names, collect(CASE WHEN $columns IS NULL OR i < $columns OR c.is_primary_key
    OR EXISTS {{ (c)-[:{Rel.REFERENCES}|{Rel.JOINS_WITH}]-() }} THEN {COLUMN_DETAILS} END) AS columns
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
WITH t, names, columns, declared, learned, collect(tt.name) AS terms
WITH {{id: t.id, name: t.name, kind: t.kind, description: t.description, family: t['family'], shards: t['shards'],  // by key: a graph with no family has no such key yet
       names: names, columns: columns, declared: [d IN declared WHERE d.other IS NOT NULL], learned: learned, terms: terms}} AS row
"""
DETAILS = DETAILS_ROW + "RETURN row"
# The graph's part, in one round trip: the tables the best ones join (by a declared key or a
# learned join, with the whole key of the best such edge), how often analysts query each
# candidate and each such table (the executions of the queries that use it), and the details of
# the tables likely to be answered ($ids: the best and those near them; a joined table that
# rises among the best is read after).
FROM_GRAPH = f"""
CALL () {{
  UNWIND $seeds AS seed
  MATCH (t:{Label.TABLE} {{id: seed}})-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})-[r:{Rel.REFERENCES}|{Rel.JOINS_WITH}]-(o:{Label.COLUMN})<-[:{Rel.HAS_COLUMN}]-(n:{Label.TABLE})
  WHERE n <> t AND {visible_table("n.id")}
  WITH seed, n, c, o, r, CASE type(r) WHEN '{Rel.REFERENCES}' THEN 1.0 ELSE coalesce(r.confidence, 0.0) END AS confidence,
       coalesce(r.constraint, elementId(r)) AS edge
  ORDER BY confidence DESC, edge, c.name
  WITH seed, n, edge, confidence, type(r) = '{Rel.REFERENCES}' AS declared, collect([c.name, o.name]) AS pairs
  ORDER BY confidence DESC, edge
  WITH seed, n, head(collect({{pairs: pairs, declared: declared, confidence: confidence}})) AS key
  RETURN collect({{seed: seed, id: n.id, key: key}}) AS neighbours
}}
CALL (neighbours) {{
  UNWIND $candidates + [x IN neighbours | x.id] AS id
  WITH DISTINCT id
  MATCH (t:{Label.TABLE} {{id: id}})
  OPTIONAL MATCH (q:{Label.QUERY})-[:{Rel.USES}]->(t)
  WITH id, coalesce(sum(q.executions), 0) AS executions
  RETURN collect([id, executions]) AS usage
}}
CALL () {{
  {DETAILS_ROW}
  RETURN collect(row) AS details
}}
RETURN neighbours, usage, details
"""


@dataclass(frozen=True)
class JoinedBy:
    """How a table came by a join: from which of the best tables, over which columns."""

    table: str
    on: str  # `work_orders.vin = vehicles.vin`
    declared: bool
    confidence: float


@dataclass(frozen=True)
class TableContext:
    id: str
    name: str
    kind: str
    description: str | None
    score: float
    found_by: list[str]  # which arms ranked it: text, term, vector, term-vector, join
    matched: list[str]  # what of it the question's words met: `name work orders`, `column vehicles.model`, `term comeback ratio`
    via_terms: list[str]
    terms: list[str]
    columns: list[dict]  # the first ones in table order, with the matched, key and join columns
    column_count: int  # the table's columns in all: `table` lists every one
    declared_joins: list[dict]
    learned_joins: list[dict]
    joined_by: JoinedBy | None = None
    family: str | None = None  # a date-sharded family's pattern (`...ga_sessions_*`), answered by its newest member
    shards: int | None = None


@dataclass(frozen=True)
class TablesResult:
    question: str
    arms: list[str]  # the arms that ran
    tables: list[TableContext] = field(default_factory=list)


def lucene_query(question_words: list[str], fields: tuple[tuple[str, float], ...]) -> str:
    """Each word on each field with its boost; the words are letters and digits only (lower-cased,
    so never an operator): nothing a question holds can break the query."""
    said = " ".join(question_words)
    return " ".join(f"{name}:({said})^{boost:g}" for name, boost in fields)


@lru_cache(maxsize=65_536)
def stems(text: str) -> frozenset[str]:
    """A name's stemmed words, kept: the same column names come back in answer after answer."""
    return frozenset(stem(word) for word in words(text))


def matched(question: str, table_name: str, columns: list[str], terms: list[str]) -> list[str]:
    """What of a table the question's words met (by the read side's `stem`): its name, its
    columns (most words met first, at most three) and its terms."""
    asked = {stem(word) for word in meaningful(question)}

    def met(text: str) -> int:
        return len(asked & stems(text))

    found = [f"name {' '.join(words(table_name))}"] if met(table_name) else []
    hits = sorted((-count, index) for index, column in enumerate(columns) if (count := met(column)))  # a wide table's thousand names: each met once
    found += [f"column {table_name}.{columns[index]}" for _, index in hits[:3]]
    found += [f"term {term}" for term in terms if met(term)]
    return found


def matched_later(row: Any, found: list[str]) -> list[str]:
    """The columns the question matched (in `found`) that DETAILS did not detail: past the first ones."""
    said = f"column {row['name']}."
    detailed = {column["name"] for column in row["columns"]}
    return [entry.removeprefix(said) for entry in found if entry.startswith(said) and entry.removeprefix(said) not in detailed]


def fuse(rankings: dict[str, list[str]], ranking: Ranking) -> tuple[dict[str, float], dict[str, list[str]], Callable[[str], tuple[float, int, str]]]:
    """Each table's score fused by reciprocal rank over the arms, the arms that found it, and the
    order of the best first: a tie goes to the table the question's own words rank higher."""
    fused: dict[str, float] = defaultdict(float)
    arms: dict[str, list[str]] = defaultdict(list)
    worded: dict[str, int] = {}  # each table's best rank in an arm of the question's own words
    for arm, ids in rankings.items():
        weight = ranking.weight(arm)
        for rank, table_id in enumerate(dict.fromkeys(ids)):
            fused[table_id] += weight / (ranking.rrf_k + rank + 1)
            arms[table_id].append(arm)
            if arm in WORD_ARMS:
                worded[table_id] = min(rank, worded.get(table_id, rank))

    def order(table_id: str) -> tuple[float, int, str]:
        return (-fused[table_id], worded.get(table_id, len(fused)), table_id)

    return fused, arms, order


def in_table_order(names: list[str], columns: list[dict]) -> list[dict]:
    at = {name: index for index, name in enumerate(names)}
    return sorted(columns, key=lambda column: at.get(column["name"], len(at)))


class TableContextShape:
    def __init__(self, driver: Driver, database: str, embedder: Embedder | None = None, ranking: Ranking = DEFAULT_RANKING) -> None:
        self.driver = driver
        self.database = database
        self.embedder = embedder
        self.ranking = ranking
        self._vectors_online = False

    def vectors_available(self) -> bool:
        """An embedder and its index online; once online it stays (a model change restarts the service)."""
        if self.embedder is None:
            return False
        if not self._vectors_online:
            rows = self.driver.execute_query(VECTOR_INDEX_ONLINE, name=VECTOR_INDEXES[Label.TABLE], database_=self.database).records
            self._vectors_online = rows[0]["n"] == 1
        return self._vectors_online

    def __call__(self, question: str, k: int = 5, partners: int = 8, grant: Grant = EVERYTHING, columns: int | None = None) -> TablesResult:
        """The k tables the grant sees that best answer `question`, each with its first `columns`
        columns (None: all) and those the question matched and its key and join columns.
        Within a grant the arms read deeper, so its k best are not crowded out by hidden tables."""
        if not question.strip():
            raise ShapeError("empty question: say what data you are looking for")
        if len(question) > MAX_QUESTION:
            raise ShapeError(f"question too long (at most {MAX_QUESTION} characters)")
        if not 1 <= k <= MAX_K:
            raise ShapeError(f"k must be between 1 and {MAX_K}, got {k}")
        rankings, via = self._rankings(question, k, grant)
        fused, arms, order = fuse(rankings, self.ranking)
        seeds = sorted(fused, key=order)[:k]
        # The tables how often they are queried may lift among the seeds: their details are read with the graph's part.
        least = fused[seeds[-1]] if seeds else 0.0
        near = [table_id for table_id in fused if table_id not in seeds and fused[table_id] * (1 + self.ranking.usage_share) >= least]
        read = {"partners": partners, "columns": columns, **grant.cypher()}
        graph = self._run(FROM_GRAPH, seeds=seeds, candidates=list(fused), ids=seeds + near, **read)[0]
        joined = self._joined(fused, graph["neighbours"])
        for table_id, (share, _) in joined.items():
            fused[table_id] += share
            arms[table_id].append("join")
        self._weigh_usage(fused, dict(graph["usage"]))
        best = sorted(fused, key=order)[:k]
        details = {row["id"]: row for row in graph["details"] if row["id"] in best}
        if missing := [table_id for table_id in best if table_id not in details]:  # brought by a join
            details |= {record["row"]["id"]: record["row"] for record in self._run(DETAILS, ids=missing, **read)}
        found = {table_id: matched(question, row["name"], row["names"], sorted(row["terms"])) for table_id, row in details.items()}
        later = {table_id: names for table_id, row in details.items() if (names := matched_later(row, found[table_id]))}
        more = (
            {row["table"]: row["columns"] for row in self._run(MATCHED_COLUMNS, wanted=[{"table": t, "names": n} for t, n in later.items()])} if later else {}
        )
        contexts = [
            self._context(
                table_id,
                row,
                round(fused[table_id], 5),
                arms[table_id],
                via.get(table_id, []),
                found[table_id],
                joined.get(table_id, (0.0, None))[1],
                more.get(table_id, []),
            )
            for table_id in best
            if (row := details.get(table_id)) is not None
        ]
        return TablesResult(question, [*rankings, *(["join"] if joined else [])], contexts)

    def _rankings(self, question: str, k: int, grant: Grant) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Each arm's tables, best first, and the terms each table was found through. The
        question is embedded while the full-text arms run (numpy and Bolt both let go of the GIL)."""
        keep = max(CANDIDATES, 2 * k)
        scope = {**grant.cypher(), "keep": keep}
        limit = keep if grant.everything else keep * FIRST_DEPTH
        with ThreadPoolExecutor(max_workers=1) as worker:
            text = worker.submit(self._text_arms, meaningful(question)[:MAX_WORDS], keep, limit, grant, scope)
            vector = self.embedder.embed_question(question) if self.vectors_available() and self.embedder is not None else None
            rankings, via = text.result()
        if vector is not None:
            query = BY_VECTOR_EVERYWHERE if grant.everything else BY_VECTOR_WITHIN
            found = self._run(query, vector=vector, limit=limit, term_floor=self.ranking.term_floor, **scope)[0]
            rankings["vector"], rankings["term-vector"] = found["by_table"], found["by_term"]
        return rankings, via

    def _text_arms(self, asked: list[str], keep: int, limit: int, grant: Grant, scope: dict) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """The full-text arms' tables and the terms each was found through; none for a question
        with no word of meaning (only stop words or punctuation)."""
        if not asked:
            return {}, {}
        lucene = lucene_query(asked, self.ranking.fields)
        terms = " ".join(asked)
        found = self._run(BY_TEXT, lucene=lucene, terms=terms, term_limit=keep, limit=limit, **scope)[0]
        if not grant.everything and min(len(found["by_term"]), len(found["by_table"])) < keep:
            limit = keep * GRANTED_DEPTH
            found = self._run(BY_TEXT, lucene=lucene, terms=terms, term_limit=limit, limit=limit, **scope)[0]
        return {"text": found["by_table"], "term": [row["id"] for row in found["by_term"]]}, {row["id"]: row["via"] for row in found["by_term"]}

    def _joined(self, fused: dict[str, float], neighbours: list[dict]) -> dict[str, tuple[float, JoinedBy]]:
        """The score each table gains from a join to a better one among the best (the best such
        join, its whole key), and that join. A table never rises above the one that brought it."""
        joined: dict[str, tuple[float, JoinedBy]] = {}
        for row in neighbours:
            seed, key, own = row["seed"], row["key"], fused.get(row["id"], 0.0)
            gain = min(fused[seed] * self.ranking.join_share * key["confidence"], fused[seed] * JOINED_BELOW - own)
            if gain > joined.get(row["id"], (0.0, None))[0]:
                seed_name, table_name = seed.rsplit(".", 1)[-1], row["id"].rsplit(".", 1)[-1]
                on = " AND ".join(f"{seed_name}.{column} = {table_name}.{other}" for column, other in key["pairs"])
                joined[row["id"]] = (gain, JoinedBy(seed, on, key["declared"], round(key["confidence"], 4)))
        return joined

    def _weigh_usage(self, fused: dict[str, float], usage: dict[str, int]) -> None:
        """Scale each score by up to `usage_share` for how often analysts query the table."""
        most = max((usage.get(table_id, 0) for table_id in fused), default=0)
        if most:
            for table_id in fused:
                fused[table_id] *= 1 + self.ranking.usage_share * math.log1p(usage.get(table_id, 0)) / math.log1p(most)

    @staticmethod
    def _context(
        table_id: str,
        row: Any,
        score: float,
        found_by: list[str],
        via: list[str],
        found: list[str] | None = None,
        joined: JoinedBy | None = None,
        more: list[dict] | None = None,
    ) -> TableContext:
        """`found`: what the question matched (None: no question); `more`: the matched columns
        past the first ones, read apart."""
        return TableContext(
            id=table_id,
            name=row["name"],
            kind=row["kind"],
            description=row["description"],
            score=score,
            found_by=found_by,
            matched=found or [],
            via_terms=via,
            terms=sorted(row["terms"]),
            columns=in_table_order(row["names"], row["columns"] + (more or [])),
            column_count=len(row["names"]),
            declared_joins=row["declared"],
            learned_joins=row["learned"],
            joined_by=joined,
            family=row["family"],
            shards=row["shards"],
        )

    def one(self, table_id: str, partners: int = 8, grant: Grant = EVERYTHING) -> TablesResult:
        """One table's context by its id (its resource, lakegraph://tables/<id>); a table outside
        the grant is not found, in the same words as one that does not exist."""
        found = self._run(DETAILS, ids=[table_id], partners=partners, columns=None, **grant.cypher())
        if not found:
            raise NotFound(f"no table {table_id!r}: table ids are as table_context and join_path give them")
        return TablesResult(table_id, ["id"], [self._context(table_id, found[0]["row"], 0.0, [], [])])

    def _run(self, query: str, **params: object) -> list:
        return self.driver.execute_query(query, params, database_=self.database).records


def render(result: TablesResult) -> str:
    by_id = result.arms == ["id"]  # one table asked for by its id: no ranking to report
    lines = [f"table {result.question}" if by_id else f"{len(result.tables)} tables for {result.question!r} (fused by rank from: {', '.join(result.arms)})"]
    for table in result.tables:
        found = ", ".join(table.found_by) + (f"; via term {', '.join(table.via_terms)}" if table.via_terms else "")
        lines.append(f"\n{table.id}  [{table.kind.lower()}]" + ("" if by_id else f"  score {table.score:.4f}  (found by {found})"))
        if table.family:
            lines.append(f"  one of {table.shards} date shards: query them as {table.family}")
        if table.matched:
            lines.append(f"  matched: {'; '.join(table.matched)}")
        if table.joined_by:
            how = "declared key" if table.joined_by.declared else f"learned join, confidence {table.joined_by.confidence:.2f}"
            lines.append(f"  joins {table.joined_by.table} on {table.joined_by.on}  ({how}: join_path gives the path)")
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
        if table.column_count > len(table.columns):
            hidden = table.column_count - len(table.columns)
            lines.append(f"  … {hidden} more column{'s' if hidden > 1 else ''} (table {table.id} lists them all)")
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
    question: Words = Field(
        description="What data you need, in your own words — a full sentence works: 'how many work orders per vehicle model'", max_length=MAX_QUESTION
    )
    k: int = Field(5, ge=1, le=MAX_K, description="Tables to return")
    columns: int = Field(
        30, ge=1, le=MAX_COLUMNS, description="Columns shown per table: the first ones in table order, and every one the question matched or a key uses"
    )


class TableParams(Params):
    table: Words = Field(description="A table's id as table_context, join_path or joins gave it: warehouse.service.work_orders", max_length=MAX_TABLE_ID)


SPEC = ShapeSpec(
    name="table_context",
    purpose="The warehouse tables that answer a question asked in plain words, with columns, keys, real join partners and tagged terms.",
    guide=(
        "Ask as you would ask an analyst (a full sentence works). Tables are found by their names, columns, descriptions, "
        "business terms and vectors, fused by rank, plus the tables the best ones join; each says what matched and which "
        "came by a join, over which key. Then join_path and run_sql."
    ),
    params=TableContextParams,
    output=TablesResult,
    refers={"id": "table"},
    run=lambda shapes, p, grant: shapes.table_context(p.question, p.k, grant=grant, columns=p.columns),
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
