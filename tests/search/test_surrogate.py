"""The surrogate: normal scores against math.erf, expected improvement against its closed form,
and a Gaussian process that learns a smooth function and which inputs matter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from karyamorph.search.surrogate import GaussianProcess, expected_improvement, normal_scores, probit


def normal_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


@pytest.mark.parametrize("p", [1e-6, 0.001, 0.02, 0.024, 0.03, 0.2, 0.5, 0.77, 0.976, 0.999, 1 - 1e-6])
def test_probit_inverts_the_normal_cdf(p: float) -> None:
    (z,) = probit(np.array([p]))
    assert normal_cdf(float(z)) == pytest.approx(p, rel=1e-8, abs=1e-12)


def test_normal_scores_follow_the_ranks_and_share_ties() -> None:
    costs = np.array([3.0, 1.0, math.inf, 2.0, math.inf, 2.0])
    scores = normal_scores(costs)
    # ranks 0..5 by cost: 1.0 -> 0, the two 2.0 -> 1 and 2 (average 1.5), 3.0 -> 3, inf -> 4 and 5 (4.5)
    expected = [probit(np.array([(r + 0.5) / 6]))[0] for r in (3, 0, 4.5, 1.5, 4.5, 1.5)]
    assert scores == pytest.approx(expected)


def test_expected_improvement_matches_its_closed_form() -> None:
    mean, std, best = np.array([0.0, 1.0, -0.5, 2.0]), np.array([1.0, 0.5, 0.1, 2.0]), 0.3
    got = expected_improvement(mean, std, best)
    for m, s, g in zip(mean, std, got, strict=True):
        z = (best - m) / s
        pdf = math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        assert g == pytest.approx((best - m) * normal_cdf(z) + s * pdf, abs=1e-6)


def test_the_process_learns_a_smooth_function_and_its_irrelevant_input() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((60, 2))
    f = np.sin(3 * x[:, 0]) + 0.5 * x[:, 0]  # the second input does not matter
    model = GaussianProcess.fit(x, f, steps=150)
    test = rng.random((200, 2))
    mean, std = model.predict(test)
    truth = np.sin(3 * test[:, 0]) + 0.5 * test[:, 0]
    assert np.abs(mean - truth).max() < 0.05
    assert np.all(std < 0.1)
    scales = np.exp(model.hyper.log_scales)
    assert scales[1] > 3 * scales[0]
    _, far_std = model.predict(np.array([[3.0, 0.5]]))  # far outside the data: unsure
    assert far_std[0] > 5 * std.max()
