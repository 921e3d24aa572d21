"""The ``model`` stage: z3 checks of the launch and a CPU run on the model, when the kernel is modeled."""

from __future__ import annotations

from typing import Any

from karyamorph.harness.stages.base import Context, Figure, StageResult, Status
from karyamorph.harness.stages.model_run import estimated_thread_instructions, interpret_spec_file
from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel
from karyamorph.model.check.checker import check
from karyamorph.model.check.witnesses import UserTerms
from karyamorph.model.interp.errors import ExecutionError, StepLimitError
from karyamorph.model.ptx.machine import ptx_machine
from karyamorph.model.semantics.decode import unmodeled

PROPERTIES = ("bounds", "race", "barrier")
# The CPU model runs at ~30-140 M thread-instructions/s: bound what one pipeline run spends.
INTERP_BUDGET = 2e8
# Seconds the z3 checks of one pipeline run may take before the rest is reported unknown.
CHECK_DEADLINE_S = 30.0


def check_inputs(kernel: BoundKernel, entry: ast.Function) -> tuple[dict[str, int], dict[str, int | float]]:
    """The spec as the checker sees it: buffer sizes in bytes and scalar values, by .param name."""
    buffers: dict[str, int] = {}
    scalars: dict[str, int | float] = {}
    for arg, param in zip(kernel.args, entry.params, strict=True):
        if arg.is_pointer:
            count = 1
            for d in kernel.shapes[arg.name]:
                count *= d
            buffers[param.name] = count * arg.dtype.bytes
        else:
            scalars[param.name] = kernel.scalars[arg.name]
    return buffers, scalars


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
) -> list[Any]:
    """Run the z3 checks of ``properties`` for the spec's launch; one Verdict per property.

    With ``deadline_s``, what is not decided when the time runs out is ``unknown`` (with why);
    ``strict`` counts same-value stores of one warp's lanes as races. Witnesses name the spec's
    arguments."""

    entry = module.entry(kernel.entry)
    buffers, scalars = check_inputs(kernel, entry)
    launch = (kernel.grid, kernel.block, kernel.shared_bytes)
    pairs = list(zip(kernel.args, entry.params, strict=True))
    names = UserTerms({p.name: a.name for a, p in pairs}, {p.name: a.dtype.bytes for a, p in pairs})
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
        names=names,
    )


class ModelStage:
    """Checks bounds, races and barriers with z3 and runs the kernel on the CPU model.

    Skips, naming them, when the kernel uses instructions the machine does not model. Passes
    only when every property is proved (``proved-up-to-k`` says so in its data) and the model's
    outputs match the reference; a refuted property or an ``unknown`` verdict fails the stage,
    since neither shows the property holds. A launch too large for the CPU budget is checked
    but not interpreted, and the data says so.
    """

    name = "model"

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        checks = ", ".join(f"{c['property']} {c['verdict']}" for c in r.data.get("checks", []))
        interp = r.data.get("interp", {}).get("status", "")
        return f"{checks}; interp {interp}" if interp else checks

    def __init__(
        self, *, interp_budget: float = INTERP_BUDGET, check_deadline_s: float = CHECK_DEADLINE_S
    ) -> None:
        self.interp_budget = interp_budget
        self.check_deadline_s = check_deadline_s

    def run(self, context: Context) -> StageResult:

        module = context.module
        assert module is not None
        kernel = context.kernel
        machine = ptx_machine()
        missing = unmodeled(module, machine, kernel.entry)
        if missing:
            names = sorted({m.form for m in missing})
            return StageResult.skip(f"unmodeled instructions: {', '.join(names)}")
        data: dict[str, Any] = {}
        log: list[str] = []
        figures: list[Figure] = []
        verdicts = check_spec(kernel, module, machine=machine, deadline_s=self.check_deadline_s)
        data["checks"] = [v.as_dict() for v in verdicts]
        for v in verdicts:
            log.append(f"{v.property}: {v.verdict}" + (f" ({v.reason})" if v.reason else ""))
            if v.witness is not None:
                log.append(f"  witness: {v.witness}")
            figures.append(Figure(f"check_{v.property}_seconds", v.seconds, "s"))
        data["interp"] = self._interpret(kernel, log)
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

    def _interpret(self, kernel: BoundKernel, log: list[str]) -> dict[str, Any]:

        reason = (
            f"the launch needs more than {self.interp_budget:.0e} thread-instructions on the CPU "
            "model; run `karyamorph interp` with smaller --size values"
        )
        # Threads x static instructions is a floor on the work: when even that is over the
        # budget, do not start (setting up a huge launch alone costs seconds).
        module = parse(kernel.spec.ptx, kernel.spec.ptx_name)
        if estimated_thread_instructions(kernel, module) > self.interp_budget:
            log.append(f"interpretation: not run ({reason})")
            return {"status": "not run", "reason": reason}
        try:
            report = interpret_spec_file(kernel, max_thread_instructions=self.interp_budget)
        except StepLimitError:
            log.append(f"interpretation: stopped ({reason})")
            return {"status": "not run", "reason": reason}
        except ExecutionError as exc:
            log.append(f"interpretation: {exc}")
            return {"status": "fail", "error": str(exc)}
        log.append(f"interpretation: {report.status} (max abs err {report.max_abs_error:.3g})")
        return {"status": report.status, "max_abs_error": report.max_abs_error, "outputs": report.outputs}
