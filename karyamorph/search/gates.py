"""The gates a variant passes before any GPU time counts: the template builds it, ptxas
assembles it and its block fits on an SM, and the model proves it in bounds, race free and
free of divergent barriers (and, for templates that promise it, equivalent to the baseline).

Each gate answers with what the next one needs, or with the :class:`Outcome` that ends the
variant: a failure with its reason and an explanation a person can act on (ptxas's message,
the checker's witness). Nothing here touches a GPU.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from karyamorph.harness.gpu.launch import launch_shape
from karyamorph.harness.stages.model import check_spec
from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import BuilderError
from karyamorph.isa.errors import PtxError
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.spec import KernelSpec, SpecError
from karyamorph.model.check.checker import EquivInstance, check_equivalence
from karyamorph.model.interp.budget import TooLargeError
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.resources.occupancy import occupancy
from karyamorph.model.rewrite.proof import equivalence_side
from karyamorph.model.semantics.decode import unmodeled
from karyamorph.search.outcome import Failure, Outcome
from karyamorph.search.space import Value
from karyamorph.search.template import Template

PROPERTIES = ("bounds", "race", "barrier")


@dataclass(frozen=True, slots=True)
class Compiled:
    """A variant that assembled and fits: what the GPU gates run.

    Attributes
    ----------
    kernel : BoundKernel
        The variant at the search's sizes.
    cubin : bytes
    registers, spill_bytes, shared_bytes, blocks_per_sm : int
        ptxas's report and the occupancy it gives.
    """

    kernel: BoundKernel
    cubin: bytes
    registers: int
    spill_bytes: int
    shared_bytes: int
    blocks_per_sm: int

    def as_dict(self) -> dict[str, int]:
        return {"registers": self.registers, "spill_bytes": self.spill_bytes,
                "shared_bytes": self.shared_bytes, "blocks_per_sm": self.blocks_per_sm}  # fmt: skip


def build(
    template: Template, config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]
) -> KernelSpec | Outcome:
    """The template's spec for ``config``, or a compile failure when the template refuses it."""
    try:
        return template.spec(config, arch, sizes)
    except (BuilderError, SpecError, ValueError) as exc:
        return Outcome.failed(Failure.COMPILE, f"the template refused it: {exc}")


def compile_variant(spec: KernelSpec, arch: Arch, toolchain: Toolchain) -> Compiled | Outcome:
    """ptxas, then occupancy from its report: a block that cannot be placed is a constraint failure."""
    try:
        kernel = bind(spec, arch)
    except SpecError as exc:
        return Outcome.failed(Failure.COMPILE, f"the launch does not bind: {exc}")
    try:
        assembly = assemble(spec.ptx, arch.name, toolchain, filename=f"{spec.entry}.ptx")
    except PtxasError as exc:
        return Outcome.failed(Failure.COMPILE, str(exc).strip() or "ptxas failed")
    report = assembly.functions.get(spec.entry)
    registers = report.registers if report is not None and report.registers is not None else 0
    static_shared = report.shared_bytes if report is not None else 0
    spills = report.spill_stores_bytes + report.spill_loads_bytes if report is not None else 0
    threads = kernel.block[0] * kernel.block[1] * kernel.block[2]
    occ = occupancy(arch.canonical.base.name, threads, max(registers, 1), static_shared, kernel.shared_bytes)
    compiled = Compiled(kernel, assembly.cubin, registers, spills, static_shared + kernel.shared_bytes,
                        occ.blocks_per_sm)  # fmt: skip
    if occ.blocks_per_sm < 1:
        return Outcome.failed(Failure.CONSTRAINT, f"no block fits on an SM: {occ.reason}")
    return compiled


@dataclass(frozen=True, slots=True)
class ModelVerdicts:
    """What the model said of a variant: one line per property, and the seconds it took."""

    lines: tuple[str, ...]
    seconds: float

    @property
    def detail(self) -> str:
        return "; ".join(self.lines)


def model_gate(
    template: Template,
    config: Mapping[str, Value],
    arch: Arch,
    *,
    deadline_s: float = 20.0,
    cache: dict[str, ModelVerdicts | Outcome] | None = None,
) -> ModelVerdicts | Outcome:
    """Check the variant at the template's check sizes: a refuted property rejects it with the
    witness; proved, bounded or unknown verdicts let it through (their text is kept).

    ``cache`` (by :func:`model_key`) answers a variant whose checked kernel another variant
    already had: the same PTX but for a register cap, the same launch and arguments (a search's
    ``REGS`` siblings), without checking it again."""
    t0 = time.perf_counter()
    spec = build(template, config, arch, template.check_sizes)
    if isinstance(spec, Outcome):
        return spec
    try:
        module = parse(spec.ptx, f"{spec.entry}.ptx")
        kernel = bind(spec, arch)
        launch_shape(kernel)  # a grid of whole clusters
    except (PtxError, SpecError) as exc:
        return Outcome.failed(Failure.COMPILE, f"at the check sizes: {exc}")
    key = model_key(kernel)
    if cache is not None and key in cache:
        return cache[key]
    verdicts = _check_variant(template, arch, kernel, module, deadline_s, t0)
    if cache is not None:
        cache[key] = verdicts
    return verdicts


_REGISTER_CAP = re.compile(r"^[ \t]*\.maxnreg[ \t]+\d+[ \t]*\n?", re.M)


def model_key(kernel: BoundKernel) -> str:
    """What the model's verdicts on a bound kernel depend on, as a digest: its PTX (less a
    ``.maxnreg`` line, which changes register allocation only), its entry, launch, sizes,
    scalars and arguments."""
    spec = kernel.spec
    parts = (
        _REGISTER_CAP.sub("", spec.ptx), kernel.entry, kernel.grid, kernel.block, kernel.shared_bytes,
        spec.launch.cluster, sorted(kernel.sizes.items()), sorted(kernel.scalars.items()), repr(spec.args),
    )  # fmt: skip
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _check_variant(
    template: Template, arch: Arch, kernel: BoundKernel, module: ast.Module, deadline_s: float, t0: float
) -> ModelVerdicts | Outcome:
    machine = ptx_machine(arch.canonical.base.name)  # the arch's limits (shared memory per block)
    missing = unmodeled(module, machine, kernel.entry)
    if missing:
        forms = ", ".join(sorted({m.form for m in missing}))
        return ModelVerdicts((f"not checked: unmodeled instructions {forms}",), time.perf_counter() - t0)
    try:
        verdicts = check_spec(kernel, module, machine=machine, deadline_s=deadline_s)
    except TooLargeError as exc:
        return ModelVerdicts((f"not checked: {exc}",), time.perf_counter() - t0)
    lines = []
    for v in verdicts:
        if v.verdict == "refuted":
            return Outcome.failed(
                Failure.MODEL, f"{v.property} refuted at {_sizes(template.check_sizes)}: {v.witness}"
            )
        lines.append(f"{v.property} {v.verdict}" + (f" ({v.reason})" if v.verdict == "unknown" else ""))
    return ModelVerdicts(tuple(lines), time.perf_counter() - t0)


def equivalence_gate(
    template: Template, config: Mapping[str, Value], arch: Arch, *, timeout_ms: int = 20_000
) -> str | Outcome:
    """For a template whose variants must compute the baseline's outputs bit for bit: prove it
    at the check sizes (float operations as uninterpreted functions). Refuted rejects the
    variant with the differing output; otherwise the verdict's words are returned."""
    sizes = template.equivalence_sizes or template.check_sizes
    sides = []
    for c in (config, template.baseline):
        spec = build(template, c, arch, sizes)
        if isinstance(spec, Outcome):
            return spec
        sides.append((spec, parse(spec.ptx, f"{spec.entry}.ptx"), bind(spec, arch)))
    (spec_a, mod_a, ka), (spec_b, mod_b, kb) = sides
    if any(a.is_struct for a in (*ka.args, *kb.args)):
        return "equiv unknown (struct arguments are not encoded by the equivalence check)"
    if any(a.is_tensormap for a in (*ka.args, *kb.args)):
        return "equiv unknown (tensor-map arguments are not encoded by the equivalence check)"
    outputs = tuple(i for i, a in enumerate(ka.args) if a.role in ("out", "inout"))
    pair = equivalence_side(ka, mod_a), equivalence_side(kb, mod_b)
    instance = EquivInstance(tuple(sorted(sizes.items())), *pair, outputs)
    machine = ptx_machine(arch.canonical.base.name)
    verdict = check_equivalence((mod_a, spec_a.entry), (mod_b, spec_b.entry), machine, [instance],
                                timeout_ms=timeout_ms)  # fmt: skip
    if verdict.verdict == "refuted":
        return Outcome.failed(
            Failure.MODEL, f"differs from the baseline at {_sizes(sizes)}: {verdict.witness}"
        )
    return f"equiv {verdict.verdict}" + (f" ({verdict.reason})" if verdict.verdict == "unknown" else "")


def _sizes(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())
