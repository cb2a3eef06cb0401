"""`lakegraph demo`: make the demo dataset if absent, run the live stack on it (`up --serve`),
load everything with progress bars, run themes, and print where to look."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from worker.cli_support import err, out, progress_bars
from worker.demo.dataset import CONFIG, Sizes, existing, generate
from worker.settings import Settings, load_settings

COMMANDS_TO_TRY = (
    'search "P0301 misfire" --expand "cylinder 1 misfire"',
    "outline technical-library/bulletins/tsb-24-017 --depth 2",
    'table-context "comeback ratio"',
    "join-path work_orders parts",
    "coverage P0301 C0035 U0422 P0A80",
    "bridge --column work_orders.fault_code",
    "themes",
    'run-sql "SELECT fault_code, COUNT(*) AS visits FROM service.work_orders GROUP BY 1 ORDER BY 2 DESC LIMIT 5"',
)


def load_everything(settings: Settings) -> dict:
    """The one-shot loads `load docs` and `load warehouse` do, then a themes run."""
    from worker.documents.loader import load
    from worker.documents.sync import DocumentSync
    from worker.graph.connection import connect
    from worker.themes.runner import ThemeRunner
    from worker.themes.schedule import exclusive_run
    from worker.warehouse.load import load_warehouse

    driver, where = connect(settings)
    with driver, progress_bars() as progress:
        documents = load(DocumentSync(settings, driver, where.database), progress)
        load_warehouse(settings, driver, where.database, progress)
        progress("themes", 0, 1)
        with exclusive_run(settings):
            themes = ThemeRunner(settings, driver, where.database).run(force=True).themes
        progress("themes", 1, 1)
    return {"documents": documents.documents, "themes": themes}


def wait_for_tools(base: str, token: str, timeout: float = 60.0) -> None:
    """Ready means an agent finds every tool: wait until the server offers the themes too (it
    re-checks what exists every serve.tools_refresh_interval seconds)."""
    import httpx2

    from worker.runtime.processes import wait_until

    def offered() -> bool:
        try:
            answer = httpx2.get(f"{base}/v1/tools", headers={"Authorization": f"Bearer {token}"}, timeout=5)
        except httpx2.HTTPError:
            return False
        return answer.status_code == 200 and "themes" in answer.json()["available"]

    wait_until(offered, timeout, "the MCP and HTTP server to offer every tool")


@click.command("demo")
@click.option("--folder", type=click.Path(path_type=Path), default=Path("lakegraph-demo"), show_default=True, help="Where the dataset lives.")
@click.option("--seed", default=7, show_default=True, help="Dataset seed (the same seed gives the same dataset).")
@click.option("--vehicles", default=400, show_default=True, help="Vehicles in the simulated fleet.")
@click.option("--port", type=int, help="Port for MCP and the HTTP API (default serve.port).")
def demo_command(folder: Path, seed: int, vehicles: int, port: int | None) -> None:
    """Make the demo dataset if absent, run the live stack on it, and show where to look."""
    from shapes.serve import bearer_token
    from worker import supervisor

    began = time.monotonic()
    sizes = Sizes(seed=seed, vehicles=vehicles)
    folder = folder.resolve()
    manifest = existing(folder, sizes)
    if manifest is None:
        with err.status(f"making the demo dataset in {folder}"):
            manifest = generate(folder, sizes)
        out.print(f"dataset   made in {folder}: {manifest.documents} documents, {manifest.work_orders} work orders", highlight=False)
    else:
        out.print(f"dataset   reused from {folder}: {manifest.documents} documents, {manifest.work_orders} work orders", highlight=False)
    if port is not None:  # the supervised `serve` child reads it from the environment too
        os.environ["LAKEGRAPH_SERVE__PORT"] = str(port)
    settings = load_settings(folder / CONFIG)
    token = bearer_token(settings)
    base = f"http://{settings.serve.host}:{settings.serve.port}"

    def ready(stack: supervisor.Stack) -> None:
        summary = load_everything(settings)
        wait_for_tools(base, token)
        out.print(f"[bold green]ready[/] in {time.monotonic() - began:.1f} s: {summary['documents']} documents, {summary['themes']} themes")
        out.print(f"themes page  {base}/themes?token={token}", highlight=False, markup=False)
        out.print(f"MCP          {base}/mcp  (Authorization: Bearer <{settings.state_path / 'serve' / 'token'}>)", highlight=False, markup=False)
        out.print(f"HTTP API     {base}/v1/...  ({base}/openapi.json)", highlight=False, markup=False)
        out.print("try, in another terminal:", highlight=False)
        for command in COMMANDS_TO_TRY:
            out.print(f"  lakegraph --config {folder / CONFIG} {command}", highlight=False, markup=False)
        out.print(
            f"edit a file under {folder / 'library'} or drop a log file in {folder / 'audit-logs'}: the graph follows. Ctrl-C stops.",
            highlight=False,
            markup=False,
        )

    supervisor.run(settings, say=lambda line: out.print(line, highlight=False, markup=False), ready=ready, serve=True)
