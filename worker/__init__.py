"""lakegraph's write side: event sources, Celery tasks, local runtimes and graph writes."""
