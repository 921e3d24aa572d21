"""The torch side of the seeded inputs (the same bits as the numpy arrays) and the poison pattern."""

from __future__ import annotations

import pickle

import pytest
import torch

from karyamorph.harness.gpu.inputs import (
    as_tensor,
    host_bits,
    make_inputs,
    make_tensor,
    poison_,
    poison_mask,
    torch_dtype,
)
from karyamorph.kernel import inputs as arrays
from karyamorph.kernel.bound import bind
from karyamorph.kernel.spec import DTYPES
from tests.kernel.test_inputs import spec_with


def test_every_dtype_maps_to_a_torch_dtype_of_its_width() -> None:
    for dtype in DTYPES.values():
        assert torch_dtype(dtype).itemsize == dtype.bytes
        assert torch_dtype(dtype).is_floating_point == (dtype.kind == "f")


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_tensors_hold_the_numpy_inputs_bit_for_bit(name: str) -> None:
    init = "randn" if DTYPES[name].kind == "f" else "rand"
    spec = spec_with([{"name": "x", "role": "in", "dtype": name, "shape": ["n"], "init": init}])
    tensor = make_inputs(bind(spec), 9)["x"]
    assert tensor.dtype == torch_dtype(DTYPES[name])
    raw = tensor.view(torch.uint8).numpy().tobytes()
    assert raw == arrays.make_inputs(bind(spec), 9)["x"].tobytes()
    assert torch.equal(make_tensor(bind(spec), spec.args[0], 9), tensor)


@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "f64"])
def test_float_poison_is_nan_and_is_recognised_bit_for_bit(name: str) -> None:
    t = torch.ones(8, dtype=torch_dtype(DTYPES[name]))
    poison_(t)
    assert bool(torch.isnan(t).all())
    assert bool(poison_mask(t).all())
    t[3] = 2.0
    assert poison_mask(t).tolist() == [True] * 3 + [False] + [True] * 4


def test_a_nan_with_another_payload_is_not_the_poison() -> None:
    other_nan = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)
    assert bool(torch.isnan(other_nan).all())
    assert not bool(poison_mask(other_nan).any())


@pytest.mark.parametrize(("name", "value"), [("s32", -1), ("u8", 255), ("u32", 2**32 - 1), ("s64", -1)])
def test_integer_poison_is_all_ones(name: str, value: int) -> None:
    t = torch.zeros(4, dtype=torch_dtype(DTYPES[name]))
    poison_(t)
    assert t.tolist() == [value] * 4
    assert bool(poison_mask(t).all())
    t[0] = 7
    assert poison_mask(t).tolist() == [False, True, True, True]


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_outputs_cross_a_pipe_as_numpy_bits_and_come_back_bit_for_bit(name: str) -> None:
    """Pickled torch tensors of the unsigned types do not load again (torch 2.11, 2.13): the worker
    sends numpy bits instead, which pickle like any array."""
    init = "randn" if DTYPES[name].kind == "f" else "rand"
    spec = spec_with([{"name": "x", "role": "in", "dtype": name, "shape": ["n"], "init": init}])
    tensor = make_inputs(bind(spec), 3)["x"]
    sent = pickle.loads(pickle.dumps(host_bits(tensor, DTYPES[name]), protocol=pickle.HIGHEST_PROTOCOL))
    back = as_tensor(sent, DTYPES[name])
    assert back.dtype == tensor.dtype
    assert back.view(torch.uint8).numpy().tobytes() == tensor.view(torch.uint8).numpy().tobytes()
