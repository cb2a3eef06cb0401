"""A generated document library for benchmarks: N documents in folders, ~10 sections and ~5
cross-document links each, deterministic from a seed."""

from __future__ import annotations

import random
from pathlib import Path

WORDS = [
    "coil",
    "ignition",
    "misfire",
    "sensor",
    "harness",
    "connector",
    "torque",
    "brake",
    "rotor",
    "caliper",
    "pad",
    "fluid",
    "bleed",
    "abs",
    "module",
    "wheel",
    "speed",
    "relay",
    "fuse",
    "battery",
    "alternator",
    "charging",
    "voltage",
    "coolant",
    "thermostat",
    "radiator",
    "pump",
    "fan",
    "bcm",
    "network",
    "can",
    "bus",
    "gateway",
    "lin",
    "node",
    "terminal",
    "resistance",
    "ground",
    "circuit",
    "inspect",
    "replace",
    "measure",
    "verify",
]
FOLDERS = ("manuals/engine", "manuals/brakes", "manuals/electrical", "bulletins", "recalls", "parts")


def relpath(index: int) -> str:
    return f"{FOLDERS[index % len(FOLDERS)]}/doc-{index:06d}.md"


def document(index: int, total: int, rng: random.Random, sections: int = 10, links: int = 5) -> str:
    lines = [f"---\ntitle: Document {index}\nid: DOC-{index}\n---", f"Intro to document {index}."]
    targets = [rng.randrange(total) for _ in range(links)]
    for number in range(sections):
        level = "#" if number % 3 == 0 else "##"
        lines.append(f"{level} Section {number}")
        text = " ".join(rng.choice(WORDS) for _ in range(40))
        if number < len(targets):
            target = targets[number]
            here = relpath(index).rsplit("/", 1)[0]
            there = relpath(target)
            depth = here.count("/") + 1
            href = "../" * depth + there if rng.random() < 0.7 else f"doc://DOC-{target}"
            text += f" See [document {target}]({href}#section-{rng.randrange(sections)})."
        lines.append(text)
    return "\n\n".join(lines) + "\n"


def generate(root: Path, total: int, seed: int = 7, sections: int = 10) -> int:
    """Write the corpus; returns the number of sections."""
    rng = random.Random(seed)
    for folder in FOLDERS:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for index in range(total):
        (root / relpath(index)).write_text(document(index, total, rng, sections))
    return total * sections
