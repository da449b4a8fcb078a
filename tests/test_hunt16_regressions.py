"""Sixteenth hunt: where reverse mode's zero masks, second derivatives at kinks and the C
paths of routed NumPy calls meet (nested differentiation at kinks and infinite slopes,
selections, first derivatives at special points, C path against the pure-Python one).

Each case gave a silent wrong answer (or an internal error) before its fix; the expected
values come from forward mode and by hand.
"""
import math
import warnings

import numpy as np
import pytest

import capstan
from capstan import jacfwd, jacrev, pullback

X10 = np.array([1.0, 0.0])


# -- a seed's zero against a NumPy float's infinite partial -------------------------------
# An element of an array (``x[1]``) is a NumPy float, so ``1 / x[1]`` records its partial as
# one; the backward pass tested the product ``0 * -inf`` for a NaN only when it was a Python
# float, so a structural zero (a seed of 0: a Jacobian's other rows) lost to it.

ROW0 = {  # f, the Jacobian's first row at (1, 0): f[0] does not depend on where f[1] blows up
    "array([x0, 1 / x1])": (lambda x: np.array([x[0], 1 / x[1]]), [1.0, 0.0]),
    "array([x0, x0 / sqrt(x1)])": (lambda x: np.array([x[0], x[0] / np.sqrt(x[1])]), [1.0, 0.0]),
    "stack([x0, x0 / sqrt(x1)])": (lambda x: np.stack([x[0], x[0] / np.sqrt(x[1])]), [1.0, 0.0]),
    "array([sqrt(x1), x0 / 2 / sqrt(x1)])": (
        lambda x: np.array([np.sqrt(x[1]), x[0] * 0.5 / np.sqrt(x[1])]), [0.0, math.inf]),
}


@pytest.mark.parametrize("name", ROW0)
def test_seed_zero_wins_over_numpy_float_infinite_partial(name):
    f, row = ROW0[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        (got,) = pullback(f, X10)[1](np.array([1.0, 0.0]))
        assert np.array_equal(got, row)  # (was NaN)
        assert np.array_equal(jacrev(f)(X10)[0], row)
        assert np.array_equal(jacfwd(f)(X10)[0], row)


def test_jacrev_of_jacfwd_at_an_infinite_slope():
    """The mixed row of x0 * sqrt(x1)'s Hessian at (1, 0): (0, inf) by every route (it
    was NaN by reverse over forward mode)."""
    f = lambda v: v[0] * np.sqrt(v[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.array([[0.0, math.inf], [math.inf, -math.inf]])
        assert np.array_equal(jacrev(jacfwd(f))(X10), want)
        assert np.array_equal(jacrev(lambda v: capstan.gradient(f, v)[0])(X10), want)
        assert np.array_equal(capstan.hessian(f, X10), want)


def test_value_zero_against_numpy_float_infinite_partial_still_refused():
    """A value's zero (cos's slope at 0) against x[0] ** 0.5's infinite partial stays
    undefined: refused, in both passes."""
    f = lambda x: math.cos(x[0] ** 0.5) + x[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError):
            capstan.gradient(f, np.array([0.0, 1.0]))
