"""Forward mode refuses a NaN derivative where the function's value, the point and the
direction are finite, as reverse mode does (``losses.undefined_in_forward``): such a NaN is
an undefined partial derivative whose terms cancel as inf - inf, or a derivative that does
not exist there; it was handed back as the derivative."""
import math
import warnings

import numpy as np
import pytest

import capstan
from capstan import D, jacobian, jvp


def _slopes(f, x):
    """Every forward entry point's slope of ``f`` at float ``x``."""
    return [lambda: D(f, x), lambda: jvp(f, (x,), (1.0,))[1], lambda: jacobian(f, x),
            lambda: capstan.jacfwd(f)(x), lambda: D(lambda y: D(lambda z: f(z) * y, x), 1.0)]


UNDEFINED = [
    (lambda x: math.sqrt(x) - math.sqrt(x), 0.0),  # inf - inf: the function is 0 everywhere
    (lambda x: np.sqrt(x) - np.sqrt(x), 0.0),
    (lambda x: np.sum(np.sqrt(np.array([x, 1.0])) - np.sqrt(np.array([x, 1.0]))), 0.0),
    (lambda x: np.cbrt(x) * 0.0 + np.cbrt(x) - np.cbrt(x), 0.0),
    (lambda x: math.pow(-2.0, x), 3.0),  # no real slope in the exponent past a negative base
    (lambda x: np.arcsin(x) - np.arcsin(x) + x, 1.0),
]


@pytest.mark.parametrize("k", range(5))
@pytest.mark.parametrize("f,x", UNDEFINED)
def test_a_nan_slope_of_a_finite_value_is_refused(f, x, k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError):  # (nested: a clearer error of the inner rule's may come first)
            _slopes(f, x)[k]()


def test_a_refused_nan_names_the_entry_point():
    f = lambda x: math.sqrt(x) - math.sqrt(x)
    for call, name in ((lambda: D(f, 0.0), "capstan.D:"), (lambda: jvp(f, (0.0,), (1.0,)), "capstan.jvp:"),
                       (lambda: jacobian(f, 0.0), "capstan.jacobian:")):
        with pytest.raises(capstan.NoRuleError, match=name):
            call()


def test_nan_where_the_value_or_the_input_is_not_finite_is_the_answer():
    """A NaN value (sqrt below 0), a NaN or infinite direction: NaN is what plain
    arithmetic gives, and nothing was lost."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(D(lambda x: np.sqrt(x - 1.0), 0.0))
        assert math.isnan(jvp(lambda x: x * 2.0, (1.0,), (math.nan,))[1])
        assert math.isnan(jvp(lambda x: x - x, (1.0,), (math.inf,))[1])
        t = jvp(lambda v: np.sqrt(v - 1.0), (np.array([0.0, 2.0]),), (np.ones(2),))[1]
        assert math.isnan(t[0]) and t[1] == pytest.approx(0.5)


def test_finite_and_infinite_slopes_are_unchanged():
    assert D(lambda x: math.sqrt(x), 0.0) == math.inf
    assert D(lambda x: math.sqrt(x - x) + x, 0.0) == 1.0  # (an exact zero tangent wins over inf)
    assert D(lambda x: math.sin(x) * x, 0.5) == pytest.approx(math.sin(0.5) + 0.5 * math.cos(0.5))
    np.testing.assert_allclose(jacobian(lambda v: np.sqrt(v) * v, np.array([1.0, 4.0]), ),
                               np.diag([1.5, 3.0]))


def test_only_the_finite_entries_of_an_array_output_count():
    """An array output whose NaN tangents all sit at NaN values keeps them; one NaN tangent
    at a finite value is refused."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t = D(lambda x: np.sqrt(np.array([x - 2.0, x])), 1.0)
        assert math.isnan(t[0]) and t[1] == pytest.approx(0.5)
        with pytest.raises(capstan.NoRuleError):
            D(lambda x: np.array([np.sqrt(x) - np.sqrt(x), x]), 0.0)
