"""What a table is searched by: its words as full-text fields and its vector's text; a
date-sharded family searched once, through its newest member."""

from __future__ import annotations

from worker.warehouse.table_search import TableText, table_texts


def row(name: str, columns: list[str], notes: tuple[str, ...] = (), terms: tuple[str, ...] = (), description: str | None = None) -> dict:
    return {
        "id": f"proj.analytics.{name}",
        "name": name,
        "schema": "analytics",
        "description": description,
        "columns": columns,
        "notes": list(notes),
        "terms": list(terms),
    }


def test_a_table_is_searched_by_its_words() -> None:
    [(_, text)] = table_texts([row("work_orders", ["wo_id", "vehicleVIN", "is_comeback"], ("Repair job id",), ("Comeback ratio",), "Repair visits")])
    assert text.fields == {
        "search_name": "analytics work orders",
        "search_columns": "wo id | vehicle vin | is comeback",
        "search_notes": "Repair job id",
        "search_terms": "Comeback ratio",
        "family": None,
        "shards": None,
    }
    assert text.vector_text == "work orders. Repair visits. Comeback ratio. columns: wo id, vehicle vin, is comeback"


def test_a_sharded_family_is_searched_through_its_newest_member() -> None:
    rows = [row(f"events_2024010{day}", ["event_name", "user_id"]) for day in (1, 3, 2)] + [row("users", ["user_id"])]
    texts = {found["id"]: text for found, text in table_texts(rows)}
    newest = texts["proj.analytics.events_20240103"]
    assert newest.fields["family"] == "proj.analytics.events_*" and newest.fields["shards"] == 3
    assert newest.fields["search_name"] == "analytics events" and newest.vector_text == "events. columns: event name, user id"
    for day in (1, 2):
        assert texts[f"proj.analytics.events_2024010{day}"] == TableText.hidden(f"proj.analytics.events_2024010{day}")
        assert texts[f"proj.analytics.events_2024010{day}"].vector_text is None
    assert texts["proj.analytics.users"].fields["family"] is None
