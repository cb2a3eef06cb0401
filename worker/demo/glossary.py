"""The demo glossary: business terms tagged to the tables and columns that carry them."""

GLOSSARY = """\
[[term]]
name = "Comeback ratio"
description = "Share of repair visits that are repeat visits for the same fault within 30 days."
synonyms = ["repeat repair rate", "return rate"]
tags = ["service.work_orders", "service.work_orders.is_comeback"]

[[term]]
name = "First-time-fix rate"
description = "Share of faults fixed on the first visit: one minus the comeback ratio."
synonyms = ["FTF", "fixed first time"]
tags = ["service.work_orders.is_comeback"]

[[term]]
name = "Supersession"
description = "A part replaced by a revised part number."
synonyms = ["revised part", "replacement part number"]
tags = ["service.parts.superseded_by"]

[[term]]
name = "Field code"
description = "A diagnostic trouble code recorded on a repair visit."
synonyms = ["DTC", "fault code"]
tags = ["service.work_orders.fault_code", "service.fault_codes", "service.fault_codes.code"]
identifier = true

[[term]]
name = "Labor hours"
description = "Technician time billed for a repair visit."
tags = ["service.work_orders.labor_hours"]
"""
