"""The z3 checks: bounds, races, barriers, equivalence, ISA self-checks, witness replay."""
