"""Optional embeddings: a real all-MiniLM-L6-v2 forward pass, vectors only for changed text, and
vector indexes that exist exactly when an embedder is configured."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from worker.embedding.factory import embedder
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
    apply_schema(neo4j_service.settings, driver, "neo4j")  # no embedder: the vector indexes go


def hashes(driver: Driver) -> dict[str, str]:
    return {
        row["id"]: row["hash"] for row in driver.execute_query("MATCH (n) WHERE n.embedding IS NOT NULL RETURN n.id AS id, n.embedding_hash AS hash").records
    }


def test_bundled_model_matches_sentence_transformers(bert_settings: Settings) -> None:
    model = embedder(bert_settings)
    assert model is not None and model.dimensions == 384
    vector = np.array(model.embed([REFERENCE_SENTENCE])[0])
    assert np.allclose(vector[:5], REFERENCE_START, atol=1e-5)
    assert abs(np.linalg.norm(vector) - 1.0) < 1e-5
    a, b, c = (np.array(v) for v in model.embed(["vehicle repair jobs", "work orders for car repairs", "staff payroll"]))
    assert a @ b > a @ c + 0.2


def test_vector_indexes_follow_the_embedder(driver: Driver, bert_settings: Settings, neo4j_service: Neo4jService, clean_graph: None) -> None:
    apply_schema(bert_settings, driver, "neo4j")
    rows = [(row["name"], row["size"]) for row in driver.execute_query(VECTOR_INDEXES).records]
    assert rows == [("businessterm_vector_index", 384), ("column_vector_index", 384), ("table_vector_index", 384)]
    assert schema.apply(driver, "neo4j", vector_dimensions=384).created == []
    apply_schema(neo4j_service.settings, driver, "neo4j")
    assert driver.execute_query(VECTOR_INDEXES).records == []


def test_only_changed_text_is_embedded(driver: Driver, bert_settings: Settings, clean_graph: None) -> None:
    apply_schema(bert_settings, driver, "neo4j")
    sync = WarehouseSync(bert_settings, driver, "neo4j")
    assert sync.embeddings is not None
    sync.sync_schema("service")
    sizes = driver.execute_query(
        "MATCH (n) WHERE n.embedding IS NOT NULL RETURN labels(n)[0] AS label, count(*) AS n, min(size(n.embedding)) AS dims ORDER BY label"
    ).records
    assert [(row["label"], row["n"], row["dims"]) for row in sizes] == [("Column", 9, 384), ("Table", 3, 384)]

    assert sync.embeddings.refresh().embedded == {"Table": 0, "Column": 0, "BusinessTerm": 0}

    before = hashes(driver)
    with duckdb.connect(str(bert_settings.duckdb_file)) as con:
        con.execute("COMMENT ON TABLE service.invoices IS 'Bills sent to customers and their payments'")
    sync.sync_schema("service")
    after = hashes(driver)
    assert sorted(node for node in after if after[node] != before[node]) == ["warehouse.service.invoices"]

    model = embedder(bert_settings)
    assert model is not None
    vector = model.embed(["which table has the vehicle repairs done in the garage"])[0]
    names = [row["name"] for row in driver.execute_query(NEAREST_TABLES, vector=vector).records]
    assert names[0] == "work_orders"
