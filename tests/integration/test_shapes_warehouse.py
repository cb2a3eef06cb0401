"""Table context, join path, coverage, schema, read-only Cypher and SQL, and freshness, on a real
graph built through the write paths (tests/lakehouse.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from neo4j import Driver

from shapes.coverage import coverage
from shapes.schema import counts_query
from shapes.serving.identity import Caller
from shapes.serving.service import Shapes
from shapes.spec.exceptions import ShapeError
from shapes.table_context import JoinedBy
from tests import lakehouse
from tests.conftest import Neo4jService
from tests.graph_dump import dump
from tests.helpers import assert_one_line_error, clean_env, run_cli
from worker.shared.grants import EVERYTHING, Grant
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.sync import WarehouseSync

pytestmark = pytest.mark.timeout(180)
COUNTS = "MATCH (n) WITH count(n) AS nodes MATCH ()-[r]->() RETURN nodes, count(r) AS edges"


@pytest.fixture(scope="module")
def house(neo4j_service: Neo4jService, driver: Driver, tmp_path_factory: pytest.TempPathFactory) -> lakehouse.Lakehouse:
    return lakehouse.build(neo4j_service.settings, driver, tmp_path_factory.mktemp("lakehouse"))


@pytest.fixture
def shapes(house: lakehouse.Lakehouse, driver: Driver) -> Shapes:
    return Shapes(house.settings, driver, "neo4j")


def test_a_table_is_found_through_its_business_term(shapes: Shapes) -> None:
    answer = shapes.ask("table_context", question="repeat repair rate")
    [first, *_] = answer.result.tables
    assert first.id == "warehouse.service.work_orders"
    assert "term" in first.found_by and first.via_terms == ["Comeback ratio"]
    assert "repeat" not in first.name and "repair" not in first.id  # found by the term, not its own name
    columns = {column["name"]: column for column in first.columns}
    assert columns["id"]["primary_key"] is True and columns["is_comeback"]["terms"] == ["Comeback ratio"]
    assert {(join["column"], join["other"]) for join in first.declared_joins} >= {
        ("vin", "warehouse.service.vehicles.vin"),
        ("id", "warehouse.service.work_order_parts.work_order_id"),
    }
    learned = {(join["column"], join["other"]) for join in first.learned_joins}
    assert ("fault_code", "warehouse.service.fault_codes.code") in learned
    assert "Comeback ratio" in answer.text() and "freshness:" in answer.text()


def test_a_wide_table_shows_its_first_columns_with_the_matched_and_key_ones(shapes: Shapes) -> None:
    """`columns` caps each table's columns in the answer, never hiding one the question matched
    or one a key or join uses; the answer says how many there are, and `table` lists them all."""
    answer = shapes.ask("table_context", question="work orders opened per vehicle", columns=1)
    orders = next(table for table in answer.result.tables if table.id == "warehouse.service.work_orders")
    assert [column["name"] for column in orders.columns] == ["id", "vin", "fault_code", "opened"]  # first, key, learned join, matched
    assert orders.column_count == 5 and "column work_orders.opened" in orders.matched
    assert "… 1 more column (table warehouse.service.work_orders lists them all)" in answer.text()
    whole = shapes.ask("table", table="warehouse.service.work_orders").result.tables[0]
    assert [column["name"] for column in whole.columns] == ["id", "vin", "fault_code", "opened", "is_comeback"] and whole.column_count == 5
    default = shapes.ask("table_context", question="work orders opened per vehicle").result.tables
    assert all(len(table.columns) == table.column_count for table in default)  # narrow tables: every column


def test_table_text_arm_finds_tables_by_description(shapes: Shapes) -> None:
    ids = [table.id for table in shapes.ask("table_context", question="diagnostic trouble code", k=3).result.tables]
    assert ids[0] == "warehouse.service.fault_codes"


def test_a_full_sentence_finds_every_table_it_names_and_says_why(shapes: Shapes) -> None:
    """Identifiers split and word forms folded ("work orders", "vehicle" meet work_orders and
    vehicles); the answer names the columns that matched and the key a joined table came by."""
    answer = shapes.ask("table_context", question="How many work orders were opened per vehicle model?", k=3)
    tables = {table.name: table for table in answer.result.tables}
    assert {"work_orders", "vehicles"} <= set(tables)
    assert "column vehicles.model" in tables["vehicles"].matched and "name work orders" in tables["work_orders"].matched
    [parts, fitted, orders] = shapes.ask("table_context", question="which revision of a part was fitted", k=3).result.tables
    assert (parts.name, fitted.name, orders.name) == ("parts", "work_order_parts", "work_orders")
    assert fitted.joined_by == JoinedBy(
        "warehouse.service.parts", "parts.part_no = work_order_parts.part_no AND parts.revision = work_order_parts.revision", True, 1.0
    )
    assert orders.found_by == ["vector", "join"] and orders.joined_by is not None  # no word of it asked: here by the key alone
    assert orders.joined_by.on == "work_order_parts.work_order_id = work_orders.id"


@pytest.mark.parametrize(
    "question",
    [
        'AND OR * ~ "',
        "what is the of and or",
        "title:work^3 AND (orders~2 OR \\vehicles)",
        "車両モデルごとの作業指示の数",
        "Wie viele Werkstattaufträge pro Fahrzeugmodell?",
        "work_orders.vin = vehicles.vin",
        "x" * 4000,
    ],
)
def test_any_question_gets_tables_never_an_index_error(shapes: Shapes, question: str) -> None:
    """Lucene syntax, stop words alone, other languages and scripts, code: the words go to the
    index as plain words, and the vectors answer where no word of the question is indexed."""
    assert shapes.ask("table_context", question=question).result.tables


@pytest.mark.parametrize(
    ("question", "reason"), [("   ", "question: should hold more than spaces"), ("orders " * 10_000, "question: .*at most 4000 characters")]
)
def test_an_empty_or_huge_question_is_refused_naming_the_limit(shapes: Shapes, question: str, reason: str) -> None:
    with pytest.raises(ShapeError, match=reason):
        shapes.ask("table_context", question=question)
    with pytest.raises(ShapeError, match="empty question" if not question.strip() else "at most 4000 characters"):
        shapes.table_context(question)  # the shape's own guard, for a caller that skips the parameters


def test_join_paths_prefer_declared_keys_and_give_on_clauses(shapes: Shapes) -> None:
    path = shapes.ask("join_path", table_a="vehicles", table_b="parts").result
    assert path.found and [hop.kind for hop in path.hops] == ["declared", "declared", "declared"]
    assert [hop.on for hop in path.hops] == [
        "vehicles.vin = work_orders.vin",
        "work_orders.id = work_order_parts.work_order_id",
        "work_order_parts.part_no = parts.part_no AND work_order_parts.revision = parts.revision",
    ]
    assert "JOIN `warehouse.service.parts` AS parts ON" in path.sql


def test_learned_joins_fill_in_where_no_key_is_declared(shapes: Shapes) -> None:
    path = shapes.ask("join_path", table_a="service.fault_codes", table_b="service.vehicles").result
    assert [hop.kind for hop in path.hops] == ["learned", "declared"]
    first = path.hops[0]
    assert first.on == "fault_codes.code = work_orders.fault_code"
    assert first.evidence["executions"] == 2 and first.evidence["queries"] == 2 and first.evidence["users"] == 2


def test_join_path_says_clearly_when_there_is_none(shapes: Shapes) -> None:
    path = shapes.ask("join_path", table_a="technicians", table_b="vehicles").result
    assert not path.found and "no chain" in path.reason
    with pytest.raises(ShapeError, match="no table named 'nowhere'"):
        shapes.ask("join_path", table_a="nowhere", table_b="vehicles")
    with pytest.raises(ShapeError, match="max_hops: Input should be greater than or equal to 1"):
        shapes.ask("join_path", table_a="parts", table_b="vehicles", max_hops=0)


def test_coverage_names_exactly_the_terms_no_document_mentions(shapes: Shapes) -> None:
    result = shapes.ask("coverage", terms=["P0301", "U0140", "P0420", "12345-AB", "12345", "P030"]).result
    assert result.missing == ["P0420", "P030"]  # P030 is a prefix of P0301, not a token
    found = {row.term: row.uris for row in result.found}
    assert found["U0140"] == ["shop/manuals/network#network/bcm"]
    assert "shop/bulletins/tsb-7#tsb-7/cause" in found["12345-AB"]
    assert "12345" in found  # the token sequence 12345 appears (as the first half of 12345-AB)


def test_a_scoped_term_is_found_however_many_hits_lie_outside_the_scope(shapes: Shapes, driver: Driver) -> None:
    """Each place mentioning a term, asked as the scope with a cap of one candidate, still finds it:
    the scope filters before the cap (capped first, a term whose first hits lay elsewhere was missing)."""
    places = {row.term: row.uris for row in coverage(driver, "neo4j", ["12345", "P0301"], None, EVERYTHING).found}
    assert sum(len(uris) for uris in places.values()) > len(places)  # some term has hits outside each scope
    for term, uris in places.items():
        for uri in uris:
            [row] = coverage(driver, "neo4j", [term], uri, EVERYTHING, limit=1).found
            assert row.uris == [uri] and row.capped
    assert not coverage(driver, "neo4j", ["12345"], None, EVERYTHING).found[0].capped


def test_schema_lists_labels_types_and_indexes(shapes: Shapes) -> None:
    schema = shapes.ask("schema").result
    assert schema.labels["Table"] == 6 and schema.relationship_types["REFERENCES"] == 4
    assert any(prop.startswith("confidence") for prop in schema.relationship_properties["JOINS_WITH"])
    assert {"document_text", "table_full_text_index", "column_full_text_index", "businessterm_full_text_index"} <= {index["name"] for index in schema.indexes}


def test_schema_counts_match_a_scan_and_read_only_the_count_store(shapes: Shapes, driver: Driver) -> None:
    """Counting by scanning costs 100 ms at 10k documents; the count store answers in one."""
    schema = shapes.ask("schema").result
    scanned = driver.execute_query("MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS n").records
    assert schema.labels == {row["label"]: row["n"] for row in scanned}
    scanned = driver.execute_query("MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS n").records
    assert schema.relationship_types == {row["type"]: row["n"] for row in scanned}

    plan = driver.execute_query("EXPLAIN " + counts_query(sorted(schema.labels), sorted(schema.relationship_types))).summary.plan
    operators, pending = set(), [plan]
    while pending:
        step = pending.pop()
        operators.add(step["operatorType"].split("@")[0])
        pending += step.get("children", [])
    assert operators <= {"ProduceResults", "Projection", "Union", "NodeCountFromCountStore", "RelationshipCountFromCountStore"}, operators


def test_read_only_cypher_answers_with_a_row_cap(shapes: Shapes, house: lakehouse.Lakehouse, driver: Driver) -> None:
    capped = Shapes(house.settings.with_section("shapes", cypher_max_rows=2), driver, "neo4j")
    result = capped.ask("cypher", query="MATCH (t:Table) RETURN t.name AS name ORDER BY name").result
    assert result.columns == ["name"] and result.rows == [["fault_codes"], ["parts"]] and result.truncated
    nodes = shapes.ask("cypher", query="MATCH (t:Table {name: $name}) RETURN t", parameters={"name": "parts"}).result.rows
    assert nodes[0][0]["labels"] == ["Table"] and nodes[0][0]["name"] == "parts"


WRITE_ATTEMPTS = [
    "CREATE (n:Evil) RETURN n",
    "MATCH (t:Table) SET t.name = 'x' RETURN t",
    "MATCH (t:Table) DETACH DELETE t",
    "MERGE (n:Evil {id: 1}) RETURN n",
    "MATCH (t:Table) REMOVE t.name RETURN t",
    "CALL db.createLabel('Evil')",
    "CALL dbms.components()",
    "CALL gds.graph.project('g', 'Table', '*')",
    "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line",
    "CREATE INDEX evil FOR (n:Table) ON (n.evil)",
    "DROP INDEX table_full_text_index",
    "SHOW USERS",
    "CREATE USER evil SET PASSWORD 'evilevil1'",
    "MATCH (n) RETURN n; MATCH (m) DETACH DELETE m",
    "MATCH (n) CALL (n) { SET n.evil = 1 } RETURN count(*)",
    "USE system SHOW DATABASES",
    "",
]


@pytest.mark.reliability
@pytest.mark.parametrize("query", WRITE_ATTEMPTS)
def test_every_write_attempt_is_refused_and_the_graph_is_unchanged(shapes: Shapes, driver: Driver, query: str) -> None:
    before = dump(driver), driver.execute_query(COUNTS).records[0].values()
    with pytest.raises(ShapeError) as refused:
        shapes.ask("cypher", query=query)
    assert "\n" not in str(refused.value)
    assert (dump(driver), driver.execute_query(COUNTS).records[0].values()) == before


@pytest.mark.reliability
def test_cypher_time_limit_is_a_clear_error(house: lakehouse.Lakehouse, driver: Driver) -> None:
    slow = Shapes(house.settings.with_section("shapes", cypher_timeout=0.5), driver, "neo4j")
    with pytest.raises(ShapeError, match="time limit"):
        slow.ask("cypher", query="UNWIND range(1, 100000000) AS x WITH x WHERE x % 7 = 0 RETURN count(*)")


def test_read_only_sql_on_duckdb(shapes: Shapes) -> None:
    result = shapes.ask("run_sql", sql="SELECT vin, count(*) AS visits FROM service.work_orders GROUP BY vin ORDER BY vin").result
    assert result.engine == "duckdb" and result.columns == ["vin", "visits"]
    assert result.rows == [["VIN1", 2], ["VIN2", 1], ["VIN3", 1]]


SQL_ATTEMPTS = [
    ("DELETE FROM service.work_orders", "read-only"),
    ("UPDATE service.parts SET name = 'x'", "read-only"),
    ("INSERT INTO service.parts VALUES ('x', 1, 'y')", "read-only"),
    ("DROP TABLE service.parts", "read-only"),
    ("CREATE TABLE service.evil AS SELECT 1", "read-only"),
    ("SELECT 1; DROP TABLE service.parts", "one statement"),
    ("ATTACH '/tmp/evil.duckdb' AS evil", ""),
    ("COPY service.parts TO '/tmp/parts.csv'", ""),
    ("SELECT * FROM read_csv('/etc/passwd')", ""),
    ("INSTALL httpfs", ""),
    ("PRAGMA database_list", ""),
    ("SELECT * FROM", "does not parse"),
]


@pytest.mark.reliability
@pytest.mark.parametrize(("sql", "why"), SQL_ATTEMPTS)
def test_sql_writes_scripts_and_file_access_are_refused(shapes: Shapes, house: lakehouse.Lakehouse, sql: str, why: str) -> None:
    before = shapes.ask("run_sql", sql="SELECT count(*) FROM service.parts").result.rows
    with pytest.raises(ShapeError, match=why or None):
        shapes.ask("run_sql", sql=sql)
    assert shapes.ask("run_sql", sql="SELECT count(*) FROM service.parts").result.rows == before
    assert not Path("/tmp/parts.csv").exists() or Path("/tmp/parts.csv").stat().st_mtime < house.warehouse.stat().st_mtime


def test_sql_row_cap(house: lakehouse.Lakehouse, driver: Driver) -> None:
    capped = Shapes(house.settings.with_section("shapes", sql_max_rows=2), driver, "neo4j")
    result = capped.ask("run_sql", sql="SELECT * FROM range(10)").result
    assert len(result.rows) == 2 and result.truncated


def test_run_sql_within_a_grant_follows_the_tables_the_warehouse_holds(house: lakehouse.Lakehouse, driver: Driver, tmp_path: Path) -> None:
    """A grant's tables are kept per stamp of the warehouse, as the call's reading gives it: a
    table the warehouse gains is queryable at the next call, one it loses is refused again."""
    warehouse = tmp_path / house.warehouse.name  # a copy to write to (the other tests' shapes hold the file read-only)
    shutil.copyfile(house.warehouse, warehouse)
    settings = house.settings.with_section("warehouse", duckdb_path=str(warehouse)).with_section("shapes", sql_duckdb_linger=0)
    shapes = Shapes(settings, driver, "neo4j")
    within = Caller("service-desk", "", Grant(("service-desk",), (), ("service",), frozenset({"run-sql"})))
    sql = "SELECT count(*) AS n FROM service.recalls"
    sync = WarehouseSync(settings, driver, "neo4j")

    def recalls(ddl: str) -> None:
        with duckdb.connect(str(warehouse)) as con:
            con.execute(ddl)
        sync.sync_table("service", "recalls")

    with pytest.raises(ShapeError, match="not a table of the warehouse"):
        shapes.ask("run_sql", within, "test", sql=sql)
    recalls("CREATE TABLE service.recalls (id INTEGER)")
    try:
        assert shapes.ask("run_sql", within, "test", sql=sql).result.rows == [[0]]
    finally:
        recalls("DROP TABLE service.recalls")
    with pytest.raises(ShapeError, match="not a table of the warehouse"):
        shapes.ask("run_sql", within, "test", sql=sql)


def test_freshness_names_each_source(shapes: Shapes) -> None:
    sources = {source.source: source for source in shapes.ask("freshness").result.sources}
    assert set(sources) == {"documents", "glossary", "query-log", "values", "warehouse"}
    assert sources["query-log"].event_at.startswith("2026-11-01T10:00")
    assert all(source.age_seconds is not None and source.age_seconds < 600 for source in sources.values())


def test_available_shapes_follow_what_exists(shapes: Shapes) -> None:
    assert shapes.available() == {
        "outline",
        "search",
        "coverage",
        "bridge",
        "links",
        "table_context",
        "table",
        "join_path",
        "joins",
        "run_sql",
        "schema",
        "cypher",
        "freshness",
    }


def test_cli_read_commands(house: lakehouse.Lakehouse, neo4j_service: Neo4jService, tmp_path: Path) -> None:
    env = clean_env(**neo4j_service.env(), LAKEGRAPH_WAREHOUSE__DUCKDB_PATH=str(house.warehouse), LAKEGRAPH_STATE_DIR=str(tmp_path))
    done = run_cli("coverage", "P0420", "U0140", "--json", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["missing"] == ["P0420"] and data["found"] == [{"term": "U0140", "mentions": 1, "uris": ["shop/manuals/network#network/bcm"], "capped": False}]
    path = run_cli("join-path", "vehicles", "parts", env=env)
    assert path.returncode == 0 and "ON work_order_parts.part_no = parts.part_no AND" in path.stdout
    assert "freshness:" in run_cli("table-context", "comeback", env=env).stdout
    sql = run_cli("run-sql", "SELECT count(*) AS n FROM service.vehicles", "--json", env=env)
    assert json.loads(sql.stdout)["rows"] == [[3]]
    refused = run_cli("cypher", "CREATE (n:Evil)", env=env)
    assert_one_line_error(refused, "refused: read-only Cypher only")


def test_the_cached_join_graph_follows_new_query_logs(shapes: Shapes, driver: Driver) -> None:
    """Last in this module: it teaches the graph a new join."""
    assert not shapes.ask("join_path", table_a="technicians", table_b="work_orders").result.found
    QueryGraph(driver, "neo4j", "duckdb").absorb(
        [
            QueryEvent(
                "job-techs",
                "SELECT * FROM service.technicians t JOIN service.work_orders w ON w.id = t.tech_id",
                "cy@example.com",
                "2026-11-02T10:00:00Z",
                False,
                (),
            )
        ]
    )
    path = shapes.ask("join_path", table_a="technicians", table_b="work_orders").result
    assert path.found and path.hops[0].on == "technicians.tech_id = work_orders.id"
