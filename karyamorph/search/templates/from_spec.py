"""A search declared in a spec (its ``[search]`` table) as a :class:`Template`, so that it is
searched by the same loop, gates, store and winner export as the shipped templates.

Each configuration is the spec with the parameters' values written in
(:func:`karyamorph.kernel.tuning.variant`), compiled by nvcc for the target when it gives CUDA
source. The search times it at the spec's sizes and races its torch reference; the model checks
it at the smallest of the spec's sizes and its ``[check] sizes`` (fewest threads at the
baseline), as small as the spec offers. A configuration whose launch does not bind at the timed
sizes (a block of more than 1024 threads, a grid beyond the limits) has no block that fits an
SM, as a template's footprint says of one too large. With ``[check] launch = "any"``, block
sizes the model does not prove safe for every launch are left out, each with a note saying why.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from karyamorph.harness.stages.model import proved_blocks
from karyamorph.harness.tools.nvcc import lower
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.expressions import ExpressionError, holds, names
from karyamorph.kernel.limits import launch_limits
from karyamorph.kernel.spec import KernelSpec, SearchTable, SpecError
from karyamorph.kernel.tuning import knob_directive, variant
from karyamorph.model.check.anylaunch import is_proved
from karyamorph.search.space import Constraint, Parameter, Value
from karyamorph.search.template import Footprint, Template

DEFAULT_REGISTERS = 32
"""Registers per thread a footprint assumes before ptxas says (ptxas has the last word)."""
LAUNCH_PROOF_S = 30.0
"""Seconds the model may take to prove one block size for every launch (``[check] launch``)."""


def spec_template(spec: KernelSpec) -> Template:
    """The template of the search ``spec`` declares (a spec loaded with a ``[search]`` table).

    Raises
    ------
    SpecError
        The spec has no ``[search]`` table, or no torch reference to race.
    """
    table = spec.search
    if table is None:
        raise SpecError(spec.where, "has no [search] table to search (its parameters, constraints and "
                        "defines: see docs/search.md)")  # fmt: skip
    torch = spec.reference.torch
    if torch is None:
        raise SpecError(f"{spec.where}: reference.torch", "a search races the spec's torch reference, "
                        "and this spec gives none")  # fmt: skip
    sizes = dict(table.spec.sizes)
    parameters = tuple(Parameter(n, values) for n, values in table.parameters)
    # A constraint of no parameter holds: the loader refused one that excludes every configuration.
    constraints = tuple(c for text in table.constraints if (c := _constraint(text, table, sizes)).names)

    def build(config: Mapping[str, Value], arch: Arch, at: Mapping[str, int]) -> KernelSpec:
        built = dataclasses.replace(variant(table, config), sizes=dict(at))
        return lower(built, arch) if built.cuda is not None else built

    def footprint(config: Mapping[str, Value]) -> Footprint:
        kernel = _bound(table, config, sizes)
        if kernel is None:  # fits nowhere: more threads than any block may have
            return Footprint(threads=launch_limits(None).max_threads_per_block + 1)
        cap = _register_cap(table, config)
        return Footprint(math.prod(kernel.block), kernel.shared_bytes, cap or DEFAULT_REGISTERS)

    proved, notes = _launch_proofs(spec, table, model_sizes(spec))
    return Template(
        name=spec.where, summary=f"the search {spec.where} declares ({', '.join(table.names)})",
        parameters=parameters, constraints=constraints + proved, build=build,
        footprint=footprint, sizes=sizes, check_sizes=model_sizes(spec), baseline=dict(table.baseline),
        torch_baseline=torch, notes=notes,
    )  # fmt: skip


def _launch_proofs(
    spec: KernelSpec, table: SearchTable, sizes: Mapping[str, int]
) -> tuple[tuple[Constraint, ...], tuple[str, ...]]:
    """With ``[check] launch = "any"``: a constraint that keeps only the values of the block
    parameter the model proves the kernel safe at (for every grid of ``[check] grid``, at the
    model's sizes), and a note for each value left out, saying why.

    Only where one parameter is the block (``[launch] block = ["BLOCK"]``, or Kernel Tuner's
    ``block_size_x``) and the PTX is the same for every configuration (no defines, no CUDA
    source); otherwise a note says the block sizes are not proved."""
    if spec.check_launch.mode != "any":
        return (), ()
    block = table.spec.launch.block
    name = block[0] if len(block) == 1 and isinstance(block[0], str) else None
    said = '[check] launch = "any": block sizes not proved'
    if spec.cuda is not None or table.defines:
        return (), (f"{said} (the code changes with the configuration)",)
    if name is None or name not in table.names:
        return (), (f"{said} (no one parameter is the block)",)
    values = [v for v in dict(table.parameters)[name] if isinstance(v, int) and not isinstance(v, bool)]
    base = {n: v for n, v in table.baseline if isinstance(v, int) and not isinstance(v, bool)}
    module = parse(table.spec.ptx)
    kept: set[int] = set()
    notes: list[str] = []
    for value in values:
        try:
            kernel = bind(dataclasses.replace(table.spec, sizes={**sizes, **base, name: value}))
        except SpecError as exc:
            notes.append(f"{name} = {value} left out: the launch does not bind ({exc})")
            continue
        verdicts = proved_blocks(kernel, module, [value], deadline_s=LAUNCH_PROOF_S)[value]
        failed = [v for v in verdicts if not is_proved([v])]
        if not failed:
            kept.add(value)
            continue
        said = "; ".join(f"{v.property} {v.verdict}: {v.witness or v.reason}" for v in failed)
        notes.append(f"{name} = {value} left out, not proved for every launch: {said}")
    return (Constraint(lambda v: v in kept, (name,)),), tuple(notes)


def _constraint(text: str, table: SearchTable, sizes: Mapping[str, int]) -> Constraint:
    """The constraint ``text`` as a predicate of the parameters it reads."""
    used = tuple(n for n in table.names if n in names(text, predicate=True))

    def meets(*values: Value) -> bool:
        # The loader let a constraint read only parameters of integer values.
        numbers = {n: v for n, v in zip(used, values, strict=True) if isinstance(v, int)}
        try:
            return holds(text, {**sizes, **numbers})
        except ExpressionError:  # cannot be evaluated here (divides by zero): excluded, as the loader says
            return False

    return Constraint(meets, used)


def _bound(table: SearchTable, config: Mapping[str, Value], sizes: Mapping[str, int]) -> BoundKernel | None:
    """The spec as written bound at ``sizes`` with the configuration's integer parameters beside
    them, or None when its launch does not bind there."""
    numbers = {n: v for n, v in config.items() if isinstance(v, int) and not isinstance(v, bool)}
    try:
        return bind(dataclasses.replace(table.spec, sizes={**sizes, **numbers}))
    except SpecError:
        return None


def _register_cap(table: SearchTable, config: Mapping[str, Value]) -> int | None:
    """The configuration's ``maxrregcount``, if it sets one. One out of range is left to the
    build, which refuses the configuration with the knob's error."""
    numbers = {n: v for n, v in config.items() if isinstance(v, int) and not isinstance(v, bool)}
    for knob, text in table.ptxas:
        try:
            directive = knob_directive(knob, text, numbers, f"{table.spec.where}: search.ptxas.{knob}")
        except SpecError:
            return None
        if directive is not None and directive[0] == "maxnreg":
            return directive[1]
    return None


def model_sizes(spec: KernelSpec) -> dict[str, int]:
    """The sizes the model checks a configuration at: of the spec's own and its ``[check]
    sizes``, those where the baseline launches the fewest threads (the first of equals)."""
    candidates = [dict(spec.sizes), *({**spec.sizes, **other} for other in spec.check_sizes)]

    def threads(sizes: dict[str, int]) -> float:
        try:
            return bind(spec, sizes=sizes).threads
        except SpecError:  # the loader bound every one: only a spec built in memory
            return math.inf

    return min(candidates, key=threads)
