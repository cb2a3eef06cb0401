"""Snowflake and Databricks from their exports, on Spider 2.0-lite's real catalogues and gold SQL.

Snowflake: three databases' INFORMATION_SCHEMA.COLUMNS (CSV, as Snowflake unloads it, upper-case
header) and TABLES (JSON), and their gold queries as an ACCOUNT_USAGE.QUERY_HISTORY export
(Parquet), dropped in the audit-log folder's `snowflake/`. Databricks: two SQLite databases as a
Unity Catalog's information_schema export (NDJSON) and their gold queries, transpiled by sqlglot,
as a system.query.history export (CSV). The learned joins are the ones the same queries teach in
their own dialect against their own catalogue; the query history arrives first and waits for its
tables; every query id counts once; what is not a finished data statement counts for nothing;
a bad row is reported with the file.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
import sqlglot
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.corpora import unpack_spider2_lite
from worker import problems
from worker.warehouse.audit_files import ingest
from worker.warehouse.audit_folder import folder_files
from worker.warehouse.joins import SchemaIndex, extract
from worker.warehouse.sync import SOURCE, WarehouseSync

pytestmark = [pytest.mark.timeout(300), pytest.mark.corpus]
SNOWFLAKE_DATABASES = ("THELOOK_ECOMMERCE", "GITHUB_REPOS", "PATENTSVIEW")
DATABRICKS_DATABASES = ("IPL", "Pagila")  # SQLite files, as schemas of one Unity Catalog
CATALOG = "spider"
JOINS = "MATCH (a:Column)-[j:JOINS_WITH]->(b:Column) RETURN a.id AS a, b.id AS b, j.executions AS n"


@pytest.fixture(scope="module")
def spider(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unpack_spider2_lite(tmp_path_factory.mktemp("spider2"))


@pytest.fixture
def sync(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> Iterator[WarehouseSync]:
    yield WarehouseSync(
        neo4j_service.settings.with_section("warehouse", engine="duckdb", duckdb_path=tmp_path / "none.duckdb", audit_log_dir=tmp_path / "logs"), graph, "neo4j"
    )


def gold(spider: Path, databases: tuple[str, ...], prefix: str) -> list[tuple[str, str]]:
    """(instance id, gold SQL) of the questions on `databases` whose gold file is in `prefix`'s dialect."""
    found = []
    for line in (spider / "questions.jsonl").read_text().splitlines():
        item = json.loads(line)
        path = spider / "gold-sql" / f"{item['instance_id']}.sql"
        if item["db"] in databases and path.is_file() and item["instance_id"].startswith(prefix):
            found.append((item["instance_id"], path.read_text()))
    return found


def copy_to(rows: list[dict], path: Path) -> Path:
    """Rows written by DuckDB as the file `path` names (CSV with a header, JSON, NDJSON or Parquet)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(".staging.json")
    staging.write_text(json.dumps(rows))
    formats = {".csv": "(FORMAT csv, HEADER)", ".parquet": "(FORMAT parquet)", ".json": "(FORMAT json, ARRAY true)", ".ndjson": "(FORMAT json)"}
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT * FROM read_json('{staging}', format = 'array')) TO '{path}' {formats[path.suffix]}")
    staging.unlink()
    return path


def learned(graph: Driver) -> set[tuple[str, str]]:
    return {(row["a"], row["b"]) for row in graph.execute_query(JOINS).records}


def test_snowflake_exports_teach_the_joins_of_its_query_history(spider: Path, sync: WarehouseSync, graph: Driver) -> None:
    catalogue = json.loads((spider / "schemas" / "snowflake.json").read_text())
    tables = [table for database in SNOWFLAKE_DATABASES for table in catalogue[database]]
    columns, table_rows, mapping = [], [], {}
    for table in tables:
        database, schema_name, name = table["table"].split(".")
        table_rows.append(
            {"TABLE_CATALOG": database, "TABLE_SCHEMA": schema_name, "TABLE_NAME": name, "TABLE_TYPE": "BASE TABLE", "COMMENT": None, "ROW_COUNT": 1}
        )
        for position, column in enumerate(table["columns"], start=1):
            columns.append(
                {
                    "TABLE_CATALOG": database,
                    "TABLE_SCHEMA": schema_name,
                    "TABLE_NAME": name,
                    "COLUMN_NAME": column["name"],
                    "ORDINAL_POSITION": position,
                    "IS_NULLABLE": "YES",
                    "DATA_TYPE": column["type"],
                    "COMMENT": column["description"] or None,
                }
            )
            mapping.setdefault(database, {}).setdefault(schema_name, {}).setdefault(name, {})[column["name"]] = column["type"]
    queries = gold(spider, SNOWFLAKE_DATABASES, "sf")
    expected: Counter[tuple[str, str]] = Counter()
    for _, sql in queries:  # a query that also reads a table of another database waits for it: it teaches nothing here
        extraction = extract(sql, "snowflake", SchemaIndex(mapping))
        if extraction.tables <= {table["table"] for table in tables}:
            expected.update((str(pair.left), str(pair.right)) for pair in extraction.pairs)
    assert len(queries) >= 10 and len(expected) >= 20
    history = [
        {
            "QUERY_ID": f"01b-{index}",
            "QUERY_TEXT": sql,
            "QUERY_TYPE": "SELECT",
            "USER_NAME": "ANA",
            "EXECUTION_STATUS": "SUCCESS",
            "START_TIME": "2026-11-30 09:30:00.123 -0800",
            "END_TIME": "2026-11-30 09:30:02.500 -0800",
        }
        for index, (_, sql) in enumerate(queries)
    ]
    first = {**history[0], "DATABASE_NAME": None, "SCHEMA_NAME": None}
    thelook = "THELOOK_ECOMMERCE"
    unqualified = 'SELECT COUNT(*) FROM ORDERS o JOIN ORDER_ITEMS i ON o."order_id" = i."order_id"'  # read in its session's schema
    expected[f"{thelook}.{thelook}.ORDERS.order_id", f"{thelook}.{thelook}.ORDER_ITEMS.order_id"] += 1
    history += [
        {**first, "QUERY_ID": "01b-session", "QUERY_TEXT": unqualified, "DATABASE_NAME": thelook, "SCHEMA_NAME": thelook},
        first,  # exported twice: counts once
        {**first, "QUERY_ID": "01b-failed", "EXECUTION_STATUS": "FAIL"},
        {**first, "QUERY_ID": "01b-running", "EXECUTION_STATUS": "RUNNING"},
        {**first, "QUERY_ID": "01b-show", "QUERY_TEXT": "SHOW TABLES", "QUERY_TYPE": "SHOW"},
        {**first, "QUERY_ID": "01b-empty", "QUERY_TEXT": ""},
    ]
    folder = sync.settings.audit_log_path / "snowflake"
    logs = copy_to(history, folder / "account_usage" / "query_history.parquet")

    report = ingest(logs, sync.queries, sync)  # before the tables: every query waits for them
    assert (report["statements"], report["unfinished"], report["not_data"], report["poison"]) == (len(queries) + 3, 1, 1, 1)
    assert report["pending"] and learned(graph) == set()
    [problem] = problems.listing(graph, "neo4j", SOURCE)
    assert problem.key == f"file:{logs}" and "row " in problem.reason and "query_text" in problem.reason

    keys = [  # SHOW IMPORTED KEYS IN ACCOUNT, saved with RESULT_SCAN (the Spider copy declares none: two of the shop's own)
        {"fk_database_name": thelook, "fk_schema_name": thelook, "fk_table_name": "ORDER_ITEMS", "fk_column_name": column, "pk_database_name": thelook, "pk_schema_name": thelook, "pk_table_name": table, "pk_column_name": target, "key_sequence": 1, "fk_name": f"FK_{table}"}
        for column, table, target in (("order_id", "ORDERS", "order_id"), ("product_id", "PRODUCTS", "id"))
    ]  # fmt: skip
    copy_to(keys, folder / "keys" / "imported_keys.csv")
    copy_to(table_rows, folder / "information_schema" / "tables.json")
    columns_file = copy_to(columns, folder / "information_schema" / "columns.csv")
    report = ingest(columns_file, sync.queries, sync)
    assert report["kind"] == "columns" and set(report["schemas"]) == {table["table"].rsplit(".", 1)[0] for table in tables}
    executions = {(row["a"], row["b"]): row["n"] for row in graph.execute_query(JOINS).records}
    assert executions == dict(expected)  # each pair as often as the gold queries that make it ran

    declared = graph.execute_query("MATCH (a:Column)-[k:REFERENCES]->(b:Column) RETURN a.id AS a, b.id AS b ORDER BY a").records
    prefix = f"{thelook}.{thelook}"
    assert [(row["a"], row["b"]) for row in declared] == [
        (f"{prefix}.ORDER_ITEMS.order_id", f"{prefix}.ORDERS.order_id"),
        (f"{prefix}.ORDER_ITEMS.product_id", f"{prefix}.PRODUCTS.id"),
    ]
    on_keys = "MATCH (a:Column)-[j:JOINS_WITH]-(b:Column) WHERE (a)-[:REFERENCES]->(b) RETURN collect(DISTINCT j.declared) AS declared"
    assert graph.execute_query(on_keys).records[0]["declared"] in ([True], [])

    before = graph.execute_query(JOINS).records
    for path in folder_files(sync.settings.audit_log_path):  # a reload reads every file again: nothing counts twice
        ingest(path, sync.queries, sync)
    assert graph.execute_query(JOINS).records == before
    engines = graph.execute_query("MATCH (d:Database) RETURN d.id AS id, d.engine AS engine ORDER BY id").records
    assert [(row["id"], row["engine"]) for row in engines] == [(database, "snowflake") for database in sorted(SNOWFLAKE_DATABASES)]
    first_column = f"{tables[0]['table']}.{tables[0]['columns'][0]['name']}"
    [described] = graph.execute_query("MATCH (c:Column {id: $id}) RETURN c.position AS p, c.description AS d", id=first_column).records
    assert (described["p"], described["d"]) == (1, tables[0]["columns"][0]["description"] or None)


def test_databricks_exports_learn_what_the_same_queries_teach_in_their_own_dialect(spider: Path, sync: WarehouseSync, graph: Driver) -> None:
    catalogue = json.loads((spider / "schemas" / "sqlite.json").read_text())
    columns, own_pairs = [], set()
    for database in DATABRICKS_DATABASES:
        own = {table["table"]: {column["name"]: column["type"] for column in table["columns"]} for table in catalogue[database]}
        for table, table_columns in own.items():
            for position, (column, kind) in enumerate(table_columns.items(), start=1):
                row = {"table_catalog": CATALOG, "table_schema": database.lower(), "table_name": table.lower(), "column_name": column}
                columns.append({**row, "ordinal_position": position, "is_nullable": "YES", "full_data_type": kind.lower(), "comment": None})
        for _, sql in gold(spider, (database,), "local"):
            for pair in extract(sql, "sqlite", SchemaIndex(own)).pairs:  # in SQLite, against the SQLite file
                own_pairs.add(tuple(sorted(f"{CATALOG}.{database.lower()}.{ref.table.lower()}.{ref.column}" for ref in (pair.left, pair.right))))
    statements = [
        sqlglot.transpile(sql, read="sqlite", write="databricks")[0] for database in DATABRICKS_DATABASES for _, sql in gold(spider, (database,), "local")
    ]
    history = [
        {"statement_id": f"st-{index}", "statement_text": sql, "statement_type": "SELECT", "executed_by": "ana@example.com", "execution_status": "FINISHED", "start_time": "2026-11-30T17:30:00Z", "end_time": "2026-11-30T17:30:01Z"}
        for index, sql in enumerate(statements)
    ]  # fmt: skip
    folder = sync.settings.audit_log_path / "databricks"
    history_file = copy_to(history, folder / "system.query.history.csv")
    columns_file = copy_to(columns, folder / "information_schema.columns.ndjson")
    # Keys (the SQLite files declare none here): one inside pagila, one from ipl into pagila, a
    # schema written after ipl's own, and the two referenced keys, city's its primary key.
    where = lambda schema_name, table: {
        "table_catalog": CATALOG,
        "table_schema": schema_name,
        "table_name": table,
        "constraint_catalog": CATALOG,
        "constraint_schema": schema_name,
    }
    usage = [
        {**where("pagila", "city"), "constraint_name": "city_pk", "column_name": "city_id", "ordinal_position": 1},
        {**where("pagila", "country"), "constraint_name": "country_uk", "column_name": "country", "ordinal_position": 1},
        {**where("pagila", "address"), "constraint_name": "address_city", "column_name": "city_id", "ordinal_position": 1, "position_in_unique_constraint": 1},
        {
            **where("ipl", "player"),
            "constraint_name": "player_country",
            "column_name": "country_name",
            "ordinal_position": 1,
            "position_in_unique_constraint": 1,
        },
    ]
    references = [
        {"constraint_catalog": CATALOG, "constraint_schema": schema_name, "constraint_name": name, "unique_constraint_catalog": CATALOG, "unique_constraint_schema": "pagila", "unique_constraint_name": unique}
        for schema_name, name, unique in (("pagila", "address_city", "city_pk"), ("ipl", "player_country", "country_uk"))
    ]  # fmt: skip
    copy_to(usage, folder / "key_column_usage.parquet")
    copy_to(references, folder / "referential_constraints.json")
    copy_to([{**where("pagila", "city"), "constraint_name": "city_pk", "constraint_type": "PRIMARY KEY"}], folder / "table_constraints.csv")
    ingest(history_file, sync.queries, sync)
    ingest(columns_file, sync.queries, sync)  # one read of every schema export: both keys in one pass
    assert len(own_pairs) >= 15
    assert learned(graph) == own_pairs
    declared = graph.execute_query("MATCH (a:Column)-[:REFERENCES]->(b:Column) RETURN a.id AS a, b.id AS b ORDER BY a").records
    assert [(row["a"], row["b"]) for row in declared] == [
        ("spider.ipl.player.country_name", "spider.pagila.country.country"),
        ("spider.pagila.address.city_id", "spider.pagila.city.city_id"),
    ]
    primary = graph.execute_query("MATCH (c:Column {is_primary_key: true}) RETURN collect(c.id) AS ids").records[0]["ids"]
    assert primary == ["spider.pagila.city.city_id"]


def test_a_file_no_export_reader_knows_is_reported_with_its_reason(sync: WarehouseSync, graph: Driver) -> None:
    folder = sync.settings.audit_log_path / "snowflake"
    folder.mkdir(parents=True)
    (folder / "notes.csv").write_text("who,what\nana,lunch\n")
    (folder / "broken.parquet").write_bytes(b"PAR1 not really")
    for path in sorted(folder.iterdir()):
        assert ingest(path, sync.queries, sync)["poison"] == 1
    reasons = {problem.key.rsplit("/", 1)[-1]: problem.reason for problem in problems.listing(graph, "neo4j", SOURCE)}
    assert "not a readable parquet export" in reasons["broken.parquet"]
    assert "none of snowflake's exports" in reasons["notes.csv"]
