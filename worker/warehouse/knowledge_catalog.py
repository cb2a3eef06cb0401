"""The business glossary from Knowledge Catalog (Dataplex's Business Glossary API): glossaries,
their categories and terms, and the `definition` entry links that attach a term to a BigQuery
table or column, read into the same `Term`s the TOML file gives.

Each glossary is its own source (`knowledge-catalog:<glossary name>`), synced only when it was
read whole: a glossary that answers with an error (permission denied, a page that fails) keeps the
terms it had and is recorded as a problem; one that is gone (listed no more, or NotFound while
read) loses its terms. A term whose label `lakegraph-identifier` is "true" marks identifier columns
(the bridge), as `identifier = true` does in the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import requests
from google.api_core import exceptions as google_errors
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import dataplex_v1

from worker.settings import Settings
from worker.warehouse.glossary import Term

SOURCE_PREFIX = "knowledge-catalog:"
DEFINITION = "/entryLinkTypes/definition"  # the link type attaching a term to a data asset
DEFINITION_TYPE = "projects/dataplex-types/locations/global/entryLinkTypes/definition"
IDENTIFIER_LABEL = "lakegraph-identifier"
BIGQUERY_ENTRY = "/entryGroups/@bigquery/entries/bigquery.googleapis.com/"
COLUMN_PATH = "Schema."
PAGE_SIZE = 500
# An answer that is an error, or no answer at all (the service unreachable, retries exhausted).
UNREADABLE = (google_errors.GoogleAPICallError, google_errors.RetryError, requests.RequestException)


@dataclass
class CatalogRead:
    """What one pass over the catalog found."""

    glossaries: dict[str, list[Term]] = field(default_factory=dict)  # read whole: glossary name → its terms
    failed: dict[str, str] = field(default_factory=dict)  # glossary name → why it was not read (its terms stay)
    gone: list[str] = field(default_factory=list)  # NotFound while read: its terms go
    listed: bool = True  # False: the glossaries themselves could not be listed, nothing may be removed


def source_of(glossary: str) -> str:
    return f"{SOURCE_PREFIX}{glossary}"


def term_entry(term_name: str) -> str:
    """The catalog entry of a glossary term, which entry links reference."""
    project_and_location = "/".join(term_name.split("/")[:4])
    return f"{project_and_location}/entryGroups/@dataplex/entries/{term_name}"


def asset_tag(entry: str, path: str) -> str | None:
    """The id lakegraph gives a BigQuery table (project.dataset.table) or column (…table.column)
    named by an entry reference; None for an asset that is not a BigQuery table."""
    if BIGQUERY_ENTRY not in entry:
        return None
    parts = entry.split(BIGQUERY_ENTRY, 1)[1].split("/")  # projects/P/datasets/D/tables/T
    if len(parts) != 6 or (parts[0], parts[2], parts[4]) != ("projects", "datasets", "tables"):
        return None
    table = f"{parts[1]}.{parts[3]}.{parts[5]}"
    if not path:
        return table
    return f"{table}.{path.removeprefix(COLUMN_PATH)}" if path.startswith(COLUMN_PATH) else None


class KnowledgeCatalog:
    def __init__(self, settings: Settings) -> None:
        conf = settings.knowledge_catalog
        self.parent = f"projects/{conf.project}/locations/{conf.location}"
        self.only = set(conf.glossaries)
        if conf.endpoint:  # a server speaking the REST API (the tests'): no credentials
            options = ClientOptions(api_endpoint=conf.endpoint)
            self.glossary_client = dataplex_v1.BusinessGlossaryServiceClient(transport="rest", credentials=AnonymousCredentials(), client_options=options)
            self.catalog_client = dataplex_v1.CatalogServiceClient(transport="rest", credentials=AnonymousCredentials(), client_options=options)
        else:
            self.glossary_client = dataplex_v1.BusinessGlossaryServiceClient()
            self.catalog_client = dataplex_v1.CatalogServiceClient()

    def glossary_names(self) -> list[str]:
        """Every glossary of the location, configured or not."""
        return [g.name for g in self.glossary_client.list_glossaries(request={"parent": self.parent, "page_size": PAGE_SIZE})]

    def read(self) -> CatalogRead:
        found = CatalogRead()
        try:
            names = self.glossary_names()
        except UNREADABLE as err:
            found.listed = False
            found.failed[self.parent] = f"listing glossaries: {_reason(err)}"
            return found
        for name in names:
            if self.only and name.rsplit("/", 1)[-1] not in self.only and name not in self.only:
                continue
            try:
                found.glossaries[name] = list(self._terms(name))
            except google_errors.NotFound:
                found.gone.append(name)  # deleted while this pass read it
            except UNREADABLE as err:
                found.failed[name] = _reason(err)
        return found

    def _terms(self, glossary: str) -> Iterable[Term]:
        categories = {c.name: c.display_name for c in self.glossary_client.list_glossary_categories(request={"parent": glossary, "page_size": PAGE_SIZE})}
        for term in self.glossary_client.list_glossary_terms(request={"parent": glossary, "page_size": PAGE_SIZE}):
            category = categories.get(term.parent)
            description = f"{category}: {term.description}" if category and term.description else term.description or ""
            yield Term(
                name=term.display_name or term.name.rsplit("/", 1)[-1],
                description=description,
                tags=sorted(set(self._tags(term.name))),
                identifier=term.labels.get(IDENTIFIER_LABEL, "").lower() == "true",
            )

    def _tags(self, term_name: str) -> Iterable[str]:
        request = dataplex_v1.LookupEntryLinksRequest(
            name=self.parent,
            entry=term_entry(term_name),
            entry_mode=dataplex_v1.LookupEntryLinksRequest.EntryMode.TARGET,
            entry_link_types=[DEFINITION_TYPE],
        )
        for link in self.catalog_client.lookup_entry_links(request=request):
            if not link.entry_link_type.endswith(DEFINITION):
                continue
            for reference in link.entry_references:
                if reference.type_ == dataplex_v1.EntryLink.EntryReference.Type.SOURCE and (tag := asset_tag(reference.name, reference.path)):
                    yield tag


def _reason(err: Exception) -> str:
    message = err.message if isinstance(err, google_errors.GoogleAPICallError) else str(err)
    return f"{type(err).__name__}: {message}"
