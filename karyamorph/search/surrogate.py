"""A Gaussian-process surrogate of a kernel's time over a space, in numpy.

Inputs are configurations as positions in [0, 1] along each parameter's value list (the order a
template author gives is the order that matters). The target is each measured time's rank mapped
to a standard normal score (:func:`normal_scores`, a rank-based Gaussian copula): kernel times are
heavy-tailed (the slowest configurations of a space are often 30 times the fastest), and a model
fitted to the times, or even to their logarithms, spends its variance on the slow tail while the
search only cares about the order near the top; failures simply rank last.

The covariance is Matern 5/2 with one length scale per parameter (automatic relevance
determination: a parameter that does not matter gets a long scale), a signal variance and a noise
variance. They are fitted to each data set by maximising the log marginal likelihood (type-II
maximum likelihood) with Adam on their logarithms, warm-started from the previous fit, so no
hyper-parameter is set by hand for a data set. The prediction is a mean and a standard deviation
per candidate; :func:`expected_improvement` turns them into the acquisition the model-guided
strategy ranks by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SQRT5 = math.sqrt(5.0)
# Bounds on the log hyper-parameters: scales from 1/20 to 20 position units (a position spans
# [0, 1]), noise from 1e-6 to 1 of the standardised variance, signal from 0.05 to 20.
LOG_SCALE = (math.log(0.05), math.log(20.0))
LOG_NOISE = (math.log(1e-6), 0.0)
LOG_SIGNAL = (math.log(0.05), math.log(20.0))
# Acklam's rational approximation of the normal quantile: the central region's bound and the
# coefficients of its four polynomials.
P_LOW = 0.02425
ACKLAM_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
            -3.066479806614716e01, 2.506628277459239e00)  # fmt: skip
ACKLAM_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
            -1.328068155288572e01)  # fmt: skip
ACKLAM_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
            4.374664141464968e00, 2.938163982698783e00)  # fmt: skip
ACKLAM_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)


@dataclass(frozen=True, slots=True)
class Hyper:
    """Log length scales (one per input), log signal variance, log noise variance."""

    log_scales: np.ndarray
    log_signal: float = 0.0
    log_noise: float = math.log(1e-2)

    @classmethod
    def initial(cls, width: int) -> Hyper:
        # Half the position range: neighbours correlate, opposite ends barely.
        return cls(np.full(width, math.log(0.5)))

    def vector(self) -> np.ndarray:
        return np.concatenate([self.log_scales, [self.log_signal, self.log_noise]])

    @classmethod
    def from_vector(cls, v: np.ndarray) -> Hyper:
        return cls(
            np.clip(v[:-2], *LOG_SCALE), float(np.clip(v[-2], *LOG_SIGNAL)), float(np.clip(v[-1], *LOG_NOISE))
        )


def _matern(r: np.ndarray) -> np.ndarray:
    return (1.0 + SQRT5 * r + (5.0 / 3.0) * r * r) * np.exp(-SQRT5 * r)


def _sq_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.maximum(d, 0.0)


def _neg_lml_and_grad(x: np.ndarray, y: np.ndarray, h: Hyper) -> tuple[float, np.ndarray]:
    """Negative log marginal likelihood and its gradient in the log hyper-parameters."""
    n = len(y)
    scales = np.exp(h.log_scales)
    signal, noise = math.exp(h.log_signal), math.exp(h.log_noise)
    xs = x / scales
    r = np.sqrt(_sq_dist(xs, xs))
    e = np.exp(-SQRT5 * r)
    kf = signal * (1.0 + SQRT5 * r + (5.0 / 3.0) * r * r) * e
    k = kf + noise * np.eye(n)
    chol = np.linalg.cholesky(k)
    k_inv = np.linalg.inv(k)
    alpha = k_inv @ y
    nll = 0.5 * float(y @ alpha) + float(np.log(np.diag(chol)).sum()) + 0.5 * n * math.log(2 * math.pi)
    w = np.outer(alpha, alpha) - k_inv
    # d kf / d log(scale_j) = signal (5/3) (1 + sqrt5 r) exp(-sqrt5 r) (dx_j / scale_j)^2
    wg = w * (signal * (5.0 / 3.0) * (1.0 + SQRT5 * r) * e)
    row = wg.sum(1)
    grads = np.empty(len(scales) + 2)
    for j in range(len(scales)):
        c = xs[:, j]
        grads[j] = 0.5 * (2.0 * float(row @ (c * c)) - 2.0 * float(c @ wg @ c))
    grads[-2] = 0.5 * float((w * kf).sum())
    grads[-1] = 0.5 * noise * float(np.trace(w))
    return nll, -grads


def fit_hyper(x: np.ndarray, y: np.ndarray, start: Hyper, steps: int, rate: float = 0.05) -> Hyper:
    """Maximise the log marginal likelihood from ``start`` with ``steps`` Adam steps."""
    v = start.vector()
    m = np.zeros_like(v)
    s = np.zeros_like(v)
    best, best_nll = start, math.inf
    for t in range(1, steps + 1):
        h = Hyper.from_vector(v)
        try:
            nll, g = _neg_lml_and_grad(x, y, h)
        except np.linalg.LinAlgError:
            # A near-singular covariance: more noise makes it positive definite again.
            v[-1] = min(v[-1] + 1.0, LOG_NOISE[1])
            continue
        if nll < best_nll:
            best, best_nll = h, nll
        m = 0.9 * m + 0.1 * g
        s = 0.999 * s + 0.001 * g * g
        v = v - rate * (m / (1 - 0.9**t)) / (np.sqrt(s / (1 - 0.999**t)) + 1e-8)
    return best


@dataclass(frozen=True, slots=True, eq=False)
class GaussianProcess:
    """A fitted Gaussian process: :meth:`predict` gives mean and standard deviation of log time.

    Build with :meth:`fit`.
    """

    hyper: Hyper
    x: np.ndarray
    alpha: np.ndarray
    chol_inv: np.ndarray
    y_mean: float
    y_std: float

    @classmethod
    def fit(
        cls, x: np.ndarray, y: np.ndarray, start: Hyper | None = None, steps: int = 30
    ) -> GaussianProcess:
        """Fit to inputs ``x`` (n, d) and targets ``y`` (n,); ``start`` warm-starts the hyper-parameters."""
        y_mean = float(y.mean())
        y_std = float(y.std()) or 1.0
        z = (y - y_mean) / y_std
        hyper = fit_hyper(x, z, start or Hyper.initial(x.shape[1]), steps)
        while True:
            k = _kernel(x, x, hyper) + math.exp(hyper.log_noise) * np.eye(len(z))
            try:
                chol = np.linalg.cholesky(k)
                break
            except np.linalg.LinAlgError:
                hyper = Hyper(hyper.log_scales, hyper.log_signal, hyper.log_noise + 1.0)
        chol_inv = np.linalg.inv(chol)
        alpha = chol_inv.T @ (chol_inv @ z)
        return cls(hyper, x, alpha, chol_inv, y_mean, y_std)

    def predict(self, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the target at each candidate row."""
        ks = _kernel(candidates, self.x, self.hyper)
        mean = ks @ self.alpha
        v = self.chol_inv @ ks.T
        var = np.maximum(math.exp(self.hyper.log_signal) - (v * v).sum(0), 1e-12)
        return self.y_mean + self.y_std * mean, self.y_std * np.sqrt(var)


def _kernel(a: np.ndarray, b: np.ndarray, h: Hyper) -> np.ndarray:
    scales = np.exp(h.log_scales)
    return math.exp(h.log_signal) * _matern(np.sqrt(_sq_dist(a / scales, b / scales)))


def _normal_cdf(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + _erf(z / math.sqrt(2.0)))


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7): ample for ranking candidates.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def expected_improvement(mean: np.ndarray, std: np.ndarray, best: float) -> np.ndarray:
    """Expected improvement below ``best`` of a normal prediction (minimisation)."""
    gap = best - mean
    z = gap / std
    return gap * _normal_cdf(z) + std * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def normal_scores(costs: np.ndarray) -> np.ndarray:
    """Each cost's rank as a standard normal quantile, ``probit((rank + 1/2) / n)``; tied costs
    (failures, at infinity) share their average rank."""
    n = len(costs)
    order = np.argsort(costs, kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(n, dtype=float)
    _, group, counts = np.unique(costs, return_inverse=True, return_counts=True)
    sums = np.bincount(group.reshape(-1), weights=ranks, minlength=len(counts))
    average = (sums / counts)[group.reshape(-1)]
    return probit((average + 0.5) / n)


def probit(p: np.ndarray) -> np.ndarray:
    """The standard normal quantile of each ``p`` in (0, 1): Acklam's rational approximation
    (relative error below 1.2e-9)."""
    out = np.empty_like(p, dtype=float)
    low, high = p < P_LOW, p > 1 - P_LOW
    mid = ~(low | high)
    q = p[mid] - 0.5
    r = q * q
    out[mid] = _poly(ACKLAM_A, r) * q / _poly((*ACKLAM_B, 1.0), r)
    for mask, sign in ((low, 1.0), (high, -1.0)):
        t = np.sqrt(-2.0 * np.log(np.where(sign > 0, p[mask], 1.0 - p[mask])))
        out[mask] = sign * _poly(ACKLAM_C, t) / _poly((*ACKLAM_D, 1.0), t)
    return out


def _poly(coefficients: tuple[float, ...], x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    for c in coefficients:
        out = out * x + c
    return out
