"""A NaN in a kernel's output reads as NaN everywhere: the comparison, the stage figure, the store."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

from karyamorph.harness.gpu.compare import Tolerance, compare, worst_error
from karyamorph.harness.gpu.jobs import CorrectnessReport, Trial
from karyamorph.harness.pipeline import RunResult
from karyamorph.harness.record import to_record
from karyamorph.harness.stages.base import Status, figure
from karyamorph.harness.stages.correctness import trials_result
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.store.database import Store

EXAMPLES = Path(__file__).resolve().parents[3] / "datasets" / "kernels"
EXACT = Tolerance(0.0, 0.0)


def test_an_all_nan_output_has_nan_errors_not_zero() -> None:
    c = compare("c", torch.full((4,), float("nan")), torch.tensor([1.0, -2.0, 3.0, 0.5]), EXACT)
    assert not c.passed and c.nan == 4
    assert math.isnan(c.max_abs_err) and math.isnan(c.max_rel_err)
    assert "max abs err 0" not in c.message and "max abs err nan" in c.message
    assert c.as_dict()["max_abs_err"] == "nan"


def test_one_nan_element_makes_the_max_nan_and_finite_outputs_keep_their_max() -> None:
    expected = np.array([1.0, 2.0, 4.0, 8.0], dtype=np.float32)
    actual = np.array([1.5, 2.0, 3.0, 8.0], dtype=np.float32)
    clean = compare("c", torch.from_numpy(actual), torch.from_numpy(expected), EXACT)
    assert clean.max_abs_err == float(np.max(np.abs(actual.astype(np.float64) - expected)))  # 1.0
    assert clean.max_rel_err == 0.5
    actual[2] = np.nan
    dirty = compare("c", torch.from_numpy(actual), torch.from_numpy(expected), EXACT)
    assert math.isnan(dirty.max_abs_err) and math.isnan(dirty.max_rel_err)
    # An infinity where a finite value was expected is an infinite error; equal infinities are 0.
    inf = compare("c", torch.tensor([math.inf, math.inf]), torch.tensor([1.0, math.inf]), EXACT)
    assert inf.max_abs_err == math.inf and inf.mismatches == 1


def test_worst_error_keeps_nan_in_any_position() -> None:
    assert math.isnan(worst_error([math.nan, 1.0])) and math.isnan(worst_error([1.0, math.nan]))
    assert math.isnan(worst_error([0.5, "nan"]))
    assert worst_error([0.5, "inf", 2]) == math.inf
    assert worst_error([]) == 0.0 and worst_error([0.25, 3, 1.5]) == 3.0


def test_the_correctness_figure_and_the_stored_metric_are_nan(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLES / "vadd.toml")
    kernel = bind(spec, sizes={"n": 4})
    expected = torch.tensor([1.0, 2.0, 3.0, 4.0])
    good = compare("c", expected.clone(), expected, EXACT)
    bad = compare("c", torch.tensor([1.0, math.nan, 3.0, 4.0]), expected, EXACT)
    # What a worker reports for two trials: the first clean, the second with one NaN.
    report = CorrectnessReport((Trial(1, True, (good,)), Trial(2, False, (bad,))), None)
    data = {"seed": 1, "trials_requested": 2, "seeds": [1, 2], "worker_seconds": 0.5, "worker_starts": 0}
    result = trials_result(report, data, trials=2, entry=kernel.entry, model_blocks_per_sm=None)
    assert result.status == Status.FAIL
    err = figure(result, "max_abs_err")
    assert err is not None and math.isnan(err)
    run = RunResult(kernel, prepare(spec), Arch.parse("sm_120"), discover(), None,
                    (("correctness", result),), datetime.now(UTC), 1.0)  # fmt: skip
    with Store.open(tmp_path / "k.duckdb") as store:
        run_id = store.record_run(to_record(run))
        rows = store.query(
            "SELECT isnan(value) FROM metrics WHERE run_id = ? AND name = 'max_abs_err'", [run_id]
        ).rows
    assert rows == [(True,)]
