"""``karyamorph model validate``: every modeled instruction form run on the GPU and compared with the model.

Steps: enumerate the forms (:mod:`karyamorph.validation.forms`), make their
operand rows, build one microkernel per instruction, assemble it with ptxas (a form ptxas
refuses is dropped with ptxas's message and the kernel rebuilt without it), run every kernel
in one GPU process, and compare each form's result bits with the numpy domain's. Matrix-fragment
forms (``mma.sync``, a warp per case) get kernels of their own, run in the same process and
compared with the interpreter's tiles (:mod:`karyamorph.validation.fragment_run`); so do
``tcgen05.mma`` forms (a CTA per case, :mod:`karyamorph.validation.tcgen05_run`) and
``wgmma.mma_async`` forms (a warpgroup CTA per case, :mod:`karyamorph.validation.wgmma_run`), and
``mbarrier`` forms (phase sequences, a CTA per case, :mod:`karyamorph.validation.mbarrier_run`),
and tensor copies (a box through a tensor map, a CTA per case,
:mod:`karyamorph.validation.tensor_copy_run`).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from karyamorph.harness.gpu.device import NO_DEVICE
from karyamorph.harness.gpu.host import current_device, driver_problem, gpu_host
from karyamorph.harness.gpu.validate import (
    GpuOutput,
    GpuRunError,
    GpuRunner,
    KernelJob,
    subprocess_runner,
    worker_runner,
)
from karyamorph.harness.record import toolchain_record
from karyamorph.harness.tools.toolchain import Toolchain, discover
from karyamorph.model.semantics.concrete import UnsupportedOperation
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.store.records import DeviceRecord
from karyamorph.store.validation import DisagreementRow, FormRow, ValidationRecord
from karyamorph.table import render, to_text
from karyamorph.validation.assembly import BLOCK_THREADS, Assembled, assemble_dropping
from karyamorph.validation.cases import (
    CROSS_LIMIT,
    SAMPLES,
    CaseTable,
    case_tables,
    model_results,
    table_key,
)
from karyamorph.validation.compare import ALLOWED, Disagreement, FormResult, compare_form
from karyamorph.validation.forms import Form, FormSet, Unvalidated, enumerate_forms
from karyamorph.validation.fragment_run import TileRun, judge_fragments, plan_fragments
from karyamorph.validation.mbarrier_run import MbarrierRun, judge_mbarrier, plan_mbarrier
from karyamorph.validation.microkernel import (
    Microkernel,
    build_microkernel,
    pack_inputs,
    unpack_outputs,
)
from karyamorph.validation.tcgen05_run import judge_tcgen05, plan_tcgen05
from karyamorph.validation.tensor_copy_run import TensorCopyRun, judge_tensor_copies, plan_tensor_copies
from karyamorph.validation.wgmma_run import WgmmaRun, judge_wgmma, plan_wgmma


def assemble_forms(
    name: str, forms: Sequence[Form], counts: Sequence[int], arch: str, toolchain: Toolchain
) -> Assembled[Microkernel]:
    """Build and assemble the microkernel of ``forms``, dropping each form ptxas refuses
    (:func:`~karyamorph.validation.assembly.assemble_dropping`)."""

    def build(keep: list[int]) -> Microkernel:
        return build_microkernel(name, [forms[i] for i in keep], [counts[i] for i in keep], arch)

    return assemble_dropping(name, len(forms), build, arch, toolchain)


def assemble_all(
    formset: FormSet, tables: dict[str, CaseTable], arch: str, toolchain: Toolchain
) -> tuple[list[Assembled[Microkernel]], list[FormResult]]:
    """Every instruction's microkernel assembled for ``arch``, and a ``rejected`` result per refused form."""
    assembled: list[Assembled[Microkernel]] = []
    rejected: list[FormResult] = []
    for name, forms in formset.by_instruction().items():
        asm = assemble_forms(name, forms, [tables[table_key(f)].size for f in forms], arch, toolchain)
        rejected += [FormResult(k, name, "rejected", 0, detail=m) for k, m in asm.rejected.items()]
        assembled.append(asm)
    return assembled, rejected


def compile_summary(
    machine: Machine, arch: str, only: str | None = None, samples: int = SAMPLES,
    cross_limit: int = CROSS_LIMIT, seed: int = 0,
) -> list[tuple[Any, ...]]:  # fmt: skip
    """Build and assemble every kernel (no GPU): instruction, forms, rejected, rows, PTX lines, registers.

    Matrix-fragment kernels (:mod:`karyamorph.validation.fragment_run`), ``tcgen05.mma``
    kernels (:mod:`karyamorph.validation.tcgen05_run`), ``wgmma`` kernels
    (:mod:`karyamorph.validation.wgmma_run`), ``mbarrier`` kernels
    (:mod:`karyamorph.validation.mbarrier_run`) and tensor-copy kernels
    (:mod:`karyamorph.validation.tensor_copy_run`) follow, a row each."""
    formset = enumerate_forms(machine, arch, only)
    tables = case_tables(formset.forms, samples=samples, cross_limit=cross_limit, seed=seed)
    toolchain = discover()
    assembled, _ = assemble_all(formset, tables, arch, toolchain)
    rows = []
    for name, a in zip(formset.by_instruction(), assembled, strict=True):
        k = a.kernel
        ran = len(k.forms) if k else 0
        rows.append((name, ran + len(a.rejected), len(a.rejected), k.rows if k else 0,
                     len(k.ptx.splitlines()) if k else 0, a.registers))  # fmt: skip
    tensor = plan_tcgen05(machine, arch, toolchain, only, seed).summary()
    warpgroup = plan_wgmma(machine, arch, toolchain, only, seed).summary()
    phases = plan_mbarrier(machine, arch, toolchain, only, seed).summary()
    boxes = plan_tensor_copies(machine, arch, toolchain, only, seed).summary()
    fragments = plan_fragments(machine, arch, toolchain, only, seed).summary()
    return rows + fragments + tensor + warpgroup + phases + boxes


@dataclass(frozen=True, slots=True)
class FormRun:
    """One form that ran: its case table and the GPU's result bits by destination slot."""

    form: Form
    table: str
    gpu: dict[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """The outcome of one validation: a result per form, every disagreement, what was left out."""

    arch: str
    results: tuple[FormResult, ...]
    disagreements: tuple[Disagreement, ...]
    unvalidated: tuple[Unvalidated, ...]
    environment: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    runs: tuple[FormRun, ...] = ()
    tables: dict[str, CaseTable] = field(default_factory=dict)
    tiles: tuple[TileRun, ...] = ()  # matrix-fragment forms that ran
    warpgroups: tuple[WgmmaRun, ...] = ()  # wgmma forms that ran
    sequences: tuple[MbarrierRun, ...] = ()  # mbarrier forms that ran
    boxes: tuple[TensorCopyRun, ...] = ()  # tensor-copy forms that ran

    @property
    def failed(self) -> list[FormResult]:
        return [r for r in self.results if r.status == "fail"]

    @property
    def status(self) -> str:
        return "fail" if self.failed else "pass"

    def by_instruction(self) -> list[tuple[Any, ...]]:
        """Summary rows: instruction, forms, pass, fail, no-bound, rejected, unsupported, cases,
        disagreements, NaN payload differences, largest ulp distance."""
        rows: dict[str, list[Any]] = {}
        for r in self.results:
            row = rows.setdefault(r.instruction, [r.instruction, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0])
            row[1] += 1
            row[2 + ("pass", "fail", "no-bound", "rejected", "unsupported").index(r.status)] += 1
            row[7] += r.cases
            row[8] += r.disagreements
            row[9] += r.nan_bits
            row[10] = max(row[10], r.max_ulp)
        return [tuple(r) for r in rows.values()]

    def as_json(self) -> dict[str, Any]:
        return {
            "arch": self.arch, "status": self.status, "environment": self.environment, "params": self.params,
            "seconds": self.seconds,
            "summary": {s: sum(r.status == s for r in self.results)
                        for s in ("pass", "fail", "no-bound", "rejected", "unsupported")},
            "forms": [r.as_dict() for r in self.results],
            "disagreements": [d.as_dict() for d in self.disagreements],
            "unvalidated": [{"name": u.name, "reason": u.reason} for u in self.unvalidated],
        }  # fmt: skip


def validate(
    machine: Machine, arch: str, runner: GpuRunner, toolchain: Toolchain, *, only: str | None = None,
    samples: int = SAMPLES, cross_limit: int = CROSS_LIMIT, seed: int = 0,
) -> ValidationReport:  # fmt: skip
    """Run every form of ``machine`` (or those matching ``only``) on the GPU and compare with the model.

    Parameters
    ----------
    machine : Machine
        The model whose numpy domain is the reference.
    arch : str
        The GPU's target (the kernels are assembled for it).
    runner : callable
        Runs the kernel jobs on a GPU (:func:`karyamorph.harness.gpu.validate.subprocess_runner`).
    toolchain : Toolchain
        Where ptxas is.
    only : str or None
        An instruction-name or form glob (``"max"``, ``"cvt.*.f16"``).
    samples, cross_limit, seed
        Random rows per operand signature, the size of the edge-case cross product, the seed.
    """
    clock = time.perf_counter()
    seconds: dict[str, float] = {}
    formset = enumerate_forms(machine, arch, only)
    tables = case_tables(formset.forms, samples=samples, cross_limit=cross_limit, seed=seed)
    seconds["generate"] = time.perf_counter() - clock
    assembled, results = assemble_all(formset, tables, arch, toolchain)
    kernels = [a.kernel for a in assembled if a.kernel is not None]
    jobs = [
        KernelJob(a.kernel.entry, a.cubin, a.kernel.grid, BLOCK_THREADS,
                  pack_inputs(a.kernel, [tables[table_key(f)].operands for f in a.kernel.forms]),
                  a.kernel.out_slots, a.kernel.ptx)
        for a in assembled if a.kernel is not None
    ]  # fmt: skip
    plan = plan_fragments(machine, arch, toolchain, only, seed)  # whole-warp tiles: mma.sync
    jobs += plan.jobs()
    tensor = plan_tcgen05(machine, arch, toolchain, only, seed)  # a CTA per case: tcgen05.mma
    jobs += tensor.jobs()
    warpgroup = plan_wgmma(machine, arch, toolchain, only, seed)  # a warpgroup CTA per case: wgmma
    jobs += warpgroup.jobs()
    phases = plan_mbarrier(machine, arch, toolchain, only, seed)  # a CTA per case: mbarrier sequences
    jobs += phases.jobs()
    copies = plan_tensor_copies(machine, arch, toolchain, only, seed)  # a CTA per case: a box through a map
    jobs += copies.jobs()
    seconds["assemble"] = time.perf_counter() - clock - seconds["generate"]
    t_gpu = time.perf_counter()
    out = runner(jobs) if jobs else GpuOutput((), ())
    seconds["gpu"] = time.perf_counter() - t_gpu
    t_cmp = time.perf_counter()
    n = len(kernels)
    runs, rows = _compare(machine, kernels, GpuOutput(out.first[:n], out.second[:n]), tables, results)
    m = n + len(plan.kernels)
    tiles, tile_rows, tile_runs = judge_fragments(plan, machine, out.first[n:m], out.second[n:m])
    results += tiles
    rows += tile_rows
    w = m + len(tensor.kernels)
    tensor_results, tensor_rows = judge_tcgen05(tensor, machine, out.first[m:w], out.second[m:w])
    results += tensor_results
    rows += tensor_rows
    g = w + len(warpgroup.kernels)
    wgmma_results, wgmma_rows, wgmma_runs = judge_wgmma(warpgroup, machine, out.first[w:g], out.second[w:g])
    results += wgmma_results
    rows += wgmma_rows
    p = g + len(phases.kernels)
    phase_results, phase_rows, phase_runs = judge_mbarrier(phases, machine, out.first[g:p], out.second[g:p])
    results += phase_results
    rows += phase_rows
    copy_results, copy_rows, copy_runs = judge_tensor_copies(copies, machine, out.first[p:], out.second[p:])
    results += copy_results
    rows += copy_rows
    seconds["compare"] = time.perf_counter() - t_cmp
    seconds["total"] = time.perf_counter() - clock
    params = {"instr": only, "samples": samples, "cross_limit": cross_limit, "seed": seed,
              "date": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip
    environment = {**out.environment, "arch": arch, "ptxas": toolchain.versions.get("ptxas", ""),
                   "cuda_release": toolchain.cuda_release, "toolchain_source": toolchain.source}  # fmt: skip
    left = (*formset.unvalidated, *plan.unvalidated, *tensor.unvalidated, *warpgroup.unvalidated,
            *phases.unvalidated, *copies.unvalidated)  # fmt: skip
    return ValidationReport(arch, tuple(results), tuple(rows), left, environment, params, seconds,
                            tuple(runs), tables, tuple(tile_runs), tuple(wgmma_runs),
                            tuple(phase_runs), tuple(copy_runs))  # fmt: skip


def _compare(
    machine: Machine,
    kernels: Sequence[Microkernel],
    out: GpuOutput,
    tables: dict[str, CaseTable],
    results: list[FormResult],
) -> tuple[list[FormRun], list[Disagreement]]:
    runs: list[FormRun] = []
    rows: list[Disagreement] = []
    for kernel, first, second in zip(kernels, out.first, out.second, strict=True):
        outputs = zip(unpack_outputs(kernel, first), unpack_outputs(kernel, second), strict=True)
        for form, (gpu, again) in zip(kernel.forms, outputs, strict=True):
            key = table_key(form)
            operands = tables[key].operands
            runs.append(FormRun(form, key, gpu))
            try:
                model = model_results(form, machine, operands)
            except UnsupportedOperation as exc:
                cases = tables[key].size
                results.append(FormResult(form.key, form.instr.name, "unsupported", cases, detail=str(exc)))
                continue
            result, found = compare_form(form, operands, gpu, model, again)
            results.append(result)
            rows += found
    return runs, rows


def store_record(report: ValidationReport, toolchain: Toolchain) -> ValidationRecord:
    """The store rows of ``report``: a row per form (left-out ones with their reason) and per disagreement."""
    d = report.environment.get("device")
    device = None
    if isinstance(d, dict):
        cc, sms = str(d.get("compute_capability", "")), int(d.get("multiprocessor_count", 0))
        device = DeviceRecord(str(d.get("name", "")), cc, sms, str(d.get("cuda_driver", "")), d)
    forms = [FormRow(r.form, r.instruction, r.status, r.cases, r.disagreements, r.nan_bits, r.unbounded,
                     r.unspecified, r.max_ulp, r.detail) for r in report.results]  # fmt: skip
    forms += [FormRow(u.name, u.name.split(".")[0], "unvalidated", detail=u.reason)
              for u in report.unvalidated]  # fmt: skip
    rows = tuple(
        DisagreementRow(x.form, x.case, x.slot, x.kind, {k: f"{v:#x}" for k, v in x.operands.items()}, x.gpu,
                        x.model, x.ulp)
        for x in report.disagreements
    )  # fmt: skip
    return ValidationRecord(report.arch, platform.node(), report.status, report.params, report.environment,
                            device, toolchain_record(toolchain), _unique_forms(forms), rows)  # fmt: skip


def _unique_forms(forms: list[FormRow]) -> tuple[FormRow, ...]:
    # A name left out twice (the same opcode under two operand counts) is one row.
    seen: dict[str, FormRow] = {}
    for f in forms:
        seen.setdefault(f.form, f)
    return tuple(seen.values())


def report_text(report: ValidationReport, all_rows: bool = False, shown: int = 2) -> str:
    """The report as terminal text: a row per instruction (or per form), then each failing form with
    its first ``shown`` disagreements, what was not validated and why, and the time spent."""
    env = report.environment
    where = env.get("device_name") or "?"
    cases = sum(r.cases for r in report.results)
    head = (f"{len(report.results)} forms, {cases} cases on {where} ({report.arch}, driver "
            f"{env.get('driver_release') or env.get('cuda_driver', '?')}, ptxas {env.get('ptxas', '?')}): "
            f"{report.status}")  # fmt: skip
    if all_rows:
        columns = ["form", "status", "cases", "disagreements", "nan_bits", "unspecified", "unbounded",
                   "max_ulp", "detail"]  # fmt: skip
        body = render(columns, [(r.form, r.status, r.cases, r.disagreements, r.nan_bits, r.unspecified,
                                 r.unbounded, r.max_ulp, r.detail) for r in report.results])  # fmt: skip
    else:
        body = render(["instruction", "forms", "pass", "fail", "no-bound", "rejected", "unsupported", "cases",
                       "disagreements", "nan_bits", "max_ulp"], report.by_instruction())  # fmt: skip
    lines = [head, "", to_text(body)]
    real = [d for d in report.disagreements if d.kind not in ALLOWED]
    for r in report.failed:
        ulp = f" (max {r.max_ulp:g} ulp)" if r.max_ulp else ""
        lines.append(f"FAIL {r.form}: {r.disagreements} of {r.cases} cases disagree{ulp}")
        for d in [d for d in real if d.form == r.form][:shown]:
            ops = ", ".join(f"{k}={v:#x}" for k, v in d.operands.items())
            lines.append(f"    [{d.kind}] {ops}: gpu {d.slot}={d.gpu:#x}, model {d.model:#x}")
    if report.failed:
        lines.append("  (every disagreement is in the database and in --format json)")
    if report.unvalidated:
        left = [u.name for u in report.unvalidated]
        more = ", ..." if len(left) > 12 else ""
        lines.append(f"\nnot validated: {len(left)} instructions or forms ({', '.join(left[:12])}{more}):")
        lines += [f"  {k}" for k in sorted({u.reason.split(" (")[0] for u in report.unvalidated})]
    s = report.seconds
    lines.append(
        f"wall time {s.get('total', 0):.1f} s (generate {s.get('generate', 0):.1f}, assemble "
        f"{s.get('assemble', 0):.1f}, gpu {s.get('gpu', 0):.1f}, compare {s.get('compare', 0):.1f})"
    )
    return "\n".join(lines)


def run_on_device(
    machine: Machine, arch: str | None, *, only: str | None = None, samples: int = SAMPLES,
    cross_limit: int = CROSS_LIMIT, seed: int = 0, timeout_s: float = 600.0,
) -> ValidationReport:  # fmt: skip
    """:func:`validate` on device 0 through the isolated GPU process, for ``arch`` or the device's.

    Raises
    ------
    GpuRunError
        There is no CUDA device, or the GPU process failed.
    """
    problem = driver_problem()
    info = current_device()
    if problem is not None or info is None:
        raise GpuRunError(f"{problem or NO_DEVICE}: model validate needs a GPU (try --compile-only)")
    target = arch or info.arch
    # On a --gpu host the jobs go through its worker; here, a process of their own does.
    runner = subprocess_runner(timeout_s) if gpu_host() is None else worker_runner(timeout_s)
    return validate(machine, target, runner, discover(), only=only, samples=samples,
                    cross_limit=cross_limit, seed=seed)  # fmt: skip
