"""Regressions found by running autograd's test suite against capstan (through an adapter
kept outside this repository) with its checks raised one order: each case was refused,
or came out wrong, where the derivative exists, before its fix.  Oracles are closed forms."""
import cmath
import math

import numpy as np
import pytest

import capstan


def _third_fwd(f, x, y):
    """d3 f / dx2 dy by forward over forward over forward."""
    return capstan.D(lambda a: capstan.D(lambda b: capstan.D(lambda c: f(b, c), y), a), x)


def _third_rev(f, x, y):
    """(d3 f / dx3, d3 f / dx2 dy) by reverse over reverse over reverse."""
    g1 = lambda a, b: capstan.gradient(f, a, b)[0]  # noqa: E731
    g2 = lambda a, b: capstan.gradient(g1, a, b)[0]  # noqa: E731
    return capstan.gradient(g2, x, y)


def _radius_third(x, y):
    """(d3 r / dx3, d3 r / dx2 dy) of r = sqrt(x^2 + y^2)."""
    r = math.hypot(x, y)
    return -3 * x * y * y / r ** 5, 2 * y / r ** 3 - 3 * y ** 3 / r ** 5


def _angle_third(x, y):
    """(d3 t / dx3, d3 t / dx2 dy) of t = atan2(y, x)."""
    r2 = x * x + y * y
    return 2 * y / r2 ** 2 - 8 * x * x * y / r2 ** 3, 2 * x / r2 ** 2 - 8 * x * y * y / r2 ** 3


# |x| == |y|: the overflow-safe rules divide by max(|x|, |y|) (or a norm's largest entry),
# whose tie is a kink; differentiated, it made the third derivative NaN (refused) there.
RADIUS = {
    "np.hypot": np.hypot,
    "np.linalg.norm": lambda x, y: np.linalg.norm(np.array([x, y])),
    "np.abs(complex)": lambda x, y: np.abs(x + 1j * y),
    "abs(complex)": lambda x, y: abs(complex(x, y)),
    "math.hypot": math.hypot,
}
ANGLE = {
    "np.angle": lambda x, y: np.angle(x + 1j * y),
    "cmath.phase": lambda x, y: cmath.phase(complex(x, y)),
}


@pytest.mark.parametrize("point", [(1.0, 1.0), (-2.0, 2.0), (1.0, 1.1)])
@pytest.mark.parametrize("name", sorted(RADIUS) + sorted(ANGLE))
def test_third_derivatives_where_the_magnitudes_tie(name, point):
    f = RADIUS.get(name) or ANGLE[name]
    d3x, d3xy = (_radius_third if name in RADIUS else _angle_third)(*point)
    assert _third_fwd(f, *point) == pytest.approx(d3xy, rel=1e-9, abs=1e-12)
    assert _third_rev(f, *point) == pytest.approx((d3x, d3xy), rel=1e-9, abs=1e-12)


def test_third_derivative_of_a_norm_with_a_tied_largest_entry():
    """d3/dx3 of ||(x, x, 2x)|| = sqrt(6) |x| is 0; of ||v|| along e_0 at v = (1, 1, 1) it is
    -3 x (y^2 + z^2) / r^5."""
    v = np.array([1.0, -1.0, 1.0])
    got = capstan.D(lambda a: capstan.D(lambda b: capstan.D(
        lambda c: np.linalg.norm(v + np.array([c, 0.0, 0.0])), b), a), 0.0)
    r = math.sqrt(3.0)
    assert got == pytest.approx(-3 * 1.0 * 2.0 / r ** 5, rel=1e-9)


def test_complex_svd_magnitudes_third_order():
    """|vh| of a complex SVD (a column of vh is real: abs's unit z / |z| at Im z = 0) through
    three nested reverse passes was refused as NaN; checked against forward mode three
    deep and against Richardson differences of the exact second derivative."""
    rng = np.random.RandomState(3)
    a = rng.randn(3, 3) + 1j * rng.randn(3, 3)
    e = rng.randn(3, 3) + 1j * rng.randn(3, 3)

    def f(t):
        return np.sum(np.abs(np.linalg.svd(a + t * e, full_matrices=False)[2]))

    d3 = capstan.D(lambda s: capstan.D(lambda r: capstan.D(f, r), s), 0.1)
    g3 = capstan.gradient(lambda s: capstan.gradient(lambda r: capstan.gradient(f, r)[0], s)[0], 0.1)[0]
    d2 = lambda t: capstan.D(lambda r: capstan.D(f, r), t)  # noqa: E731
    fd = lambda h: (d2(0.1 + h) - d2(0.1 - h)) / (2 * h)  # noqa: E731
    rich = (4 * fd(5e-4) - fd(1e-3)) / 3
    assert d3 == pytest.approx(rich, rel=1e-6)
    assert g3 == pytest.approx(d3, rel=1e-9)


def test_odeint_at_differentiated_times_keeps_scipys_value():
    """With the output times differentiated, odeint's value was the interval-by-interval
    solution, 2e-8 away from SciPy's own; the derivative is that solution's, checked
    against central differences of the plain call."""
    from scipy.integrate import odeint

    def func(y, t, a1, a2):
        return -np.sqrt(t) - y + a1 - np.mean((y + a2) ** 2)

    rng = np.random.RandomState(0)
    y0, t, a1, a2, w = rng.randn(3), np.linspace(0.1, 0.2, 4), rng.randn(3), rng.randn(3), rng.randn(4, 3)
    plain = odeint(func, y0, t, args=(a1, a2))
    f = lambda v: odeint(func, y0, v, args=(a1, a2))  # noqa: E731
    y, back = capstan.pullback(f, t)
    assert np.array_equal(y, plain)
    assert np.array_equal(capstan.jvp(f, (t,), (np.ones(4),))[0], plain)
    h, e = 1e-4, np.eye(4)
    fd = [np.sum(w * (f(t + h * e[i]) - f(t - h * e[i]))) / (2 * h) for i in range(4)]
    assert np.allclose(back(w)[0], fd, rtol=1e-5, atol=1e-6)


ZERO_BASE = {
    "0.0 ** y": lambda y: 0.0 ** y,
    "np.power(0.0, y)": lambda y: np.power(0.0, y),
    "math.pow(0.0, y)": lambda y: math.pow(0.0, y),
    "np.float_power": lambda y: np.sum(np.float_power(np.array([0.0, 2.0]), y)),
}
NESTED = {
    "hessian": lambda f, y: capstan.hessian(f, y),
    "D(D)": lambda f, y: capstan.D(lambda z: capstan.D(f, z), y),
    "gradient(gradient)": lambda f, y: capstan.gradient(lambda z: capstan.gradient(f, z)[0], y)[0],
    "D(gradient)": lambda f, y: capstan.D(lambda z: capstan.gradient(f, z)[0], y),
}


@pytest.mark.parametrize("route", sorted(NESTED))
@pytest.mark.parametrize("name", sorted(ZERO_BASE))
@pytest.mark.parametrize("y", [0.3, 1.0])
def test_second_derivative_in_the_exponent_of_a_constant_zero_base(name, route, y):
    """d2/dy2 of 0.0 ** y (y > 0) is 0 (and of 2 ** y it is ln(2)^2 2^y): refused in every
    nested route, because the mixed partial in the base is infinite there -- but the base
    is a constant."""
    want = 0.0 if name != "np.float_power" else math.log(2.0) ** 2 * 2.0 ** y
    got = NESTED[route](ZERO_BASE[name], y)
    if got is None:  # (gradient's None: the slope it differentiates is a constant)
        assert route == "gradient(gradient)" and want == 0.0
        return
    assert got == pytest.approx(want, rel=1e-12, abs=0.0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the infinite partials on the way)
@pytest.mark.parametrize("route", sorted(NESTED))
def test_mixed_partial_at_a_moving_zero_base_is_still_refused(route):
    """d2/dx dy of x ** y at (0, 0.5) is infinite: refused where the base moves."""
    f = lambda x: capstan.D(lambda y: x ** y, 0.5)  # noqa: E731  (d/dy, then moved in x)
    with pytest.raises(capstan.NoRuleError):
        if route in ("D(D)", "D(gradient)"):
            capstan.D(f, 0.0)
        elif route == "hessian":
            capstan.hessian(lambda v: v[0] ** v[1], np.array([0.0, 0.5]))
        else:
            capstan.gradient(f, 0.0)
