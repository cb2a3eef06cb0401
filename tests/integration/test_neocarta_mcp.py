"""Neocarta's own MCP server, started in its own venv against a graph lakegraph wrote, answers every
tool it registers with real content: the metadata graph follows Neocarta's conventions."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from neo4j import Driver

from tests import lakehouse
from tests.conftest import Neo4jService
from tests.services import neocarta
from worker.runtime import neo4j_server
from worker.settings import load_settings

pytestmark = pytest.mark.timeout(600)
EXPECTED_TOOLS = [
    "get_context_by_column_full_text_search",
    "get_context_by_table_full_text_search",
    "get_full_metadata_schema",
    "list_schemas",
    "list_tables_by_schema",
]


async def _call(client: Client, name: str, arguments: dict) -> object:
    result = await client.call_tool(name, arguments)
    text = "\n".join(block.text for block in result.content if hasattr(block, "text"))
    assert not result.is_error, f"{name}: {text}"
    return result.structured_content if result.structured_content is not None else json.loads(text)


def test_neocartas_mcp_server_answers_every_tool_on_a_lakegraph_graph(neo4j_service: Neo4jService, driver: Driver, tmp_path: Path) -> None:
    # Without lakegraph's vectors: with them Neocarta registers its hybrid tools, which embed the
    # question through an embeddings API of its own (LiteLLM) that no test can reach.
    lakehouse.build(neo4j_service.settings.with_section("embeddings", provider="none"), driver, tmp_path)
    script = neocarta.ensure_venv(load_settings().cache_path)
    env = {
        "NEO4J_URI": neo4j_service.uri,
        "NEO4J_USERNAME": neo4j_server.LOCAL_USER,
        "NEO4J_PASSWORD": neo4j_service.password,
        "NEO4J_DATABASE": "neo4j",
        "HOME": str(tmp_path),
    }
    log = tmp_path / "neocarta-mcp.log"

    async def session() -> dict[str, object]:
        # its log (stderr) kept to check it found the graph's metadata node
        params = StdioServerParameters(command="/bin/sh", args=["-c", f'exec "{script}" 2>"{log}"'], env=env, cwd=str(tmp_path))
        async with Client(params) as client:
            tools = sorted(tool.name for tool in (await client.list_tools()).tools)
            assert tools == EXPECTED_TOOLS
            return {
                "schemas": await _call(client, "list_schemas", {}),
                "tables": await _call(client, "list_tables_by_schema", {"schema_name": "service"}),
                "full": await _call(client, "get_full_metadata_schema", {}),
                "by_table": await _call(client, "get_context_by_table_full_text_search", {"text_content": "repair visits"}),
                "by_column": await _call(client, "get_context_by_column_full_text_search", {"text_content": "is_comeback"}),
            }

    answers = anyio.run(session)
    rows = lambda answer: answer["result"] if isinstance(answer, dict) and "result" in answer else answer
    assert rows(answers["schemas"]) == [{"database_name": "warehouse", "schema_name": "service"}]
    [listing] = rows(answers["tables"])
    assert sorted(listing["table_names"]) == ["fault_codes", "parts", "technicians", "vehicles", "work_order_parts", "work_orders"]

    full = {table["table_name"]: table for table in rows(answers["full"])}
    orders = {column["column_name"]: column for column in full["work_orders"]["columns"]}
    assert (orders["id"]["data_type"], orders["id"]["key_type"], orders["id"]["nullable"]) == ("INTEGER", "primary", False)
    assert (orders["vin"]["data_type"], orders["vin"]["key_type"], orders["vin"]["references"]) == ("VARCHAR", "foreign", ["vehicles.vin"])
    assert all(column["data_type"] for table in full.values() for column in table["columns"])
    line_parts = {column["column_name"]: column for column in full["work_order_parts"]["columns"]}
    assert line_parts["part_no"]["key_type"] == "foreign" and line_parts["part_no"]["references"] == ["parts.part_no"]

    [first, *_] = rows(answers["by_table"])
    assert first["table_name"] == "work_orders" and first["table_description"].startswith("Repair visits")
    assert [table["table_name"] for table in rows(answers["by_column"])][:1] == ["work_orders"]
    logged = log.read_text()
    assert "Neocarta graph metadata version 0.8.0" in logged and "No `__neocarta_graph__` metadata node" not in logged
