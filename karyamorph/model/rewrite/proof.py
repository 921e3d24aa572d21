"""The proof of a rewrite: after the rewrite's side condition, the rewritten kernel is checked
equivalent to the original. Where the model runs the same program before and after the edit
(:mod:`karyamorph.model.rewrite.same_run`: a cache operator, a directive), that is the proof, for
every launch and size; otherwise (a block size, an unroll the model sees) the model's bounded
equivalence (:func:`karyamorph.model.check.equiv.check_equivalence`) decides at the sizes given
(a spec's check sizes). Only "proved" admits a rewrite; a refutation carries the equivalence's
witness or the side condition's.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from karyamorph.isa import ast
from karyamorph.isa.errors import PtxError
from karyamorph.isa.parser import parse
from karyamorph.isa.printer import format_module
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.spec import KernelSpec, SpecError
from karyamorph.model.check.equiv import EquivInstance, Side, check_equivalence
from karyamorph.model.check.symexec import Unsupported
from karyamorph.model.check.verdict import Witness
from karyamorph.model.interp.budget import TooLargeError
from karyamorph.model.interp.program import prepare
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.rewrite.catalogue import admitted
from karyamorph.model.rewrite.readonly import check_read_only
from karyamorph.model.rewrite.rewrite import Condition, Rewrite, Target
from karyamorph.model.rewrite.same_run import run_difference
from karyamorph.model.semantics.decode import UnmodeledError
from karyamorph.model.semantics.simt_machine import Machine

EQUIV_THREADS = 8192
"""The most threads a launch of a rewrite's bounded equivalence runs: each is run symbolically
(about 3 ms a thread of vadd), so a size of a hundred thousand elements would take minutes."""
SAME_RUN = "equivalent at every launch and size: the model runs the same instructions before and after"


@dataclass(frozen=True, slots=True)
class RewriteVerdict:
    """What the model made of one rewrite of one kernel.

    Attributes
    ----------
    rewrite : str
        The rewrite's name.
    proved : bool
        Side condition met and the rewritten kernel proved equivalent at ``sizes``.
    reason : str
        The proof's words, or why the rewrite is rejected.
    sizes : tuple of (str, int)
        The sizes it was checked at.
    witness : Witness or None
        The counterexample of a rejection (differing output, or the write that breaks .nc).
    seconds : float
    """

    rewrite: str
    proved: bool
    reason: str
    sizes: tuple[tuple[str, int], ...]
    witness: Witness | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:  # Any: a JSON row
        return {"rewrite": self.rewrite, "proved": self.proved, "reason": self.reason,
                "sizes": dict(self.sizes), "seconds": round(self.seconds, 3),
                "witness": None if self.witness is None else self.witness.as_dict()}  # fmt: skip

    def __str__(self) -> str:
        head = f"{self.rewrite}: {'proved' if self.proved else 'rejected'} ({self.reason})"
        return head + (f"; witness: {self.witness}" if self.witness is not None else "")


def block_fixed(spec: KernelSpec) -> bool:
    """Whether ``spec`` gives ``block.x`` as a number (a block-size rewrite then has something
    to change that no size or search parameter already does). A spec with a ``[search]`` table
    is judged as written, not by its baseline configuration's values."""
    written = spec.search.spec if spec.search is not None else spec
    first = written.launch.block[0] if written.launch.block else None
    return isinstance(first, int) or (isinstance(first, str) and first.strip().isdigit())


def rewritten_spec(spec: KernelSpec, rewrite: Rewrite, sizes: Mapping[str, int] | None = None) -> KernelSpec:
    """``spec`` (of PTX, or lowered) with the rewrite applied: its PTX edited and printed, and for
    a block-size rewrite ``block.x`` replaced and ``grid.x`` scaled to cover at least the
    threads the spec's grid expression gives (``ceildiv(grid.x * block.x, new)``). ``sizes``
    binds the block ``.reqntid`` copies. The result is a plain spec of PTX (no CUDA source, no
    ``[search]`` table).

    Raises
    ------
    PtxError
        The spec's PTX does not parse.
    SpecError
        Its launch does not bind at ``sizes``.
    """
    kernel = bind(spec, sizes=sizes)
    module = parse(spec.ptx, spec.ptx_name)
    ptx = format_module(rewrite.apply(Target(module, spec.entry, kernel.block)))
    launch = spec.launch
    if rewrite.block is not None:
        gx, bx = spec.launch.grid[0], spec.launch.block[0]
        grid = (f"ceildiv(({gx}) * ({bx}), {rewrite.block})", *spec.launch.grid[1:])
        # The other launch fields (shared memory, cluster shape) stay.
        launch = dataclasses.replace(launch, grid=grid, block=(rewrite.block, *spec.launch.block[1:]))
    return dataclasses.replace(spec, ptx=ptx, launch=launch, cuda=None, search=None)


def prove(
    spec: KernelSpec,
    rewrite: Rewrite,
    sizes: Mapping[str, int] | None = None,
    *,
    arch: str | None = None,
    timeout_ms: int = 20_000,
) -> RewriteVerdict:
    """Prove ``rewrite`` of ``spec`` (PTX, or lowered) at ``sizes`` (default: the spec's own).

    Parameters
    ----------
    spec : KernelSpec
    rewrite : Rewrite
    sizes : mapping, optional
        Overrides of the spec's sizes: the check sizes the proof holds at.
    arch : str, optional
        The machine's arch (default: the PTX's ``.target``).
    timeout_ms : int
        z3's limit per query.
    """
    t0 = time.perf_counter()
    at: tuple[tuple[str, int], ...] = ()

    def verdict(proved: bool, reason: str, witness: Witness | None = None) -> RewriteVerdict:
        return RewriteVerdict(rewrite.name, proved, reason, at, witness, time.perf_counter() - t0)

    try:
        original = bind(spec, sizes=sizes)
        at = tuple(sorted(original.sizes.items()))
        module = parse(spec.ptx, spec.ptx_name)
        target = Target(module, spec.entry, original.block)
        if not rewrite.applies(target):
            return verdict(False, "does not apply: it would change nothing of this kernel")
        variant = rewritten_spec(spec, rewrite, sizes)
        rewritten = bind(variant, sizes=sizes)
        edited = parse(variant.ptx, variant.ptx_name)
    except (PtxError, SpecError) as exc:
        return verdict(False, f"the rewritten kernel does not bind: {exc}")
    machine = ptx_machine(arch or _target(module))
    try:
        refused = _side_condition(rewrite, target, edited, original, machine, timeout_ms)
        if refused is not None:
            return verdict(False, refused[0], refused[1])
        if rewrite.block is None:
            before, after = prepare(module, spec.entry, machine), prepare(edited, spec.entry, machine)
            if run_difference(before, after, original.block) is None:
                return verdict(True, SAME_RUN)
        threads = max(original.threads, rewritten.threads)
        if threads > EQUIV_THREADS:
            return verdict(False, f"not proved: the bounded equivalence would run {threads} threads at "
                           f"{_sizes_text(at)}, more than the {EQUIV_THREADS} a rewrite's proof runs "
                           "(give [check] sizes a smaller size)")  # fmt: skip
        outputs = tuple(i for i, a in enumerate(original.args) if a.role in ("out", "inout"))
        sides = equivalence_side(original, module), equivalence_side(rewritten, edited)
        instance = EquivInstance(at, *sides, outputs)
        got = check_equivalence((module, spec.entry), (edited, spec.entry), machine, [instance],
                                timeout_ms=timeout_ms)  # fmt: skip
    except (UnmodeledError, Unsupported, TooLargeError) as exc:
        return verdict(False, f"not proved: the model cannot run it ({exc})")
    if got.verdict == "proved":
        return verdict(True, f"equivalent {got.reason}")
    return verdict(False, f"equivalence {got.verdict}: {got.reason}", got.witness)


def proofs(
    spec: KernelSpec, sizes: Mapping[str, int] | None = None, *, arch: str | None = None,
    fixed: bool | None = None, timeout_ms: int = 20_000,
) -> tuple[RewriteVerdict, ...]:  # fmt: skip
    """Every rewrite ``spec`` admits (:func:`~karyamorph.model.rewrite.catalogue.admitted`), each
    proved or rejected at ``sizes``. ``fixed``: whether the block is the spec's to change
    (default: :func:`block_fixed` of ``spec``)."""
    return tuple(
        prove(spec, r, sizes, arch=arch, timeout_ms=timeout_ms) for r in candidates(spec, sizes, fixed)
    )


def candidates(
    spec: KernelSpec, sizes: Mapping[str, int] | None = None, fixed: bool | None = None
) -> tuple[Rewrite, ...]:
    """The rewrites of the catalogue that change something of ``spec`` at ``sizes``, unproved."""
    kernel = bind(spec, sizes=sizes)
    target = Target(parse(spec.ptx, spec.ptx_name), spec.entry, kernel.block)
    return admitted(target, block_fixed=block_fixed(spec) if fixed is None else fixed)


def _side_condition(
    rewrite: Rewrite, target: Target, edited: ast.Module, original: BoundKernel, machine: Machine,
    timeout_ms: int,
) -> tuple[str, Witness | None] | None:  # fmt: skip
    """Why the side condition fails (with a witness where the model gives one), or None."""
    f = target.function
    if rewrite.check is Condition.UNDECLARED:
        declared = sorted({name for name, _ in f.attributes} & set(rewrite.directives))
        return (f"the entry declares .{declared[0]} already", None) if declared else None
    if rewrite.check is Condition.BLOCK:
        pinned = [d for d in ("reqntid", "maxntid") if f.attribute(d) is not None]
        return (f"the entry pins its block with .{pinned[0]}", None) if pinned else None
    if rewrite.check is Condition.READ_ONLY:
        after = list(edited.entry(target.entry).instructions())
        lines = frozenset(a.loc.line for a, b in zip(f.instructions(), after, strict=True) if a != b)
        side = equivalence_side(original, target.module)
        program = prepare(target.module, target.entry, machine)
        got = check_read_only(program, target.module, original.launch, dict(side.buffers), dict(side.scalars),
                              lines, warp_size=machine.warp_size, timeout_ms=timeout_ms)  # fmt: skip
        return None if got.holds else (got.reason, got.witness)
    return None


def equivalence_side(kernel: BoundKernel, module: ast.Module) -> Side:
    """The launch, buffer sizes and scalars of one side of the equivalence (by parameter name)."""
    params = module.entry(kernel.entry).params
    buffers: dict[str, int] = {}
    scalars: dict[str, int | float] = {}
    for arg, param in zip(kernel.args, params, strict=True):
        if arg.is_pointer:
            buffers[param.name] = kernel.buffer_bytes(arg)
        else:
            scalars[param.name] = kernel.scalars[arg.name]
    return Side(kernel.launch, buffers, scalars)


def _sizes_text(sizes: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sizes) or "the spec's sizes"


def _target(module: ast.Module) -> str:
    """The machine's arch for a module: its ``.target`` when it names one the model knows."""
    for t in module.target:
        if t.startswith("sm_"):
            return t.rstrip("af")
    return "sm_80"
