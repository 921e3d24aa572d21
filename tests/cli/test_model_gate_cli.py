"""`interp` and `check` run only on PTX ptxas accepts, within budgets; `run` skips the model otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness import model_gate
from karyamorph.harness.tools.toolchain import Toolchain, discover_from
from tests.harness.budget_kernels import SPIN_PTX, local_ptx, regs_ptx, write_spec

ROOT = Path(__file__).resolve().parents[2]


def _no_ptxas() -> Toolchain:
    """The toolchain of a machine with no NVIDIA tools anywhere (raises ToolchainError)."""
    return discover_from(use_wheels=False, cuda_home=None, path="", default_root=None)


@pytest.mark.parametrize("command", ["interp", "check"])
def test_a_register_count_ptxas_refuses_is_exit_2_at_its_line(tmp_path: Path, command: str) -> None:
    # Before the gate the interpreter laid out one entry per register: a MemoryError after minutes.
    spec = write_spec(tmp_path, "pred", regs_ptx(4294967296))
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "karyamorph.cli", command, str(spec)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert time.perf_counter() - t0 < 60
    assert proc.returncode == 2, proc.stderr
    assert f"{spec.with_suffix('.ptx')}:7: error: Constant overflow" in proc.stderr
    assert "    .reg .pred %p<4294967296>;" in proc.stderr  # the PTX line itself
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr


def test_run_does_not_model_what_ptxas_rejects(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "pred", regs_ptx(4294967296))
    result = CliRunner().invoke(main, ["run", str(spec), "--stages", "compile,model", "--no-store",
                                       "--format", "json"])  # fmt: skip
    assert result.exit_code == 2
    stages = {s["name"]: s for s in json.loads(result.stdout)["stages"]}
    assert stages["compile"]["status"] == "fail"
    assert stages["model"]["status"] == "skip"
    assert stages["model"]["data"]["reason"].startswith("ptxas rejected the PTX for sm_80: ")
    assert stages["model"]["data"]["reason"].endswith(":7: error: Constant overflow")


def test_too_many_registers_for_the_model_is_exit_2_and_the_budget_is_an_option(tmp_path: Path) -> None:
    spec = str(write_spec(tmp_path, "regs", regs_ptx(5000)))
    refused = CliRunner().invoke(main, ["interp", spec, "--max-registers", "1000"])
    assert refused.exit_code == 2
    # 5000 predicates, 3 and 2 more registers declared in the text.
    assert "too large for the model: registers declared by k (5005 > 1000)" in refused.output
    assert "--max-registers" in refused.output
    ran = CliRunner().invoke(main, ["interp", spec, "--format", "json"])  # default: 262144
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.output)["match"] is True
    checked = CliRunner().invoke(main, ["check", str(write_spec(tmp_path, "huge", regs_ptx(1_000_000)))])
    assert checked.exit_code == 2
    assert "too large for the model: registers declared by k (1000005 > 262144)" in checked.output


def test_local_memory_over_max_bytes_is_exit_2(tmp_path: Path) -> None:
    spec = str(write_spec(tmp_path, "local", local_ptx(1 << 20), block=64))
    ran = CliRunner().invoke(main, ["interp", spec, "--format", "json"])
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.output)["match"] is True  # the kernel's stores went through local memory
    refused = CliRunner().invoke(main, ["interp", spec, "--max-bytes", "60000000"])
    assert refused.exit_code == 2
    assert "of which local memory 67108864" in refused.output  # 64 threads x 1 MiB
    assert "> 60000000)" in refused.output


def test_a_kernel_that_never_ends_is_exit_2_at_the_instruction_budget(tmp_path: Path) -> None:
    spec = str(write_spec(tmp_path, "spin", SPIN_PTX))
    result = CliRunner().invoke(main, ["interp", spec, "--max-thread-instructions", "1e5"])
    assert result.exit_code == 2
    assert "too large for the model: instructions executed (still running after 3125 steps" in result.output


@pytest.mark.parametrize("command", ["interp", "check"])
def test_without_ptxas_the_model_commands_say_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setattr(model_gate, "discover", _no_ptxas)
    result = CliRunner().invoke(main, [command, str(write_spec(tmp_path, "small", regs_ptx(4)))])
    assert result.exit_code == 2
    assert "ptxas was not found" in result.output and "pip install nvidia-cuda-nvcc" in result.output


def test_the_arch_the_gate_asks_about_is_an_option(tmp_path: Path) -> None:
    spec = str(write_spec(tmp_path, "small", regs_ptx(4)))
    result = CliRunner().invoke(main, ["interp", spec, "--arch", "sm_7"])
    assert result.exit_code == 2 and "sm_7" in result.output
    assert CliRunner().invoke(main, ["interp", spec, "--arch", "sm_90"]).exit_code == 0
