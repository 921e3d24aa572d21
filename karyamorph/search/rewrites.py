"""A spec's search with the model's proved rewrites as one more parameter axis (``search run
SPEC --rewrites``): ``rewrite = ["none", "ld.nc", "maxnreg=64", ...]`` beside the spec's own
``[search]`` parameters, or alone when the spec declares none.

The axis lists the rewrites of the catalogue that change something of the baseline's PTX
(:func:`karyamorph.model.rewrite.candidates`); each variant that carries one is proved by
:class:`RewriteGate` before any other gate: the rewritten kernel equivalent to the same
configuration without it at the template's check sizes, and the rewrite's side condition. A
rejected variant is a ``model`` failure whose detail is the model's witness, stored as every
gate's rejection is; a proved one goes on to the usual gates (assembly, model checks,
correctness and timing on the GPU) and is ranked by its measured time like any configuration.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karyamorph.harness.tools.nvcc import lower
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import BuilderError
from karyamorph.isa.errors import PtxError
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec, SpecError
from karyamorph.model.rewrite import (
    RewriteVerdict,
    block_fixed,
    candidates,
    rewrite_named,
    rewritten_spec,
)
from karyamorph.search.kept_proofs import prove_kept
from karyamorph.search.outcome import Failure, Outcome
from karyamorph.search.session import GatedEvaluator, SearchSetupError
from karyamorph.search.space import Parameter, Value
from karyamorph.search.template import Footprint, Template
from karyamorph.search.templates.from_spec import DEFAULT_REGISTERS, model_sizes, spec_template

AXIS = "rewrite"
"""The parameter the rewrites are values of."""
NONE = "none"
"""The axis's value of the kernel as the spec gives it."""


@dataclass(frozen=True, slots=True)
class RewriteSearch:
    """The template with the rewrite axis, and the template without it (whose configurations
    are the originals the rewrites are proved against)."""

    template: Template
    base: Template
    arch: Arch

    @property
    def rewrites(self) -> tuple[str, ...]:
        """The axis's rewrites, ``none`` left out."""
        axis = next(p for p in self.template.parameters if p.name == AXIS)
        return tuple(str(v) for v in axis.values if v != NONE)

    def gate(self, evaluator: GatedEvaluator) -> RewriteGate:
        """``evaluator`` behind the rewrite proof."""
        return RewriteGate(evaluator, self, evaluator.toolchain)


def rewrite_search(spec: KernelSpec, arch: Arch) -> RewriteSearch:
    """The search of ``spec`` (its ``[search]`` table's, or the spec alone) with the rewrite axis.

    Raises
    ------
    SpecError
        The spec gives no torch reference to race, or its PTX does not parse.
    """
    base = spec_template(spec) if spec.search is not None else single_template(spec)
    written = spec.search.spec if spec.search is not None else spec
    original = base.spec(base.config(base.baseline), arch, base.check_sizes)
    names = tuple(r.name for r in candidates(original, fixed=block_fixed(written)))
    # A block rewrite is proposed only where the spec writes block.x as a number.
    block_x = int(written.launch.block[0]) if block_fixed(written) else 1

    def build(config: Mapping[str, Value], target: Arch, at: Mapping[str, int]) -> KernelSpec:
        built = base.build(_without(config), target, at)
        name = str(config.get(AXIS, NONE))
        if name == NONE:
            return built
        try:
            return rewritten_spec(built, rewrite_named(name))
        except PtxError as exc:  # the build gate reports a spec's refusal as the variant's failure
            raise SpecError(f"{built.where}: rewrite {name}", str(exc)) from None

    def footprint(config: Mapping[str, Value]) -> Footprint:
        foot = base.footprint(_without(config))
        name = str(config.get(AXIS, NONE))
        rewrite = None if name == NONE else rewrite_named(name)
        if rewrite is None:
            return foot
        if rewrite.block is not None:
            return dataclasses.replace(foot, threads=foot.threads // block_x * rewrite.block)
        if name.startswith("maxnreg="):  # ptxas keeps within the cap (spilling if it must)
            return dataclasses.replace(foot, registers=min(foot.registers, int(name.split("=")[1])))
        return foot

    template = Template(
        name=f"{base.name} --rewrites", summary=f"{base.summary}, with the model's proved rewrites",
        parameters=(*base.parameters, Parameter(AXIS, (NONE, *names))), build=build, footprint=footprint,
        sizes=base.sizes, check_sizes=base.check_sizes, baseline={**base.baseline, AXIS: NONE},
        torch_baseline=base.torch_baseline, constraints=base.constraints, min_sm=base.min_sm,
        requires=base.requires, cost_sizes=base.cost_sizes,
    )  # fmt: skip
    return RewriteSearch(template, base, arch)


def single_template(spec: KernelSpec) -> Template:
    """A spec with no ``[search]`` table as a template of one configuration (no parameter), which
    the rewrite axis then varies.

    Raises
    ------
    SpecError
        The spec gives no torch reference to race.
    """
    torch = spec.reference.torch
    if torch is None:
        raise SpecError(f"{spec.where}: reference.torch", "a search races the spec's torch reference, "
                        "and this spec gives none")  # fmt: skip
    kernel = bind(spec)

    def build(config: Mapping[str, Value], arch: Arch, at: Mapping[str, int]) -> KernelSpec:
        sized = dataclasses.replace(spec, sizes=dict(at))
        return lower(sized, arch) if sized.cuda is not None else sized

    def footprint(config: Mapping[str, Value]) -> Footprint:
        return Footprint(math.prod(kernel.block), kernel.shared_bytes, DEFAULT_REGISTERS)

    return Template(
        name=spec.where, summary=f"the kernel {spec.where} gives", parameters=(), build=build,
        footprint=footprint, sizes=dict(spec.sizes), check_sizes=model_sizes(spec), baseline={},
        torch_baseline=torch,
    )  # fmt: skip


@dataclass(slots=True)
class RewriteGate:
    """The rewrite proof in front of another evaluator (an :class:`Evaluator` with ``last``).

    A configuration with ``rewrite = none`` goes straight through. One with a rewrite is proved
    first (once per configuration: the proof is kept), against the same configuration without
    it, at the template's check sizes; a rejection is the configuration's ``model`` failure.
    """

    inner: GatedEvaluator
    search: RewriteSearch
    toolchain: Toolchain
    proofs: dict[tuple[tuple[str, str], ...], RewriteVerdict] = field(default_factory=dict)
    last: dict[str, Any] = field(default_factory=dict)

    def evaluate(self, config: Mapping[str, Value]) -> Outcome:
        """The configuration's outcome; :attr:`last` holds what each gate found."""
        name = str(config.get(AXIS, NONE))
        if name == NONE:
            outcome = self.inner.evaluate(config)
            self.last = self.inner.last
            return outcome
        try:
            verdict = self.proof(config)
        except (BuilderError, SpecError, ValueError) as exc:  # as the build gate says it
            self.last = {}
            return Outcome.failed(Failure.COMPILE, f"the template refused it: {exc}")
        if not verdict.proved:
            self.last = {"rewrite": verdict.as_dict()}
            return Outcome.failed(Failure.MODEL, f"rewrite {verdict}")
        outcome = self.inner.evaluate(config)
        self.last = {**self.inner.last, "rewrite": verdict.as_dict()}
        return outcome

    def rejections(self) -> tuple[RewriteVerdict, ...]:
        """The proofs that failed so far, each with its reason and witness."""
        return tuple(v for v in self.proofs.values() if not v.proved)

    def proof(self, config: Mapping[str, Value]) -> RewriteVerdict:
        """The model's verdict on the configuration's rewrite (kept for the next ask)."""
        key = tuple(sorted((k, repr(v)) for k, v in config.items()))
        if key not in self.proofs:
            search = self.search
            name = str(config[AXIS])
            original = search.base.spec(_without(config), search.arch, search.base.check_sizes)
            self.proofs[key] = prove_kept(original, rewrite_named(name), arch=search.arch.canonical.base.name)
        return self.proofs[key]


def _without(config: Mapping[str, Value]) -> dict[str, Value]:
    return {k: v for k, v in config.items() if k != AXIS}


def source_search(source: str, arch: Arch) -> RewriteSearch:
    """:func:`rewrite_search` of the spec file ``source`` (what ``search run SPEC --rewrites`` names).

    Raises
    ------
    SearchSetupError
        ``source`` names no spec (``.toml``): rewrites edit a spec's own PTX.
    SpecError
        The spec does not load, or gives no torch reference.
    """
    if Path(source).suffix != ".toml":
        raise SearchSetupError(f"--rewrites edits a spec's own PTX: {source} is not a spec (.toml)")
    return rewrite_search(load_spec(source), arch)
