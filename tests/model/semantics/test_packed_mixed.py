"""Packed .f32x2 arithmetic (PTX ISA 9.7.3.3-9.7.3.6) and mixed-precision .f32.f16/.f32.bf16
add, sub and fma (9.7.5), against the exact rational reference, bit for bit, in every rounding
mode."""

from __future__ import annotations

import numpy as np
import pytest

from tests.model import float_oracle as fo
from tests.model.elementwise import check_lanes, operand_columns, run

RND = ["rn", "rz", "rm", "rp"]


def _f32x2_ref(op: str, rnd: str, ftz: bool):  # type: ignore[no-untyped-def]
    def f(*ops: int) -> int:
        if ftz:
            ops = tuple(fo.flush(v, "f32") for v in ops)
        if op == "add":
            r = fo.add(ops[0], ops[1], "f32", rnd)
        elif op == "sub":
            r = fo.add(ops[0], fo.negate(ops[1], "f32"), "f32", rnd)
        elif op == "mul":
            r = fo.mul(ops[0], ops[1], "f32", rnd)
        else:
            r = fo.fma(ops[0], ops[1], ops[2], "f32", rnd)
        return fo.flush(r, "f32") if ftz else r

    return f


@pytest.mark.parametrize("op", ["add", "sub", "mul", "fma"])
@pytest.mark.parametrize("rnd", RND)
@pytest.mark.parametrize("ftz", [False, True])
def test_f32x2_lanes_are_correctly_rounded(op: str, rnd: str, ftz: bool) -> None:
    arity = 3 if op == "fma" else 2
    ops = ", ".join(f"{{{s}}}" for s in "abc"[:arity])
    template = f"{op}.{rnd}{'.ftz' if ftz else ''}.f32x2 {{d}}, {ops}"
    check_lanes(template, "f32", _f32x2_ref(op, rnd, ftz), arity, packed=True)


def test_f32x2_without_rounding_modifier_rounds_to_nearest() -> None:
    check_lanes("add.f32x2 {d}, {a}, {b}", "f32", _f32x2_ref("add", "rn", False), 2, packed=True)


def test_f32x2_lane_order_against_numpy() -> None:
    rng = np.random.default_rng(2)
    x, y = (rng.standard_normal((300, 2)).astype(np.float32) for _ in range(2))
    got = run("sub.rn.f32x2 {d}, {a}, {b}", 64, [x.view(np.uint64)[:, 0], y.view(np.uint64)[:, 0]])
    np.testing.assert_array_equal(got.view(np.float32).reshape(300, 2), x - y)


def _mixed_columns(half: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, _ = operand_columns(half, 1200, seed=7)
    _, _, c = operand_columns("f32", 1200, seed=8)
    n = min(len(a), len(c))
    return a[:n], b[:n], c[:n]


def _check(template: str, arity: int, half: str, ref) -> None:  # type: ignore[no-untyped-def]
    a, b, c = _mixed_columns(half)
    ins = [a, c] if arity == 2 else [a, b, c]
    got = run(template, 32, ins)
    want = np.array([ref(*map(int, t)) for t in zip(*ins, strict=True)], np.uint32)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(template, [hex(int(x[i])) for x in ins], hex(int(got[i])), hex(int(want[i])))
                           for i in bad[:5]]  # fmt: skip


@pytest.mark.parametrize("half", ["f16", "bf16"])
@pytest.mark.parametrize("rnd", ["", *RND])
@pytest.mark.parametrize("sat", [False, True])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_mixed_add_sub(half: str, rnd: str, sat: bool, op: str) -> None:
    mode = rnd or "rn"

    def ref(a: int, c: int) -> int:
        wide = fo.convert(a, half, "f32")
        r = fo.add(wide, c if op == "add" else fo.negate(c, "f32"), "f32", mode)
        return fo.saturate(r, "f32") if sat else r

    mods = (f".{rnd}" if rnd else "") + (".sat" if sat else "")
    _check(f"{op}{mods}.f32.{half} {{d}}, {{a}}, {{b}}", 2, half, ref)


@pytest.mark.parametrize("half", ["f16", "bf16"])
@pytest.mark.parametrize("rnd", RND)
@pytest.mark.parametrize("sat", [False, True])
def test_mixed_fma_rounds_once(half: str, rnd: str, sat: bool) -> None:
    def ref(a: int, b: int, c: int) -> int:
        r = fo.fma(a, b, c, "f32", rnd, src=half)
        return fo.saturate(r, "f32") if sat else r

    _check(f"fma.{rnd}{'.sat' if sat else ''}.f32.{half} {{d}}, {{a}}, {{b}}, {{c}}", 3, half, ref)


def test_sat_written_after_the_types_is_accepted() -> None:
    """The PTX ISA's own example spells it ``sub.rz.f32.f16.sat``."""
    a, _, c = _mixed_columns("f16")
    got = run("sub.rz.f32.f16.sat {d}, {a}, {b}", 32, [a, c])
    diff = [fo.add(fo.convert(int(x), "f16", "f32"), fo.negate(int(y), "f32"), "f32", "rz")
            for x, y in zip(a, c, strict=True)]  # fmt: skip
    want = [fo.saturate(v, "f32") for v in diff]
    np.testing.assert_array_equal(got, np.array(want, np.uint32))


def test_mixed_sub_against_torch_half_widening() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal(400).astype(np.float16)
    m = rng.standard_normal(400).astype(np.float32)
    got = run("sub.rn.f32.f16 {d}, {a}, {b}", 32, [x.view(np.uint16), m.view(np.uint32)]).view(np.float32)
    want = (torch.from_numpy(x).float() - torch.from_numpy(m)).numpy()
    np.testing.assert_array_equal(got, want)


def test_f64_fma_is_correctly_rounded() -> None:
    """fma.rn.f64 on edges and random operands, including a product that lands on a tie which a
    tiny addend breaks (the double-double sum rounded it twice)."""
    a, b, c = (np.array(fo.patterns("f64", 3000, s), np.uint64) for s in (1, 2, 3))
    tie = [[0x40A0DB511FCF3DC2, 0x8000000000000001], [0xC004000000000000] * 2,
           [0x8000000000000001, 0x12688B70E62B]]  # fmt: skip
    # Products whose low part or whole value is subnormal, against a subnormal or tiny addend.
    rng = np.random.default_rng(9)
    tiny = [np.ldexp(rng.standard_normal(400), rng.integers(-1100, -960, 400)),
            rng.standard_normal(400) * 2.5,
            np.ldexp(rng.standard_normal(400), rng.integers(-1074, -1000, 400))]  # fmt: skip
    a, b, c = (np.concatenate([x, np.array(t, np.uint64), u.view(np.uint64)])
               for x, t, u in zip((a, b, c), tie, tiny, strict=True))  # fmt: skip
    got = run("fma.rn.f64 {d}, {a}, {b}, {c}", 64, [a, b, c])
    want = np.array([fo.fma(int(x), int(y), int(z), "f64") for x, y, z in zip(a, b, c, strict=True)],
                    np.uint64)  # fmt: skip
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [tuple(hex(int(v[i])) for v in (a, b, c, got)) for i in bad[:3]]
