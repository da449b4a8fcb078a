"""Seventeenth hunt: NumPy calls with the keyword arguments and layouts real code uses
(``order=``, ``dtype=``, ``hermitian=``, ``where=``).

Each case gave a silent wrong derivative (or an unrelated error) before its fix; the
expected values are closed forms (the functions are linear in the differentiated
argument) or central differences.
"""
import warnings

import numpy as np
import pytest

import capstan

RNG = np.random.default_rng(17)


def _central(f, x, t, h=1e-4):
    """Richardson-extrapolated central difference of ``f`` at ``x`` along ``t``."""
    d1 = (f(x + h * t) - f(x - h * t)) / (2 * h)
    d2 = (f(x + h / 2 * t) - f(x - h / 2 * t)) / h
    return (4 * d2 - d1) / 3


# -- ravel(order="K") of a strided array -----------------------------------------------
# ravel "K" reads the elements in memory order; the rule read them in C order (forward
# mode: a silently wrong tangent) or raised NumPy's "order 'K' is not permitted for
# reshaping" (reverse mode).

LAYOUTS = {
    "transposed": lambda b: b.transpose(2, 0, 1),
    "reversed": lambda b: b[::-1, :, ::2],
    "fortran slice": lambda b: np.asfortranarray(b)[:, 1:3],
    "swapped reversed": lambda b: b.swapaxes(0, 2)[::-1, ::-2],
    "fortran": lambda b: np.asfortranarray(b),
    "broadcast": lambda b: np.broadcast_to(b[:, :1], (3, 4, 5)).transpose(1, 0, 2),
    "float32 transposed": lambda b: b.astype(np.float32).transpose(1, 2, 0),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ravel_in_memory_order(layout):
    order = "K"
    lay = LAYOUTS[layout]
    v = lay(RNG.standard_normal((3, 4, 5)))
    direction = lay(RNG.standard_normal((3, 4, 5)))  # (laid out as v: NumPy reads it as v)
    t = np.array(direction)
    w = RNG.standard_normal(v.size)
    want = float(np.ravel(direction, order=order) @ w)  # (the maps are linear)
    for fn in (lambda a: np.ravel(a, order=order) @ w, lambda a: a.ravel(order) @ w,
               lambda a: a.flatten(order=order) @ w):
        value, tangent = capstan.jvp(fn, (v,), (t,))
        assert value == pytest.approx(np.ravel(v, order=order) @ w)
        assert tangent == pytest.approx(want, rel=1e-5)
        (g,) = capstan.gradient(fn, v)
        assert np.sum(g * t) == pytest.approx(want, rel=1e-5)


# -- cumsum/cumprod with a complex dtype of a real array -----------------------------------
# Their reverse rules handed back a complex cotangent for the real input (the imaginary
# part of the output's cotangent leaked into a real argument's gradient).

@pytest.mark.parametrize("f", [
    lambda a: np.cumsum(a, dtype=np.complex128),
    lambda a: np.cumprod(a, dtype=np.complex128),
    lambda a: np.cumsum(a, axis=0, dtype=np.complex128),
    lambda a: np.add.accumulate(a, dtype=np.complex128),
    lambda a: np.multiply.accumulate(a, axis=0, dtype=np.complex128),
    lambda a: a.cumsum(dtype=np.complex128),
], ids=["cumsum", "cumprod", "cumsum axis", "add.accumulate", "multiply.accumulate", "a.cumsum"])
@pytest.mark.parametrize("x", [np.array([0.3, -1.2, 0.8, 1.1]), np.array([0.3, 0.0, 0.8, 1.1])],
                         ids=["", "a zero"])
def test_complex_dtype_scan_of_a_real_array(f, x):
    wr, wi = RNG.standard_normal(4), RNG.standard_normal(4)
    loss = lambda a: np.sum(wr * np.real(np.ravel(f(a)))) + np.sum(wi * np.imag(np.ravel(f(a))))
    (g,) = capstan.gradient(loss, x)
    assert g.dtype == np.float64
    for k in range(4):
        e = np.zeros(4)
        e[k] = 1.0
        assert g[k] == pytest.approx(_central(loss, x, e), rel=1e-7, abs=1e-9)


# -- pinv(a, hermitian=True) ---------------------------------------------------------
# NumPy reads the lower triangle alone (eigh); the rule differentiated the full matrix,
# silently wrong along a direction that is not Hermitian (and for a non-Hermitian a).

A = RNG.standard_normal((4, 4)) + 3 * np.eye(4)


@pytest.mark.parametrize("a", [A @ A.T, A, A @ A.T + 1j * (A - A.T), np.stack([A @ A.T, A.T @ A])],
                         ids=["symmetric", "not symmetric", "hermitian", "batched"])
def test_pinv_hermitian_reads_the_lower_triangle(a):
    w = RNG.standard_normal(a.shape)
    f = lambda m: np.real(np.sum(w * np.linalg.pinv(m, hermitian=True)))
    t = RNG.standard_normal(a.shape) + (1j * RNG.standard_normal(a.shape) if np.iscomplexobj(a) else 0)
    want = _central(f, a, t)
    assert capstan.jvp(f, (a,), (t,))[1] == pytest.approx(want, rel=1e-6)
    (g,) = capstan.gradient(f, a)
    assert np.real(np.sum(np.conj(g) * t)) == pytest.approx(want, rel=1e-6)
    f_positional = lambda m: np.real(np.sum(w * np.linalg.pinv(m, 1e-15, True)))
    assert capstan.jvp(f_positional, (a,), (t,))[1] == pytest.approx(want, rel=1e-6)


# -- nanmean(where=) ---------------------------------------------------------------------
# Its Python equivalent had no where=: "_nanmean() got an unexpected keyword argument".

def test_nanmean_where():
    x = RNG.standard_normal((3, 4))
    x[0, 1] = x[2, 3] = np.nan
    mask = np.array([True, False, True, True])
    w = RNG.standard_normal(3)
    f = lambda a: np.nanmean(a, axis=1, where=mask) @ w
    known = ~np.isnan(x) & mask
    want = np.where(known, w[:, None] / known.sum(axis=1, keepdims=True), 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        (g,) = capstan.gradient(f, x)
        t = RNG.standard_normal(x.shape)
        value, tangent = capstan.jvp(f, (x,), (t,))
    assert value == pytest.approx(f(x))
    assert np.allclose(g, want)
    assert tangent == pytest.approx(np.sum(want * t))


# -- real and complex values joined ----------------------------------------------------
# A list of equal-shaped arrays reaches a rule as the one array NumPy makes of it, complex
# when any element is: each element's share of the cotangent was complex, so a real
# element (a real input, or abs(z) of a complex one) took an imaginary part -- a complex
# gradient for a real input, and a wrong one for z behind abs(z).

Z = np.array([1 + 2j, -0.5 + 1j])
C2 = np.array([0.3 - 1j, 2j])
WR, WI = RNG.standard_normal(4), RNG.standard_normal(4)


def _loss(y):
    y = np.ravel(y)
    return np.sum(WR * np.real(y)) + np.sum(WI * np.imag(y))


JOINS = {
    "concatenate": lambda u, v: np.concatenate([u, v]),
    "stack": lambda u, v: np.stack([u, v]),
    "hstack": lambda u, v: np.hstack([u, v]),
    "array": lambda u, v: np.array([u, v]),
    "multiply list": lambda u, v: np.multiply([u, v], 1 + 0.5j),
    "mean of stack": lambda u, v: np.concatenate([np.mean(np.stack([u, v]), axis=0), v]),
}


@pytest.mark.parametrize("join", JOINS)
def test_a_real_element_joined_with_complex_values(join):
    fj = JOINS[join]
    # the real part of z's gradient through abs(z): d/dx + i d/dy of the loss
    f = lambda z: _loss(fj(np.abs(z), C2))
    (g,) = capstan.gradient(f, Z)
    want = np.array([_central(f, Z, e) + 1j * _central(f, Z, 1j * e) for e in np.eye(2)])
    assert np.allclose(g, want, rtol=1e-7, atol=1e-9)
    # a real input's gradient is real
    x = np.array([0.7, -1.3])
    h = lambda a: _loss(fj(a, C2))
    (gx,) = capstan.gradient(h, x)
    assert not np.iscomplexobj(gx)
    assert np.allclose(gx, [_central(h, x, e) for e in np.eye(2)], rtol=1e-7, atol=1e-9)


def test_reverse_jacobian_of_a_complex_dtype_scan():
    """jacobian(mode="reverse") of cumsum(x, dtype=complex) was all zeros."""
    x = np.array([1.0, 2.0])
    jac = capstan.jacobian(lambda a: np.cumsum(a, dtype=complex), x, mode="reverse")
    assert np.array_equal(jac, [[1, 0], [1, 1]])


# -- complex values written into real memory, forward mode --------------------------------
# NumPy keeps the real part (a ComplexWarning); forward mode made the new tangent buffer of
# a plain real array complex, so the written elements' tangent kept an imaginary part.

WRITES = {
    "setitem": lambda o, v: o.__setitem__(slice(None), v),
    "ellipsis": lambda o, v: o.__setitem__(Ellipsis, v),
    "copyto": lambda o, v: np.copyto(o, v, casting="unsafe"),
    "ufunc out": lambda o, v: np.add(v, 1.0, out=o, casting="unsafe"),
}


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("point", [np.array([0.5, -1.0, 2.0]), np.array([0.5 + 1j, -1.0, 2.0 - 0.5j])],
                         ids=["real", "complex"])
def test_complex_written_into_real_memory_forward(write, point):
    def f(a):
        o = np.zeros(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            WRITES[write](o, a * (1 + 2j))
        return np.sum(np.real(o) * [1.0, 2.0, 3.0]) + np.sum(np.imag(o * 1j))
    t = np.array([1.0, 0.5, -1.0]) + (0.25j if np.iscomplexobj(point) else 0)
    want = _central(f, point, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        value, tangent = capstan.jvp(f, (point,), (t,))
    assert tangent == pytest.approx(want, rel=1e-7)


# -- lists of values passed by keyword ---------------------------------------------------
# np.stack(arrays=[x, y]) and np.clip(a, a_min=[x, ...]) recursed without end (the call was
# looked for differentiated values among the keywords' direct values alone, so it went back
# and forth between the rule and the fallback); np.copyto(dst, [x, y]) read the list as a
# dtype ("Field elements must be 2- or 3-tuples").

P = np.array([1.5, 0.3, 0.1])
KEYWORD_LISTS = {
    "stack arrays=": (lambda a: np.stack(arrays=[a, 2 * a], axis=1), lambda t: np.stack([t, 2 * t], axis=1)),
    "clip a_min=[...]": (lambda a: np.clip(np.arange(1.0, 4.0), a_min=[a[0], 0.0, 0.0], a_max=5.0),
                         lambda t: np.array([t[0], 0.0, 0.0])),
    "copyto list": (lambda a: _copied([a[0], a[1], 1.0]), lambda t: np.array([t[0], t[1], 0.0])),
    "copyto src=list": (lambda a: _copied(src=[a[0], a[1], 1.0]), lambda t: np.array([t[0], t[1], 0.0])),
}


def _copied(*args, **kwargs):
    out = np.zeros(3)
    np.copyto(out, *args, **kwargs)
    return out


@pytest.mark.parametrize("name", KEYWORD_LISTS)
def test_lists_of_values_by_keyword(name):
    f, linear = KEYWORD_LISTS[name]  # (f is linear in a near P: its tangent is linear(t))
    w = RNG.standard_normal(np.shape(f(P)))
    t = np.array([1.0, 0.3, -0.5])
    assert capstan.jvp(lambda a: np.sum(w * f(a)), (P,), (t,))[1] == pytest.approx(np.sum(w * linear(t)))
    (g,) = capstan.gradient(lambda a: np.sum(w * f(a)), P)
    assert np.sum(g * t) == pytest.approx(np.sum(w * linear(t)))
