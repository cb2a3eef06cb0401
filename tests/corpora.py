"""Real corpora nobody on this project wrote, read in place: `CORPORA_DIR`, else `shared/corpora`
beside the checkout. They are never copied into the repository; a test unpacks the Markdown
estate once per session into its own temporary folder. Where they are absent, the tests that need
them (marked `corpus`) are skipped with `WHERE` as the reason, except under CI, where they run
and fail: CI always has them.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

CORPORA = Path(os.environ.get("CORPORA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "corpora")
POWERSHELL_ARCHIVE = CORPORA / "powershell-docs.tar.gz"
SPIDER2_ARCHIVE = CORPORA / "spider2-lite.tar.gz"
PDF_SAMPLES = CORPORA / "pdf-samples"
OFFICE_SAMPLES = CORPORA / "office-samples"
WHERE = (
    f"needs the real corpora in {CORPORA} (or CORPORA_DIR): powershell-docs.tar.gz, the reference/ Markdown of "
    "MicrosoftDocs/PowerShell-Docs at 27138b21b41de3e2b43cfcac4a56861ca419d5eb, and pdf-samples/, the PDFs of "
    "py-pdf/sample-files at 6921079eb3e1ed0944db5ec75016910d59da7fdb, and office-samples/, the Word, PowerPoint, Excel, "
    "OpenDocument and AsciiDoc files of docling-project/docling's tests/data/*/sources/ at e1cb2b234c48ff29746b0f2f843d07f8e23905a0"
)


def present() -> bool:
    return POWERSHELL_ARCHIVE.is_file() and PDF_SAMPLES.is_dir() and OFFICE_SAMPLES.is_dir()


def unpack(archive_path: Path, folder: str, into: Path) -> Path:
    """One of the corpora's archives unpacked under `into`; returns its root folder."""
    if not archive_path.is_file():
        raise FileNotFoundError(f"the real corpus is missing: {archive_path} (shared/corpora beside the checkout)")
    with tarfile.open(archive_path) as archive:
        archive.extractall(into, filter="data")
    return into / folder


def unpack_powershell_docs(into: Path) -> Path:
    """3,088 real DocFX Markdown pages, unpacked under `into`; returns the estate's root folder."""
    return unpack(POWERSHELL_ARCHIVE, "powershell-docs", into)


def unpack_spider2_lite(into: Path) -> Path:
    """Spider 2.0-lite's questions, gold SQL and schemas, unpacked under `into`; returns its root folder."""
    return unpack(SPIDER2_ARCHIVE, "spider2-lite", into)


def spider2_table_id(engine: str, database: str, name: str) -> str:
    """A Spider 2.0-lite table's id as lakegraph's graph holds it: a SQLite file's tables under
    `<database>.main`, the others by their full name."""
    return f"{database}.main.{name}" if engine == "sqlite" else name
