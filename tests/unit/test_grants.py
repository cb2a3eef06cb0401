"""The one rule of "may see" (worker/shared/grants.py) and what it lets the change feed tell a
subscriber: whole segments, case-folded table ids, and no candidate from a change it cannot see."""

from __future__ import annotations

from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

from shapes.serving.change_feed import GrantedUpdate, Watch, heard_by
from shapes.serving.resources import THEMES_URI, outline_uri, table_uri
from worker.settings import GrantSettings
from worker.shared.changes import Change
from worker.shared.grants import EVERYTHING, Grant, matched, outermost

MANUALS = Grant(("manuals",), libraries=("shop/manuals",), tables=("service.vehicles", "Sales.*"))
SECTION = Grant(("one section",), libraries=("shop/manuals/ignition#coil",))


def test_a_library_prefix_is_seen_by_whole_segments() -> None:
    assert MANUALS.sees_uri("shop/manuals")
    assert MANUALS.sees_uri("shop/manuals/ignition")
    assert MANUALS.sees_uri("shop/manuals#intro")
    assert not MANUALS.sees_uri("shop/manuals-old/ignition")
    assert not MANUALS.sees_uri("shop")
    assert not MANUALS.sees_uri("shop/bulletins/tsb-7")


def test_tables_are_matched_whole_and_case_folded() -> None:
    assert MANUALS.sees_table("warehouse.service.vehicles")
    assert MANUALS.sees_table("WAREHOUSE.SERVICE.Vehicles")
    assert not MANUALS.sees_table("warehouse.service.parts")
    assert MANUALS.sees_table("warehouse.sales.orders")  # `Sales.*`: every table of the dataset
    assert not MANUALS.sees_table("warehouse.salesforce.orders")


def test_a_change_above_a_granted_section_touches_it() -> None:
    assert SECTION.touches("shop/manuals/ignition")  # the document the section is in
    assert SECTION.touches("shop")
    assert not SECTION.touches("shop/manuals/network")
    assert not SECTION.sees_uri("shop/manuals/ignition")


def test_grants_matched_by_group_or_scope_are_one_union() -> None:
    grants = {
        "manuals": GrantSettings(groups=["workshop"], libraries=["shop/manuals"], capabilities=["run-sql"]),
        "shop": GrantSettings(scopes=["lakegraph.shop"], libraries=["shop"], tables=["service"]),
    }
    both = matched(grants, ["workshop"], ["lakegraph.shop"])
    assert both is not None
    assert both.names == ("manuals", "shop")
    assert both.libraries == ("shop",)  # the outer prefix covers the inner one
    assert both.may("run-sql") and not both.may("cypher")
    assert matched(grants, ["interns"], []) is None
    assert outermost(["a/b", "a", "ab"]) == ("a", "ab")


def test_a_watch_is_a_candidate_only_for_changes_its_grant_may_see() -> None:
    ignition = Watch(outline_uri("shop/manuals/ignition"), MANUALS)
    themes = Watch(THEMES_URI, MANUALS)
    assert not themes.may_move(Change("documents", ("shop/bulletins/tsb-7",)))
    assert themes.may_move(Change("documents", ("shop/bulletins/tsb-7", "shop/manuals/network")))
    assert themes.may_move(Change("documents"))  # names nothing: may have moved anything
    assert themes.may_move(Change("themes"))  # the digest within the grant decides
    parts = Watch(table_uri("warehouse.service.vehicles"), MANUALS)
    assert not parts.may_move(Change("warehouse", ("warehouse.service.parts",)))
    assert parts.may_move(Change("query-log", ("warehouse.service.vehicles",)))
    assert Watch(ignition.uri).may_move(Change("documents", ("shop/bulletins/tsb-7",)))  # the local user sees everything


def test_an_update_is_heard_only_within_the_grant_it_was_computed_for() -> None:
    update = GrantedUpdate(uri=THEMES_URI, grant=MANUALS.key)
    assert Watch(THEMES_URI, MANUALS).heard(update)
    assert not Watch(THEMES_URI, EVERYTHING).heard(update)
    assert not Watch(THEMES_URI, SECTION).heard(update)
    assert heard_by(update, MANUALS) and not heard_by(update, SECTION)
    assert not heard_by(ResourceUpdated(uri=THEMES_URI), MANUALS)  # one not computed for a grant reaches no one
    assert heard_by(ToolsListChanged(), SECTION)  # the tool list is the same for everyone
