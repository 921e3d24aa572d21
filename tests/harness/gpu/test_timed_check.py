"""The checks of what timed launches wrote, with no GPU: the timing stage's guard drives the model
interpreter through a measurement's launches (warm-up, timed, the repeat) on CPU tensors, its
module's globals kept from launch to launch as a loaded module keeps them on a GPU. The gaming
kernels of tests/harness/gaming (CUDA C by nvcc) are caught with the words the timing stage
prints; the example kernels pass. On the GPU: tests/harness/test_gaming_gpu.py.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from karyamorph.harness.gpu.inputs import make_inputs, poison_
from karyamorph.harness.gpu.timed_check import LaunchGuard, TimedCheck, checked_samples, rehearse
from karyamorph.harness.stages.base import Context
from karyamorph.harness.stages.correctness import other_sizes
from karyamorph.harness.stages.timing import beyond_peak
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.exactness import nondeterministic_reasons
from karyamorph.model.ptx.ptx_machine import ptx_machine

ROOT = Path(__file__).resolve().parents[3]
GAMING = Path(__file__).resolve().parents[1] / "gaming"
EXAMPLES = ROOT / "datasets" / "kernels"


class ModelKernel:
    """One kernel launched again and again on the interpreter, writing into ``tensors``."""

    def __init__(self, kernel: BoundKernel, tensors: Mapping[str, torch.Tensor]) -> None:
        self.kernel = kernel
        self.module = prepare(kernel.spec)
        self.machine = ptx_machine()
        self.tensors = tensors
        self.variables: dict[str, np.ndarray] | None = None

    def __call__(self) -> None:
        k = self.kernel
        # Spec arguments bind to the .entry parameters by position, as on the GPU.
        params = [p.name for p in self.module.entry(k.entry).params]
        args: dict[str, Any] = {p: self.tensors[a.name].numpy() if a.is_pointer else k.scalars[a.name]
                                for a, p in zip(k.args, params, strict=True)}  # fmt: skip
        result = interpret(self.module, k.entry, self.machine, k.launch, args, variables=self.variables)
        self.variables = result.variables
        for arg, param in zip(k.args, params, strict=True):
            if arg.role in ("out", "inout"):
                self.tensors[arg.name].copy_(torch.from_numpy(np.asarray(result.outputs[param])))


def rehearsed(path: Path, sizes: Mapping[str, int], *, samples: int = 24, seed: int = 3) -> TimedCheck:
    kernel = bind(load_spec(path), "sm_80", sizes)
    tensors = {name: t.clone() for name, t in make_inputs(kernel, seed).items()}
    for arg in kernel.args:
        if arg.role == "out":
            poison_(tensors[arg.name])
    guard = LaunchGuard.open(kernel, tensors, None, seed=seed, swaps=16, max_samples=samples,
                             nondeterministic=nondeterministic_reasons(prepare(kernel.spec)))  # fmt: skip
    return rehearse(guard, ModelKernel(kernel, tensors), warmups=3, samples=samples)


def test_checked_samples_are_the_first_and_one_in_every_doubling() -> None:
    chosen = checked_samples(random.Random(1), 2000)
    assert 0 in chosen and all(0 <= s < 2000 for s in chosen)
    low = 1
    while low < 2000:
        assert len([s for s in chosen if low <= s < min(2 * low, 2000)]) == 1
        low *= 2
    draws = {checked_samples(random.Random(seed), 2000) for seed in range(20)}
    assert len(draws) > 10  # a kernel cannot know which launches are looked at


@pytest.mark.parametrize("name", ["vadd", "scale", "transpose", "reduce_sum"])
def test_honest_examples_pass_every_check(name: str) -> None:
    spec = load_spec(EXAMPLES / f"{name}.toml")
    check = rehearsed(EXAMPLES / f"{name}.toml", spec.check_sizes[0])
    assert check.passed, check.problems()
    assert check.repeat is not None and check.repeat.bitwise and check.repeat.passed
    assert check.checked[0].launch == 1 and len(check.checked) >= 5
    assert check.launches == 3 + 24 + 1 and "match the reference" in check.summary()
    swappable = [a for a in spec.args if a.role in ("in", "inout") and a.init.kind in ("randn", "rand")]
    assert check.swapped_elements == 32 * len(swappable)


CAUGHT = {
    "skip_after_warmup": "left outputs unwritten",
    "pointer_cache": "left outputs unwritten",
    "every_other": "left outputs unwritten",
    "stale_buffer": "left outputs unwritten",
    "drift": "differs from the reference",
    "ulp_drift": "had the same inputs but differ (bit for bit)",
    "bf16_inputs": "differs from the reference",
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_a_gaming_kernel_is_caught_on_the_model(name: str) -> None:
    check = rehearsed(GAMING / f"{name}.toml", {"n": 4099})
    problems = check.problems()
    assert not check.passed and any(CAUGHT[name] in p for p in problems), problems


def test_a_skipped_launch_is_named_with_its_number() -> None:
    check = rehearsed(GAMING / "skip_after_warmup.toml", {"n": 4099})
    # Launches 1-4 compute (three warm-ups and the first timed one); every later one skips.
    assert sorted({u.launch for u in check.unwritten}) == list(range(5, check.launches + 1))
    assert all(u.elements == 4099 and u.name == "c" for u in check.unwritten)
    assert check.problems()[0].startswith(f"{check.launches - 4} of {check.launches} launches")


def test_a_cache_keyed_on_a_few_inputs_misses_the_exchanged_elements() -> None:
    # The stash is copied when n and four inputs match the last launch: the elements exchanged
    # since the stash was made (32 in each of a and b before every timed launch; never the four
    # of the key, at this size and seed) come out stale.
    check = rehearsed(GAMING / "memo_sparse.toml", {"n": 4099}, samples=8)  # its stash is 128 MiB
    wrong = [c for c in check.checked if not c.passed]
    assert wrong and [c.sample for c in wrong] == [c.sample for c in check.checked if c.sample is not None]
    assert all(0 < c.outputs[0].mismatches <= 64 * (c.sample + 1) for c in wrong if c.sample is not None)


def test_other_sizes_bind_over_the_runs_own_sizes() -> None:
    spec = load_spec(GAMING / "fixed_size.toml")
    context = Context(kernel=bind(spec, "sm_80", {"n": 2048}), arch=Arch.parse("sm_80"))
    (other,) = other_sizes(context)
    assert other.sizes == {"n": 4099} and other.grid == (5, 1, 1)
    same = Context(kernel=bind(spec, "sm_80", {"n": 4099}), arch=Arch.parse("sm_80"))
    assert other_sizes(same) == []


def test_a_time_beyond_the_devices_peaks_is_said() -> None:
    said = beyond_peak({"bandwidth_fraction_of_peak": 1.3, "peak_dram_gbps": 4800.0,
                        "fp32_fraction_of_peak": 0.4, "peak_fp32_gflops": 60000.0})  # fmt: skip
    assert len(said) == 1 and "130% of 4800" in said[0] and "DRAM bandwidth" in said[0]
    assert beyond_peak({"bandwidth_fraction_of_peak": 0.9, "peak_dram_gbps": 4800.0}) == []
