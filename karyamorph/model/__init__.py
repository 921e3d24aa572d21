"""The machine: semantics, interpreter, z3 checks, resource and cost models."""
