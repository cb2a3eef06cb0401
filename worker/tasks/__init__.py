"""Celery tasks. Each makes the graph match a source's current state, so retries are harmless."""
