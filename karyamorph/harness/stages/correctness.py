"""The ``correctness`` stage: GPU outputs vs the spec's reference over several seeded trials."""

from __future__ import annotations

import re
import secrets
import tempfile
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.compare import compare, tolerance_for, worst_error
from karyamorph.harness.gpu.device import NO_DEVICE
from karyamorph.harness.gpu.reference import output_args
from karyamorph.harness.gpu.worker import (
    EXIT_CUDA_ERROR,
    EXIT_SPEC_ERROR,
    FIRST_TRIAL_OUTPUTS,
    Job,
    WorkerOutcome,
    run_worker,
    spec_file,
)
from karyamorph.harness.stages.base import Context, Figure, StageResult, Status, figure, timed
from karyamorph.harness.stages.model_run import run_model

_CUDA_ERROR_RE = re.compile(r"CUDA_ERROR_[A-Z0-9_]+")


class CorrectnessStage:
    """Run the kernel in a worker process on fresh random inputs and compare with the reference.

    Parameters
    ----------
    trials : int
        Independent trials, each with its own seed (at least 1; default 3). All must pass.
    seed : int, optional
        The first trial's seed; default: a fresh random one (recorded in the data), so that no
        output can be cached from an earlier run.
    timeout_s : float
        Wall-time limit of the worker; a kernel that hangs fails the stage.

    Notes
    -----
    Before every launch the ``out`` buffers are poisoned (NaN, or 0xFF bytes for integers) and
    every buffer sits between guard bytes: unwritten elements and stores past either end fail
    the trial. Outputs that stay bit-identical while the reference changes between two trials
    fail it too (stale or cached results). The driver's occupancy for the launch is recorded
    beside the resource model's, and a disagreement is flagged (it does not fail the stage).
    """

    name = "correctness"

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        trials = figure(r, "trials_passed")
        err = figure(r, "max_abs_err")
        text = f"{trials:.0f} trials passed" if trials is not None else "passed"
        return text + (f", max abs err {err:.3g}" if err is not None else "")

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
        return result

    def _run(self, context: Context) -> StageResult:
        seed = self.seed if self.seed is not None else secrets.randbelow(2**31)
        entry = context.entry
        with tempfile.TemporaryDirectory(prefix="karyamorph-correctness-") as tmp:
            workdir = Path(tmp)
            cubin = workdir / f"{entry}.cubin"
            assert context.cubin is not None
            cubin.write_bytes(context.cubin)
            modeled = _model_ran(context)
            job = Job(
                str(spec_file(context.spec, workdir)), str(cubin), entry, "correctness", seed, self.trials,
                outputs_dir=str(workdir) if modeled else "", sizes=context.kernel.sizes,
            )  # fmt: skip
            outcome = run_worker(job, workdir=workdir, timeout_s=self.timeout_s)
            result = self._result(context, outcome, seed)
            saved = workdir / FIRST_TRIAL_OUTPUTS
            if modeled and result.status == Status.PASS and saved.exists():
                result = _with_model_agreement(context, result, saved, seed)
        return result

    def _result(self, context: Context, outcome: WorkerOutcome, seed: int) -> StageResult:
        data: dict[str, Any] = {
            "seed": seed,
            "trials_requested": self.trials,
            "worker_seconds": outcome.seconds,
            "worker_returncode": outcome.returncode,
        }
        result = outcome.result or {}
        data["seeds"] = result.get("seeds", [seed + i for i in range(self.trials)])
        figures: list[Figure] = [Figure("worker_seconds", outcome.seconds, "s")]
        findings: list[dict[str, Any]] = []
        log: list[str] = []
        if outcome.timed_out:
            data["timed_out"] = True
            data["timeout_s"] = self.timeout_s
            log.append(f"timed out after {self.timeout_s:g} s (the worker's process group was killed)")
            findings.append(_finding("timeout", context.spec.entry, {"timeout_s": self.timeout_s}))
            log += _tail(outcome.stderr)
            data["findings"] = findings
            return StageResult(Status.FAIL, data, "\n".join(log), figures=tuple(figures))
        if outcome.returncode != 0:
            stderr = outcome.stderr.strip()
            match = _CUDA_ERROR_RE.search(stderr)
            data["cuda_error"] = match.group(0) if match else None
            data["error"] = result.get("error") or (stderr.splitlines()[-1] if stderr else "")
            crashed = (
                outcome.returncode == EXIT_CUDA_ERROR
                or match is not None
                or "CUDA error" in stderr
                or (outcome.returncode is not None and outcome.returncode < 0)
            )
            log.append(f"worker exited with status {outcome.returncode}")
            log += _tail(outcome.stderr, 40)
            if crashed:
                findings.append(
                    _finding("cuda_error", context.spec.entry, {"error": data["cuda_error"] or data["error"]})
                )
                data["findings"] = findings
                return StageResult(Status.FAIL, data, "\n".join(log), figures=tuple(figures))
            # A spec the worker cannot run (EXIT_SPEC_ERROR) or a broken setup: not the kernel's fault.
            data["spec_error"] = outcome.returncode == EXIT_SPEC_ERROR
            return StageResult(Status.ERROR, data, "\n".join(log), figures=tuple(figures))

        trials = result.get("trials", [])
        data["trials"] = trials
        passed = bool(result.get("passed")) and len(trials) == self.trials
        for t in trials:
            verdict = "pass" if t["passed"] else "FAIL"
            log.append(f"trial seed {t['seed']}: {verdict}")
            for out in t["outputs"]:
                log.append(f"  {out['message']}")
                if not out["passed"]:
                    kind = "unwritten" if out["unwritten"] else "nan" if out["nan"] else "mismatch"
                    detail = {k: out[k] for k in ("mismatches", "unwritten", "nan", "max_abs_err",
                                                  "max_rel_err", "first")}  # fmt: skip
                    findings.append(_finding(kind, out["name"], {"seed": t["seed"], **detail}))
            for d in t["guard_damage"]:
                log.append(
                    f"  {d['buffer']}: out-of-bounds write, {d['bytes']} byte(s) changed in the guard "
                    f"{d['side']} the buffer (first at offset {d['first_offset']})"
                )
                findings.append(_finding("out_of_bounds_write", d["buffer"], {"seed": t["seed"], **d}))
            for name in t["unchanged_outputs"]:
                log.append(f"  {name}: output identical to the previous trial's while the reference changed")
                findings.append(_finding("unchanged_output", name, {"seed": t["seed"]}))
        outs = [o for t in trials for o in t["outputs"]]
        if outs:
            # A NaN output's error is NaN (stored as NaN), never the largest of the other outputs'.
            figures.append(Figure("max_abs_err", worst_error(o["max_abs_err"] for o in outs)))
            figures.append(Figure("max_rel_err", worst_error(o["max_rel_err"] for o in outs)))
        figures.append(Figure("trials_passed", sum(1 for t in trials if t["passed"])))
        self._occupancy(context, result, data, figures, findings, log)
        data["findings"] = findings
        return StageResult(
            Status.PASS if passed else Status.FAIL, data, "\n".join(log), figures=tuple(figures)
        )

    @staticmethod
    def _occupancy(
        context: Context,
        result: dict[str, Any],
        data: dict[str, Any],
        figures: list[Figure],
        findings: list[dict[str, Any]],
        log: list[str],
    ) -> None:
        driver = result.get("driver_blocks_per_sm")
        if driver is None:
            return
        data["driver_blocks_per_sm"] = driver
        figures.append(Figure("driver_blocks_per_sm", float(driver), "blocks"))
        model = context.blocks_per_sm
        data["model_blocks_per_sm"] = model
        if model is None:
            log.append(f"driver occupancy: {driver} blocks/SM (no model figure to compare)")
            return
        data["occupancy_agrees"] = int(model) == int(driver)
        if int(model) == int(driver):
            log.append(f"occupancy: model and driver agree on {driver} blocks/SM")
        else:
            log.append(f"occupancy DISAGREES: model {model} blocks/SM, driver {driver} blocks/SM")
            findings.append(
                _finding("occupancy_disagreement", context.spec.entry, {"model": model, "driver": driver})
            )


def _finding(kind: str, location: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {"tool": "correctness", "kind": kind, "location": location, "detail": detail}


def _tail(text: str, lines: int = 20) -> list[str]:
    return text.strip().splitlines()[-lines:] if text.strip() else []


def _model_ran(context: Context) -> bool:
    """Whether the model stage ran this launch to the end on the CPU (so a comparison is cheap)."""
    return context.model_interpreted


def _with_model_agreement(context: Context, result: StageResult, saved: Path, seed: int) -> StageResult:
    """Add the GPU-vs-model comparison of the first trial; a disagreement is a finding, not a failure
    of the kernel (the GPU is the test of the model)."""
    import torch


    spec = context.spec
    gpu = torch.load(saved)
    model = run_model(context.kernel, seed=seed)
    agreement = {}
    log = [result.log, f"model vs GPU (trial seed {seed}):"]
    findings = list(result.data.get("findings", []))
    for arg in output_args(context.kernel):
        c = compare(
            arg.name, gpu[arg.name], model.outputs[arg.name], tolerance_for(arg.dtype, spec.atol, spec.rtol)
        )
        agreement[arg.name] = c.as_dict()
        log.append(f"  {c.message}")
        if not c.passed:
            findings.append(_finding("model_disagreement", arg.name, {"seed": seed, "message": c.message}))
    data = {**result.data, "model_agreement": agreement, "findings": findings}
    figures = (*result.figures, Figure("model_agrees", float(all(a["passed"] for a in agreement.values()))))
    return StageResult(result.status, data, "\n".join(log), result.seconds, figures)
