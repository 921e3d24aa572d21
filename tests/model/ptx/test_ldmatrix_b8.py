"""sm_100a/sm_120a's byte-container ``ldmatrix`` (``.m16n16.trans.b8``, ``.m8n16``/``.m16n16``
from ``.b6x16_p32``/``.b4x16_p64`` sources) and ``stmatrix.m16n8.trans.b8`` against
:mod:`tests.model.oracle.matrix_b8`, index formulas from the PTX ISA's tables (not the model's
shuffle code), on random bytes and scattered rows; the decompression in both value domains; the
store/load relation CUTLASS's copy traits state; ptxas on every form and on the malformed ones
the model refuses; the target gate; the checker on kernels that use the forms."""

from __future__ import annotations

import numpy as np
import pytest
import z3

from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover
from karyamorph.isa.availability import requirement
from karyamorph.isa.parser import parse
from karyamorph.isa.printer import format_instruction
from karyamorph.model.check.checker import check
from karyamorph.model.interp.errors import MemoryAccessError, ModelLimitError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.matrix_b8 import MATRIX_B8, decompress_row
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.concrete import ConcreteDomain
from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason
from karyamorph.model.semantics.symbolic import SymbolicDomain
from tests.model.oracle.matrix_b8 import (
    GARBAGE_ROW,
    WIDTH,
    check_load,
    check_store,
    expand,
    kernel,
    opcode_of,
    run_load,
    run_store,
    store_fragment,
)
from tests.model.oracle.runner import Form, all_forms

M = ptx_machine("sm_120")
FORMS: list[Form] = [f for ins in MATRIX_B8 for f in all_forms(ins)]


def test_the_forms_are_the_ptx_isa_ones() -> None:
    texts = {f.text for f in FORMS}
    assert len(texts) == 45  # 6 .b8 + 30 decompressing ldmatrix, 9 stmatrix (x space spellings)
    assert {"ldmatrix.sync.m16n16.x2.trans.shared::cta.b8", "ldmatrix.sync.m8n16.x4.b8x16.b4x16_p64",
            "ldmatrix.sync.m16n16.x1.trans.shared.b8x16.b6x16_p32",
            "stmatrix.sync.m16n8.x4.trans.shared.b8"} <= texts  # fmt: skip
    assert not any(".x4.trans" in t and "m16n16" in t for t in texts)
    assert not any("m8n16" in t and ".trans" in t for t in texts)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("form", FORMS, ids=[f.text for f in FORMS])
def test_every_form_moves_the_bytes_the_ptx_layout_names(form: Form, seed: int) -> None:
    run = check_load if form.instr.name == "ldmatrix.sync" else check_store
    assert run(M, form, seed) == []


def _row_words(row: np.ndarray) -> list[int]:
    return [int(w) for w in row.view(np.uint32)]


@pytest.mark.parametrize("src_fmt", sorted(WIDTH))
def test_decompression_is_the_same_in_both_domains_and_ignores_the_padding(src_fmt: str) -> None:
    rng = np.random.default_rng(WIDTH[src_fmt])
    cd, sd = ConcreteDomain(), SymbolicDomain()
    used = 2 * WIDTH[src_fmt]  # bytes of data; the rest of the 16 is padding
    for _ in range(20):
        row = rng.integers(0, 256, 16, dtype=np.uint8)
        want = _row_words(expand(row, src_fmt))
        conc = decompress_row(cd, [np.asarray(w, dtype=np.uint64) for w in _row_words(row)], src_fmt)
        sym_row: list[z3.BitVecRef] = [z3.BitVecVal(w, 32) for w in _row_words(row)]
        sym = decompress_row(sd, sym_row, src_fmt)
        assert [int(c) for c in conc] == want
        assert [z3.simplify(s).as_long() for s in sym] == want  # type: ignore[attr-defined]
        padded = row.copy()
        padded[used:] = rng.integers(0, 256, 16 - used, dtype=np.uint8)
        assert _row_words(expand(padded, src_fmt)) == want
        again = decompress_row(cd, [np.asarray(w, dtype=np.uint64) for w in _row_words(padded)], src_fmt)
        assert [int(c) for c in again] == want
    ones = np.full(16, 0xFF, np.uint8)  # every element all ones: zero-extended, never sign-extended
    top = (1 << WIDTH[src_fmt]) - 1
    got = decompress_row(cd, [np.asarray(w, dtype=np.uint64) for w in _row_words(ones)], src_fmt)
    assert [int(c) for c in got] == [top * 0x01010101] * 4


def test_expand_reads_elements_from_the_lowest_bit() -> None:
    """The packing the oracle assumes, pinned on a hand-made row: element e of a .b4x16_p64 row
    is nibble e counted from the low nibble of byte 0; of a .b6x16_p32 row, bits 6e .. 6e + 5."""
    row = np.zeros(16, np.uint8)
    row[0], row[7] = 0x21, 0xF0  # elements 0 = 1, 1 = 2, 15 = 0xF
    assert expand(row, "b4x16_p64").tolist() == [1, 2] + [0] * 13 + [15]
    row = np.zeros(16, np.uint8)
    row[0], row[1] = 0b11_000101, 0b0000_1001  # elements 0 = 5, 1 = 0b100111
    assert expand(row, "b6x16_p32").tolist()[:3] == [5, 0b100111, 0]


def _rho(t: int) -> int:
    """CUTLASS's SM100_U8x8_LDSM_T source layout: lane t = s0 + 2 s1 + 4 s2 reads reference
    row s0 + 2 s2 + 8 s1, the row SM100_U8x8_STSM_T's lane of that number writes."""
    s0, s1, s2 = t & 1, (t >> 1) & 1, t >> 2
    return s0 + 2 * s2 + 8 * s1


def test_stmatrix_then_ldmatrix_relate_as_cutlass_states() -> None:
    """An independent source for the byte placement: CUTLASS gives stmatrix.m16n8.x2.trans and
    ldmatrix.m16n16.x1.trans one reference layout once the load's bytes are reordered
    (cute/arch/copy_sm100.hpp: dst0 = {t0.x, t0.y, t1.x, t1.y}, dst1 = {t0.z, t0.w, t1.z,
    t1.w}). So storing registers (s0, s1) and loading the rows back (lane t at the row of
    store lane rho(t)) gives t0 = {s0.b0, s0.b1, s1.b0, s1.b1}, t1 = {s0.b2, s0.b3, s1.b2, s1.b3}."""
    rng = np.random.default_rng(5)
    frag = rng.integers(0, 1 << 32, (32, 2), dtype=np.uint64).astype(np.uint32)
    rows = rng.permutation(32).astype(np.uint32)
    rows[16:] = GARBAGE_ROW
    stored = run_store(M, "stmatrix.sync.aligned.m16n8.x2.trans.shared.b8", frag, rows)
    back_rows = np.array([rows[_rho(t)] for t in range(16)] + [GARBAGE_ROW] * 16, np.uint32)
    got = run_load(M, "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8", stored, back_rows, 2)
    b = frag.view(np.uint8).reshape(32, 2, 4)  # lane, register, byte
    want0 = np.stack([b[:, 0, 0], b[:, 0, 1], b[:, 1, 0], b[:, 1, 1]], axis=1).copy().view(np.uint32)
    want1 = np.stack([b[:, 0, 2], b[:, 0, 3], b[:, 1, 2], b[:, 1, 3]], axis=1).copy().view(np.uint32)
    np.testing.assert_array_equal(got, np.concatenate([want0, want1], axis=1))


def test_the_store_fragment_is_the_mma_accumulator_layout() -> None:
    """stmatrix.m16n8's fragment is the m16n8 accumulator's (PTX ISA mma m16n8 C/D: c0, c1 on row
    g, c2, c3 on row g + 8, columns 2t and 2t + 1), one byte per element."""
    s = np.arange(128, dtype=np.uint8).reshape(16, 8)
    frag = store_fragment([s])
    assert frag[0, 0] == 0x41_40_01_00 and frag[5, 0] == 0x4B_4A_0B_0A  # lane 5: g = 1, t = 1


def _line(form: Form) -> str:
    regs = {"x1": 1, "x2": 2, "x4": 4}[form.mod("num") or "x1"] * (2 if form.mod("shape") == "m16n16" else 1)
    vec = "{" + ", ".join(f"%r{10 + i}" for i in range(regs)) + "}"
    addr = "[%r1]" if form.mod("space") else "[%rd1]"
    op = opcode_of(form)
    return f"{op} {vec}, {addr};" if op.startswith("ldmatrix") else f"{op} {addr}, {vec};"


def _module(lines: list[str], version: str = "8.7", target: str = "sm_120a") -> str:
    # Addresses and sources come from %tid: ptxas 13.5 fails internally (C7907) on a
    # stmatrix .b8 whose shared address is the constant 0.
    body = "\n".join(f"    {line}" for line in lines)
    return f"""
.version {version}
.target {target}
.address_size 64
.visible .entry k()
{{
    .reg .b32 %r<20>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r1, %r1, 4;
    cvt.u64.u32 %rd1, %r1;
    cvta.shared.u64 %rd1, %rd1;
    mov.u32 %r10, %tid.y;
    mov.u32 %r11, %tid.z;
    mov.u32 %r12, %r1;
    mov.u32 %r13, %r10;
{body}
    ret;
}}
"""


def _decoded(line: str, version: str = "8.7", target: str = "sm_120a") -> object:
    mod = parse(_module([line], version, target))
    ins = next(i for i in mod.entry("k").instructions() if i.opcode in ("ldmatrix", "stmatrix"))
    return decode_or_reason(ins, M, mod.version, mod.arch)


MALFORMED = [
    ("ldmatrix.sync.aligned.m16n16.x1.shared.b8 {%r10, %r11}, [%r1];", "needs .trans"),
    ("ldmatrix.sync.aligned.m16n16.x1.shared.b8x16.b4x16_p64 {%r10, %r11}, [%r1];", "needs .trans"),
    ("ldmatrix.sync.aligned.m16n16.x4.trans.shared.b8 {%r10, %r11, %r12, %r13}, [%r1];", ".x1 or .x2"),
    ("ldmatrix.sync.aligned.m8n16.x1.trans.shared.b8x16.b6x16_p32 {%r10}, [%r1];", "takes no .trans"),
    ("stmatrix.sync.aligned.m16n8.x2.shared.b8 [%r1], {%r10, %r11};", "needs .trans"),
    ("ldmatrix.sync.aligned.m8n16.x1.shared.b4x16_p64 {%r10}, [%r1];", "missing .b8x16"),
    ("ldmatrix.sync.aligned.m8n16.x1.shared.b8 {%r10}, [%r1];", "not modeled"),
    ("ldmatrix.sync.aligned.m8n8.x1.shared.b8 {%r10}, [%r1];", "not modeled"),
    ("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b16 {%r10, %r11}, [%r1];", "not modeled"),
    ("stmatrix.sync.aligned.m16n8.x1.trans.shared.b16 [%r1], {%r10};", "not modeled"),
    ("stmatrix.sync.aligned.m8n8.x1.trans.shared.b8 [%r1], {%r10};", "not modeled"),
]


@pytest.mark.parametrize(("line", "reason"), MALFORMED, ids=[m[0].split()[0] for m in MALFORMED])
def test_malformed_forms_are_refused_with_a_reason(line: str, reason: str) -> None:
    got = _decoded(line)
    assert isinstance(got, Unmodeled) and reason in got.reason, getattr(got, "reason", got)


@pytest.mark.parametrize(
    ("version", "target", "ok"),
    [("8.7", "sm_120a", True), ("8.6", "sm_100a", True), ("8.8", "sm_120f", True), ("8.8", "sm_121a", True),
     ("8.7", "sm_120f", False), ("8.7", "sm_120", False), ("8.7", "sm_90a", False), ("9.0", "sm_100", False)],
)  # fmt: skip
def test_the_forms_need_an_arch_specific_blackwell_target(version: str, target: str, ok: bool) -> None:
    for form in (FORMS[0], FORMS[-1], next(f for f in FORMS if f.mod("src_fmt"))):
        got = _decoded(_line(form), version, target)
        assert isinstance(got, Unmodeled) != ok, (form.text, getattr(got, "reason", ""))
        if not ok:
            assert "sm_120a" in got.reason  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def test_every_form_assembles_with_ptxas_for_sm_120a(toolchain: Toolchain) -> None:
    assert assemble(_module([_line(f) for f in FORMS]), "sm_120a", toolchain, lineinfo=False).cubin


@pytest.mark.parametrize("line", [m[0] for m in MALFORMED], ids=[m[0].split()[0] for m in MALFORMED])
def test_ptxas_refuses_what_the_model_refuses(toolchain: Toolchain, line: str) -> None:
    with pytest.raises(PtxasError):
        assemble(_module([line]), "sm_120a", toolchain, lineinfo=False)


def test_a_register_count_other_than_the_shape_needs_is_a_model_limit() -> None:
    src = kernel("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8", 1)  # 16x16 needs two
    z = np.zeros((32, 16), np.uint8)
    rows = np.arange(32, dtype=np.uint32)
    args: dict[str, np.ndarray] = {"tile": z, "frag": np.zeros((32, 1), np.uint32), "rows": rows, "out": z}
    with pytest.raises(ModelLimitError, match="needs 2 registers"):
        interpret(parse(src), "k", M, (1, 32, 0), args)


@pytest.mark.parametrize(("opcode", "bad_lane"), [
    ("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8", 13),
    ("ldmatrix.sync.aligned.m8n16.x2.shared.b8x16.b6x16_p32", 9),
    ("stmatrix.sync.aligned.m16n8.x1.trans.shared.b8", 6),
])  # fmt: skip
def test_a_supplying_lane_with_a_bad_row_address_faults(opcode: str, bad_lane: int) -> None:
    regs = 2 if "m16n16" in opcode else (2 if ".x2" in opcode else 1)
    rows = np.arange(32, dtype=np.uint32)
    rows[bad_lane] = 4096  # outside the 512-byte array
    z = np.zeros((32, 16), np.uint8)
    args: dict[str, np.ndarray] = {"tile": z, "frag": np.zeros((32, regs), np.uint32), "rows": rows, "out": z}
    with pytest.raises(MemoryAccessError, match=opcode.split(".")[0]):
        interpret(parse(kernel(opcode, regs)), "k", M, (1, 32, 0), args)


def _verdicts(opcode: str, regs: int, warps: int, barrier: bool) -> dict[str, str]:
    buffers = {"tile": 512 * warps, "frag": 4 * regs * 32 * warps, "rows": 4 * 32 * warps, "out": 512 * warps}
    ptx = parse(kernel(opcode, regs, warps=warps, barrier=barrier))
    return {v.property: v.verdict for v in check(ptx, "k", M, (1, 32 * warps, 0), buffers, {})}


@pytest.mark.parametrize("opcode", [
    "ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8",
    "ldmatrix.sync.aligned.m8n16.x4.shared::cta.b8x16.b4x16_p64",
])  # fmt: skip
def test_checker_proves_a_load_kernel_and_refutes_a_cross_warp_race(opcode: str) -> None:
    regs = 4
    safe = _verdicts(opcode, regs, 1, True)
    assert safe["race"] == "proved" and safe["barrier"] == "proved"
    assert safe["bounds"] in ("refuted", "unknown")  # the row table is an input: rows may be outside
    racy = _verdicts(opcode, regs, 2, False)  # warp 1 writes rows warp 0 may read, unordered
    assert racy["race"] == "refuted"


@pytest.mark.parametrize(("num", "row", "race"), [
    (4, "mov.u32 %r8, %r1;", "proved"),  # 32 distinct rows
    (1, "and.b32 %r8, %r1, 7;", "proved"),  # lanes 8.. repeat rows 0..7 but supply nothing
    (2, "and.b32 %r8, %r1, 7;", "refuted"),  # lanes 0 and 8 both write row 0
    (4, "shr.u32 %r8, %r1, 1;", "refuted"),  # lanes 2k and 2k + 1 write one row
])  # fmt: skip
def test_checker_on_stores_proves_distinct_rows_and_refutes_a_shared_row(
    num: int, row: str, race: str
) -> None:
    src = kernel(f"stmatrix.sync.aligned.m16n8.x{num}.trans.shared.b8", num)
    src = src.replace("ld.global.u32 %r8, [%rd8];", row)  # the row each lane supplies, from %tid.x
    buffers = {"tile": 512, "frag": 4 * num * 32, "rows": 128, "out": 512}
    verdicts = {v.property: v.verdict for v in check(parse(src), "k", M, (1, 32, 0), buffers, {})}
    assert verdicts == {"bounds": "proved", "race": race, "barrier": "proved"}


def test_every_form_parses_prints_back_and_the_catalog_gates_it() -> None:
    lines = [_line(f) for f in FORMS]
    found = [
        i for i in parse(_module(lines)).entry("k").instructions() if i.opcode in ("ldmatrix", "stmatrix")
    ]
    assert [format_instruction(i).strip() for i in found] == lines
    for ins in found:
        req = requirement(ins)
        assert req is not None and req.satisfied_by("8.7", "sm_120a") and req.satisfied_by("8.6", "sm_100a")
        assert not req.satisfied_by("9.0", "sm_120") and not req.satisfied_by("8.7", "sm_120f")
