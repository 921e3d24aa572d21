"""On a GPU: `model validate` through the isolated GPU process, against the numpy domain (and the
interpreter, for the fragment, mbarrier and tensor-copy kernels)."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.validation.mbarrier_forms import mbarrier_target
from karyamorph.validation.recording import read_recording, replay, write_recording
from karyamorph.validation.tensor_copy_forms import tensor_copy_target
from karyamorph.validation.validate import run_on_device


@pytest.mark.gpu
# bfe bfi brev popc xor; shfl vote; the tensor cores' mma.sync fragment forms (within their bound);
# mbarrier phase sequences (sm_90 and later: which phases completed, noComplete pending counts);
# tensor copies (sm_90 and later: the box's shared bytes, out-of-bounds zeros and swizzle included)
@pytest.mark.parametrize(
    "pattern", ["[bpx]*", "[sv]*.sync*", "mma.sync*", "mbarrier*", "cp.async.bulk.tensor*"]
)
def test_forms_agree_bit_for_bit_on_the_gpu(pattern: str, tmp_path: Path) -> None:
    device = current_device()
    if device is None:
        pytest.skip("no CUDA device")
    if pattern == "mbarrier*" and mbarrier_target(device.arch) is None:
        pytest.skip(f"mbarrier phase-sequence kernels need sm_90 or later; the device is {device.arch}")
    if pattern == "cp.async.bulk.tensor*" and tensor_copy_target(device.arch) is None:
        pytest.skip(f"tensor copies (TMA) need sm_90 or later; the device is {device.arch}")
    machine = ptx_machine(device.arch)
    report = run_on_device(machine, None, only=pattern, samples=64)
    assert report.results, f"no form of {device.arch} matches {pattern!r}"
    assert report.arch == device.arch and report.environment["device_name"] == device.name
    assert report.environment["cuda_driver"] and report.environment["ptxas"]
    ran = [r for r in report.results if r.status in ("pass", "fail")]
    assert len(ran) >= 8 and report.failed == [], [d.as_dict() for d in report.disagreements[:5]]
    write_recording(report, tmp_path)
    again = replay(read_recording(tmp_path), machine)
    assert again.failed == [] and len(again.results) == len(ran)
