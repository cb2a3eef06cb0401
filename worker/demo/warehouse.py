"""The demo warehouse (DuckDB; the same DDL loads into the BigQuery emulator): vehicles, the
fault-code reference, procedures, parts with supersession, work orders with comebacks, and the
parts each work order used — with declared keys. Work orders follow the planted truths: the
revised coil ends the recurring misfire; for the wrongly documented codes the documented part
brings the car back until a different part is fitted; the undocumented codes occur all the same."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import duckdb

from worker.demo.domain import (
    FAULT_CODES,
    MODELS,
    PARTS,
    PROCEDURES,
    REVISED_PART,
    FaultCode,
    procedure,
)
from worker.demo.library import LIBRARY, procedure_path

DDL = """
CREATE SCHEMA service;
CREATE TABLE service.vehicles (vin VARCHAR PRIMARY KEY, model VARCHAR NOT NULL, model_year INTEGER, region VARCHAR);
CREATE TABLE service.fault_codes (code VARCHAR PRIMARY KEY, system VARCHAR NOT NULL, description VARCHAR);
CREATE TABLE service.parts (part_no VARCHAR PRIMARY KEY, name VARCHAR, system VARCHAR, superseded_by VARCHAR);
CREATE TABLE service.procedures (
  procedure_id VARCHAR PRIMARY KEY, system VARCHAR, title VARCHAR,
  part_no VARCHAR REFERENCES service.parts (part_no), doc_uri VARCHAR);
CREATE TABLE service.work_orders (
  wo_id INTEGER PRIMARY KEY, vin VARCHAR NOT NULL REFERENCES service.vehicles (vin), opened_on DATE NOT NULL,
  fault_code VARCHAR NOT NULL, procedure_id VARCHAR, is_comeback BOOLEAN NOT NULL, labor_hours DOUBLE);
CREATE TABLE service.work_order_parts (
  wo_id INTEGER REFERENCES service.work_orders (wo_id), part_no VARCHAR REFERENCES service.parts (part_no), quantity INTEGER,
  PRIMARY KEY (wo_id, part_no));
COMMENT ON TABLE service.vehicles IS 'Vehicles in the field, by VIN';
COMMENT ON TABLE service.fault_codes IS 'Diagnostic trouble code reference';
COMMENT ON TABLE service.parts IS 'Service parts catalogue, with supersession';
COMMENT ON TABLE service.procedures IS 'Documented repair procedures and the part each prescribes';
COMMENT ON TABLE service.work_orders IS 'Repair visits; a comeback is a repeat visit for the same fault within 30 days';
COMMENT ON TABLE service.work_order_parts IS 'Parts fitted on each repair visit';
"""
COMEBACK_DAYS = 30
START = date(2024, 1, 1)


@dataclass(frozen=True)
class Visit:
    wo_id: int
    vin: str
    opened_on: date
    code: FaultCode
    part: str
    is_comeback: bool


def _part_for(code: FaultCode, opened_on: date, attempt: int) -> str:
    if code.code == REVISED_PART["fault_code"]:
        revised = opened_on >= date.fromisoformat(REVISED_PART["revised_on"])
        return REVISED_PART["new_part"] if revised else REVISED_PART["old_part"]
    if code.procedure is None:
        return code.fixing_part or "BAT-70"
    documented = procedure(code.procedure).part
    return code.fixing_part if code.fixing_part and attempt > 0 else documented


def _fails(code: FaultCode, part: str, rng: random.Random) -> bool:
    """Whether this repair brings the car back within the comeback window."""
    if part == REVISED_PART["old_part"]:
        return rng.random() < 0.55
    if code.fixing_part and code.procedure and part != code.fixing_part:
        return rng.random() < 0.8
    return rng.random() < 0.04


def simulate(vehicles: int, rng: random.Random) -> tuple[list[tuple], list[Visit]]:
    fleet = [
        (f"VIN{index:06d}", MODELS[index % len(MODELS)], 2019 + rng.randrange(5), rng.choice(("north", "south", "east", "west"))) for index in range(vehicles)
    ]
    weights = [code.weight for code in FAULT_CODES]
    visits: list[Visit] = []
    for vin, *_ in fleet:
        day = START + timedelta(days=rng.randrange(60))
        for _ in range(1 + rng.randrange(3)):
            code = rng.choices(FAULT_CODES, weights)[0]
            attempt = 0
            while True:
                part = _part_for(code, day, attempt)
                comeback = attempt > 0
                visits.append(Visit(len(visits) + 1, vin, day, code, part, comeback))
                if attempt >= 3 or not _fails(code, part, rng):
                    break
                attempt += 1
                day += timedelta(days=3 + rng.randrange(COMEBACK_DAYS - 5))
            day += timedelta(days=COMEBACK_DAYS + 15 + rng.randrange(120))
    return fleet, visits


def write_warehouse(path: Path, vehicles: int, seed: int) -> list[Visit]:
    rng = random.Random(seed)
    fleet, visits = simulate(vehicles, rng)
    if path.exists():
        path.unlink()
    with duckdb.connect(str(path)) as con:
        con.execute(DDL)
        con.executemany("INSERT INTO service.vehicles VALUES (?, ?, ?, ?)", fleet)
        con.executemany("INSERT INTO service.fault_codes VALUES (?, ?, ?)", [(c.code, c.system, c.description) for c in FAULT_CODES])
        con.executemany("INSERT INTO service.parts VALUES (?, ?, ?, ?)", [(p.number, p.name, p.system, p.superseded_by) for p in PARTS])
        con.executemany(
            "INSERT INTO service.procedures VALUES (?, ?, ?, ?, ?)",
            [(p.id, p.system, p.title, p.part, f"{LIBRARY}/{procedure_path(p.id).removesuffix('.md')}") for p in PROCEDURES],
        )
        con.executemany(
            "INSERT INTO service.work_orders VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(v.wo_id, v.vin, v.opened_on, v.code.code, v.code.procedure, v.is_comeback, round(0.5 + rng.random() * 3, 1)) for v in visits],
        )
        con.executemany("INSERT INTO service.work_order_parts VALUES (?, ?, ?)", [(v.wo_id, v.part, 1) for v in visits])
    return visits
