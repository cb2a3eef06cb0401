"""Every shape is one spec: the CLI command, the MCP tool, the HTTP endpoint and the README table
made from it agree on names, parameters, defaults and bounds."""

from __future__ import annotations

from typing import Any

import click
import pytest
from mcp.server import MCPServer

from shapes.serving.http_api import openapi
from shapes.serving.mcp_server import tool_function
from shapes.serving.requests import THEMES_REFRESH
from shapes.spec import ShapeSpec, docs, limits
from shapes.spec.registry import SPECS
from worker.cli import cli, command_extras
from worker.commands.shapes import flag

SHARED = {"as_json", "watch"}  # options every shape command adds to its spec's


def mcp_schemas() -> dict[str, dict[str, Any]]:
    server = MCPServer("parity")
    for name, spec in SPECS.items():
        server.add_tool(tool_function(None, spec), name=name, description=spec.description, structured_output=False)  # type: ignore[arg-type]
    return {tool.name: tool.parameters for tool in server._tool_manager.list_tools()}


MCP = mcp_schemas()
OPENAPI = openapi()


def model_schema(spec: ShapeSpec) -> tuple[dict[str, Any], list[str]]:
    schema = spec.model.model_json_schema()
    return schema["properties"], schema.get("required", [])


@pytest.mark.parametrize("spec", SPECS.values(), ids=list(SPECS))
def test_the_cli_command_takes_the_spec_parameters(spec: ShapeSpec) -> None:
    command = cli.get_command(click.Context(cli), spec.command)
    assert command is not None
    extras = {param.name for param in command.params} - set(spec.fields()) - SHARED
    worker_side = command_extras().get(spec.name)
    assert extras == ({option.name for option in worker_side.options} if worker_side else set())
    for name, field in spec.fields().items():
        param = next(param for param in command.params if param.name == name)
        if name in spec.arguments:
            assert isinstance(param, click.Argument) and param.required == field.is_required()
            continue
        assert isinstance(param, click.Option) and param.opts == [flag(name)]
        default = None if field.is_required() or field.default in (None, [], {}) else field.default
        assert param.default == default, name
        assert param.required == (field.is_required() and not param.multiple)
        for rule, value in limits(field).items():
            assert str(value) in (param.help or ""), (name, rule)  # the bounds are in its help
    assert [param.name for param in command.params if isinstance(param, click.Argument)] == list(spec.arguments)


@pytest.mark.parametrize("spec", SPECS.values(), ids=list(SPECS))
def test_the_mcp_tool_schema_is_the_spec_model(spec: ShapeSpec) -> None:
    properties, required = model_schema(spec)
    tool = MCP[spec.name]
    assert {name: value for name, value in tool["properties"].items() if name != "format"} == dict(properties.items())
    assert sorted(tool.get("required", [])) == sorted(required)


@pytest.mark.parametrize("spec", SPECS.values(), ids=list(SPECS))
def test_the_http_endpoint_takes_the_spec_parameters(spec: ShapeSpec) -> None:
    properties, required = model_schema(spec)
    operation = OPENAPI["paths"][spec.path][spec.method.lower()]
    if spec.method == "GET":
        taken = {param["name"]: (param["schema"], param["required"]) for param in operation["parameters"] if param["name"] != "format"}
        assert taken == {name: (schema, name in required) for name, schema in properties.items()}
    else:
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert {name: value for name, value in body["properties"].items() if name != "format"} == properties
        assert body["required"] == required
    assert operation["operationId"] == spec.name


def test_one_name_per_shape_everywhere() -> None:
    assert set(MCP) == set(SPECS)
    assert {path for path in OPENAPI["paths"] if path.startswith("/v1/") and path not in ("/v1/tools", THEMES_REFRESH)} == {
        spec.path for spec in SPECS.values()
    }
    assert all(spec.command == spec.name.replace("_", "-") and spec.path == f"/v1/{spec.command}" for spec in SPECS.values())
    assert {spec.command for spec in SPECS.values()} <= set(cli.list_commands(click.Context(cli)))


def test_the_openapi_document_is_valid() -> None:
    from openapi_spec_validator import validate

    validate(OPENAPI)


def test_the_readme_shapes_table_is_current() -> None:
    readme = docs.README.read_text()
    assert docs.with_table(readme) == readme, "the README's shapes table is stale: run `python -m shapes.spec.docs`"


def test_the_command_index_is_current() -> None:
    assert docs.INDEX.read_text() == docs.index(), "shapes/spec/index.py is stale: run `python -m shapes.spec.docs`"


def test_the_resource_catalogue_in_the_docs_is_current() -> None:
    page = docs.SHAPES_DOC.read_text()
    assert docs.with_catalogue(page) == page, "docs/shapes.md's resource catalogue is stale: run `python -m shapes.spec.docs`"
