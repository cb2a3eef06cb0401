"""Google Cloud clients built from settings: Google's services, or an emulator when an endpoint is set."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.auth.exceptions import DefaultCredentialsError
from google.cloud import bigquery, storage

from worker.exceptions import LakegraphError
from worker.settings import Settings

PUBSUB_EMULATOR_ENV = "PUBSUB_EMULATOR_HOST"


def bigquery_client(settings: Settings) -> bigquery.Client:
    conf = settings.warehouse
    if not conf.bigquery_project:
        raise LakegraphError("warehouse.bigquery_project is not set")
    if conf.bigquery_endpoint:  # an emulator: no credentials
        return bigquery.Client(
            project=conf.bigquery_project,
            location=conf.bigquery_location,
            credentials=AnonymousCredentials(),
            client_options=ClientOptions(api_endpoint=conf.bigquery_endpoint),
        )
    try:
        return bigquery.Client(project=conf.bigquery_project, location=conf.bigquery_location)
    except DefaultCredentialsError:
        raise LakegraphError("no Google credentials for BigQuery: run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS") from None


def storage_client(project: str, endpoint: str) -> storage.Client:
    """A Cloud Storage client: an emulator's (no credentials) when `endpoint` is set."""
    if endpoint:
        return storage.Client(project=project or "lakegraph-local", credentials=AnonymousCredentials(), client_options=ClientOptions(api_endpoint=endpoint))
    try:
        return storage.Client(project=project or None)
    except DefaultCredentialsError:
        raise LakegraphError(
            "no Google credentials for Cloud Storage: run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"
        ) from None


# One thread at a time sets and restores the variable: `lakegraph subscribe` builds a client per
# subscription in threads of their own, and one restoring it while another builds would point that
# client at Google's service instead of the emulator.
_ENVIRONMENT = threading.RLock()


@contextmanager
def pubsub_environment(settings: Settings) -> Iterator[None]:
    """Pub/Sub clients find an emulator only through PUBSUB_EMULATOR_HOST; set it while they are built."""
    host = settings.pubsub.emulator_host
    if not host:
        yield
        return
    with _ENVIRONMENT:
        previous = os.environ.get(PUBSUB_EMULATOR_ENV)
        os.environ[PUBSUB_EMULATOR_ENV] = host
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(PUBSUB_EMULATOR_ENV, None)
            else:
                os.environ[PUBSUB_EMULATOR_ENV] = previous
