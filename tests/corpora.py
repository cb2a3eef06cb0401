"""The real corpora of the shared folder (`../shared/corpora` from the project root), read in place.

They are never copied into the repository; a test unpacks the Markdown estate once per session into
its own temporary folder.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
POWERSHELL_ARCHIVE = CORPORA / "powershell-docs.tar.gz"
PDF_SAMPLES = CORPORA / "pdf-samples"


def unpack_powershell_docs(into: Path) -> Path:
    """3,088 real DocFX Markdown pages, unpacked under `into`; returns the estate's root folder."""
    if not POWERSHELL_ARCHIVE.is_file():
        raise FileNotFoundError(f"the real Markdown corpus is missing: {POWERSHELL_ARCHIVE} (shared/corpora beside the checkout)")
    with tarfile.open(POWERSHELL_ARCHIVE) as archive:
        archive.extractall(into, filter="data")
    return into / "powershell-docs"
