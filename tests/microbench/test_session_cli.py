"""The session and the command without a GPU: a dry run assembles every kernel and plans the
launches; a session whose launches come back empty or failing is stored with every figure marked
failed (never a figure of nothing), a failed batch is retried launch by launch; the command exits 2
without a GPU and exports stored sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.gpu.device import DeviceInfo, current_device
from karyamorph.microbench.launches import Batch, LaunchResult
from karyamorph.microbench.session import (
    NAMES,
    MicrobenchError,
    MicrobenchOptions,
    benchmarks,
    run_session,
    store_report,
)
from karyamorph.microbench.shape import MIB
from karyamorph.store.database import Store

SMALL = DeviceInfo(
    0,
    "Stand-in GPU",
    (9, 0),
    13000,
    80 << 30,
    {
        "multiprocessor_count": 2,
        "l2_cache_bytes": MIB,
        "max_threads_per_sm": 2048,
        "max_shared_memory_per_block_optin_bytes": 48 * 1024,
        "clock_rate_khz": 1_980_000,
        "memory_clock_rate_khz": 2_619_000,
        "memory_bus_width_bits": 5120,
    },
)


class EmptyDevice:
    """Answers every launch with zeroed buffers (and 1 us event times); fails any batch holding
    ``poison`` as a whole, so that the session must retry its launches one by one."""

    def __init__(self, poison: str) -> None:
        self.poison = poison
        self.calls: list[int] = []

    def __call__(self, batch: Batch, timeout_s: float) -> tuple[LaunchResult, ...] | str:
        self.calls.append(len(batch.launches))
        keys = [s.key for s in batch.launches]
        if self.poison in keys:
            return "cuda_error: CUDA_ERROR_ILLEGAL_ADDRESS (planted)"
        return tuple(
            LaunchResult(
                s.key,
                tuple(
                    {b.name: np.zeros(b.nbytes, np.uint8) for b in s.buffers if b.read_back}
                    for _ in range(s.repeats)
                ),
                (1000.0,) * s.repeats if s.events else (),
                (1500.0, 1510.0),
            )
            for s in batch.launches
        )


def test_session_with_an_empty_device_reports_failures_not_figures(tmp_path: Path) -> None:
    fake = EmptyDevice(poison="banks/3")
    options = MicrobenchOptions(instr="fma.rn.f32", memory=True, repeats=2, quick=True, jobs=2)
    report = run_session(options, call=fake, device=SMALL)
    by_kind: dict[str, set[str]] = {}
    for f in report.figures:
        by_kind.setdefault(f.kind, set()).add(f.status)
    # Chases, bank lanes and atomic chains end where the arithmetic says only on a real device.
    assert by_kind["chase"] == {"failed"} and by_kind["bank_conflict"] == {"failed"}
    assert by_kind["atomic_latency"] == {"failed"}
    planted = [f for f in report.figures if f.kind == "bank_conflict" and f.parameter_value == 3]
    assert "ILLEGAL_ADDRESS" in planted[0].detail["reason"]
    assert max(fake.calls) > 1 and 1 in fake.calls  # the failed batch was retried launch by launch
    assert {"compile", "instr", "chase", "bandwidth", "banks", "atomics", "barriers", "total"} <= set(
        report.seconds
    )
    session = store_report(report, tmp_path / "k.duckdb")
    with Store.open_to_read(tmp_path / "k.duckdb") as store:
        items = store.microbench_figures("sm_90")
    assert len(items) == len(report.figures) and {i["microbench_id"] for i in items} == {session}
    assert items[0]["environment"]["shape"]["l2_bytes"] == MIB


def test_dry_run_assembles_and_plans_without_a_device() -> None:
    options = MicrobenchOptions(instr="fma.rn.f32", memory=False, arch="sm_120", dry_run=True, jobs=2)
    report = run_session(options)
    entries = {e for _, e, _, _ in report.kernels}
    assert report.dry_run and not report.figures and report.arch == "sm_120"
    assert {e.split("_", 2)[0] for e in entries} == {"lat", "tput"}
    assert all("32 FFMA" in sass and "64 FFMA" in sass for _, _, _, sass in report.kernels)
    assert report.launches == 1 + 7  # latency, and throughput at 1, 2, 4, .., 64 warps per SM


@pytest.mark.skipif(current_device() is not None, reason="checks the answer of a machine without a GPU")
def test_command_without_a_gpu_exits_2(tmp_path: Path) -> None:
    got = CliRunner().invoke(main, ["microbench", "--db", str(tmp_path / "k.duckdb")])
    assert got.exit_code == 2 and "microbenchmarks need a GPU" in got.output and "--dry-run" in got.output
    assert not (tmp_path / "k.duckdb").exists()


def test_command_dry_run_and_export(tmp_path: Path) -> None:
    got = CliRunner().invoke(main, ["microbench", "--dry-run", "--instr", "fma.rn.f32", "--arch", "sm_90"])
    assert got.exit_code == 0, got.output
    assert "lat_0_fma_rn_f32" in got.output and "launches planned for sm_90" in got.output
    db = tmp_path / "k.duckdb"
    report = run_session(
        MicrobenchOptions(instr="add.u32", memory=False, repeats=1, jobs=2),
        call=EmptyDevice(""),
        device=SMALL,
    )
    store_report(report, db)
    out = tmp_path / "datasets"
    got = CliRunner().invoke(
        main,
        [
            "microbench",
            "--export-only",
            "--db",
            str(db),
            "--out",
            str(out),
            "--summary",
            str(tmp_path / "summary.md"),
        ],
    )
    assert got.exit_code == 0, got.output
    readme = (out / "sm_90" / "README.md").read_text()
    assert (out / "sm_90" / "figures.csv").exists() and str(tmp_path) not in readme
    assert "`karyamorph microbench --repeats 1 --instr 'add.u32'`" in readme
    assert "## Microbenchmarks on Stand-in GPU (1 sessions)" in (tmp_path / "summary.md").read_text()
    got = CliRunner().invoke(main, ["microbench", "--export-only", "--db", str(tmp_path / "none.duckdb")])
    assert got.exit_code == 2 and "does not exist" in got.output


def test_only_names_the_benchmarks_and_the_groups_hold_the_new_ones() -> None:
    def names(**options: Any) -> list[str]:
        return [b.name for b in benchmarks(MicrobenchOptions(**options), "sm_90")]

    assert names(only=("bulk", "tensor")) == ["tensor", "bulk"]
    assert names(only=("instr",), instr="fma.rn.f32") == ["instr"]
    assert names(memory=False) == ["instr", "tensor"]  # no --instr: the tensor cores too
    assert names(instr="fma.rn.f32", memory=False) == ["instr"]  # a pattern narrows to its forms
    assert names(instructions=False)[-1] == "bulk" and "tensor" not in names(instructions=False)
    assert set(names()) == set(NAMES)
    with pytest.raises(MicrobenchError, match="no benchmark named tma"):
        names(only=("tma",))


def test_command_takes_only() -> None:
    got = CliRunner().invoke(main, ["microbench", "--dry-run", "--arch", "sm_90", "--only", "tensor,bulk"])
    assert got.exit_code == 0, got.output
    assert "tensor_wgmma_m64n256k16_f32_f16_f16" in got.output and "bulk_copy" in got.output
    assert "lat_0" not in got.output and "chase" not in got.output
