"""Proved rewrites of a kernel's own PTX: a catalogue of declared transformations (cache
operators, performance directives, unroll pragmas, block size), each admitted only when the
model proves the rewritten kernel equivalent to the original at the check sizes."""

from karyamorph.model.rewrite.catalogue import CATALOGUE, REWRITES, admitted, nc_of, rewrite_named
from karyamorph.model.rewrite.proof import (
    RewriteVerdict,
    block_fixed,
    candidates,
    proofs,
    prove,
    rewritten_spec,
)
from karyamorph.model.rewrite.rewrite import Condition, Rewrite, Target

__all__ = [
    "CATALOGUE", "REWRITES", "Condition", "Rewrite", "RewriteVerdict", "Target", "admitted", "block_fixed",
    "candidates", "nc_of", "proofs", "prove", "rewrite_named", "rewritten_spec",
]  # fmt: skip
