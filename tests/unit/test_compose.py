"""The production compose stack, checked without Docker (`docker compose config` cannot run here):
the file loads, every lakegraph service runs a real entry point, and the settings each receives
(with `.env.example` filled in, as its comment says to) are real settings with valid values."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from worker.cli import cli
from worker.exceptions import LakegraphError
from worker.settings import load_settings

COMPOSE = Path(__file__).resolve().parents[2] / "compose"
STACK = yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())
LAKEGRAPH_SERVICES = sorted(name for name, service in STACK["services"].items() if service.get("image", "").startswith("lakegraph:"))
# ${NAME}, ${NAME:-default}, ${NAME:?error} as compose reads them; $$ is a literal $.
VARIABLE = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}")


def example_env() -> dict[str, str]:
    lines = (COMPOSE / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def interpolated(value: str, env: dict[str, str]) -> str:
    def one(found: re.Match) -> str:
        name, kind, default = found.groups()
        if name in env:
            return env[name]
        if kind == "?":
            raise AssertionError(f"compose would refuse to start: {name} is unset ({default})")
        return default or ""

    return VARIABLE.sub(one, value).replace("$$", "$")


def test_the_stack_runs_every_process_lakegraph_up_runs() -> None:
    assert {"neo4j", "redis", "init", "worker", "beat", "watch", "serve", "subscribe"} <= STACK["services"].keys()


@pytest.mark.parametrize("service", LAKEGRAPH_SERVICES)
def test_each_lakegraph_service_runs_a_real_entry_point(service: str) -> None:
    command = STACK["services"][service]["command"]
    if command[0] == "lakegraph":
        name = command[1]
        group = cli.make_context("lakegraph", [name], resilient_parsing=True)
        found = cli.get_command(group, name)
        assert found is not None, f"{service}: no command lakegraph {name}"
        with found.make_context(name, list(command[2:]), parent=group) as context:  # unknown options or arguments raise
            assert context.command is found
    elif command[0] == "celery":
        assert command[1] == "-A" and command[3] in ("worker", "beat"), command
        module, _, attribute = command[2].partition(":")
        app = getattr(importlib.import_module(module), attribute or "app")
        assert type(app).__name__ == "Celery", f"{service}: {command[2]} is not a Celery app"
    else:
        assert command[:2] == ["python", "-m"], command
        assert importlib.util.find_spec(command[2]) is not None, f"{service}: no module {command[2]}"


@pytest.mark.parametrize("service", LAKEGRAPH_SERVICES)
def test_each_lakegraph_service_gets_real_settings(service: str, monkeypatch: pytest.MonkeyPatch) -> None:
    environment = STACK["services"][service]["environment"]
    assert any(name.startswith("LAKEGRAPH_") for name in environment)
    example = example_env()
    for name, value in environment.items():
        monkeypatch.setenv(name, interpolated(str(value), example))
    settings = load_settings()  # refuses an unknown LAKEGRAPH_* variable or a bad value in one line
    assert settings.neo4j.uri == "bolt://neo4j:7687" and settings.redis.url.get_secret_value() == "redis://redis:6379/0"
    assert [library.name for library in settings.documents.libraries] == [example["LIBRARY_NAME"]]


def test_an_unknown_variable_in_the_stack_would_be_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the check above does refuse a variable that is not a setting."""
    monkeypatch.setenv("LAKEGRAPH_NEO4J__HEAP", "2g")
    with pytest.raises(LakegraphError, match="unknown environment variable LAKEGRAPH_NEO4J__HEAP"):
        load_settings()
