"""Offline bulk import against the online full load (not a test): what Neo4j's own importer would
cost for a first load of the real estate into an empty local graph, and where the online load's
CPU goes. Issue 17 asked whether the importer could reach 10,000 sections/s on two cores.

    python -m tests.benchmarks.offline_import [--copies 1,3]

For each size (the PowerShell estate under 1 and 3 library names) it loads the estate through
`load` twice (the first warms Neo4j up and is not reported), with the CPU seconds of the Neo4j JVM
and of the loading process, and what parsing alone costs on one core, then times the offline path step by step: parse and
write CSVs of the sections, documents, HAS and NEXT_SECTION; stop the server; `neo4j-admin
database import full`; start the server; create the schema and wait for its indexes. The offline
figure is a floor: its CSVs hold fewer properties than the online graph, and links are left out.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import psutil

from tests.corpora import unpack_powershell_docs
from tests.graph_dump import wipe
from worker.documents.loader import load, parsed_documents
from worker.documents.sync import DocumentSync
from worker.graph import schema
from worker.graph.connection import connect
from worker.runtime import maven, neo4j_server
from worker.settings import Settings, load_settings

ARRAY_DELIMITER = "\x1f"  # never in a heading anchor or a URL
FILES = {
    "sections": ["uri:ID(Section)", "name", "displayName", "level:int", "sort_pos:int", "text", "anchors:string[]", "doc_uri", "content_hash"],
    "documents": ["uri:ID(Document)", "name", "displayName", "text", "relpath", "library", "content_hash", "file_stamp", "own_hash"],
    "document_has": [":START_ID(Document)", ":END_ID(Section)"],
    "section_has": [":START_ID(Section)", ":END_ID(Section)"],
    "next_section": [":START_ID(Section)", ":END_ID(Section)"],
}


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def own_cpu_seconds() -> float:
    """This process's: the parse pool's workers are the forkserver's children, timed apart."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def parse_seconds(settings: Settings) -> float:
    """The CPU seconds of parsing every file on one core: what the load's parse pool spends."""
    began = own_cpu_seconds()
    for _ in parsed_documents(DocumentSync(settings, None, "neo4j"), workers=1):  # type: ignore[arg-type]  # parsing reads no graph
        pass
    return own_cpu_seconds() - began


def online(settings: Settings, pid: int) -> tuple[int, float, float, float]:
    """The measured second of two loads: sections, seconds, the JVM's and the loading process's CPU seconds."""
    driver, where = connect(settings)
    jvm = psutil.Process(pid)
    with driver:
        for _ in range(2):
            wipe(driver)
            schema.apply(driver, where.database)
            jvm_before, own_before, began = cpu_seconds(jvm), own_cpu_seconds(), time.monotonic()
            report = load(DocumentSync(settings, driver, where.database))
            seconds = time.monotonic() - began
    return report.sections, seconds, cpu_seconds(jvm) - jvm_before, own_cpu_seconds() - own_before


def write_csvs(settings: Settings, folder: Path) -> None:
    with ExitStack() as files:
        writers = {name: csv.writer(files.enter_context(open(folder / f"{name}.csv", "w", newline=""))) for name in FILES}
        for name, header in FILES.items():
            writers[name].writerow(header)
        for document in parsed_documents(DocumentSync(settings, None, "neo4j")):  # type: ignore[arg-type]  # parsing reads no graph
            own = document.props
            writers["documents"].writerow(
                [
                    document.uri,
                    own["name"],
                    own["displayName"],
                    own["text"],
                    own["relpath"],
                    own["library"],
                    document.file_hash,
                    document.file_stamp,
                    document.own_hash,
                ]
            )
            for previous, section in zip([None, *document.sections], document.sections, strict=False):
                props = section.props
                anchors = ARRAY_DELIMITER.join(props["anchors"])
                row = [
                    section.uri,
                    props["name"],
                    props["displayName"],
                    props["level"],
                    props["sort_pos"],
                    props["text"],
                    anchors,
                    props["doc_uri"],
                    props["content_hash"],
                ]
                writers["sections"].writerow(row)
                writers["document_has" if section.parent_index < 0 else "section_has"].writerow([section.parent, section.uri])
                if previous is not None:
                    writers["next_section"].writerow([previous.uri, section.uri])


def offline(settings: Settings, folder: Path) -> dict[str, float]:
    """Seconds per step of the offline path; the server runs again at the end."""
    steps: dict[str, float] = {}

    def timed(step: str, began: float) -> None:
        steps[step] = time.monotonic() - began

    began = time.monotonic()
    write_csvs(settings, folder)
    timed("parse + CSV", began)
    began = time.monotonic()
    neo4j_server.stop(settings)
    timed("server stop", began)
    jars, home = maven.resolve(settings.cache_path / "maven"), neo4j_server.Neo4jHome.of(settings)
    command = [str(jars.java), "-Xmx1g", "-cp", jars.classpath, neo4j_server.ADMIN_TOOL, "database", "import", "full", "neo4j"]
    command += [
        "--overwrite-destination=true",
        "--multiline-fields=true",
        f"--array-delimiter=U+{ord(ARRAY_DELIMITER):04X}",
        f"--report-file={folder / 'import.report'}",
    ]
    command += [f"--nodes=Section={folder / 'sections.csv'}", f"--nodes=Document={folder / 'documents.csv'}"]
    command += [f"--relationships=HAS={folder / 'document_has.csv'}", f"--relationships=HAS={folder / 'section_has.csv'}"]
    command += [f"--relationships=NEXT_SECTION={folder / 'next_section.csv'}"]
    began = time.monotonic()
    env = {**os.environ, "NEO4J_HOME": str(home.root), "NEO4J_CONF": str(home.conf_dir)}
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"import failed: {(result.stderr or result.stdout)[-800:]}")
    timed("import", began)
    began = time.monotonic()
    neo4j = neo4j_server.start(settings)
    timed("server start", began)
    driver, where = connect(settings.with_section("neo4j", uri=neo4j.uri, password=neo4j.password))
    with driver:
        began = time.monotonic()
        schema.apply(driver, where.database)
        timed("schema + index population", began)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", default="1,3", help="sizes: the estate under this many library names")
    parser.add_argument("--heap", default="2g")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lakegraph-offline-import-"))
    root = unpack_powershell_docs(work / "corpora")
    for copies in (int(count) for count in args.copies.split(",")):
        libraries = [{"name": f"ps{copy}", "root": str(root)} for copy in range(copies)]
        state = work / f"state-{copies}"
        settings = load_settings(state_dir=str(state), neo4j={"heap_size": args.heap, "pagecache_size": "1g"}, documents={"libraries": libraries})
        neo4j = neo4j_server.start(settings)
        try:
            settings = settings.with_section("neo4j", uri=neo4j.uri, password=neo4j.password)
            sections, seconds, jvm, own = online(settings, neo4j.pid)
            print(f"\nthe real estate x{copies}: {sections:,} sections")
            print(f"  online load       {seconds:6.1f} s  {sections / seconds:7,.0f} sections/s")
            parse = parse_seconds(settings)
            print(
                f"    CPU: Neo4j {jvm:.1f} s, the loading process {own:.1f} s, parsing {parse:.1f} s (one core, apart); {2 * seconds:.1f} core-seconds on 2 cores"
            )
            folder = state / "csv"
            folder.mkdir()
            steps = offline(settings, folder)
            total = sum(steps.values())
            for step, taken in steps.items():
                print(f"    offline {step:<28} {taken:6.1f} s")
            print(f"  offline import    {total:6.1f} s  {sections / total:7,.0f} sections/s before links: {total / seconds:.2f}x the online load")
        finally:
            neo4j_server.stop(settings)


if __name__ == "__main__":
    main()
