"""The settings model: defaults from config/lakegraph.toml, a user file, env vars, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import assert_one_line_error, clean_env, run_cli
from worker import task_names as names
from worker.exceptions import LakegraphError
from worker.settings import DEFAULTS_FILE, load_settings, mask_url


def test_defaults_come_from_the_documented_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load_settings()
    assert settings.state_path == tmp_path / ".lakegraph"
    assert settings.neo4j.uri == ""
    assert settings.warehouse.engine == "duckdb"
    assert settings.duckdb_file == tmp_path / ".lakegraph" / "warehouse.duckdb"
    assert 'state_dir = ".lakegraph"' in DEFAULTS_FILE.read_text()


def test_a_section_replaced_derives_its_paths_again(tmp_path: Path) -> None:
    """Paths computed from a section (kept once computed) follow a copy that replaces it."""
    settings = load_settings(state_dir=str(tmp_path))
    assert settings.duckdb_file == tmp_path / "warehouse.duckdb" and settings.access_audit_path == tmp_path / "audit" / "access.jsonl"
    moved = settings.with_section("warehouse", duckdb_path=str(tmp_path / "elsewhere" / "shop.duckdb"))
    assert moved.duckdb_file == tmp_path / "elsewhere" / "shop.duckdb"
    assert settings.duckdb_file == tmp_path / "warehouse.duckdb"  # the original is unchanged
    assert moved.with_section("auth", audit_file="logs/who.jsonl").access_audit_path == tmp_path / "logs" / "who.jsonl"


def test_user_file_then_environment_override_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "mine.toml"
    user.write_text('log_level = "debug"\n[neo4j]\nuri = "bolt://db:7687"\nuser = "alice"\n')
    monkeypatch.setenv("LAKEGRAPH_CONFIG", str(user))
    monkeypatch.setenv("LAKEGRAPH_NEO4J__USER", "bob")
    monkeypatch.setenv("LAKEGRAPH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LAKEGRAPH_WAREHOUSE__BIGQUERY_DATASETS", '["sales", "ops"]')
    settings = load_settings()
    assert settings.log_level == "debug"
    assert settings.neo4j.uri == "bolt://db:7687"
    assert settings.neo4j.user == "bob"  # env beats the user file
    assert settings.neo4j.database == "neo4j"  # untouched keys keep their default
    assert settings.state_path == tmp_path / "state"
    assert settings.warehouse.bigquery_datasets == ["sales", "ops"]


def test_local_lakegraph_toml_is_picked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lakegraph.toml").write_text("[worker]\nconcurrency = 3\n")
    monkeypatch.chdir(tmp_path)
    assert load_settings().worker.concurrency == 3


def test_unknown_key_in_a_file_names_the_key_and_the_allowed_ones(tmp_path: Path) -> None:
    user = tmp_path / "bad.toml"
    user.write_text('[neo4j]\nurl = "bolt://x:1"\n')
    with pytest.raises(LakegraphError) as caught:
        load_settings(user)
    message = str(caught.value)
    assert "unknown key 'neo4j.url'" in message
    assert "uri, user, password" in message


def test_unknown_environment_variable_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEGRAPH_NEO4J__URL", "bolt://x:1")
    with pytest.raises(LakegraphError, match="unknown environment variable LAKEGRAPH_NEO4J__URL"):
        load_settings()


def test_bad_values_name_the_key_and_the_allowed_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEGRAPH_WAREHOUSE__ENGINE", "oracle")
    with pytest.raises(LakegraphError) as caught:
        load_settings()
    assert "warehouse.engine" in str(caught.value)
    assert "'duckdb', 'bigquery', 'postgres' or 'mysql'" in str(caught.value)


@pytest.mark.parametrize(
    ("variable", "value", "fragment"),
    [
        ("LAKEGRAPH_NEO4J__BOLT_PORT", "70000", "neo4j.bolt_port"),
        ("LAKEGRAPH_NEO4J__HEAP_SIZE", "lots", "neo4j.heap_size"),
        ("LAKEGRAPH_NEO4J__URI", "http://db:7474", "bolt, bolt+s"),
        ("LAKEGRAPH_REDIS__URL", "amqp://broker", "redis, rediss, redis+socket"),
        ("LAKEGRAPH_LOG_LEVEL", "loud", "'debug', 'info', 'warning' or 'error'"),
    ],
)
def test_each_bad_value_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, variable: str, value: str, fragment: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(LakegraphError, match=None) as caught:
        load_settings()
    assert fragment in str(caught.value)


def test_missing_user_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LakegraphError, match="does not exist"):
        load_settings(tmp_path / "absent.toml")


def test_secrets_are_masked() -> None:
    settings = load_settings(neo4j={"password": "hunter2"}, redis={"url": "redis://:s3cret@cache:6379/0"})
    masked = settings.masked()
    assert masked["neo4j"]["password"] == "********"
    assert masked["redis"]["url"] == "redis://:********@cache:6379/0"
    assert "hunter2" not in json.dumps(masked) and "s3cret" not in json.dumps(masked)
    assert mask_url("redis+socket:///tmp/r.sock") == "redis+socket:///tmp/r.sock"


def test_config_command_prints_effective_settings_masked(tmp_path: Path) -> None:
    env = clean_env(LAKEGRAPH_NEO4J__PASSWORD="hunter2", LAKEGRAPH_STATE_DIR=str(tmp_path))
    result = run_cli("config", "--json", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["neo4j"]["password"] == "********"
    assert data["state_dir"] == str(tmp_path)
    text = run_cli("config", env=env, cwd=tmp_path)
    assert "[neo4j]" in text.stdout and "hunter2" not in text.stdout


def test_config_command_refuses_an_unknown_key_in_one_line(tmp_path: Path) -> None:
    result = run_cli("config", env=clean_env(LAKEGRAPH_NEO4J__URII="x"), cwd=tmp_path)
    assert_one_line_error(result, "LAKEGRAPH_NEO4J__URII")


def test_the_celery_configuration_follows_the_worker_settings() -> None:
    """A crashed worker's tasks come back after worker.visibility_timeout (not kombu's hour), and
    beat moves problems held in Redis into the graph."""
    from worker.celery_app import HELD_PROBLEMS_SWEEP, celery_config

    settings = load_settings(redis={"url": "redis://127.0.0.1:1/0"}, worker={"visibility_timeout": 42})
    config = celery_config(settings)
    assert config["broker_transport_options"]["visibility_timeout"] == 42
    assert config["task_acks_late"] and config["task_reject_on_worker_lost"]
    schedule = config["beat_schedule"]
    assert schedule["settle-held-problems"] == {"task": names.SETTLE_HELD_PROBLEMS, "schedule": HELD_PROBLEMS_SWEEP}
    assert schedule["reconcile-documents"]["schedule"] == settings.documents.reconcile_interval
    with pytest.raises(LakegraphError, match="visibility_timeout"):
        load_settings(worker={"visibility_timeout": 1})


def test_the_query_history_is_polled_where_the_warehouse_keeps_one() -> None:
    """BigQuery's jobs and PostgreSQL's pg_stat_statements, every jobs_poll_interval; DuckDB keeps no history."""
    from worker.celery_app import beat_schedule

    postgres = load_settings(warehouse={"engine": "postgres", "url": "postgresql://lakegraph@db:5432/shop", "jobs_poll_interval": 60})
    assert beat_schedule(postgres)["poll-jobs"] == {"task": names.POLL_JOBS, "schedule": 60}
    assert postgres.warehouse.query_dialect == "postgres"  # its log is in its own dialect, whatever sql_dialect says
    assert "poll-jobs" not in beat_schedule(load_settings(warehouse={"jobs_poll_interval": 60}))


def test_the_packaged_defaults_are_the_documented_file() -> None:
    """The wheel ships worker/defaults.toml; config/lakegraph.toml is the copy users read."""
    documented = Path(__file__).resolve().parents[2] / "config" / "lakegraph.toml"
    assert DEFAULTS_FILE.name == "defaults.toml" and DEFAULTS_FILE.parent.name == "worker"
    assert DEFAULTS_FILE.read_bytes() == documented.read_bytes()


def test_a_section_given_as_json_merges_with_its_keys_given_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEGRAPH_NEO4J", '{"uri": "bolt://db:7687", "user": "alice"}')
    monkeypatch.setenv("lakegraph_neo4j__user", "bob")  # any case, and the single key wins
    settings = load_settings(neo4j={"database": "graph"})  # a call's override wins over both
    assert (settings.neo4j.uri, settings.neo4j.user, settings.neo4j.database) == ("bolt://db:7687", "bob", "graph")
    assert settings.neo4j.heap_size  # keys given nowhere keep their default


@pytest.mark.parametrize(
    ("variable", "value", "fragment"),
    [
        ("LAKEGRAPH_WAREHOUSE__BIGQUERY_DATASETS", "sales,ops", "LAKEGRAPH_WAREHOUSE__BIGQUERY_DATASETS must be JSON"),
        ("LAKEGRAPH_DOCUMENTS", "{not json", "LAKEGRAPH_DOCUMENTS must be JSON"),
    ],
)
def test_a_structured_value_that_is_not_json_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, variable: str, value: str, fragment: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(LakegraphError, match=fragment):
        load_settings()


def test_an_unparsable_user_file_is_named(tmp_path: Path) -> None:
    user = tmp_path / "broken.toml"
    user.write_text("[neo4j\nuri = 1\n")
    with pytest.raises(LakegraphError, match=f"config: {user}: "):
        load_settings(user)
