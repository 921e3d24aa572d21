"""The cost model's prediction of a run beside its measured time: predicted, measured, their
ratio and the bound that limits the prediction, read from the predict and timing stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from karyamorph.harness.stages.base import StageResult, Status, figure
from karyamorph.table import table


@dataclass(frozen=True, slots=True)
class Beside:
    """A run's predicted and measured time.

    Attributes
    ----------
    predicted_seconds : float or None
        None when no prediction was made; ``reason`` says why.
    bound : str
        The cost model's limiting term (``dram``, ``issue``, ``latency``, ``unit.fp32``, ...).
    terms : dict
        Every term of the prediction, in seconds.
    figures : str
        Where the device figures came from (microbenchmark tables or defaults), in words.
    measured_seconds : float or None
        The timing stage's median; None when it did not pass (``unmeasured`` says why).
    """

    predicted_seconds: float | None
    bound: str = ""
    terms: dict[str, float] = field(default_factory=dict)
    figures: str = ""
    reason: str = ""
    measured_seconds: float | None = None
    unmeasured: str = ""

    @property
    def ratio(self) -> float | None:
        """Measured over predicted time (> 1: the kernel is slower than predicted)."""
        if self.predicted_seconds is None or self.measured_seconds is None or self.predicted_seconds <= 0:
            return None
        return self.measured_seconds / self.predicted_seconds

    def as_dict(self) -> dict[str, Any]:
        """The ``prediction`` entry of a run's JSON."""
        return {
            "predicted_seconds": self.predicted_seconds, "bound": self.bound, "terms": dict(self.terms),
            "figures": self.figures, "reason": self.reason, "measured_seconds": self.measured_seconds,
            "unmeasured": self.unmeasured, "measured_over_predicted": self.ratio,
        }  # fmt: skip

    def rows(self) -> list[tuple[str, str]]:
        """``(what, value)`` rows for a table: predicted, measured, ratio, bound, figures."""
        if self.predicted_seconds is None:
            return [("predicted", f"none: {self.reason}")]
        measured = f"{self.measured_seconds * 1e6:.2f} us" if self.measured_seconds is not None else (
            f"not measured ({self.unmeasured})")  # fmt: skip
        ratio = self.ratio
        return [
            ("predicted", f"{self.predicted_seconds * 1e6:.2f} us"),
            ("measured", measured),
            ("measured / predicted", f"{ratio:.2f}" if ratio is not None else "-"),
            ("bound", self.bound),
            ("figures", self.figures),
        ]

    def view(self) -> RenderableType:
        """The rows side by side as a one-row table (a line when there is no prediction)."""
        if self.predicted_seconds is None:
            return Text(f"prediction: none ({self.reason})")
        rows = self.rows()
        return table([name for name, _ in rows], [[value for _, value in rows]])


def beside(predicted: StageResult | None, timing: StageResult | None) -> Beside | None:
    """The prediction of a run with a predict stage beside its timing stage's median (None: the
    run has no predict stage)."""
    if predicted is None:
        return None
    measured, unmeasured = None, "the run has no timing stage"
    if timing is not None:
        median = figure(timing, "median_ns")
        if timing.status == Status.PASS and median is not None:
            measured, unmeasured = median * 1e-9, ""
        else:
            unmeasured = str(timing.data.get("reason") or timing.data.get("error") or timing.status)
    if predicted.status != Status.PASS or "predicted_seconds" not in predicted.data:
        d = predicted.data
        reason = str(d.get("reason") or d.get("error") or predicted.log or predicted.status)
        return Beside(None, reason=reason, measured_seconds=measured, unmeasured=unmeasured)
    d = predicted.data
    return Beside(float(d["predicted_seconds"]), str(d.get("bound", "")),
                  {str(k): float(v) for k, v in d.get("terms", {}).items()}, str(d.get("figures", "")),
                  measured_seconds=measured, unmeasured=unmeasured)  # fmt: skip
