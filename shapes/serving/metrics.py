"""Prometheus metrics of the read side: calls, refusals and latency per shape, and what exists."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry()
CALLS = Counter("lakegraph_shape_calls", "Shape calls", ["shape", "outcome"], registry=REGISTRY)
LATENCY = Histogram(
    "lakegraph_shape_seconds",
    "Shape latency",
    ["shape"],
    registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
TOOLS = Gauge("lakegraph_tools_available", "Shapes offered right now (1) or not (0)", ["shape"], registry=REGISTRY)
SOURCE_AGE = Gauge("lakegraph_source_age_seconds", "Seconds since the graph last applied a change from a source", ["source"], registry=REGISTRY)
SOURCE_QUEUED = Gauge("lakegraph_source_queued", "Events of a source waiting in the queue", ["source"], registry=REGISTRY)
PROBLEMS_HELD = Gauge("lakegraph_problems_held", "Failed work held in Redis while the graph was down, not yet moved to the graph", registry=REGISTRY)
PROBLEMS = Gauge("lakegraph_problems", "Parked work by kind (failed, skipped, ...), replayable with `lakegraph errors --replay`", ["kind"], registry=REGISTRY)
WATCHED = Gauge("lakegraph_watched_resources", "Distinct resource URIs this replica's MCP subscribers watch", registry=REGISTRY)
NOTIFIED = Counter("lakegraph_resource_notifications", "Resource-updated notifications this replica sent (one per URI, before fan-out)", registry=REGISTRY)
