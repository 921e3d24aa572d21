"""On a GPU with TMA (sm_90 and later): the raw shared-memory bytes a tensor copy leaves, dumped by
tests/model/oracle/tma.py's kernel, equal the oracle's and the model's for every case there
(edges, every swizzle, element strides, rank 3), and a box at a 512-byte offset of a 1024-aligned
buffer is swizzled on the shared address's own bits, as the model reads it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.launch import KernelLaunch, check, kernel_args, upload_arrays
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.tensormap import TensorMap
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.oracle.tma import CASES, box_bytes, case, dump_args, dump_ptx

DEVICE = current_device()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        DEVICE is None or DEVICE.compute_capability < (9, 0), reason="no CUDA device with TMA"
    ),
]
_DTYPES = {"float32": "f32", "float16": "f16", "uint8": "u8"}


def _spec(tmp: Path, src: np.ndarray, tm: TensorMap, coords: tuple[int, ...], offset: int) -> Path:
    (tmp / "dump.ptx").write_text(dump_ptx(tm.rank, offset=offset))
    box = ", ".join(str(b) for b in reversed(tm.box))
    strides = ", ".join(str(s) for s in reversed(tm.element_strides))
    scalars = "".join(
        f'\n[[args]]\nname = "c{d}"\nrole = "scalar"\ndtype = "s32"\nvalue = {c}\n'
        for d, c in enumerate(coords)
    )
    (tmp / "dump.toml").write_text(f"""
[kernel]
ptx = "dump.ptx"
entry = "tma_dump"

[launch]
grid = [1]
block = [128]

[[args]]
name = "tmap"
role = "in"
dtype = "{_DTYPES[src.dtype.name]}"
shape = [{", ".join(map(str, src.shape))}]
init = "randint(0, 100)"
tensormap = {{ box = [{box}], swizzle = {tm.swizzle}, element_strides = [{strides}] }}

[[args]]
name = "out"
role = "out"
dtype = "u32"
shape = [{tm.shared_bytes // 4}]

[[args]]
name = "nbytes"
role = "scalar"
dtype = "u32"
value = {tm.box_bytes}

[[args]]
name = "span"
role = "scalar"
dtype = "u32"
value = {tm.shared_bytes}
{scalars}""")
    return tmp / "dump.toml"


def _on_gpu(spec_path: Path, src: np.ndarray) -> np.ndarray:
    from cuda.bindings import driver

    assert DEVICE is not None
    kernel = bind(load_spec(spec_path), "sm_90a", {})
    cubin = assemble(kernel.spec.ptx, "sm_90a", discover(), lineinfo=False).cubin
    params = prepare(kernel.spec).entry(kernel.entry).params
    launch = KernelLaunch.load(cubin, kernel.entry, kernel, DEVICE.ordinal)
    arrays = {"tmap": src, "out": np.zeros(kernel.shapes["out"], np.uint32)}
    buffers = upload_arrays(arrays)
    launch.set_args(kernel_args(kernel, params, buffers.pointers()))
    launch.enqueue()
    launch.sync()
    got = np.empty_like(arrays["out"])
    check(driver.cuMemcpyDtoH(got.ctypes.data, buffers.pointers()["out"], got.nbytes), "copying out back")
    buffers.free()
    return got.view(np.uint8)


def _on_model(src: np.ndarray, tm: TensorMap, coords: tuple[int, ...], offset: int) -> np.ndarray:
    mod = parse(dump_ptx(tm.rank, offset=offset))
    got = interpret(mod, "tma_dump", ptx_machine("sm_90a"), (1, 128, 0), dump_args(src, tm, coords))
    return got.outputs["out"].view(np.uint8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_gpu_lands_each_box_as_the_oracle_and_the_model_say(name: str, tmp_path: Path) -> None:
    src, tm, coords = case(name)
    got = _on_gpu(_spec(tmp_path, src, tm, coords, 0), src)
    assert np.array_equal(got, box_bytes(src, tm, coords))
    assert np.array_equal(got, _on_model(src, tm, coords, 0))


@pytest.mark.parametrize("offset", [128, 512])
def test_the_swizzle_follows_the_shared_address(offset: int, tmp_path: Path) -> None:
    src, tm, coords = case("f16_swizzle_128")
    got = _on_gpu(_spec(tmp_path, src, tm, coords, offset), src)
    assert np.array_equal(got, _on_model(src, tm, coords, offset))
