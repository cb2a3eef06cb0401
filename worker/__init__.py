"""lakegraph's write side: event sources, Celery tasks, local runtimes and graph writes."""

from worker.graph import driver_import

driver_import.install()
