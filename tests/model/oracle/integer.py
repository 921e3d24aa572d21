"""Oracles for the integer, logic and bit instructions: Python ints with explicit wrap-around.

Each function follows the PTX ISA section of its instruction (9.7.1 Integer Arithmetic, dp4a and
dp2a included, 9.7.8 Logic and Shift), written from the section's own pseudo-code where it gives
one (``bfe``, ``bfi``, ``clz``, ``brev``) and never from the model's code. Where the ISA leaves a result
unspecified (division by zero) any value is accepted.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.model.oracle.expect import Case, Exact, Expect, NotCovered, OneOf, exact_all
from tests.model.oracle.runner import Form
from tests.model.oracle.samples import shift_edges, type_bits

INT_TYPES = ("u16", "u32", "u64", "s16", "s32", "s64")
BIT_TYPES = ("b16", "b32", "b64")


class AnyValue(OneOf):
    """Any bit pattern: the ISA says "unspecified"."""

    def ok(self, got: int) -> bool:
        return True

    def __str__(self) -> str:
        return "any value (unspecified by the PTX ISA)"


ANY = AnyValue(frozenset())


def signed(v: int, n: int) -> int:
    return v - (1 << n) if v >> (n - 1) & 1 else v


def wrap(v: int, n: int) -> int:
    return v & ((1 << n) - 1)


def _num(v: int, t: str) -> int:
    return signed(v, type_bits(t)) if t[0] == "s" else v


def _only(form: Form, allowed: set[str], types: tuple[str, ...]) -> None:
    extra = {g for g, _ in form.mods} - allowed
    if extra or any(t not in types for t in form.types):
        raise NotCovered(f"{form.text}: the integer oracle knows {sorted(allowed)} on {types}")


def _binary(form: Form, fn: object) -> list[Case]:
    t = form.types[0]
    return [Case({"a": t, "b": t}, {"d": t}, fn)]  # type: ignore[arg-type]


def add_sub(form: Form, sub: bool) -> list[Case]:
    _only(form, {"sat"}, INT_TYPES)
    t = form.types[0]
    n = type_bits(t)
    sat = form.mod("sat") is not None
    if sat and t != "s32":
        raise NotCovered(form.text)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a, b = _num(x["a"], t), _num(x["b"], t)
        r = a - b if sub else a + b
        if sat:  # "limits result to MININT..MAXINT (no overflow)"
            r = max(-(1 << 31), min((1 << 31) - 1, r))
        return exact_all({"d": wrap(r, n)})

    return _binary(form, expect)


def _wide(t: str) -> str:
    return f"{t[0]}{2 * type_bits(t)}"


def mul_mad(form: Form, mad: bool) -> list[Case]:
    _only(form, {"mode"}, INT_TYPES)
    t, mode = form.types[0], form.mod("mode")
    n = type_bits(t)
    dt = _wide(t) if mode == "wide" else t
    ops = {"a": t, "b": t, **({"c": dt} if mad else {})}

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        p = _num(x["a"], t) * _num(x["b"], t)  # exact 2n-bit product
        r = p >> n if mode == "hi" else p  # Python's >> floors: the upper half of two's complement
        if mad:
            r += _num(x["c"], dt)
        return exact_all({"d": wrap(r, type_bits(dt))})

    return [Case(ops, {"d": dt}, expect)]


def div_rem(form: Form, rem: bool) -> list[Case]:
    _only(form, set(), INT_TYPES)
    t = form.types[0]
    n = type_bits(t)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a, b = _num(x["a"], t), _num(x["b"], t)
        if b == 0:  # "Division by zero yields an unspecified, machine-specific value."
            return {"d": ANY}
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C: truncation toward zero
        return exact_all({"d": wrap(a - q * b if rem else q, n)})

    return _binary(form, expect)


def neg_abs(form: Form, absolute: bool) -> list[Case]:
    _only(form, set(), ("s16", "s32", "s64"))
    t = form.types[0]
    n = type_bits(t)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a = signed(x["a"], n)
        return exact_all({"d": wrap(abs(a) if absolute else -a, n)})

    return [Case({"a": t}, {"d": t}, expect)]


def min_max(form: Form, is_max: bool) -> list[Case]:
    _only(form, set(), INT_TYPES)
    t = form.types[0]

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a, b = _num(x["a"], t), _num(x["b"], t)
        pick = x["a"] if (a > b if is_max else a < b) else x["b"]
        return exact_all({"d": pick})

    return _binary(form, expect)


def logic(form: Form, op: str) -> list[Case]:
    _only(form, set(), ("pred", *BIT_TYPES))
    t = form.types[0]
    n = type_bits(t)
    ops = {"a": t} if op == "not" else {"a": t, "b": t}

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a = x["a"]
        if op == "not":
            return exact_all({"d": wrap(~a, n)})
        b = x["b"]
        return exact_all({"d": {"and": a & b, "or": a | b, "xor": a ^ b}[op]})

    return [Case(ops, {"d": t}, expect)]


def shift(form: Form, left: bool) -> list[Case]:
    _only(form, set(), (*BIT_TYPES, *INT_TYPES))
    t = form.types[0]
    n = type_bits(t)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        k = min(x["b"], n)  # "Shift amounts greater than the register width N are clamped to N."
        if left:
            return exact_all({"d": wrap(x["a"] << k, n)})
        a = signed(x["a"], n) if t[0] == "s" else x["a"]  # signed shifts fill with the sign bit
        return exact_all({"d": wrap(a >> k, n)})

    return [Case({"a": t, "b": "u32"}, {"d": t}, expect, edges={"b": shift_edges()})]


def lop3(form: Form) -> list[Case]:
    _only(form, set(), ("b32",))

    def case(lut: int) -> Case:
        def expect(x: dict[str, int]) -> dict[str, Expect]:
            d = 0
            for k in range(32):  # bit k of d is the LUT entry indexed by (a_k, b_k, c_k)
                idx = (x["a"] >> k & 1) << 2 | (x["b"] >> k & 1) << 1 | (x["c"] >> k & 1)
                d |= (lut >> idx & 1) << k
            return exact_all({"d": d})

        ops = {"a": "b32", "b": "b32", "c": "b32"}
        return Case(ops, {"d": "b32"}, expect, imms={"lut": lut}, random_lanes=8)

    return [case(lut) for lut in range(256)]


def count(form: Form, op: str) -> list[Case]:
    _only(form, set(), ("b32", "b64"))
    t = form.types[0]
    n = type_bits(t)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a = x["a"]
        return exact_all({"d": bin(a).count("1") if op == "popc" else n - a.bit_length()})

    return [Case({"a": t}, {"d": "u32"}, expect)]


def brev(form: Form) -> list[Case]:
    _only(form, set(), ("b32", "b64"))
    t = form.types[0]
    n = type_bits(t)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        return exact_all({"d": int(format(x["a"], f"0{n}b")[::-1], 2)})

    return [Case({"a": t}, {"d": t}, expect)]


def _bit(v: int, i: int) -> int:
    return v >> i & 1


def _field(t: str) -> Callable[[int], int]:
    """How a bit-field position or length operand is read: the ISA's ``0..255`` (``& 0xff``) for
    the 32-bit forms, the whole 32-bit operand for the 64-bit ones."""
    # 64-bit bfe/bfi do not mask to 8 bits: H200 (sm_90), datasets/validation/sm_90
    return (lambda v: v) if type_bits(t) == 64 else (lambda v: v & 0xFF)


def bfe(form: Form) -> list[Case]:
    _only(form, set(), ("u32", "u64", "s32", "s64"))
    t = form.types[0]
    msb = type_bits(t) - 1
    field = _field(t)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a, pos, length = x["a"], field(x["b"]), field(x["c"])
        sbit = 0 if t[0] == "u" or length == 0 else _bit(a, min(pos + length - 1, msb))
        d = 0
        for i in range(msb + 1):
            d |= (_bit(a, pos + i) if i < length and pos + i <= msb else sbit) << i
        return exact_all({"d": d})

    pos = (*shift_edges(), *range(0, 70, 3))
    return [Case({"a": t, "b": "u32", "c": "u32"}, {"d": t}, expect, edges={"b": pos, "c": pos})]


def bfi(form: Form) -> list[Case]:
    _only(form, set(), ("b32", "b64"))
    t = form.types[0]
    msb = type_bits(t) - 1
    field = _field(t)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a, f, pos, length = x["a"], x["b"], field(x["c"]), field(x["d"])
        i = 0
        while i < length and pos + i <= msb:
            f = f & ~(1 << (pos + i)) | _bit(a, i) << (pos + i)
            i += 1
        return {"f": Exact(f)}

    pos = (*shift_edges(), *range(0, 70, 3))
    return [Case({"a": t, "b": t, "c": "u32", "d": "u32"}, {"f": t}, expect, edges={"c": pos, "d": pos})]


# --- dp4a / dp2a (9.7.1.23, 9.7.1.24) ------------------------------------------------------------
# ``dp4a.atype.btype d, a, b, c``: ``d = c + sum(Va[i] * Vb[i] for i in 0..3)``, Va/Vb the bytes of
# a/b (byte 0 the least significant), each extended by its own type; ``dp2a.mode``: ``d = c +
# Va[0] * Vb[s] + Va[1] * Vb[s + 1]``, Va the 16-bit halves of a, s 0 for .lo and 2 for .hi; d and c
# are .u32 when both types are .u32, else .s32; the sum wraps at 32 bits.

# Words whose bytes and halves sit at the limits of both signed and unsigned interpretations.
WORD_EDGES = (0, 1, 0x7F7F7F7F, 0x80808080, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x0000FFFF, 0xFFFF0000,
              0x01FF80FE, 0x807F0180)  # fmt: skip


def fields(word: int, width: int, signed: bool) -> list[int]:
    """The ``32 // width`` fields of a 32-bit word, least significant first, as Python ints."""
    out = []
    for k in range(32 // width):
        v = word >> (width * k) & ((1 << width) - 1)
        out.append(v - (1 << width) if signed and v >> (width - 1) else v)
    return out


def dot(form: Form, two: bool) -> list[Case]:
    """dp4a (``two`` False) and dp2a."""
    at, bt = form.types
    extra = {g for g, _ in form.mods} - {"mode"}
    if extra or at not in ("u32", "s32") or bt not in ("u32", "s32"):
        raise NotCovered(f"{form.text}: the dot-product oracle knows .u32/.s32")
    acc = "u32" if at == bt == "u32" else "s32"
    s = 2 if form.mod("mode") == "hi" else 0

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        va = fields(x["a"], 16 if two else 8, at == "s32")
        vb = fields(x["b"], 8, bt == "s32")
        vb = vb[s : s + 2] if two else vb
        return exact_all({"d": (x["c"] + sum(p * q for p, q in zip(va, vb, strict=True))) % 2**32})

    ops = {"a": at, "b": bt, "c": acc}
    return [Case(ops, {"d": acc}, expect, edges={k: WORD_EDGES for k in ops})]


# --- bmsk (9.7.1.27) -------------------------------------------------------------------------------
def bmsk(form: Form) -> list[Case]:
    """The section's pseudo-code, line by line (``mask0``, ``mask1`` and the three overflows)."""
    _only(form, {"mode"}, ("b32",))
    clamp = form.mod("mode") == "clamp"
    ones = 0xFFFFFFFF

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a, b = x["a"], x["b"]
        a1 = a & 0x1F
        mask0 = (ones << a1) & ones
        b1 = b & 0x1F
        total = a1 + b1
        mask1 = (ones << total) & ones
        sum_overflow = total >= 32
        position_overflow = width_overflow = False
        if clamp:
            if a >= 32:
                position_overflow, mask0 = True, 0
            if b >= 32:
                width_overflow = True
        if sum_overflow or position_overflow or width_overflow:
            mask1 = 0
        elif b1 == 0:
            mask1 = ones
        return exact_all({"d": mask0 & ~mask1 & ones})

    amounts = (*shift_edges(), *range(0, 40, 3), 31, 32, 33, 63, 64, 0xFFFFFFFF)
    return [Case({"a": "u32", "b": "u32"}, {"d": "b32"}, expect, edges={"a": amounts, "b": amounts})]


# --- prmt (9.7.9.7) -------------------------------------------------------------------------------
# The section's table of modes, as printed: for each mode and control c[1:0], the source byte of
# d.b3, d.b2, d.b1, d.b0 (left to right).
PRMT_MODES: dict[str, tuple[tuple[int, int, int, int], ...]] = {
    "f4e": ((3, 2, 1, 0), (4, 3, 2, 1), (5, 4, 3, 2), (6, 5, 4, 3)),
    "b4e": ((5, 6, 7, 0), (6, 7, 0, 1), (7, 0, 1, 2), (0, 1, 2, 3)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((3, 2, 1, 0), (3, 2, 1, 1), (3, 2, 2, 2), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (1, 1, 1, 0), (2, 2, 1, 0), (3, 2, 1, 0)),
    "rc16": ((1, 0, 1, 0), (3, 2, 3, 2), (1, 0, 1, 0), (3, 2, 3, 2)),
}


def prmt(form: Form) -> list[Case]:
    """Bytes ``{b, a}`` numbered 0-7 from ``a``'s lowest; generic control nibbles (three bits of
    index, the top bit replicating the byte's sign), or the mode table above."""
    _only(form, {"mode"}, ("b32",))
    mode = form.mod("mode")

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        src = (x["b"] << 32 | x["a"]).to_bytes(8, "little")
        out = 0
        for i in range(4):
            if mode:
                byte = src[PRMT_MODES[mode][x["c"] & 3][3 - i]]
            else:
                ctl = x["c"] >> (4 * i) & 0xF
                byte = src[ctl & 7]
                if ctl & 8:
                    byte = 0xFF if byte & 0x80 else 0
            out |= byte << (8 * i)
        return exact_all({"d": out})

    controls = (0x3210, 0x7654, 0x9E40, 0x8888, 0xFFFF, 0x0123, 0x5410, 0x7531, 0, 1, 2, 3, 0xFFFFFFFF)
    return [Case({"a": "b32", "b": "b32", "c": "b32"}, {"d": "b32"}, expect, edges={"c": controls})]
