"""The sanitizer's scaled launch, on the example kernels and the model's test kernels (CPU only).

The oracle for each claim is independent of the scaling code: a fresh ``bind`` of the chosen
sizes (the spec's own rules), the kernels' documented needs (the SGEMM's tile sizes, vadd's
ragged last block), and the work law stated in ``scaled_launch`` computed here from the bound
launch and the parser's instruction count.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from karyamorph.harness.pipeline import prepare_spec
from karyamorph.harness.scaled_launch import (
    ALIGNMENT,
    WORK_BUDGET,
    ScaledLaunch,
    scale_to_budget,
)
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import KernelSpec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "datasets" / "kernels").glob("*.toml"))
MODEL_KERNELS = sorted(
    p for p in (ROOT / "tests" / "model" / "kernels").glob("*.toml") if p.name != "verdicts.toml"
)
SPECS = EXAMPLES + MODEL_KERNELS
ARCH = Arch.parse("sm_90")


def static_count(spec: KernelSpec) -> int:
    return len(list(prepare(spec).entry(spec.entry).instructions()))


def law(kernel: BoundKernel, static: int) -> float:
    """max(threads x static instructions, cost.flops, bytes / 4), bytes defaulting to buffers."""
    threads = math.prod(kernel.grid) * math.prod(kernel.block)
    moved = kernel.cost_bytes
    if moved is None:
        moved = sum(math.prod(kernel.shapes[a.name]) * a.dtype.bytes for a in kernel.args if a.is_pointer)
    return max(threads * static, kernel.cost_flops or 0, moved / 4)


def scaled(spec: KernelSpec, budget: float, sizes: dict[str, int] | None = None) -> ScaledLaunch:
    return scale_to_budget(bind(spec, ARCH, sizes), static_count(spec), budget)


def check_invariants(spec: KernelSpec, launch: ScaledLaunch, sizes: dict[str, int] | None = None) -> None:
    asked = bind(spec, ARCH, sizes)
    again = bind(spec, ARCH, launch.sizes)  # the spec's own rules accept the chosen sizes
    assert (again.grid, again.block, again.shared_bytes) == (
        launch.kernel.grid,
        launch.kernel.block,
        launch.kernel.shared_bytes,
    )
    assert again.block == asked.block and again.shared_bytes == asked.shared_bytes
    assert launch.spec_sizes == asked.sizes
    for name, value in launch.sizes.items():
        original = asked.sizes[name]
        assert value <= original
        if value != original:
            assert value % ALIGNMENT == original % ALIGNMENT and value >= ALIGNMENT, (name, value)
    static = static_count(spec)
    assert launch.work == law(launch.kernel, static)
    assert launch.spec_work == law(asked, static)
    assert launch.work <= launch.spec_work


@pytest.mark.parametrize("toml", SPECS, ids=[p.stem for p in SPECS])
@pytest.mark.parametrize("budget", [WORK_BUDGET, 1e4])
def test_every_spec_scales_to_sizes_it_accepts(toml: Path, budget: float) -> None:
    spec = prepare_spec(load_spec(toml), ARCH).spec  # CUDA source: its PTX for the target
    launch = scaled(spec, budget)
    check_invariants(spec, launch)
    if launch.spec_work <= budget:
        assert not launch.scaled and launch.fits
    assert launch.scaled == (launch.sizes != spec.sizes)


def test_sgemm_at_4096_cubed_shrinks_to_tiles_the_kernel_can_run() -> None:
    spec = load_spec(ROOT / "datasets" / "kernels" / "sgemm.toml")
    big = {"m": 4096, "n": 4096, "k": 4096}
    launch = scaled(spec, WORK_BUDGET, big)
    check_invariants(spec, launch, big)
    m, n, k = (launch.sizes[x] for x in "mnk")
    # sgemm.toml: m and n multiples of 64, k a positive multiple of 16.
    assert m % 64 == 0 and n % 64 == 0 and k % 16 == 0 and k > 0
    assert launch.kernel.grid == (n // 64, m // 64, 1)
    assert 2 * m * n * k <= WORK_BUDGET < 2 * 4096**3
    assert launch.scaled and launch.fits
    assert "scaled down from m=4096, n=4096, k=4096" in launch.describe()
    assert launch.as_dict()["sizes"] == {"m": m, "n": n, "k": k}


def test_vadd_keeps_its_ragged_last_block() -> None:
    spec = load_spec(ROOT / "datasets" / "kernels" / "vadd.toml")
    launch = scaled(spec, WORK_BUDGET)
    n = launch.sizes["n"]
    # vadd.toml: n = 2**24 + 3 leaves 3 threads in the last block of 256 (the guard's case).
    assert n < spec.sizes["n"] and n % 256 == 3
    assert launch.kernel.grid[0] == -(-n // 256)
    assert launch.fits


def test_an_unlimited_budget_keeps_the_sizes() -> None:
    spec = load_spec(ROOT / "datasets" / "kernels" / "sgemm.toml")
    launch = scaled(spec, math.inf, {"m": 4096, "n": 4096, "k": 4096})
    assert launch.sizes == {"m": 4096, "n": 4096, "k": 4096} and not launch.scaled
    assert launch.describe().startswith("sizes m=4096, n=4096, k=4096: estimated work")


def variant(tmp_path: Path, sizes: str, grid: str, block: str) -> KernelSpec:
    """vadd.toml with other sizes and launch lines (its PTX copied beside it), without its other
    check sizes (the new launch need not bind there)."""
    source = ROOT / "datasets" / "kernels"
    (tmp_path / "vadd.ptx").write_text((source / "vadd.ptx").read_text())
    lines = []
    for line in (source / "vadd.toml").read_text().splitlines():
        if line.startswith("n = "):
            line = sizes
        elif line.startswith("grid = "):
            line = f"grid = {grid}"
        elif line.startswith("block = "):
            line = f"block = {block}"
        elif line.startswith("sizes = "):
            continue
        lines.append(line)
    (tmp_path / "v.toml").write_text("\n".join(lines) + "\n")
    return load_spec(tmp_path / "v.toml")


def test_the_spec_sizes_are_kept_when_nothing_smaller_binds(tmp_path: Path) -> None:
    # n / 1000 must be an integer; no smaller n with n's remainder modulo 256 is a multiple of 1000.
    spec = variant(tmp_path, "n = 3000", '["n / 1000"]', "[256]")
    launch = scaled(spec, 1.0)
    assert launch.sizes == {"n": 3000} and not launch.scaled and not launch.fits
    assert "over (no smaller sizes bind)" in launch.describe()


def test_a_candidate_that_does_not_bind_is_passed_over(tmp_path: Path) -> None:
    # n / 3 must be an integer: neither the halved n (1720) nor the next value up with the same
    # remainder modulo 256 (1976) is a multiple of 3; 2232 is.
    spec = variant(tmp_path, "n = 3768", '["n / 3"]', "[1]")
    launch = scaled(spec, 1.0)
    check_invariants(spec, launch)
    assert launch.scaled and launch.sizes["n"] % 3 == 0 and launch.sizes["n"] <= 2232


def test_the_block_never_changes(tmp_path: Path) -> None:
    spec = variant(tmp_path, "n = 1048576\nbs = 512", '["ceildiv(n, bs)"]', '["bs"]')
    launch = scaled(spec, 1e5)
    check_invariants(spec, launch)
    assert launch.sizes["bs"] == 512 and launch.kernel.block == (512, 1, 1)
    assert launch.sizes["n"] < 1048576
