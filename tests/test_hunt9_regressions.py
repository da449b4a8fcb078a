"""Regressions from the ninth bug hunt (scipy.stats distributions, scipy.special functions of
several arguments, solvers, quadrature, interpolation, filters and np.random with
differentiated parameters, against Richardson differences and mpmath): reverse mode's
entry points other than ``gradient`` -- ``pullback``'s ``back``, the reverse Jacobians --
handed back a NaN derivative where the function's value, its arguments and the output
cotangent are finite (an infinite partial whose terms cancel), where ``gradient`` refuses
it.  Each test failed (a NaN returned as the derivative) before its fix."""
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import capstan

MATCH = "came out NaN"


def _beta_pdf(x):
    """``beta(1, 2)``'s density ``2 (1 - x)``, at the end of its support at 0: SciPy's
    ``xlogy(a - 1, x)`` there is ``0 * log(0)``, an infinite partial times a zero."""
    return stats.beta.pdf(x, 1.0, 2.0)


def _cancelling(x):
    """``sqrt(x - x) + x``: an infinite slope whose two terms cancel (``inf - inf``)."""
    return math.sqrt(x - x) + x


@pytest.mark.parametrize("f, x", [(_beta_pdf, 0.0), (_cancelling, 0.7)], ids=["beta.pdf", "sqrt(x - x)"])
def test_pullback_refuses_a_nan_cotangent_as_gradient_does(f, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError, match=MATCH):
            capstan.gradient(f, x)
        y, back = capstan.pullback(f, x)
        assert math.isfinite(y)
        with pytest.raises(capstan.NoRuleError, match="capstan.pullback: the derivative " + MATCH):
            back(1.0)


def test_pullback_keeps_its_nan_where_dy_is_nan():
    """A NaN output cotangent gives a NaN cotangent: nothing to refuse."""
    _, back = capstan.pullback(lambda x: 3.0 * x, 0.5)
    assert math.isnan(back(math.nan)[0])


def test_pullback_elsewhere_and_of_an_array_output():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _, back = capstan.pullback(_beta_pdf, 0.5)
        assert back(1.0)[0] == pytest.approx(-2.0)
        _, back = capstan.pullback(lambda x: stats.beta.pdf(x, 1.0, 2.0), np.array([0.0, 0.5]))
        with pytest.raises(capstan.NoRuleError, match=MATCH):
            back(np.array([1.0, 1.0]))
        _, back = capstan.pullback(lambda x: stats.beta.pdf(x, 1.0, 2.0), np.array([0.25, 0.5]))
        np.testing.assert_allclose(back(np.array([1.0, 1.0]))[0], [-2.0, -2.0])


@pytest.mark.parametrize("call, name", [
    (lambda: capstan.jacobian(lambda x: stats.beta.pdf(x, 1.0, 2.0), np.array([0.0, 0.5]), mode="reverse"),
     "jacobian"),
    (lambda: capstan.jacrev(lambda x: stats.beta.pdf(x, 1.0, 2.0))(np.array([0.0, 0.5])), "jacrev"),
], ids=["jacobian reverse", "jacrev"])
def test_reverse_jacobians_refuse_a_nan_row(call, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError, match="capstan.%s: the derivative " % name + MATCH):
            call()


def test_reverse_jacobian_off_the_singularity():
    jac = capstan.jacobian(lambda x: stats.beta.pdf(x, 1.0, 2.0), np.array([0.25, 0.5]), mode="reverse")
    np.testing.assert_allclose(jac, np.diag([-2.0, -2.0]))
