"""Question → tables on real questions: Spider 2.0-lite's, over its BigQuery, Snowflake and SQLite catalogues.

    python -m tests.benchmarks.table_retrieval                       # every engine, every arm setting
    python -m tests.benchmarks.table_retrieval --engines sqlite --state /tmp/spider-state   # keep the store for a re-run

Each engine's databases are pooled into one warehouse in the graph (5,497 BigQuery, 2,326
Snowflake and 432 SQLite tables, with every column and its description), written by the
metadata writer and made searchable by the same refresh a sync runs (timed: words, then vectors).
The questions with gold SQL (256 of 547) are asked of `table_context` as they are written: once
over the whole pool of their engine, once within their own database (a grant on its datasets).
Their gold tables come from the gold SQL through sqlglot in its own dialect, CTEs left out; a
wildcard or date-sharded family (`ga_sessions_*`) counts as one table, and so does every
member of it in an answer.

Scored at k = 1, 3, 5, 10: complete recall (every gold table in the top k) and table recall
(the share of gold tables in the top k), for lakegraph at its defaults, with vectors off, and
for two BM25 baselines computed in the same run over each table's name, column names and column
descriptions: plain (lower-cased `\\w+` tokens: `work_orders` is one word) and with identifiers
split as lakegraph splits them. Ratios are against the plain baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import httpx2
import sqlglot
from sqlglot import exp

from shapes.table_context import DEFAULT_RANKING, SPEC, Ranking, TableContextShape
from tests.benchmarks.stats import percentile
from tests.corpora import spider2_table_id, unpack_spider2_lite
from tests.helpers import LAKEGRAPH
from worker.embedding.factory import embedder
from worker.graph.connection import connect
from worker.graph.setup import apply_schema
from worker.runtime import neo4j_server
from worker.runtime.neo4j_server import LocalNeo4j
from worker.runtime.processes import stop_pid
from worker.settings import Settings, load_settings
from worker.shared.grants import EVERYTHING, Grant
from worker.shared.words import family, words
from worker.warehouse.schema_snapshot import ColumnInfo, Snapshot, TableInfo
from worker.warehouse.table_search import TableSearchRefresher
from worker.warehouse.writer import MetadataWriter

ENGINES = ("bigquery", "snowflake", "sqlite")
DIALECTS = {"bigquery": "bigquery", "snowflake": "snowflake", "sqlite": "sqlite"}
KS = (1, 3, 5, 10)
WIPE_BATCH = "MATCH (n) WITH n LIMIT 20000 DETACH DELETE n RETURN count(*) AS n"


@dataclass(frozen=True)
class Question:
    id: str
    engine: str
    database: str
    text: str
    gold: frozenset[str]  # family keys, lower-cased


@dataclass
class Catalogue:
    """One engine's pool: its tables by database, as graph ids."""

    engine: str
    tables: dict[str, list[dict]]  # spider database → tables ({"id", "columns"})

    def ids(self, database: str) -> list[str]:
        return [table["id"] for table in self.tables[database]]


def catalogues(root: Path) -> dict[str, Catalogue]:
    found = {}
    for engine in ENGINES:
        databases = json.loads((root / "schemas" / f"{engine}.json").read_text())
        found[engine] = Catalogue(
            engine,
            {
                name: [{"id": spider2_table_id(engine, name, table["table"]), "columns": table["columns"]} for table in tables]
                for name, tables in databases.items()
            },
        )
    return found


def gold_tables(sql: str, dialect: str, known: dict[str, str]) -> tuple[set[str], int]:
    """The family keys of the tables `sql` reads (its CTEs left out), resolved against `known`
    (every dotted suffix of a table id, lower-cased → its family key); and how many it names that
    match nothing."""
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except sqlglot.errors.ParseError:
        statements = []
    names: set[str] = set()
    for statement in statements:
        if statement is None:
            continue
        ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
        for table in statement.find_all(exp.Table):
            parts = [part for part in (table.catalog, table.db, table.name) if part]
            if len(parts) == 1 and parts[0].lower() in ctes:
                continue
            names.add(".".join(parts).lower())
    if not statements:  # unparsable: the names after FROM and JOIN
        names = {name.strip('`"').lower() for name in re.findall(r"(?:from|join)\s+([`\"\w.\-*]+)", sql, flags=re.IGNORECASE)}
    resolved = {known[family(name)] for name in names if family(name) in known}
    resolved |= {known[name] for name in names if name in known}
    return resolved, sum(1 for name in names if name not in known and family(name) not in known)


def suffixes(table_id: str) -> list[str]:
    parts = table_id.lower().split(".")
    return [".".join(parts[index:]) for index in range(len(parts))]


def questions(root: Path, pools: dict[str, Catalogue]) -> tuple[list[Question], Counter]:
    engine_of = {database: engine for engine, pool in pools.items() for database in pool.tables}
    unresolved: Counter = Counter()
    found = []
    for line in (root / "questions.jsonl").read_text().splitlines():
        item = json.loads(line)
        gold_file = root / "gold-sql" / f"{item['instance_id']}.sql"
        if not gold_file.is_file() or item["db"] not in engine_of:
            continue
        engine = engine_of[item["db"]]
        known = {}
        for table_id in pools[engine].ids(item["db"]):
            for suffix in suffixes(table_id):
                known.setdefault(suffix, family(table_id).lower())
                known.setdefault(family(suffix), family(table_id).lower())
        gold, missing = gold_tables(gold_file.read_text(), DIALECTS[engine], known)
        unresolved[engine] += missing
        if gold:
            found.append(Question(item["instance_id"], engine, item["db"], item["question"], frozenset(gold)))
    return found, unresolved


def snapshots(pool: Catalogue) -> list[Snapshot]:
    """The pool as the metadata writer takes it: one snapshot per schema, each table once."""
    schemas: dict[tuple[str, str], dict[str, TableInfo]] = defaultdict(dict)
    for tables in pool.tables.values():
        for table in tables:
            database, schema, name = table["id"].rsplit(".", 2)
            seen: set[str] = set()
            columns = []
            for column in table["columns"]:
                if column["name"].lower() in seen:
                    continue
                seen.add(column["name"].lower())
                columns.append(ColumnInfo(column["name"], column.get("type") or "", len(columns) + 1, True, column.get("description") or None))
            schemas[(database, schema)][name] = TableInfo(database, schema, name, "TABLE", None, None, tuple(columns))
    return [Snapshot(database, schema, tuple(tables.values())) for (database, schema), tables in sorted(schemas.items())]


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75) over each table's name, column names and descriptions."""

    def __init__(self, documents: dict[str, list[str]]) -> None:
        self.postings: dict[str, list[tuple[str, int]]] = defaultdict(list)
        self.length = {doc: len(tokens) for doc, tokens in documents.items()}
        self.average = sum(self.length.values()) / max(1, len(self.length))
        for doc, tokens in documents.items():
            for token, count in Counter(tokens).items():
                self.postings[token].append((doc, count))
        self.total = len(documents)

    def rank(self, tokens: list[str], allowed: set[str] | None = None) -> list[str]:
        scores: dict[str, float] = defaultdict(float)
        for token in set(tokens):
            posting = self.postings.get(token, [])
            idf = math.log(1 + (self.total - len(posting) + 0.5) / (len(posting) + 0.5))
            for doc, count in posting:
                if allowed is None or doc in allowed:
                    scores[doc] += idf * count * 2.2 / (count + 1.2 * (0.25 + 0.75 * self.length[doc] / self.average))
        return sorted(scores, key=lambda doc: (-scores[doc], doc))


def plain_tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def bm25_documents(pool: Catalogue, tokens: Callable[[str], list[str]]) -> dict[str, list[str]]:
    documents = {}
    for tables in pool.tables.values():
        for table in tables:
            text = " ".join([table["id"].rsplit(".", 1)[-1], *(f"{column['name']} {column.get('description') or ''}" for column in table["columns"])])
            documents[table["id"]] = tokens(text)
    return documents


@dataclass
class Scores:
    complete: dict[int, int]
    share: dict[int, float]
    empty: int = 0
    count: int = 0

    @classmethod
    def new(cls) -> Scores:
        return cls(dict.fromkeys(KS, 0), dict.fromkeys(KS, 0.0))

    def add(self, ranked: list[str], gold: frozenset[str]) -> None:
        families = list(dict.fromkeys(family(table_id).lower() for table_id in ranked))
        self.count += 1
        self.empty += not families
        for k in KS:
            top = set(families[:k])
            self.complete[k] += gold <= top
            self.share[k] += len(gold & top) / len(gold)

    def row(self, name: str, base: Scores | None) -> str:
        cells = "".join(f"{100 * self.complete[k] / self.count:>7.1f}" for k in KS) + "  |" + "".join(f"{100 * self.share[k] / self.count:>7.1f}" for k in KS)
        ratio = ""
        if base is not None and base.complete[5]:
            ratio = f"   x{self.complete[5] / base.complete[5]:.2f} complete@5"
        return f"  {name:<26}{cells}  {self.empty:>5}{ratio}"


def within(pool: Catalogue, database: str) -> Grant:
    """A grant on the datasets (schemas) of one database's tables."""
    patterns = sorted({table_id.rsplit(".", 1)[0] + ".*" for table_id in pool.ids(database)})
    return Grant((database,), (), tuple(patterns))


def load(pool: Catalogue, driver, database: str, refresher: TableSearchRefresher, kept: bool) -> None:
    """The pool into an empty store (`kept`: the store holds it already), then its search text and vectors."""
    parts = snapshots(pool)
    began = time.monotonic()
    if not kept:
        while driver.execute_query(WIPE_BATCH, database_=database).records[0]["n"]:
            pass
        writer = MetadataWriter(driver, database)
        for snapshot in parts:
            writer.apply(snapshot)
    written = time.monotonic()
    embedder, refresher.embedder = refresher.embedder, None
    refresher.refresh()
    worded = time.monotonic()
    refresher.embedder = embedder
    report = refresher.refresh()
    done = time.monotonic()
    tables = sum(len(snapshot.tables) for snapshot in parts)
    columns = sum(len(table.columns) for snapshot in parts for table in snapshot.tables)
    print(
        f"{pool.engine}: {tables} tables, {columns} columns in {len(parts)} schemas written in {written - began:.0f} s; "
        f"search words in {worded - written:.0f} s; {report.embedded} vectors in {done - worded:.0f} s"
    )


def evaluate(engine: str, pool: Catalogue, asked: list[Question], systems: dict[str, Callable[[Question, Grant | None], list[str]]]) -> None:
    for scope in ("pooled", "within"):
        results = {name: Scores.new() for name in systems}
        times: dict[str, list[float]] = defaultdict(list)
        for question in asked:
            grant = within(pool, question.database) if scope == "within" else None
            for name, system in systems.items():
                began = time.perf_counter()
                ranked = system(question, grant)
                times[name].append((time.perf_counter() - began) * 1000)
                results[name].add(ranked, question.gold)
        print(f"\n{engine} {scope} ({len(asked)} questions)   complete recall @1 @3 @5 @10  |  table recall @1 @3 @5 @10   no table")
        base = results.get("BM25 plain")
        for name, scores in results.items():
            latency = f"   p50 {percentile(times[name], 0.5):.0f} ms, p95 {percentile(times[name], 0.95):.0f} ms" if not name.startswith("BM25") else ""
            print(scores.row(name, None if scores is base else base) + latency)


def over_http(settings: Settings, neo4j: LocalNeo4j, asked: list[Question]) -> None:
    """Each question as an agent's HTTP call at the defaults (k 5), against `lakegraph serve`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("LAKEGRAPH_")}
    env.update(
        {
            "LAKEGRAPH_STATE_DIR": str(settings.state_path),
            "LAKEGRAPH_NEO4J__URI": neo4j.uri,
            "LAKEGRAPH_NEO4J__PASSWORD": neo4j.password,
            "LAKEGRAPH_LOG_LEVEL": "warning",
        }
    )
    server = subprocess.Popen([LAKEGRAPH, "serve", "--http", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        base = (server.stdout.readline() if server.stdout else "").split()[2].removesuffix("/v1/...")  # HTTP API  http://host:port/v1/...
        token = (settings.state_path / "serve" / "token").read_text().strip()
        with httpx2.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:

            def call(question: Question) -> float:
                began = time.perf_counter()
                response = http.request(
                    SPEC.method,
                    f"{base}{SPEC.path}",
                    **({"json": {"question": question.text}} if SPEC.method == "POST" else {"params": {"question": question.text}}),
                )
                assert response.status_code == 200, response.text
                return (time.perf_counter() - began) * 1000

            for question in asked[:10]:
                call(question)
            samples = [call(question) for question in asked]
        p50, p95 = percentile(samples, 0.5), percentile(samples, 0.95)
        print(f"  over HTTP ({len(samples)} calls, k 5): p50 {p50:.0f} ms, p95 {p95:.0f} ms  (target p95 < 50 ms: {'met' if p95 < 50 else 'MISSED'})")
    finally:
        stop_pid(server.pid, timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--state", help="keep the local Neo4j's store here (a re-run reloads only what changed)")
    parser.add_argument("--heap", default="3g")
    parser.add_argument("--variants", action="store_true", help="also rank with each other setting of the arms, to compare")
    parser.add_argument("--skip-load", action="store_true", help="rank over the kept store as it is (one engine, loaded by an earlier run)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="lakegraph-tables-bench-"))
    root = unpack_spider2_lite(work)
    pools = catalogues(root)
    asked, unresolved = questions(root, pools)
    print(f"{len(asked)} questions with gold tables; gold names matching no table: {dict(unresolved)}")
    local = load_settings(state_dir=args.state or str(work / "state"), neo4j={"heap_size": args.heap, "pagecache_size": "2g"})
    neo4j = neo4j_server.status(local) or neo4j_server.start(local)  # a kept store may still be running
    try:
        settings = local.with_section("neo4j", uri=neo4j.uri, password=neo4j.password)
        driver, where = connect(settings)
        apply_schema(settings, driver, where.database)
        model = embedder(settings)
        refresher = TableSearchRefresher(driver, where.database, model)
        for engine in args.engines.split(","):
            pool = pools[engine]
            load(pool, driver, where.database, refresher, kept=args.skip_load)
            plain, split = BM25(bm25_documents(pool, plain_tokens)), BM25(bm25_documents(pool, words))

            def shape_system(shape: TableContextShape) -> Callable[[Question, Grant | None], list[str]]:
                return lambda asked, grant: [table.id for table in shape(asked.text, k=10, grant=grant or EVERYTHING).tables]

            def bm25_system(index: BM25, tokens: Callable[[str], list[str]], pool: Catalogue = pool) -> Callable[[Question, Grant | None], list[str]]:
                return lambda asked, grant: index.rank(tokens(asked.text), set(pool.ids(asked.database)) if grant else None)[:10]

            systems: dict[str, Callable[[Question, Grant | None], list[str]]] = {
                "lakegraph": shape_system(TableContextShape(driver, where.database, model)),
                "lakegraph, vectors off": shape_system(TableContextShape(driver, where.database, None)),
            }
            if args.variants:
                for name, ranking in variants().items():
                    systems[f"  {name}"] = shape_system(TableContextShape(driver, where.database, model, ranking))
            systems["BM25 plain"] = bm25_system(plain, plain_tokens)
            systems["BM25 words split"] = bm25_system(split, words)
            evaluate(engine, pool, [question for question in asked if question.engine == engine], systems)
        if not args.skip_load:
            everything = Catalogue("all", {f"{pool.engine}:{name}": tables for pool in pools.values() for name, tables in pool.tables.items()})
            load(everything, driver, where.database, refresher, kept=False)
            over_http(settings, neo4j, asked)
        driver.close()
    finally:
        neo4j_server.stop(local)


def variants() -> dict[str, Ranking]:
    """The other settings the defaults were chosen over."""
    base = DEFAULT_RANKING

    def weighted(arm: str, factor: float) -> Ranking:
        return replace(base, arms=tuple((name, weight * factor if name == arm else weight) for name, weight in base.arms))

    def boosted(field: str, boost: float) -> Ranking:
        return replace(base, fields=tuple((name, boost if name == field else weight) for name, weight in base.fields))

    return {
        "vector x0.5": weighted("vector", 0.5),
        "vector x2": weighted("vector", 2),
        "text x2": weighted("text", 2),
        "rrf k 60": replace(base, rrf_k=60),
        "name boost 1": boosted("search_name", 1.0),
        "name boost 6": boosted("search_name", 6.0),
        "notes boost 1": boosted("search_notes", 1.0),
        "notes boost 0.2": boosted("search_notes", 0.2),
        "columns boost 2": boosted("search_columns", 2.0),
        "text only": replace(base, arms=(("text", 1.0),)),
        "vector only": replace(base, arms=(("vector", 1.0),)),
    }


if __name__ == "__main__":
    main()
