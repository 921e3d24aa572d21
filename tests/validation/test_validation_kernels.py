"""The validation microkernels: layout, ptxas for sm_80/90/120, and the GPU process's file formats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.validate import (
    EXIT_NO_DEVICE,
    GpuOutput,
    KernelJob,
    read_jobs,
    read_output,
    write_jobs,
    write_output,
)
from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.validation.cases import case_tables
from karyamorph.validation.forms import enumerate_forms
from karyamorph.validation.microkernel import build_microkernel, pack_inputs, unpack_outputs
from karyamorph.validation.validate import assemble_all

M = ptx_machine()
TOOLCHAIN = discover()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_120"])
def test_every_instruction_kernel_assembles(arch: str) -> None:
    formset = enumerate_forms(M, arch)
    tables = case_tables(formset.forms, samples=4, cross_limit=16)
    assembled, rejected = assemble_all(formset, tables, arch, TOOLCHAIN)
    names = list(formset.by_instruction())
    assert len(assembled) == len(names) >= 32
    assert all(a.kernel is not None and a.cubin[:4] == b"\x7fELF" for a in assembled)
    ran = sum(len(a.kernel.forms) for a in assembled if a.kernel)
    assert ran + len(rejected) == len(formset.forms) and ran > 1300
    assert all(r.status == "rejected" and r.detail.startswith("ptxas: ") for r in rejected)
    # The declarations spell legal PTX only, and forms the catalog dates to a later target than
    # ``arch`` (sm_80: .abs on min/max needs sm_86, bf16 arithmetic and most bf16 conversions
    # sm_90) are left out with that reason instead of being refused.
    assert rejected == [], [r.form for r in rejected][:10]
    if arch == "sm_80":
        dated = {u.name: u.reason for u in formset.unvalidated if u.reason.endswith("validating for sm_80")}
        assert "needs PTX ISA >= 7.2 and sm_86" in dated["min.xorsign.abs.f32"]
        assert "sm_90" in dated["cvt.bf16.bf16"] and "sm_90" in dated["cvt.rzi.s32.bf16"]
        assert "sm_90" in dated["add.bf16"]
        kept = {f.opcode for f in formset.forms}
        assert {"cvt.rn.bf16.f32", "cvt.f32.bf16", "min.f32", "min.bf16"} <= kept  # sm_80 has these
    # Each dropped form is refused by ptxas on its own too (a sample of them): nothing innocent
    # was dropped with its neighbours.
    by_key = {f.key: f for f in formset.forms}
    for r in rejected[::25]:
        alone = build_microkernel("one", [by_key[r.form]], [1], arch)
        with pytest.raises(PtxasError):
            assemble(alone.ptx, arch, TOOLCHAIN, lineinfo=False)


def test_layout_puts_each_forms_rows_in_its_range() -> None:
    forms = [f for f in enumerate_forms(M, "sm_90", "bfi").forms]
    k = build_microkernel("bfi", forms, [3, 5], "sm_90")
    assert (k.starts, k.counts, k.rows, k.in_slots, k.out_slots) == ((0, 3), (3, 5), 8, 4, 1)
    assert k.entry == "validate_bfi" and k.grid == 1
    ops = [{r.slot: np.arange(c, dtype=np.uint64) + 10 * j for j, r in enumerate(f.reads)}
           for f, c in zip(forms, (3, 5), strict=True)]  # fmt: skip
    words = pack_inputs(k, ops)
    assert words.shape == (8, 4) and words[3:, 1].tolist() == [10, 11, 12, 13, 14]
    out = unpack_outputs(k, np.arange(8, dtype=np.uint64).reshape(8, 1))
    assert [o["f"].tolist() for o in out] == [[0, 1, 2], [3, 4, 5, 6, 7]]


def test_a_ptx_line_names_its_form() -> None:
    forms = enumerate_forms(M, "sm_90", "popc").forms
    k = build_microkernel("popc", forms, [1, 1], "sm_90")
    lines = k.ptx.splitlines()
    for i, f in enumerate(forms):
        hit = [n for n, text in enumerate(lines, 1) if text.strip().startswith(f.opcode + " ")]
        assert len(hit) == 1 and k.form_at_line(hit[0]) == i
    assert k.form_at_line(1) is None


def test_job_and_result_files_round_trip(tmp_path: Path) -> None:
    jobs = [KernelJob("k0", b"\x7fELF-bytes", 3, 256, np.arange(12, dtype=np.uint64).reshape(4, 3), 2),
            KernelJob("k1", b"\x00", 1, 256, np.ones((1, 1), dtype=np.uint64), 1)]  # fmt: skip
    write_jobs(jobs, tmp_path / "jobs.npz")
    back = read_jobs(tmp_path / "jobs.npz")
    assert [(j.entry, j.cubin, j.grid, j.block, j.out_slots) for j in back] == [
        (j.entry, j.cubin, j.grid, j.block, j.out_slots) for j in jobs
    ]
    assert all(np.array_equal(a.inputs, b.inputs) for a, b in zip(jobs, back, strict=True))
    out = GpuOutput((np.full((4, 2), 2**64 - 1, dtype=np.uint64),), (np.zeros((4, 2), dtype=np.uint64),),
                    {"device_name": "x", "driver_release": "570.1"}, 1.5)  # fmt: skip
    write_output(out, tmp_path / "out.npz")
    got = read_output(tmp_path / "out.npz")
    assert np.array_equal(got.first[0], out.first[0]) and got.first[0].dtype == np.uint64
    assert got.environment == out.environment and got.seconds == 1.5


@pytest.mark.skipif(current_device() is not None, reason="checks the answer of a machine without a GPU")
def test_the_gpu_process_says_when_there_is_no_device(tmp_path: Path) -> None:
    write_jobs([KernelJob("k", b"", 1, 256, np.zeros((1, 1), dtype=np.uint64), 1)], tmp_path / "j.npz")
    files = [str(tmp_path / "j.npz"), str(tmp_path / "o.npz")]
    argv = [sys.executable, "-m", "karyamorph.harness.gpu.validate", *files]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert proc.returncode == EXIT_NO_DEVICE and "no CUDA device" in proc.stderr
