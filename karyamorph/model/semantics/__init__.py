"""The instruction DSL and its two value domains: numpy (concrete) and z3 (symbolic)."""
