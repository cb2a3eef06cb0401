"""The local runtime's own small pieces that need no running engine."""

from __future__ import annotations

import stat
from pathlib import Path

from worker.runtime.neo4j_server import Neo4jHome, password


def test_generated_neo4j_passwords_never_look_like_options(tmp_path: Path) -> None:
    for index in range(200):  # a password starting with "-" is read by neo4j-admin as an option
        home = Neo4jHome(tmp_path / str(index))
        value = password(home)
        assert value[0] != "-" and len(value) >= 32
        assert password(home) == value  # generated once, then reused
        assert stat.S_IMODE(home.password_file.stat().st_mode) == 0o600
