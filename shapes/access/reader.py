"""The driver the shapes read through: every query routed as a read, without bookmarks.

Shapes never write, and a single answer needs no causal chain to earlier ones, so the bookmark
manager's bookkeeping (a measurable share of a small query's round trip) is skipped, and routing
every query to readers makes a write that slipped past the checks fail on a cluster too.
"""

from __future__ import annotations

from typing import Any

from neo4j import Driver, RoutingControl, Session


class ReadDriver:
    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def execute_query(self, query: Any, parameters: dict | None = None, **options: Any) -> Any:
        options.setdefault("routing_", RoutingControl.READ)
        options.setdefault("bookmark_manager_", None)
        return self._driver.execute_query(query, parameters, **options)

    def session(self, **config: Any) -> Session:
        return self._driver.session(**config)

    def verify_connectivity(self) -> None:
        """Raises at once when the server is unreachable (execute_query would retry for 30 s): what
        /healthz and /metrics check before they read, so they answer promptly during an outage."""
        self._driver.verify_connectivity()
