"""Regressions from the third bug hunt: slopes of norms formed from sums of squares or powers
that leave the float range, and the other leftovers of the second hunt (see each test)."""
import cmath
import math
import warnings

import numpy as np
import pytest

import capstan


def _first_order(f, x):
    """``[D, gradient, jvp, pullback]`` of scalar ``f`` at float ``x``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _, back = capstan.pullback(f, x)
        return [capstan.D(f, x), capstan.gradient(f, x)[0], capstan.jvp(f, (x,), (1.0,))[1], back(1.0)[0]]


# ----------------------------------------------------------------------------- norms (1)
# |t| written as a norm: slope sign(t) at every scale.  The sums of squares underflow
# below 1e-154 (slopes of 1.0000056 at 1e-160, 1e-300 at 1e-300) and overflow past
# 1e154 (a slope of 0 at 1e200); the p-norms' powers sooner (inf or 0 at 1e-100).
NORMS = {
    "norm": lambda t: np.linalg.norm([t, 0.0]),
    "norm ord=2": lambda t: np.linalg.norm(np.array([t, 0.0]), 2),
    "norm fro": lambda t: np.linalg.norm(np.array([[t, 0.0], [0.0, 0.0]]), "fro"),
    "norm axis=1": lambda t: np.linalg.norm(np.array([[t, 0.0], [0.0, 1.0]]), axis=1)[0],
    "norm axis=0 keepdims": lambda t: np.linalg.norm(np.array([[t, 0.0], [0.0, 1.0]]), axis=0, keepdims=True)[0, 0],
    "norm ord=3": lambda t: np.linalg.norm(np.array([t, 0.0]), 3),
    "norm ord=4": lambda t: np.linalg.norm(np.array([t, 0.0]), 4),
    "norm ord=1.5": lambda t: np.linalg.norm(np.array([t, 0.0]), 1.5),
    "complex norm": lambda t: np.linalg.norm(np.array([t + 0j, 0j])),
    "np.hypot": lambda t: np.hypot(t, 0.0),
    "math.hypot": lambda t: math.hypot(t, 0.0),
    "math.dist": lambda t: math.dist([t, 0.0], [0.0, 0.0]),
    "abs complex": lambda t: abs(complex(t, 0.0)),
    "np.abs complex": lambda t: np.abs(np.complex128(t)),
}


@pytest.mark.parametrize("t", [1e-100, 1e-160, -1e-160, 1e-300, 5e-324, -5e-324, 1e200, -1e300])
@pytest.mark.parametrize("name", list(NORMS))
def test_norm_of_a_scaled_unit_vector_has_slope_sign(name, t):
    for got in _first_order(NORMS[name], t):
        assert got == math.copysign(1.0, t)


# hypot(t, t, ...) at a subnormal t is rounded to a few bits (hypot(5e-324, 5e-324) ==
# 5e-324): x / hypot came out 1 per operand (2, 1.5), not 1/sqrt(n) of them
@pytest.mark.parametrize("t", [5e-324, 1e-310, 1e-160, 1e300])
@pytest.mark.parametrize("f, n", [(lambda t: np.hypot(t, t), 2), (lambda t: math.hypot(t, t, t), 3),
                                  (lambda t: np.linalg.norm([t, t]), 2),
                                  (lambda t: np.linalg.norm(np.full(4, t), 3), 4)])
def test_norm_of_equal_entries_has_slope_of_the_scaled_norm(f, n, t):
    p = 3 if n == 4 else 2
    want = n ** (1.0 / p)  # d/dt ||t (1, ..., 1)||_p = n^(1/p)
    for got in _first_order(f, t):
        assert got == pytest.approx(want, rel=1e-14)


@pytest.mark.parametrize("scale", [1e-200, 1.0, 1e200])
@pytest.mark.parametrize("ord", [None, 1.5, 3, 7])
def test_norm_gradient_is_the_closed_form_at_every_scale(ord, scale):
    u = np.array([1.0, -2.0, 0.5, 0.0])
    p = 2 if ord is None else ord
    want = np.sign(u) * np.abs(u) ** (p - 1) / np.sum(np.abs(u) ** p) ** ((p - 1) / p)  # scale-free
    x = scale * u
    g = capstan.gradient(lambda v: np.linalg.norm(v, ord), x)[0]
    np.testing.assert_allclose(g, want, rtol=1e-13, atol=0)
    d = np.array([0.3, 1.0, -2.0, 0.7])
    assert capstan.jvp(lambda v: np.linalg.norm(v, ord), (x,), (d,))[1] == pytest.approx(want @ d, rel=1e-13)


@pytest.mark.parametrize("scale", [1e-160, 1e200])
def test_norm_hessian_at_extreme_scales(scale):
    u = np.array([1.0, 2.0, -1.0])
    x = scale * u
    n = np.linalg.norm(u)
    want = (np.eye(3) - np.outer(u, u) / n ** 2) / (n * scale)  # (I - x x^T / |x|^2) / |x|
    np.testing.assert_allclose(capstan.hessian(lambda v: np.linalg.norm(v), x), want, rtol=1e-13)


@pytest.mark.parametrize("r", [1e-160, 1e-200, 1e200])
def test_phase_slope_of_a_tiny_or_huge_number(r):
    # d arg(r + iy)/dy at y = 0 is 1/r: |z|^2 underflowed to 0 (slope 0) below 1e-162
    for f in (lambda y: cmath.phase(complex(r, y)), lambda y: np.angle(np.complex128(r) + 1j * y)):
        for got in _first_order(f, 0.0)[:3]:
            assert got == pytest.approx(1.0 / r, rel=1e-14)


def test_complex_norm_gradient_at_tiny_scale():
    z = np.array([1e-200 + 2e-200j, -3e-200j])
    u = np.array([1 + 2j, -3j])
    g = capstan.gradient(lambda v: np.linalg.norm(v), z)[0]
    np.testing.assert_allclose(g, u / np.linalg.norm(u), rtol=1e-14)
