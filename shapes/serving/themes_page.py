"""The page authors watch: where their documents sit among the library's themes and what their
edits changed, by titles (URIs on hover and in a copyable detail). The current themes, each named
as a short phrase from its own metadata and drawn in its own colour (a palette colour-blind readers
tell apart), what its numbers mean, its members on demand; the author's own documents found by
title or folder, with their theme, whether they are central, bridging or ungrouped, and their
strongest links in and out (for a stray page, what to link to bring it home); the map of themes
sized by members and joined by their links; the latest change highlighted; and the timeline of
runs, each naming the documents that moved, from which theme to which, and the edits that moved
them, quiet runs folded together — updated by itself (server-sent events) whenever a run lands,
and, for a grant with the `themes-refresh` capability, a button that asks the workers for a run.

`/themes` serves the page (opened once with `?token=`, it keeps the token as an HttpOnly cookie),
`/themes/events` streams the themes shape's JSON with the titles it names, the latest run's
changes, the timeline, the colours, the folders and whether the caller may ask for a run: once when
opened, then after each run that moved the themes (heard from the change feed: the notification
MCP subscribers of `lakegraph://themes` get); `/themes/documents?q=&folder=` finds the author's
documents (shapes/serving/authors_view.py); `/themes/graph.svg` draws the map. Everything is read
within the viewer's grant.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import AsyncIterator
from collections.abc import Set as AbstractSet
from dataclasses import asdict
from html import escape
from typing import TYPE_CHECKING

import anyio
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from shapes.serving import authors_view
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
LABEL_WIDTH = 26  # characters a map label's line holds: labels wrap, never cut
LABEL_LINE = 15  # pixels between a label's lines
LARGEST_RADIUS = 60  # the largest theme's circle; the smallest is 12
RING_AT_LEAST = 120  # the circle the themes stand on, its radius at least
LABELLED_THEMES = 12  # past this many themes the map names each on hover and focus, and by id
MEMBERS_PAGE_TOKENS = 1000  # a card's members load about 50 at a time
# Okabe and Ito's palette for colour-blind readers (its orange left out: the highlight's), each
# theme keeping its colour with its id; past seven themes ids and names tell them apart.
PALETTE = ("#0072b2", "#009e73", "#d55e00", "#56b4e9", "#cc79a7", "#f0e442", "#000000")


def colour(theme_id: str) -> str:
    return PALETTE[theme_number(theme_id) % len(PALETTE)]


def touched(changes: dict | None) -> set[str]:
    """Themes the latest run changed: born, grown, shrunk, merged into, split from, moved to or from."""
    if not changes:
        return set()
    found = set(changes.get("born", [])) | set(changes.get("grew", {})) | set(changes.get("shrank", {}))
    found |= set(changes.get("merged", {})) | {new for news in changes.get("split", {}).values() for new in news}
    return found | {theme for move in changes.get("moved", []) for theme in (move["from"], move["to"]) if theme}


def svg(result: ThemesResult, changed: AbstractSet[str] = frozenset()) -> str:
    """Themes on a circle, area proportional to members, in their colours; lines as heavy as the
    links between them, each labelled with its count; the themes of the latest change ringed.
    Every theme is a focusable element with its whole name (wrapped under it, or, past
    LABELLED_THEMES, shown on hover and focus) and a caption a screen reader reads."""
    count = max(len(result.themes), 1)
    labelled = len(result.themes) <= LABELLED_THEMES
    wrapped = {view.id: textwrap.wrap(phrase(view.name), LABEL_WIDTH) or [view.name] for view in result.themes} if labelled else {}
    # Room below the lowest circle for its largest radius and every line of the longest label.
    margin = LARGEST_RADIUS + LABEL_LINE * (2 + max((len(lines) for lines in wrapped.values()), default=0))
    size = max(SIZE, 2 * (margin + RING_AT_LEAST)) if labelled else SIZE + 24 * (count - LABELLED_THEMES)
    centre, ring = size / 2, size / 2 - margin
    place = {
        view.id: (centre + ring * math.cos(2 * math.pi * index / count - math.pi / 2), centre + ring * math.sin(2 * math.pi * index / count - math.pi / 2))
        for index, view in enumerate(result.themes)
    }
    largest = max((view.size for view in result.themes), default=1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size} {size}" width="{size}" height="{size}" font-family="sans-serif" font-size="13" '
        f'role="group" aria-label="Map of {len(result.themes)} themes and the links between them">'
    ]
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
                f'<g class="edge" data-themes="{escape(" ".join(pair))}"><title>{crossover["links"]} links between {pair[0]} and {pair[1]}</title>'
                f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#767676" stroke-width="{width:.1f}"/>'
                f'<text class="weight" x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2 - 4:.1f}" text-anchor="middle" fill="#333">{crossover["links"]}</text></g>'
            )
    for view in result.themes:
        x, y = place[view.id]
        radius = 12 + (LARGEST_RADIUS - 12) * math.sqrt(view.size / largest)
        ringed = f' stroke="{HIGHLIGHT}" stroke-width="6"' if view.id in changed else ' stroke="#335"'
        lines = [f"{view.id} · {view.size} documents", *wrapped.get(view.id, [])]
        label = " ".join(
            f'<tspan x="{x:.1f}" dy="{0 if index == 0 else LABEL_LINE}">{escape(line)}</tspan>' for index, line in enumerate(lines)
        )  # read as words
        said = f"{lines[0]} {phrase(view.name)}" + (", changed by the latest run" if view.id in changed else "")  # holds the text shown
        parts.append(
            f'<g class="theme" data-id="{escape(view.id)}" tabindex="0" role="button" aria-label="{escape(said)}"><title>{escape(said)}</title>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}" fill="{colour(view.id)}"{ringed}/>'
            f'<text x="{x:.1f}" y="{y + radius + LABEL_LINE:.1f}" text-anchor="middle">{label}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def phrase(name: str) -> str:
    """A theme's name as a short phrase: its top targets' titles, then the folder it mostly lives in
    (a name is `folder — titles`, worker/themes/summary.py)."""
    folder, _, titled = name.partition(" — ")
    return f"{titled} (in {folder})" if titled else name


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lakegraph themes</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 body { font-family: sans-serif; margin: 2rem; color: #223; }
 #layout { display: flex; gap: 2rem; align-items: flex-start; flex-wrap: wrap; }
 #themes { flex: 1; min-width: 28rem; }
 #change { padding: .6rem 1rem; background: #fff6d6; border: 2px solid HIGHLIGHT; margin-bottom: 1rem; }
 .move { background: HIGHLIGHT; color: #000; padding: 0 .3rem; margin: .2rem 0; }
 .theme-card { border: 1px solid #ccd; border-left: 10px solid var(--colour); padding: .5rem 1rem; margin-bottom: .6rem; }
 .theme-card.changed { outline: 3px solid HIGHLIGHT; }
 .theme-card h3 { margin: .2rem 0; }
 .badge { font-size: 80%; border: 1px solid #000; padding: 0 .3rem; margin-left: .5rem; }
 .uri { font-family: monospace; font-size: 90%; color: #444; }
 .doc { border-bottom: 1px dotted #667; }
 .members { margin: .3rem 0 0 1rem; }
 #timeline li { margin-bottom: .5rem; }
 #timeline ul { margin: .2rem 0; }
 #controls { margin: .4rem 0 1rem; }
 #mine { border: 1px solid #ccd; padding: .5rem 1rem; margin-bottom: 1rem; }
 .found { border-top: 1px solid #dde; padding: .4rem 0; }
 .found h3 { margin: .2rem 0; font-size: 110%; }
 #map-caption { min-height: 1.5em; font-weight: bold; }
 g.theme:focus { outline: none; }
 g.theme:focus circle, g.theme:hover circle { stroke: #000; stroke-width: 5; }
 button.linkish { background: none; border: none; padding: 0; color: #1a4d8f; text-decoration: underline; cursor: pointer; font: inherit; }
 .move button.linkish { color: #000; }
 :focus-visible { outline: 3px solid #1a4d8f; outline-offset: 2px; }
</style></head>
<body>
<header><h1>Themes</h1>
<p id="header">waiting for the first themes run…</p>
<div id="controls"><button id="refresh" hidden>Refresh themes now</button> <span id="refresh-status" role="status"></span></div>
</header>
<main>
<section id="mine" aria-labelledby="mine-title">
<h2 id="mine-title">My documents</h2>
<form id="find" role="search">
 <label for="q">Title</label> <input id="q" type="search" autocomplete="off" placeholder="a title, or part of one">
 <label for="folder">Folder</label> <select id="folder"><option value="">every folder</option></select>
 <button type="submit">Find</button>
</form>
<div id="found" aria-live="polite"></div>
</section>
<div id="change" role="status" hidden></div>
<div id="layout">
<section id="themes" aria-labelledby="themes-title"><h2 id="themes-title">Themes</h2><div id="cards"></div></section>
<section aria-labelledby="map-title"><h2 id="map-title">Map</h2><p id="map-caption" aria-live="polite"></p><div id="graph"></div></section>
</div>
<section aria-labelledby="timeline-title"><h2 id="timeline-title">Timeline</h2><ol id="timeline"></ol></section>
</main>
<script>
const text = (tag, content, cls) => { const el = document.createElement(tag); el.textContent = content; if (cls) el.className = cls; return el; };
let names = {}, titles = {}, lastFind = null, finds = 0;
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
// A theme's name is "folder — titles": said as the titles, then where it mostly lives.
const phrase = (name) => { const at = (name || "").indexOf(" — "); return at < 0 ? (name || "") : name.slice(at + 3) + " (in " + name.slice(0, at) + ")"; };
const themed = (id) => id ? id + " " + phrase(names[id] || id) : "ungrouped";
const plural = (n, one, many) => n + " " + (n === 1 ? one : many);
const when = (started) => started.slice(0, 19).replace("T", " ");  // a run's start, to the second
function doc(uri, title) {  // a document by its title; its URI on hover
  const el = text("span", title || titles[uri] || uri, "doc"); el.title = uri; return el;
}
function line(label, items) {  // "label: a, b, c" with elements
  const el = text("div", label + ": ");
  items.forEach((item, index) => { if (index) el.append(", "); el.append(...item); });
  return el;
}
function leaving(theme) {
  if (theme.conductance === null) return "how many of its links lead elsewhere is withheld within your grant";
  const share = theme.conductance * 100;
  return (share < 1 ? "fewer than 1 in 100" : Math.round(share) + " in 100") + " of its links lead to other themes (" + theme.cohesion + ")";
}
function describe(changes) {
  const parts = [];
  if (changes.born && changes.born.length) parts.push("new theme " + changes.born.map(themed).join(", "));
  if (changes.dissolved && changes.dissolved.length) parts.push("gone: " + changes.dissolved.join(", "));
  for (const [old, into] of Object.entries(changes.split || {})) parts.push(old + " split into " + into.map(themed).join(", "));
  for (const [theme, from] of Object.entries(changes.merged || {})) parts.push(themed(theme) + " merged from " + from.join(", "));
  for (const [theme, n] of Object.entries(changes.grew || {})) parts.push(theme + " grew by " + n);
  for (const [theme, n] of Object.entries(changes.shrank || {})) parts.push(theme + " shrank by " + n);
  return parts;
}
function moveItem(move) {
  const item = text("li", "", "move");
  const who = text("button", titles[move.document] || move.document, "linkish");
  who.title = move.document;
  who.onclick = () => find(move.document, "");
  item.append(who, ": " + themed(move.from) + " → " + themed(move.to));
  return item;
}
function edits(changes) {
  const edited = changes.edited || [];
  if (!edited.length) return null;
  const shown = edited.slice(0, 10), more = (changes.edits || edited.length) - shown.length;
  const el = line("after edits to the links of", shown.map(uri => [doc(uri)]));
  if (more > 0) el.append(" and " + more + " more");
  el.className = "edits";
  return el;
}
async function members(theme, box, cursor) {
  const query = new URLSearchParams({theme: theme, max_tokens: String(MEMBERS_PAGE_TOKENS)});
  if (cursor) query.set("cursor", cursor);
  const answer = await (await fetch("/v1/themes?" + query)).json();
  if (!cursor) box.replaceChildren();
  box.querySelector("button.more")?.remove();
  for (const member of answer.members) { const row = text("div", "", "member"); row.append(doc(member.uri, member.name)); box.append(row); }
  if (answer.page.next_cursor) {  // the page's rows are the theme itself, then its members
    const more = text("button", "more (" + (answer.page.total - 1) + " in all)", "more");
    more.onclick = () => members(theme, box, answer.page.next_cursor);
    box.append(more);
  }
}
function neighbours(label, links) {
  return line(label, links.length ? links.map(link => [doc(link.uri, link.title), " (" + (link.theme ? link.theme : "ungrouped") + ", " + plural(link.links, "link", "links") + ")"]) : [["none"]]);
}
function placeOf(found) {
  const el = text("div", "", "place");
  if (found.theme === null) {
    el.append("Ungrouped: no theme holds it");
    if (found.home) {
      el.append(". Most documents of its folder are in " + themed(found.home) + "; to bring it home, link it to ");
      found.link_to.forEach((link, index) => { if (index) el.append(", "); el.append(doc(link.uri, link.title)); });
    }
    return el;
  }
  const roles = [];
  if (found.central) roles.push("one of its central documents");
  if (found.bridges.length) roles.push("a bridge: its strongest links reach " + found.bridges.map(themed).join(", "));
  el.append("In " + themed(found.theme) + " — " + (roles.join("; ") || "a member"));
  return el;
}
async function find(q, folder) {
  lastFind = [q, folder];
  const asked = ++finds;
  document.getElementById("q").value = q;
  document.getElementById("folder").value = folder;
  const query = new URLSearchParams({q: q, folder: folder});
  const answer = await (await fetch("/themes/documents?" + query)).json();
  if (asked !== finds) return;  // a later search, or the same after a newer run, answers instead: never an older answer over it
  const box = document.getElementById("found");
  box.replaceChildren();
  if (!answer.documents.length) { box.append(text("p", "No document under " + (folder || "any folder") + " has a title holding " + JSON.stringify(q) + ".")); return; }
  box.append(text("p", plural(answer.documents.length, "document", "documents") + (answer.documents.length >= answer.at_most ? " (the first " + answer.at_most + ": say more of the title)" : "")));
  for (const found of answer.documents) {
    const card = text("div", "", "found"); card.dataset.uri = found.uri;
    card.append(text("h3", found.title || found.uri), text("div", found.uri, "uri"), placeOf(found));
    card.append(neighbours("Strongest links out", found.outbound), neighbours("Strongest links in", found.inbound));
    box.append(card);
  }
}
document.getElementById("find").onsubmit = (event) => { event.preventDefault(); find(document.getElementById("q").value, document.getElementById("folder").value); };
let typing = null;
document.getElementById("q").oninput = () => { clearTimeout(typing); typing = setTimeout(() => find(document.getElementById("q").value, document.getElementById("folder").value), 250); };
document.getElementById("folder").onchange = () => find(document.getElementById("q").value, document.getElementById("folder").value);
function card(theme, data, changed) {
  const el = document.createElement("article");
  el.className = "theme-card" + (changed.has(theme.id) ? " changed" : ""); el.dataset.id = theme.id; el.tabIndex = -1;
  el.style.setProperty("--colour", data.colours[theme.id]);
  const heading = text("h3", theme.id + " · " + phrase(theme.name), "name");
  if (changed.has(theme.id)) heading.append(text("span", "changed by the latest run", "badge"));
  el.append(heading);
  el.append(text("div", plural(theme.size, "document", "documents") + " (" + Math.round(theme.share * 100) + " % of the library); " + leaving(theme)));
  if (theme.top_targets.length) el.append(line("Its members cite most", theme.top_targets.map(x => [doc(x.uri), " (by " + plural(x.cited_by, "member", "members") + ")"])));
  if (theme.central.length) el.append(line("Central", theme.central.map(x => [doc(x.uri), " (" + plural(x.links, "link", "links") + " inside)"])));
  for (const c of theme.crossovers) {
    const row = text("div", "Linked with " + themed(c.theme) + ": " + plural(c.links, "link", "links") + ", most through ", "crossover");
    row.append(doc(c.document));
    el.append(row);
  }
  const uris = [...theme.top_targets.map(x => x.uri), ...theme.central.map(x => x.uri), ...theme.crossovers.map(x => x.document)];
  if (uris.length) { const detail = document.createElement("details"); detail.append(text("summary", "URIs"), text("pre", [...new Set(uris)].join("\\n"), "uri")); el.append(detail); }
  const box = text("div", "", "members");
  const open = text("button", "members", "open");
  open.onclick = () => { opened.add(theme.id); members(theme.id, box, null); };
  el.append(open, box);
  if (opened.has(theme.id)) members(theme.id, box, null);
  return el;
}
function timeline(runs) {
  const list = document.getElementById("timeline");
  list.replaceChildren();
  let quiet = [];
  const fold = () => {
    if (!quiet.length) return;
    list.append(text("li", quiet.length === 1 ? when(quiet[0].started) + " · nothing moved" : plural(quiet.length, "run", "runs") + " changed nothing (" + when(quiet[quiet.length - 1].started) + " to " + when(quiet[0].started) + ")", "quiet"));
    quiet = [];
  };
  for (const run of runs) {
    const moved = run.changes.moved || [], parts = describe(run.changes);
    if (!moved.length && !parts.length) { quiet.push(run); continue; }
    fold();
    const item = text("li", when(run.started) + " · " + (run.themes === null ? "" : run.themes + " themes, " + run.grouped + "/" + run.documents + " grouped · ") +
      (parts.join("; ") || "") + (moved.length ? (parts.length ? "; " : "") + plural(moved.length, "document", "documents") + " moved" : ""), "run");
    if (moved.length) { const list = document.createElement("ul"); moved.slice(0, 20).forEach(move => list.append(moveItem(move))); if (moved.length > 20) list.append(text("li", "+" + (moved.length - 20) + " more moved")); item.append(list); }
    const why = edits(run.changes); if (why) item.append(why);
    list.append(item);
  }
  fold();
}
function show(data) {
  const t = data.themes;
  refresh.hidden = !data.may_refresh;
  names = Object.fromEntries(t.themes.map(theme => [theme.id, theme.name]));
  titles = data.titles;
  document.getElementById("header").textContent =
    t.documents + " documents = " + t.grouped + " grouped + " + t.ungrouped + " ungrouped; " + plural(t.themes.length, "theme", "themes") +
    (t.run ? " (run " + t.run.id + ", " + (t.run.mode === "update" ? "update, " + t.run.frontier + " documents free to move" : "Leiden from scratch") + ", " + t.run.engine + ")" : "");
  const folder = document.getElementById("folder"), chosen = folder.value;
  folder.replaceChildren(text("option", "every folder"));
  folder.firstChild.value = "";
  for (const uri of data.folders) { const option = text("option", uri); option.value = uri; folder.append(option); }
  folder.value = chosen;
  const changed = new Set(data.touched);
  document.getElementById("cards").replaceChildren(...t.themes.map(theme => card(theme, data, changed)));
  const banner = document.getElementById("change");
  const parts = data.changes ? describe(data.changes) : [];
  const moved = data.changes ? (data.changes.moved || []) : [];
  banner.replaceChildren();
  banner.hidden = parts.length === 0 && moved.length === 0;
  if (!banner.hidden) {
    banner.append(text("div", "Latest change: " + (parts.join("; ") || "documents moved")));
    const list = document.createElement("ul"); moved.slice(0, 20).forEach(move => list.append(moveItem(move))); banner.append(list);
    if (moved.length > 20) banner.append(text("div", "+" + (moved.length - 20) + " more moved"));
    const why = edits(data.changes); if (why) banner.append(why);
  }
  timeline(data.timeline);
  if (lastFind) find(...lastFind);
  fetch("/themes/graph.svg?run=" + encodeURIComponent(t.run ? t.run.id : "none"))
    .then(answer => answer.text()).then(picture => {
      const graph = document.getElementById("graph");
      graph.innerHTML = picture;
      for (const node of graph.querySelectorAll("g.theme")) {
        const say = () => { document.getElementById("map-caption").textContent = node.getAttribute("aria-label"); };
        const go = () => { const target = document.querySelector(".theme-card[data-id='" + node.dataset.id + "']"); target?.scrollIntoView({block: "center"}); target?.focus(); };
        node.addEventListener("focus", say); node.addEventListener("mouseenter", say);
        node.addEventListener("click", go); node.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); go(); } });
      }
    });
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
            "titles": authors_view.titles(shapes.driver, shapes.database, named(answer.result, timeline), caller.grant),
            "folders": authors_view.folders(shapes.driver, shapes.database, caller.grant),
            "colours": {view.id: colour(view.id) for view in answer.result.themes},
            "may_refresh": caller.grant.may("themes-refresh"),
        }

    def documents(caller: Caller, text: str, folder: str) -> dict:
        themes = shapes.ask("themes", caller, "page").result
        found = authors_view.find(shapes.driver, shapes.database, themes, caller.grant, text, folder)
        return {"documents": [asdict(place) for place in found], "at_most": authors_view.FOUND_AT_MOST}

    async def find(request: Request) -> Response:
        text, folder = (request.query_params.get(name, "")[: authors_view.MAX_SEARCH] for name in ("q", "folder"))
        return JSONResponse(await anyio.to_thread.run_sync(documents, caller_of(request), text, folder), headers={"Cache-Control": "no-store"})

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

    return [Route(PAGE_PATH, page), Route(f"{PAGE_PATH}/events", events), Route(f"{PAGE_PATH}/documents", find), Route(f"{PAGE_PATH}/graph.svg", graph)]


def named(result: ThemesResult, timeline: list[dict]) -> set[str]:
    """The documents and sections the page names: the themes' summaries, the runs' moves and edits."""
    uris = {entry["uri"] for view in result.themes for entry in (*view.top_targets, *view.central)}
    uris |= {crossover["document"] for view in result.themes for crossover in view.crossovers}
    return (
        uris
        | {move["document"] for run in timeline for move in run["changes"].get("moved", [])}
        | {uri for run in timeline for uri in run["changes"].get("edited", [])}
    )
