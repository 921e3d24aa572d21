"""Tensor copies (``cp.async.bulk.tensor``, tile mode) in the interpreter, against the element-by-
element oracle of tests/model/oracle/tma.py: boxes inside, over and before the tensor's edges,
every swizzle, element strides, rank 3; stores that write only inside the tensor; and the faults
a kernel can make (a misaligned box, a copy through no map, a wrong rank, a byte count that never
completes, a store of unfenced shared writes)."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.kernel.tensormap import TensorMap, TensorMapArg, TensorMapError
from karyamorph.model.interp.asyncproxy import DeadlockError
from karyamorph.model.interp.errors import LaunchError, MemoryAccessError, ModelLimitError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.proxyorder import ProxyOrderError
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.oracle.tensor_copy import store_ptx
from tests.model.oracle.tma import CASES, box_bytes, case, dump_args, dump_ptx

M = ptx_machine("sm_90a")


def _launch(
    src: np.ndarray,
    tm: TensorMap,
    coords: tuple[int, ...],
    *,
    ptx: str | None = None,
    nbytes: int | None = None,
    span: int | None = None,
    randomize: bool = False,
):  # type: ignore[no-untyped-def]
    """The dump kernel of ``tm.rank`` (or ``ptx``) on one CTA: the box at ``coords``, the mbarrier
    armed for ``nbytes`` (default: the box's), ``span`` bytes dumped (default: the box's span)."""
    args = dump_args(src, tm, coords, nbytes=nbytes, span=span)
    return interpret(
        parse(ptx or dump_ptx(tm.rank)), "tma_dump", M, (1, 128, 0), args, randomize_order=randomize
    )


def _dump(src: np.ndarray, tm: TensorMap, coords: tuple[int, ...], offset: int = 0) -> np.ndarray:
    out: np.ndarray = _launch(src, tm, coords, ptx=dump_ptx(tm.rank, offset=offset)).outputs["out"]
    return out.view(np.uint8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_box_lands_as_the_oracle_says(name: str) -> None:
    src, tm, coords = case(name)
    want = box_bytes(src, tm, coords)
    assert np.array_equal(_dump(src, tm, coords), want)


def test_the_oracle_cases_cover_what_they_claim() -> None:
    # Zeros where a box hangs over an edge or starts before one, and a swizzle that moves bytes.
    src, tm, coords = case("f32_over_both_edges")
    assert (box_bytes(src, tm, coords) == 0).any()
    src, tm, coords = case("f32_before_both_starts")
    plain = box_bytes(src, tm, coords)
    assert (plain[:4] == 0).all() and plain.any()
    src, tm, coords = case("f16_swizzle_128")
    flat = TensorMap(tm.elem_bytes, tm.dims, tm.strides, tm.box, tm.element_strides, 0)
    assert not np.array_equal(box_bytes(src, tm, coords), box_bytes(src, flat, coords))


STORE = "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"


def test_a_store_writes_the_box_inside_the_tensor_only() -> None:
    dst = np.full((10, 20), 7, np.uint32)
    tm = TensorMap.of_array(dst.shape, 4, (8, 16), is_float=False)
    args = {"tmap": TensorMapArg(dst, tm), "c0": 12, "c1": 5}  # columns 12..27, rows 5..12
    got = interpret(parse(store_ptx(STORE, 2)), "tma_store", M, (1, 128, 0), args).outputs["tmap"]
    want = np.full((10, 20), 7, np.uint32)
    box = (np.arange(128, dtype=np.uint32) + 1000).reshape(8, 16)
    want[5:10, 12:20] = box[:5, :8]
    assert np.array_equal(got, want)


def test_a_store_of_unfenced_shared_writes_is_refuted() -> None:
    dst = np.zeros((8, 16), np.uint32)
    tm = TensorMap.of_array(dst.shape, 4, (8, 16), is_float=False)
    with pytest.raises(ProxyOrderError, match=r"fence\.proxy\.async"):
        interpret(parse(store_ptx(STORE, 2, fence=False)), "tma_store", M, (1, 128, 0),
                  {"tmap": TensorMapArg(dst, tm), "c0": 0, "c1": 0})  # fmt: skip


def test_a_box_not_128_byte_aligned_in_shared_memory_is_a_fault() -> None:
    src, tm, coords = case("f32_plain_inside")
    with pytest.raises(MemoryAccessError, match="not 128-byte aligned"):
        _dump(src, tm, coords, offset=64)


def test_a_byte_count_the_copy_never_completes_hangs() -> None:
    # expect_tx of more bytes than the box: the phase never completes; in the randomized order
    # every warp takes its turn and none proceeds, the kernel's deadlock.
    src, tm, coords = case("f32_plain_inside")
    with pytest.raises((DeadlockError, ModelLimitError), match="deadlock"):
        _launch(src, tm, coords, nbytes=tm.box_bytes + 16, span=0, randomize=True)


def test_a_copy_through_a_map_the_launch_did_not_give_is_refused() -> None:
    src, tm, _ = case("f32_plain_inside")
    moved = "cvta.param.u64 %rd2, %rd1;\n    add.u64 %rd2, %rd2, 128;"
    ptx = dump_ptx(2).replace("cvta.param.u64 %rd2, %rd1;", moved)
    with pytest.raises(ModelLimitError, match="no tensor map"):
        _launch(src, tm, (0, 0), ptx=ptx, span=0)


def test_a_copy_of_another_rank_than_its_map_is_an_error() -> None:
    src, tm, _ = case("f32_rank3")
    with pytest.raises(Exception, match="rank-3 map"):
        _launch(src, tm, (0, 0), ptx=dump_ptx(2), span=0)


def test_nan_fill_is_refused_as_unmodeled() -> None:
    src = np.zeros((8, 16), np.float32)
    tm = TensorMap.of_array(src.shape, 4, (8, 16), oob="nan")
    with pytest.raises(ModelLimitError, match="NaN out-of-bounds fill"):
        _launch(src, tm, (4, 0), span=0)


def test_an_innermost_coordinate_off_16_bytes_is_a_fault() -> None:
    # Measured on an H100: x = -5 of f32 (-20 bytes) and x = 100 of u8 stop the kernel with an
    # illegal instruction; -16 and -32 bytes copy.
    src, tm, _ = case("f32_plain_inside")
    with pytest.raises(MemoryAccessError, match="innermost coordinate -5 is -20 bytes"):
        _launch(src, tm, (-5, 0), span=0)
    assert _dump(src, tm, (-4, 0)).any()


def test_a_map_for_a_parameter_of_another_kind_is_a_launch_error() -> None:
    src, tm, _ = case("f32_plain_inside")
    ptx = dump_ptx(2).replace(".param .align 64 .b8 tmap[128]", ".param .u32 tmap")
    with pytest.raises(LaunchError, match=r"not \.b8 \[128\]"):
        _launch(src, tm, (0, 0), ptx=ptx, span=0)


def test_a_multicast_to_its_own_cta_alone_lands_as_a_plain_copy() -> None:
    src, tm, coords = case("f16_swizzle_128")
    got = _launch(src, tm, coords, ptx=dump_ptx(tm.rank, multicast=True)).outputs["out"]
    assert np.array_equal(got.view(np.uint8), box_bytes(src, tm, coords))


def test_a_multicast_mask_naming_a_rank_outside_the_cluster_is_a_fault() -> None:
    src, tm, coords = case("f32_plain_inside")
    ptx = dump_ptx(tm.rank, multicast=True).replace("mov.u16 %rs1, 1;", "mov.u16 %rs1, 3;")
    with pytest.raises(MemoryAccessError, match=r"ctaMask 0x0003 names a rank outside the cluster of 1"):
        _launch(src, tm, coords, ptx=ptx)


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"box": (8, 300)}, "1 to 256"),
        ({"box": (8, 6)}, "multiple of 16"),
        ({"box": (8, 64), "swizzle": 128}, "wider than the 128-byte swizzle"),
        ({"box": (8, 16), "swizzle": 48}, "swizzle 48"),
        ({"box": (8, 16), "element_strides": (9, 1)}, "1 to 8"),
    ],
)
def test_the_drivers_rules_name_the_field(kw: dict[str, object], words: str) -> None:
    with pytest.raises(TensorMapError, match=words):
        TensorMap.of_array((64, 256), 4, **kw)  # type: ignore[arg-type]
