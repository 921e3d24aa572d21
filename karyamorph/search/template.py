"""A search template: a function from parameters to a kernel (PTX through the builder, with its
launch, arguments and torch reference), its parameter grid and constraints, and its footprint.

Two kinds of constraints bound a template's space. Plain predicates over the parameters
(``"block * items <= 4096"``) are the template's own. Model-derived ones come from the target:
a configuration whose block does not fit on one SM of the arch (threads, registers estimated
from the footprint, shared memory: occupancy below one block) is outside the space, as is one
that needs a newer arch than the target (``min_sm``). Both are enumerated by the space's
constraint solver, never by a product loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from karyamorph.isa.arch import Arch
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.resources.occupancy import occupancy
from karyamorph.search.space import Config, Constraint, Parameter, Space, Value, enumerate_space


@dataclass(frozen=True, slots=True)
class Footprint:
    """What one block of a configuration asks of an SM, known before compiling it.

    Parameters
    ----------
    threads : int
        Threads per block.
    shared_bytes : int
        Shared memory per block, static and dynamic together.
    registers : int
        Registers per thread, estimated from the values a thread keeps live (ptxas has the last
        word: a compiled variant that does not fit is rejected then).
    """

    threads: int
    shared_bytes: int = 0
    registers: int = 32


Builder = Callable[[Mapping[str, Value], Arch, Mapping[str, int]], KernelSpec]


@dataclass(frozen=True, slots=True)
class Template:
    """A family of kernel variants.

    Parameters
    ----------
    name : str
        The name ``karyamorph search run`` takes.
    summary : str
        One line for listings.
    parameters : tuple of Parameter
        The grid, each parameter's values in neighbour order.
    constraints : tuple of Constraint
        Plain predicates over the parameters.
    build : callable
        ``build(config, arch, sizes)`` -> the variant's :class:`KernelSpec` (PTX from the isa
        builder, launch, arguments, torch reference, tolerances, cost in bytes and flops).
    footprint : callable
        ``footprint(config)`` -> :class:`Footprint`, for the model-derived constraints.
    sizes : mapping
        The problem the search times (the benchmark size).
    check_sizes : mapping
        A small problem of the same shape rules, for the model's checks and the CPU interpreter.
    baseline : mapping
        A plain configuration, the reference the others are compared with.
    torch_baseline : str
        What the variants race against, as a torch expression over the spec's argument names
        (``"a + b"``, ``"x.sum()"``), timed in the same process as the winner.
    min_sm : int
        The oldest arch (``80`` for sm_80) the template's instructions exist on; 0 for any.
    requires : str
        An architecture-specific or family target whose instructions the template emits
        (``"sm_120a"``), where ``min_sm`` cannot say it: the template then supports exactly the
        targets :meth:`Arch.supports` admits for it (``sm_120a``; neither ``sm_120`` nor
        ``sm_121a``). Empty for none.
    equivalent_to_baseline : bool
        Every variant computes the baseline's outputs bit for bit (the same float operations on
        each element, only moved between threads or instructions): the model can then prove a
        variant equivalent to the baseline (the search's winner always; every variant with
        ``search run --equivalence``). False where variants reassociate float sums
        (reductions, GEMMs), which only tolerances compare.
    equivalence_sizes : mapping or None
        The sizes of that proof (default: ``check_sizes``); small, since it compares every
        output element of both kernels symbolically.
    cost_sizes : tuple of mappings
        The sizes the cost model's counts are interpreted at and extrapolated from (default:
        ``check_sizes`` alone): small problems that take the same paths as the timed one (check
        sizes are chosen to take every edge path instead). Two of them whose work per block
        differs (a GEMM's with ``K`` and ``2 K``) separate each count's part per block from its
        part per unit of work (:mod:`karyamorph.model.cost.extrapolate`).
    """

    name: str
    summary: str
    parameters: tuple[Parameter, ...]
    build: Builder
    footprint: Callable[[Mapping[str, Value]], Footprint]
    sizes: Mapping[str, int]
    check_sizes: Mapping[str, int]
    baseline: Mapping[str, Value]
    torch_baseline: str
    constraints: tuple[Constraint, ...] = ()
    min_sm: int = 0
    requires: str = ""
    equivalent_to_baseline: bool = False
    equivalence_sizes: Mapping[str, int] | None = None
    cost_sizes: tuple[Mapping[str, int], ...] = ()
    notes: tuple[str, ...] = field(default=())

    def interpreted_sizes(self) -> tuple[Mapping[str, int], ...]:
        """The sizes the cost model interprets a variant at: :attr:`cost_sizes`, else the check sizes."""
        return self.cost_sizes or (self.check_sizes,)

    def supports(self, arch: Arch | str) -> bool:
        """Whether ``arch`` has every instruction the template emits."""
        target = Arch.parse(arch)
        if self.requires:
            return target.supports(self.requires)
        major, minor = target.compute_capability
        return 10 * major + minor >= self.min_sm

    @property
    def requirement(self) -> str:
        """The targets :meth:`supports` admits, in words: ``sm_120a`` or ``sm_80 or later``."""
        return self.requires or f"sm_{self.min_sm} or later"

    def fits(self, config: Mapping[str, Value], arch: Arch | str) -> bool:
        """The model-derived constraint: at least one block of ``config`` fits on an SM of ``arch``."""
        foot = self.footprint(config)
        target = Arch.parse(arch).canonical.base.name
        occ = occupancy(target, foot.threads, foot.registers, dynamic_shared_bytes=foot.shared_bytes)
        return occ.blocks_per_sm >= 1

    def space(self, arch: Arch | str) -> Space:
        """The valid configurations for ``arch``: the grid under the plain and the model-derived
        constraints, enumerated by the constraint solver."""
        target = Arch.parse(arch)
        names = tuple(p.name for p in self.parameters)

        def fits(*values: Value) -> bool:
            return self.supports(target) and self.fits(dict(zip(names, values, strict=True)), target)

        return enumerate_space(self.parameters, (*self.constraints, Constraint(fits, names)))

    def spec(
        self, config: Mapping[str, Value], arch: Arch | str, sizes: Mapping[str, int] | None = None
    ) -> KernelSpec:
        """The variant ``config`` as a kernel spec for ``arch`` at ``sizes`` (default: the
        template's benchmark sizes)."""
        return self.build(config, Arch.parse(arch), dict(self.sizes if sizes is None else sizes))

    def config(self, values: Mapping[str, Value]) -> Config:
        """``values`` completed with the baseline's for any parameter not given."""
        return {p.name: values.get(p.name, self.baseline[p.name]) for p in self.parameters}
