"""The demo's automotive domain, fixed: models, systems, fault codes, procedures, parts — and the
truths planted in it that the agent journeys must find."""

from __future__ import annotations

from dataclasses import dataclass

MODELS = ("Aster", "Boreal", "Cobalt", "Dune")
SYSTEMS = ("engine", "ignition", "brakes", "abs", "charging", "cooling", "body-bcm", "network")
# Systems whose documents cite each other: the natural themes of the library.
THEMES = {
    "powertrain": ("engine", "ignition"),
    "braking": ("brakes", "abs"),
    "electrical": ("charging", "cooling"),
    "network-bcm": ("body-bcm", "network"),
}


@dataclass(frozen=True)
class Part:
    number: str
    name: str
    system: str
    superseded_by: str | None = None


@dataclass(frozen=True)
class Procedure:
    id: str
    system: str
    title: str
    part: str  # the part the documented procedure prescribes


@dataclass(frozen=True)
class FaultCode:
    code: str
    system: str
    description: str
    procedure: str | None  # None: occurs in the field, documented nowhere
    fixing_part: str | None = None  # set when the documented procedure's part is not what fixes it
    weight: int = 10  # how often it occurs in the field


PARTS = (
    Part("IC-3051", "Ignition coil", "ignition", superseded_by="IC-3051B"),
    Part("IC-3051B", "Ignition coil, revised", "ignition"),
    Part("SP-112", "Spark plug", "ignition"),
    Part("MAF-410", "Mass air flow sensor", "engine"),
    Part("CAT-900", "Catalytic converter", "engine"),
    Part("WS-220", "Wheel speed sensor", "brakes"),
    Part("WH-880", "Wheel speed sensor harness", "brakes"),
    Part("BP-310", "Brake pad set", "brakes"),
    Part("ABS-PM-77", "ABS pump motor", "abs"),
    Part("ABS-RL-12", "ABS valve relay", "abs"),
    Part("ABS-GND-5", "ABS ground strap", "abs"),
    Part("ALT-150", "Alternator", "charging"),
    Part("BAT-70", "Battery", "charging"),
    Part("TH-82", "Thermostat", "cooling"),
    Part("WP-300", "Water pump", "cooling"),
    Part("BCM-900", "Body control module", "body-bcm"),
    Part("BCM-FW", "BCM firmware package", "body-bcm"),
    Part("CAN-TERM-120", "CAN terminating resistor", "network"),
    Part("GW-510", "Central gateway module", "network"),
    Part("HV-PACK-1", "High-voltage battery pack", "charging"),
)
PROCEDURES = (
    Procedure("PROC-IGN-01", "ignition", "Replace ignition coil", "IC-3051"),
    Procedure("PROC-IGN-02", "ignition", "Replace spark plugs", "SP-112"),
    Procedure("PROC-ENG-01", "engine", "Replace mass air flow sensor", "MAF-410"),
    Procedure("PROC-ENG-02", "engine", "Replace catalytic converter", "CAT-900"),
    Procedure("PROC-BRK-01", "brakes", "Replace wheel speed sensor", "WS-220"),
    Procedure("PROC-BRK-02", "brakes", "Replace brake pads", "BP-310"),
    Procedure("PROC-ABS-01", "abs", "Replace ABS pump motor", "ABS-PM-77"),
    Procedure("PROC-ABS-02", "abs", "Replace ABS valve relay", "ABS-RL-12"),
    Procedure("PROC-CHG-01", "charging", "Replace alternator", "ALT-150"),
    Procedure("PROC-CHG-02", "charging", "Replace battery", "BAT-70"),
    Procedure("PROC-COOL-01", "cooling", "Replace thermostat", "TH-82"),
    Procedure("PROC-COOL-02", "cooling", "Replace water pump", "WP-300"),
    Procedure("PROC-BCM-01", "body-bcm", "Reflash body control module", "BCM-FW"),
    Procedure("PROC-BCM-02", "body-bcm", "Replace body control module", "BCM-900"),
    Procedure("PROC-NET-01", "network", "Install CAN terminating resistor", "CAN-TERM-120"),
    Procedure("PROC-NET-02", "network", "Replace central gateway", "GW-510"),
)
FAULT_CODES = (
    FaultCode("P0301", "ignition", "Cylinder 1 misfire detected", "PROC-IGN-01", weight=30),
    FaultCode("P0302", "ignition", "Cylinder 2 misfire detected", "PROC-IGN-02"),
    FaultCode("P0171", "engine", "System too lean, bank 1", "PROC-ENG-01"),
    FaultCode("P0420", "engine", "Catalyst efficiency below threshold", "PROC-ENG-02"),
    FaultCode("C0035", "brakes", "Left front wheel speed sensor circuit", "PROC-BRK-01", fixing_part="WH-880", weight=20),
    FaultCode("C0040", "brakes", "Brake pad wear sensor", "PROC-BRK-02"),
    FaultCode("C0110", "abs", "ABS pump motor circuit", "PROC-ABS-01"),
    FaultCode("C0121", "abs", "ABS valve relay circuit", "PROC-ABS-02", fixing_part="ABS-GND-5", weight=20),
    FaultCode("P0562", "charging", "System voltage low", "PROC-CHG-01"),
    FaultCode("P0620", "charging", "Battery state of charge low", "PROC-CHG-02"),
    FaultCode("P0128", "cooling", "Coolant temperature below thermostat range", "PROC-COOL-01"),
    FaultCode("P0217", "cooling", "Engine overheat condition", "PROC-COOL-02"),
    FaultCode("B1318", "body-bcm", "BCM battery voltage low", "PROC-BCM-01"),
    FaultCode("B2477", "body-bcm", "BCM configuration error", "PROC-BCM-02"),
    FaultCode("U0100", "network", "Lost communication with ECM", "PROC-NET-01"),
    FaultCode("U0140", "network", "Lost communication with body control module", "PROC-NET-02"),
    # In the field, documented nowhere.
    FaultCode("U0422", "network", "Invalid data received from body control module", None, fixing_part="GW-510", weight=8),
    FaultCode("P0A80", "charging", "Replace hybrid battery pack", None, fixing_part="HV-PACK-1", weight=6),
    FaultCode("C0561", "abs", "ABS system disabled, performance limited", None, fixing_part="ABS-GND-5", weight=6),
    # Documented, never seen in the field (weight 0, last: the field's draws stay what they were).
    FaultCode("P0455", "engine", "Evaporative emission system large leak", "PROC-ENG-02", weight=0),
    FaultCode("C0265", "abs", "ABS motor relay circuit open", "PROC-ABS-01", weight=0),
)
REVISED_PART = {"fault_code": "P0301", "old_part": "IC-3051", "new_part": "IC-3051B", "revised_on": "2024-06-01"}


def part(number: str) -> Part:
    return next(item for item in PARTS if item.number == number)


def procedure(procedure_id: str) -> Procedure:
    return next(item for item in PROCEDURES if item.id == procedure_id)


def theme_of(system: str) -> str:
    return next(name for name, systems in THEMES.items() if system in systems)
