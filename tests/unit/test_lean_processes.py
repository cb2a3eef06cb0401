"""Beat and the watcher only send task names: they must not load the graph driver, the warehouse
clients, the data stack or the shapes (each of those made every process of the stack weigh about
250 MB; beat and the watcher now stay under 120 MB)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from worker import task_names as names

# (sqlglot is allowed: the settings check the SQL dialect by name against it)
HEAVY = ("neo4j", "numpy", "pandas", "pyarrow", "duckdb", "google.cloud", "grpc", "pypdf", "igraph", "leidenalg", "shapes")

ENV = {"LAKEGRAPH_REDIS__URL": "redis://127.0.0.1:1/0"}  # a URL is never dialled here
REPORT = "import json, sys; print(json.dumps(sorted({m.split('.')[0] if m.split('.')[0] != 'google' else m for m in sys.modules})))"
PROCESSES = {
    "watch": "import worker.watch; from worker.settings import load_settings; load_settings()",
    # what `celery -A worker.celery_app:beat_app beat` loads: the app, its configuration, its task modules
    "beat": "from worker.celery_app import beat_app; beat_app.loader.import_default_modules(); beat_app.conf.beat_schedule",
}


@pytest.mark.parametrize("process", sorted(PROCESSES))
def test_senders_import_nothing_heavy(process: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"{PROCESSES[process]}; {REPORT}"], env=ENV, capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert [module for module in loaded if module.startswith(HEAVY)] == []


def test_the_worker_app_registers_exactly_the_declared_tasks() -> None:
    """In a child process: loading the worker app's configuration here would pin it for later tests."""
    check = (
        "import json; from worker.celery_app import app; app.loader.import_default_modules(); "
        "print(json.dumps(sorted(name for name in app.tasks if name.startswith('lakegraph.'))))"
    )
    done = subprocess.run([sys.executable, "-c", check], env=ENV, capture_output=True, text=True, check=True)
    declared = {value for key, value in vars(names).items() if key.isupper() and isinstance(value, str)}
    assert set(json.loads(done.stdout.splitlines()[-1])) == declared
    assert set(names.SOURCE_OF) <= declared
