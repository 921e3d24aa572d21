"""The ``correctness`` stage: GPU outputs vs the spec's reference over several seeded trials."""

from __future__ import annotations

import secrets
import time
from typing import Any

import numpy as np

from karyamorph.harness.gpu.compare import compare, tolerance_for, worst_error
from karyamorph.harness.gpu.device import NO_DEVICE
from karyamorph.harness.gpu.inputs import as_tensor, host_bits
from karyamorph.harness.gpu.jobs import (
    CRASHED,
    CUDA_ERROR,
    SPEC_ERROR,
    TIMEOUT,
    CorrectnessReport,
    JobFailure,
)
from karyamorph.harness.gpu.reference import output_args
from karyamorph.harness.gpu.supervisor import use_worker
from karyamorph.harness.model_run import run_model
from karyamorph.harness.stages.base import Context, Figure, StageResult, Status, figure, timed
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.signature import prepare
from karyamorph.model.ptx.exactness import inexact_reasons


class CorrectnessStage:
    """Run the kernel in the GPU worker on fresh random inputs and compare with the reference.

    Parameters
    ----------
    trials : int
        Independent trials, each with its own seed (at least 1; default 3). All must pass.
    seed : int, optional
        The first trial's seed; default: a fresh random one (recorded in the data), so that no
        output can be cached from an earlier run.
    timeout_s : float
        Wall-time limit of the job; a kernel that hangs fails the stage (its worker is killed
        and the next job gets a fresh one).

    Notes
    -----
    Before every launch the ``out`` buffers are poisoned (NaN, or 0xFF bytes for integers) and
    every buffer sits between guard bytes: unwritten elements and stores past either end fail
    the trial. Outputs that stay bit-identical while the reference changes between two trials
    fail it too (stale or cached results). The driver's occupancy for the launch is recorded
    beside the resource model's, and a disagreement is flagged (it does not fail the stage).
    """

    name = "correctness"
    overlaps: tuple[str, ...] = ()

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        trials = figure(r, "trials_passed")
        err = figure(r, "max_abs_err")
        text = f"{trials:.0f} trials passed" if trials is not None else "passed"
        others = figure(r, "other_sizes_passed")
        text += f" (+{others:.0f} at other sizes)" if others else ""
        text += f", max abs err {err:.3g}" if err is not None else ""
        tolerances = {tuple(t) for t in r.data.get("tolerances", {}).values()}
        if len(tolerances) == 1:
            ((atol, rtol),) = tolerances
            text += f" (atol {atol:g}, rtol {rtol:g})"
        return text

    def __init__(self, *, trials: int = 3, seed: int | None = None, timeout_s: float = 120.0) -> None:
        if trials < 1:
            raise ValueError(f"correctness needs at least one trial, got {trials}")
        self.trials = trials
        self.seed = seed
        self.timeout_s = timeout_s

    def run(self, context: Context) -> StageResult:
        """Skip without a device or a cubin; otherwise run the trials in a worker."""
        if context.device is None:
            return StageResult.skip(NO_DEVICE)
        if context.cubin is None:
            return StageResult.skip("compile did not pass")
        ref = context.spec.reference
        if ref.torch is None and ref.python is None:
            return StageResult.skip("the spec has no [reference] to compare with")
        result = timed(lambda: self._run(context))
        context.correct = result.status == Status.PASS
        others = tuple(r["seed"] for r in result.data.get("other_sizes", ()))
        context.checked_seeds = (*result.data.get("seeds", ()), *others)
        return result

    def _run(self, context: Context) -> StageResult:
        seed = self.seed if self.seed is not None else secrets.randbelow(2**31)
        assert context.cubin is not None and context.device is not None
        keep = context.model_interpreted
        t0 = time.perf_counter()
        others: list[tuple[dict[str, int], int, CorrectnessReport | JobFailure]] = []
        with use_worker(context.worker, context.device.ordinal) as worker:
            answer = worker.correctness(
                context.kernel, context.cubin, seed, trials=self.trials, keep_first_outputs=keep,
                timeout_s=self.timeout_s,
            )  # fmt: skip
            if isinstance(answer, CorrectnessReport) and answer.passed:
                for i, kernel in enumerate(other_sizes(context)):
                    other_seed = seed + self.trials + i
                    found = worker.correctness(kernel, context.cubin, other_seed, trials=1,
                                               timeout_s=self.timeout_s)  # fmt: skip
                    others.append((dict(kernel.sizes), other_seed, found))
            again = None
            if _worth_running_again(answer, others):
                # The first trial passed and something later failed: the first trial's inputs once
                # more tell a kernel whose outputs depend on how often it ran from one that is
                # wrong at a size or on some inputs.
                again = worker.correctness(context.kernel, context.cubin, seed, trials=1,
                                           timeout_s=self.timeout_s)  # fmt: skip
            starts = worker.starts
        data: dict[str, Any] = {
            "seed": seed,
            "trials_requested": self.trials,
            "seeds": [seed + i for i in range(self.trials)],
            "worker_seconds": time.perf_counter() - t0,
            "worker_starts": starts,
        }
        if isinstance(answer, JobFailure):
            return failed_result(answer, data, entry=context.entry, timeout_s=self.timeout_s)
        result = trials_result(answer, data, trials=self.trials, entry=context.entry,
                               model_blocks_per_sm=context.blocks_per_sm)  # fmt: skip
        if others:
            result = _with_other_sizes(result, others, entry=context.entry, timeout_s=self.timeout_s)
        if isinstance(again, CorrectnessReport) and not again.passed:
            result = launch_count_dependence(result, seed, entry=context.entry)
        if keep and result.status == Status.PASS and answer.first_outputs:
            result = _with_model_agreement(context, result, answer.first_outputs, seed)
        return result


def _worth_running_again(
    answer: CorrectnessReport | JobFailure,
    others: list[tuple[dict[str, int], int, CorrectnessReport | JobFailure]],
) -> bool:
    if not isinstance(answer, CorrectnessReport) or not answer.trials or not answer.trials[0].passed:
        return False
    later_failed = not answer.passed or any(
        isinstance(found, CorrectnessReport) and not found.passed for _, _, found in others
    )
    return later_failed


def launch_count_dependence(result: StageResult, seed: int, *, entry: str) -> StageResult:
    """The failed ``result`` named for what it is: the first trial's inputs, which passed, fail
    when run again, so the kernel's outputs depend on how often it ran (a counter of launches,
    a warm-up it skips work after, a result that drifts), not on the size or the inputs."""
    data = dict(result.data)
    why = (
        f"outputs depend on how often the kernel ran: the first trial's inputs (seed {seed}) passed, "
        "and fail when run again after the later trials"
    )
    earlier = data.get("error")
    data["error"] = why + (f" (what failed first: {earlier})" if earlier else "")
    data["findings"] = [
        *data.get("findings", []),
        _finding("launch_count_dependence", entry, {"seed": seed}),
    ]
    return StageResult(Status.FAIL, data, f"{why}\n{result.log}", result.seconds, result.figures)


def other_sizes(context: Context) -> list[BoundKernel]:
    """The run's kernel bound at each of its spec's ``[check] sizes`` (over the run's own sizes),
    leaving out any that is the run's own."""
    out: list[BoundKernel] = []
    for change in context.spec.check_sizes:
        sizes = {**context.kernel.sizes, **change}
        if sizes != dict(context.kernel.sizes):
            out.append(bind(context.spec, context.arch, sizes))
    return out


def _with_other_sizes(
    result: StageResult,
    others: list[tuple[dict[str, int], int, CorrectnessReport | JobFailure]],
    *,
    entry: str,
    timeout_s: float,
) -> StageResult:
    """Add the trials at the spec's other sizes: any that fails fails the stage, naming the sizes."""
    data = dict(result.data)
    findings = list(data.get("findings", []))
    log = [result.log]
    failed: list[str] = []
    records: list[dict[str, Any]] = []
    for sizes, seed, found in others:
        at = " ".join(f"{k}={v}" for k, v in sizes.items())
        if isinstance(found, JobFailure):
            sub = failed_result(found, {"worker_seconds": 0.0}, entry=entry, timeout_s=timeout_s)
            records.append({"sizes": sizes, "seed": seed, "failure": found.kind, "error": found.reason})
            log.append(f"at {at} (seed {seed}): {sub.status.upper()}: {found.reason}")
            findings += [{**f, "detail": {**f["detail"], "sizes": sizes}} for f in sub.data["findings"]]
            failed.append(f"at {at}: {found.reason}")
            continue
        sub = trials_result(found, {"worker_seconds": 0.0}, trials=1, entry=entry, model_blocks_per_sm=None)
        records.append({"sizes": sizes, "seed": seed, "passed": found.passed,
                        "trial": found.trials[0].as_dict() if found.trials else None})  # fmt: skip
        log.append(f"at {at} (seed {seed}): {'pass' if found.passed else 'FAIL'}")
        log += [f"  {line}" for line in sub.log.splitlines()[1:] if not line.startswith("occupancy")]
        findings += [{**f, "detail": {**f["detail"], "sizes": sizes}} for f in sub.data.get("findings", [])
                     if f["kind"] != "occupancy_disagreement"]  # fmt: skip
        if not found.passed:
            failed.append(f"at {at}: " + next((line.strip() for line in sub.log.splitlines()[1:]), "failed"))
    data.update(other_sizes=records, findings=findings)
    status = result.status
    if failed:
        status = Status.FAIL
        data["error"] = "wrong at another size (the kernel fits the timed size only?): " + "; ".join(failed)
    figures = (*result.figures, Figure("other_sizes_passed", float(len(others) - len(failed))))
    return StageResult(status, data, "\n".join(log), result.seconds, figures)


def failed_result(failure: JobFailure, data: dict[str, Any], *, entry: str, timeout_s: float) -> StageResult:
    """The stage's result for a job without a verdict: ``fail`` when the kernel's launch faulted,
    crashed its worker or hung; ``error`` when the spec or the setup is at fault."""
    figures = (Figure("worker_seconds", data["worker_seconds"], "s"),)
    data.update(failure=failure.kind, error=failure.reason, cuda_error=failure.cuda_error)
    log = [failure.reason, *_tail(failure.log, 40)]
    if failure.kind == TIMEOUT:
        data.update(timed_out=True, timeout_s=timeout_s)
        log[0] = f"timed out after {timeout_s:g} s (the worker's process group was killed)"
        data["findings"] = [_finding("timeout", entry, {"timeout_s": timeout_s})]
        return StageResult(Status.FAIL, data, "\n".join(log), figures=figures)
    if failure.kind in (CUDA_ERROR, CRASHED):
        kind = "cuda_error" if failure.kind == CUDA_ERROR else "worker_crash"
        data["findings"] = [_finding(kind, entry, {"error": failure.cuda_error or failure.reason})]
        return StageResult(Status.FAIL, data, "\n".join(log), figures=figures)
    # A spec the worker cannot run, or a worker that cannot start: not the kernel's fault.
    data["spec_error"] = failure.kind == SPEC_ERROR
    data["findings"] = []
    return StageResult(Status.ERROR, data, "\n".join(log), figures=figures)


def trials_result(
    report: CorrectnessReport,
    data: dict[str, Any],
    *,
    trials: int,
    entry: str,
    model_blocks_per_sm: int | None,
) -> StageResult:
    """The stage's result for a verdict: ``pass`` when all ``trials`` trials passed, with every
    failing check as a finding, and the driver's occupancy against the model's."""
    figures: list[Figure] = [Figure("worker_seconds", data["worker_seconds"], "s")]
    findings: list[dict[str, Any]] = []
    log: list[str] = []
    data["seeds"] = list(report.seeds)
    data["trials"] = [t.as_dict() for t in report.trials]
    if report.trials:
        # The tolerances the comparison used (the spec's, else the dtype's documented defaults).
        data["tolerances"] = {c.name: [c.atol, c.rtol] for c in report.trials[0].outputs}
    passed = report.passed and len(report.trials) == trials
    for t in report.trials:
        log.append(f"trial seed {t.seed}: {'pass' if t.passed else 'FAIL'}")
        for c in t.outputs:
            log.append(f"  {c.message}")
            if not c.passed:
                kind = "unwritten" if c.unwritten else "nan" if c.nan else "mismatch"
                out = c.as_dict()
                detail = {k: out[k] for k in ("mismatches", "unwritten", "nan", "max_abs_err",
                                              "max_rel_err", "first")}  # fmt: skip
                findings.append(_finding(kind, c.name, {"seed": t.seed, **detail}))
        for d in t.guard_damage:
            log.append(
                f"  {d['buffer']}: out-of-bounds write, {d['bytes']} byte(s) changed in the guard "
                f"{d['side']} the buffer (first at offset {d['first_offset']})"
            )
            findings.append(_finding("out_of_bounds_write", d["buffer"], {"seed": t.seed, **d}))
        for name in t.unchanged_outputs:
            log.append(f"  {name}: output identical to the previous trial's while the reference changed")
            findings.append(_finding("unchanged_output", name, {"seed": t.seed}))
    comparisons = [c for t in report.trials for c in t.outputs]
    if comparisons:
        # A NaN output's error is NaN (stored as NaN), never the largest of the other outputs'.
        figures.append(Figure("max_abs_err", worst_error(c.max_abs_err for c in comparisons)))
        figures.append(Figure("max_rel_err", worst_error(c.max_rel_err for c in comparisons)))
    figures.append(Figure("trials_passed", sum(1 for t in report.trials if t.passed)))
    driver, model = report.driver_blocks_per_sm, model_blocks_per_sm
    if driver is not None:
        data["driver_blocks_per_sm"] = driver
        figures.append(Figure("driver_blocks_per_sm", float(driver), "blocks"))
        data["model_blocks_per_sm"] = model
        if model is None:
            log.append(f"driver occupancy: {driver} blocks/SM (no model figure to compare)")
        else:
            data["occupancy_agrees"] = model == driver
            if model == driver:
                log.append(f"occupancy: model and driver agree on {driver} blocks/SM")
            else:
                log.append(f"occupancy DISAGREES: model {model} blocks/SM, driver {driver} blocks/SM")
                findings.append(_finding("occupancy_disagreement", entry, {"model": model, "driver": driver}))
    data["findings"] = findings
    return StageResult(Status.PASS if passed else Status.FAIL, data, "\n".join(log), figures=tuple(figures))


def _finding(kind: str, location: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {"tool": "correctness", "kind": kind, "location": location, "detail": detail}


def _tail(text: str, lines: int = 20) -> list[str]:
    return text.strip().splitlines()[-lines:] if text.strip() else []


def _with_model_agreement(
    context: Context, result: StageResult, gpu: dict[str, Any], seed: int
) -> StageResult:
    """Add the GPU-vs-model comparison of the first trial.

    On a kernel the model computes bit for bit (:func:`inexact_reasons` finds nothing: no
    approximation, no float atomic, no tensor-core float math, no clock), the outputs must be
    equal bit for bit, and a difference fails the stage as a model defect. Elsewhere they are
    compared within the spec's tolerance, and a disagreement is a finding, not a failure of the
    kernel (the GPU is the test of the model)."""
    spec = context.spec
    model = run_model(context.kernel, seed=seed)
    module = context.module if context.module is not None else prepare(spec)
    inexact = inexact_reasons(module)
    agreement: dict[str, Any] = {}
    how = "within tolerance" if inexact else "bit for bit"
    log = [result.log, f"model vs GPU (trial seed {seed}, {how}):"]
    findings = list(result.data.get("findings", []))
    defects: list[str] = []
    for arg in output_args(context.kernel):
        if not inexact:
            verdict = _bitwise(arg.name, gpu[arg.name], host_bits(model.outputs[arg.name], arg.dtype))
            agreement[arg.name] = verdict
            log.append(f"  {verdict['message']}")
            if not verdict["passed"]:
                defects.append(verdict["message"])
                findings.append(_finding("model_defect", arg.name, {"seed": seed, **verdict}))
            continue
        tolerance = tolerance_for(arg.dtype, spec.atol, spec.rtol)
        c = compare(arg.name, as_tensor(gpu[arg.name], arg.dtype), model.outputs[arg.name], tolerance)
        agreement[arg.name] = c.as_dict()
        log.append(f"  {c.message}")
        if not c.passed:
            findings.append(_finding("model_disagreement", arg.name, {"seed": seed, "message": c.message}))
    data = {**result.data, "model_agreement": agreement, "findings": findings,
            "model_exact": not inexact, "model_inexact_because": inexact}  # fmt: skip
    figures = (*result.figures, Figure("model_agrees", float(all(a["passed"] for a in agreement.values()))))
    status = result.status
    if defects:
        status = Status.FAIL
        data["error"] = "model defect: the GPU and the model differ bit for bit: " + "; ".join(defects)
    return StageResult(status, data, "\n".join(log), result.seconds, figures)


def _bitwise(name: str, gpu: np.ndarray, model: np.ndarray) -> dict[str, Any]:
    """Bit-for-bit equality of two arrays of one dtype's bits: count, first index and both values."""
    width = gpu.dtype.itemsize
    a = np.ascontiguousarray(gpu).reshape(-1).view(f"u{width}")
    b = np.ascontiguousarray(model).reshape(-1).view(f"u{width}")
    differ = np.flatnonzero(a != b)
    if not differ.size:
        return {"passed": True, "message": f"{name}: {a.size} elements equal bit for bit"}
    i = int(differ[0])
    digits = 2 * width
    message = (f"{name}: {differ.size} of {a.size} elements differ bit for bit, first at {i}: "
               f"GPU {int(a[i]):#0{digits + 2}x}, model {int(b[i]):#0{digits + 2}x}")  # fmt: skip
    return {"passed": False, "message": message, "differ": int(differ.size), "first_index": i}
