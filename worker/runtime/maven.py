"""Resolve the Neo4j + GDS jars from Maven Central once, into a cache shared by all state folders."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from worker.exceptions import LakegraphError

POM = Path(__file__).with_name("pom.xml")
GDS_GROUP_PREFIX = "org.neo4j.gds."
COMPLETE_MARKER = ".complete"
LOCK_FILE = ".resolving.lock"
MIN_JAVA = 17


@dataclass(frozen=True)
class RuntimeJars:
    """The resolved runtime: every jar for the classpath, and the GDS jars Neo4j scans for procedures."""

    lib_dir: Path
    java: Path

    @property
    def classpath(self) -> str:
        return str(self.lib_dir / "*")

    @property
    def gds_jars(self) -> list[Path]:
        return sorted(self.lib_dir.glob(f"{GDS_GROUP_PREFIX}*.jar"))


def pom_versions() -> dict[str, str]:
    text = POM.read_text()
    found = {name: re.search(rf"<{name}.version>([^<]+)<", text) for name in ("neo4j", "gds")}
    return {name: match.group(1) for name, match in found.items() if match is not None}


def find_java() -> Path:
    """JAVA_HOME's java, else the one on PATH; it must be Java 17 or later."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    if candidate is None or not candidate.exists():
        found = shutil.which("java")
        if not found:
            raise LakegraphError("Java not found: install a Java 17+ runtime (apt-get install openjdk-17-jre-headless) or set JAVA_HOME")
        candidate = Path(found)
    version = subprocess.run([str(candidate), "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', version)
    if not match or int(match.group(1)) < MIN_JAVA:
        raise LakegraphError(f"{candidate} is not Java {MIN_JAVA}+ ({version.splitlines()[0] if version else '?'})")
    return candidate


def resolve(cache_dir: Path) -> RuntimeJars:
    """The cached jars for this pom; resolved with Maven on first use, never again after.

    Resolution holds a lock on the cache: a second process starting at the same time (a test run
    beside `lakegraph demo` on a fresh machine) waits for the first and uses its jars, and a
    folder handed out is never replaced under a running Neo4j."""
    java = find_java()
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    versions = pom_versions()
    lib_dir = cache_dir / f"neo4j-{versions['neo4j']}-gds-{versions['gds']}-{digest}"
    if (lib_dir / COMPLETE_MARKER).exists():
        return RuntimeJars(lib_dir, java)
    mvn = shutil.which("mvn")
    if not mvn:
        raise LakegraphError("Maven not found: it resolves Neo4j and GDS on first start; install it (apt-get install maven)")
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (lib_dir / COMPLETE_MARKER).exists():
            _copy_dependencies(mvn, cache_dir, lib_dir, versions)
    return RuntimeJars(lib_dir, java)


def _copy_dependencies(mvn: str, cache_dir: Path, lib_dir: Path, versions: dict[str, str]) -> None:
    """Maven copies the pom's runtime jars into a staging folder that becomes `lib_dir` when whole."""
    staging = Path(tempfile.mkdtemp(prefix=".resolving-", dir=cache_dir))
    command = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(POM),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-Dmdep.prependGroupId=true",
        "-DincludeScope=runtime",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        reason = next((line for line in result.stdout.splitlines() if "[ERROR]" in line), "").strip()
        raise LakegraphError(
            f"could not resolve Neo4j {versions['neo4j']} + GDS {versions['gds']} from Maven Central "
            f"({reason[:300] or 'mvn exit ' + str(result.returncode)}); check the network or Maven's "
            "settings.xml, then start again"
        )
    (staging / COMPLETE_MARKER).write_text(" ".join(command))
    if lib_dir.exists():  # an interrupted earlier attempt (no marker: nothing uses it)
        shutil.rmtree(lib_dir)
    staging.rename(lib_dir)
