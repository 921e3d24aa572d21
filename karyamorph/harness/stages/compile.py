"""The compile stage: assemble the run's PTX with ptxas and report the entry's resources."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from karyamorph.harness.stages.base import Context, Figure, StageResult, Status, timed
from karyamorph.harness.tools.ptxas import (
    Assembly,
    FunctionReport,
    PtxasError,
    UnsupportedArchError,
    assemble,
)
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover

# (data key, unit) of each number the stage also stores as a figure.
_FIGURES = (
    ("registers", "regs"),
    ("spill_stores_bytes", "bytes"),
    ("spill_loads_bytes", "bytes"),
    ("stack_bytes", "bytes"),
    ("cumulative_stack_bytes", "bytes"),
    ("shared_bytes", "bytes"),
    ("const_bytes", "bytes"),
    ("barriers", ""),
    ("compile_time_ms", "ms"),
)


def _function_data(report: FunctionReport) -> dict[str, Any]:
    data = dataclasses.asdict(report)
    data["const_bytes"] = dict(report.const_bytes)
    data["other"] = list(report.other)
    return data


def summarize(assembly: Assembly, entry: str) -> dict[str, Any]:
    """The stage's data for ``entry``: its resource numbers plus every function's report.

    ``const_bytes`` is None when ptxas printed no ``cmem`` (ptxas 13.x omits it from sm_90 on).
    """
    fn = assembly.functions[entry]
    const = sum(fn.const_bytes.values()) if fn.const_bytes else None
    return {
        "entry": entry,
        "arch": assembly.arch,
        "registers": fn.registers,
        "spill_stores_bytes": fn.spill_stores_bytes,
        "spill_loads_bytes": fn.spill_loads_bytes,
        "stack_bytes": fn.stack_frame_bytes,
        "cumulative_stack_bytes": fn.cumulative_stack_bytes,
        "shared_bytes": fn.shared_bytes,
        "const_bytes": const,
        "barriers": fn.barriers,
        "compile_time_ms": fn.compile_time_ms,
        "gmem_bytes": assembly.gmem_bytes,
        "cubin_bytes": len(assembly.cubin),
        "args": list(assembly.args),
        "warnings": [dataclasses.asdict(d) for d in assembly.diagnostics],
        "functions": {name: _function_data(r) for name, r in assembly.functions.items()},
    }


# The device runtime's entry points that a device-side launch (CUDA dynamic parallelism) calls.
_DEVICE_LAUNCH = re.compile(
    r"Unresolved extern function '(_*cuda(?:CDP2)?(?:LaunchDevice|GetParameterBuffer)\w*)'"
)


def _device_launch_note(log: str) -> str:
    """Why a kernel that launches grids from the device does not assemble here, or ""."""
    found = _DEVICE_LAUNCH.search(log)
    if found is None:
        return ""
    return (f"device-side launch: the kernel calls {found.group(1)} (CUDA dynamic parallelism), which "
            "needs the device runtime linked in; kernels are assembled alone, so no work can be "
            "launched from the device, where it could run outside the timed window")  # fmt: skip


class CompileStage:
    """Assemble ``context.ptx`` for ``context.arch``; leave ``context.cubin`` and ``context.assembly``.

    Parameters
    ----------
    extra_args : sequence of str
        More ptxas options, e.g. ``("-maxrregcount=64",)``.
    lineinfo : bool
        Pass ``-lineinfo`` so the sass stage can map SASS to PTX lines.

    Notes
    -----
    A ptxas rejection is ``fail`` (the kernel is wrong); a missing ptxas, an unknown target or
    missing inputs are ``error`` (the setup is wrong).
    """

    name: str = "compile"
    overlaps: tuple[str, ...] = ()

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        d = r.data
        spill = int(d.get("spill_stores_bytes", 0)) + int(d.get("spill_loads_bytes", 0))
        return f"{d.get('registers')} regs, {spill} B spilled, {d.get('shared_bytes', 0)} B smem"

    def __init__(self, *, extra_args: Sequence[str] = (), lineinfo: bool = True) -> None:
        self.extra_args = tuple(extra_args)
        self.lineinfo = lineinfo

    def run(self, context: Context) -> StageResult:
        """Run ptxas and report the entry's registers, spills, stack, shared and constant memory."""
        return timed(lambda: self._run(context))

    def _run(self, context: Context) -> StageResult:
        ptx = context.ptx
        if not ptx:
            return StageResult(Status.ERROR, {}, "no PTX text to compile")
        filename = context.ptx_path or "kernel.ptx"
        try:
            toolchain: Toolchain = context.toolchain or discover()
            assembly = assemble(
                ptx,
                context.arch.name,
                toolchain,
                extra_args=self.extra_args,
                lineinfo=self.lineinfo,
                filename=str(filename),
            )
        except (ToolchainError, UnsupportedArchError) as err:
            return StageResult(Status.ERROR, {"arch": context.arch.name}, str(err))
        except PtxasError as err:
            failed = {
                "arch": context.arch.name,
                "diagnostics": [dataclasses.asdict(d) for d in err.diagnostics],
            }
            why = _device_launch_note(err.log)
            if why:
                failed["error"] = why
            head = f"{err}\n{why}" if why else str(err)
            return StageResult(Status.FAIL, failed, f"{head}\n\n--- ptxas output ---\n{err.log}")
        entry: str | None = context.entry or None
        entries = [n for n, r in assembly.functions.items() if r.entry]
        if entry is None and len(entries) == 1:
            entry = entries[0]
        if entry not in assembly.functions:
            reason = f"entry {entry!r} is not among the functions ptxas compiled: {sorted(entries)}"
            return StageResult(Status.FAIL, {"arch": context.arch.name, "entries": entries}, reason)
        context.cubin = assembly.cubin
        context.assembly = assembly
        data = summarize(assembly, entry)
        figures = tuple(
            Figure(key, float(data[key]), unit) for key, unit in _FIGURES if data[key] is not None
        )
        return StageResult(Status.PASS, data, assembly.log, figures=figures)
