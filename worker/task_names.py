"""Every Celery task's name, declared once. Tasks register under these; the watcher, beat, the
audit-event router and problem records send or cite them by the same constants. This module
imports nothing, so a process that only sends tasks (beat, the watcher) stays small."""

SYNC_DOCUMENT = "lakegraph.sync_document"
SYNC_FOLDER = "lakegraph.sync_folder"
RECONCILE_DOCUMENTS = "lakegraph.reconcile_documents"
SYNC_TABLE = "lakegraph.sync_table"
SYNC_WAREHOUSE = "lakegraph.sync_warehouse"
SYNC_GLOSSARY = "lakegraph.sync_glossary"
SYNC_CATALOG_GLOSSARY = "lakegraph.sync_catalog_glossary"
ABSORB_QUERIES = "lakegraph.absorb_queries"
POLL_JOBS = "lakegraph.poll_jobs"
INGEST_AUDIT_FILE = "lakegraph.ingest_audit_file"
CHECK_THEMES = "lakegraph.check_themes"
APPLY_SCHEMA = "lakegraph.apply_schema"
SETTLE_HELD_PROBLEMS = "lakegraph.settle_held_problems"
REFRESH_BRIDGE = "lakegraph.refresh_bridge"

# The source each task keeps fresh: the freshness shape counts queued tasks per source.
SOURCE_OF = {
    SYNC_DOCUMENT: "documents",
    SYNC_FOLDER: "documents",
    RECONCILE_DOCUMENTS: "documents",
    SYNC_TABLE: "warehouse",
    SYNC_WAREHOUSE: "warehouse",
    SYNC_GLOSSARY: "glossary",
    SYNC_CATALOG_GLOSSARY: "glossary",
    ABSORB_QUERIES: "query-log",
    POLL_JOBS: "query-log",
    INGEST_AUDIT_FILE: "query-log",
    REFRESH_BRIDGE: "values",
}
