"""A smaller launch of a kernel for tools that slow it down: sizes scaled until the work fits a budget.

compute-sanitizer makes a kernel 10-1000x slower: the example SGEMM at 4096^3 ran past the
stage's 120 s limit on an H200. Its tools look for defects in the code a launch runs, and every code
path of a size-generic kernel is already taken at a small size, so the sanitize stage runs them
on a launch whose estimated work fits a budget. How the sizes shrink:

- The work estimate is the largest of threads x static instructions of the entry (a floor on
  what every thread executes), the spec's ``cost.flops`` (what loops multiply) and its
  ``cost.bytes`` / 4 (one access per 4-byte word; all buffers when the spec gives no bytes).
- One size at a time is halved, the one whose halving lowers the work most, until the work is
  within the budget or no size can shrink any more.
- A shrunk size keeps its remainder modulo ``ALIGNMENT`` (256) and is at least 256. So it
  keeps the original's divisibility by every power of two up to 256 (a kernel's tile sizes,
  which the expressions need not state: the SGEMM needs k % 16 == 0 and says so only in a
  comment), and a ragged tail stays ragged (vadd's n = 2**24 + 3 leaves 3 threads in its last
  block, which is what exercises the bounds guard a sanitizer should see).
- Every candidate is bound again (:func:`karyamorph.kernel.bound.bind`), so whatever the
  expressions require (``n / 64`` must be an integer) is checked; a value that does not bind
  is passed over for the next value above it with the same remainder. The block shape and the
  dynamic shared memory never change: a kernel may require its block (``.reqntid``).
- When nothing smaller binds, the spec's own sizes are used.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from karyamorph.isa import ast
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.spec import SpecError, flat_args

WORK_BUDGET = 1e8
"""Estimated thread-instructions of one sanitized launch. Measured on an H200: the vadd example
at its demo size (3.7e8) took ~9 s under the four tools at once, most of it their start-up;
SGEMM at 4096^3 (1.4e11) did not finish in 120 s. Racecheck slows shared-memory code most, so
the budget stays below what vadd showed to be cheap."""
ALIGNMENT = 256
"""A shrunk size keeps its remainder modulo this and is at least this large."""
_TRIES = 64  # values tried above a halved size that does not bind, before the size is kept


def static_instructions(module: ast.Module, entry: str) -> int:
    """Instructions in the body of ``entry`` (each counted once, loops or not)."""
    return sum(1 for _ in module.entry(entry).instructions())


def estimated_work(kernel: BoundKernel, static: int) -> float:
    """The launch's work in thread-instructions, estimated as the module docstring says."""
    moved = kernel.cost_bytes
    if moved is None:
        moved = float(sum(kernel.buffer_bytes(a) for a in flat_args(kernel.args) if a.is_pointer))
    return float(max(kernel.threads * static, kernel.cost_flops or 0.0, moved / 4))


@dataclass(frozen=True, slots=True)
class ScaledLaunch:
    """The launch a budgeted tool runs: the kernel bound at the chosen sizes, and why.

    Attributes
    ----------
    kernel : BoundKernel
        The kernel at the sizes to run (the spec's own when no scaling was needed or possible).
    spec_sizes : dict
        The sizes the run asked for.
    work, spec_work : float
        Estimated thread-instructions at the chosen and at the asked sizes.
    budget : float
        The budget the sizes were scaled to.
    """

    kernel: BoundKernel
    spec_sizes: dict[str, int]
    work: float
    spec_work: float
    budget: float

    @property
    def sizes(self) -> dict[str, int]:
        """The sizes to run."""
        return self.kernel.sizes

    @property
    def scaled(self) -> bool:
        """Whether the sizes differ from those asked for."""
        return self.kernel.sizes != self.spec_sizes

    @property
    def fits(self) -> bool:
        """Whether the estimated work is within the budget."""
        return self.work <= self.budget

    def describe(self) -> str:
        """One line for a log: the sizes used and, when scaled, from what and why."""
        used = _sizes_text(self.sizes)
        if not self.scaled:
            within = "within" if self.fits else "over (no smaller sizes bind)"
            return (
                f"sizes {used}: estimated work {self.work:.2g} thread-instructions, {within} "
                f"budget {self.budget:.2g}"
            )
        return (
            f"sizes {used}, scaled down from {_sizes_text(self.spec_sizes)}: estimated work "
            f"{self.spec_work:.2g} -> {self.work:.2g} thread-instructions (budget {self.budget:.2g})"
        )

    def as_dict(self) -> dict[str, Any]:
        """The stage data's record of the launch that ran."""
        return {
            "sizes": dict(self.sizes),
            "spec_sizes": dict(self.spec_sizes),
            "scaled": self.scaled,
            "grid": list(self.kernel.grid),
            "block": list(self.kernel.block),
            "estimated_work": self.work,
            "spec_estimated_work": self.spec_work,
            "work_budget": self.budget,
        }


def _sizes_text(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "(none)"


def _smaller(kernel: BoundKernel, name: str, alignment: int) -> BoundKernel | None:
    """The kernel with size ``name`` about halved (same remainder modulo ``alignment``, at least
    ``alignment``), if such a value binds."""
    value = kernel.sizes[name]
    least = value % alignment or alignment
    least += alignment if least < alignment else 0
    half = value // 2
    start = max(least, least + (half - least) // alignment * alignment)
    for candidate in itertools.islice(range(start, value, alignment), _TRIES):
        try:
            smaller = bind(kernel.spec, kernel.arch, {**kernel.sizes, name: candidate})
        except SpecError:
            continue
        if smaller.block == kernel.block and smaller.shared_bytes == kernel.shared_bytes:
            return smaller
    return None


def scale_to_budget(
    kernel: BoundKernel, static: int, budget: float = WORK_BUDGET, *, alignment: int = ALIGNMENT
) -> ScaledLaunch:
    """Shrink ``kernel``'s sizes until its estimated work is within ``budget``.

    Parameters
    ----------
    kernel : BoundKernel
        The kernel at the sizes the run asked for.
    static : int
        Static instruction count of its entry (:func:`static_instructions`).
    budget : float
        Most estimated thread-instructions; ``math.inf`` keeps the sizes.
    alignment : int
        A shrunk size keeps its remainder modulo ``alignment`` and is at least that large.

    Returns
    -------
    ScaledLaunch
        The smallest-work launch reached; over the budget only when no size could shrink more.
    """
    spec_work = work = estimated_work(kernel, static)
    current = kernel
    kept: set[str] = set()
    while work > budget:
        best: tuple[float, BoundKernel] | None = None
        # Largest sizes first, so that among equal gains the largest size is halved.
        for name in sorted(current.sizes, key=lambda n: (-current.sizes[n], n)):
            if name in kept:
                continue
            smaller = _smaller(current, name, alignment)
            if smaller is None:
                kept.add(name)  # no smaller value binds: it never will, the others only shrink
                continue
            smaller_work = estimated_work(smaller, static)
            if smaller_work < work and (best is None or smaller_work < best[0]):
                best = (smaller_work, smaller)
        if best is None:
            break
        work, current = best
    return ScaledLaunch(current, dict(kernel.sizes), work, spec_work, budget)
