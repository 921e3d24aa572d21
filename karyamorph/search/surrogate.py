"""A Gaussian-process surrogate of a kernel's time over a space, in numpy.

Inputs are configurations as positions in [0, 1] along each parameter's value list (the order a
template author gives is the order that matters); the target is log time, standardised, because
kernel times span orders of magnitude and what matters is their ratio. The covariance is Matern
5/2 with one length scale per parameter (automatic relevance determination: a parameter that
does not matter gets a long scale), a signal variance and a noise variance. These are fitted to
each data set by maximising the log marginal likelihood (type-II maximum likelihood) with Adam
on their logarithms, warm-started from the previous fit, so no hyper-parameter is tuned by hand
to a data set. The prediction is a mean and a standard deviation per candidate; :func:`expected_improvement`
turns them into the acquisition the model-guided strategy ranks by.
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
