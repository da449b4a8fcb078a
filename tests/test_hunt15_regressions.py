"""Regressions from the fifteenth bug hunt (numpy.polynomial, NumPy's numerical library
functions, and the standard library's pure-Python numeric code, at ordinary and special
points, through every route): each case gave a wrong derivative, or an internal error
where the derivative exists, before its fix."""
import math

import numpy as np
import pytest

import capstan


def _fd2_mixed(f, a, b, h=1e-4):
    return (f(a + h, b + h) - f(a + h, b - h) - f(a - h, b + h) + f(a - h, b - h)) / (4 * h * h)


# ------------------------------------------------------------------ a ** b's shortcuts, nested
MIXED_ROUTES = {
    "D(D)": lambda f, a, b: capstan.D(lambda y: capstan.D(lambda x: f(x, y), a), b),
    "gradient(D)": lambda f, a, b: capstan.gradient(lambda y: capstan.D(lambda x: f(x, y), a), b)[0],
    "D(gradient)": lambda f, a, b: capstan.D(lambda y: capstan.gradient(lambda x: f(x, y), a)[0], b),
    "gradient(gradient)": lambda f, a, b: capstan.gradient(lambda y: capstan.gradient(lambda x: f(x, y), a)[0], b)[0],
    "hessian": lambda f, a, b: capstan.hessian(f, a, b)[0][1],
}
POWERS = {
    "x ** y": lambda x, y: x ** y,
    "pow(x, y)": lambda x, y: pow(x, y),
    "x ** -y": lambda x, y: x ** (-y),
    "complex(x, .3) ** y": lambda x, y: (complex(x, 0.3) ** y).real,
    "float64(x) ** y": lambda x, y: np.float64(x) ** y,
    "array ** y": lambda x, y: np.sum(np.array([x, 2.0]) ** y),
}


@pytest.mark.parametrize("route", MIXED_ROUTES)
@pytest.mark.parametrize("name", POWERS)
@pytest.mark.parametrize("a, b", [(1.7, 2.0), (0.6, 2.0), (1.7, -2.0), (1.7, 0.0), (1.7, 1.0)])
def test_power_mixed_partial_where_the_exponent_is_2_or_0(route, name, a, b):
    """The slope of ``a ** b`` in ``a`` took shortcuts at ``b == 2`` (``2 * a``) and
    ``b == 0`` that hold its value, not its slope in ``b``: d2/dadb of ``x ** y`` at (1.7, 2)
    came out 1.7 instead of 3.50 in every nested route; an array base at ``b == 1`` or ``0``
    raised "truth value of an array is ambiguous"."""
    f = POWERS[name]
    if name == "x ** -y":
        b = -b
    got = MIXED_ROUTES[route](f, a, b)
    assert got == pytest.approx(_fd2_mixed(f, a, b), rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("f, x", [(lambda t: t ** 0.5, 0.0), (lambda t: (1.0 - t) ** 1.5 + t ** 0.25, 0.0)])
def test_infinite_slope_under_two_gradients_is_refused(f, x):
    """A rule's infinite slope (``x ** 0.5`` at 0) is refused inside an enclosing
    differentiation, but a gradient's backward pass runs its rules at the enclosing level
    (``nestlevel() == 1``), so ``gradient`` of ``gradient`` returned None."""
    with pytest.raises(capstan.NoRuleError):
        capstan.gradient(lambda y: capstan.gradient(f, y)[0], x)


@pytest.mark.parametrize("f", [lambda x, y: x ** y, lambda x, y: math.pow(x, y)])
def test_power_mixed_partial_at_zero_base_and_exponent_is_refused(f):
    """d2/dxdy of ``x ** y`` at (0, 0) is infinite; ``gradient`` of ``D`` returned None."""
    with pytest.raises(capstan.NoRuleError):
        capstan.gradient(lambda y: capstan.D(lambda x: f(x, y), 0.0), 0.0)


# ------------------------------------------------------------------ digamma differences at an integral shift
@pytest.mark.parametrize("name, a, b, want", [
    ("binom", 0.5, 3.0, 0.6092429581362602),
    ("binom", 0.0, 1.5, -1.9828455019366076),
    ("beta", -0.5, 2.0, 3.7392088021787173),
    ("beta", 2.0, -0.5, 3.7392088021787173),
    ("betaln", -0.5, 3.0, -0.49035775610023485),
    ("poch", -0.5, 2.0, -0.23370055013616983),
])
@pytest.mark.parametrize("route", ["D(D)", "D(gradient)", "gradient(D)", "hessian"])
def test_mixed_partials_through_a_digamma_difference_at_an_integral_shift(name, a, b, want, route):
    """``psi_difference(a, d)`` (``digamma(a + d) - digamma(a)``, in the slopes of ``beta``,
    ``betaln``, ``binom``, ``poch``) sums ``1 / (a + j)`` for an integral ``d`` across 0: the
    value there, without the slope in ``d``, so a mixed second derivative was 0 (``beta``
    at (-0.5, 2)) or wrong (``binom`` at (0.5, 3): 0.551) where ``d`` moves (references: mpmath)."""
    import scipy.special as sc
    f = getattr(sc, name)
    routes = {
        "D(D)": lambda: capstan.D(lambda y: capstan.D(lambda x: f(x, y), a), b),
        "D(gradient)": lambda: capstan.D(lambda y: capstan.gradient(lambda x: f(x, y), a)[0], b),
        "gradient(D)": lambda: capstan.gradient(lambda x: capstan.D(lambda y: f(x, y), b), a)[0],
        "hessian": lambda: capstan.hessian(lambda v: f(v[0], v[1]), np.array([a, b]))[0, 1],
    }
    assert routes[route]() == pytest.approx(want, rel=1e-9)


# ------------------------------------------------------------------ Tukey-lambda cdf past its support
@pytest.mark.parametrize("route", [
    lambda f, x: capstan.D(f, x),
    lambda f, x: capstan.gradient(f, x)[0],
    lambda f, x: capstan.jvp(f, (x,), (1.0,))[1],
])
@pytest.mark.parametrize("x, lm, which", [(2.0, 1.7, 0), (-2.0, 1.7, 0), (2.0, 1.7, 1)])
def test_tukeylambda_cdf_is_flat_past_its_support(route, x, lm, which):
    """``scipy.special.tklmbda(x, lm)`` is 1 (or 0) for ``|x| > 1/lm``; its rule read
    ``F(Q(p)) = p`` there and gave the slope at the end of the support (1.0 in ``x`` at
    ``tklmbda(2.0, 1.7)``)."""
    import scipy.special as sc
    f = (lambda t: sc.tklmbda(t, lm)) if which == 0 else (lambda t: sc.tklmbda(x, t))
    assert route(f, x if which == 0 else lm) == 0.0


# ------------------------------------------------------------------ eigenvalues of a general matrix, repeated
@pytest.mark.parametrize("f, x", [
    (lambda c: np.polynomial.polynomial.polyroots(c).real, np.array([1.0, -2.0, 1.0])),  # (x - 1)^2
    (lambda c: np.sort(np.roots(c).real), np.array([1.0, -2.0, 1.0])),
    (lambda a: np.sort(np.linalg.eigvals(a.reshape(2, 2)).real), np.array([1.0, 1.0, 0.0, 1.0])),  # a Jordan block
])
@pytest.mark.parametrize("route", [
    lambda f, x: capstan.jacobian(f, x, mode="forward"),
    lambda f, x: capstan.jacfwd(f)(x),
    lambda f, x: capstan.jvp(f, (x,), (np.linspace(0.3, 1.1, x.size),))[1],
])
def test_forward_eigenvalues_of_a_defective_matrix_are_refused(f, x, route):
    """At a repeated root (a defective companion matrix) the eigenvalues have no derivative
    (it is infinite); forward mode gave numbers like 3e15 (``la.solve`` with a singular
    eigenvector matrix) where reverse mode refused."""
    with pytest.raises(capstan.NoRuleError):
        route(f, x)


def test_forward_eigenvalues_repeated_along_a_coupling_direction_are_refused():
    """``eigvals(I + t E)`` for ``E = [[0, 1], [1, 0]]`` is ``1 - t, 1 + t``; forward mode took
    the diagonal of ``V^-1 E V`` (0, 0)."""
    with pytest.raises(capstan.NoRuleError):
        capstan.jvp(lambda a: np.linalg.eigvals(a), (np.eye(2),), (np.array([[0.0, 1.0], [1.0, 0.0]]),))


def test_forward_eigenvalues_repeated_along_a_direction_that_keeps_them_apart_are_kept():
    """Along a tangent diagonal in the eigenbasis the slopes are its diagonal (as before)."""
    y, t = capstan.jvp(lambda a: np.linalg.eigvals(a), (np.eye(2),), (np.diag([1.0, 2.0]),))
    np.testing.assert_allclose(t, [1.0, 2.0])


# ------------------------------------------------------------------ np.i0
@pytest.mark.parametrize("route", [
    lambda f, x: capstan.D(lambda t: capstan.D(f, t), x),
    lambda f, x: capstan.hessian(f, x),
    lambda f, x: capstan.gradient(lambda t: capstan.gradient(f, t)[0], x)[0],
])
def test_numpy_i0_second_derivative_at_zero(route):
    """``np.i0`` evaluates its series in ``abs(x)``: its second derivative at 0 came out
    abs's 0 instead of 1/2 (it has a rule now: the slope is ``i1``)."""
    assert route(lambda x: np.i0(x) * 1.0, 0.0) == pytest.approx(0.5, rel=1e-12)


# ------------------------------------------------------------------ nested lists of an enclosing run's values
NESTED_LISTS = {
    "[[a b]] * [[b]]": (lambda a, b: (np.array([[a * b]]) * np.array([[b]]))[0, 0], 4.0),
    "[[a b]] @ [[b]]": (lambda a, b: (np.array([[a * b]]) @ np.array([[b]]))[0, 0], 4.0),
    "chain of three": (lambda a, b: (np.array([[a, b]]) @ np.array([[b, 1.0], [a, a]]) @ np.array([[1.0], [b]]))[0, 0], 7.0),
    "multi_dot": (lambda a, b: np.linalg.multi_dot([np.array([[a, b]]), np.array([[b, 1.0], [a, a]]),
                                                    np.array([[1.0], [b]])])[0, 0], 7.0),
    "np.asarray 3 deep": (lambda a, b: np.sum(np.asarray([[[b]]]) * a * b), 4.0),
}


@pytest.mark.parametrize("name", NESTED_LISTS)
@pytest.mark.parametrize("route", [
    lambda f: capstan.D(lambda y: capstan.D(lambda x: f(x, y), 1.0), 2.0),
    lambda f: capstan.gradient(lambda y: capstan.D(lambda x: f(x, y), 1.0), 2.0)[0],
    lambda f: capstan.D(lambda y: capstan.gradient(lambda x: f(x, y), 1.0)[0], 2.0),
])
def test_arrays_from_nested_lists_of_an_enclosing_runs_values(name, route):
    """Inside ``D`` of ``D``, ``np.array([[y]])`` of the outer run's ``y`` (no inner value
    in it) was looked for one list level deep only: called plainly, it lost ``y``'s
    derivative, so d2/dydx of ``(A * [[y]])`` came out 2 where it is 4."""
    f, want = NESTED_LISTS[name]
    assert route(f) == pytest.approx(want, rel=1e-9)


# ------------------------------------------------------------------ an enclosing run's arrays inside the inner one
def _written(a):
    v = np.empty(2)  # (a plain array the enclosing run wrote its value into: np.vander's way)
    v[0] = a
    v[1] = 1.0
    return v


ENCLOSING_ARRAYS = {
    "v * v": (lambda a, b: (_written(a) * _written(a))[0] * b, 2.6),
    "v + 1": (lambda a, b: (_written(a) + 1.0)[0] * b, 1.0),
    "2.0 * v": (lambda a, b: (2.0 * _written(a))[0] * b, 2.0),
    "np.polyfit": (lambda a, b: np.polyfit([0.0, 1.0, 2.0, a + 3.0], [a, b, 1.0, 2.0], 1)[0], 0.014914913748),
}


@pytest.mark.parametrize("name", ENCLOSING_ARRAYS)
@pytest.mark.parametrize("route", [
    lambda f: capstan.D(lambda x: capstan.D(lambda y: f(x, y), 2.0), 1.3),
    lambda f: capstan.gradient(lambda x: capstan.D(lambda y: f(x, y), 2.0), 1.3)[0],
    lambda f: capstan.D(lambda x: capstan.gradient(lambda y: f(x, y), 2.0)[0], 1.3),
])
def test_operators_on_an_enclosing_runs_arrays(name, route):
    """An operator on plain arrays holding only an enclosing differentiation's values (it
    wrote them in) ran plainly inside the inner run: ``v * v`` lost the outer derivative
    (0.0), so ``np.polyfit``'s mixed second derivative was 0.072 instead of 0.0149 (its
    ``vander`` fills an empty array), and reverse mode outside raised TypeError."""
    f, want = ENCLOSING_ARRAYS[name]
    assert route(f) == pytest.approx(want, rel=1e-6)


LIST_ARGUMENTS = {
    "np.clip(list)": (lambda a, b: np.clip([a * b, b], 0.0, 10.0)[0], None),
    "np.nanmean(list)": (lambda a, b: np.nanmean([a, np.nan, b * a]), None),
    "np.isnan(list)": (lambda a, b: np.sum(np.where(np.isnan([a, b]), 0.0, [a, b * a])), None),
    "np.einsum(lists)": (lambda a, b: np.einsum("ij,ji", [[a, b], [1.0, a]], [[b, 1.0], [a, a]]), None),
}


@pytest.mark.parametrize("name", LIST_ARGUMENTS)
@pytest.mark.parametrize("route", ["gradient", "D(D)", "gradient(D)", "D(gradient)", "gradient(gradient)"])
def test_numpy_functions_of_lists_of_differentiated_values(name, route):
    """Lists holding differentiated values handed to NumPy: reverse mode's partials got the
    list (``np.clip``: "'>=' not supported between 'list' and 'float'"); nested, a test
    function (``np.isnan``) got the enclosing run's values as objects ("ufunc 'isnan' not
    supported"), and ``np.einsum``'s rule a list of a list and an array."""
    f = LIST_ARGUMENTS[name][0]
    a, b, h = 1.3, 2.0, 1e-5
    if route == "gradient":
        got = capstan.gradient(lambda x: f(x, b), a)[0]
        want = (f(a + h, b) - f(a - h, b)) / (2 * h)
    else:
        outer, inner = route.split("(")
        inner = inner.rstrip(")")
        run = {"D": lambda g, x: capstan.D(g, x), "gradient": lambda g, x: capstan.gradient(g, x)[0]}
        got = run[outer](lambda y: run[inner](lambda x: f(x, y), a), b)
        want = _fd2_mixed(f, a, b)
    assert got == pytest.approx(want, rel=1e-5)
