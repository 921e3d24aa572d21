"""The block-scaled ``tcgen05.mma.cta_group::1`` (``kind::mxf8f6f4``, ``::mxf4``, ``::mxf4nvf4``)
and ``tcgen05.cp`` (sm_100a): tiles interpreted against numpy references built from the PTX ISA's
statements (tests/model/oracle/tcgen05_scaled.py and tcgen05_copy.py: the descriptor fields, the
scale formats and the element formats written there, not taken from the model), scales at their
extremes, every form assembled by ptxas, and what the model refuses: descriptors the ISA does not
allow and scale factors not duplicated over the lane partitions as the kernel's fault, valid forms
it does not run as its limit."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ModelLimitError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.proxyorder import ProxyOrderError
from karyamorph.model.interp.tensormem import TensorMemoryError
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.ptx.tcgen05_copy import TCGEN05_COPY
from karyamorph.model.ptx.tcgen05_scaled import TCGEN05_SCALED, ScaledDesc
from karyamorph.model.semantics.decode import UnmodeledError, unmodeled
from tests.model.oracle.runner import all_forms
from tests.model.oracle.tcgen05_copy import BYTES, copy_kernel, run_copy
from tests.model.oracle.tcgen05_scaled import (
    CASES,
    M,
    idesc,
    kernel,
    launch,
    operands,
    reference,
    run_case,
    sf_atoms,
    ue4m3,
    ue8m0,
)

MACHINE = ptx_machine("sm_100a")


def _toolchain():  # type: ignore[no-untyped-def]
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


SCALED_FORMS = [f for i in TCGEN05_SCALED for f in all_forms(i)]
COPY_FORMS = [f for i in TCGEN05_COPY for f in all_forms(i)]


@pytest.mark.parametrize("form", SCALED_FORMS, ids=str)
def test_every_block_scaled_form_assembles_with_ptxas_for_sm_100a(form) -> None:  # type: ignore[no-untyped-def]
    kind, vec = form.mod("kind"), form.mod("scale_vec") or ""
    ptx = kernel(kind, vec, 32, idesc(kind, 32, "e4m3" if kind == "kind::mxf8f6f4" else "e2m1"))
    assert assemble(ptx, "sm_100a", _toolchain(), lineinfo=False).cubin


@pytest.mark.parametrize("form", COPY_FORMS, ids=str)
def test_every_copy_form_assembles_with_ptxas_for_sm_100a(form) -> None:  # type: ignore[no-untyped-def]
    suffix = form.text.split("cta_group::1.")[1]
    assert assemble(copy_kernel(suffix), "sm_100a", _toolchain(), lineinfo=False).cubin


@pytest.mark.parametrize(("kind", "vec"), list(CASES))
def test_each_kind_matches_numpy(kind: str, vec: str) -> None:
    for k, (n, a, b, small, ids) in enumerate(CASES[(kind, vec)]):
        assert run_case(MACHINE, kind, vec, n, a, b, small, ids, seed=k, accumulate=k != 1) == []


def test_n_256_takes_b_scales_from_eight_columns() -> None:
    # Columns 128 .. 255 of B find their scales in the second atom (TMEM columns + 4 .. + 7).
    assert (
        run_case(MACHINE, "kind::mxf8f6f4", "scale_vec::1X", 256, "e5m2", "e2m1", sf_ids=(3, 2), seed=5) == []
    )


def test_a_randomized_schedule_gives_the_same_tile() -> None:
    assert run_case(MACHINE, "kind::mxf4nvf4", "scale_vec::4X", 32, ue4m3_scales=True, seed=3, order=9) == []


def _extremes(kind: str, vec: str, fmt: str, a_codes: dict[int, int], b_codes: dict[int, int],
              base: int) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """D from the model and the reference with scale codes ``base`` but for the rows of A and
    columns of B given."""
    n, blocks = 16, {"scale_vec::1X": 1, "scale_vec::2X": 2, "scale_vec::4X": 4}[vec]
    rng = np.random.default_rng(7)
    a_bits, b_bits, a_vals, b_vals, c = operands(kind, n, "e2m1", "e2m1", 7)
    sa_codes, sb_codes = np.full((M, blocks), base, np.uint8), np.full((n, blocks), base, np.uint8)
    for row, code in a_codes.items():
        sa_codes[row, 0] = code
    for col, code in b_codes.items():
        sb_codes[col, -1] = code
    value = np.vectorize(ue8m0 if fmt == "ue8m0" else ue4m3, otypes=[np.float64])
    sf = np.concatenate([sf_atoms(sa_codes, 0, rng), sf_atoms(sb_codes, 0, rng)])
    word = idesc(kind, n, "e2m1", sfa=0, sfb=0, ue4m3=fmt == "ue4m3")
    got = launch(MACHINE, kernel(kind, vec, n, word), a_bits, b_bits, c, sf).outputs["out"]
    return got, reference(a_vals, b_vals, value(sa_codes), value(sb_codes), c)


def test_ue8m0_extremes_zero_254_and_nan() -> None:
    # 0 is 2**-127 (not zero), 254 is 2**127 (squared: past f32's range), 255 is NaN.
    got, want = _extremes("kind::mxf4", "scale_vec::2X", "ue8m0", {0: 254, 1: 0, 2: 255}, {0: 254}, 127)
    np.testing.assert_array_equal(got, want)
    assert np.isinf(got[0]).any() and np.isnan(got[2]).all()
    assert np.isfinite(got[1, 1:]).all()  # column 0 takes 2**127 in its other block


def test_ue4m3_largest_and_nan() -> None:
    # 0x7e is 448, the largest ue4m3; 0x7f is NaN.
    got, want = _extremes("kind::mxf4nvf4", "scale_vec::4X", "ue4m3", {0: 0x7E, 1: 0x7F}, {3: 0x7E}, 0x38)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[1]).all() and np.isfinite(got[0]).all()


def test_the_descriptor_fields_decode_as_tables_43_and_44_place_them() -> None:
    word = (2 << 4) | (1 << 7) | (1 << 10) | (1 << 13) | (12 << 17) | (1 << 23) | (1 << 27) | (3 << 29)
    got = ScaledDesc.decode(word)
    assert (got.sfb_id, got.a_format, got.b_format, got.negate_a, got.n) == (2, 1, 1, True, 96)
    assert (got.scale_type, got.m, got.sfa_id, got.top) == (1, 128, 3, 0)


def _refused(kind: str, vec: str, word: int, error: type[Exception], match: str) -> None:
    a_bits, b_bits, _, _, c = operands(kind, 32, "e4m3" if kind == "kind::mxf8f6f4" else "e2m1", "e2m1", 0)
    b_bits = b_bits if kind != "kind::mxf8f6f4" else a_bits[:32]
    sf = np.zeros(1024, np.uint8) + 127
    with pytest.raises(error, match=match):
        launch(MACHINE, kernel(kind, vec, 32, word), a_bits, b_bits, c, sf)


@pytest.mark.parametrize(
    ("kind", "vec", "change", "match"),
    [
        ("kind::mxf4", "scale_vec::2X", 1 << 3, "bits 3-3 are reserved"),
        ("kind::mxf4", "scale_vec::2X", 1 << 29, "scale factor A ID 1: .scale_vec::2X takes 0 or 2"),
        ("kind::mxf4nvf4", "scale_vec::4X", 2 << 4, "scale factor B ID 2: .scale_vec::4X takes 0"),
        ("kind::mxf4", "scale_vec::2X", -(1 << 23), "scale type 0 is none of kind::mxf4"),
        (
            "kind::mxf4nvf4",
            "scale_vec::2X",
            -(1 << 23),
            r"scale type 0 is none of kind::mxf4nvf4\.scale_vec::2X",
        ),
        ("kind::mxf4", "scale_vec::2X", 1 << 31, r"K = 96 .* cta_group::2 only"),
        ("kind::mxf4", "scale_vec::2X", 1 << 27, "M = 256: cta_group::1 has M = 128"),
        ("kind::mxf4", "scale_vec::2X", 1 << 15, "cannot transpose"),
        ("kind::mxf8f6f4", "scale_vec::1X", 2 << 7, "A format 2 is none of kind::mxf8f6f4"),
        ("kind::mxf8f6f4", "scale_vec::1X", 1 << 31, "bits 31-31 are reserved"),
    ],
)
def test_a_descriptor_the_isa_does_not_allow_is_the_kernels_fault(kind: str, vec: str, change: int,
                                                                  match: str) -> None:  # fmt: skip
    a = "e4m3" if kind == "kind::mxf8f6f4" else "e2m1"
    _refused(kind, vec, idesc(kind, 32, a) + change, TensorMemoryError, match)


def test_mn_major_and_sparse_mxf8f6f4_are_the_models_limit() -> None:
    word = idesc("kind::mxf8f6f4", 32, "e4m3")
    _refused("kind::mxf8f6f4", "scale_vec::1X", word | (1 << 16), ModelLimitError, "not modeled: MN-major")
    _refused("kind::mxf8f6f4", "scale_vec::1X", word | (1 << 2), ModelLimitError, "not modeled: sparsity")


def _partitioned(kind: str, vec: str, same: bool) -> None:
    """Scale factors copied with .128x128b from 128 rows of 16 bytes: the same atom in each of the
    four 32-row parts (duplicated, as the ISA requires) or not."""
    n, rng = 32, np.random.default_rng(4)
    a_bits, b_bits, a_vals, b_vals, c = operands(kind, n, "e2m1", "e2m1", 4)
    sa_codes = rng.integers(125, 130, (M, 2)).astype(np.uint8)
    sb_codes = rng.integers(125, 130, (n, 2)).astype(np.uint8)
    atoms = [np.tile(sf_atoms(codes, 0, rng), 4) for codes in (sa_codes, sb_codes)]
    if not same:
        atoms[1][512 + 16 * 5] ^= 1  # lane 37 of B's first column: row 5's block 0
    word = idesc(kind, n, "e2m1")
    got = launch(MACHINE, kernel(kind, vec, n, word, sf_copy="128x128b"), a_bits, b_bits, c,
                 np.concatenate(atoms)).outputs["out"]  # fmt: skip
    value = np.vectorize(ue8m0, otypes=[np.float64])
    np.testing.assert_array_equal(got, reference(a_vals, b_vals, value(sa_codes), value(sb_codes), c))


def test_scale_factors_duplicated_with_a_128_row_copy_match_numpy() -> None:
    _partitioned("kind::mxf4", "scale_vec::2X", same=True)


def test_scale_factors_that_differ_between_lane_partitions_are_the_kernels_fault() -> None:
    with pytest.raises(TensorMemoryError, match="differ between the 32-lane partitions"):
        _partitioned("kind::mxf4", "scale_vec::2X", same=False)


@pytest.mark.parametrize("shape", ["128x256b", "128x128b"])
def test_a_copy_lands_row_by_row_in_the_lanes(shape: str) -> None:
    data = np.random.default_rng(2).integers(0, 256, (128, BYTES[shape])).astype(np.uint8)
    got = run_copy(MACHINE, shape, data).outputs["out"]
    words = data.reshape(128, -1, 4).astype(np.uint32)
    want = words[..., 0] | words[..., 1] << 8 | words[..., 2] << 16 | words[..., 3] << 24
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", ["4x256b", "64x128b.warpx2::02_13", "64x128b.warpx2::01_23"])
def test_copy_shapes_placed_only_by_figures_are_the_models_limit(shape: str) -> None:
    with pytest.raises(ModelLimitError, match="not modeled"):
        run_copy(MACHINE, shape, np.zeros((128, BYTES[shape]), np.uint8))


def test_a_copy_of_generic_stores_without_a_proxy_fence_is_refused() -> None:
    with pytest.raises(ProxyOrderError, match=r"tcgen05\.cp"):
        run_copy(MACHINE, "128x128b", np.ones((128, 16), np.uint8), fence=False)


def test_loading_copied_columns_before_the_commit_completes_is_refused() -> None:
    with pytest.raises(TensorMemoryError, match=r"written by the tcgen05\.cp"):
        run_copy(MACHINE, "128x128b", np.ones((128, 16), np.uint8), early_ld=True)


@pytest.mark.parametrize(
    "opcode",
    ["tcgen05.mma.cta_group::2.kind::mxf4.block_scale",
     "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.block32",
     "tcgen05.cp.cta_group::1.128x128b.b8x16.b4x16_p64"],
)  # fmt: skip
def test_paired_alias_and_decompressing_forms_are_not_declared(opcode: str) -> None:
    ptx = kernel("kind::mxf4", "scale_vec::2X", 32, idesc("kind::mxf4", 32))
    ptx = ptx.replace("tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::2X", opcode)
    ptx = ptx.replace("tcgen05.cp.cta_group::1.32x128b.warpx4", opcode) if "cp" in opcode else ptx
    assert unmodeled(parse(ptx), MACHINE), opcode


def test_a_cta_pair_kernel_is_refused_before_it_runs_naming_cta_group_2() -> None:
    # cta_group::2 (two CTAs of a cluster sharing one MMA, each with its half of A and D in its
    # own TMEM) is not declared: every tcgen05 instruction of such a kernel (the ISA requires one
    # .cta_group throughout) is listed with the modifier the model lacks, and nothing runs.
    ptx = kernel("kind::mxf4", "scale_vec::2X", 32, idesc("kind::mxf4", 32)).replace(
        "cta_group::1", "cta_group::2"
    )
    a_bits, b_bits, _, _, c = operands("kind::mxf4", 32, "e2m1", "e2m1", 0)
    with pytest.raises(
        UnmodeledError, match=r"modifier \.cta_group::2 is not modeled for tcgen05\.mma"
    ) as err:
        launch(MACHINE, ptx, a_bits, b_bits, c, np.zeros(1024, np.uint8))
    refused = {i.form.split(".cta_group")[0] for i in err.value.items}
    assert refused == {"tcgen05.alloc", "tcgen05.cp", "tcgen05.mma", "tcgen05.commit", "tcgen05.dealloc"}


def test_a_copy_past_the_allocated_columns_is_the_kernels_fault() -> None:
    # 32 columns are allocated; .128x256b from column 28 needs columns 28 .. 35.
    ptx = copy_kernel("128x256b").replace(".128x256b [%r4]", ".128x256b [%r7]")
    ptx = ptx.replace(
        "    ld.shared.u32 %r4, [%r3];\n", "    ld.shared.u32 %r4, [%r3];\n    add.u32 %r7, %r4, 28;\n"
    )
    args: dict[str, np.ndarray] = {"src": np.zeros(128 * 32, np.uint8), "out": np.zeros((128, 8), np.uint32)}
    with pytest.raises(TensorMemoryError, match="not in allocated tensor memory"):
        interpret(parse(ptx), "k", MACHINE, (1, 128, 0), args)
