"""Kernel output vs reference: tolerances by dtype, NaN never passes, unwritten elements named."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from karyamorph.harness.gpu.inputs import bits_dtype, poison_mask
from karyamorph.kernel.spec import DType

if TYPE_CHECKING:
    import torch

# Default (atol, rtol) by dtype when the spec's [check] gives none: about 100 ulp of fp32 around
# 1.0 for f32, a few ulp of fp16/bf16 for the half types, exact for integers.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "f16": (1e-2, 1e-2),
    "bf16": (1e-2, 1e-2),
    "f32": (1e-5, 1e-5),
    "f64": (1e-9, 1e-9),
}

# How many mismatching elements a report lists.
FIRST_MISMATCHES = 8


@dataclass(frozen=True, slots=True)
class Tolerance:
    """An element passes when ``|actual - expected| <= atol + rtol * |expected|``."""

    atol: float
    rtol: float


def tolerance_for(dtype: DType, atol: float | None = None, rtol: float | None = None) -> Tolerance:
    """The spec's tolerances where given, else the dtype's defaults (integers: exact)."""
    default = DEFAULT_TOLERANCES.get(dtype.name, (0.0, 0.0)) if dtype.kind == "f" else (0.0, 0.0)
    return Tolerance(default[0] if atol is None else float(atol), default[1] if rtol is None else float(rtol))


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One element that failed: its index in the output and both values (as text for NaN/inf)."""

    index: tuple[int, ...]
    expected: float | int | str
    actual: float | int | str
    unwritten: bool = False


@dataclass(frozen=True, slots=True)
class Comparison:
    """The verdict on one output buffer.

    Attributes
    ----------
    passed : bool
        Every element within tolerance and none NaN.
    elements, mismatches : int
        Element count and how many failed (NaN and unwritten ones included).
    nan : int
        Elements where the kernel's output is NaN (other than the untouched poison).
    unwritten : int
        Elements still holding the poison pattern: the kernel never stored to them.
    max_abs_err, max_rel_err : float
        The largest ``|actual - expected|`` over all elements (equal values count 0), and the
        largest relative error: NaN when any element is NaN (a NaN output never reads as
        "error 0"); the absolute one is inf for an infinity where a finite value was expected.
    mean_abs_err, mean_rel_err : float
        Over the elements where both values are finite; relative errors skip expected zeros.
    norm_rel_err : float
        ``||actual - expected|| / ||expected||`` over finite elements (a near-zero output that
        passes elementwise stands out here).
    first : tuple of Mismatch
        The first few failing elements in index order.
    """

    name: str
    passed: bool
    elements: int
    mismatches: int
    nan: int
    unwritten: int
    max_abs_err: float
    mean_abs_err: float
    max_rel_err: float
    mean_rel_err: float
    norm_rel_err: float
    atol: float
    rtol: float
    first: tuple[Mismatch, ...] = ()

    @property
    def message(self) -> str:
        """One line: the verdict and the numbers behind it."""
        if self.passed:
            return (
                f"{self.name}: ok, {self.elements} elements, max abs err {self.max_abs_err:.3g}, "
                f"max rel err {self.max_rel_err:.3g} (atol {self.atol:g}, rtol {self.rtol:g})"
            )
        parts = [f"{self.name}: {self.mismatches} of {self.elements} elements differ"]
        if self.unwritten:
            parts.append(f"{self.unwritten} unwritten (still the poison pattern)")
        if self.nan:
            parts.append(f"{self.nan} NaN")
        parts.append(
            f"max abs err {self.max_abs_err:.3g}, mean abs err {self.mean_abs_err:.3g}, "
            f"max rel err {self.max_rel_err:.3g}, mean rel err {self.mean_rel_err:.3g} "
            f"(atol {self.atol:g}, rtol {self.rtol:g})"
        )
        shown = ", ".join(
            f"{list(m.index)}: expected {m.expected}, got {m.actual}"
            + (" (unwritten)" if m.unwritten else "")
            for m in self.first
        )
        return "; ".join(parts) + (f"; first: {shown}" if shown else "")

    def as_dict(self) -> dict[str, Any]:
        data = {k: _json_number(v) for k, v in asdict(self).items()}
        data["first"] = [{**asdict(m), "index": list(m.index)} for m in self.first]
        data["message"] = self.message
        return data


def worst_error(errors: Iterable[float | int | str]) -> float:
    """The largest of ``errors`` (as numbers or their JSON text, e.g. ``"nan"``); NaN if any is
    NaN, where Python's ``max`` would keep whichever came first; 0 for none."""
    values = [float(e) for e in errors]
    if any(math.isnan(v) for v in values):
        return math.nan
    return max(values, default=0.0)


def _json_number(value: Any) -> Any:
    """Non-finite floats as text, so that the dict stays strict JSON."""
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return str(value)
    return value


def _scalar(value: float | int, is_float: bool) -> float | int | str:
    if not is_float:
        return int(value)
    v = float(value)
    return v if v == v and abs(v) != float("inf") else str(v)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for dim in reversed(shape):
        index.append(flat % dim if dim else 0)
        flat = flat // dim if dim else 0
    return tuple(reversed(index))


def compare(
    name: str,
    actual: torch.Tensor,
    expected: torch.Tensor,
    tolerance: Tolerance,
    *,
    poisoned: bool = False,
) -> Comparison:
    """Compare a kernel output with its reference, element by element.

    Parameters
    ----------
    name : str
        The output argument's name (for messages).
    actual : Tensor
        What the kernel wrote.
    expected : Tensor
        The reference result; any dtype (it is compared in float64, or exactly for integer
        outputs after conversion to the output's dtype); reshaped when only the shape differs.
    tolerance : Tolerance
        From :func:`tolerance_for`.
    poisoned : bool
        The output was filled with the poison pattern before the launch: elements that still
        hold it are reported as unwritten.

    Raises
    ------
    ValueError
        When the element counts differ.
    """
    import torch

    if expected.numel() != actual.numel():
        raise ValueError(
            f"{name}: the reference has {expected.numel()} elements (shape {tuple(expected.shape)}) "
            f"but the output has {actual.numel()} (shape {tuple(actual.shape)})"
        )
    expected = expected.reshape(actual.shape).to(actual.device)
    is_float = actual.dtype.is_floating_point
    a64 = actual.to(torch.float64)
    e64 = expected.to(torch.float64)
    if is_float:
        diff = (a64 - e64).abs()
        # a == e passes equal infinities; NaN fails both tests, so NaN never passes.
        ok = (a64 == e64) | (diff <= tolerance.atol + tolerance.rtol * e64.abs())
        finite = torch.isfinite(a64) & torch.isfinite(e64)
    else:
        view = bits_dtype(actual.dtype)
        ok = actual.contiguous().view(view) == expected.to(actual.dtype).contiguous().view(view)
        diff = (a64 - e64).abs()
        finite = torch.ones_like(ok)
    unwritten_mask = poison_mask(actual) & ~ok if poisoned else torch.zeros_like(ok)
    nan_mask = torch.isnan(a64) & ~unwritten_mask
    any_nan = bool((torch.isnan(a64) | torch.isnan(e64)).any())
    bad = ~ok
    count = int(bad.sum())
    fin_diff = diff[finite]
    fin_exp = e64.abs()[finite]
    nonzero = fin_exp > 0
    rel = fin_diff[nonzero] / fin_exp[nonzero]
    norm_e = float(torch.linalg.vector_norm(e64[finite])) if fin_diff.numel() else 0.0
    norm_d = float(torch.linalg.vector_norm(fin_diff)) if fin_diff.numel() else 0.0
    first: list[Mismatch] = []
    if count:
        flat_bad = torch.nonzero(bad.reshape(-1)).reshape(-1)[:FIRST_MISMATCHES].tolist()
        flat_a, flat_e = a64.reshape(-1), e64.reshape(-1)
        flat_u = unwritten_mask.reshape(-1)
        shape = tuple(actual.shape)
        for i in flat_bad:
            first.append(
                Mismatch(
                    _unravel(int(i), shape),
                    _scalar(float(flat_e[i]), is_float),
                    _scalar(float(flat_a[i]), is_float),
                    bool(flat_u[i]),
                )
            )
    return Comparison(
        name=name,
        passed=count == 0,
        elements=actual.numel(),
        mismatches=count,
        nan=int(nan_mask.sum()),
        unwritten=int(unwritten_mask.sum()),
        # torch's max propagates NaN; a == e first, so that equal infinities count 0.
        max_abs_err=float(torch.where(a64 == e64, 0.0, diff).max()) if diff.numel() else 0.0,
        mean_abs_err=float(fin_diff.mean()) if fin_diff.numel() else 0.0,
        max_rel_err=math.nan if any_nan else float(rel.max()) if rel.numel() else 0.0,
        mean_rel_err=float(rel.mean()) if rel.numel() else 0.0,
        norm_rel_err=norm_d / norm_e if norm_e else (0.0 if norm_d == 0 else float("inf")),
        atol=tolerance.atol,
        rtol=tolerance.rtol,
        first=tuple(first),
    )
