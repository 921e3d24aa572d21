"""A spec's tensor map argument on the harness's model side: the interpreter is given the buffer's
array with its map under the parameter's name, the z3 checks say they do not cover it, and the
spec file a GPU worker job points to keeps the table."""

from __future__ import annotations

import dataclasses
import pickle
import tomllib
from pathlib import Path

import numpy as np

from karyamorph.harness.gpu.worker import spec_toml
from karyamorph.harness.model_run import model_arguments
from karyamorph.harness.stages.model import PROPERTIES, check_spec
from karyamorph.kernel.bound import bind
from karyamorph.kernel.inputs import make_inputs
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import LaunchRanges
from karyamorph.kernel.tensormap import TensorMap, TensorMapArg

SPEC = Path(__file__).parent / "gpu" / "data" / "tma_tile.toml"


def test_the_model_gets_the_array_and_its_map_for_the_tensor_map_parameter() -> None:
    kernel = bind(load_spec(SPEC))
    params = [p.name for p in prepare(kernel.spec).entry(kernel.entry).params]
    own = make_inputs(kernel, seed=3)
    arrays = model_arguments(kernel, params, own)
    assert list(arrays) == ["tma_tile_param_0", "tma_tile_param_1"]
    src = arrays["tma_tile_param_0"]
    assert isinstance(src, TensorMapArg)
    assert src.array is own["src"] and src.array.shape == (20, 40) and src.array.dtype == np.float32
    assert src.map == TensorMap(4, (40, 20), (160,), (16, 8), (1, 1), swizzle=0, oob="zero", is_float=True)
    assert src.map.box_bytes == 512  # what the kernel's expect_tx counts
    assert arrays["tma_tile_param_1"] is own["out"]  # a plain buffer stays its array


def test_the_map_follows_the_run_sizes() -> None:
    kernel = bind(load_spec(SPEC), sizes={"m": 3, "n": 4})
    params = [p.name for p in prepare(kernel.spec).entry(kernel.entry).params]
    src = model_arguments(kernel, params, make_inputs(kernel, seed=0))["tma_tile_param_0"]
    assert src.map.dims == (4, 3) and src.map.strides == (16,) and src.array.shape == (3, 4)


def test_the_checks_follow_the_map() -> None:
    kernel = bind(load_spec(SPEC))
    module = prepare(kernel.spec)
    verdicts = check_spec(kernel, module)
    assert [v.property for v in verdicts] == list(PROPERTIES)
    # the spin on the mbarrier is unrolled: proved up to k
    assert {v.verdict for v in verdicts} == {"proved-up-to-k"}, verdicts
    # a launch of mode any takes the spec's map too; past the tile's 128 threads, the kernel
    # reads outside its shared memory
    spec = dataclasses.replace(kernel.spec, check_launch=LaunchRanges("any", (128, 256), 128, None))
    verdicts = check_spec(bind(spec), module, properties=("bounds",))
    assert verdicts[0].verdict == "refuted" and verdicts[0].witness is not None, verdicts
    assert verdicts[0].witness.launch is not None and verdicts[0].witness.launch[1] == (256, 1, 1)


def test_the_worker_job_spec_keeps_the_tensormap() -> None:
    spec = load_spec(SPEC)
    d = tomllib.loads(SPEC.read_text())
    d["args"][0]["tensormap"] = {"box": ["8", 16], "swizzle": 64, "oob": "nan", "element_strides": [1, 2]}
    varied = spec_from_dict(d, SPEC.parent, SPEC.name)
    for s in (spec, varied):
        text = spec_toml(s)
        again = spec_from_dict(tomllib.loads(text), SPEC.parent, SPEC.name)
        assert again.args == s.args


def test_a_bound_kernel_with_its_maps_crosses_the_worker_pipe() -> None:
    kernel = bind(load_spec(SPEC))
    again = pickle.loads(pickle.dumps(kernel))
    assert again.tensormaps == kernel.tensormaps and again.spec.args == kernel.spec.args
