"""Regressions from the fourth bug hunt: attribute stores that relabel or rewrite an array
being differentiated (``a.shape = s``, ``a.real = v``, ``a.flat = v``), the determinant
at singular matrices, ...  Each test failed (a wrong number, a wrong shape or an internal
exception) before its fix."""
import math

import numpy as np
import pytest
import scipy.linalg
import scipy.special

import capstan

A = np.array([0.3, -0.7, 1.1, 2.0])


def _fd_jacobian(f, x, h=1e-6):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(f(x)) + x.shape)


# ----------------------------------------------------------------- attribute stores on arrays
def _set_imag(x):
    z = x * (1 + 1j)
    z.imag = 2.0
    return np.abs(z)


def _set_real(x):
    z = x * (1 + 1j)
    z.real = 1.0
    return np.abs(z)


def _set_flat_constant(x):
    z = x * 1.0
    z.flat = 3.0
    return z


def _set_flat_values(x):
    z = np.zeros(4)
    z.flat = x * 2
    return z


def _set_real_of_real(x):
    z = x * 1.0
    z.real = x[::-1] ** 2
    return z


@pytest.mark.parametrize("f", [_set_imag, _set_real, _set_flat_constant, _set_flat_values, _set_real_of_real])
def test_element_writes_through_attributes_forward(f):
    """``a.imag = v`` and friends wrote the value only: the tangent kept the old
    elements (``a.flat = 3.0`` had the identity as its Jacobian)."""
    want = _fd_jacobian(f, A)
    assert np.allclose(capstan.jacobian(f, A), want, atol=1e-7)
    v = np.arange(1.0, 5.0)
    assert np.allclose(capstan.jvp(f, (A,), (v,))[1], want @ v, atol=1e-7)


@pytest.mark.parametrize("f", [_set_imag, _set_real, _set_flat_constant, _set_flat_values, _set_real_of_real])
def test_element_writes_through_attributes_reverse(f):
    """Reverse mode: the right gradient, or capstan's refusal of a write through a complex
    array's real/imaginary view (never the old gradient of the overwritten elements)."""
    w = np.arange(1.0, 5.0)
    want = _fd_jacobian(f, A).T @ w
    try:
        got = capstan.gradient(lambda x: np.sum(f(x) * w), A)[0]
    except TypeError as e:
        assert "capstan" in str(e)
        return
    assert np.allclose(got, want, atol=1e-7)


def _set_shape(x):
    b = x * 2.0
    b.shape = (2, 2)
    return b[0, 1] * b[1, 0]


def _set_shape_of_written_plain_array(x):
    b = np.zeros(4)
    b[1:] = x[1:]
    b.shape = (2, 2)
    return b[0, 1] * b[1, 0]


def _set_dtype(x):
    b = (x * 2.0).reshape(2, 2)
    b.dtype = np.complex128
    return np.sum(np.abs(b))


@pytest.mark.parametrize("f", [_set_shape, _set_shape_of_written_plain_array, _set_dtype])
@pytest.mark.parametrize("how", ["D-jvp", "gradient", "jacobian"])
def test_relabelling_an_array_in_place_is_refused(f, how):
    """``a.shape = s`` (or ``.dtype``) of a differentiated array changed the value's layout
    and left the derivative's: an IndexError inside capstan, or a gradient of the wrong
    shape and values ((2,) for a (4,) input)."""
    run = {"D-jvp": lambda: capstan.jvp(f, (A,), (np.ones(4),)),
           "gradient": lambda: capstan.gradient(f, A),
           "jacobian": lambda: capstan.jacobian(f, A)}[how]
    with pytest.raises(capstan.NoRuleError, match=r"ndarray\.(shape|dtype).*reshape"):
        run()


def test_shape_set_to_its_own_shape_and_plain_errors_unchanged():
    def same(x):
        b = x * 2.0
        b.shape = (4,)
        return b
    assert np.allclose(capstan.jacobian(same, A), 2 * np.eye(4))

    def bad(x):
        b = x * 2.0
        b.shape = (3, 2)
    with pytest.raises(ValueError, match="cannot reshape array of size 4"):
        capstan.gradient(lambda x: bad(x) or 0.0, A)

    def no_imag(x):
        b = x * 2.0
        b.imag = 1.0
    with pytest.raises(TypeError) as plain:
        no_imag(A)
    with pytest.raises(TypeError) as routed:
        capstan.jvp(no_imag, (A,), (A,))
    assert str(routed.value) == str(plain.value)


def test_meshgrid_and_tensorsolve_still_differentiated():
    """NumPy's own ``.shape =`` stores (meshgrid's xy axes, tensorsolve's result) are inside
    functions with rules."""
    x = np.array([0.3, 0.7, 1.1])
    assert np.allclose(capstan.gradient(lambda x: np.sum(np.meshgrid(x, 2 * x)[1] ** 2), x)[0], 24 * x)
    a = np.eye(6).reshape(2, 3, 6) + 0.1
    g = capstan.gradient(lambda b: np.sum(np.linalg.tensorsolve(a, b.reshape(2, 3))), np.arange(6.0))[0]
    assert np.allclose(g, _fd_jacobian(lambda b: np.sum(np.linalg.tensorsolve(a, b.reshape(2, 3))), np.arange(6.0)))


# ----------------------------------------------------------------- det at singular matrices
_rng = np.random.default_rng(4)
SINGULAR = {
    "2x2": np.array([[1.0, 2.0], [1.0, 2.0]]),
    "rank 1": np.outer([1.0, 2.0, 3.0], [0.5, -1.0, 2.0]),
    "rank 2": np.arange(1.0, 10.0).reshape(3, 3),
    "zero": np.zeros((3, 3)),
    "1x1 zero": np.zeros((1, 1)),
    "20x20 rank 19": (lambda m: m @ np.diag([0.0] + [1.0] * 19) @ m.T)(_rng.standard_normal((20, 20))),
}


@pytest.mark.parametrize("name", list(SINGULAR))
@pytest.mark.parametrize("det", [np.linalg.det, scipy.linalg.det])
def test_det_slope_at_a_singular_matrix_is_the_adjugate(name, det):
    """``d det(a) = tr(adj(a) da)`` holds at singular matrices too; the rules formed it as
    ``det(a) inv(a)``, and LAPACK's inverse raised LinAlgError inside capstan."""
    a = SINGULAR[name]
    want = _fd_jacobian(np.linalg.det, a)
    scale = max(1.0, np.abs(want).max())
    assert np.allclose(capstan.gradient(det, a)[0], want, atol=1e-6 * scale)
    t = _rng.standard_normal(a.shape)
    assert np.isclose(capstan.jvp(det, (a,), (t,))[1], np.sum(want * t), atol=1e-6 * scale)


def test_det_singular_batched_complex_and_second_order():
    b = np.stack([SINGULAR["2x2"], np.array([[2.0, 1.0], [0.5, 3.0]])])
    f = lambda x: np.sum(np.linalg.det(x))  # noqa: E731
    assert np.allclose(capstan.gradient(f, b)[0], _fd_jacobian(f, b))
    c = np.array([[1.0 + 1j, 2.0], [1.0 + 1j, 2.0]])
    assert np.isclose(capstan.D(lambda s: np.linalg.det(c + s * np.eye(2)), 0.0), 3 + 1j)
    a = SINGULAR["rank 1"].ravel()
    g = lambda y: capstan.gradient(lambda x: np.linalg.det(x.reshape(3, 3)), y)[0]  # noqa: E731
    assert np.allclose(capstan.hessian(lambda x: np.linalg.det(x.reshape(3, 3)), a), _fd_jacobian(g, a, 1e-5),
                       atol=1e-6)


def test_slogdet_of_a_singular_matrix_is_refused_clearly():
    a = SINGULAR["2x2"]
    with pytest.raises(capstan.NoRuleError, match="slogdet of a singular matrix"):
        capstan.gradient(lambda x: np.linalg.slogdet(x)[1], a)
    with pytest.raises(capstan.NoRuleError, match="slogdet of a singular matrix"):
        capstan.jvp(lambda x: np.linalg.slogdet(x)[1], (a,), (np.ones((2, 2)),))


# ----------------------------------------------------------------- writes through as_strided views
def _write_through_strided_view(x):
    a = x * 1.0
    np.lib.stride_tricks.as_strided(a, shape=(2,), strides=(2 * a.itemsize,))[:] = 1.0
    return a


def _add_through_strided_view(x):
    a = x * 1.0
    v = np.lib.stride_tricks.as_strided(a, shape=(2,), strides=(2 * a.itemsize,))
    v += 1.0
    return a


@pytest.mark.parametrize("f", [_write_through_strided_view, _add_through_strided_view])
@pytest.mark.parametrize("how", ["jvp", "gradient"])
def test_write_through_a_strided_view_is_refused(f, how):
    """capstan reads an ``as_strided`` view as a copy of the elements it shows: a write
    into it left the array unchanged -- a wrong value (``[0.3, ...]`` for ``[1.0, ...]``)
    and the identity as its Jacobian."""
    run = {"jvp": lambda: capstan.jvp(f, (A,), (np.ones(4),)),
           "gradient": lambda: capstan.gradient(lambda x: np.sum(f(x)), A)}[how]
    with pytest.raises(capstan.NoRuleError, match="as_strided's view"):
        run()


def test_strided_views_still_read_and_keep_numpys_read_only_error():
    from numpy.lib.stride_tricks import as_strided, sliding_window_view
    w = lambda x: np.sum(as_strided(x, shape=(3, 2), strides=(8, 8)) ** 2)  # noqa: E731
    assert np.allclose(capstan.gradient(w, A)[0], [0.6, -2.8, 4.4, 4.0])
    assert np.allclose(capstan.hessian(w, A), np.diag([2.0, 4.0, 4.0, 2.0]))
    copied = lambda x: np.sum(as_strided(x, shape=(3, 2), strides=(8, 8)).copy() ** 2)  # noqa: E731
    assert np.allclose(capstan.gradient(copied, A)[0], [0.6, -2.8, 4.4, 4.0])
    assert capstan.jacobian(lambda x: sliding_window_view(x, 2), A).shape == (3, 2, 4)

    def read_only(x):
        as_strided(x * 1.0, shape=(2,), writeable=False)[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        capstan.gradient(lambda x: read_only(x) or 0.0, A)


# ----------------------------------------------------------------- slopes at removable singularities
def _nth(f, n):
    for _ in range(n):
        f = (lambda g: lambda x: capstan.D(g, x))(f)
    return f


_PI = np.pi


@pytest.mark.parametrize("f, x, n, want", [
    # a ** b's slope in a at b = 0 was a constant 0: the mixed second derivative 1/a lost
    (lambda b: capstan.D(lambda a: a ** b, 1.7), 0.0, 1, 1 / 1.7),
    (lambda b: capstan.D(lambda a: np.power(a, b), 1.7), 0.0, 1, 1 / 1.7),
    (lambda b: capstan.D(lambda a: math.pow(a, b), 1.7), 0.0, 1, 1 / 1.7),
    (lambda b: capstan.D(lambda a: np.sum(np.power(np.array([a, 2.0]), b)), 1.7), 0.0, 1, 1 / 1.7),
    # spence's slope at z = 1 was the constant -1
    (scipy.special.spence, 1.0, 2, 0.5),
    (scipy.special.spence, 1.0, 3, -2 / 3),
    # ellipk, ellipe: (E - K) / m at m = 0 was 0/0 = NaN
    (scipy.special.ellipk, 0.0, 1, _PI / 8),
    (scipy.special.ellipk, 0.0, 2, 9 * _PI / 64),
    (scipy.special.ellipe, 0.0, 1, -_PI / 8),
    (scipy.special.ellipe, 0.0, 2, -3 * _PI / 64),
    # rgamma's slope at its zeros was the constant (-1)^n n!
    (scipy.special.rgamma, 0.0, 2, 2 * np.euler_gamma),
    (scipy.special.rgamma, -1.0, 2, 2 * (np.euler_gamma - 1) * -1),
    # the regularized incomplete gamma/beta integrands at x = 0 with a = 1: 0 * log 0 = NaN
    (lambda x: scipy.special.gammainc(1.0, x), 0.0, 1, 1.0),
    (lambda x: scipy.special.gammainc(1.0, x), 0.0, 2, -1.0),
    (lambda x: scipy.special.betainc(1.0, 2.0, x), 0.0, 1, 2.0),
    (lambda x: scipy.special.betainc(1.0, 2.0, x), 0.0, 2, -2.0),
    (lambda x: scipy.special.betainc(2.0, 1.0, x), 1.0, 1, 2.0),
    # Struve functions at x = 0: the recurrence reaches orders below 0 (NaN) or |x|'s slope 0
    (lambda x: scipy.special.struve(0, x), 0.0, 2, 0.0),
    (lambda x: scipy.special.struve(0, x), 0.0, 3, -4 / (3 * _PI)),
    (lambda x: scipy.special.struve(1, x), 0.0, 2, 4 / (3 * _PI)),
    (lambda x: scipy.special.modstruve(0, x), 0.0, 3, 4 / (3 * _PI)),
    (lambda x: scipy.special.modstruve(1, x), 0.0, 2, 4 / (3 * _PI)),
])
def test_derivatives_at_removable_singularities_of_a_slope(f, x, n, want):
    assert np.isclose(_nth(f, n)(x), want, rtol=1e-9, atol=1e-12)


def test_mixed_partials_of_a_power_agree():
    for f in (lambda v: v[0] ** v[1], lambda v: np.power(v[0], v[1]), lambda v: math.pow(v[0], v[1])):
        h = capstan.hessian(f, np.array([1.7, 0.0]))
        assert np.allclose(h, [[0.0, 1 / 1.7], [1 / 1.7, math.log(1.7) ** 2]])
    assert capstan.D(lambda a: a ** 0.0, 0.0) == 0.0
    assert capstan.D(lambda a: np.power(a, 0.0), 0.0) == 0.0


def test_slopes_beside_those_points_unchanged():
    import mpmath
    for m in (1e-12, 1e-4, 2e-3, 0.3, -0.5):
        assert np.isclose(capstan.D(scipy.special.ellipk, m), float(mpmath.diff(mpmath.ellipk, m)), rtol=1e-11)
        assert np.isclose(capstan.D(scipy.special.ellipe, m), float(mpmath.diff(mpmath.ellipe, m)), rtol=1e-11)
    for z in (0.5, 1.0 + 1e-9, 2.0):
        assert np.isclose(capstan.D(scipy.special.spence, z), math.log(z) / (1 - z), rtol=1e-12)
    for x in (-2.5, -0.5, 0.3, 4.0):
        assert np.isclose(capstan.D(scipy.special.rgamma, x), float(mpmath.diff(mpmath.rgamma, x)), rtol=1e-10)
    assert np.isclose(capstan.D(lambda x: scipy.special.struve(1, x), 0.3),
                      float(mpmath.diff(lambda t: mpmath.struveh(1, t), 0.3)), rtol=1e-12)


# ----------------------------------------------------------------- out= of functions implemented by capstan
def _into(make, call):
    def f(x):
        out = make()
        call(x, out)
        return out * 1.0
    return f


_OUT_CASES = {
    "np.outer": _into(lambda: np.empty((2, 2)), lambda x, o: np.outer(x[:2], x[2:], out=o)),
    "ndarray.dot": _into(lambda: np.empty(2), lambda x, o: x.reshape(2, 2).dot(x[:2], out=o)),
    "np.nanmean": _into(lambda: np.empty(()), lambda x, o: np.nanmean(x, out=o)),
    "np.compress": _into(lambda: np.empty(2), lambda x, o: np.compress([True, False, True, False], x, out=o)),
    "np.choose": _into(lambda: np.empty(4), lambda x, o: np.choose([0, 1, 0, 1], [x, x * 2], out=o)),
    "np.median": _into(lambda: np.empty(()), lambda x, o: np.median(x, out=o)),
    "np.percentile": _into(lambda: np.empty(()), lambda x, o: np.percentile(x, 30, out=o)),
    "np.ptp": _into(lambda: np.empty(()), lambda x, o: np.ptp(x, out=o)),
    "np.vecdot": _into(lambda: np.empty(()), lambda x, o: np.vecdot(x, x, out=o)),
}


@pytest.mark.parametrize("name", list(_OUT_CASES))
def test_out_argument_of_implemented_functions_is_written(name):
    """capstan implements these functions from others; the implementation returned its
    result and left ``out`` as it was (np.outer(x, y, out=buf): buf's garbage as the value,
    derivative 0), or refused out= altogether."""
    f = _OUT_CASES[name]
    want = _fd_jacobian(f, A)
    y, t = capstan.jvp(f, (A,), (np.ones(4),))
    assert np.allclose(y, f(A.copy()))
    assert np.allclose(t, want @ np.ones(4), atol=1e-7)
    w = np.arange(1.0, np.size(y) + 1).reshape(np.shape(y))
    g = capstan.gradient(lambda x: np.sum(f(x) * w), A)[0]
    assert np.allclose(g, np.tensordot(w, want, np.ndim(y)), atol=1e-7)
