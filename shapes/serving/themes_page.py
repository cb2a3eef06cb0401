"""The page authors watch: the current themes, each named from its own metadata and drawn in its
own colour, the links between themes with their weights, a theme's members on demand, the latest
change highlighted (what was born, grew, split or merged, which documents moved and from where) and
the change history as a timeline — updated by itself (server-sent events) whenever a run lands —
and, for a grant with the `themes-refresh` capability, a button that asks the workers for a run now.

`/themes` serves the page (opened once with `?token=`, it keeps the token as an HttpOnly cookie),
`/themes/events` streams the themes shape's JSON, the latest run's changes, the timeline, the
colours and whether the caller may ask for a run: once when opened, then after each run that moved
the themes (heard from the change feed: the notification MCP subscribers of `lakegraph://themes`
get), `/themes/graph.svg` draws the themes as circles sized by documents, joined by lines as thick
as their crossover links, the themes the latest run touched ringed.
"""

from __future__ import annotations

import colorsys
import json
import math
from collections.abc import AsyncIterator
from collections.abc import Set as AbstractSet
from html import escape
from typing import TYPE_CHECKING

import anyio
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from shapes.serving.change_feed import ChangeFeed, Watch
from shapes.serving.guard import COOKIE, PAGE_PATH, caller_of
from shapes.serving.requests import THEMES_REFRESH
from shapes.serving.resources import THEMES_URI
from shapes.serving.service import Shapes
from shapes.themes import ThemesResult, latest_changes
from worker.graph.theme_store import theme_number

if TYPE_CHECKING:
    from starlette.requests import Request

    from shapes.serving.identity import Caller

KEEPALIVE_SECONDS = 15.0
TIMELINE_RUNS = 20
SIZE = 640
HIGHLIGHT = "#ff9800"  # the latest change: rings in the picture, marks on the cards and moves
LABEL_CHARACTERS = 30
MEMBERS_PAGE_TOKENS = 1000  # a card's members load about 50 at a time


def colour(theme_id: str) -> str:
    """One colour per theme, kept with its id: hues a golden angle apart, so neighbours differ."""
    red, green, blue = colorsys.hls_to_rgb((theme_number(theme_id) * 0.381966) % 1.0, 0.55, 0.6)
    return f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}"


def touched(changes: dict | None) -> set[str]:
    """Themes the latest run changed: born, grown, shrunk, merged into, split from, moved to or from."""
    if not changes:
        return set()
    found = set(changes.get("born", [])) | set(changes.get("grew", {})) | set(changes.get("shrank", {}))
    found |= set(changes.get("merged", {})) | {new for news in changes.get("split", {}).values() for new in news}
    return found | {theme for move in changes.get("moved", []) for theme in (move["from"], move["to"]) if theme}


def svg(result: ThemesResult, changed: AbstractSet[str] = frozenset()) -> str:
    """Themes on a circle, area proportional to size, in their colours; lines as heavy as their
    crossover links, each labelled with its count; the themes of the latest change ringed."""
    count = max(len(result.themes), 1)
    centre, ring = SIZE / 2, SIZE / 2 - 90
    place = {
        view.id: (centre + ring * math.cos(2 * math.pi * index / count - math.pi / 2), centre + ring * math.sin(2 * math.pi * index / count - math.pi / 2))
        for index, view in enumerate(result.themes)
    }
    largest = max((view.size for view in result.themes), default=1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SIZE} {SIZE}" width="{SIZE}" height="{SIZE}" font-family="sans-serif" font-size="13">']
    drawn = set()
    for view in result.themes:
        for crossover in view.crossovers:
            pair = tuple(sorted((view.id, crossover["theme"])))
            if pair in drawn or crossover["theme"] not in place:
                continue
            drawn.add(pair)
            (x1, y1), (x2, y2) = place[view.id], place[crossover["theme"]]
            width = 1 + math.log1p(crossover["links"])
            parts.append(
                f'<g class="edge" data-themes="{escape(" ".join(pair))}"><line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#999" stroke-width="{width:.1f}"/>'
                f'<text class="weight" x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2 - 4:.1f}" text-anchor="middle" fill="#555">{crossover["links"]}</text></g>'
            )
    for view in result.themes:
        x, y = place[view.id]
        radius = 12 + 48 * math.sqrt(view.size / largest)
        ringed = f' stroke="{HIGHLIGHT}" stroke-width="6"' if view.id in changed else ' stroke="#335"'
        label = view.name if len(view.name) <= LABEL_CHARACTERS else view.name[: LABEL_CHARACTERS - 1] + "…"
        parts.append(
            f'<g class="theme" data-id="{escape(view.id)}"><circle cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}" fill="{colour(view.id)}"{ringed}/>'
            f'<text x="{x:.1f}" y="{y + radius + 16:.1f}" text-anchor="middle">{escape(view.id)} · {escape(label)} · {view.size}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lakegraph themes</title>
<style>
 body { font-family: sans-serif; margin: 2rem; color: #223; }
 #layout { display: flex; gap: 2rem; align-items: flex-start; }
 #themes { flex: 1; min-width: 28rem; }
 #change { padding: .6rem 1rem; background: #fff6d6; border: 2px solid HIGHLIGHT; margin-bottom: 1rem; }
 #change .move { background: HIGHLIGHT; color: #000; padding: 0 .3rem; margin: .2rem 0; }
 .theme-card { border: 1px solid #ccd; border-left: 10px solid var(--colour); padding: .5rem 1rem; margin-bottom: .6rem; }
 .theme-card.changed { outline: 3px solid HIGHLIGHT; }
 .theme-card h3 { margin: .2rem 0; }
 .uri { font-family: monospace; font-size: 90%; }
 .members { margin: .3rem 0 0 1rem; }
 #timeline li { margin-bottom: .3rem; }
 #controls { margin: .4rem 0 1rem; }
</style></head>
<body>
<h1>Themes</h1>
<div id="header">waiting for the first themes run…</div>
<div id="controls"><button id="refresh" hidden>Refresh themes now</button> <span id="refresh-status"></span></div>
<div id="change" hidden></div>
<div id="layout"><div id="themes"></div><div id="graph" role="img" aria-label="theme graph"></div></div>
<h2>Timeline</h2>
<ol id="timeline"></ol>
<script>
const text = (tag, content, cls) => { const el = document.createElement(tag); el.textContent = content; if (cls) el.className = cls; return el; };
let names = {};
const MEMBERS_PAGE_TOKENS = __MEMBERS_PAGE_TOKENS__;
const refresh = document.getElementById("refresh"), refreshStatus = document.getElementById("refresh-status");
refresh.onclick = async () => {  // shown only to a grant with the themes-refresh capability
  refresh.disabled = true;
  refreshStatus.textContent = "asking the workers…";
  try {
    const answer = await fetch("__THEMES_REFRESH__", {method: "POST"});
    const body = await answer.json();
    refreshStatus.textContent = answer.ok
      ? "asked the workers for a themes run (task " + body.task_id + "): the page follows if it moves the themes"
      : "not asked: " + body.error;
  } catch (failed) {
    refreshStatus.textContent = "not asked: " + failed;
  } finally {
    refresh.disabled = false;
  }
};
const opened = new Set();  // themes whose members the reader opened: kept open across updates
const named = (id) => id ? id + " " + (names[id] || "") : "ungrouped";
function describe(changes) {
  const parts = [];
  if (changes.born && changes.born.length) parts.push("born " + changes.born.join(", "));
  if (changes.dissolved && changes.dissolved.length) parts.push("dissolved " + changes.dissolved.join(", "));
  for (const [old, into] of Object.entries(changes.split || {})) parts.push(old + " split into " + into.join(", "));
  for (const [theme, from] of Object.entries(changes.merged || {})) parts.push(theme + " merged from " + from.join(", "));
  for (const [theme, n] of Object.entries(changes.grew || {})) parts.push(theme + " grew by " + n);
  for (const [theme, n] of Object.entries(changes.shrank || {})) parts.push(theme + " shrank by " + n);
  return parts;
}
async function members(theme, box, cursor) {
  const query = new URLSearchParams({theme: theme, max_tokens: String(MEMBERS_PAGE_TOKENS)});
  if (cursor) query.set("cursor", cursor);
  const answer = await (await fetch("/v1/themes?" + query)).json();
  if (!cursor) box.replaceChildren();
  box.querySelector("button.more")?.remove();
  for (const member of answer.members) box.append(text("div", (member.name || member.uri) + "  " + member.uri, "uri member"));
  if (answer.page.next_cursor) {  // the page's rows are the theme itself, then its members
    const more = text("button", "more (" + (answer.page.total - 1) + " in all)", "more");
    more.onclick = () => members(theme, box, answer.page.next_cursor);
    box.append(more);
  }
}
function show(data) {
  const t = data.themes;
  refresh.hidden = !data.may_refresh;
  names = Object.fromEntries(t.themes.map(theme => [theme.id, theme.name]));
  document.getElementById("header").textContent =
    t.documents + " documents = " + t.grouped + " grouped + " + t.ungrouped + " ungrouped; " + t.themes.length + " themes" +
    (t.run ? " (run " + t.run.id + ", " + (t.run.mode === "update" ? "update, " + t.run.frontier + " documents free to move" : "Leiden from scratch") + ", " + t.run.engine + ")" : "");
  const changed = new Set(data.touched);
  const list = document.getElementById("themes");
  list.replaceChildren();
  for (const theme of t.themes) {
    const card = document.createElement("div");
    card.className = "theme-card" + (changed.has(theme.id) ? " changed" : ""); card.dataset.id = theme.id;
    card.style.setProperty("--colour", data.colours[theme.id]);
    card.append(text("h3", theme.id + " · " + theme.name, "name"));
    card.append(text("div", theme.size + " documents (" + Math.round(theme.share * 100) + "%), cohesion " + theme.conductance.toFixed(2) + " (" + theme.cohesion + ")"));
    card.append(text("div", "converge on: " + theme.top_targets.map(x => x.uri + " (" + x.cited_by + ")").join(", "), "uri"));
    card.append(text("div", "central: " + theme.central.map(x => x.uri + " (" + x.links + ")").join(", "), "uri"));
    for (const c of theme.crossovers) card.append(text("div", "↔ " + named(c.theme) + " via " + c.document + " (" + c.links + " links)", "uri"));
    const box = text("div", "", "members");
    const open = text("button", "members", "open");
    open.onclick = () => { opened.add(theme.id); members(theme.id, box, null); };
    card.append(open, box);
    list.append(card);
    if (opened.has(theme.id)) members(theme.id, box, null);
  }
  const banner = document.getElementById("change");
  const parts = data.changes ? describe(data.changes) : [];
  const moved = data.changes ? (data.changes.moved || []) : [];
  banner.replaceChildren();
  banner.hidden = parts.length === 0 && moved.length === 0;
  if (!banner.hidden) banner.append(text("div", "Latest change: " + (parts.join("; ") || "documents moved")));
  for (const move of moved.slice(0, 20)) banner.append(text("div", "moved " + move.document + ": " + named(move.from) + " → " + named(move.to), "move"));
  if (moved.length > 20) banner.append(text("div", "+" + (moved.length - 20) + " more moved"));
  const timeline = document.getElementById("timeline");
  timeline.replaceChildren();
  for (const run of data.timeline) {
    const moves = (run.changes.moved || []).length;
    timeline.append(text("li", run.started + " · " + run.themes + " themes, " + run.grouped + "/" + run.documents + " grouped · " +
      (describe(run.changes).join("; ") || "no theme changed") + (moves ? "; " + moves + " moved" : "")));
  }
  fetch("/themes/graph.svg?run=" + encodeURIComponent(t.run ? t.run.id : "none"))
    .then(answer => answer.text()).then(picture => { document.getElementById("graph").innerHTML = picture; });
}
const events = new EventSource("/themes/events");
events.addEventListener("themes", (event) => show(JSON.parse(event.data)));
</script>
</body></html>
""".replace("HIGHLIGHT", HIGHLIGHT)


def routes(shapes: Shapes, feed: ChangeFeed) -> list[Route]:
    async def page(request: Request) -> Response:
        token = request.query_params.get("token")
        if token:  # the middleware checked it: keep it as a cookie and drop it from the address bar
            response = RedirectResponse(PAGE_PATH, status_code=303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return response
        return Response(PAGE.replace("__MEMBERS_PAGE_TOKENS__", str(MEMBERS_PAGE_TOKENS)).replace("__THEMES_REFRESH__", THEMES_REFRESH), media_type="text/html")

    def snapshot(caller: Caller) -> dict:
        answer = shapes.ask("themes", caller, "page")
        timeline = latest_changes(shapes.driver, shapes.database, TIMELINE_RUNS, caller.grant)
        changes = timeline[0]["changes"] if timeline else None
        return {
            "themes": answer.data(),
            "changes": changes,
            "touched": sorted(touched(changes)),
            "timeline": timeline,
            "colours": {view.id: colour(view.id) for view in answer.result.themes},
            "may_refresh": caller.grant.may("themes-refresh"),
        }

    async def events(request: Request) -> StreamingResponse:
        async def stream() -> AsyncIterator[str]:
            # The themes resource's notifications, as MCP subscribers get them: the shape (which
            # reads every link) is built once now and again only when a run has moved the themes.
            with feed.watching(Watch(THEMES_URI, caller_of(request).grant)) as changed:
                yield f"event: themes\ndata: {json.dumps(await anyio.to_thread.run_sync(snapshot, caller_of(request)), default=str)}\n\n"
                while not await request.is_disconnected():
                    if await changed.wait(KEEPALIVE_SECONDS):
                        yield f"event: themes\ndata: {json.dumps(await anyio.to_thread.run_sync(snapshot, caller_of(request)), default=str)}\n\n"
                    else:
                        yield ": keep-alive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    def picture(caller: Caller) -> str:
        latest = latest_changes(shapes.driver, shapes.database, 1, caller.grant)
        return svg(shapes.ask("themes", caller, "page").result, touched(latest[0]["changes"] if latest else None))

    async def graph(request: Request) -> Response:
        return Response(await anyio.to_thread.run_sync(picture, caller_of(request)), media_type="image/svg+xml", headers={"Cache-Control": "no-store"})

    return [Route(PAGE_PATH, page), Route(f"{PAGE_PATH}/events", events), Route(f"{PAGE_PATH}/graph.svg", graph)]
