"""The ``model`` stage: z3 checks of the launch and a CPU run on the model, when the kernel is modeled."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from karyamorph.harness.model_gate import rejection, require_ptxas
from karyamorph.harness.model_run import interpret_spec_file
from karyamorph.harness.stages.base import Context, Figure, Interpretation, StageResult, Status
from karyamorph.harness.tools.ptxas import PtxasError
from karyamorph.harness.tools.toolchain import ToolchainError
from karyamorph.isa import ast
from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.expressions import names as expression_names
from karyamorph.kernel.inputs import make_array
from karyamorph.kernel.spec import ArgSpec, KernelSpec, LaunchRanges, SpecError, struct_layout
from karyamorph.kernel.tensormap import TensorMap
from karyamorph.model.check.anylaunch import check_any_launch
from karyamorph.model.check.anylaunch import proved_blocks as any_launch_blocks
from karyamorph.model.check.checker import FiniteFloats, InputRange, ValueRange, check
from karyamorph.model.check.inputranges import EXPONENTS  # the float types with NaN
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.check.witnesses import UserTerms
from karyamorph.model.interp.asyncproxy import DEADLOCK
from karyamorph.model.interp.budget import ModelBudget, TooLargeError
from karyamorph.model.interp.cfg import CfgError
from karyamorph.model.interp.errors import ExecutionError, LaunchError, ModelLimitError
from karyamorph.model.interp.program import expanded_entry
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import UnmodeledError, unmodeled

PROPERTIES = ("bounds", "race", "barrier")
# The model's own limits: a form, operand or layout it cannot run. They make the verdict
# unknown (the stage skips, or leaves the interpreter "not run"), never a failure.
MODEL_LIMITS = (ModelLimitError, UnmodeledError, CfgError, LaunchError)
# Seconds the z3 checks of one pipeline run may take before the rest is reported unknown.
CHECK_DEADLINE_S = 30.0


def check_inputs(kernel: BoundKernel, entry: ast.Function) -> tuple[dict[str, int], dict[str, int | float]]:
    """The spec as the checker sees it: buffer sizes in bytes and scalar values, by .param name
    (a struct's fields by ``param.field``, :func:`karyamorph.model.check.checker.check`'s names)."""
    buffers: dict[str, int] = {}
    scalars: dict[str, int | float] = {}
    for arg, name in _named(kernel, entry):
        if arg.is_tensormap:  # its tensor is the map's (check's tensormaps), not a buffer
            continue
        if arg.is_pointer:
            count = 1
            for d in kernel.shapes[arg.name]:
                count *= d
            buffers[name] = count * arg.dtype.bytes
        else:
            scalars[name] = kernel.scalars[arg.name]
    return buffers, scalars


def input_ranges(kernel: BoundKernel, entry: ast.Function) -> dict[str, ValueRange]:
    """The values the spec's input buffers hold at launch, by .param name: for an integer dtype,
    what ``randint(lo, hi)`` draws, ``zeros`` and ``ones``, and ``arange``'s indices (which wrap
    at the dtype's largest value + 1); for a float dtype, finite values (every init: ``arange``
    only short of the dtype's largest finite value). An integer ``randn`` or ``rand`` (any bits)
    and an output (poisoned before the launch) give none."""
    out: dict[str, ValueRange] = {}
    for arg, name in _named(kernel, entry):
        if not arg.is_pointer or arg.role == "out" or arg.is_tensormap:
            continue
        init = arg.init
        if arg.dtype.kind == "f":
            overflows = init.kind == "arange" and kernel.elements(arg) - 1 > arg.dtype.float_max
            if arg.dtype.name in EXPONENTS and not overflows:
                out[name] = FiniteFloats(arg.dtype.name)
            continue
        if init.kind == "randint":
            low, high = init.low, init.high
        elif init.kind in ("zeros", "ones"):
            low = 0 if init.kind == "zeros" else 1
            high = low + 1
        elif init.kind == "arange" and kernel.elements(arg) > 0:
            low, high = 0, min(kernel.elements(arg), arg.dtype.int_range[1] + 1)
        else:
            continue
        out[name] = InputRange(low, high, arg.dtype.bytes, signed=arg.dtype.kind == "s")
    return out


FIXED_INITS = ("zeros", "ones", "arange")
"""The inits whose values are the same in every trial (no seed draws them)."""


def launch_contents(kernel: BoundKernel, entry: ast.Function) -> Mapping[str, np.ndarray]:
    """The content at launch of the spec's input buffers whose init fixes it
    (:data:`FIXED_INITS`), by .param name; an output (poisoned before a launch) has none. Each
    is made when first asked for (only a ticket counter's buffer is)."""
    fixed = {
        name: arg
        for arg, name in _named(kernel, entry)
        if arg.is_pointer and not arg.is_tensormap and arg.role != "out" and arg.init.kind in FIXED_INITS
    }
    return _Contents(kernel, fixed)


@dataclass
class _Contents(Mapping[str, np.ndarray]):
    """:func:`launch_contents`: the buffers ``args`` (by .param name), each made on first use."""

    kernel: BoundKernel
    args: dict[str, ArgSpec]
    _made: dict[str, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._made:
            self._made[name] = make_array(self.kernel, self.args[name], 0)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.args)

    def __len__(self) -> int:
        return len(self.args)


def _named(kernel: BoundKernel, entry: ast.Function) -> list[tuple[ArgSpec, str]]:
    """Every buffer and scalar of the spec and its name for the checker (``param.field`` for a
    struct's field)."""
    out = []
    for arg, param in zip(kernel.args, entry.params, strict=True):
        if arg.is_struct:
            out += [(f, f"{param.name}.{f.name}") for f in arg.fields]
        else:
            out.append((arg, param.name))
    return out


def check_spec(
    kernel: BoundKernel,
    module: ast.Module,
    *,
    properties: tuple[str, ...] = PROPERTIES,
    scheduling: str | None = None,
    unroll: int = 8,
    machine: Any = None,
    deadline_s: float | None = None,
    strict: bool = False,
    loads_agree: bool = True,
    ranges: LaunchRanges | None = None,
    host_constants: bool = False,
    assume_inits: bool = True,
) -> list[Any]:
    """Run the z3 checks of ``properties`` for the spec's launch; one Verdict per property.

    With ``deadline_s``, what is not decided when the time runs out is ``unknown`` (with why);
    ``strict`` counts same-value stores as races; ``loads_agree=False`` keeps them benign only
    where the values are equal whatever each thread's loads read (for the spec's launch; see
    :func:`karyamorph.model.check.checker.check`). Witnesses name the spec's
    arguments. ``ranges`` (default: the spec's ``[check]``) of mode ``any`` checks every launch
    in them instead (:func:`karyamorph.model.check.anylaunch.check_any_launch`).
    ``host_constants``: the ``.const`` tables are the host's to set (for the spec's launch only;
    see :func:`karyamorph.model.check.checker.check`). ``assume_inits``: the verdicts hold for the
    inputs the spec describes, its integer inputs' values within their inits' ranges
    (:func:`input_ranges`); False: for every input. (A launch of mode ``any`` assumes none.)"""

    entry = module.entry(kernel.entry)
    ranges = ranges or kernel.spec.check_launch
    maps = _tensormaps(kernel, entry)
    buffers, scalars = check_inputs(kernel, entry)
    launch = kernel.launch
    pairs = list(zip(kernel.args, entry.params, strict=True))
    named = _named(kernel, entry)
    names = UserTerms({n: a.name for a, n in named}, {n: a.dtype.bytes for a, n in named})
    structs = {p.name: struct_layout(a) for a, p in pairs if a.is_struct}
    if structs and ranges.mode == "any":
        raise SpecError(
            f"{kernel.spec.where}: check.launch",
            'struct arguments are checked for the spec\'s launch only, not "any"',
        )
    follows = _follows_block(kernel.spec) if ranges.mode == "any" else []
    if follows:
        # A symbolic block cannot carry these along: its proof would be for the baseline's
        # sizes at every block, not the spec's, and a refutation might not be one.
        reason = (f"no launch to check: {', '.join(follows)} of the spec change with the block, which "
                  "a symbolic launch does not carry (proved_blocks checks each block size)")  # fmt: skip
        return [Verdict(p, "unknown", reason=reason) for p in properties]
    if ranges.mode == "any":
        if not loads_agree:
            raise ValueError("loads_agree=False is for the spec's launch only, not a launch of mode any")
        return check_any_launch(
            module, kernel.entry, machine or ptx_machine(), launch, buffers, scalars, ranges,
            properties=properties, scheduling=scheduling, unroll=unroll, deadline_s=deadline_s,
            strict=strict, names=names, tensormaps=maps,
        )  # fmt: skip
    return check(
        module,
        kernel.entry,
        machine or ptx_machine(),
        launch,
        buffers,
        scalars,
        properties=properties,
        scheduling=scheduling,
        unroll=unroll,
        deadline_s=deadline_s,
        strict=strict,
        loads_agree=loads_agree,
        names=names,
        structs=structs,
        host_constants=host_constants,
        input_ranges=input_ranges(kernel, entry) if assume_inits else None,
        contents=launch_contents(kernel, entry),
        cluster=kernel.spec.launch.cluster,
        tensormaps=maps,
    )


def _tensormaps(kernel: BoundKernel, entry: ast.Function) -> dict[str, TensorMap]:
    """The fields of each tensor-map argument, by the entry's parameter name."""
    return {
        p.name: kernel.tensormaps[a.name]
        for a, p in zip(kernel.args, entry.params, strict=True)
        if a.is_tensormap
    }


def _follows_block(spec: KernelSpec) -> list[str]:
    """The spec's figures (shared bytes, shapes, scalar values) that read a name its block
    expressions read."""
    block: set[str] = set()
    for e in spec.launch.block:
        block |= expression_names(e)
    if not block:
        return []
    out = ["launch.shared_bytes"] if expression_names(spec.launch.shared_bytes) & block else []
    for a in spec.args:
        for f in (a, *a.fields):
            if any(expression_names(e) & block for e in f.shape) or (
                f.value is not None and expression_names(f.value) & block
            ):
                out.append(f"args.{f.name}")
    return out


def proved_blocks(
    kernel: BoundKernel,
    module: ast.Module,
    candidates: Sequence[int],
    *,
    machine: Any = None,
    deadline_s: float | None = None,
) -> dict[int, list[Any]]:
    """Which of ``candidates`` (threads a block, launched on x) the checks prove the kernel for.

    Each candidate is checked for every grid of the spec's ``[check] grid`` (``"launch"``: the
    spec's grid); one Verdict per property, all ``proved`` when the block is safe (see
    :func:`karyamorph.model.check.anylaunch.proved_blocks`)."""
    entry = module.entry(kernel.entry)
    buffers, scalars = check_inputs(kernel, entry)
    return any_launch_blocks(
        module, kernel.entry, machine or ptx_machine(), kernel.launch, buffers, scalars, candidates,
        grid=kernel.spec.check_launch.grid, deadline_s=deadline_s, tensormaps=_tensormaps(kernel, entry),
    )  # fmt: skip


class ModelStage:
    """Checks bounds, races and barriers with z3 and runs the kernel on the CPU model.

    Runs only on PTX that ptxas accepted for the run's arch (the compile stage's assembly, else
    a cached ptxas run of its own): a rejected PTX skips with "ptxas rejected the PTX for sm_XX:
    <first error>". Skips, naming them, when the kernel uses instructions the machine does not
    model, and with "too large for the model: ..." when the entry declares more registers or
    module variable bytes than ``budget`` allows. Passes only when every property is proved
    (``proved-up-to-k`` says so in its data) and the model's outputs match the reference; a
    refuted property (its witness replayed on the interpreter), outputs that differ from the
    reference or a fault of the kernel in the CPU run (out of bounds, a divergent barrier,
    ``trap``) fail the stage, an undecided property is ``unknown``. The model's own limits are
    never a failure: a form it cannot encode makes a property ``unknown``, one it cannot lay
    out skips with "the model cannot run this kernel: ...", and one it cannot interpret, like a
    launch over the budget's bytes or instructions, leaves the ``interp`` data "not run" with
    the reason.
    """

    name = "model"
    overlaps: tuple[str, ...] = ()

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        checks = ", ".join(f"{c['property']} {c['verdict']}" for c in r.data.get("checks", []))
        interp = r.data.get("interp", {})
        if interp.get("status") == "not run":  # the reason's first clause says which budget
            return f"{checks}; interp not run: {interp.get('reason', '').split(' (')[0]}"
        return f"{checks}; interp {interp['status']}" if interp.get("status") else checks

    def __init__(
        self, *, budget: ModelBudget | None = None, check_deadline_s: float = CHECK_DEADLINE_S
    ) -> None:
        self.budget = budget or ModelBudget()
        self.check_deadline_s = check_deadline_s

    def run(self, context: Context) -> StageResult:

        module = context.module
        assert module is not None
        kernel = context.kernel
        refused = _ptxas_refusal(context)
        if refused is not None:
            return StageResult.skip(refused)
        # The machine of the run's arch: its shared memory per block (227 KiB on sm_90, 99 KiB
        # on sm_120) is what a launch is held to, not sm_80's.
        machine = ptx_machine(context.arch.canonical.base.name)
        missing = unmodeled(module, machine, kernel.entry)
        if missing:
            names = sorted({m.form for m in missing})
            return StageResult.skip(f"unmodeled instructions: {', '.join(names)}")
        data: dict[str, Any] = {}
        log: list[str] = []
        figures: list[Figure] = []
        try:
            expanded_entry(module, kernel.entry, self.budget)
            verdicts = check_spec(kernel, module, machine=machine, deadline_s=self.check_deadline_s)
        except TooLargeError as exc:
            return StageResult.skip(str(exc))
        except MODEL_LIMITS as exc:  # what the model cannot lay out is not the kernel's fault
            return StageResult.skip(f"the model cannot run this kernel: {exc}")
        data["checks"] = [v.as_dict() for v in verdicts]
        for v in verdicts:
            log.append(f"{v.property}: {v.verdict}" + (f" ({v.reason})" if v.reason else ""))
            if v.witness is not None:
                log.append(f"  witness: {v.witness}")
            figures.append(Figure(f"check_{v.property}_seconds", v.seconds, "s"))
        data["interp"], context.interpretation = self._interpret(kernel, log, machine)
        context.model_interpreted = data["interp"].get("status") in ("pass", "fail")
        # A refutation is replayed before it is reported (a contradicted one is unknown), so it
        # is a finding; an undecided property is neither a pass nor a failure of the kernel.
        if data["interp"].get("status") == "fail" or any(v.verdict == "refuted" for v in verdicts):
            status = Status.FAIL
        elif all(v.verdict in ("proved", "proved-up-to-k") for v in verdicts):
            status = Status.PASS
        else:
            status = Status.UNKNOWN
        return StageResult(status, data, "\n".join(log), 0.0, tuple(figures))

    def _interpret(
        self, kernel: BoundKernel, log: list[str], machine: Any
    ) -> tuple[dict[str, Any], Interpretation | None]:
        """The stage data of the CPU run, and what it leaves for later stages (None: not run)."""

        # The budget is checked before any input is made: setting up a huge launch alone
        # costs seconds and gigabytes.
        try:
            report = interpret_spec_file(kernel, budget=self.budget, machine=machine)
        except TooLargeError as exc:
            reason = f"{exc}; `karyamorph interp` with smaller --size values runs it"
            log.append(f"interpretation: not run ({reason})")
            return {"status": "not run", "reason": reason}, None
        except MODEL_LIMITS as exc:
            if isinstance(exc, ModelLimitError) and DEADLOCK in str(exc):
                return self._turns(kernel, log, machine, str(exc))
            reason = f"the model cannot run it: {exc}"
            log.append(f"interpretation: not run ({reason})")
            return {"status": "not run", "reason": reason}, None
        except ExecutionError as exc:  # the kernel's own fault: out of bounds, a divergent barrier
            log.append(f"interpretation: {exc}")
            return {"status": "fail", "error": str(exc)}, Interpretation(kernel, None, failure=str(exc))
        log.append(f"interpretation: {report.status} (max abs err {report.max_abs_error:.3g})")
        data = {"status": report.status, "max_abs_error": report.max_abs_error, "outputs": report.outputs}
        return data, Interpretation(kernel, report.stats, report.seconds)

    def _turns(
        self, kernel: BoundKernel, log: list[str], machine: Any, stalled: str
    ) -> tuple[dict[str, Any], Interpretation | None]:
        """The lockstep order stalled at a wait (it need not give every thread a turn): run again
        with every warp taking its turn, where a hang is the kernel's and a finish is the answer."""
        log.append(f"interpretation: the lockstep order stalled ({stalled}); again, every warp taking turns")
        try:
            report = interpret_spec_file(kernel, budget=self.budget, machine=machine, randomize_order=True)
        except MODEL_LIMITS as exc:
            reason = f"the model cannot run it: {exc}"
            log.append(f"interpretation: not run ({reason})")
            return {"status": "not run", "reason": reason}, None
        except ExecutionError as exc:  # a deadlock in a fair schedule: the witness
            log.append(f"interpretation: {exc}")
            return {"status": "fail", "error": str(exc)}, Interpretation(kernel, None, failure=str(exc))
        err = report.max_abs_error
        log.append(f"interpretation: {report.status} (max abs err {err:.3g}, every warp taking turns)")
        data = {"status": report.status, "max_abs_error": report.max_abs_error, "outputs": report.outputs}
        return data, Interpretation(kernel, report.stats, report.seconds)


def _ptxas_refusal(context: Context) -> str | None:
    """Why the model may not run the context's PTX (None: ptxas accepted it for the arch)."""
    if context.assembly is not None:  # the compile stage's ptxas accepted it
        return None
    arch = context.arch.name
    try:
        filename = context.ptx_path or "kernel.ptx"
        require_ptxas(context.ptx, arch, filename=filename, toolchain=context.toolchain)
    except PtxasError as err:
        return rejection(err, arch)
    except ToolchainError as err:
        return f"the model runs only on PTX that ptxas accepted, and there is no ptxas: {err}"
    return None
