"""Regressions from the second bug hunt (differential fuzzing against sympy, edge-of-domain
sweeps): partials that Python's float arithmetic cannot compute where the function itself
has a value, and partials formed from squares that leave the float range."""
import math
import warnings

import numpy as np
import pytest
import scipy.special as sc

import capstan


def _all_first_order(f, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return [capstan.D(f, x), capstan.gradient(f, x)[0], capstan.jvp(f, (x,), (1.0,))[1]]


# (f, x, its derivative there): the function has a value (NumPy's inf included) and the
# derivative is infinite, where the rule's formula divided a Python float by zero or
# raised a float past its range (x ** -2): ZeroDivisionError / OverflowError before
SINGULAR = [
    (np.log, 0.0, math.inf), (np.log2, 0.0, math.inf), (np.log10, 0.0, math.inf),
    (np.log1p, -1.0, math.inf), (np.arctanh, 1.0, math.inf), (np.arctanh, -1.0, math.inf),
    (sc.logit, 1.0, math.inf), (sc.logit, 0.0, math.inf),
    (math.acosh, 1.0, math.inf), (lambda y: y ** -1, 1e-170, -math.inf),
    (lambda y: y ** -2 + y, 1e-120, -math.inf),
]


@pytest.mark.parametrize("f, x, want", SINGULAR)
def test_infinite_partial_where_python_arithmetic_raises(f, x, want):
    for got in _all_first_order(f, x):
        assert got == want


@pytest.mark.parametrize("f, x, want", SINGULAR[:8])
def test_higher_derivative_through_such_a_partial_is_refused(f, x, want):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError, match=r"derivative of (numpy|scipy\.special)\.\w+ is infinite"):
            capstan.D(lambda t: capstan.D(f, t), x)
        with pytest.raises(capstan.NoRuleError):
            capstan.hessian(f, x)


def test_zero_tangent_beside_such_a_partial_contributes_nothing():
    # acosh at 1 of a value whose tangent is exactly 0: the infinite slope contributes nothing
    assert capstan.D(lambda x: math.acosh(1.0 + 0.0 * x) + x, 0.5) == 1.0


@pytest.mark.parametrize("f", [lambda t: math.atan2(0.0, t), lambda t: math.atan2(t, t),
                               lambda t: math.atan2(t, 0.0)])
def test_atan2_at_the_origin_is_refused(f):
    with pytest.raises(capstan.NoRuleError, match="math.atan2"):
        capstan.D(f, 0.0)
    with pytest.raises(capstan.NoRuleError, match="math.atan2"):
        capstan.gradient(f, 0.0)


# partials formed from x * x + y * y or x * x + 1, whose squares underflow or overflow
# for |x| below 1e-154 or above 1e154: 0 (a silent wrong derivative) or ZeroDivisionError
@pytest.mark.parametrize("f, x, want", [
    (lambda t: math.atan2(1e200, t), 1e200, -5e-201),
    (lambda t: np.arctan2(1e200, t), 1e200, -5e-201),
    (lambda t: math.atan2(t, 1e200), 1e200, 5e-201),
    (lambda t: math.atan2(t, 2e-300), 1e-300, 4e299),
    (lambda t: math.atan2(0.0, t), 1e-300, 0.0),
    (lambda t: np.arctan2(t, 2e-300), 1e-300, 4e299),
    (math.asinh, 1e200, 1e-200), (np.arcsinh, -1e200, 1e-200),
])
def test_partials_outside_the_range_of_the_squares(f, x, want):
    for got in _all_first_order(f, x):
        assert got == pytest.approx(want, rel=1e-12, abs=0.0)


def test_atan2_arrays_of_tiny_and_huge_values():
    y = np.array([1e-300, 0.3, 1e200])
    x = np.array([2e-300, -0.7, 1e200])
    gy, gx = capstan.gradient(lambda a, b: np.arctan2(a, b).sum(), y, x)
    np.testing.assert_allclose(gy, [4e299, -0.7 / 0.58, 5e-201], rtol=1e-12)
    np.testing.assert_allclose(gx, [-2e299, -0.3 / 0.58, -5e-201], rtol=1e-12)


def test_plain_errors_of_the_function_itself_are_unchanged():
    # the fast paths hand a raising step to the generic path: the user's own error stays
    with pytest.raises(ZeroDivisionError):
        capstan.D(lambda x: 1.0 / (x - x), 0.5)
    with pytest.raises(OverflowError):
        capstan.D(lambda x: x ** 400.0, 1e10)
    with pytest.raises(OverflowError):
        capstan.gradient(lambda x: math.exp(x), 1e4)

    def caught(x):
        try:
            return 1.0 / (x - x)
        except ZeroDivisionError:
            return x * 3.0
    assert capstan.D(caught, 0.5) == 3.0
    assert capstan.D(lambda t: capstan.D(caught, t) * t, 0.5) == 3.0


# partials written as a difference that cancels: 1 - tanh^2 and expit (1 - expit) are 0
# once the function rounds to 1 (|x| > 19, x > 37); quotients with a series only at exactly
# 0 lose every digit next to it (boxcox at lambda = 1e-20 gave 0, inv_boxcox 36463 for
# -0.71); erfcx' = 2 x erfcx - 2/sqrt(pi) is 0 from x = 1e8 on.  References: mpmath at 50
# digits.
mpmath = pytest.importorskip("mpmath")


def _mp_derivative(fm, x):
    with mpmath.workdps(60):
        return float(mpmath.diff(fm, mpmath.mpf(x), h=mpmath.mpf("1e-40")))


CANCELLING = [
    ("math.tanh", math.tanh, mpmath.tanh, [0.3, 20.0, 37.0, -40.0, 400.0]),
    ("np.tanh", np.tanh, mpmath.tanh, [0.3, 20.0, -37.0, 400.0]),
    ("expit", sc.expit, lambda t: 1 / (1 + mpmath.exp(-t)), [0.3, 20.0, 40.0, 700.0, -40.0]),
    ("boxcox lambda", lambda t: sc.boxcox(2.5, t), lambda t: (mpmath.mpf(2.5) ** t - 1) / t, [1e-20, 1e-10, 1e-6, 0.3]),
    ("boxcox1p lambda", lambda t: sc.boxcox1p(1.5, t), lambda t: (mpmath.mpf(2.5) ** t - 1) / t, [1e-20, 1e-10, 0.3]),
    ("inv_boxcox lambda", lambda t: sc.inv_boxcox(0.8, t), lambda t: (1 + t * mpmath.mpf(0.8)) ** (1 / t),
     [1e-20, 1e-10, 1e-6, 0.3]),
    ("inv_boxcox1p lambda", lambda t: sc.inv_boxcox1p(0.8, t), lambda t: (1 + t * mpmath.mpf(0.8)) ** (1 / t) - 1,
     [1e-20, 1e-6]),
    ("tukeylambda.ppf lambda", lambda t: __import__("scipy.stats").stats.tukeylambda.ppf(0.3, t),
     lambda t: (mpmath.mpf(0.3) ** t - mpmath.mpf(0.7) ** t) / t, [1e-20, 1e-10, 1e-6, 0.3]),
    ("np.sinc", np.sinc, lambda t: mpmath.sinpi(t) / (mpmath.pi * t), [1e-10, 1e-5, 0.3]),
    ("exprel", sc.exprel, lambda t: mpmath.expm1(t) / t, [1e-10, 9e-4, 0.3]),
    ("erfcx", sc.erfcx, lambda t: mpmath.exp(t * t) * mpmath.erfc(t), [3.0, 50.0, 1e3 + 1, 1e5, 1e8]),
]


@pytest.mark.parametrize("name, f, fm, xs", CANCELLING, ids=[c[0] for c in CANCELLING])
def test_partials_that_cancelled(name, f, fm, xs):
    for x in xs:
        want = _mp_derivative(fm, x)
        for got in _all_first_order(f, x):
            assert float(got) == pytest.approx(want, rel=1e-9, abs=1e-300), (name, x)


@pytest.mark.parametrize("name, f, fm, xs", [CANCELLING[0], CANCELLING[2], CANCELLING[3], CANCELLING[8]],
                         ids=["math.tanh", "expit", "boxcox lambda", "np.sinc"])
def test_second_derivatives_beside_those_points(name, f, fm, xs):
    for x in xs:
        with mpmath.workdps(60):
            want = float(mpmath.diff(fm, mpmath.mpf(x), 2, h=mpmath.mpf("1e-30")))
        got = capstan.D(lambda t: capstan.D(f, t), x)
        assert float(got) == pytest.approx(want, rel=1e-7, abs=1e-300), (name, x)


def test_tanh_arrays_and_sparse_hessians():
    x = np.array([0.3, -20.0, 37.0, 800.0])
    g = capstan.gradient(lambda a: np.tanh(a).sum(), x)[0]
    np.testing.assert_allclose(g, [float(1 / mpmath.cosh(v) ** 2) for v in x], rtol=1e-12, atol=0)
    H = capstan.sparse_hessian(lambda a: sum(math.tanh(v) for v in a), np.array([0.3, 20.0]))
    H = H.toarray() if hasattr(H, "toarray") else np.asarray(H)
    want = [float(-2 * mpmath.tanh(v) / mpmath.cosh(v) ** 2) for v in (0.3, 20.0)]
    np.testing.assert_allclose(np.diag(H), want, rtol=1e-9)


# the same class found by sweeping every one-input ufunc with a rule from 1e-300 to 1e300
# against stable central differences: differences of nearly equal values (dawsn, the
# scaled Bessel functions), exponents that cancel (log_ndtr, ndtri_exp) and 0 * inf at the
# zeros of 1/gamma (NaN)
def _mp_ive(nu):
    return lambda t: mpmath.besseli(nu, t) * mpmath.exp(-abs(t))


def _mp_kve(nu):
    return lambda t: mpmath.besselk(nu, t) * mpmath.exp(t)


SWEPT = [
    ("dawsn", sc.dawsn, lambda t: mpmath.sqrt(mpmath.pi) / 2 * mpmath.exp(-t * t) * mpmath.erfi(t),
     [0.7, 50.0, 2e3, -1e10]),
    ("log_ndtr", sc.log_ndtr, lambda t: mpmath.log(mpmath.ncdf(t)), [-1e10, -40.0, -1.0, 2.0]),
    ("ndtri_exp", sc.ndtri_exp, lambda t: mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.exp(t) - 1), [-2.0, -1e-3]),
    ("rgamma", sc.rgamma, mpmath.rgamma, [-3.0, -20.0, 0.0, -2.5, 1.5]),
    ("i0e", sc.i0e, _mp_ive(0), [3.0, 2e4, 1e10, -1e10]),
    ("i1e", sc.i1e, _mp_ive(1), [3.0, 2e4, 1e10, -1e10]),
    ("k0e", sc.k0e, _mp_kve(0), [3.0, 2e4, 1e10, 1e100]),
    ("k1e", sc.k1e, _mp_kve(1), [3.0, 1e10]),
    ("ive 2.5", lambda t: sc.ive(2.5, t), _mp_ive(2.5), [3.0, 1e6, 1e12]),
    ("ive 3", lambda t: sc.ive(3, t), _mp_ive(3), [-1e6, 1e12]),
    ("kve 1.5", lambda t: sc.kve(1.5, t), _mp_kve(1.5), [3.0, 1e6, 1e12]),
]


@pytest.mark.parametrize("name, f, fm, xs", SWEPT, ids=[c[0] for c in SWEPT])
def test_partials_swept_over_the_float_range(name, f, fm, xs):
    for x in xs:
        with mpmath.workdps(60):
            want = float(mpmath.diff(fm, mpmath.mpf(x), h=mpmath.mpf(abs(x)) * mpmath.mpf("1e-45") or mpmath.mpf("1e-45")))
        for got in _all_first_order(f, x):
            assert float(got) == pytest.approx(want, rel=1e-9, abs=1e-300), (name, x)


def test_far_tails_against_their_closed_forms():
    # dawsn ~ 1/(2x): slope -1/(2x^2); ndtri_exp(y): slope cdf/pdf at the result
    for got in _all_first_order(sc.dawsn, 1e100):
        assert got == pytest.approx(-5e-201, rel=1e-12)
    for y in (-1e3, -1e100):
        x = float(sc.ndtri_exp(y))
        with mpmath.workdps(60):  # (far out: the Mills ratio's first term)
            want = float(mpmath.ncdf(x) / mpmath.npdf(x)) if y > -1e4 else -1.0 / x
        for got in _all_first_order(sc.ndtri_exp, y):
            assert float(got) == pytest.approx(want, rel=1e-9)


# two-input ufuncs swept the same way (/work/scratch/hunt2_sweep2.py): recurrences in the
# degree used at degrees SciPy evaluates through hypergeometric functions (a wrong slope
# for eval_laguerre(0.5, x), NaN for negative degrees), Struve's term through log(x/2) at
# x < 0 (NaN), expn at n = 0 through expn(-1, x) (NaN), integer orders truncated by the
# function but not by its rule (kn, expn), the t density's gammaln difference at large df
POLY = [
    ("eval_laguerre 0.5", lambda t: sc.eval_laguerre(0.5, t), lambda t: mpmath.laguerre(0.5, 0, t), [0.5, 3.0, -2.0]),
    ("eval_laguerre 2.5", lambda t: sc.eval_laguerre(2.5, t), lambda t: mpmath.laguerre(2.5, 0, t), [0.5, 3.0]),
    ("eval_legendre -3", lambda t: sc.eval_legendre(-3.0, t), lambda t: mpmath.legendre(2, t), [0.5, -0.3, 3.0]),
    ("eval_legendre 1.5", lambda t: sc.eval_legendre(1.5, t), lambda t: mpmath.legendre(1.5, t), [0.5, -0.3]),
    ("eval_chebyt -3", lambda t: sc.eval_chebyt(-3.0, t), lambda t: mpmath.chebyt(3, t), [0.3, 3.0, -40.0]),
    ("eval_chebyt 2.5", lambda t: sc.eval_chebyt(2.5, t), lambda t: mpmath.chebyt(2.5, t), [0.3, -0.6]),
    ("eval_chebyu -3", lambda t: sc.eval_chebyu(-3.0, t), lambda t: -mpmath.chebyu(1, t), [0.5, -0.5, 3.0]),
    ("eval_chebyu 1.5", lambda t: sc.eval_chebyu(1.5, t), lambda t: mpmath.chebyu(1.5, t), [0.3]),
    ("eval_legendre 3", lambda t: sc.eval_legendre(3, t), lambda t: mpmath.legendre(3, t), [0.3, 2.0]),
    ("struve 3 at x < 0", lambda t: sc.struve(3, t), lambda t: mpmath.struveh(3, t), [-0.5, -3.0, 2.0]),
    ("struve -2", lambda t: sc.struve(-2, t), lambda t: mpmath.struveh(-2, t), [0.5, 3.0]),
    ("modstruve 3 at x < 0", lambda t: sc.modstruve(3, t), lambda t: mpmath.struvel(3, t), [-0.5, -3.0]),
    ("expn 0", lambda t: sc.expn(0, t), lambda t: mpmath.expint(0, t), [0.5, 3.0]),
    ("expn 0.7 (truncated: 0)", lambda t: sc.expn(0.7, t), lambda t: mpmath.expint(0, t), [0.5]),
    ("kn 0.3 (truncated: 0)", lambda t: sc.kn(0.3, t), lambda t: mpmath.besselk(0, t), [0.5, 3.0]),
    ("stdtr df 1e10", lambda t: sc.stdtr(1e10, t), lambda t: mpmath.ncdf(t), [0.5, -2.0]),
    ("t.cdf df 1e100", lambda t: __import__("scipy.stats").stats.t.cdf(t, 1e100), lambda t: mpmath.ncdf(t), [0.5]),
    ("math.dist tiny", lambda t: math.dist([t, 1.0], [0.0, 1.0]), lambda t: abs(t), [1e-300, -1e-300]),
    ("math.dist huge", lambda t: math.dist([t, 1e200], [0.0, -1e200]), lambda t: mpmath.hypot(t, 2e200), [1e200]),
]


@pytest.mark.parametrize("name, f, fm, xs", POLY, ids=[c[0] for c in POLY])
def test_two_input_partials(name, f, fm, xs):
    for x in xs:
        with mpmath.workdps(60):
            want = float(mpmath.diff(fm, mpmath.mpf(x), h=mpmath.mpf(abs(x)) * mpmath.mpf("1e-45")))
        for got in _all_first_order(f, x):
            assert float(got) == pytest.approx(want, rel=1e-9), (name, x)


def test_recurrences_refused_where_no_general_form_is_given():
    with pytest.raises(capstan.NoRuleError, match="eval_jacobi"):
        capstan.D(lambda t: sc.eval_jacobi(-2.0, 0.3, 0.2, t), 0.4)
    assert capstan.D(lambda t: sc.eval_jacobi(2, 0.3, 0.2, t), 0.4) == pytest.approx(
        float(mpmath.diff(lambda s: mpmath.jacobi(2, 0.3, 0.2, s), 0.4)), rel=1e-12)


def test_more_two_input_slopes():
    # yn truncates a float order (as kn, expn); boxcox at x = 0 (ans = -1/lambda) went
    # through 0 * log(0) (NaN); inv_boxcox1p's y-slope (1 + ans)^(1 - lambda) rounded 1 + ans
    for got in _all_first_order(lambda t: sc.yn(0.3, t), 0.5):
        assert float(got) == pytest.approx(float(-mpmath.bessely(1, 0.5)), rel=1e-12)
    for lm in (0.5, 3.0):
        for got in _all_first_order(lambda t: sc.boxcox(0.0, t), lm):
            assert float(got) == pytest.approx(1.0 / lm ** 2, rel=1e-12)
        for got in _all_first_order(lambda t: sc.boxcox1p(-1.0, t), lm):
            assert float(got) == pytest.approx(1.0 / lm ** 2, rel=1e-12)
    y, lm = 0.5, 1e100
    for got in _all_first_order(lambda t: sc.inv_boxcox1p(t, lm), y):
        with mpmath.workdps(60):
            want = float((1 + mpmath.mpf(lm) * y) ** (1 / mpmath.mpf(lm) - 1))
        assert float(got) == pytest.approx(want, rel=1e-9)
