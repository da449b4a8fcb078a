"""Regressions from the third sweep for silent wrong derivatives (scipy.stats' numerical
entropy and moments, solve_ivp's step times), each against an independent oracle:
Richardson-extrapolated central differences of tightly computed values, or a closed form."""
import warnings

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")
from scipy import integrate  # noqa: E402

import capstan  # noqa: E402


def richardson(f, v, h=1e-3):
    wide = (f(v + h) - f(v - h)) / (2 * h)
    narrow = (f(v + h / 2) - f(v - h / 2)) / h
    return (4 * narrow - wide) / 3


def both_modes(f, v):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return capstan.D(f, v), capstan.gradient(f, v)[0]


@pytest.mark.parametrize("f, v", [
    # skewnorm: the density underflows to 0 where its derivative is a subnormal number
    # (entr's infinite slope at 0 made -inf)
    (lambda a: stats.skewnorm.entropy(a), 5.0),
    # foldnorm: the density is subnormal in the tail (log's slope 1/p overflowed: inf)
    (lambda c: stats.foldnorm.entropy(c, loc=0.3, scale=1.4), 1.952125337355587),
    # exponpow: its density formula overflows on the way (exp(exp(...))) in the tail
    (lambda b: stats.exponpow.entropy(b, loc=0.3, scale=1.4), 2.697119160358469),
], ids=["skewnorm", "foldnorm", "exponpow"])
def test_numerical_entropy_in_a_shape(f, v):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = richardson(f, v)
    for d in both_modes(f, v):
        assert np.isfinite(d)
        assert d == pytest.approx(expected, rel=1e-6, abs=1e-9)


def _tight_moment(n, b):
    return integrate.quad(lambda x: x ** n * stats.exponpow._pdf(x, b), 0, np.inf,
                          epsabs=1e-14, epsrel=1e-13, limit=200)[0]


@pytest.mark.parametrize("n", [3])
def test_quad_derivative_resolves_beyond_the_value_tolerance(n):
    # exponpow's moments are quad integrals; the derivative is that of a Gauss sum on the
    # subintervals, which was within 1e-6 of SciPy's value but 1e-5 off in the derivative
    # (0.5% in the skewness plus kurtosis, a difference of moments)
    b = 2.697119160358469
    expected = richardson(lambda bb: _tight_moment(n, bb), b, 1e-4)
    for d in both_modes(lambda bb: stats.exponpow.moment(n, bb), b):
        assert d == pytest.approx(expected, rel=1e-7)


def _decay(p, **kw):
    return integrate.solve_ivp(lambda t, y: -p * y, (0.0, 2.0), [1.0], **kw)


@pytest.mark.parametrize("use", [
    lambda s: s.t[1],                      # a step time: it moves with p (it was 0 / None)
    lambda s: s.y[0, 2],                   # the state at it (was the derivative at a fixed time)
    lambda s: np.trapezoid(s.y[0], s.t) if hasattr(np, "trapezoid") else np.trapz(s.y[0], s.t),
], ids=["t", "y-inner", "trapezoid"])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_solve_ivp_step_times_are_refused(use, mode):
    f = lambda p: use(_decay(p))  # noqa: E731
    assert richardson(f, 1.3, 1e-6) != 0.0  # (the program's value moves with p there)
    with pytest.raises(capstan.NoRuleError, match="solve_ivp"):
        capstan.D(f, 1.3) if mode == "forward" else capstan.gradient(f, 1.3)


def test_solve_ivp_end_state_and_t_eval_keep_their_derivatives():
    p = 1.3
    end = lambda q: _decay(q, rtol=1e-10, atol=1e-12).y[0, -1]  # noqa: E731
    for d in both_modes(end, p):
        assert d == pytest.approx(-2.0 * np.exp(-2.0 * p), rel=1e-7)
    inner = lambda q: _decay(q, t_eval=[0.5, 1.0], rtol=1e-10, atol=1e-12).y[0, 0]  # noqa: E731
    for d in both_modes(inner, p):
        assert d == pytest.approx(-0.5 * np.exp(-0.5 * p), rel=1e-7)
    ends = lambda q: _decay(q).t[-1] + _decay(q).t[0]  # noqa: E731
    for d in both_modes(ends, p):
        assert d in (0.0, None)


@pytest.mark.parametrize("f", [
    lambda x: np.log(x * 1e-309),
    lambda x: __import__("math").log(x * 1e-309),
    lambda x: np.log2(np.array([x, 1.0]) * 1e-309).sum(),
    lambda c: stats.foldnorm.logpdf(39.61, c),  # (log of a subnormal density)
], ids=["np.log", "math.log", "np.log2 array", "foldnorm.logpdf tail"])
def test_log_of_a_subnormal_number_is_refused(f):
    # the slope 1/x is past the float range: it came out inf, where the derivative (x's
    # tangent over x) is finite; refused now
    for run in (lambda: capstan.D(f, 1.952125337355587), lambda: capstan.gradient(f, 1.952125337355587)):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            with pytest.raises(capstan.NoRuleError, match="subnormal"):
                run()


def test_log_slope_is_kept_off_the_subnormal_range():
    f = lambda x: np.log(x * 1e-300) + np.log(np.array([x, 2.0 * x]) * 1e-307).sum()  # noqa: E731
    for d in both_modes(f, 3.0):
        assert d == pytest.approx(3.0 / 3.0, rel=1e-12)
