"""Arithmetic in numpy's own ``float32``, where it gives the correctly rounded result.

IEEE 754 ``binary32`` addition, subtraction, multiplication and division rounded to nearest
even are what the concrete domain computes for ``.rn`` ``f32`` operations (it reaches them
through float64 with an error term). numpy's ``float32`` ufuncs give the same bits in one pass,
provided the process keeps the IEEE defaults: round to nearest and subnormals kept. Flush-to-zero
or denormals-are-zero (which ``torch.set_flush_denormal(True)`` switches on) break that; the
probe below catches them, and then the float64 path is used.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_OPS: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
}  # fmt: skip

# The smallest subnormal doubled (kept unless subnormals are flushed, on input or output), and
# 1 + 1.5 * 2**-24 (1 + 2**-23 under round to nearest, 1 under round toward zero or down).
_PROBE_A = np.array([2.0**-149, 1.0], np.float32)
_PROBE_B = np.array([2.0**-149, 1.5 * 2.0**-24], np.float32)
_PROBE_WANT = np.array([2.0**-148, 1.0 + 2.0**-23], np.float32).view(np.uint32)


def ieee_float32() -> bool:
    """Whether numpy's float32 arithmetic rounds to nearest and keeps subnormals right now."""
    # Compared as bits: a float comparison would itself read a subnormal as zero.
    return bool((np.add(_PROBE_A, _PROBE_B).view(np.uint32) == _PROBE_WANT).all())


def binary32(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a op b`` on float32 values, rounded to nearest (``op``: add, sub, mul, div)."""
    with np.errstate(all="ignore"):
        return np.asarray(_OPS[op](a, b))
