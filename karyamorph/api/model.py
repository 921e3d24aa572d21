"""The machine model on a spec: the z3 checks' verdicts, the CPU interpreter's outputs, the machine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from karyamorph.harness.model_run import InterpReport, interpret_spec_file
from karyamorph.harness.session import load_bound, require_ptxas_accepts
from karyamorph.harness.stages.model import PROPERTIES, check_spec
from karyamorph.isa import ast
from karyamorph.kernel.bound import BoundKernel
from karyamorph.model.check.isa_check import IsaCheckResult, check_isa
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.interp.budget import ModelBudget
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.simt_machine import Machine


def _bound(
    spec: str | Path, sizes: Mapping[str, int] | None, arch: str | None
) -> tuple[BoundKernel, ast.Module]:
    """The spec bound with ``sizes``, refused unless ptxas accepts its PTX for the target: the
    model runs only on PTX that is a kernel (as ``karyamorph interp`` and ``check``)."""
    items = [f"{name}={value}" for name, value in (sizes or {}).items()]
    kernel, module = load_bound(Path(spec), items, arch)
    require_ptxas_accepts(kernel, module, arch)
    return kernel, module


def check(
    spec: str | Path,
    sizes: Mapping[str, int] | None = None,
    arch: str | None = None,
    *,
    properties: Sequence[str] = PROPERTIES,
    scheduling: str = "its",
    unroll: int = 8,
    budget_s: float | None = 30.0,
    strict: bool = False,
) -> list[Verdict]:
    """Prove or refute bounds, race and barrier properties for the spec's launch (z3), as
    ``karyamorph check`` does.

    Parameters
    ----------
    spec : str or Path
        The spec file.
    sizes : mapping of str to int, optional
        Overrides of the spec's ``[sizes]``.
    arch : str, optional
        The target ptxas must accept the PTX for (default: its ``.target``, else sm_120).
    properties : sequence of str
        Of ``bounds``, ``race``, ``barrier``.
    scheduling : str
        ``its`` (the lanes of a warp are unordered, sm_70+) or ``lockstep``.
    unroll : int
        Iterations explored of loops not proved whole.
    budget_s : float or None
        Seconds the checks may take; what is undecided then is ``unknown``.
    strict : bool
        Count stores of one value to one address by two threads as races (by default they
        are benign: a note, not a race).

    Returns
    -------
    list of Verdict
        One per property: ``verdict`` (proved, proved-up-to-k, refuted, unknown), a
        ``witness`` (threads, addresses, the PTX lines) when refuted, ``reason`` when unknown.

    Raises
    ------
    SpecError, PtxError, PtxasError
        The spec or its PTX cannot be used.
    UnmodeledError
        The kernel uses instructions the machine does not have.
    ValueError
        An unknown property or scheduling.
    """
    kernel, module = _bound(spec, sizes, arch)
    verdicts: list[Verdict] = check_spec(
        kernel, module, properties=tuple(properties), scheduling=scheduling, unroll=unroll,
        deadline_s=budget_s, strict=strict,
    )  # fmt: skip
    return verdicts


def interp(
    spec: str | Path,
    sizes: Mapping[str, int] | None = None,
    arch: str | None = None,
    *,
    seed: int = 0,
    randomize: bool = False,
    budget: ModelBudget | None = None,
) -> InterpReport:
    """Run the spec's launch on the CPU model and compare it with the spec's reference, as
    ``karyamorph interp`` does.

    Parameters
    ----------
    spec : str or Path
        The spec file.
    sizes : mapping of str to int, optional
        Overrides of the spec's ``[sizes]``.
    arch : str, optional
        The target ptxas must accept the PTX for.
    seed : int
        The inputs' seed (the same inputs a GPU trial with that seed gets).
    randomize : bool
        Randomize the warps' order between barriers (exposes races).
    budget : ModelBudget, optional
        Registers, bytes and thread-instructions the model may spend.

    Returns
    -------
    InterpReport
        ``status``, ``match``, ``max_abs_error``, each output's comparison, the statistics.

    Raises
    ------
    TooLargeError
        The launch is over ``budget``.
    UnmodeledError, ExecutionError
        The kernel uses an instruction the machine lacks, or did something undefined.
    """
    kernel, _ = _bound(spec, sizes, arch)
    return interpret_spec_file(kernel, seed=seed, randomize_order=randomize, budget=budget)


def machine(arch: str = "sm_80", scheduling: str = "its") -> Machine:
    """The shipped machine: warp size 32, the modeled PTX instructions, ``arch``'s resources.

    Extend it with ``machine().with_instructions(...)`` (see the machine model's docs).
    """
    return ptx_machine(arch, scheduling)


def check_instructions(
    machine: Machine, *, only: Sequence[str] | None = None, samples: int = 24, seed: int = 0
) -> list[IsaCheckResult]:
    """Check the instruction declarations of ``machine`` (or those named in ``only``), as
    ``karyamorph model check-isa`` does.

    Each form of a compute instruction gets its frame condition (it writes its destinations and
    nothing else) and the agreement of the numpy and z3 domains on random and edge-case
    operands; every instruction gets its stated laws proved by z3.

    Parameters
    ----------
    machine : Machine
        The machine, e.g. ``km.machine().with_instructions(...)``.
    only : sequence of str, optional
        Instruction names (``"bfind"``); default: all.
    samples : int
        Random operand sets per agreement check.
    seed : int
        Seeds the random operands.

    Returns
    -------
    list of IsaCheckResult
        One per check: ``form`` (``bfind.u32``), ``check`` (``frame``, ``agreement``, ``law``),
        ``status`` (pass, fail, skip) and ``detail``.
    """
    return check_isa(machine, only=only, samples=samples, seed=seed)
