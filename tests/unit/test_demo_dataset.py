"""The demo dataset is deterministic from its seed and carries its planted truths."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb

from worker.demo.dataset import Sizes, existing, generate


def digest(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted((folder / "library").rglob("*")) if path.is_file()}


def test_the_same_seed_gives_the_same_dataset(tmp_path: Path) -> None:
    first = generate(tmp_path / "a", Sizes(seed=3, vehicles=50, queries=20))
    second = generate(tmp_path / "b", Sizes(seed=3, vehicles=50, queries=20))
    assert first == second and digest(tmp_path / "a") == digest(tmp_path / "b")
    assert existing(tmp_path / "a", Sizes(seed=3, vehicles=50, queries=20)) == first
    assert existing(tmp_path / "a", Sizes(seed=4, vehicles=50, queries=20)) is None  # other sizes: made anew


def test_planted_truths_hold_in_the_data(tmp_path: Path) -> None:
    manifest = generate(tmp_path, Sizes(seed=7, vehicles=200, queries=10))
    text = " ".join(path.read_text(errors="ignore") for path in (tmp_path / "library").rglob("*.md"))
    for code in manifest.undocumented_codes:
        assert code not in text
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        field = {row[0] for row in con.execute("SELECT DISTINCT fault_code FROM service.work_orders").fetchall()}
        assert set(manifest.undocumented_codes) <= field
        revised = manifest.revised_part
        rates = dict(
            con.execute(
                "SELECT wp.part_no, AVG(CASE WHEN w.is_comeback THEN 1.0 ELSE 0 END) FROM service.work_orders w "
                "JOIN service.work_order_parts wp USING (wo_id) WHERE w.fault_code = ? GROUP BY 1",
                [revised["fault_code"]],
            ).fetchall()
        )
        assert set(rates) == {revised["old_part"], revised["new_part"]}
    entries = [json.loads(line) for line in (tmp_path / "audit-logs" / "analyst-queries.ndjson").read_text().splitlines()]
    assert len(entries) == 10 and all(entry["protoPayload"]["metadata"]["jobChange"]["after"] == "DONE" for entry in entries)
