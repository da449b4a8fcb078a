"""Rules for the distribution functions that ``scipy.stats``' continuous distributions
call: the cumulative distribution functions of ``scipy.special`` (``stdtr``, ``fdtr``,
``chdtr``, ``chndtr``...), their inverses, and SciPy's private ufuncs behind
``beta``, ``skewnorm``, ``ncx2``, ``ncf``, ``nct``, ``landau``, ``cosine``...

Two general facts give most entries:

* a distribution function ``F(x, θ)`` has the density as its derivative in ``x``;
* its inverse ``x = G(q, θ)`` (``F(x, θ) = q``) has ``dx/dq = 1/F'(x)`` and, by the
  implicit function theorem, ``dx/dθ = -(∂F/∂θ)(x)/F'(x)`` wherever ``∂F/∂θ`` is known.

Densities are written with ``scipy.special``'s own functions (so that second
derivatives follow), or, where SciPy's density is itself a private ufunc without a
closed-form derivative (``_nct_pdf``, ``_ncf_pdf``, ``_landau_pdf``), with that ufunc:
first derivatives are exact, a second derivative through it is refused clearly.  A
parameter whose derivative has no closed form (degrees of freedom, the ``a`` of the
incomplete gamma function) is refused with :class:`capstan.NoRuleError`, never zero.
"""
import numpy as np

from .registry import defderiv, defimpl, plain_valued
from .special_rules import betainc_a, betainc_b, gammainc_a, psi_difference, refused

try:
    import scipy.special as sc
    import scipy.special._ufuncs as scu
except ImportError:  # pragma: no cover - scipy is optional
    sc = scu = None

_SQRT_2PI = float(np.sqrt(2.0 * np.pi))
#: the functions this table gives rules (tests/test_distributions.py checks each one)
FUNCTIONS = []


def _parameter(f, name):
    return refused(f, name, "the derivative in this parameter has no closed form in SciPy's functions")


def _rule(f, *partials):
    """``defderiv(f, *partials)`` for a function SciPy may lack (older versions)."""
    if f is not None:
        defderiv(f, *partials)
        FUNCTIONS.append(f)


def _inverse(f, names, *partials):
    """``_rule(f, *partials)`` for an inverse in a parameter that is at least 0 (a count, a
    shape, degrees of freedom): where SciPy's answer is 0, the end of its search, no
    parameter reaches the probability asked for (SciPy returns that end, a constant) and
    every partial is refused."""
    def wrap(name, partial):
        def checked(ans, *args, **kw):
            if np.any(ans == 0):
                return refused(f, name, "where SciPy's answer is 0, the end of its search: no value "
                                        "of the parameter reaches the probability asked for")(ans)
            return partial(ans, *args, **kw)
        checked.__name__ = getattr(partial, "__name__", "partial")
        return checked
    _rule(f, *[wrap(n, p) for n, p in zip(names, partials)])


# ----------------------------------------------------------------------------- densities
def beta_density(x, a, b):
    """The beta density ``x^(a-1) (1-x)^(b-1) / B(a, b)``."""
    return np.exp(sc.xlogy(a - 1.0, x) + sc.xlog1py(b - 1.0, -x) - sc.betaln(a, b))


def gamma_density(a, x):
    """The gamma density with shape ``a`` (the derivative of ``gammainc(a, x)`` in ``x``)."""
    return np.exp(sc.xlogy(a - 1.0, x) - x - sc.gammaln(a))


def t_density(t, df):
    """Student's t density with ``df`` degrees of freedom.  Its normalising constant for
    df > 1e5 from the series ``-log(2 pi)/2 - 1/(4 df) + 1/(24 df^3)``: the difference of
    gammaln there loses its digits (a density of 5e-51 instead of 0.35 at df = 1e100)."""
    big = df > 1e5
    d = np.where(big, 1e5, df)
    exact = sc.gammaln(0.5 * (d + 1.0)) - sc.gammaln(0.5 * d) - 0.5 * np.log(d * np.pi)
    w = 1.0 / np.where(big, df, 1e5)
    series = -0.5 * np.log(2.0 * np.pi) - 0.25 * w + w * w * w / 24.0
    return np.exp(np.where(big, series, exact) - 0.5 * (df + 1.0) * np.log1p(t * t / df))


def f_density(dfn, dfd, x):
    """The F density: ``fdtr(dfn, dfd, x) = betainc(dfn/2, dfd/2, dfn x / (dfd + dfn x))``."""
    s = dfd + dfn * x
    return beta_density(dfn * x / s, 0.5 * dfn, 0.5 * dfd) * dfn * dfd / (s * s)


def ncx2_density(x, df, nc):
    """The noncentral chi-squared density, through the exponentially scaled Bessel function."""
    z = np.sqrt(nc * x)
    return 0.5 * np.exp(-0.5 * (x + nc) + z + (0.25 * df - 0.5) * np.log(x / nc)) * sc.ive(0.5 * df - 1.0, z)


def _ncx2_density_x(ans, x, df, nc):
    """``d/dx`` of the noncentral chi-squared density: ``f (log I_v(z))' ...`` with ``z = sqrt(nc x)``."""
    v = 0.5 * df - 1.0
    z = np.sqrt(nc * x)
    ratio = (sc.ive(v - 1.0, z) + sc.ive(v + 1.0, z)) / (2.0 * sc.ive(v, z))
    return ans * (-0.5 + (0.25 * df - 0.5) / x + ratio * z / (2.0 * x))


def skewnorm_density(x, a):
    """The skew-normal density ``2 phi(x) Phi(a x)``."""
    return 2.0 * np.exp(-0.5 * x * x) / _SQRT_2PI * sc.ndtr(a * x)


def _skewnorm_cdf_a(x, a):
    """``d/da`` of the skew-normal distribution function (``-2 d/da T(x, a)``, Owen's T)."""
    return -np.exp(-0.5 * x * x * (1.0 + a * a)) / (np.pi * (1.0 + a * a))


def tukeylambda_quantile_p(p, lm):
    """``dQ/dp`` of the Tukey-lambda quantile ``Q(p) = (p^lm - (1-p)^lm)/lm``."""
    return np.power(p, lm - 1.0) + np.power(1.0 - p, lm - 1.0)


def _tukeylambda_quantile_lm(p, lm):
    """``dQ/dlm``; near ``lm == 0`` (the logistic case: ``|lm log p|``, ``|lm log(1-p)|``
    below 1e-3, where the general form cancels) its series
    ``sum_k k lm^(k-1) (log^(k+1) p - log^(k+1) (1-p)) / (k+1)!`` to ``lm^4``: exact in
    value and in the first derivatives there."""
    lp, lq = np.log(p), np.log1p(-p)
    small = np.maximum(np.abs(lm * lp), np.abs(lm * lq)) < 1e-3
    safe = np.where(small, 1.0, lm)
    general = (np.power(p, safe) * lp - np.power(1.0 - p, safe) * lq) / safe \
        - (np.power(p, safe) - np.power(1.0 - p, safe)) / (safe * safe)
    series = ((lp ** 2 - lq ** 2) / 2.0 + lm * (lp ** 3 - lq ** 3) / 3.0 + lm * lm * (lp ** 4 - lq ** 4) / 8.0
              + lm ** 3 * (lp ** 5 - lq ** 5) / 30.0 + lm ** 4 * (lp ** 6 - lq ** 6) / 144.0)
    return np.where(small, series, general)


_STDTR_DF_LIMIT = 5e3


def _stdtr_df(df, t):
    """``∂/∂df stdtr(df, t)``.  ``stdtr = 1 - I/2`` (``t > 0``) or ``I/2`` with
    ``I = betainc(df/2, 1/2, w)``, ``w = df / (df + t^2)``, for ``t^2 >= df``; below, the
    complementary form ``1/2 + sign(t) betainc(1/2, df/2, z) / 2``, ``z = t^2 / (df + t^2)``
    (each form with its small argument exact, not as ``1 - x``).  Refused past df = 5e3,
    where the slope (of order 1/df^2) is the difference of terms of order 1/df and came out
    wrong in its 7th digit at 2e4, its 1st at 1e8, in sign at 1e12."""
    if np.any(df > _STDTR_DF_LIMIT):
        from ..losses import NoRuleError
        raise NoRuleError("capstan: the derivative of scipy.special.stdtr (Student's t distribution "
                          "function, also behind stdtrit and scipy.stats.t) in its df argument is not "
                          "computed past df = %g, where its terms cancel; pass df as a constant there "
                          "(the t distribution is the normal one to within 1/df), or register a rule "
                          "with capstan.defderiv(scipy.special.stdtr, ...)" % _STDTR_DF_LIMIT)
    s = df + t * t
    w, z = df / s, t * t / s
    logb = sc.xlogy(0.5 * df - 1.0, w)  # (the density's (1-z)^(df/2 - 1) = w^(df/2 - 1))
    # large |t|: the density at w times t^2 / s^2, with (1 - w)^(-1/2) t^2 = |t| sqrt(s)
    dens = np.exp(logb - sc.betaln(0.5 * df, 0.5)) * np.abs(t) * np.sqrt(s) / (s * s)
    d = 0.25 * betainc_a(0.5 * df, 0.5, w) + 0.5 * dens
    large = np.where(t > 0, -d, d)
    # small |t|: z^(-1/2) t^2 sign(t) = t sqrt(s)
    small = 0.25 * np.sign(t) * betainc_b(0.5, 0.5 * df, z) - 0.5 * t * np.sqrt(s) * np.exp(
        logb - sc.betaln(0.5, 0.5 * df)) / (s * s)
    # at t == 0 exactly (where betainc at z = 0 has no derivative in t) the odd series
    # stdtr = 1/2 + f0 t - f0 (df + 1) t^3 / (6 df) + O(t^5) in its df-derivative, so that
    # derivatives in t of this partial stay right there (to the fourth)
    f0 = np.exp(sc.gammaln(0.5 * (df + 1.0)) - sc.gammaln(0.5 * df) - 0.5 * np.log(df * np.pi))
    g1 = f0 * (0.5 * sc.digamma(0.5 * (df + 1.0)) - 0.5 * sc.digamma(0.5 * df) - 0.5 / df)
    series = t * g1 - t ** 3 * (g1 * (df + 1.0) / (6.0 * df) - f0 / (6.0 * df * df))
    return np.where(t == 0, series, np.where(t * t < df, small, large))


def _fdtr_dfn(dfn, dfd, x):
    """``∂/∂dfn fdtr(dfn, dfd, x)``: ``fdtr = betainc(dfn/2, dfd/2, w)``, ``w = dfn x / s``,
    ``s = dfd + dfn x``; where ``w > 1/2``, ``1 - betainc(dfd/2, dfn/2, v)`` with ``v = dfd / s``
    (each form with its small argument exact, not as ``1 - w``)."""
    s = dfd + dfn * x
    w, v = dfn * x / s, dfd / s
    low = 0.5 * betainc_a(0.5 * dfn, 0.5 * dfd, w) + beta_density(w, 0.5 * dfn, 0.5 * dfd) * x * dfd / (s * s)
    high = -0.5 * betainc_b(0.5 * dfd, 0.5 * dfn, v) + beta_density(v, 0.5 * dfd, 0.5 * dfn) * x * dfd / (s * s)
    return np.where(w > 0.5, high, low)


def _fdtr_dfd(dfn, dfd, x):
    """``∂/∂dfd fdtr(dfn, dfd, x)`` (as :func:`_fdtr_dfn`)."""
    s = dfd + dfn * x
    w, v = dfn * x / s, dfd / s
    low = 0.5 * betainc_b(0.5 * dfn, 0.5 * dfd, w) - beta_density(w, 0.5 * dfn, 0.5 * dfd) * x * dfn / (s * s)
    high = -0.5 * betainc_a(0.5 * dfd, 0.5 * dfn, v) - beta_density(v, 0.5 * dfd, 0.5 * dfn) * x * dfn / (s * s)
    return np.where(w > 0.5, high, low)


def _binomial_inside(k, n):
    """``(inside, k, a)``: where ``0 <= k < n`` (elsewhere the distribution function is
    constant, 0 or 1), ``floor(k)``, and ``n - k`` made safe outside."""
    k = np.floor(k)
    inside = (k >= 0) & (k < n)
    return inside, np.where(inside, k, 0.0), np.where(inside, n - np.where(inside, k, 0.0), 1.0)


def _binom_p(k, n, p):
    """(``F = betainc(n - k, k + 1, 1 - p) = 1 - betainc(k + 1, n - k, p)``: ``p`` itself, not ``1 - p``)"""
    inside, k, a = _binomial_inside(k, n)
    return np.where(inside, -beta_density(p, k + 1.0, a), 0.0)


def _binom_n(k, n, p):
    inside, k, a = _binomial_inside(k, n)
    return np.where(inside, -betainc_b(k + 1.0, a, p), 0.0)


def _nbinom_p(k, n, p):
    k = np.floor(k)
    inside = k >= 0
    return np.where(inside, beta_density(p, n, np.where(inside, k, 0.0) + 1.0), 0.0)


def _nbinom_n(k, n, p):
    k = np.floor(k)
    inside = k >= 0
    return np.where(inside, betainc_a(n, np.where(inside, k, 0.0) + 1.0, p), 0.0)


def _binom_pmf_p(ans, k, n, p, **kw):
    """``d/dp C(n, k) p^k (1-p)^(n-k) = pmf (k/p - (n-k)/(1-p))`` inside; at ``p = 0`` and
    ``p = 1``, ``n (pmf(k-1; n-1, p) - pmf(k; n-1, p))`` (no division by ``p`` or ``1 - p``),
    a term outside ``0 <= k <= n - 1`` being 0 there."""
    inside = (p > 0) & (p < 1)
    q = np.where(inside, p, 0.5)
    low, high = k >= 1, k <= n - 1
    ends = n * (np.where(low, scu._binom_pmf(np.where(low, k - 1.0, 0.0), n - 1.0, p), 0.0)
                - np.where(high, scu._binom_pmf(np.where(high, k, 0.0), n - 1.0, p), 0.0))
    return np.where(inside, ans * (k / q - (n - k) / (1.0 - q)), ends)


def _binom_pmf_n(ans, k, n, p, **kw):
    """(the continuous extension in ``n``, as ``bdtr``'s: ``C(n, k) = Γ(n+1) / (Γ(k+1) Γ(n-k+1))``)"""
    return ans * (psi_difference(n - k + 1.0, k) + np.log1p(-p))


def _nbinom_pmf_p(ans, k, n, p, **kw):
    """``d/dp Γ(n+k) / (Γ(n) k!) p^n (1-p)^k = (n/p) (pmf(k; n, p) - pmf(k-1; n+1, p))``
    (no division by ``1 - p``: right at ``p = 1``)."""
    low = k >= 1
    return n / p * (ans - np.where(low, scu._nbinom_pmf(np.where(low, k - 1.0, 0.0), n + 1.0, p), 0.0))


def _nbinom_pmf_n(ans, k, n, p, **kw):
    return ans * (psi_difference(n, k) + np.log(p))


def _register():
    # ----------------------------------------------------------------- beta
    _rule(scu._beta_pdf,
          lambda ans, x, a, b, **kw: ans * ((a - 1.0) / x - (b - 1.0) / (1.0 - x)),
          lambda ans, x, a, b, **kw: ans * (np.log(x) - sc.digamma(a) + sc.digamma(a + b)),
          lambda ans, x, a, b, **kw: ans * (np.log1p(-x) - sc.digamma(b) + sc.digamma(a + b)))
    # (the shapes inside betainc/gammainc: special_rules' tail log-moments, and the implicit
    # function theorem for the inverses, dx/dθ = -(∂F/∂θ)(x) / F'(x))
    _rule(scu._beta_ppf, lambda ans, q, a, b, **kw: 1.0 / beta_density(ans, a, b),
          lambda ans, q, a, b, **kw: -betainc_a(a, b, ans) / beta_density(ans, a, b),
          lambda ans, q, a, b, **kw: -betainc_b(a, b, ans) / beta_density(ans, a, b))
    _rule(getattr(scu, "_beta_isf", None), lambda ans, q, a, b, **kw: -1.0 / beta_density(ans, a, b),
          lambda ans, q, a, b, **kw: -betainc_a(a, b, ans) / beta_density(ans, a, b),
          lambda ans, q, a, b, **kw: -betainc_b(a, b, ans) / beta_density(ans, a, b))
    _rule(getattr(sc, "betaincc", None), lambda ans, a, b, x, **kw: -betainc_a(a, b, x),
          lambda ans, a, b, x, **kw: -betainc_b(a, b, x),
          lambda ans, a, b, x, **kw: -beta_density(x, a, b))
    _rule(getattr(sc, "betainccinv", None),
          lambda ans, a, b, y, **kw: -betainc_a(a, b, ans) / beta_density(ans, a, b),
          lambda ans, a, b, y, **kw: -betainc_b(a, b, ans) / beta_density(ans, a, b),
          lambda ans, a, b, y, **kw: -1.0 / beta_density(ans, a, b))

    # ----------------------------------------------------------------- Student's t, chi-squared, F
    _rule(sc.stdtr, lambda ans, df, t, **kw: _stdtr_df(df, t), lambda ans, df, t, **kw: t_density(t, df))
    _rule(sc.stdtrit, lambda ans, df, p, **kw: -_stdtr_df(df, ans) / t_density(ans, df),
          lambda ans, df, p, **kw: 1.0 / t_density(ans, df))
    _rule(sc.chdtr, lambda ans, v, x, **kw: 0.5 * gammainc_a(0.5 * v, 0.5 * x),
          lambda ans, v, x, **kw: 0.5 * gamma_density(0.5 * v, 0.5 * x))
    _rule(sc.chdtrc, lambda ans, v, x, **kw: -0.5 * gammainc_a(0.5 * v, 0.5 * x),
          lambda ans, v, x, **kw: -0.5 * gamma_density(0.5 * v, 0.5 * x))
    _rule(sc.chdtri,  # (the inverse of chdtrc)
          lambda ans, v, p, **kw: -gammainc_a(0.5 * v, 0.5 * ans) / gamma_density(0.5 * v, 0.5 * ans),
          lambda ans, v, p, **kw: -2.0 / gamma_density(0.5 * v, 0.5 * ans))
    _rule(sc.fdtr, lambda ans, dfn, dfd, x, **kw: _fdtr_dfn(dfn, dfd, x),
          lambda ans, dfn, dfd, x, **kw: _fdtr_dfd(dfn, dfd, x),
          lambda ans, dfn, dfd, x, **kw: f_density(dfn, dfd, x))
    _rule(sc.fdtrc, lambda ans, dfn, dfd, x, **kw: -_fdtr_dfn(dfn, dfd, x),
          lambda ans, dfn, dfd, x, **kw: -_fdtr_dfd(dfn, dfd, x),
          lambda ans, dfn, dfd, x, **kw: -f_density(dfn, dfd, x))
    _rule(sc.fdtri, lambda ans, dfn, dfd, p, **kw: -_fdtr_dfn(dfn, dfd, ans) / f_density(dfn, dfd, ans),
          lambda ans, dfn, dfd, p, **kw: -_fdtr_dfd(dfn, dfd, ans) / f_density(dfn, dfd, ans),
          lambda ans, dfn, dfd, p, **kw: 1.0 / f_density(dfn, dfd, ans))
    # gdtr(a, b, x) = gammainc(b, a x) (a the rate, b the shape)
    _rule(sc.gdtr, lambda ans, a, b, x, **kw: x * gamma_density(b, a * x),
          lambda ans, a, b, x, **kw: gammainc_a(b, a * x), lambda ans, a, b, x, **kw: a * gamma_density(b, a * x))
    _rule(sc.gdtrc, lambda ans, a, b, x, **kw: -x * gamma_density(b, a * x),
          lambda ans, a, b, x, **kw: -gammainc_a(b, a * x), lambda ans, a, b, x, **kw: -a * gamma_density(b, a * x))

    # ----------------------------------------------------------------- inverses in a parameter
    # (the implicit function theorem on the forward function F(x, θ) = p: dθ/dp = 1/(∂F/∂θ),
    # dθ/dx = -(∂F/∂x)/(∂F/∂θ); where ∂F/∂θ has no closed form, every argument is refused)
    _inverse(sc.chdtriv, ("p", "x"), lambda ans, p, x, **kw: 2.0 / gammainc_a(0.5 * ans, 0.5 * x),
          lambda ans, p, x, **kw: -gamma_density(0.5 * ans, 0.5 * x) / gammainc_a(0.5 * ans, 0.5 * x))
    _inverse(sc.stdtridf, ("p", "t"), lambda ans, p, t, **kw: 1.0 / _stdtr_df(ans, t),
          lambda ans, p, t, **kw: -t_density(t, ans) / _stdtr_df(ans, t))
    # gdtr(a, b, x) = gammainc(b, a x): its inverses in x (gdtrix), the rate a (gdtria), the shape b
    _rule(sc.gdtrix, lambda ans, a, b, p, **kw: -ans / a,
          lambda ans, a, b, p, **kw: -gammainc_a(b, a * ans) / (a * gamma_density(b, a * ans)),
          lambda ans, a, b, p, **kw: 1.0 / (a * gamma_density(b, a * ans)))
    _inverse(sc.gdtria, ("p", "b", "x"), lambda ans, p, b, x, **kw: 1.0 / (x * gamma_density(b, ans * x)),
          lambda ans, p, b, x, **kw: -gammainc_a(b, ans * x) / (x * gamma_density(b, ans * x)),
          lambda ans, p, b, x, **kw: -ans / x)
    _inverse(sc.gdtrib, ("a", "p", "x"),
             lambda ans, a, p, x, **kw: -x * gamma_density(ans, a * x) / gammainc_a(ans, a * x),
          lambda ans, a, p, x, **kw: 1.0 / gammainc_a(ans, a * x),
          lambda ans, a, p, x, **kw: -a * gamma_density(ans, a * x) / gammainc_a(ans, a * x))
    # betainc(a, b, x) = p in a (btdtria) and b (btdtrib)
    _inverse(sc.btdtria, ("p", "b", "x"), lambda ans, p, b, x, **kw: 1.0 / betainc_a(ans, b, x),
          lambda ans, p, b, x, **kw: -betainc_b(ans, b, x) / betainc_a(ans, b, x),
          lambda ans, p, b, x, **kw: -beta_density(x, ans, b) / betainc_a(ans, b, x))
    _inverse(sc.btdtrib, ("a", "p", "x"),
             lambda ans, a, p, x, **kw: -betainc_a(a, ans, x) / betainc_b(a, ans, x),
          lambda ans, a, p, x, **kw: 1.0 / betainc_b(a, ans, x),
          lambda ans, a, p, x, **kw: -beta_density(x, a, ans) / betainc_b(a, ans, x))
    # fdtr in dfd
    _inverse(sc.fdtridfd, ("dfn", "p", "x"),
             lambda ans, dfn, p, x, **kw: -_fdtr_dfn(dfn, ans, x) / _fdtr_dfd(dfn, ans, x),
          lambda ans, dfn, p, x, **kw: 1.0 / _fdtr_dfd(dfn, ans, x),
          lambda ans, dfn, p, x, **kw: -f_density(dfn, ans, x) / _fdtr_dfd(dfn, ans, x))
    # binomial F = betainc(n - k, k + 1, 1 - p), negative binomial F = betainc(n, k + 1, p), with a
    # continuous k in the inverses bdtrik, nbdtrik (SciPy's cdflib solves these); in p (bdtri,
    # nbdtri) k is a step
    def binom_k(k, n, p):  # ∂F/∂k
        return betainc_b(n - k, k + 1.0, 1.0 - p) - betainc_a(n - k, k + 1.0, 1.0 - p)

    _inverse(sc.bdtrik, ("y", "n", "p"), lambda ans, y, n, p, **kw: 1.0 / binom_k(ans, n, p),
          lambda ans, y, n, p, **kw: -betainc_a(n - ans, ans + 1.0, 1.0 - p) / binom_k(ans, n, p),
          lambda ans, y, n, p, **kw: beta_density(1.0 - p, n - ans, ans + 1.0) / binom_k(ans, n, p))
    _inverse(sc.bdtrin, ("k", "y", "p"),
             lambda ans, k, y, p, **kw: -binom_k(k, ans, p) / betainc_a(ans - k, k + 1.0, 1.0 - p),
          lambda ans, k, y, p, **kw: 1.0 / betainc_a(ans - k, k + 1.0, 1.0 - p),
          lambda ans, k, y, p, **kw:
          beta_density(1.0 - p, ans - k, k + 1.0) / betainc_a(ans - k, k + 1.0, 1.0 - p))
    steps = "a step function of the count: floor(k)"
    integer = "an integer count: SciPy truncates it"
    _rule(sc.bdtri, refused(sc.bdtri, "k", steps), refused(sc.bdtri, "n", integer),
          lambda ans, k, n, y, **kw: 1.0 / _binom_p(k, np.trunc(n), ans))
    _inverse(sc.nbdtrik, ("y", "n", "p"), lambda ans, y, n, p, **kw: 1.0 / betainc_b(n, ans + 1.0, p),
          lambda ans, y, n, p, **kw: -betainc_a(n, ans + 1.0, p) / betainc_b(n, ans + 1.0, p),
          lambda ans, y, n, p, **kw: -beta_density(p, n, ans + 1.0) / betainc_b(n, ans + 1.0, p))
    _inverse(sc.nbdtrin, ("k", "y", "p"),
             lambda ans, k, y, p, **kw: -betainc_b(ans, k + 1.0, p) / betainc_a(ans, k + 1.0, p),
          lambda ans, k, y, p, **kw: 1.0 / betainc_a(ans, k + 1.0, p),
          lambda ans, k, y, p, **kw: -beta_density(p, ans, k + 1.0) / betainc_a(ans, k + 1.0, p))
    _rule(sc.nbdtri, refused(sc.nbdtri, "k", steps), refused(sc.nbdtri, "n", integer),
          lambda ans, k, n, y, **kw: 1.0 / _nbinom_p(k, np.trunc(n), ans))
    # normal: nrdtrimn(p, std, x) = x - std ndtri(p), nrdtrisd(mn, p, x) = (x - mn) / ndtri(p)
    _rule(sc.nrdtrimn, lambda ans, p, std, x, **kw: -std * _SQRT_2PI * np.exp(0.5 * ((x - ans) / std) ** 2),
          lambda ans, p, std, x, **kw: -(x - ans) / std, lambda ans, p, std, x, **kw: 1.0 + 0.0 * ans)
    _rule(sc.nrdtrisd, lambda ans, mn, p, x, **kw: -ans / (x - mn),
          lambda ans, mn, p, x, **kw: -ans * ans / (x - mn) * _SQRT_2PI * np.exp(0.5 * ((x - mn) / ans) ** 2),
          lambda ans, mn, p, x, **kw: ans / (x - mn))

    # ----------------------------------------------------------------- binomial, negative binomial (k a step)
    # binomial: F(k; n, p) = betainc(n - k, k + 1, 1 - p) for 0 <= k < n (k = floor(k));
    # negative binomial: F(k; n, p) = betainc(n, k + 1, p)
    steps = "a step function of the count: floor(k)"
    for f, sign in ((sc.bdtr, 1.0), (sc.bdtrc, -1.0), (scu._binom_cdf, 1.0), (scu._binom_sf, -1.0)):
        _rule(f, refused(f, "k", steps), lambda ans, k, n, p, _s=sign, **kw: _s * _binom_n(k, n, p),
              lambda ans, k, n, p, _s=sign, **kw: _s * _binom_p(k, n, p))
    for f, sign in ((sc.nbdtr, 1.0), (sc.nbdtrc, -1.0), (scu._nbinom_cdf, 1.0), (scu._nbinom_sf, -1.0)):
        _rule(f, refused(f, "k", steps), lambda ans, k, n, p, _s=sign, **kw: _s * _nbinom_n(k, n, p),
              lambda ans, k, n, p, _s=sign, **kw: _s * _nbinom_p(k, n, p))

    counts = "the count of successes or failures, an integer"
    _rule(getattr(scu, "_binom_pmf", None), refused(scu._binom_pmf, "k", counts), _binom_pmf_n, _binom_pmf_p)
    _rule(getattr(scu, "_nbinom_pmf", None), refused(scu._nbinom_pmf, "k", counts), _nbinom_pmf_n, _nbinom_pmf_p)

    # negative binomial moments (Boost's closed forms, written out: differentiable in n and p)
    for name, formula in (("_nbinom_mean", lambda n, p: n * (1.0 - p) / p),
                          ("_nbinom_variance", lambda n, p: n * (1.0 - p) / (p * p)),
                          ("_nbinom_skewness", lambda n, p: (2.0 - p) / np.sqrt(n * (1.0 - p))),
                          ("_nbinom_kurtosis_excess", lambda n, p: 6.0 / n + p * p / (n * (1.0 - p)))):
        if hasattr(scu, name):
            defimpl(getattr(scu, name), formula)

    # ----------------------------------------------------------------- noncentral chi-squared
    # F(x; k, nc) is a Poisson(nc/2) mixture of central F(x; k + 2j): dF/dnc = (F(x; k+2) - F(x; k))/2
    _rule(sc.chndtr, lambda ans, x, df, nc, **kw: ncx2_density(x, df, nc), _parameter(sc.chndtr, "df"),
          lambda ans, x, df, nc, **kw: 0.5 * (sc.chndtr(x, df + 2.0, nc) - ans))
    _rule(sc.chndtrix, lambda ans, p, df, nc, **kw: 1.0 / ncx2_density(ans, df, nc),
          _parameter(sc.chndtrix, "df"), lambda ans, p, df, nc, **kw:
          -0.5 * (sc.chndtr(ans, df + 2.0, nc) - p) / ncx2_density(ans, df, nc))
    _rule(scu._ncx2_pdf, _ncx2_density_x, _parameter(scu._ncx2_pdf, "df"),
          lambda ans, x, df, nc, **kw: 0.5 * (scu._ncx2_pdf(x, df + 2.0, nc) - ans))
    _rule(scu._ncx2_sf, lambda ans, x, df, nc, **kw: -ncx2_density(x, df, nc), _parameter(scu._ncx2_sf, "df"),
          lambda ans, x, df, nc, **kw: 0.5 * (scu._ncx2_sf(x, df + 2.0, nc) - ans))
    _rule(scu._ncx2_isf, lambda ans, q, df, nc, **kw: -1.0 / ncx2_density(ans, df, nc),
          _parameter(scu._ncx2_isf, "df"), lambda ans, q, df, nc, **kw:
          0.5 * (scu._ncx2_sf(ans, df + 2.0, nc) - q) / ncx2_density(ans, df, nc))

    # ----------------------------------------------------------------- noncentral F and t: x only
    # (the noncentral F distribution function is a Poisson mixture too, in dfn + 2j at a fixed
    # beta argument dfn x / (dfd + dfn x): dF/dnc = (F(dfn + 2, x dfn / (dfn + 2)) - F)/2)
    def ncf_nc(ans, dfn, dfd, nc, x, **kw):
        return 0.5 * (sc.ncfdtr(dfn + 2.0, dfd, nc, x * dfn / (dfn + 2.0)) - ans)

    _rule(sc.ncfdtr, _parameter(sc.ncfdtr, "dfn"), _parameter(sc.ncfdtr, "dfd"), ncf_nc,
          lambda ans, dfn, dfd, nc, x, **kw: scu._ncf_pdf(x, dfn, dfd, nc))
    _rule(sc.ncfdtri, _parameter(sc.ncfdtri, "dfn"), _parameter(sc.ncfdtri, "dfd"),
          lambda ans, dfn, dfd, nc, p, **kw: -ncf_nc(p, dfn, dfd, nc, ans) / scu._ncf_pdf(ans, dfn, dfd, nc),
          lambda ans, dfn, dfd, nc, p, **kw: 1.0 / scu._ncf_pdf(ans, dfn, dfd, nc))
    _rule(scu._ncf_sf, lambda ans, x, dfn, dfd, nc, **kw: -scu._ncf_pdf(x, dfn, dfd, nc),
          _parameter(scu._ncf_sf, "dfn"), _parameter(scu._ncf_sf, "dfd"),
          lambda ans, x, dfn, dfd, nc, **kw: -ncf_nc(1.0 - ans, dfn, dfd, nc, x))
    _rule(scu._ncf_isf, lambda ans, q, dfn, dfd, nc, **kw: -1.0 / scu._ncf_pdf(ans, dfn, dfd, nc),
          _parameter(scu._ncf_isf, "dfn"), _parameter(scu._ncf_isf, "dfd"),
          lambda ans, q, dfn, dfd, nc, **kw: -ncf_nc(1.0 - q, dfn, dfd, nc, ans) / scu._ncf_pdf(ans, dfn, dfd, nc))
    # (the inverses in a parameter whose forward derivative has none: every argument refused)
    for f, names in ((sc.chndtridf, ("x", "p", "nc")), (sc.ncfdtridfd, ("dfn", "p", "nc", "f")),
                     (sc.ncfdtridfn, ("p", "dfd", "nc", "f")), (sc.nctdtridf, ("p", "nc", "t")),
                     (sc.nctdtrinc, ("df", "p", "t"))):
        _rule(f, *[refused(f, n, "it inverts a distribution function in a parameter whose derivative has "
                              "no closed form in SciPy's functions") for n in names])
    # chndtrinc(x, df, p): the inverse in nc
    _inverse(sc.chndtrinc, ("x", "df", "p"), lambda ans, x, df, p, **kw: -ncx2_density(x, df, ans) / (
        0.5 * (sc.chndtr(x, df + 2.0, ans) - p)), _parameter(sc.chndtrinc, "df"),
          lambda ans, x, df, p, **kw: 1.0 / (0.5 * (sc.chndtr(x, df + 2.0, ans) - p)))
    # ncfdtrinc(dfn, dfd, p, f): the inverse in nc
    _inverse(sc.ncfdtrinc, ("dfn", "dfd", "p", "f"),
             _parameter(sc.ncfdtrinc, "dfn"), _parameter(sc.ncfdtrinc, "dfd"),
          lambda ans, dfn, dfd, p, f, **kw: 1.0 / ncf_nc(sc.ncfdtr(dfn, dfd, ans, f), dfn, dfd, ans, f),
          lambda ans, dfn, dfd, p, f, **kw: -scu._ncf_pdf(f, dfn, dfd, ans) / ncf_nc(
              sc.ncfdtr(dfn, dfd, ans, f), dfn, dfd, ans, f))
    _rule(sc.nctdtr, _parameter(sc.nctdtr, "df"), _parameter(sc.nctdtr, "nc"),
          lambda ans, df, nc, t, **kw: scu._nct_pdf(t, df, nc))
    _rule(sc.nctdtrit, _parameter(sc.nctdtrit, "df"), _parameter(sc.nctdtrit, "nc"),
          lambda ans, df, nc, p, **kw: 1.0 / scu._nct_pdf(ans, df, nc))
    _rule(scu._nct_sf, lambda ans, x, df, nc, **kw: -scu._nct_pdf(x, df, nc),
          _parameter(scu._nct_sf, "df"), _parameter(scu._nct_sf, "nc"))
    _rule(scu._nct_isf, lambda ans, q, df, nc, **kw: -1.0 / scu._nct_pdf(ans, df, nc),
          _parameter(scu._nct_isf, "df"), _parameter(scu._nct_isf, "nc"))

    # ----------------------------------------------------------------- skew normal (loc 0, scale 1)
    _rule(scu._skewnorm_cdf, lambda ans, x, loc, scale, a, **kw: skewnorm_density(x, a),
          _parameter(scu._skewnorm_cdf, "loc"), _parameter(scu._skewnorm_cdf, "scale"),
          lambda ans, x, loc, scale, a, **kw: _skewnorm_cdf_a(x, a))
    _rule(scu._skewnorm_ppf, lambda ans, q, loc, scale, a, **kw: 1.0 / skewnorm_density(ans, a),
          _parameter(scu._skewnorm_ppf, "loc"), _parameter(scu._skewnorm_ppf, "scale"),
          lambda ans, q, loc, scale, a, **kw: -_skewnorm_cdf_a(ans, a) / skewnorm_density(ans, a))
    _rule(scu._skewnorm_isf, lambda ans, q, loc, scale, a, **kw: -1.0 / skewnorm_density(ans, a),
          _parameter(scu._skewnorm_isf, "loc"), _parameter(scu._skewnorm_isf, "scale"),
          lambda ans, q, loc, scale, a, **kw: -_skewnorm_cdf_a(ans, a) / skewnorm_density(ans, a))

    # ----------------------------------------------------------------- Tukey lambda: F(Q(p)) = p
    def tukeylambda_outside(x, lm):
        """Past the ends of the support, ``|x| > 1/lm`` for ``lm > 0``, where the cdf is the
        constant 0 or 1 (``F(Q(p)) = p`` read there gave the slope at the end: 1 for
        ``tklmbda(2.0, 1.7)``)."""
        return (lm > 0) & (np.abs(x) * lm > 1.0)

    def tukeylambda_x(ans, x, lm, **kw):
        with np.errstate(all="ignore"):
            return np.where(tukeylambda_outside(x, lm), 0.0, 1.0 / tukeylambda_quantile_p(ans, lm))

    def tukeylambda_lm(ans, x, lm, **kw):
        with np.errstate(all="ignore"):
            return np.where(tukeylambda_outside(x, lm), 0.0,
                            -_tukeylambda_quantile_lm(ans, lm) / tukeylambda_quantile_p(ans, lm))

    _rule(sc.tklmbda, tukeylambda_x, tukeylambda_lm)

    # ----------------------------------------------------------------- location-scale families (x only)
    def cauchy_density(x, loc, scale):
        z = (x - loc) / scale
        return 1.0 / (np.pi * scale * (1.0 + z * z))

    def invgauss_density(x, mu, scale):
        z = x / scale
        return np.exp(-0.5 * (z - mu) ** 2 / (z * mu * mu)) / (scale * np.sqrt(2.0 * np.pi * z ** 3))

    for f, density, sign, names in (
            (scu._cauchy_ppf, cauchy_density, 1.0, ("loc", "scale")),
            (scu._cauchy_isf, cauchy_density, -1.0, ("loc", "scale")),
            (scu._landau_ppf, scu._landau_pdf, 1.0, ("loc", "scale")),
            (scu._landau_isf, scu._landau_pdf, -1.0, ("loc", "scale"))):
        _rule(f, lambda ans, q, p1, p2, _d=density, _s=sign, **kw: _s / _d(ans, p1, p2),
              _parameter(f, names[0]), _parameter(f, names[1]))
    # (the inverse Gaussian in mu: ∂F/∂mu = -(2/mu^2) e^(2/mu) Φ(-(z/mu + 1)/√z), the two
    # density terms cancelling; SciPy passes scale 1)
    def invgauss_quantile_mu(ans, q, mu, scale, **kw):
        z = ans / scale
        dF = -2.0 / (mu * mu) * np.exp(2.0 / mu + sc.log_ndtr(-(z / mu + 1.0) / np.sqrt(z)))
        return -dF / (scale * invgauss_density(ans, mu, scale))

    for f, sign in ((scu._invgauss_ppf, 1.0), (scu._invgauss_isf, -1.0)):
        _rule(f, lambda ans, q, mu, scale, _s=sign, **kw: _s / invgauss_density(ans, mu, scale),
              invgauss_quantile_mu, _parameter(f, "scale"))
    for f, sign in ((scu._landau_cdf, 1.0), (scu._landau_sf, -1.0)):
        _rule(f, lambda ans, x, loc, scale, _s=sign, **kw: _s * scu._landau_pdf(x, loc, scale),
              _parameter(f, "loc"), _parameter(f, "scale"))
    _rule(scu._cosine_cdf, lambda ans, x, **kw: (1.0 + np.cos(x)) / (2.0 * np.pi))
    _rule(scu._cosine_invcdf, lambda ans, p, **kw: 2.0 * np.pi / (1.0 + np.cos(ans)))
    _rule(scu._log1mexp, lambda ans, x, **kw: -1.0 / np.expm1(-x))

    # ----------------------------------------------------------------- Kolmogorov-Smirnov
    # (SciPy's own derivative functions: _smirnovp is d/dd smirnov, _kolmogp d/dy kolmogorov)
    _rule(sc.smirnov, _parameter(sc.smirnov, "n"), lambda ans, n, d, **kw: scu._smirnovp(n, d))
    _rule(scu._smirnovc, _parameter(scu._smirnovc, "n"), lambda ans, n, d, **kw: -scu._smirnovp(n, d))
    _rule(sc.smirnovi, _parameter(sc.smirnovi, "n"), lambda ans, n, p, **kw: 1.0 / scu._smirnovp(n, ans))
    _rule(scu._smirnovci, _parameter(scu._smirnovci, "n"), lambda ans, n, p, **kw: -1.0 / scu._smirnovp(n, ans))
    _rule(sc.kolmogorov, lambda ans, y, **kw: scu._kolmogp(y))
    _rule(scu._kolmogc, lambda ans, y, **kw: -scu._kolmogp(y))
    _rule(sc.kolmogi, lambda ans, p, **kw: 1.0 / scu._kolmogp(ans))
    _rule(scu._kolmogci, lambda ans, p, **kw: -1.0 / scu._kolmogp(ans))

    # ----------------------------------------------------------------- von Mises (scipy.stats' Cython)
    try:
        from scipy.stats._stats import von_mises_cdf
    except ImportError:  # pragma: no cover
        von_mises_cdf = None
    if von_mises_cdf is not None:
        _rule(von_mises_cdf, _parameter(von_mises_cdf, "kappa"),
              lambda ans, k, x, **kw: np.exp(k * (np.cos(x) - 1.0)) / (2.0 * np.pi * sc.i0e(k)))


if sc is not None:
    _register()


# ----------------------------------------------------------------------------- gaussian_kde (Cython)
def _whitened_distances(points, xi, cho_cov):
    """Squared distances ``(n, m)`` between the data and the evaluation points after
    whitening both by the Cholesky factor of the kernel covariance, and ``d``."""
    from scipy import linalg
    p = np.transpose(linalg.solve_triangular(cho_cov, np.transpose(points), lower=True))
    x = np.transpose(linalg.solve_triangular(cho_cov, np.transpose(xi), lower=True))
    return np.sum((p[:, None, :] - x[None, :, :]) ** 2, axis=-1), np.shape(points)[1]


def gaussian_kernel_estimate(points, values, xi, cho_cov, dtype, _=0):
    """``scipy.stats._stats.gaussian_kernel_estimate[double]`` (``gaussian_kde.evaluate``):
    ``sum_i values_i N(xi; points_i, L L^T)`` with NumPy operations (the same numbers to
    rounding), so that the points, the data, the weights and the bandwidth differentiate."""
    r2, d = _whitened_distances(points, xi, cho_cov)
    norm = (2.0 * np.pi) ** (-0.5 * d) / np.prod(np.diagonal(cho_cov))
    return np.matmul(np.transpose(np.exp(-0.5 * r2)) * norm, values)


def gaussian_kernel_estimate_log(points, values, xi, cho_cov, dtype, _=0):
    """``scipy.stats._stats.gaussian_kernel_estimate_log[double]`` (``gaussian_kde.logpdf``):
    the log of :func:`gaussian_kernel_estimate` by ``logsumexp``."""
    r2, d = _whitened_distances(points, xi, cho_cov)
    log_norm = -0.5 * d * np.log(2.0 * np.pi) - np.sum(np.log(np.diagonal(cho_cov)))
    terms = -0.5 * np.transpose(r2)[:, :, None] + np.log(values)[None, :, :]
    return sc.logsumexp(terms, axis=1) + log_norm


if sc is not None:
    try:
        from scipy.stats import _stats as _scipy_stats
        for _name, _impl in (("gaussian_kernel_estimate", gaussian_kernel_estimate),
                             ("gaussian_kernel_estimate_log", gaussian_kernel_estimate_log)):
            defimpl(getattr(_scipy_stats, _name)["double"], _impl)  # (the float64 specialization)
    except (ImportError, AttributeError, KeyError, TypeError):  # pragma: no cover - other SciPy versions
        pass


# ----------------------------------------------------------------------------- rv_continuous.logpdf / pdf
def _plan(dist, x, z, scale, args):
    """What ``rv_continuous.logpdf``/``pdf`` will do at these (plain) arguments, in one
    plain call, from ``x`` and the standardized points ``z = (x - loc) / scale``:
    ``(cond, bad, dtype, cast, simple)`` -- where the density is evaluated, where the
    result is ``dist.badvalue`` (invalid parameters or NaN points; ``None`` when every point
    is valid), the result's dtype, whether ``z`` needs casting to it, and whether the call
    is the common simple one (every point valid, ``z`` already a 1-d array of that dtype and
    of the broadcast shape, every shape parameter of that shape too, and a single
    ``scale``)."""
    dtype = np.promote_types(np.asarray(x).dtype, np.float64)
    cast = type(z) is not np.ndarray or z.dtype != dtype
    z, scale = np.asarray(z, dtype=dtype), np.asarray(scale)
    positive = scale > 0
    cond0 = dist._argcheck(*args) & positive
    support = dist._support_mask(z, *args)
    # (valid parameters and a positive single scale: the support mask is the condition)
    cond = support if np.ndim(cond0) == 0 and cond0 else cond0 & support & positive
    shape = np.shape(cond)
    valid = bool(np.logical_and.reduce(cond, axis=None))  # (np.all(cond) without its Python wrapper)
    simple = (valid and not cast and len(shape) == 1 and z.shape == shape and scale.ndim == 0
              and all(np.shape(a) == shape for a in args))
    return cond, None if valid else (1 - cond0) + np.isnan(z), dtype, cast, simple  # (as SciPy: 1 - cond0)


plain_valued(_plan)


def _flat(p, shape):
    """``p`` broadcast to ``shape`` and raveled (``argsreduce``'s all-valid case)."""
    return np.ravel(p) if np.shape(p) == shape else np.ravel(np.broadcast_to(p, shape))


def _density(log, dist, x, args, kwds):
    """SciPy's ``rv_continuous.logpdf`` (``log``) or ``pdf``, step for step, with the
    validity masks and every decision on shapes and dtypes made in one plain call
    (:func:`_plan`): the same values and the same calls of the distribution's
    ``_logpdf``/``_pdf`` (on the 1-d arrays of valid points, as ``argsreduce`` gives them),
    in a fraction of the operations to differentiate.

    ``loc`` and ``scale`` enter only by ``(x - loc) / scale`` and ``log(scale)`` (or
    ``/ scale``); a single ``scale`` is used as given, broadcast by the arithmetic (SciPy
    broadcasts it to every point first: the same numbers)."""
    args, loc, scale = dist._parse_args(*args, **kwds)
    if args:
        args = tuple(np.asarray(a) for a in args)
    z = np.subtract(x, loc) / scale  # (SciPy's asarray(x) - loc: lists are arrays by the ufunc)
    cond, bad, dtype, cast, simple = _plan(dist, x, z, scale, args)
    if simple:  # (the values SciPy computes, without broadcasting, raveling or placing)
        return dist._logpdf(z, *args) - np.log(scale) if log else dist._pdf(z, *args) / scale
    if cast:
        z = np.asarray(z, dtype=dtype)
    if bad is None:  # (every point valid)
        shape = np.shape(cond)  # (the broadcast shape of z, args and scale)
        flat_args = [_flat(a, shape) for a in args] if args else ()
        values = dist._logpdf(_flat(z, shape), *flat_args) if log else dist._pdf(_flat(z, shape), *flat_args)
        if np.ndim(scale):
            scale = _flat(scale, shape)
        values = values - np.log(scale) if log else values / scale
        output = np.reshape(values, shape)
        if output.dtype != dtype:
            output = output.astype(dtype)
    else:
        output = np.where(bad, dist.badvalue, -np.inf if log else 0.0).astype(dtype)
        if np.any(cond):
            good = argsreduce(cond, z, *args, scale)
            s = good[-1]
            np.place(output, cond, dist._logpdf(*good[:-1]) - np.log(s) if log else dist._pdf(*good[:-1]) / s)
    return output[()] if output.ndim == 0 else output


def rv_continuous_logpdf(self, x, *args, **kwds):
    """``rv_continuous.logpdf`` (see :func:`_density`)."""
    return _density(True, self, x, args, kwds)


def rv_continuous_pdf(self, x, *args, **kwds):
    """``rv_continuous.pdf`` (see :func:`_density`)."""
    return _density(False, self, x, args, kwds)


if sc is not None:
    from scipy.stats import rv_continuous
    from scipy.stats._distn_infrastructure import argsreduce

    defimpl(rv_continuous.logpdf, rv_continuous_logpdf)
    defimpl(rv_continuous.pdf, rv_continuous_pdf)
    METHODS = [rv_continuous.logpdf, rv_continuous.pdf, _plan]  # (tests/test_distributions.py)
    FUNCTIONS.extend(METHODS)


# ----------------------------------------------------------------------------- rv_continuous._entropy
#: the log of the smallest normal float: below it ``1 / p`` (``log``'s slope) overflows
_LOG_TINY = float(np.log(np.finfo(float).tiny))


def rv_continuous_entropy(self, *args):
    """``rv_continuous._entropy``, SciPy's numerical ``-∫ p log p`` (``quad`` of
    ``entr(pdf)``): SciPy's value, with the derivative of the same integral written
    ``-∫ exp(logpdf) logpdf`` over the points where the density is a normal float (0
    elsewhere: a change of the integrand below 1e-305, not seen in the result).  Where the
    density underflows to 0 while its derivative is still a subnormal number
    (``skewnorm``'s tail), ``entr``'s infinite slope at 0 met that tangent and the
    derivative came out ``-inf``; where it is subnormal (``foldnorm``'s tail), ``log``'s
    slope ``1 / p`` is past the float range (it was ``inf``); where its formula overflows
    on the way (``exponpow``'s ``exp(exp(...))``), its derivative is undefined.  Those
    points are not selected."""
    from scipy import integrate

    from ..markers import stop_gradient

    value = rv_continuous._entropy(self, *stop_gradient(args))

    def integrand(x):
        logp = self._logpdf(x, *args)
        with np.errstate(invalid="ignore"):  # (-inf or NaN log-densities: not selected)
            return np.where(logp > _LOG_TINY, -np.exp(logp) * logp, 0.0)

    lo, hi = self._get_support(*args)
    with np.errstate(over="ignore"):
        h = integrate.quad(integrand, lo, hi)[0]
    if np.isnan(stop_gradient(h)):  # (SciPy's second try: limits at the 1e-10 quantiles)
        low, upp = self.ppf([1e-10, 1.0 - 1e-10], *args)
        h = integrate.quad(integrand, low if np.isinf(stop_gradient(lo)) else lo,
                           upp if np.isinf(stop_gradient(hi)) else hi)[0]
    return value + (h - stop_gradient(h))


if sc is not None:
    defimpl(rv_continuous._entropy, rv_continuous_entropy)
    METHODS.append(rv_continuous._entropy)
    FUNCTIONS.append(rv_continuous._entropy)
