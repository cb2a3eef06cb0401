"""A local server for the part of Knowledge Catalog's REST API lakegraph reads (no emulator
exists): glossaries, categories and terms listed with paging, and entry links looked up by the
entry they reference. Routes come from the API's published discovery document (shipped with
google-api-python-client), and every resource served is checked against its schema there, so the
client is exercised against the documented contract — not against a live project.

Faults a real project gives are switchable: permission denied on one glossary, a glossary deleted
while a sync reads it, and small pages (every list pages)."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import googleapiclient

DISCOVERY = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents" / "dataplex.v1.json"
SERVED = {  # discovery method id → what answers it
    "dataplex.projects.locations.glossaries.list": "glossaries",
    "dataplex.projects.locations.glossaries.categories.list": "categories",
    "dataplex.projects.locations.glossaries.terms.list": "terms",
    "dataplex.projects.locations.lookupEntryLinks": "entry_links",
}
PAGE = 2  # items per page, whatever the client asks: every listing pages
DEFINITION = "projects/dataplex-types/locations/global/entryLinkTypes/definition"
ENTRY_MODES = {"1": "SOURCE", "SOURCE": "SOURCE", "2": "TARGET", "TARGET": "TARGET"}


class ContractError(AssertionError):
    """The server was about to answer with a field the discovery document does not define."""


def _methods(resource: dict) -> list[dict]:
    found = list(resource.get("methods", {}).values())
    for child in resource.get("resources", {}).values():
        found += _methods(child)
    return found


@dataclass
class Catalog:
    """The catalog's state, changed by the test between syncs."""

    project: str
    location: str = "global"
    glossaries: dict[str, dict] = field(default_factory=dict)  # name → resource
    categories: dict[str, dict] = field(default_factory=dict)
    terms: dict[str, dict] = field(default_factory=dict)
    links: dict[str, dict] = field(default_factory=dict)
    denied: set[str] = field(default_factory=set)  # glossaries answering 403
    vanishing: set[str] = field(default_factory=set)  # glossaries deleted right after they are listed
    requests: int = 0

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.location}"

    def glossary(self, glossary_id: str, display_name: str) -> str:
        name = f"{self.parent}/glossaries/{glossary_id}"
        self.glossaries[name] = {"name": name, "displayName": display_name, "uid": glossary_id}
        return name

    def category(self, glossary: str, category_id: str, display_name: str) -> str:
        name = f"{glossary}/categories/{category_id}"
        self.categories[name] = {"name": name, "displayName": display_name, "parent": glossary}
        return name

    def term(self, parent: str, term_id: str, display_name: str, description: str = "", labels: dict[str, str] | None = None) -> str:
        glossary = parent.split("/categories/")[0]
        name = f"{glossary}/terms/{term_id}"
        self.terms[name] = {"name": name, "displayName": display_name, "description": description, "parent": parent, "labels": labels or {}}
        return name

    def delete_glossary(self, glossary: str) -> None:
        self.glossaries.pop(glossary, None)
        for store in (self.categories, self.terms):
            for name in [name for name in store if name.startswith(f"{glossary}/")]:
                del store[name]
        for link_id in [link_id for link_id, link in self.links.items() if f"/entries/{glossary}/" in link["entryReferences"][1]["name"]]:
            del self.links[link_id]

    def link(self, term: str, project: str, dataset: str, table: str, column: str = "") -> str:
        """A definition link from a BigQuery table (or one of its columns) to a term."""
        link_id = f"link-{len(self.links) + 1}"
        source = f"{self.parent}/entryGroups/@bigquery/entries/bigquery.googleapis.com/projects/{project}/datasets/{dataset}/tables/{table}"
        self.links[link_id] = {
            "name": f"{self.parent}/entryGroups/@dataplex/entryLinks/{link_id}",
            "entryLinkType": DEFINITION,
            "entryReferences": [
                {"name": source, "path": f"Schema.{column}" if column else "", "type": "SOURCE"},
                {"name": f"{self.parent}/entryGroups/@dataplex/entries/{term}", "type": "TARGET"},
            ],
        }
        return link_id

    def unlink(self, link_id: str) -> None:
        del self.links[link_id]


class CatalogServer:
    """The catalog over HTTP on a loopback port, in a thread of the test process."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        document = json.loads(DISCOVERY.read_text())
        self.schemas: dict[str, dict] = document["schemas"]
        self.routes = [
            (re.compile("^/" + "([^/]+)".join(re.escape(part) for part in re.split(r"\{[^}]+\}", method["flatPath"])) + "$"), method)
            for method in _methods(document)
            if method["id"] in SERVED
        ]
        assert len(self.routes) == len(SERVED), "a served method is missing from the discovery document"
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = server.answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def __enter__(self) -> CatalogServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()

    def answer(self, raw: str) -> tuple[int, dict]:
        self.catalog.requests += 1
        url = urlsplit(raw)
        query = parse_qs(url.query)
        for pattern, method in self.routes:
            if pattern.match(url.path):
                kind = SERVED[method["id"]]
                unknown = set(query) - set(method["parameters"]) - {"$alt", "alt"}
                if unknown:
                    return 400, _error(400, "INVALID_ARGUMENT", f"unknown parameters {sorted(unknown)}")
                resource = url.path.removeprefix("/v1/")
                parent = resource.removesuffix(":lookupEntryLinks") if kind == "entry_links" else resource.rsplit("/", 1)[0]
                return self._list(kind, parent, query, method)
        return 404, _error(404, "NOT_FOUND", f"no such method: {url.path}")

    def _list(self, kind: str, parent: str, query: dict[str, list[str]], method: dict) -> tuple[int, dict]:
        catalog = self.catalog
        if kind == "glossaries":
            items = [glossary for name, glossary in sorted(catalog.glossaries.items()) if name.startswith(f"{parent}/")]
            status, body = self._page(items, "glossaries", query, method)
            for name in list(catalog.vanishing):
                catalog.delete_glossary(name)
            catalog.vanishing.clear()
            return status, body
        if kind in ("categories", "terms"):
            if parent in catalog.denied:
                return 403, _error(403, "PERMISSION_DENIED", f"Permission 'dataplex.glossaries.get' denied on resource '{parent}'")
            if parent not in catalog.glossaries:
                return 404, _error(404, "NOT_FOUND", f"Glossary {parent} not found")
            store = catalog.categories if kind == "categories" else catalog.terms
            return self._page([item for name, item in sorted(store.items()) if name.startswith(f"{parent}/")], kind, query, method)
        entry = query.get("entry", [""])[0]
        wanted = set(query.get("entryLinkTypes", []))
        mode = ENTRY_MODES.get(query.get("entryMode", [""])[0])  # the client sends enums as numbers
        items = [
            link
            for _, link in sorted(catalog.links.items())
            if any(reference["name"] == entry and mode in (None, reference["type"]) for reference in link["entryReferences"])
            and (not wanted or link["entryLinkType"] in wanted)
        ]
        return self._page(items, "entryLinks", query, method)

    def _page(self, items: list[dict], key: str, query: dict[str, list[str]], method: dict) -> tuple[int, dict]:
        start = int(query.get("pageToken", ["0"])[0] or 0)
        page = items[start : start + PAGE]
        body: dict[str, Any] = {key: page}
        if start + PAGE < len(items):
            body["nextPageToken"] = str(start + PAGE)
        self._check(body, method["response"]["$ref"])
        return 200, body

    def _check(self, value: Any, schema_name: str) -> None:
        """Raise ContractError for any field the discovery schema does not define."""
        schema = self.schemas[schema_name]
        if not isinstance(value, dict):
            return
        for name, item in value.items():
            if name not in schema.get("properties", {}):
                raise ContractError(f"{schema_name} has no field {name!r}")
            spec = schema["properties"][name]
            element = spec.get("items", {}) if spec.get("type") == "array" else spec
            ref = element.get("$ref")
            if ref:
                for entry in item if isinstance(item, list) else [item]:
                    self._check(entry, ref)


def _error(code: int, status: str, message: str) -> dict:
    return {"error": {"code": code, "message": message, "status": status}}
