"""An exact zero against an infinite factor: a derivative through a point where one
function's slope is infinite (``sqrt``, ``arcsin``... at the end of its domain) and the
next one's is zero.

Forward mode multiplies each partial, taken at the point, by the tangent coming in:

* a tangent that is exactly 0 wins over an infinite partial: that value does not move
  (``sqrt(x - x)``, an untaken ``np.where`` branch);
* a partial that is 0 at the point does not win over an infinite tangent: the limit
  depends on higher orders (``cos(sqrt(x))`` at 0 has slope -1/2, not 0), so the tangent
  is NaN and forward mode refuses it (``NoRuleError``);
* a partial that is 0 whatever the point -- a constant factor (``0.0 * sqrt(x)``, the
  exponent of ``1.0 ** x``), a selection (``np.maximum``, ``np.clip``) -- wins.

Each refusal below was a silent 0 before; each guard is a derivative that must stay.
"""
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import capstan

# f, the true slope at 0 (None: undefined there)
UNDEFINED_BEFORE = {
    "cos(sqrt(x))": (lambda x: math.cos(math.sqrt(x)), -0.5),
    "sqrt(x) ** 2": (lambda x: math.sqrt(x) ** 2, 1.0),
    "sqrt(x) * sqrt(x)": (lambda x: math.sqrt(x) * math.sqrt(x), 1.0),
    "exp(-sqrt(x) ** 2)": (lambda x: math.exp(-math.sqrt(x) ** 2), -1.0),
    "1 - cos(asin(x) ...)": (lambda x: math.cos(math.sqrt(x)) + math.sqrt(x) ** 2, 0.5),
    "np.cos(np.sqrt(x))": (lambda x: np.cos(np.sqrt(x)), -0.5),
    "np.sqrt(x) ** 2": (lambda x: np.sqrt(x) ** 2, 1.0),
    "stats.gamma.pdf(x, 2)": (lambda x: stats.gamma.pdf(x, 2), 1.0),
    "float(sum(cos(sqrt(array))))": (lambda x: float(np.sum(np.cos(np.sqrt(np.array([x, 1.0 + x]))))),
                                     -0.5 - math.sin(1.0) / 2),
}

GUARDS = {
    "0.0 * sqrt(x) + x": (lambda x: 0.0 * math.sqrt(x) + x, 1.0),
    "sqrt(x) * 0 + x": (lambda x: math.sqrt(x) * 0 + x, 1.0),
    "sqrt(x - x) + x": (lambda x: math.sqrt(x - x) + x, 1.0),
    "1.0 ** sqrt(x) + x": (lambda x: 1.0 ** math.sqrt(x) + x, 1.0),
    "0.0 / (1 + sqrt(x)) + x": (lambda x: 0.0 / (1.0 + math.sqrt(x)) + x, 1.0),
    "np.where(x > 0, np.sqrt(x), 0) + x": (lambda x: np.where(x > 0, np.sqrt(x), 0.0) + x, 1.0),
    "np.maximum(np.sqrt(x), 0.5) + x": (lambda x: np.maximum(np.sqrt(x), 0.5) + x, 1.0),
    "np.clip(np.sqrt(x), 0.5, 1) + x": (lambda x: np.clip(np.sqrt(x), 0.5, 1.0) + x, 1.0),
    "np.zeros(1) * np.sqrt(x) + x": (lambda x: float((np.zeros(1) * np.sqrt(x))[0]) + x, 1.0),
    "sqrt(x) at 0": (lambda x: math.sqrt(x), math.inf),
}


def _forward(f, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return (capstan.D(f, x), capstan.jvp(f, (x,), (1.0,))[1], capstan.jacobian(f, np.array(x))[()])


@pytest.mark.parametrize("name", sorted(UNDEFINED_BEFORE))
def test_forward_mode_refuses_a_zero_partial_against_an_infinite_tangent(name):
    f, slope = UNDEFINED_BEFORE[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for entry in (lambda: capstan.D(f, 0.0), lambda: capstan.jvp(f, (0.0,), (1.0,))):
            with pytest.raises(capstan.NoRuleError, match="NaN"):
                entry()
    h = 1e-7  # (off the point, the same program differentiates)
    got = capstan.D(f, h)
    assert abs(float(got) - slope) < 1e-3 * max(1.0, abs(slope))


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_forward_mode_keeps_exact_zeros_that_hold_near_the_point(name):
    f, slope = GUARDS[name]
    for got in _forward(f, 0.0):
        assert float(got) == slope


def test_a_float64_tangent_that_is_nan_is_refused_like_a_float_one():
    f = UNDEFINED_BEFORE["float(sum(cos(sqrt(array))))"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError):
            capstan.D(f, 0.0)


# Reverse mode multiplies each cotangent by a partial: a zero partial wins over an infinite
# cotangent (the factor nearer the input decides, as forward mode's zero tangent does), but
# a zero cotangent against an infinite partial is undefined.  Arrays' cotangents also hold
# zeros that follow nothing (an index, an untaken np.where branch), which still win: see
# tests/test_zero_masks_reverse.py.
REVERSE_UNDEFINED_BEFORE = ["cos(sqrt(x))", "sqrt(x) ** 2", "sqrt(x) * sqrt(x)", "exp(-sqrt(x) ** 2)",
                            "1 - cos(asin(x) ...)"]
REVERSE_GUARDS = {
    "sqrt(x) at 0": (lambda x: math.sqrt(x), math.inf),
    "np.where(x > 0, np.sqrt(x), 0) + x": (lambda x: float(np.where(x > 0, np.sqrt(x), 0.0)) + x, 1.0),
    "np.maximum(np.sqrt(x), 0.5) + x": (lambda x: float(np.maximum(np.sqrt(x), 0.5)) + x, 1.0),
    "sqrt(x * x) (a norm at 0)": (lambda x: math.sqrt(x * x), 0.0),
    "sqrt(x * x + y) at a kink": (lambda x: math.sqrt(x * x + 0.0 * x) + x, 1.0),
}


@pytest.mark.parametrize("name", REVERSE_UNDEFINED_BEFORE)
def test_reverse_mode_refuses_a_zero_cotangent_against_an_infinite_partial(name):
    f, slope = UNDEFINED_BEFORE[name]
    for entry in (lambda: capstan.gradient(f, 0.0), lambda: capstan.pullback(f, 0.0)[1](1.0)):
        with pytest.raises(capstan.NoRuleError, match="NaN"):
            entry()
    assert abs(capstan.gradient(f, 1e-7)[0] - slope) < 1e-3 * max(1.0, abs(slope))


@pytest.mark.parametrize("name", sorted(REVERSE_GUARDS))
def test_reverse_mode_keeps_a_zero_partial_and_an_index_or_selection_zero(name):
    f, slope = REVERSE_GUARDS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert capstan.gradient(f, 0.0) == (slope,)


def test_a_zero_seed_follows_nothing():
    """A Jacobian's other rows and pullback's dy of 0 are seeds of exact zeros: an output at
    an infinite slope that they seed gives 0, not an undefined derivative."""
    f = lambda x: (math.sqrt(x), 2.0 * x)
    _, back = capstan.pullback(f, 0.0)
    assert back((0.0, 1.0)) == (2.0,)
    assert back((1.0, 0.0)) == (math.inf,)
    assert capstan.pullback(lambda x: math.sqrt(x) + 0.0, 0.0)[1](0.0) == (0.0,)
    jac = capstan.jacobian(lambda x: np.array([math.sqrt(x), 2.0 * x]), 0.0, mode="reverse")
    assert list(jac) == [math.inf, 2.0]
