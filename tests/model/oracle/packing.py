"""Packed operands (``.f16x2``, ``.bf16x2``, ``.f32x2``): lanes in and out of one bit container.

The PTX ISA packs lane 0 in the low bits: "fA[0] = a[0:15]; fA[1] = a[16:31]" (9.7.4.1, half
precision) and "fA[0] = a[0:31]; fA[1] = a[32:63]" (9.7.3.3, ``.f32x2``). An oracle written for
one element turns into the oracle of the packed form with :func:`lanewise`: every lane of every
packed operand goes through the scalar expectation, and the packed destination must hold each
lane's expected value in its own bits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tests.model.oracle.expect import Case, Expect
from tests.model.oracle.ieee import fmt

# packed type -> (element type, lanes)
PACKED: dict[str, tuple[str, int]] = {"f16x2": ("f16", 2), "bf16x2": ("bf16", 2), "f32x2": ("f32", 2)}


def element(name: str) -> tuple[str, int]:
    """(element type, lanes) of a type: ``f16x2`` -> ``("f16", 2)``, ``f32`` -> ``("f32", 1)``."""
    return PACKED.get(name, (name, 1))


def split(bits: int, name: str) -> list[int]:
    """The lanes of a packed value, lane 0 (the low bits) first."""
    elem, n = element(name)
    w = fmt(elem).bits
    return [bits >> (w * k) & ((1 << w) - 1) for k in range(n)]


def join(lanes: list[int], elem: str) -> int:
    """Lanes of ``elem`` packed into one value, the first in the low bits."""
    w = fmt(elem).bits
    return sum(v << (w * k) for k, v in enumerate(lanes))


def partner(values: tuple[int, ...], k: int) -> int:
    """The value put beside ``values[k]`` in a packed operand: another one of the list, so the
    two lanes of an edge operand differ and every edge still reaches every lane."""
    return values[(5 * k + 1) % len(values)]


def pair_up(values: tuple[int, ...], elem: str) -> tuple[int, ...]:
    """Each value in lane 0 beside its :func:`partner` in lane 1."""
    return tuple(join([v, partner(values, k)], elem) for k, v in enumerate(values))


@dataclass(frozen=True, slots=True)
class Packed(Expect):
    """Each lane of the destination as its own expectation."""

    parts: tuple[Expect, ...]
    elem: str

    def ok(self, got: int) -> bool:
        lanes = split(got, f"{self.elem}x{len(self.parts)}")
        return all(e.ok(v) for e, v in zip(self.parts, lanes, strict=True))

    def __str__(self) -> str:
        return "lanes [" + ", ".join(str(p) for p in self.parts) + "] (lane 0 first)"


def lanewise(case: Case, packed: str) -> Case:
    """The packed form of a scalar case: every operand and result of the element type of
    ``packed`` holds ``packed``'s lanes, and lane k of the result is the scalar case of lane k of
    the operands (other slots are passed to every lane unchanged)."""
    elem, n = PACKED[packed]
    slots = {s for s, t in case.operands.items() if t == elem}
    results = {s for s, t in case.results.items() if t == elem}

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        per_lane = [case.expect({s: split(v, packed)[k] if s in slots else v for s, v in x.items()})
                    for k in range(n)]  # fmt: skip
        return {s: Packed(tuple(p[s] for p in per_lane), elem) if s in results else per_lane[0][s]
                for s in per_lane[0]}  # fmt: skip

    extra = tuple(
        {s: join([v, case.extra_lanes[(k + 1) % len(case.extra_lanes)][s]], elem) if s in slots else v
         for s, v in lane.items()}
        for k, lane in enumerate(case.extra_lanes)
    )  # fmt: skip
    return replace(
        case,
        operands={s: packed if s in slots else t for s, t in case.operands.items()},
        results={s: packed if s in results else t for s, t in case.results.items()},
        expect=expect,
        edges={s: pair_up(v, elem) if s in slots else v for s, v in case.edges.items()},
        extra_lanes=extra,
    )
