"""Regressions from a sweep of SciPy modules (interpolate, integrate, optimize, signal,
fft, polynomial, stats, statistics, fractions): each case compares capstan's derivative
with Richardson-extrapolated central differences of the plain function, or checks a
clear refusal where none can be taken."""
import fractions
import types

import numpy as np
import pytest
from scipy import integrate, optimize, signal, stats

import capstan
from capstan.rules import interpolate_rules


def richardson(f, x, h=1e-3):
    """Central differences at steps h and h/2, extrapolated (error O(h^4))."""
    def central(step):
        return (f(x + step) - f(x - step)) / (2 * step)
    return (4 * central(h / 2) - central(h)) / 3


def both_modes(f, x, rel=1e-6):
    want = richardson(f, x)
    assert capstan.D(f, x) == pytest.approx(want, rel=rel, abs=rel)
    assert capstan.gradient(f, x)[0] == pytest.approx(want, rel=rel, abs=rel)


# ----------------------------------------------------------------------------- signal
SIGNAL = np.sin(np.linspace(0.0, 6.0, 24))


def test_butter_cutoff_prod_of_empty_array():
    """butter's zpk2tf takes np.prod of an empty array of zeros: its partials (none) were
    reshaped wrongly (ValueError in both modes)."""
    both_modes(lambda w: np.sum(signal.lfilter(*signal.butter(3, w), SIGNAL) ** 2), 0.3, rel=1e-5)
    both_modes(lambda w: np.sum(signal.sosfilt(signal.butter(3, w, output="sos"), SIGNAL) ** 2), 0.3, rel=1e-5)


def test_transpose_with_one_integer_axis():
    """np.transpose(a, 0) of a 1-d array (scipy.signal.czt): the rules took axes as a sequence."""
    f = lambda v: np.sum(np.abs(signal.czt(v, 12)) ** 2)  # noqa: E731
    x = SIGNAL[:10]
    g = capstan.gradient(f, x)[0]
    e = np.zeros(10)
    e[3] = 1.0
    want = richardson(lambda t: f(x + t * e), 0.0)
    assert g[3] == pytest.approx(want, rel=1e-6)
    assert capstan.jvp(f, (x,), (e,))[1] == pytest.approx(want, rel=1e-6)


# ----------------------------------------------------------------------------- fractions
def test_fraction_base_power():
    """Fraction ** x: the slope in the exponent took np.log of a Fraction (TypeError)."""
    f = lambda s: fractions.Fraction(5, 3) ** (s * s)  # noqa: E731
    both_modes(f, 1.3)
    assert capstan.D(lambda s: capstan.D(f, s), 1.3) == pytest.approx(richardson(lambda s: capstan.D(f, s), 1.3),
                                                                     rel=1e-6)


# ----------------------------------------------------------------------------- quad
@pytest.mark.parametrize("f, x", [
    (lambda p: integrate.quad(lambda t: p / np.sqrt(t), 0.0, 1.0)[0], 1.6),          # 1/sqrt at an end
    (lambda p: integrate.quad(lambda t: t ** -p, 0.0, 1.0)[0], 0.6),                 # t^-p at an end
    (lambda p: integrate.quad(lambda t: (1.0 + t) ** -p, 0.0, np.inf)[0], 1.6),      # a slow tail
    (lambda s: stats.pareto.expect(lambda v: v ** 2, args=(2.5,), scale=s), 1.2),
])
def test_quad_subintervals_that_do_not_resolve_the_integrand(f, x):
    """QUADPACK extrapolates toward endpoint singularities and slow tails: a Gauss-Legendre
    sum on its final subintervals missed the integral by up to 7%, and so did its
    derivative, silently.  The subintervals are now refined until the sum is SciPy's value."""
    both_modes(f, x, rel=1e-5)


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_quad_divergent_integral_refused():
    f = lambda p: integrate.quad(lambda t: p * t * t / (1 + t * t), 0.0, np.inf)[0]  # noqa: E731
    for entry in (capstan.D, lambda g, x: capstan.gradient(g, x)[0]):
        with pytest.raises(capstan.NoRuleError, match="do not resolve the integrand"):
            entry(f, 1.2)


# ----------------------------------------------------------------------------- np.vectorize
def test_vectorize_kernel_with_several_results():
    """truncnorm's stats: np.vectorize of a kernel returning a tuple (a TypeError)."""
    both_modes(lambda a: stats.truncnorm.mean(a, 2.0), -1.0)
    both_modes(lambda b: stats.truncnorm.var(-1.0, b), 2.0)
    f = lambda x: np.sum(np.vectorize(lambda t: (t * t, np.sin(t)), otypes="dd")(x)[1])  # noqa: E731
    x = np.array([0.3, 0.7])
    assert np.allclose(capstan.gradient(f, x)[0], np.cos(x))


class _Scaled:
    def __init__(self, c):
        self.c = c

    def cube(self, t):
        return self.c * t ** 3


def test_vectorize_bound_method_object_argument():
    """np.vectorize bound to an object with types.MethodType (SciPy's discrete ppf): the
    object reached the elementwise kernel as an argument (a TypeError)."""
    f = lambda x: np.sum(types.MethodType(np.vectorize(_Scaled.cube, otypes="d"), _Scaled(2.0))(x))  # noqa: E731
    x = np.array([0.3, 0.7])
    assert np.allclose(capstan.gradient(f, x)[0], 6.0 * x ** 2)
    assert np.allclose(capstan.jacobian(lambda v: types.MethodType(np.vectorize(_Scaled.cube, otypes="d"),
                                                                   _Scaled(2.0))(v), x), np.diag(6.0 * x ** 2))


# ----------------------------------------------------------------------------- dict subclasses, 0-d views
def test_tanhsinh_richresult_and_zero_d_views():
    """scipy.integrate.tanhsinh: its result is a dict subclass (`_RichResult`) built with
    differentiated values (refused as a C call in forward mode) and it writes through
    np.reshape(a, (1,)) views of 0-d arrays (ValueError in reverse mode)."""
    both_modes(lambda p: integrate.tanhsinh(lambda t: np.exp(-p * t), 0.0, 1.0).integral, 0.7)
    both_modes(lambda b: integrate.tanhsinh(np.sin, 0.0, b).integral, 1.1)


def test_write_through_view_of_zero_d_array():
    def f(p):
        r = np.array(0.5)
        v = np.reshape(r, (1,))
        v[np.array([True])] = np.array([p * p])
        w = np.reshape(np.array(0.25), (1,))
        w[np.array([False])] = np.array([]) * p
        return r * 2 + np.sum(v) + np.sum(w) * p
    both_modes(f, 0.7)
    assert capstan.hessian(lambda x: f(x[0]), np.array([0.7]))[0, 0] == pytest.approx(6.0)  # 3 p^2 + p / 4


# ----------------------------------------------------------------------------- legacy minimisers
def _objective(v, p):
    return (v[0] - p) ** 2 + 3 * (v[1] - v[0] ** 2) ** 2 + 0.1 * v[1] ** 4


def _implicit_minimiser_slope(p, h=1e-4):
    solve = lambda q: optimize.minimize(_objective, [0.5, 0.5], args=(q,), tol=1e-13).x[0]  # noqa: E731
    return (solve(p + h) - solve(p - h)) / (2 * h)


@pytest.mark.parametrize("minimiser", [
    lambda p: optimize.fmin(lambda v: _objective(v, p), [0.5, 0.5], xtol=1e-12, ftol=1e-14, disp=0)[0],
    lambda p: optimize.fmin_bfgs(lambda v: _objective(v, p), [0.5, 0.5], gtol=1e-12, disp=0)[0],
    lambda p: optimize.fmin_powell(lambda v: _objective(v, p), [0.5, 0.5], xtol=1e-12, ftol=1e-14, disp=0)[0],
    lambda p: optimize.fmin_l_bfgs_b(lambda v: _objective(v, p), [0.5, 0.5], approx_grad=True, pgtol=1e-12,
                                     factr=10)[0][0],
])
def test_legacy_minimisers_implicit_derivative(minimiser):
    """fmin & co. were refused or, once their result could be built, differentiated through
    Nelder-Mead's comparisons: a derivative of zero.  They take minimize's rule now."""
    want = _implicit_minimiser_slope(1.1)
    assert capstan.D(minimiser, 1.1) == pytest.approx(want, rel=1e-4)
    assert capstan.gradient(minimiser, 1.1)[0] == pytest.approx(want, rel=1e-4)


def test_fminbound_interior_and_on_a_bound():
    f = lambda p: optimize.fminbound(lambda t: (t - p) ** 2 + t ** 4, -5.0, 5.0, xtol=1e-12)  # noqa: E731
    both_modes(f, 2.3, rel=1e-4)
    with pytest.raises(capstan.NoRuleError, match="on \\(or next to\\) a bound"):
        capstan.D(lambda b: optimize.fminbound(lambda t: (t - 3.0) ** 2, 0.0, b), 2.0)


# ----------------------------------------------------------------------------- global minimisers
@pytest.mark.parametrize("search", [
    lambda p: optimize.differential_evolution(_objective, [(-2, 3), (-2, 3)], args=(p,), seed=1, tol=1e-10).x[0],
    lambda p: optimize.brute(_objective, [(-2, 3), (-2, 3)], args=(p,), Ns=11)[0],  # (finish: fmin, xtol 1e-4)
])
def test_global_minimisers_implicit_derivative(search):
    """differential_evolution & co. compare values: run through, their minimiser had a
    derivative of zero (once their result could be built).  They take minimize's rule."""
    want = _implicit_minimiser_slope(1.1)
    assert capstan.D(search, 1.1) == pytest.approx(want, rel=1e-3)
    assert capstan.gradient(search, 1.1)[0] == pytest.approx(want, rel=1e-3)


def test_brute_grid_point_refused():
    f = lambda p: optimize.brute(lambda v: (v[0] - p) ** 2, [(0.0, 3.0)], Ns=7, finish=None)  # noqa: E731
    with pytest.raises(capstan.NoRuleError, match="not a solution"):
        capstan.D(f, 1.1)


# ----------------------------------------------------------------------------- real transforms
@pytest.mark.parametrize("name", ["dct", "idct", "dst", "idst"])
@pytest.mark.parametrize("kind", [1, 2, 3, 4])
@pytest.mark.parametrize("options", [{}, {"norm": "ortho"}, {"norm": "forward", "n": 9},
                                     {"norm": "ortho", "orthogonalize": False, "n": 5}])
def test_real_transforms_transpose(name, kind, options):
    """scipy.fft's dct/dst family had no rule (NoRuleError).  Linear maps: the gradient of
    w . T(x) is T's transpose applied to w, checked exactly against the forward Jacobian."""
    import scipy.fft
    f = getattr(scipy.fft, name)
    x = np.sin(np.arange(7.0)) + 0.1 * np.arange(7)
    T = lambda v: f(v, kind, **options)  # noqa: E731
    w = np.cos(1.3 * np.arange(np.size(T(x))))
    J = capstan.jacobian(T, x)
    np.testing.assert_allclose(J @ np.linspace(0.0, 1.0, 7), T(np.linspace(0.0, 1.0, 7)), atol=1e-12)
    np.testing.assert_allclose(capstan.gradient(lambda v: w @ T(v), x)[0], w @ J, atol=1e-12)


def test_real_transforms_n_dimensional():
    import scipy.fft
    X = np.sin(np.arange(12.0)).reshape(3, 4)
    W = np.cos(np.arange(12.0)).reshape(3, 4)
    for f in (scipy.fft.dctn, scipy.fft.idstn):
        g = capstan.gradient(lambda v: np.sum(W * f(v, norm="ortho")), X)[0]
        want = np.array([np.sum(W * f(e.reshape(3, 4), norm="ortho")) for e in np.eye(12)]).reshape(3, 4)
        np.testing.assert_allclose(g, want, atol=1e-12)


# ----------------------------------------------------------------------------- FITPACK evaluation
def test_fitpack_evaluation_splev_splint_univariate_spline():
    """splev/splder/splint of a given (t, c, k), UnivariateSpline's evaluation: FITPACK's
    Fortran had no rule (NoRuleError); they run as de Boor's recursion over the knots."""
    from scipy import interpolate
    xs = np.array([0.0, 0.7, 1.5, 2.2, 3.0, 4.1])
    tck = interpolate.splrep(xs, np.sin(xs) + 0.3 * xs)
    for ext in (0, 1, 3):
        for q in (1.83, 4.5):
            both_modes(lambda t: interpolate.splev(t, tck, ext=ext), q)
            assert capstan.jvp(lambda t: interpolate.splev(t, tck, ext=ext), (q,), (1.0,))[0] == pytest.approx(
                float(interpolate.splev(q, tck, ext=ext)), rel=1e-13, abs=1e-15)
    both_modes(lambda t: interpolate.splev(t, tck, der=1), 1.83)
    spline = interpolate.UnivariateSpline(xs, np.sin(xs), s=0.1)
    both_modes(spline, 1.83)
    if interpolate_rules._dfitpack is None:  # SciPy 1.18+: splint has no rule (see the rule table)
        with pytest.raises(capstan.NoRuleError, match="splint"):
            capstan.D(lambda b: interpolate.splint(0.1, b, tck), 2.9)
        return
    both_modes(lambda b: interpolate.splint(0.1, b, tck), 2.9)
    value, slope = capstan.jvp(lambda b: interpolate.splint(-0.5, b, tck), (2.9,), (1.0,))
    assert value == pytest.approx(interpolate.splint(-0.5, 2.9, tck), rel=1e-13)
    assert slope == pytest.approx(float(interpolate.splev(2.9, tck)), rel=1e-12)
    c = tck[1]
    g = capstan.gradient(lambda cc: interpolate.splint(0.1, 3.3, (tck[0], cc, 3)), c)[0]
    np.testing.assert_allclose(g, interpolate.splint(0.1, 3.3, tck, full_output=1)[1], atol=1e-13)
    both_modes(lambda b: spline.integral(0.2, b), 2.9)
    with pytest.raises(ValueError, match="not in the domain"):
        capstan.D(lambda t: interpolate.splev(t, tck, ext=2), 4.5)


def test_ppoly_integrate():
    """PPoly.integrate (CubicSpline, Pchip, Akima...): _ppoly.integrate had no rule."""
    from scipy import interpolate
    xs = np.array([0.0, 0.7, 1.5, 2.2, 3.0, 4.1])
    ys = np.sin(xs) + 0.3 * xs
    both_modes(lambda b: interpolate.CubicSpline(xs, ys).integrate(0.2, b), 2.9)
    both_modes(lambda a: interpolate.PchipInterpolator(xs, ys).integrate(a, 0.4), 4.6)  # (extrapolated, reversed)
    periodic = interpolate.CubicSpline(xs, np.r_[ys[:-1], ys[0]], bc_type="periodic")
    both_modes(lambda b: periodic.integrate(0.2, b), 11.3)
    g = capstan.gradient(lambda y: interpolate.CubicSpline(xs, y).integrate(0.2, 3.5), ys)[0]
    e = np.eye(6)
    want = [richardson(lambda t: interpolate.CubicSpline(xs, ys + t * e[i]).integrate(0.2, 3.5), 0.0)
            for i in range(6)]
    np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-9)
    assert np.isnan(capstan.jvp(lambda b: interpolate.PchipInterpolator(xs, ys, extrapolate=False).integrate(0.2, b),
                                (4.6,), (1.0,))[0])


def test_negative_binomial_moments():
    """nbinom.mean/var/stats: scipy.special's _nbinom_mean & co. had no rule (NoRuleError)."""
    both_modes(lambda p: stats.nbinom.mean(4.0, p), 0.4)
    both_modes(lambda n: stats.nbinom.var(n, 0.4), 4.0)
    both_modes(lambda p: float(np.sum(np.array(stats.nbinom.stats(4.0, p, moments="mvsk"), dtype=float))), 0.4)
