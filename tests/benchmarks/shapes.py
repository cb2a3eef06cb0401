"""Shape latency benchmark (not a test): every shape of the registry on a generated library of
10,000 documents / 100,000 sections (with a themes run) and a warehouse of 500 tables, with
100,000 part numbers bridged to the documents that name them (tests/benchmarks/bridge.py).

    python -m tests.benchmarks.shapes [--docs 10000] [--tables 500] [--calls 200] [--grant-calls 1000] [--grant-rounds 3] [--grants-only]

Starts its own local Neo4j + GDS in a temporary state folder, loads both through the real write
paths, then prints p50 and p95 for outline, search, table context and join path in-process and
through MCP over streamable HTTP (a `lakegraph serve` process and the official MCP client), and
for every shape through the HTTP API of the same process, each at its defaults (a budget of
shapes.answer_tokens). Ratios are against the floor measured in the same run: one `RETURN 1`
round trip to Neo4j (in-process), the in-process p50 (for MCP), and an HTTP call of the cheapest
endpoint, /healthz (for the HTTP API). Targets (p95): outline and search under 50 ms in-process,
table context and join path under 100 ms; every shape under 50 ms over HTTP.

The grants section asks every shape twice with the same parameters, alternately: as the local
user (today's ungranted call) and within a grant of half the library (bench/manuals) and half the
datasets, with the cypher and run-sql capabilities — the parameters drawn from what the grant
sees, --grant-calls times each (a p95 of a few milliseconds is the 10th slowest of 200 calls: a
scheduler's hiccup; of 1,000, the 50th), in --grant-rounds rounds over every shape. Target: each
granted p95 (all rounds' calls) within 10 % of the ungranted one; each round's ratio is printed
beside it, and `cypher`, the same code for both callers, shows the measurement's own noise.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import duckdb
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from shapes.serving.identity import LOCAL, Caller
from shapes.serving.service import Shapes
from shapes.spec.registry import SPECS
from tests.benchmarks.bridge import make_part_numbers, part_number, plant_part_numbers
from tests.benchmarks.corpus import FOLDERS, WORDS, generate, relpath
from tests.benchmarks.stats import percentile, timed
from tests.helpers import LAKEGRAPH
from worker.bridge.refresh import BridgeRefresh
from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.graph.connection import connect
from worker.graph.setup import apply_schema
from worker.runtime import neo4j_server
from worker.runtime.processes import stop_pid
from worker.settings import load_settings
from worker.shared.grants import Grant
from worker.themes.runner import ThemeRunner
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.sync import WarehouseSync

SCHEMAS = ("service", "parts", "sales", "fleet", "finance", "hr", "marketing", "warranty", "logistics", "quality")
PART_NUMBERS = 100_000  # bridged values: a parts table and part numbers planted in the documents
GRANTED_FOLDER = "manuals"  # half the generated documents (three of the corpus's six folders)
GRANTED_SCHEMAS = SCHEMAS[:5]  # half the tables, the parts numbers among them
NOUNS = ("orders", "visits", "claims", "invoices", "vehicles", "parts", "shipments", "returns", "inspections", "campaigns", "dealers", "customers")


def table_name(index: int) -> tuple[str, str]:
    return SCHEMAS[index % len(SCHEMAS)], f"{NOUNS[index % len(NOUNS)]}_{index:04d}"


def make_warehouse(path: Path, tables: int, rng: random.Random) -> tuple[str, list[tuple[str, str, str]]]:
    """500 tables, each with an id, a key into an earlier table, and ten more columns; a glossary; queries."""
    statements = [f"CREATE SCHEMA {schema};" for schema in SCHEMAS]
    for index in range(tables):
        schema, name = table_name(index)
        columns = ["id INTEGER PRIMARY KEY", *(f"{word}_{n} VARCHAR" for n, word in enumerate(rng.sample(WORDS, 10)))]
        if index >= len(SCHEMAS):  # DuckDB keys stay within a schema: a parent from the same one
            parent_schema, parent = table_name(index - len(SCHEMAS) * (1 + rng.randrange(index // len(SCHEMAS))))
            columns.append(f"parent_id INTEGER REFERENCES {parent_schema}.{parent} (id)")
        columns.append("ref_code VARCHAR")
        statements.append(f"CREATE TABLE {schema}.{name} ({', '.join(columns)});")
        statements.append(f"COMMENT ON TABLE {schema}.{name} IS '{' '.join(rng.sample(WORDS, 6))} {NOUNS[index % len(NOUNS)]}';")
    with duckdb.connect(str(path)) as con:
        con.execute("\n".join(statements))
    make_part_numbers(path, PART_NUMBERS)
    glossary = []
    for term in range(100):
        tagged = [".".join(table_name(rng.randrange(tables))) for _ in range(3)]
        glossary.append(
            f'[[term]]\nname = "metric {term} {rng.choice(WORDS)} rate"\ndescription = "{" ".join(rng.sample(WORDS, 8))}"\ntags = {tagged!r}\n'.replace(
                "'", '"'
            )
        )
    queries = []
    for job in range(2000):
        a, b = table_name(rng.randrange(tables)), table_name(rng.randrange(tables))
        sql = f"SELECT count(*) FROM {a[0]}.{a[1]} x JOIN {b[0]}.{b[1]} y ON x.ref_code = y.ref_code"
        queries.append((f"job-{job}", sql, f"user{job % 17}@example.com"))
    return "\n".join(glossary), queries


def shape_calls(rng: random.Random, documents: list[str], tables: list[str], docs: int) -> dict[str, Callable[[], dict]]:
    """Every shape at its defaults, with what it requires drawn from `documents` and `tables`."""
    return {
        "outline": dict,
        "search": lambda: {"query": " ".join(rng.sample(WORDS, 2))},
        "coverage": lambda: {"terms": [f"DOC-{rng.randrange(docs)}", f"DOC-{rng.randrange(docs)}", "P9999"]},  # identifiers, its use
        "bridge": lambda: rng.choice(
            (
                {"value": part_number(rng.randrange(PART_NUMBERS))},
                {"column": "parts.part_numbers.part_no"},  # two-way coverage of 100,000 values: a walk's first page
                {"uri": f"bench/{rng.choice(documents)}"},
                {},
            )
        ),
        "links": dict,
        "themes": dict,
        "theme_changes": dict,
        "table_context": lambda: {"question": f"{rng.choice(WORDS)} {rng.choice(NOUNS)} rate"},
        "join_path": lambda: dict(zip(("table_a", "table_b"), rng.sample(tables, 2), strict=True)),
        "joins": dict,
        "run_sql": lambda: {"sql": f"SELECT count(*) AS n FROM {rng.choice(tables)}"},
        "schema": dict,
        "cypher": lambda: {
            "query": "MATCH (d:Document {uri: $uri}) RETURN d.displayName AS name",
            "parameters": {"uri": f"bench/{rng.choice(documents)}"},
        },
        "freshness": dict,
    }


def grant_costs(shapes: Shapes, grant: Grant, calls: dict[str, Callable[[], dict]], count: int, rounds: int) -> None:
    """p50/p95 of each shape as the local user and within `grant`, the same parameters for both,
    alternating which goes first so neither gets the warmer cache; in `rounds` rounds over every
    shape, so a spell of the machine's own noise falls on every shape, and both sides, alike. The
    verdict is on the p95s of all rounds' calls together; each round's ratio shows the spread."""
    within = Caller("benchmark", "", grant)
    samples = {name: {LOCAL: [], within: []} for name in calls}
    ratios: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, make in calls.items():
            taken: dict[Caller, list[float]] = {LOCAL: [], within: []}
            for index in range(count + 10):
                params = make()
                for caller in (LOCAL, within) if index % 2 else (within, LOCAL):
                    began = time.perf_counter()
                    shapes.ask(name, caller, "benchmark", **params)
                    if index >= 10:
                        taken[caller].append((time.perf_counter() - began) * 1000)
            ratios[name].append(percentile(taken[within], 0.95) / percentile(taken[LOCAL], 0.95))
            for caller, values in taken.items():
                samples[name][caller] += values
    print(f"\n{'grants':<15}{'local p50':>10}{'p95':>8}{'granted p50':>13}{'p95':>8}  {'p95 granted / local':>19}  target <= 1.10  {'each round':>10}")
    for name in calls:
        local, granted = samples[name][LOCAL], samples[name][within]
        ratio = percentile(granted, 0.95) / percentile(local, 0.95)
        print(
            f"{name:<15}{percentile(local, 0.5):>10.1f}{percentile(local, 0.95):>8.1f}{percentile(granted, 0.5):>13.1f}{percentile(granted, 0.95):>8.1f}"
            f"  {ratio:>19.2f}  {'met' if ratio <= 1.10 else 'MISSED':<14}  {' '.join(f'{each:.2f}' for each in ratios[name])}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--grant-calls", type=int, default=1000, help="calls of each shape on either side of the grant, a round")
    parser.add_argument("--grant-rounds", type=int, default=3, help="rounds over every shape")
    parser.add_argument("--heap", default="2g")
    parser.add_argument("--grants-only", action="store_true", help="measure only what a grant costs")
    args = parser.parse_args()
    rng = random.Random(11)

    work = Path(tempfile.mkdtemp(prefix="lakegraph-shapes-bench-"))
    library, warehouse = work / "library", work / "warehouse.duckdb"
    glossary_text, queries = make_warehouse(warehouse, args.tables, rng)
    (work / "glossary.toml").write_text(glossary_text)
    print(f"generating {args.docs} documents; {args.tables} tables, 100 terms, {len(queries)} queries")
    generate(library, args.docs)
    plant_part_numbers(library, args.docs, PART_NUMBERS, rng)
    settings = load_settings(
        state_dir=str(work / "state"),
        neo4j={"heap_size": args.heap, "pagecache_size": "1g"},
        documents={"libraries": [{"name": "bench", "root": str(library)}]},
        warehouse={"engine": "duckdb", "duckdb_path": str(warehouse), "glossary_path": str(work / "glossary.toml"), "sql_dialect": "duckdb"},
    )
    neo4j = neo4j_server.start(settings)
    server: subprocess.Popen | None = None
    try:
        settings = settings.with_section("neo4j", uri=neo4j.uri, password=neo4j.password)
        driver, where = connect(settings)
        apply_schema(settings, driver, where.database)
        began = time.monotonic()
        load(DocumentSync(settings, driver, where.database))
        WarehouseSync(settings, driver, where.database).sync_all()
        BridgeRefresh(settings, driver, where.database).refresh()
        QueryGraph(driver, where.database, "duckdb").absorb([QueryEvent(job, sql, user, "2026-11-01T00:00:00Z", False, ()) for job, sql, user in queries])
        ThemeRunner(settings, driver, where.database).run(force=True)
        print(f"loaded (and themes run) in {time.monotonic() - began:.0f} s")

        shapes = Shapes(settings, driver, where.database)
        documents = [relpath(index).removesuffix(".md") for index in range(args.docs)]
        tables = [".".join(table_name(index)) for index in range(args.tables)]
        grant = Grant(("benchmark",), (f"bench/{GRANTED_FOLDER}",), GRANTED_SCHEMAS, frozenset({"cypher", "run-sql"}))
        seen_documents = [uri for uri in documents if grant.sees_uri(f"bench/{uri}")]
        seen_tables = [table for table in tables if grant.sees_table(table)]
        print(f"grant: {len(seen_documents)} of {len(documents)} documents, {len(seen_tables)} of {len(tables)} tables")
        grant_costs(shapes, grant, shape_calls(rng, seen_documents, seen_tables, args.docs), args.grant_calls, args.grant_rounds)
        if args.grants_only:
            driver.close()
            return

        def pick_words() -> str:
            return " ".join(rng.sample(WORDS, 2))

        def two_tables() -> tuple[str, str]:
            first, second = rng.sample(range(args.tables), 2)
            return ".".join(table_name(first)), ".".join(table_name(second))

        calls: dict[str, Callable[[], object]] = {
            "outline depth 2": lambda: shapes.ask("outline", uri=f"bench/{rng.choice(documents)}", depth=2),
            "search unscoped": lambda: shapes.ask("search", query=pick_words(), k=10),
            "search scoped": lambda: shapes.ask("search", query=pick_words(), under=f"bench/{rng.choice(FOLDERS)}", k=10),
            "table context": lambda: shapes.ask("table_context", question=f"{rng.choice(WORDS)} {rng.choice(NOUNS)} rate", k=5),
            "join path": lambda: shapes.ask("join_path", **dict(zip(("table_a", "table_b"), two_tables(), strict=False)), max_hops=3),
        }
        floor = percentile(timed(lambda: shapes.driver.execute_query("RETURN 1", database_=where.database), args.calls), 0.5)
        targets = {"outline depth 2": 50, "search unscoped": 50, "search scoped": 50, "table context": 100, "join path": 100}
        in_process: dict[str, float] = {}
        print(f"\nfloor: one RETURN 1 round trip p50 {floor:.2f} ms\n")
        print(f"{'in-process':<18}{'p50 ms':>9}{'p95 ms':>9}  {'p50 / floor':>11}  target p95")
        for name, call in calls.items():
            samples = timed(call, args.calls)
            p50, p95 = percentile(samples, 0.5), percentile(samples, 0.95)
            in_process[name] = p50
            verdict = "met" if p95 < targets[name] else "MISSED"
            print(f"{name:<18}{p50:>9.1f}{p95:>9.1f}  {p50 / floor:>10.1f}x  < {targets[name]} ms: {verdict}")

        env = {key: value for key, value in os.environ.items() if not key.startswith("LAKEGRAPH_")}
        env.update(
            {
                "LAKEGRAPH_STATE_DIR": str(settings.state_path),
                "LAKEGRAPH_NEO4J__URI": neo4j.uri,
                "LAKEGRAPH_NEO4J__PASSWORD": neo4j.password,
                "LAKEGRAPH_WAREHOUSE__DUCKDB_PATH": str(warehouse),
                "LAKEGRAPH_LOG_LEVEL": "warning",
            }
        )
        server = subprocess.Popen([LAKEGRAPH, "serve", "--mcp", "http", "--http", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
        url = (server.stdout.readline() if server.stdout else "").split()[1]
        token = (settings.state_path / "serve" / "token").read_text().strip()
        tool_calls = {
            "outline depth 2": lambda: ("outline", {"uri": f"bench/{rng.choice(documents)}", "depth": 2}),
            "search unscoped": lambda: ("search", {"query": pick_words()}),
            "search scoped": lambda: ("search", {"query": pick_words(), "under": f"bench/{rng.choice(FOLDERS)}"}),
            "table context": lambda: ("table_context", {"question": f"{rng.choice(WORDS)} {rng.choice(NOUNS)} rate"}),
            "join path": lambda: ("join_path", dict(zip(("table_a", "table_b"), two_tables(), strict=True))),
        }

        async def over_mcp() -> None:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                print(f"\n{'MCP over HTTP':<18}{'p50 ms':>9}{'p95 ms':>9}  {'p50 / in-process':>16}")
                for name, make in tool_calls.items():
                    samples = []
                    for index in range(args.calls + 10):
                        tool, arguments = make()
                        began = time.perf_counter()
                        result = await client.call_tool(tool, arguments)
                        if index >= 10:
                            samples.append((time.perf_counter() - began) * 1000)
                        assert not result.is_error, result.content
                    p50, p95 = percentile(samples, 0.5), percentile(samples, 0.95)
                    print(f"{name:<18}{p50:>9.1f}{p95:>9.1f}  {p50 / in_process[name]:>15.1f}x")

        anyio.run(over_mcp)
        http_calls = shape_calls(rng, rng.sample(documents, 50), tables, args.docs)
        assert set(http_calls) == set(SPECS), "a shape without a benchmark call"
        base = url.removesuffix("/mcp")

        async def over_http() -> None:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:

                async def call(path: str, method: str, params: dict) -> float:
                    began = time.perf_counter()
                    if method == "POST":
                        response = await http.post(f"{base}{path}", json=params)
                    else:
                        response = await http.get(
                            f"{base}{path}", params=[(k, v) for k, value in params.items() for v in (value if isinstance(value, list) else [value])]
                        )
                    assert response.status_code == 200, response.text
                    return (time.perf_counter() - began) * 1000

                floor = percentile([await call("/healthz", "GET", {}) for _ in range(args.calls)], 0.5)
                print(f"\nfloor: GET /healthz p50 {floor:.2f} ms")
                print(f"\n{'HTTP API':<18}{'p50 ms':>9}{'p95 ms':>9}  {'p50 / floor':>11}  {'answer KB':>9}  target p95 < 50 ms")
                for name, make in http_calls.items():
                    spec = SPECS[name]
                    samples = [await call(spec.path, spec.method, make()) for _ in range(args.calls + 10)][10:]
                    size = (
                        len(
                            (
                                await http.request(spec.method, f"{base}{spec.path}", **({"json": make()} if spec.method == "POST" else {"params": make()}))
                            ).content
                        )
                        / 1024
                    )
                    p50, p95 = percentile(samples, 0.5), percentile(samples, 0.95)
                    print(f"{name:<18}{p50:>9.1f}{p95:>9.1f}  {p50 / floor:>10.1f}x  {size:>9.1f}  {'met' if p95 < 50 else 'MISSED'}")

        anyio.run(over_http)
        driver.close()
    finally:
        if server is not None:
            stop_pid(server.pid, timeout=10)
        neo4j_server.stop(settings)


if __name__ == "__main__":
    main()
