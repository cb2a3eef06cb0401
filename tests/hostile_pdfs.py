"""Hostile PDFs, written the way they reach a real library: pages whose streams need a codec that is
not installed (JBIG2, Brotli), abbreviated filter names pypdf refuses, filter chains past pypdf's
limits, and the real samples of ../shared/corpora/pdf-samples truncated, bit-flipped and spliced
with PDF syntax (a fixed seed: the same files every run).

Each crafted file has one readable page (`GOOD_TEXT`) before its hostile one, so a parser that
loses the whole file for one page's sake is caught.
"""

from __future__ import annotations

import base64
import random
from pathlib import Path

from tests.corpora import PDF_SAMPLES

GOOD_TEXT = "Readable page before the hostile one"
FUZZ_SOURCE_BYTES = 100_000  # larger samples take seconds a parse once broken: kept for the time-limit test
SPLICES = (b"/A85", b" 0 R", b"<<", b">>", b"[", b"/JBIG2Decode", b"999999999", b"-1", b"/Filter /FlateDecode", b"endobj")


def crafted_pdf(hostile_stream: tuple[str, bytes]) -> bytes:
    """A two-page PDF: a page of plain text, then a page whose content stream has `hostile_stream`'s
    dictionary entries and bytes; with a correct cross-reference table."""
    text = f"BT /F1 12 Tf 72 700 Td ({GOOD_TEXT}) Tj ET".encode()
    pages = [("", text), hostile_stream]
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * index} 0 R" for index in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for index, (entries, data) in enumerate(pages):
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * index} 0 R >>".encode())
        objects.append(f"<< /Length {len(data)} {entries} >>\nstream\n".encode() + data + b"\nendstream")
    out = b"%PDF-1.7\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def crafted() -> dict[str, bytes]:
    """name → bytes of each page-level attack; every one keeps its first page readable."""
    text = b"BT /F1 12 Tf 72 650 Td (hostile) Tj ET"
    return {
        "jbig2-page.pdf": crafted_pdf(("/Filter /JBIG2Decode", b"\x00\x01 not a jbig2 stream")),
        "brotli-page.pdf": crafted_pdf(("/Filter /BrotliDecode", b"not brotli")),
        "a85-filter-name.pdf": crafted_pdf(("/Filter /A85", base64.a85encode(text) + b"~>")),
        "filter-chain.pdf": crafted_pdf(("/Filter [" + "/FlateDecode " * 100 + "]", b"x")),
    }


def fuzzed(count_per_sample: int = 6, seed: int = 29) -> dict[str, bytes]:
    """name → bytes: the small real samples, each mangled `count_per_sample` ways."""
    rng = random.Random(seed)
    found: dict[str, bytes] = {}
    for path in sorted(PDF_SAMPLES.glob("*/*.pdf")):
        data = path.read_bytes()
        if len(data) > FUZZ_SOURCE_BYTES:
            continue
        for variant in range(count_per_sample):
            mangled = bytearray(data)
            how = ("truncated", "flipped", "cut", "spliced")[variant % 4]
            if how == "truncated":
                mangled = mangled[: rng.randrange(len(mangled))]
            elif how == "flipped":
                for _ in range(rng.randrange(1, 40)):
                    mangled[rng.randrange(len(mangled))] = rng.randrange(256)
            elif how == "cut":
                start = rng.randrange(len(mangled))
                del mangled[start : start + rng.randrange(1, 200)]
            else:
                for _ in range(20):
                    at = rng.randrange(len(mangled))
                    mangled[at:at] = rng.choice(SPLICES)
            found[f"{path.stem}-{how}-{variant}.pdf"] = bytes(mangled)
    return found


def write(into: Path) -> dict[str, Path]:
    """Every hostile file (crafted and fuzzed, and the real password-protected sample) under `into`."""
    files = {**crafted(), **fuzzed()}
    files["encrypted.pdf"] = (PDF_SAMPLES / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf").read_bytes()
    into.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, data in files.items():
        written[name] = into / name
        written[name].write_bytes(data)
    return written
