"""Whole programs on the SciPy stack, unmodified user code: gradients against finite
differences, Hessians against differences of gradients."""
import numpy as np
import pytest

sl = pytest.importorskip("scipy.linalg")
import scipy.fft  # noqa: E402
import scipy.special as sc  # noqa: E402

import capstan  # noqa: E402
from rule_checks import close, finite_difference  # noqa: E402

rng = np.random.default_rng(7)
XS = np.linspace(-1.0, 1.0, 6)
YS = np.sin(3 * XS) + 0.1 * rng.standard_normal(6)


def gp_log_likelihood(theta):
    """Gaussian-process log marginal likelihood: Cholesky factor and solve."""
    length, noise = np.exp(theta[0]), np.exp(theta[1])
    k = np.exp(-0.5 * (XS[:, None] - XS[None, :]) ** 2 / length ** 2) + noise * np.eye(6)
    factor = sl.cho_factor(k, lower=True)
    alpha = sl.cho_solve(factor, YS)
    return -0.5 * YS @ alpha - np.sum(np.log(np.diag(factor[0]))) - 3 * np.log(2 * np.pi)


def spectral_smoothing(x):
    """Low-pass filter through rfft/irfft, then a Huber loss and a log-sum-exp."""
    spectrum = scipy.fft.rfft(x, norm="ortho")
    smooth = scipy.fft.irfft(spectrum * np.exp(-np.arange(spectrum.size) / 2.0), n=x.size, norm="ortho")
    return np.sum(sc.huber(0.5, smooth - np.cos(np.arange(x.size)))) + sc.logsumexp(smooth)


def spectral_energy(params):
    """Eigenvalues of a symmetric matrix built from parameters, a softmax over them, the
    matrix exponential's trace and a log-determinant."""
    m = np.outer(params, params) + np.diag(np.arange(1.0, params.size + 1))
    w = np.linalg.eigvalsh(m)
    weights = sc.softmax(-w)
    return weights @ w + np.trace(sl.expm(0.1 * m)) + np.linalg.slogdet(m)[1]


def pca_reconstruction(data_flat):
    """Rank-2 reconstruction error from a thin SVD, and a QR-based projection."""
    data = data_flat.reshape(5, 3)
    u, s, vh = np.linalg.svd(data - data.mean(axis=0), full_matrices=False)
    low = (u[:, :2] * s[:2]) @ vh[:2]
    q, _ = np.linalg.qr(data)
    return np.sum((data - data.mean(axis=0) - low) ** 2) + np.sum((q.T @ data) ** 2) * 0.1


def special_mixture(x):
    """A likelihood with gamma, beta and Bessel functions and the normal CDF."""
    return (np.sum(sc.gammaln(x + 2) - sc.betaln(x + 1, 2.0) + sc.log_ndtr(x) + sc.i0e(x))
            + np.sum(sc.xlogy(x ** 2, 1 + x ** 2)))


PROGRAMS = [(gp_log_likelihood, np.array([-0.3, -2.0])), (spectral_smoothing, rng.standard_normal(8)),
            (spectral_energy, np.array([0.3, -0.5, 0.8])), (pca_reconstruction, rng.standard_normal(15)),
            (special_mixture, rng.uniform(0.2, 2.0, 4))]


@pytest.mark.parametrize("f,x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_gradient_and_forward(f, x):
    t = rng.standard_normal(x.shape)
    fd = finite_difference(f, (x,), (t,))[0]
    _, dy = capstan.jvp(f, (x,), (t,))
    close(dy, fd, 1e-7, 1e-7)
    close(capstan.gradient(f, x)[0] @ t, fd, 1e-7, 1e-7)


@pytest.mark.parametrize("f,x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_hessian(f, x):
    H = capstan.hessian(f, x)
    v = rng.standard_normal(x.shape)
    fd = finite_difference(lambda y: capstan.gradient(f, y)[0], (x,), (v,))[0]
    close(H @ v, fd, 1e-6, 1e-6)
    np.testing.assert_allclose(H, H.T, rtol=1e-8, atol=1e-10 * max(1.0, np.max(np.abs(H))))
