"""`lakegraph demo`: make the demo dataset if absent, run the live stack on it (`up --serve`),
load everything with progress bars, run themes, and print where to look."""

from __future__ import annotations

import os
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import click

from worker.cli_support import err, out, progress_bars, say

if TYPE_CHECKING:
    from worker.settings import Settings

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
    from worker.components import Components
    from worker.documents.loader import load
    from worker.themes.schedule import exclusive_run

    with Components.open(settings) as components, progress_bars() as progress:
        documents = load(components.documents, progress)
        components.load_warehouse(progress)
        progress("themes", 0, 1)
        with exclusive_run(settings):
            themes = components.themes.run(force=True).themes
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


def print_ready(settings: Settings, summary: dict, began: float, token: str, config: Path) -> None:
    base = f"http://{settings.serve.host}:{settings.serve.port}"
    out.print(f"[bold green]ready[/] in {time.monotonic() - began:.1f} s: {summary['documents']} documents, {summary['themes']} themes")
    say(f"themes page  {base}/themes?token={token}")
    say(f"MCP          {base}/mcp  (Authorization: Bearer <{settings.state_path / 'serve' / 'token'}>)")
    say(f"HTTP API     {base}/v1/...  ({base}/openapi.json)")
    say("try, in another terminal:")
    for command in COMMANDS_TO_TRY:
        say(f"  lakegraph --config {config} {command}")


def run_local(settings: Settings, folder: Path, began: float) -> None:
    """The demo on the local engines: DuckDB, a watched folder, audit-log files."""
    from shapes.serving.serve import bearer_token
    from worker import supervisor
    from worker.demo.dataset import CONFIG

    token = bearer_token(settings)
    summary: dict = {}

    def ready(stack: supervisor.Stack) -> None:
        wait_for_tools(f"http://{settings.serve.host}:{settings.serve.port}", token)
        print_ready(settings, summary, began, token, folder / CONFIG)
        say(f"edit a file under {folder / 'library'} or drop a log file in {folder / 'audit-logs'}: the graph follows. Ctrl-C stops.")

    supervisor.run(settings, say=say, ready=ready, serve=True, load=lambda stack: summary.update(load_everything(settings)))


def run_google(folder: Path, began: float) -> None:
    """The demo on Google's emulators: the warehouse in BigQuery, audit logs through Pub/Sub, the
    library in a Cloud Storage bucket with notifications; then both live paths, timed."""
    from google.cloud import pubsub_v1

    from shapes.serving.serve import bearer_token
    from worker import supervisor
    from worker.demo import google, probes
    from worker.demo.dataset import CONFIG
    from worker.settings import load_settings
    from worker.shared.google_clients import pubsub_environment

    cache, config = load_settings(folder / CONFIG).cache_path, folder / google.CONFIG
    with ExitStack() as running:
        with err.status("starting the BigQuery, Pub/Sub and Cloud Storage emulators and filling them"):
            found = running.enter_context(google.emulators(folder / google.STATE / "emulators", cache))
            config.write_text(google.config_text(folder, found))
            settings = load_settings(config)
            provisioned = google.provision(settings, folder)
        token = bearer_token(settings)
        api = probes.Api(f"http://{settings.serve.host}:{settings.serve.port}", token)
        say(
            f"google    BigQuery emulator {found.bigquery_endpoint} ({provisioned.warehouse_rows} rows), "
            f"bucket gs://{google.BUCKET} ({provisioned.library_objects} objects) on fake-gcs-server {found.storage_endpoint}, "
            f"Pub/Sub emulator {found.pubsub_host}"
        )

        summary: dict = {}

        def ready(stack: supervisor.Stack) -> None:
            google.absorb_query_log(settings, folder)  # through the subscriber, once the warehouse is loaded
            wait_for_tools(api.base, token)
            print_ready(settings, summary, began, token, config)
            with pubsub_environment(settings):
                publisher = pubsub_v1.PublisherClient()
                edit = probes.edit_to_search(api, google.bucket(settings), folder / "library")
                join = probes.query_to_join(api, publisher)
            say(f"live      bucket upload → searchable in {edit:.2f} s; published audit-log query → learned join in {join:.2f} s")
            say(
                f"edit a file by uploading it under gs://{google.BUCKET}/{google.LIBRARY_PREFIX}/, or publish an audit-log entry to "
                f"projects/{google.PROJECT}/topics/{google.AUDIT_TOPIC}: the graph follows. Ctrl-C stops."
            )

        supervisor.run(settings, say=say, ready=ready, serve=True, load=lambda stack: summary.update(load_everything(settings)))


@click.command("demo")
@click.option("--folder", type=click.Path(path_type=Path), default=Path("lakegraph-demo"), show_default=True, help="Where the dataset lives.")
@click.option("--seed", default=7, show_default=True, help="Dataset seed (the same seed gives the same dataset).")
@click.option("--vehicles", default=400, show_default=True, help="Vehicles in the simulated fleet.")
@click.option("--port", type=int, help="Port for MCP and the HTTP API (default serve.port).")
@click.option(
    "--google",
    is_flag=True,
    help="Run on Google's emulators: the warehouse in BigQuery, its audit logs through Pub/Sub, the library in a Cloud Storage bucket.",
)
def demo_command(folder: Path, seed: int, vehicles: int, port: int | None, google: bool) -> None:
    """Make the demo dataset if absent, run the live stack on it, and show where to look."""
    from worker.demo.dataset import CONFIG, Sizes, existing, generate
    from worker.settings import load_settings

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
    if google:
        run_google(folder, began)
    else:
        run_local(load_settings(folder / CONFIG), folder, began)
