"""Oracle for the integer dot products (PTX ISA 9.7.1.23 dp4a, 9.7.1.24 dp2a), in Python ints:

- ``dp4a.atype.btype d, a, b, c``: ``d = c + sum(Va[i] * Vb[i] for i in 0..3)``, ``Va``/``Vb`` the
  four bytes of ``a``/``b`` (byte 0 the least significant), each extended by its own type;
- ``dp2a.mode.atype.btype d, a, b, c``: ``d = c + Va[0] * Vb[s] + Va[1] * Vb[s + 1]``, ``Va`` the
  two 16-bit halves of ``a``, ``Vb`` the bytes of ``b``, ``s`` 0 for ``.lo`` and 2 for ``.hi``;
- ``d`` and ``c`` are ``.u32`` when both types are ``.u32``, else ``.s32``; the sum wraps at 32 bits.
"""

from __future__ import annotations

from tests.model.oracle.expect import Case, Expect, NotCovered, exact_all
from tests.model.oracle.runner import Form

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
