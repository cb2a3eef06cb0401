"""`python -m tests.services install`: prepare, ahead of the run, what the test services need."""

import sys

from tests.services import axe, neocarta, oidc_issuer
from worker.runtime import bigquery_emulator, fake_gcs, maven, pubsub_emulator
from worker.settings import load_settings


def install() -> None:
    cache = load_settings().cache_path
    print(f"neo4j + gds jars: {maven.resolve(cache / 'maven').lib_dir}")
    print(f"bigquery emulator: {bigquery_emulator.ensure_venv(cache)}")
    print(f"pubsub emulator: {pubsub_emulator.emulator_script()}")
    print(f"fake-gcs-server: {fake_gcs.ensure_binary(cache)}")
    print(f"neocarta mcp: {neocarta.ensure_venv(cache)}")
    print(f"oidc issuer: {oidc_issuer.ensure_packages(cache)}")
    print(f"axe-core: {axe.script(cache)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python -m tests.services install")
    install()
