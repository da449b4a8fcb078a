"""Regressions from the thirteenth bug hunt (higher-order and matrix-valued derivatives
through real library code: scipy.stats, scipy.special, scipy.optimize, linear algebra,
NumPy and standard-library composites): each case gave a wrong derivative, or an internal
error where the derivative exists, before its fix."""
import numpy as np
import pytest
import scipy.stats as st

import capstan


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


# ------------------------------------------------------------------ views of complex memory
def _real_view_before_write(x):
    c = np.zeros(3, complex)
    r, i = c.real, c.imag  # views taken before the write
    c[:] = x * np.array([1.0, 2.0, 3.0]) + 1j * x * x
    return np.sum(r) + 10.0 * np.sum(i ** 2)


def _strided_imag_view(x):
    c = np.zeros((2, 3), complex)
    v = c.imag[:, ::2]
    c[:] = x + 1j * x * np.array([1.0, 2.0, 3.0])
    return np.sum(v * v)


@pytest.mark.parametrize("f", [_real_view_before_write, _strided_imag_view])
@pytest.mark.parametrize("route", [
    lambda f, x: capstan.D(f, x),
    lambda f, x: capstan.gradient(f, x)[0],
    lambda f, x: capstan.jvp(f, (x,), (1.0,))[1],
])
def test_real_and_imag_views_of_memory_written_later(f, route):
    """A view of a complex array's real or imaginary parts, taken before a value being
    differentiated was written into the array: forward mode read it as constant (D gave 0.0
    instead of 21.0), reverse mode raised 'cannot follow a write through this view'."""
    assert route(f, 0.5) == pytest.approx(_fd(f, 0.5), rel=1e-6)


@pytest.mark.parametrize("route", [
    lambda f, x: capstan.D(lambda y: capstan.D(f, y), x),
    lambda f, x: capstan.gradient(lambda y: capstan.D(f, y), x)[0],
    lambda f, x: capstan.D(lambda y: capstan.gradient(f, y)[0], x),
    lambda f, x: capstan.jacrev(capstan.jacfwd(f))(x),
])
def test_truncnorm_logcdf_second_derivative(route):
    """scipy.stats.truncnorm.logcdf keeps complex intermediates: its forward tangent is the
    real part of a complex tangent buffer, which reverse mode over it could not read
    ('cannot follow a write through this view of a differentiated array')."""
    f = lambda x: st.truncnorm.logcdf(x, -1.0, 2.0, loc=0.1, scale=0.5)
    d1 = lambda x: capstan.D(f, x)
    assert route(f, 0.4) == pytest.approx(_fd(d1, 0.4), rel=1e-6)


def test_view_of_a_fortran_array_written_later_is_refused_in_forward_mode():
    """A view that cannot be located in its (Fortran-ordered) memory root read as constant in
    forward mode (D gave 0.0 instead of 1.0); now refused as reverse mode refuses it."""
    def f(x):
        a = np.zeros((2, 3), order="F")
        r = a[0]
        a[:, 1] = x * np.array([1.0, 2.0])
        return np.sum(r * r)
    with pytest.raises(TypeError, match="cannot follow a write through this view"):
        capstan.D(f, 0.5)
    with pytest.raises(TypeError, match="cannot follow a write through this view"):
        capstan.gradient(f, 0.5)


def test_write_through_the_real_part_in_reverse_mode_is_refused_clearly():
    def f(x):
        c = np.zeros(3, complex)
        c.real[:] = x * np.array([1.0, 2.0, 3.0])
        return np.sum(np.abs(c) ** 2)
    assert capstan.D(f, 0.5) == pytest.approx(_fd(f, 0.5), rel=1e-6)
    with pytest.raises(TypeError, match="real or imaginary part"):
        capstan.gradient(f, 0.5)


# ------------------------------------------------------------------ sparsity through scipy.stats
_GRID = np.linspace(-1.0, 1.0, 4)


@pytest.mark.parametrize("f", [
    lambda th: np.sum(st.norm.pdf(_GRID[:, None], loc=th[0], scale=th[1] * np.ones((1, 2)))),
    lambda th: np.sum(st.norm.logpdf(_GRID, loc=th[0], scale=th[1] * np.ones(4))),
    lambda th: np.sum(st.gamma.logpdf(_GRID + 1.5, th[1], loc=th[0])),
])
def test_sparse_hessian_of_a_scipy_stats_density(f):
    """Sparsity detection treated scipy.stats' validity plan (a plain-valued helper returning
    a tuple of masks and flags) as a rule-less call and took np.size of the tuple:
    ValueError 'inhomogeneous shape' from hessian_sparsity, sparse_hessian and
    jacobian_sparsity."""
    x = np.array([0.1, 0.8])
    H = capstan.hessian(f, x)
    np.testing.assert_allclose(capstan.sparse_hessian(f, x).toarray(), H, rtol=1e-12)
    assert capstan.hessian_sparsity(f, x).toarray().all()


def test_sparsity_of_a_per_point_location_stays_diagonal():
    f = lambda th: np.sum(st.norm.logpdf(_GRID, loc=th[:4], scale=th[4:]))
    x = np.concatenate([np.zeros(4), np.ones(4)])
    P = capstan.hessian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(P, np.kron(np.ones((2, 2)), np.eye(4)).astype(bool))
    np.testing.assert_allclose(capstan.sparse_hessian(f, x).toarray(), capstan.hessian(f, x), rtol=1e-12)
