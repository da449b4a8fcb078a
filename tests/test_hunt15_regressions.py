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
