"""Gradients through the SciPy-stack rules against the plain function, in one process.

Each workload is a scalar function of an array built on one of the new rule tables
(eigh, svd, expm, rfft, scipy.special, scipy.stats).  For each: the plain function's time, the time of
``capstan.gradient`` of it, their ratio, and the hand-written gradient's time; the capstan
gradient is checked against the hand-written one before anything is timed.

Targets (issue 10): the ``eigh``-based gradient of a 100x100 symmetric matrix function at most
3x the plain function; the gradient of ``sum(scipy.stats.norm.logpdf(x, loc, scale))`` over 1000
points in ``loc`` and ``scale`` at most 5x.

    python benchmarks/scipy_rules.py [--quick]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import scipy.fft  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.special  # noqa: E402

import capstan  # noqa: E402
from _adbench import assert_close, fmt_ratio, fmt_time, median_time  # noqa: E402

rng = np.random.default_rng(0)


def _lower_read(g):
    """A symmetric gradient ``g`` as seen through ``eigh``'s lower-triangle read."""
    return np.tril(g + g.T, -1) + np.diag(np.diag(g))


# --------------------------------------------------------------------------- workloads
def eigh_workload(n=100):
    """``trace(exp(A) B)`` for symmetric ``A``, the matrix exponential from ``eigh``;
    hand-written: the Daleckii-Krein formula."""
    m = rng.standard_normal((n, n)) / np.sqrt(n)
    a = m + m.T
    b = rng.standard_normal((n, n))

    def f(x):
        w, v = np.linalg.eigh(x)
        return np.sum((v * np.exp(w)) @ v.T * b.T)

    def hand(x):
        w, v = np.linalg.eigh(x)
        e = np.exp(w)
        d = w[:, None] - w[None, :]
        same = np.abs(d) < 1e-12
        lf = np.where(same, e[:, None], (e[:, None] - e[None, :]) / np.where(same, 1.0, d))
        return _lower_read(v @ (lf * (v.T @ b.T @ v)) @ v.T)

    return "eigh: trace(expm_sym(A) B), %dx%d" % (n, n), f, hand, a


def eigvalsh_workload(n=100):
    """``sum(log(1 + w^2))`` of the eigenvalues ``w``; hand-written ``V diag(f'(w)) V^T``."""
    m = rng.standard_normal((n, n)) / np.sqrt(n)
    a = m + m.T

    def f(x):
        return np.sum(np.log1p(np.linalg.eigvalsh(x) ** 2))

    def hand(x):
        w, v = np.linalg.eigh(x)
        return _lower_read((v * (2 * w / (1 + w * w))) @ v.T)

    return "eigvalsh: sum(log(1 + w^2)), %dx%d" % (n, n), f, hand, a


def svd_workload(m=120, n=80):
    """The nuclear norm ``sum(s)``; hand-written ``U V^T``."""
    a = rng.standard_normal((m, n))

    def f(x):
        return np.sum(np.linalg.svd(x, full_matrices=False)[1])

    def hand(x):
        u, _, vh = np.linalg.svd(x, full_matrices=False)
        return u @ vh

    return "svd: nuclear norm, %dx%d" % (m, n), f, hand, a


def expm_workload(n=50):
    """``trace(expm(A) B)``; hand-written: the Fréchet derivative at ``A^T`` applied to ``B^T``."""
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    b = rng.standard_normal((n, n))

    def f(x):
        return np.sum(scipy.linalg.expm(x) * b.T)

    def hand(x):
        return scipy.linalg.expm_frechet(x.T, b.T, compute_expm=False)

    return "expm: trace(expm(A) B), %dx%d" % (n, n), f, hand, a


def fft_workload(n=4096):
    """A weighted power spectrum ``sum(w |rfft(x)|^2)``; hand-written ``2 irfft``-based."""
    x = rng.standard_normal(n)
    w = rng.uniform(0.5, 1.5, n // 2 + 1)

    def f(v):
        return np.sum(w * np.abs(scipy.fft.rfft(v)) ** 2)

    def hand(v):  # 2 Re(F^H (w Y)) over the half spectrum: an inverse transform of w Y, padded
        full = np.zeros(n, dtype=complex)
        full[:n // 2 + 1] = w * scipy.fft.rfft(v)
        return 2 * n * np.real(scipy.fft.ifft(full))

    return "rfft: weighted power spectrum, n=%d" % n, f, hand, x


def special_workload(n=100_000):
    """``sum(gammaln(x) + log_ndtr(x) + erf(x))``; hand-written with digamma and friends."""
    x = rng.uniform(0.5, 3.0, n)

    def f(v):
        return np.sum(scipy.special.gammaln(v) + scipy.special.log_ndtr(v) + scipy.special.erf(v))

    def hand(v):
        normal = np.exp(-0.5 * v * v - scipy.special.log_ndtr(v)) / np.sqrt(2 * np.pi)
        return scipy.special.digamma(v) + normal + 2 / np.sqrt(np.pi) * np.exp(-v * v)

    return "special: gammaln + log_ndtr + erf, n=%d" % n, f, hand, x


def norm_logpdf_workload(n=1000):
    """``sum(scipy.stats.norm.logpdf(x, loc, scale))`` over ``n`` points, differentiated in
    ``(loc, scale)`` (SciPy's own ``rv_continuous`` code); hand-written: the score."""
    import scipy.stats

    x = rng.standard_normal(n)

    def f(p):
        return np.sum(scipy.stats.norm.logpdf(x, loc=p[0], scale=p[1]))

    def hand(p):
        r = x - p[0]
        return np.array([np.sum(r) / p[1] ** 2, -n / p[1] + np.sum(r * r) / p[1] ** 3])

    return "norm.logpdf: log-likelihood in loc and scale, n=%d" % n, f, hand, np.array([0.2, 1.3])


WORKLOADS = [eigh_workload, eigvalsh_workload, svd_workload, expm_workload, fft_workload, special_workload,
             norm_logpdf_workload]
#: the issue's targets: the gradient's time at most this many times the plain function's
TARGETS = {"eigh_workload": 3, "norm_logpdf_workload": 5}


def check(workload):
    """The capstan gradient of ``workload`` equals the hand-written one."""
    name, f, hand, x = workload()
    assert_close(capstan.gradient(f, x)[0], hand(x), rtol=1e-7, atol=1e-9)
    return name, f, hand, x


def main(argv):
    quick = "--quick" in argv
    print("# Gradients through the SciPy-stack rules (%s)\n" % ("quick" if quick else "full"))
    print("median time per call over 7 batches of ~80 ms of back-to-back calls after a warm-up; the\n"
          "gradient is checked against the hand-written one first.\n")
    print("| workload | plain f | capstan.gradient | ratio to plain | hand-written gradient "
          "| ratio to hand |")
    print("| --- | --- | --- | --- | --- | --- |")
    for make in WORKLOADS:
        name, f, hand, x = check(make)
        t_plain = median_time(lambda: f(x), quick)
        t_grad = median_time(lambda: capstan.gradient(f, x), quick)
        t_hand = median_time(lambda: hand(x), quick)
        target = " (target ≤ %d×)" % TARGETS[make.__name__] if make.__name__ in TARGETS else ""
        print("| %s | %s | %s | %s%s | %s | %s |" % (name, fmt_time(t_plain), fmt_time(t_grad),
                                                  fmt_ratio(t_grad / t_plain), target, fmt_time(t_hand),
                                                  fmt_ratio(t_grad / t_hand)))


if __name__ == "__main__":
    main(sys.argv[1:])
