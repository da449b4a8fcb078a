"""Second derivatives of a smooth function of a kink, at the kink.

``abs``, the norms, ``hypot``, ``math.dist``, ``copysign``, ``maximum``/``minimum``,
``clip``, sorts and max/min at a tie take a slope at their kink (a first derivative's
convention, kept: ``D(abs)(0) == 0``).  Differentiated again, that slope was the
constant 0 around the point, so ``hessian(lambda v: norm(v) ** 2, 0)`` came out 0 (not
``2 I``) and ``x * abs(x)``'s second derivative 0 (it has none).  Now the derivative of
the slope at the kink is undefined: refused (NoRuleError) in every second-order route,
unless it is multiplied by a zero that holds near the point (an untaken ``np.where``
branch: a Huber loss at a zero residual keeps its Hessian).  Every ``refused`` case
below gave a number (0, 0.5 or 2) before.  Away from the kink the values are checked
against central differences of the first derivative.
"""
import cmath
import math

import numpy as np
import pytest
import scipy.special as sc

import capstan
from capstan import D, NoRuleError, gradient, hessian, jacfwd, jacrev

norm = np.linalg.norm


def _d1(f):
    return lambda x: D(f, x)


def _g1(f):
    return lambda x: gradient(f, x)[0]


def _num(g):
    return 0.0 if g is None else g  # (gradient's None: nothing flows)


#: second derivative of scalar f at x, by each nested route
ROUTES = {
    "D(D)": lambda f, x: D(_d1(f), x),
    "gradient(gradient)": lambda f, x: _num(gradient(_g1(f), x)[0]),
    "D(gradient)": lambda f, x: D(_g1(f), x),
    "gradient(D)": lambda f, x: _num(gradient(_d1(f), x)[0]),
    "hessian": lambda f, x: hessian(lambda v: f(v[0]), np.array([x]))[0, 0],
    "jacfwd(jacrev)": lambda f, x: jacfwd(jacrev(lambda v: f(v[0])))(np.array([x]))[0, 0],
    "jacrev(jacfwd)": lambda f, x: jacrev(jacfwd(lambda v: f(v[0])))(np.array([x]))[0, 0],
    "hvp": lambda f, x: np.ravel(_num(capstan.hvp(lambda v: f(v[0]), np.array([x]), np.array([1.0]))))[0],
}

#: (name, f, the kink): smooth functions of a kink, or kinks themselves, whose second
#: derivative at the kink is not what the slope convention gives (2, 0 where |x| ** 3's
#: is, or none at all)
KINKED = [
    ("abs(x)**2", lambda x: abs(x) ** 2, 0.0),
    ("np.abs(x)**2", lambda x: np.abs(x) ** 2, 0.0),
    ("math.fabs(x)**2", lambda x: math.fabs(x) ** 2, 0.0),
    ("np.fabs(x)**2", lambda x: np.fabs(x) ** 2, 0.0),
    ("x*abs(x)", lambda x: x * abs(x), 0.0),
    ("abs(x)**3", lambda x: abs(x) ** 3, 0.0),
    ("abs(x)", abs, 0.0),
    ("cos(abs(x))", lambda x: math.cos(abs(x)), 0.0),
    ("exp(abs(x))", lambda x: math.exp(abs(x)), 0.0),
    ("math.hypot(x,0)**2", lambda x: math.hypot(x, 0.0) ** 2, 0.0),
    ("np.hypot(x,0)**2", lambda x: np.hypot(x, 0.0) ** 2, 0.0),
    ("math.dist**2", lambda x: math.dist([x, 1.0], [0.0, 1.0]) ** 2, 0.0),
    ("norm([x,0])**2", lambda x: norm([x, 0.0]) ** 2, 0.0),
    ("norm([x])", lambda x: norm([x]), 0.0),
    ("norm(x,3)**2", lambda x: norm(np.array([x, 0.0]), 3) ** 2, 0.0),
    ("norm(x,1)**2", lambda x: norm(np.array([x]), 1) ** 2, 0.0),
    ("copysign(x,1)**2", lambda x: math.copysign(x, 1.0) ** 2, 0.0),
    ("np.copysign(x,1)**2", lambda x: np.copysign(x, 1.0) ** 2, 0.0),
    ("abs(complex)**2", lambda x: abs(complex(x, 0.0)) ** 2, 0.0),
    ("np.abs(x+0j)**2", lambda x: np.abs(x + 0j) ** 2, 0.0),
    ("cmath.polar", lambda x: cmath.polar(complex(x, 0.0))[0] ** 2, 0.0),
    ("relu(x)", lambda x: np.maximum(x, 0.0), 0.0),
    ("relu(x)**2", lambda x: np.maximum(x, 0.0) ** 2, 0.0),
    ("maximum(x,-x)**2", lambda x: np.maximum(x, -x) ** 2, 0.0),
    ("fmin(x,0)**2", lambda x: np.fmin(x, 0.0) ** 2, 0.0),
    ("clip(x,0,1)**2", lambda x: np.clip(x, 0.0, 1.0) ** 2, 0.0),
    ("clip(x,-1,1) at 1", lambda x: np.clip(x, -1.0, 1.0) ** 2, 1.0),
    ("np.max([x,0])**2", lambda x: np.max(np.array([x, 0.0])) ** 2, 0.0),
    ("np.max([x,-x])**2", lambda x: np.max(np.array([x, -x])) ** 2, 0.0),
    ("np.ptp([x,0])**2", lambda x: np.ptp(np.array([x, 0.0])) ** 2, 0.0),
    ("np.sort([x,0])[1]**2", lambda x: np.sort(np.array([x, 0.0]))[1] ** 2, 0.0),
    ("median([x,0,1])**2", lambda x: np.median(np.array([x, 0.0, 1.0])) ** 2, 0.0),
    ("i0e(x)", sc.i0e, 0.0),
    ("i1e(x)", sc.i1e, 0.0),
    ("huber(1,x) at 1", lambda x: sc.huber(1.0, x), 1.0),
    ("elementwise abs**2", lambda x: capstan.elementwise(lambda t: abs(t) ** 2)(np.array([x]))[0], 0.0),
]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name, f, x0", KINKED, ids=[c[0] for c in KINKED])
def test_second_derivative_at_a_kink_is_refused(name, f, x0, route):
    with pytest.raises(NoRuleError):
        ROUTES[route](f, x0)


@pytest.mark.parametrize("name, f, x0", KINKED, ids=[c[0] for c in KINKED])
def test_first_derivative_at_a_kink_keeps_its_convention(name, f, x0):
    """The slope convention stays for a first derivative (abs's 0 at 0, a tie's 0.5...)."""
    d = D(f, x0)
    assert math.isfinite(d)
    assert gradient(f, x0)[0] == pytest.approx(d, abs=1e-12)


def test_first_derivative_conventions_unchanged():
    assert D(abs, 0.0) == 0.0 and gradient(abs, 0.0) == (0.0,)
    assert np.array_equal(gradient(lambda v: norm(v), np.zeros(3))[0], np.zeros(3))
    assert D(lambda x: np.maximum(x, 0.0), 0.0) == 0.5
    assert gradient(lambda x: math.hypot(x, 0.0), 0.0) == (0.0,)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("x", [0.3, -0.7])
@pytest.mark.parametrize("name, f, x0", KINKED, ids=[c[0] for c in KINKED])
def test_second_derivative_off_the_kink(name, f, x0, x, route):
    """Off the kink every route agrees with central differences of the first derivative."""
    x = x0 + x
    h = 1e-5
    fd = (D(f, x + h) - D(f, x - h)) / (2 * h)
    assert ROUTES[route](f, x) == pytest.approx(fd, rel=1e-6, abs=1e-6)


def _huber(x):
    return np.where(abs(x) < 1, x ** 2 / 2, abs(x) - 0.5)


def _huber_np(x):
    return np.where(np.abs(x) < 1, x ** 2 / 2, np.abs(x) - 0.5)


@pytest.mark.parametrize("route", [r for r in ROUTES if r not in ("gradient(D)", "jacrev(jacfwd)")])
@pytest.mark.parametrize("f", [_huber, _huber_np])
def test_huber_loss_at_zero_keeps_its_hessian(f, route):
    """The kink of the untaken branch ``abs(x) - 0.5`` is multiplied by the selection's
    0, which holds near 0: the Hessian at 0 is 1."""
    assert ROUTES[route](f, 0.0) == 1.0


@pytest.mark.parametrize("f", [_huber, _huber_np])
def test_huber_loss_reverse_over_forward_refuses_rather_than_guesses(f):
    """Reverse mode over a forward run cannot tell the selection's 0 (downstream of the
    kink) from a zero at the point alone (``2 |x|`` in ``|x| ** 2``): it refuses."""
    with pytest.raises(NoRuleError):
        ROUTES["jacrev(jacfwd)"](f, 0.0)


@pytest.mark.parametrize("x", [np.zeros(2), np.array([0.0, 0.5]), np.array([1.5, 0.0])])
def test_vector_huber_hessian(x):
    f = lambda v: np.sum(_huber_np(v))
    want = np.diag((np.abs(x) < 1).astype(float))
    np.testing.assert_array_equal(hessian(f, x), want)
    np.testing.assert_array_equal(jacfwd(jacrev(f))(x), want)
    np.testing.assert_array_equal(capstan.hvp(f, x, np.array([1.0, 2.0])), want @ [1.0, 2.0])
    np.testing.assert_array_equal(capstan.sparse_hessian(f, x).toarray(), want)


VECTOR = [
    ("norm(v)**2", lambda v: norm(v) ** 2),
    ("norm(v)", lambda v: norm(v)),
    ("exp(norm(v))", lambda v: np.exp(norm(v))),
    ("norm(v, fro)**2", lambda v: norm(v.reshape(2, 1), "fro") ** 2),
    ("norm(v, axis=0)**2", lambda v: norm(v, axis=0) ** 2),
    ("hypot**2", lambda v: math.hypot(v[0], v[1]) ** 2),
    ("np.hypot**2", lambda v: np.hypot(v[0], v[1]) ** 2),
    ("dist**2", lambda v: math.dist([v[0], v[1]], [0.0, 0.0]) ** 2),
    ("sum(abs(v)**2)", lambda v: np.sum(np.abs(v) ** 2)),
]
VROUTES = {
    "hessian": hessian,
    "jacfwd(jacrev)": lambda f, x: jacfwd(jacrev(f))(x),
    "jacrev(jacfwd)": lambda f, x: jacrev(jacfwd(f))(x),
    "hvp": lambda f, x: capstan.hvp(f, x, np.array([1.0, 0.0])),
    "hvp fwd_over_rev": lambda f, x: capstan.hvp(f, x, np.array([1.0, 0.0]), mode="fwd_over_rev"),
    "sparse_hessian": lambda f, x: capstan.sparse_hessian(f, x).toarray(),
}


@pytest.mark.parametrize("route", VROUTES)
@pytest.mark.parametrize("name, f", VECTOR, ids=[c[0] for c in VECTOR])
def test_vector_second_derivative_at_zero_is_refused(name, f, route):
    """These gave the zero matrix (``2 I`` is the answer for the squares)."""
    with pytest.raises(NoRuleError):
        VROUTES[route](f, np.zeros(2))


@pytest.mark.parametrize("route", VROUTES)
@pytest.mark.parametrize("name, f", VECTOR, ids=[c[0] for c in VECTOR])
def test_vector_second_derivative_off_zero(name, f, route):
    x = np.array([0.3, -0.4])
    h = 1e-6
    fd = np.array([(gradient(f, x + h * e)[0] - gradient(f, x - h * e)[0]) / (2 * h) for e in np.eye(2)])
    got = np.asarray(VROUTES[route](f, x))
    np.testing.assert_allclose(got, fd if got.ndim == 2 else fd[0], rtol=1e-5, atol=1e-6)


def test_hvp_along_a_direction_that_keeps_the_kink_still():
    """The kink of ``|v[0]|`` does not move along ``e_1``: that product exists."""
    f = lambda v: np.sum(np.abs(v) ** 2)
    x = np.array([0.0, 0.5])
    np.testing.assert_array_equal(capstan.hvp(f, x, np.array([0.0, 1.0]), mode="fwd_over_rev"), [0.0, 2.0])
    with pytest.raises(NoRuleError):
        capstan.hvp(f, x, np.array([1.0, 0.0]))


def test_third_order_at_the_kink_is_refused():
    for f in (lambda x: abs(x) ** 2, lambda x: abs(x) ** 3, lambda x: norm([x, 0.0]) ** 2):
        with pytest.raises(NoRuleError):
            D(_d1(_d1(f)), 0.0)
        with pytest.raises(NoRuleError):
            gradient(_g1(_g1(f)), 0.0)
    assert D(_d1(_d1(lambda x: abs(x) ** 3)), 0.4) == pytest.approx(6.0)


def test_sort_and_median_without_ties_keep_their_hessian():
    x = np.array([3.0, 1.0, 2.0, 7.0, 5.0])
    want = np.zeros((5, 5))
    want[0, 0] = 2.0  # (the median is x[0])
    np.testing.assert_array_equal(hessian(lambda v: np.median(v) ** 2, x), want)
    np.testing.assert_array_equal(hessian(lambda v: np.sort(v)[2] ** 2, x), want)
    np.testing.assert_array_equal(hessian(lambda v: np.max(v) ** 2, x), np.diag([0, 0, 0, 2.0, 0]))


def test_a_tie_away_from_the_median_with_a_constant_cotangent():
    """Equal values below the median: no kink of the median when the cotangents reaching
    them are constant zeros (forward over reverse); with a varying cotangent
    (``2 * median``), an array's zeros cannot be told apart, and it is refused."""
    x = np.array([1.0, 1.0, 3.0, 7.0, 5.0])
    np.testing.assert_array_equal(hessian(lambda v: np.median(v) + v @ v, x), 2.0 * np.eye(5))
    with pytest.raises(NoRuleError):
        hessian(lambda v: np.median(v) ** 2, x)


@pytest.mark.parametrize("route", VROUTES)
@pytest.mark.parametrize("f", [lambda v: np.sqrt(v @ v) ** 2, lambda v: np.sqrt(np.sum(v * v)) ** 2,
                               lambda v: np.sqrt(v[0] * v[0]) ** 2], ids=["v@v", "sum(v*v)", "v0*v0"])
def test_numpy_sqrt_of_a_square_at_zero_is_refused(f, route):
    """Not a kink but its cousin: sqrt's infinite slope at 0 times the slope ``2 x`` of
    ``x * x``, 0 at the point alone.  Inside a nested differentiation that zero no longer
    wins over the infinity (it gave the zero matrix; ``2 I`` is the answer, which only a
    rewrite without the root gives); ``math.sqrt`` was refused already."""
    with pytest.raises(NoRuleError):
        VROUTES[route](f, np.zeros(2))
    x = np.array([0.3, -0.4])
    np.testing.assert_allclose(hessian(f, x), np.diag([2.0, 2.0 if f(np.array([0.0, 1.0])) else 0.0]), atol=1e-12)


def test_numpy_sqrt_first_derivative_at_zero_unchanged():
    """At first order the zero still wins (``sqrt(x * x)``, ``|x|`` at 0, has slope 0)."""
    assert D(lambda x: np.sqrt(x * x), 0.0) == 0.0
    np.testing.assert_array_equal(capstan.jvp(lambda v: np.sqrt(v * v), (np.zeros(2),), (np.ones(2),))[1],
                                  np.zeros(2))


# ----------------------------------------------------------------------------- steps at a jump
# A step (np.sign, np.heaviside, np.floor, np.round, %, //) has slope 0, at its jump too (a
# first derivative's convention, kept).  Inside an enclosing differentiation its value at
# the jump moves discontinuously: np.sign(x) * x ** 2 (= x * |x|) at 0 had the second
# derivative 2 * sign(0) = 0 and heaviside(x, 0.5) * x ** 2 the average 1, where none exists.

STEPS = {  # f, the jump, the first derivative there (the step's value times the rest's slope)
    "sign(x)*x**2 at 0": (lambda x: np.sign(x) * x ** 2, 0.0, 0.0),
    "heaviside(x,.5)*x at 0": (lambda x: np.heaviside(x, 0.5) * x, 0.0, 0.5),
    "heaviside(x,.5)*x**2 at 0": (lambda x: np.heaviside(x, 0.5) * x ** 2, 0.0, 0.0),
    "floor(x)*x at 1": (lambda x: np.floor(x) * x, 1.0, 1.0),
    "ceil(x)*x at -2": (lambda x: np.ceil(x) * x, -2.0, -2.0),
    "fix(x)*x at 2": (lambda x: np.fix(x) * x, 2.0, 2.0),
    "round(x)*x at 0.5": (lambda x: np.round(x) * x, 0.5, 0.0),
    "rint(x)*x at -1.5": (lambda x: np.rint(x) * x, -1.5, -2.0),
    "(x % 1)*x at 1": (lambda x: (np.asarray(x) % 1.0) * x, 1.0, 1.0),
    "(x // 1)*x at 1": (lambda x: np.floor_divide(x, 1.0) * x, 1.0, 1.0),
}


@pytest.mark.parametrize("route", ["D(D)", "hessian", "gradient(gradient)", "jacrev(jacfwd)"])
@pytest.mark.parametrize("case", list(STEPS))
def test_a_step_at_its_jump_is_refused_in_second_order(case, route):
    f, x, _ = STEPS[case]
    with pytest.raises(NoRuleError):
        ROUTES[route](f, x)


@pytest.mark.parametrize("case", list(STEPS))
def test_a_step_at_its_jump_keeps_slope_zero_at_first_order(case):
    f, x, want = STEPS[case]
    assert D(f, x) == want
    assert _num(gradient(f, x)[0]) == want


@pytest.mark.parametrize("route", ["D(D)", "hessian", "gradient(gradient)"])
@pytest.mark.parametrize("f, x, want", [
    (lambda x: np.sign(x) * x ** 2, 0.3, 2.0), (lambda x: np.sign(x) * x ** 2, -0.3, -2.0),
    (lambda x: np.heaviside(x, 0.5) * x ** 2, 0.2, 2.0), (lambda x: np.floor(x) * x ** 2, 1.5, 2.0),
    (lambda x: np.trunc(x) * x ** 2, 0.0, 0.0),  # (trunc does not jump at 0)
    (lambda x: np.rint(x) * x ** 2, 1.0, 2.0), (lambda x: (np.asarray(x) % 1.0) * x, 0.25, 2.0)])
def test_a_step_away_from_its_jump_keeps_its_second_derivative(f, x, want, route):
    assert _num(ROUTES[route](f, x)) == pytest.approx(want, abs=1e-12)
