"""Parameters without a closed-form derivative, differentiated by the log-moments of an
integral representation (``capstan.rules.log_moments``): shape parameters inside the incomplete gamma and beta functions (``gammainc`` in ``a``,
``betainc`` in ``a`` and ``b``, and every distribution function built on them:
``stdtr``, ``chdtr``, ``fdtr``, ``gdtr``, ``bdtr``, ``nbdtr``, the inverses), and
the Hurwitz zeta function in ``x``: forward against finite differences,
reverse against forward (dot-product identity), second order (Hessian against differences
of gradients), directly and through ``scipy.stats``' methods; the values against mpmath."""

import numpy as np
import pytest

sc = pytest.importorskip("scipy.special")
from scipy import stats  # noqa: E402
from scipy.special import _ufuncs as scu  # noqa: E402

import capstan  # noqa: E402
from capstan.rules.log_moments import beta_tail_moment, gamma_tail_moment  # noqa: E402
from rule_checks import Case, check_forward, check_reverse, check_second_order, reseed  # noqa: E402

reseed("shape parameters")

A = np.array([0.45, 2.5, 7.0])  # shapes: below 1 (singular density at 0), moderate, larger
XG = np.array([0.3, 3.6, 5.2])  # both tails: x < a and x > a
XB = np.array([0.15, 0.5, 0.8])
B = np.array([1.7, 0.6, 3.2])
Q = np.array([0.2, 0.45, 0.85])
T = np.array([-1.3, 0.4, 2.2])
DF = np.array([3.5, 6.0, 11.0])
K = np.array([1.0, 3.0, 6.0])  # counts (plain)
KI = K.astype(int)  # (bdtr deprecates non-integer counts)
UP = np.array([False, True, True])


def named(name, f, *args, **kw):
    return Case(f, *args, name=name, **kw)


CASES = [
    # the primitives themselves, both tails, moments 0 to 2
    Case(gamma_tail_moment, 0, A, XG, UP, diff=[1, 2]), Case(gamma_tail_moment, 2, A, XG, ~UP, diff=[1, 2]),
    Case(beta_tail_moment, 1, 0, A, B, XB, UP, diff=[2, 3, 4]),
    Case(beta_tail_moment, 0, 2, A, B, XB, ~UP, diff=[2, 3, 4]),
    # scipy.special, every argument
    Case(sc.gammainc, A, XG), Case(sc.gammaincc, A, XG), Case(sc.gammaincinv, A, Q), Case(sc.gammainccinv, A, Q),
    Case(sc.betainc, A, B, XB), Case(sc.betaincinv, A, B, Q),
    Case(sc.stdtr, DF, T), Case(sc.stdtrit, DF, Q),
    Case(sc.chdtr, DF, XG), Case(sc.chdtrc, DF, XG), Case(sc.chdtri, DF, Q),
    Case(sc.fdtr, DF, DF[::-1], XG), Case(sc.fdtrc, DF, DF[::-1], XG), Case(sc.fdtri, DF, DF[::-1], Q),
    Case(sc.gdtr, B, A, XG), Case(sc.gdtrc, B, A, XG),
    Case(sc.bdtr, KI, 8, XB, diff=[2]), Case(sc.bdtrc, KI, 8, XB, diff=[2]),
    Case(sc.nbdtr, K, 4.0, XB, diff=[2]), Case(sc.nbdtrc, K, 4.0, XB, diff=[2]),
    Case(scu._binom_cdf, K, 8.0, XB, diff=[1, 2]), Case(scu._binom_sf, K, 8.0, XB, diff=[1, 2]),
    Case(scu._nbinom_cdf, K, 4.5, XB, diff=[1, 2]), Case(scu._nbinom_sf, K, 4.5, XB, diff=[1, 2]),
    Case(scu._beta_ppf, Q, A, B, diff=[1, 2]),
    # scipy.stats: every method built on them, in the shapes
    named("gamma.cdf a", lambda a: stats.gamma.cdf(XG, a), A),
    named("gamma.logcdf a", lambda a: stats.gamma.logcdf(XG, a), A),
    named("gamma.sf a", lambda a: stats.gamma.sf(XG, a), A),
    named("gamma.logsf a", lambda a: stats.gamma.logsf(XG, a), A),
    named("gamma.ppf a", lambda a: stats.gamma.ppf(Q, a), A),
    named("gamma.isf a", lambda a: stats.gamma.isf(Q, a), A),
    named("gamma.cdf a, x, scale", lambda a, x, s: stats.gamma.cdf(x, a, scale=s), 2.5, 1.9, 1.3),
    named("chi2.cdf df", lambda d: stats.chi2.cdf(XG, d), DF),
    named("chi2.sf df", lambda d: stats.chi2.sf(XG, d), DF),
    named("chi2.ppf df", lambda d: stats.chi2.ppf(Q, d), DF),
    named("chi2.isf df", lambda d: stats.chi2.isf(Q, d), DF),
    named("t.cdf df", lambda d: stats.t.cdf(T, d), DF),
    named("t.sf df", lambda d: stats.t.sf(T, d), DF),
    named("t.ppf df", lambda d: stats.t.ppf(Q, d), DF),
    named("t.isf df", lambda d: stats.t.isf(Q, d), DF),
    named("beta.cdf a, b", lambda a, b: stats.beta.cdf(XB, a, b), A, B),
    named("beta.sf a, b", lambda a, b: stats.beta.sf(XB, a, b), A, B),
    named("beta.ppf a, b", lambda a, b: stats.beta.ppf(Q, a, b), A, B),
    named("beta.isf a, b", lambda a, b: stats.beta.isf(Q, a, b), A, B),
    named("f.cdf dfn, dfd", lambda m, n: stats.f.cdf(XG, m, n), DF, DF[::-1]),
    named("f.sf dfn, dfd", lambda m, n: stats.f.sf(XG, m, n), DF, DF[::-1]),
    named("f.ppf dfn, dfd", lambda m, n: stats.f.ppf(Q, m, n), DF, DF[::-1]),
    named("invgamma.cdf a", lambda a: stats.invgamma.cdf(XG, a), A),
    named("chi.cdf df", lambda d: stats.chi.cdf(XG, d), DF),
    named("nakagami.ppf nu", lambda nu: stats.nakagami.ppf(Q, nu), A),
    named("binom.cdf p", lambda p: stats.binom.cdf(3, 10, p), 0.4),
    named("nbinom.cdf n, p", lambda n, p: stats.nbinom.cdf(3, n, p), 4.5, 0.4),
    # the Hurwitz and Riemann zeta functions in x
    Case(sc.zeta, np.array([1.2, 2.5, 9.0]), np.array([0.3, 1.0, 2.5])), Case(sc.zeta, np.array([1.05, 3.0, 30.0])),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward_matches_finite_differences(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse_is_adjoint_of_forward(case):
    check_reverse(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_second_order(case):
    check_second_order(case)


def test_third_order_of_gammainc_in_a():
    f = lambda a: sc.gammainc(a, 0.8)  # noqa: E731
    d2 = lambda a: capstan.D(lambda b: capstan.D(f, b), a)  # noqa: E731
    h = 1e-3
    want = (d2(1.7 + h) - d2(1.7 - h)) / (2 * h)
    assert capstan.D(d2, 1.7) == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("a,x", [(0.05, 0.01), (0.7, 0.3), (2.5, 0.8), (2.5, 9.0), (40.0, 35.0), (40.0, 52.0),
                                 (1e5, 1.01e5), (0.5, 1e-200), (2.0, 700.0)])
def test_gammainc_shape_derivative_against_mpmath(a, x):
    """Both tails, at first and second order, to 1e-10 relative (values down to 1e-301)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    upper = x > a
    tail = (lambda b: mp.gammainc(b, x, mp.inf, regularized=True)) if upper else (
        lambda b: mp.gammainc(b, 0, x, regularized=True))
    sign = -1.0 if upper else 1.0
    for order in (1, 2):
        want = sign * float(mp.diff(tail, a, order))
        got = capstan.D(lambda b: sc.gammainc(b, x), a) if order == 1 else \
            capstan.D(lambda c: capstan.D(lambda b: sc.gammainc(b, x), c), a)
        assert got == pytest.approx(want, rel=1e-10 if order == 1 else 1e-8, abs=0)


@pytest.mark.parametrize("a,b,x", [(0.3, 0.5, 0.02), (2.5, 1.7, 0.4), (2.5, 1.7, 0.9), (30.0, 20.0, 0.2),
                                   (5.0, 0.2, 0.999), (0.5, 0.5, 0.5)])
def test_betainc_shape_derivatives_against_mpmath(a, b, x):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    upper = x * (a + b) > a
    tail = (lambda p, q: -mp.betainc(p, q, x, 1, regularized=True)) if upper else (
        lambda p, q: mp.betainc(p, q, 0, x, regularized=True))
    da, db = capstan.gradient(lambda p, q: sc.betainc(p, q, x), a, b)
    assert da == pytest.approx(float(mp.diff(lambda p: tail(p, b), a)), rel=1e-10)
    assert db == pytest.approx(float(mp.diff(lambda q: tail(a, q), b)), rel=1e-10)


def test_counts_stay_refused_clearly():
    # (scipy.stats' binom.cdf floors k itself: there the derivative in k is floor's, 0)
    for f in (lambda k: scu._binom_sf(k, 8.0, 0.3), lambda k: scu._binom_cdf(k, 10.0, 0.4),
              lambda k: sc.nbdtr(k, 3.0, 0.3)):
        for mode in (lambda: capstan.D(f, 3.0), lambda: capstan.gradient(f, 3.0)):
            with pytest.raises(capstan.NoRuleError, match="argument k .*step function"):
                mode()


def test_inaccurate_quadrature_is_refused_not_returned(monkeypatch):
    """A quadrature whose error estimate is too large raises NoRuleError naming the function."""
    from capstan.rules import log_moments
    monkeypatch.setattr(log_moments, "ACCEPT", 1e-30)  # (no estimate can meet this)
    with pytest.raises(capstan.NoRuleError, match=r"gammainc in its shape parameter .*quadrature"):
        capstan.gradient(lambda a: sc.gammainc(a, 0.8), 2.5)
    with pytest.raises(capstan.NoRuleError, match=r"betainc in its shape parameter"):
        capstan.D(lambda a: stats.beta.cdf(0.3, a, 2.0), 2.5)


def test_edges_of_the_domain():
    # the derivative in a vanishes where the function is constant in it (x = 0, x = inf, t = 0)
    assert capstan.D(lambda a: sc.gammainc(a, 0.0), 1.5) == 0.0
    assert capstan.D(lambda a: sc.gammaincc(a, np.inf), 1.5) == 0.0
    assert capstan.D(lambda d: sc.stdtr(d, 0.0), 3.0) == 0.0
    assert capstan.D(lambda a: sc.betainc(a, 2.0, 1.0), 1.5) == 0.0
    # outside the domain: NaN, as the function's value
    assert np.isnan(capstan.D(lambda a: sc.gammainc(a, 0.5), -1.0))


@pytest.mark.parametrize("s,q", [(1.001, 1.0), (1.5, 1.0), (2.0, 0.3), (7.0, 0.5), (30.0, 1.0), (2.5, 100.0),
                                 (1.3, 0.01)])
def test_zeta_derivative_in_x_against_mpmath(s, q):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    assert capstan.D(lambda x: sc.zeta(x, q), s) == pytest.approx(float(mp.zeta(s, q, 1)), rel=1e-12)
    assert capstan.D(lambda y: capstan.D(lambda x: sc.zeta(x, q), y), s) == pytest.approx(
        float(mp.zeta(s, q, 2)), rel=1e-9)


def test_zeta_at_x_at_most_1_is_refused():
    for mode in (lambda: capstan.D(lambda x: sc.zeta(x), 0.5), lambda: capstan.gradient(lambda x: sc.zeta(x, 2.0), 0.7)):
        with pytest.raises(capstan.NoRuleError, match=r"zeta .*argument x at x <= 1"):
            mode()


@pytest.mark.parametrize("t", [1e-7, 1e-3, -0.5, 2.1, -40.0, 1e4])
def test_stdtr_in_df_against_mpmath_small_and_large_t(t):
    """Both forms of stdtr's df-derivative keep their small argument exact (no ``1 - w``):
    relative accuracy from t = 1e-7 to 1e4, first order and mixed second order."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40

    def exact(df, tt):
        z = tt * tt / (df + tt * tt)
        return mp.mpf(0.5) + mp.sign(tt) * mp.betainc(mp.mpf(0.5), df / 2, 0, z, regularized=True) / 2
    assert capstan.D(lambda d: sc.stdtr(d, t), 3.7) == pytest.approx(
        float(mp.diff(lambda d: exact(d, mp.mpf(t)), 3.7)), rel=1e-12)
    H = capstan.hessian(lambda p: sc.stdtr(p[0], p[1]), np.array([3.7, t]))
    want = float(mp.diff(lambda d, tt: exact(d, tt), (3.7, t), (1, 1)))
    assert H[0, 1] == pytest.approx(want, rel=1e-10) and H[1, 0] == pytest.approx(want, rel=1e-10)


def test_stdtr_second_derivatives_at_t_zero_exactly():
    # (d/dt of d/ddf stdtr at t = 0 is d/ddf of the density at 0: from the odd series there)
    H = capstan.hessian(lambda p: sc.stdtr(p[0], p[1]), np.array([3.7, 0.0]))
    near = capstan.hessian(lambda p: sc.stdtr(p[0], p[1]), np.array([3.7, 1e-6]))
    np.testing.assert_allclose(H, near, rtol=1e-6, atol=1e-6)  # (the diagonal is O(t) there)
    assert H[0, 1] == pytest.approx(H[1, 0], rel=1e-13)


@pytest.mark.parametrize("x", [0.01, 50.0, 1e5])
def test_fdtr_and_binomial_keep_small_arguments_exact(x):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50

    def F(m, n):
        return mp.betainc(m / 2, n / 2, 0, m * x / (n + m * x), regularized=True)
    g = capstan.gradient(lambda m, n: sc.fdtr(m, n, x), 3.0, 7.0)
    assert g[0] == pytest.approx(float(mp.diff(lambda m: F(m, mp.mpf(7)), 3.0)), rel=1e-12)
    assert g[1] == pytest.approx(float(mp.diff(lambda n: F(mp.mpf(3), n), 7.0)), rel=1e-12)
    p = min(0.3, 1.0 / x)  # (down to 1e-5: 1 - p is not what is used)

    def B(n, q):
        return 1 - mp.betainc(4, n - 3, 0, q, regularized=True)
    g = capstan.gradient(lambda n, q: scu._binom_cdf(3.0, n, q), 10.5, p)
    assert g[0] == pytest.approx(float(mp.diff(lambda n: B(n, mp.mpf(p)), 10.5)), rel=1e-12)
    assert g[1] == pytest.approx(float(mp.diff(lambda q: B(mp.mpf(10.5), q), p)), rel=1e-12)
