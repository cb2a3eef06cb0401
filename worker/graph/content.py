"""Content hashes: a node is rewritten only when the hash of what it holds changed."""

from __future__ import annotations

import hashlib
import json


def content_hash(value: object) -> str:
    """A stable hash of JSON-like data (key order does not matter)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
