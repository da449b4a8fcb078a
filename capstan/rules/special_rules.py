"""Rules for ``scipy.special``: one entry per function, its partial derivatives written
with SciPy's own functions (so that they are differentiable in turn: Hessians work).

Most entries are ``defderiv`` partials, one per positional argument.  A parameter
whose derivative has no closed form in SciPy's functions (a Bessel function's order,
the ``a`` of ``gammainc``) gets a *refusing* partial: differentiating with respect to
it raises :class:`capstan.NoRuleError` naming the function and the argument, rather
than passing a zero.  Functions with several results (``airy``, ``fresnel``...) and
SciPy's Python functions with options (``logsumexp``, ``softmax``, ``factorial``)
are defined in terms of single-result primitives (``defimpl``).

See docs/capstan-scipy.md for the table of differentiable and refused arguments.
"""
import math

import numpy as np

from ..nesting import varies
from .log_moments import beta_tail_moment, gamma_tail_moment, zeta_moment
from .kink_rules import at_zero
from .registry import defderiv, defimpl, defjvp, defkink, defvjp, nondifferentiable

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover - scipy is optional
    sc = None

_SQRT_PI = float(np.sqrt(np.pi))
_SQRT_2PI = float(np.sqrt(2.0 * np.pi))
_SQRT2 = float(np.sqrt(2.0))
_LN2 = float(np.log(2.0))
_LN10 = float(np.log(10.0))
_DEG = np.pi / 180.0


def refused(f, argument, why):
    """A partial that refuses: ``f`` has no derivative rule for ``argument``."""
    name = "scipy.special." + getattr(f, "__name__", "f")

    def partial(ans, *args, **kw):
        from ..adcontext import NoRuleError
        raise NoRuleError("capstan: %s has no derivative with respect to its argument %s (%s); "
                          "pass that argument as a constant, or register a rule with "
                          "capstan.defderiv(%s, ...)" % (name, argument, why, name))

    partial.__name__ = "refused_%s_%s" % (getattr(f, "__name__", "f"), argument)
    return partial


def _trigamma(ans, x, **kw):
    """The derivative of digamma: ``polygamma(1, x)``, which SciPy has for real ``x`` only."""
    if np.iscomplexobj(x):
        from ..adcontext import NoRuleError
        raise NoRuleError("capstan: scipy.special.digamma has no derivative at complex points "
                          "(SciPy's polygamma is real-only); differentiate it at real points")
    return sc.polygamma(1, x)


def _order(f, name="v"):
    return refused(f, name, "the derivative in the order has no closed form")


def _parameter(f, name):
    return refused(f, name, "the derivative in this parameter has no closed form in SciPy's functions")


def _nz(d):
    return np.where(d == 0, 1.0, d)


def _real_only(f, partial):
    """``partial`` for real arguments; complex ones are refused (the function is not
    holomorphic: its scaling uses ``|Re z|`` or ``|Im z|``)."""
    def checked(ans, *args, **kw):
        if any(np.iscomplexobj(a) for a in args):
            return refused(f, "z", "complex arguments: the function is not holomorphic")(ans)
        return partial(ans, *args, **kw)
    return checked


def _split(name, f, parts):
    """Single-result primitives for the results of ``f`` (a ufunc with several
    outputs): ``parts[k](x) == f(x)[k]``; ``f`` itself is defined as their tuple."""
    prims = []
    for k in range(len(parts)):
        def one(*args, _k=k):
            return f(*args)[_k]
        one.__name__ = one.__qualname__ = "%s_%d" % (name, k)
        prims.append(one)
    defimpl(f, lambda *args, **kw: _tuple_of(prims, args, kw))
    return prims


def _tuple_of(prims, args, kw):
    if kw:
        raise TypeError("capstan: scipy.special.%s(..., %s) has no derivative rule"
                        % (prims[0].__name__.rsplit("_", 1)[0], ", ".join(kw)))
    return tuple([p(*args) for p in prims])  # (not a generator: a refusal inside it is the rule's own)


def _register():
    # ----------------------------------------------------------------- logistic and error functions
    defderiv(sc.expit, lambda ans, x, **kw: ans * sc.expit(-x))  # (not ans * (1 - ans): 0 from x > 37 on)
    defderiv(sc.logit, lambda ans, x, **kw: 1.0 / (x * (1.0 - x)))
    defderiv(sc.log_expit, lambda ans, x, **kw: sc.expit(-x))
    defderiv(sc.erf, lambda ans, x, **kw: (2.0 / _SQRT_PI) * np.exp(-x * x))
    defderiv(sc.erfc, lambda ans, x, **kw: (-2.0 / _SQRT_PI) * np.exp(-x * x))
    defderiv(sc.erfcx, _erfcx_d)
    defderiv(sc.erfi, lambda ans, x, **kw: (2.0 / _SQRT_PI) * np.exp(x * x))
    defderiv(sc.erfinv, lambda ans, x, **kw: (_SQRT_PI / 2.0) * np.exp(ans * ans))
    defderiv(sc.erfcinv, lambda ans, x, **kw: (-_SQRT_PI / 2.0) * np.exp(ans * ans))
    defderiv(sc.wofz, lambda ans, z, **kw: -2.0 * z * ans + 2j / _SQRT_PI)
    defderiv(sc.dawsn, _dawsn_d)
    defderiv(sc.ndtr, lambda ans, x, **kw: np.exp(-0.5 * x * x) / _SQRT_2PI)
    defderiv(sc.log_ndtr, _log_ndtr_d)
    defderiv(sc.ndtri, lambda ans, y, **kw: _SQRT_2PI * np.exp(0.5 * ans * ans))
    defderiv(sc.ndtri_exp, _ndtri_exp_d)
    if hasattr(sc, "softplus"):
        defimpl(sc.softplus, lambda x, **kw: np.logaddexp(0, x, **kw))

    # ----------------------------------------------------------------- gamma and beta families
    # (digamma: SciPy's loses digits beside the poles, 1% at -1 + 1e-14: digamma_real)
    defderiv(sc.gamma, lambda ans, x, **kw: ans * digamma_real(x))
    defderiv(sc.gammaln, lambda ans, x, **kw: digamma_real(x))
    defderiv(sc.loggamma, lambda ans, x, **kw: sc.digamma(x) if np.iscomplexobj(x) else digamma_real(x))
    defderiv(sc.rgamma, _rgamma_d)
    for psi in {sc.digamma, sc.psi}:
        defderiv(psi, _trigamma)
    defderiv(sc.polygamma, _parameter(sc.polygamma, "n"), lambda ans, n, x, **kw: sc.polygamma(n + 1, x))
    # (the digamma differences through psi_difference: formed as differences they cancel
    # where the two arguments are close -- betaln(300, 1e-10) -- or sit beside poles that
    # cancel -- poch(-2 + 1e-8, 2) -- and kept 4 to 8 digits)
    defderiv(sc.beta, lambda ans, a, b, **kw: -ans * psi_difference(a, b),
             lambda ans, a, b, **kw: -ans * psi_difference(b, a))
    defderiv(sc.betaln, lambda ans, a, b, **kw: -psi_difference(a, b),
             lambda ans, a, b, **kw: -psi_difference(b, a))
    defderiv(sc.binom, _binom_n, _binom_k)
    defderiv(sc.poch, _poch_z, lambda ans, z, m, **kw: ans * digamma_real(z + m))
    nondifferentiable(sc.gammasgn)

    # (xlogy, xlog1py: at the ends x = 0 and x = 1 with a = 1 or b = 1 the powers are
    # 0^0 = 1, where (a - 1) log x was 0 * -inf = NaN)
    def gammainc_x(ans, a, x, **kw):  # the integrand of the regularized incomplete gamma
        return np.exp(sc.xlogy(a - 1.0, x) - x - sc.gammaln(a))

    def betainc_x(ans, a, b, x, **kw):
        return np.exp(sc.xlogy(a - 1.0, x) + sc.xlog1py(b - 1.0, -x) - sc.betaln(a, b))

    # (the shapes: tail log-moments by quadrature, capstan.rules.log_moments, whose own
    # entries below make them differentiable to any order)
    defderiv(sc.gammainc, lambda ans, a, x, **kw: gammainc_a(a, x), gammainc_x)
    defderiv(sc.gammaincc, lambda ans, a, x, **kw: -gammainc_a(a, x), lambda ans, a, x, **kw: -gammainc_x(ans, a, x))
    defderiv(sc.gammaincinv, lambda ans, a, y, **kw: -gammainc_a(a, ans) / gammainc_x(y, a, ans),
             lambda ans, a, y, **kw: 1.0 / gammainc_x(y, a, ans))
    defderiv(sc.gammainccinv, lambda ans, a, y, **kw: -gammainc_a(a, ans) / gammainc_x(y, a, ans),
             lambda ans, a, y, **kw: -1.0 / gammainc_x(y, a, ans))
    defderiv(sc.betainc, lambda ans, a, b, x, **kw: betainc_a(a, b, x),
             lambda ans, a, b, x, **kw: betainc_b(a, b, x), betainc_x)
    defderiv(sc.betaincinv, lambda ans, a, b, y, **kw: -betainc_a(a, b, ans) / betainc_x(y, a, b, ans),
             lambda ans, a, b, y, **kw: -betainc_b(a, b, ans) / betainc_x(y, a, b, ans),
             lambda ans, a, b, y, **kw: 1.0 / betainc_x(y, a, b, ans))
    defderiv(gamma_tail_moment, None,
             lambda ans, k, a, x, upper: gamma_tail_moment(k + 1, a, x, upper) - (
                 k * sc.polygamma(1, a) * gamma_tail_moment(k - 1, a, x, upper) if k else 0.0),
             lambda ans, k, a, x, upper: np.where(upper, -1.0, 1.0) * (np.log(x) - sc.digamma(a)) ** k
             * gammainc_x(ans, a, x), None)

    def beta_moment_a(ans, j, k, a, b, x, upper):
        out = beta_tail_moment(j + 1, k, a, b, x, upper)
        if j:
            out = out + j * (sc.polygamma(1, a + b) - sc.polygamma(1, a)) * beta_tail_moment(j - 1, k, a, b, x, upper)
        if k:
            out = out + k * sc.polygamma(1, a + b) * beta_tail_moment(j, k - 1, a, b, x, upper)
        return out

    def beta_moment_b(ans, j, k, a, b, x, upper):
        out = beta_tail_moment(j, k + 1, a, b, x, upper)
        if j:
            out = out + j * sc.polygamma(1, a + b) * beta_tail_moment(j - 1, k, a, b, x, upper)
        if k:
            out = out + k * (sc.polygamma(1, a + b) - sc.polygamma(1, b)) * beta_tail_moment(j, k - 1, a, b, x, upper)
        return out

    def beta_moment_x(ans, j, k, a, b, x, upper):
        ab = sc.digamma(a + b)
        return (np.where(upper, -1.0, 1.0) * (np.log(x) - sc.digamma(a) + ab) ** j
                * (np.log1p(-x) - sc.digamma(b) + ab) ** k * betainc_x(ans, a, b, x))

    defderiv(beta_tail_moment, None, None, beta_moment_a, beta_moment_b, beta_moment_x, None)

    # ----------------------------------------------------------------- zeta
    defderiv(sc.zetac, _zetac_d)  # (zeta(x) - 1, whose slope is zeta's)
    # (in x: the log-moments of its integral representation, capstan.rules.log_moments)
    defderiv(sc.zeta, lambda ans, x, q=None, out=None: zeta_moment(1, x, 1.0 if q is None else q),
             lambda ans, x, q, out=None: -x * sc.zeta(x + 1.0, q))

    def zeta_moment_q(ans, k, s, q):
        out = 0.0
        for i in range(k + 1):
            out = out + math.comb(k, i) * s ** (i - k) * zeta_moment(i, s + 1.0, q)
        return -s * out

    defderiv(zeta_moment, None, lambda ans, k, s, q: zeta_moment(k + 1, s, q) - (
        k * sc.polygamma(1, s) * zeta_moment(k - 1, s, q) if k else 0.0), zeta_moment_q)

    # ----------------------------------------------------------------- Bessel functions (in x)
    defderiv(sc.j0, lambda ans, x, **kw: -sc.j1(x))
    defderiv(sc.j1, lambda ans, x, **kw: 0.5 * (sc.j0(x) - sc.jv(2, x)))
    defderiv(sc.y0, lambda ans, x, **kw: -sc.y1(x))
    defderiv(sc.y1, lambda ans, x, **kw: 0.5 * (sc.y0(x) - sc.yv(2, x)))
    defderiv(sc.i0, lambda ans, x, **kw: sc.i1(x))
    # NumPy's own i0 (and np.kaiser through it) evaluates a series in abs(x): differentiated
    # through, its second derivative at 0 was abs's (0), not 1/2
    defderiv(np.i0, lambda ans, x: sc.i1(x))
    defderiv(sc.i1, lambda ans, x, **kw: 0.5 * (sc.i0(x) + sc.iv(2, x)))
    defderiv(sc.k0, lambda ans, x, **kw: -sc.k1(x))
    defderiv(sc.k1, lambda ans, x, **kw: -0.5 * (sc.k0(x) + sc.kv(2, x)))
    defderiv(sc.i0e, lambda ans, x, **kw: _scaled_bessel_slope(0, x, "i", sc.i1e(x) - np.sign(x) * ans))
    defderiv(sc.i1e, lambda ans, x, **kw: _scaled_bessel_slope(
        1, x, "i", 0.5 * (sc.i0e(x) + sc.ive(2, x)) - np.sign(x) * ans))
    defkink(sc.i0e, at_zero)  # (exp(-|x|) I(x): a kink at 0, see kink_rules)
    defkink(sc.i1e, at_zero)
    defkink(sc.ive, lambda i, ans, v, x, **kw: np.equal(x, 0) if i == 1 else False)
    defderiv(sc.k0e, lambda ans, x, **kw: _scaled_bessel_slope(0, x, "k", ans - sc.k1e(x)))
    defderiv(sc.k1e, lambda ans, x, **kw: _scaled_bessel_slope(1, x, "k", ans - 0.5 * (sc.k0e(x) + sc.kve(2, x))))
    for f, rule in ((sc.jv, lambda ans, v, z, **kw: 0.5 * (sc.jv(v - 1, z) - sc.jv(v + 1, z))),
                    (sc.yv, lambda ans, v, z, **kw: 0.5 * (sc.yv(v - 1, z) - sc.yv(v + 1, z))),
                    (sc.iv, lambda ans, v, z, **kw: 0.5 * (sc.iv(v - 1, z) + sc.iv(v + 1, z))),
                    (sc.kv, lambda ans, v, z, **kw: -0.5 * (sc.kv(v - 1, z) + sc.kv(v + 1, z))),
                    (sc.kve, lambda ans, v, z, **kw: _scaled_bessel_slope(
                        v, z, "k", ans - 0.5 * (sc.kve(v - 1, z) + sc.kve(v + 1, z)))),
                    (sc.hankel1, lambda ans, v, z, **kw: 0.5 * (sc.hankel1(v - 1, z) - sc.hankel1(v + 1, z))),
                    (sc.hankel2, lambda ans, v, z, **kw: 0.5 * (sc.hankel2(v - 1, z) - sc.hankel2(v + 1, z))),
                    (sc.ive, _real_only(sc.ive, lambda ans, v, x, **kw: _scaled_bessel_slope(
                        v, x, "i", 0.5 * (sc.ive(v - 1, x) + sc.ive(v + 1, x)) - np.sign(x) * ans))),
                    (sc.jve, _real_only(sc.jve, lambda ans, v, x, **kw:
                                        0.5 * (sc.jve(v - 1, x) - sc.jve(v + 1, x)))),
                    (sc.yve, _real_only(sc.yve, lambda ans, v, x, **kw:
                                        0.5 * (sc.yve(v - 1, x) - sc.yve(v + 1, x))))):
        defderiv(f, _order(f), rule)
    # i0e/i1e/k0e/k1e are real functions; ive/jve/yve real-only (see _real_only)
    # (integer orders n: yn and kn)
    defderiv(sc.yn, _order(sc.yn, "n"), lambda ans, n, x, **kw:
             0.5 * (sc.yn(np.trunc(n) - 1, x) - sc.yn(np.trunc(n) + 1, x)))  # (yn truncates n: so here)
    # (kn and expn truncate a float order, with a warning: their rules too)
    defderiv(sc.kn, _order(sc.kn, "n"), lambda ans, n, x, **kw:
             -0.5 * (sc.kn(np.trunc(n) - 1, x) + sc.kn(np.trunc(n) + 1, x)))

    # ----------------------------------------------------------------- Poisson distribution (in the mean)
    def poisson_pmf(k, m):
        """The Poisson probability of ``floor(k)`` at mean ``m`` (NaN where SciPy's pdtr is:
        ``k < 0``, ``m < 0``)."""
        j = np.maximum(np.floor(k), 0.0)
        domain = np.where((k >= 0) & (m >= 0), 1.0, np.nan)  # (a factor: its derivatives are NaN too)
        return np.exp(sc.xlogy(j, m) - m - sc.gammaln(j + 1.0)) * domain

    steps = "a step function of the count: floor(k)"
    defderiv(sc.pdtr, refused(sc.pdtr, "k", steps), lambda ans, k, m, **kw: -poisson_pmf(k, m))
    defderiv(sc.pdtrc, refused(sc.pdtrc, "k", steps), lambda ans, k, m, **kw: poisson_pmf(k, m))
    # (its inverse in m: the inverse-function rule; pdtrik, the inverse in a continuous k of
    # gammaincc(k + 1, m) = p, with the shape's tail log-moment)
    defderiv(sc.pdtri, refused(sc.pdtri, "k", steps), lambda ans, k, y, **kw: -1.0 / poisson_pmf(k, ans))
    def pdtrik_partial(name, partial):  # (where k = 0, the end of SciPy's search: no k reaches p)
        def checked(ans, p, m, **kw):
            if np.any(ans == 0):
                return refused(sc.pdtrik, name, "where SciPy's answer is 0, the end of its search: "
                                                "no k reaches the probability asked for")(ans)
            return partial(ans, p, m)
        return checked

    defderiv(sc.pdtrik, pdtrik_partial("p", lambda ans, p, m: -1.0 / gammainc_a(ans + 1.0, m)),
             pdtrik_partial("m", lambda ans, p, m:
                            -gammainc_x(None, ans + 1.0, m) / gammainc_a(ans + 1.0, m)))

    def spherical(f, sign):
        """``f(n, z, derivative=False)``: the first derivative is SciPy's own
        ``derivative=True``; the second follows from the Bessel equation
        ``z^2 f'' + 2 z f' + (sign z^2 - n(n+1)) f = 0`` (``sign`` -1 for the modified)."""
        def d(ans, n, z, derivative=False, **kw):
            if not derivative:
                return f(n, z, derivative=True)
            value = f(n, z)
            return -2.0 * ans / z - (sign - n * (n + 1.0) / (z * z)) * value
        defderiv(f, _order(f, "n"), d)

    spherical(sc.spherical_jn, 1.0)
    spherical(sc.spherical_yn, 1.0)
    spherical(sc.spherical_in, -1.0)
    spherical(sc.spherical_kn, -1.0)

    # ----------------------------------------------------------------- functions with several results
    ai, aip, bi, bip = _split("airy", sc.airy, range(4))
    defderiv(ai, lambda ans, z: aip(z))
    defderiv(aip, lambda ans, z: z * ai(z))
    defderiv(bi, lambda ans, z: bip(z))
    defderiv(bip, lambda ans, z: z * bi(z))
    fs, fc = _split("fresnel", sc.fresnel, range(2))
    defderiv(fs, lambda ans, x: np.sin(0.5 * np.pi * x * x))
    defderiv(fc, lambda ans, x: np.cos(0.5 * np.pi * x * x))
    si, ci = _split("sici", sc.sici, range(2))
    defderiv(si, lambda ans, x: np.sinc(x / np.pi))
    defderiv(ci, lambda ans, x: np.cos(x) / x)
    shi, chi = _split("shichi", sc.shichi, range(2))
    defderiv(shi, lambda ans, x: np.where(x == 0, 1.0, np.sinh(x) / _nz(x)))
    defderiv(chi, lambda ans, x: np.cosh(x) / x)

    # ----------------------------------------------------------------- exponential integrals, elliptic...
    defderiv(sc.exp1, lambda ans, x, **kw: -np.exp(-x) / x)
    defderiv(sc.expi, lambda ans, x, **kw: np.exp(x) / x)
    # (E_n' = -E_(n-1); E_0 = exp(-x)/x has E_0' = -E_0 (1 + 1/x), where expn(-1, x) is NaN)
    defderiv(sc.expn, _parameter(sc.expn, "n"), lambda ans, n, x, **kw: np.where(
        np.trunc(n) == 0, -ans * (1.0 + 1.0 / x), -sc.expn(np.maximum(np.trunc(n) - 1, 0), x)))
    defderiv(sc.ellipk, lambda ans, m, **kw: np.where(
        np.abs(m) < 1e-3, _series(m, _ELLIPK_SLOPE), (sc.ellipe(m) - (1.0 - m) * ans) / (2.0 * _nz(m) * (1.0 - m))))
    defderiv(sc.ellipe, lambda ans, m, **kw: np.where(
        np.abs(m) < 1e-3, _series(m, _ELLIPE_SLOPE), (ans - sc.ellipk(m)) / (2.0 * _nz(m))))
    defderiv(sc.spence, lambda ans, z, **kw: np.where(  # (log z / (1 - z) at z = 1: its series in z - 1)
        z == 1, _series(z - 1.0, _SPENCE_SLOPE), np.log(z) / _nz(1.0 - z)))
    defderiv(sc.wrightomega, lambda ans, z, **kw: ans / (1.0 + ans))
    defderiv(sc.lambertw, lambda ans, z, k=0, tol=1e-8: 1.0 / (np.exp(ans) * (1.0 + ans)),
             _parameter(sc.lambertw, "k"))
    defderiv(sc.hyp2f1, _parameter(sc.hyp2f1, "a"), _parameter(sc.hyp2f1, "b"), _parameter(sc.hyp2f1, "c"),
             lambda ans, a, b, c, z, **kw: a * b / c * sc.hyp2f1(a + 1, b + 1, c + 1, z))
    defderiv(sc.hyp1f1, _parameter(sc.hyp1f1, "a"), _parameter(sc.hyp1f1, "b"),
             lambda ans, a, b, x, **kw: a / b * sc.hyp1f1(a + 1, b + 1, x))
    defderiv(sc.hyp0f1, _parameter(sc.hyp0f1, "v"), lambda ans, v, z, **kw: sc.hyp0f1(v + 1, z) / v)
    defderiv(sc.hyperu, _parameter(sc.hyperu, "a"), _parameter(sc.hyperu, "b"),
             lambda ans, a, b, x, **kw: -a * sc.hyperu(a + 1, b + 1, x))
    # incomplete elliptic integrals F(phi|m), E(phi|m): in m, their closed forms are 0/0 at
    # m = 0, where their series (in the integrals of sin^2n) takes over
    defderiv(sc.ellipkinc, lambda ans, phi, m, **kw: 1.0 / np.sqrt(1.0 - m * np.sin(phi) ** 2),
             _ellipkinc_m)
    defderiv(sc.ellipeinc, lambda ans, phi, m, **kw: np.sqrt(1.0 - m * np.sin(phi) ** 2),
             lambda ans, phi, m, **kw: np.where(
                 np.abs(m) < 1e-3, _incomplete_series(phi, m, _ELLIPE_TERMS),
                 (ans - sc.ellipkinc(phi, m)) / (2.0 * _nz(m))))
    defderiv(sc.agm, lambda ans, a, b, **kw: _agm_slope(a, b), lambda ans, a, b, **kw: _agm_slope(b, a))

    # ----------------------------------------------------------------- Struve, Owen's T, Voigt, Legendre
    def struve_term(v, x):  # (x/2)^v / (sqrt(pi) Gamma(v + 3/2)), DLMF 11.4.27
        # (signed: Gamma(v + 3/2) < 0 for some v < -3/2, and at x < 0 (integer v) (x/2)^v
        # is (-1)^v |x/2|^v, where a logarithm of x/2 gave NaN)
        sign = np.sign(sc.rgamma(v + 1.5)) * np.where((x < 0) & (np.round(v) % 2 == 1), -1.0, 1.0)
        return sign * np.exp(sc.xlogy(v, 0.5 * np.abs(x)) - sc.gammaln(v + 1.5)) / _SQRT_PI

    def struve_origin_slope(v, x, alternate):
        """The slope of H_v (``alternate``) or L_v at x = 0 for an integer v >= 0, from
        their power series (DLMF 11.2.1, 11.2.2), so that its own derivatives there are
        right too: the recurrence reaches orders below 0, infinite at x = 0 (NaN)."""
        at = np.where(x == 0, x, 0.0)  # (the series is used at x = 0 only)
        out = 0.0 * at
        for k in range(8):
            term = (k + 0.5 * (v + 1.0)) * np.power(0.5 * at, 2 * k + v) * sc.rgamma(k + 1.5) * sc.rgamma(k + v + 1.5)
            out = out + (-term if alternate and k % 2 else term)
        return out

    def struve_slope(f, alternate):
        def slope(ans, v, x, **kw):
            origin = (x == 0) & (v == np.round(v)) & (v >= 0)
            general = 0.5 * (f(v - 1.0, x) + (-1.0 if alternate else 1.0) * f(v + 1.0, x) + struve_term(v, x))
            return np.where(origin, struve_origin_slope(np.where(origin, v, 0.0), x, alternate), general)
        return slope

    defderiv(sc.struve, _order(sc.struve), struve_slope(sc.struve, True))
    defderiv(sc.modstruve, _order(sc.modstruve), struve_slope(sc.modstruve, False))
    # T(h, a) = (1/2pi) int_0^a exp(-h^2 (1 + t^2)/2) / (1 + t^2) dt
    defderiv(sc.owens_t, lambda ans, h, a, **kw: -np.exp(-0.5 * h * h) * sc.erf(a * h / _SQRT2) / (2.0 * _SQRT_2PI),
             lambda ans, h, a, **kw: np.exp(-0.5 * h * h * (1.0 + a * a)) / (2.0 * np.pi * (1.0 + a * a)))
    defderiv(sc.voigt_profile, lambda ans, x, sigma, gamma, **kw: _voigt(ans, x, sigma, gamma, 0),
             lambda ans, x, sigma, gamma, **kw: _voigt(ans, x, sigma, gamma, 1),
             lambda ans, x, sigma, gamma, **kw: _voigt(ans, x, sigma, gamma, 2))
    # (1 - x^2) dP/dx = (m + v) P_(v-1) - v x P_v (Ferrers functions, DLMF 14.10.5)
    defderiv(sc.lpmv, _order(sc.lpmv, "m"), _parameter(sc.lpmv, "v"), lambda ans, m, v, x, **kw:
             ((m + v) * sc.lpmv(m, v - 1.0, x) - v * x * ans) / (1.0 - x * x))

    # ----------------------------------------------------------------- orthogonal polynomials (in x)
    def lower(n):  # the degree below (for degree 0, whose derivative is 0 anyway: 0)
        return np.where(n == 0, 0, n - 1)

    # (the recurrences below hold for real degrees, as SciPy takes them through the
    # hypergeometric functions, except at negative integers n, where their binomial
    # factors vanish (NaN or 0 before): there the hypergeometric functions' derivatives
    # (DLMF 15.5.1 and 13.3.15), or a refusal)
    def degree(f, partial, general=None):
        def checked(ans, n, *args, **kw):
            if not np.any((n < 0) & (n == np.floor(n))):
                return partial(ans, n, *args, **kw)
            if general is None:
                return refused(f, "x", "at a negative integer degree n: its rule is a recurrence "
                               "in n")(ans)
            return general(n, *args)
        checked.__name__ = "partial_in_x_of_%s" % f.__name__
        return checked

    defderiv(sc.eval_jacobi, _parameter(sc.eval_jacobi, "n"), _parameter(sc.eval_jacobi, "alpha"),
             _parameter(sc.eval_jacobi, "beta"), degree(sc.eval_jacobi, lambda ans, n, a, b, x, **kw:
             np.where(n == 0, 0.0, 0.5 * (n + a + b + 1) * sc.eval_jacobi(lower(n), a + 1, b + 1, x))))
    defderiv(sc.eval_gegenbauer, _parameter(sc.eval_gegenbauer, "n"),
             _parameter(sc.eval_gegenbauer, "alpha"), degree(sc.eval_gegenbauer,
             lambda ans, n, a, x, **kw: np.where(n == 0, 0.0, 2 * a * sc.eval_gegenbauer(lower(n), a + 1, x))))
    # P_v(x) = F(-v, v+1; 1; (1-x)/2), T_v = F(-v, v; 1/2; .), U_v = (v+1) F(-v, v+2; 3/2; .)
    def legendre_d(n, x):
        return np.where(n == 0, 0.0, 0.5 * (n + 1) * sc.eval_jacobi(lower(n), 1.0, 1.0, x))

    def legendre_general(v, x):
        return 0.5 * v * (v + 1) * sc.hyp2f1(1 - v, v + 2, 2.0, 0.5 * (1 - x))

    def chebyt_d(n, x):
        return np.where(n == 0, 0.0, n * sc.eval_gegenbauer(lower(n), 1.0, x))  # n U_{n-1}

    def chebyt_general(v, x):
        return v * v * sc.hyp2f1(1 - v, 1 + v, 1.5, 0.5 * (1 - x))

    def chebyu_d(n, x):
        return np.where(n == 0, 0.0, 2 * sc.eval_gegenbauer(lower(n), 2.0, x))

    def chebyu_general(v, x):
        return v * (v + 1) * (v + 2) / 3.0 * sc.hyp2f1(1 - v, v + 3, 2.5, 0.5 * (1 - x))

    # (and the rescaled ones, f(n, x) = c g(n, s x + t): C_n(x) = 2 T_n(x/2), S_n(x) = U_n(x/2),
    # the shifted T_n(2x - 1), U_n(2x - 1), P_n(2x - 1))
    for f, d, general, c, s, t in (
            (sc.eval_legendre, legendre_d, legendre_general, 1.0, 1.0, 0.0),
            (sc.eval_chebyt, chebyt_d, chebyt_general, 1.0, 1.0, 0.0),
            (sc.eval_chebyu, chebyu_d, chebyu_general, 1.0, 1.0, 0.0),
            (sc.eval_chebyc, chebyt_d, chebyt_general, 2.0, 0.5, 0.0),
            (sc.eval_chebys, chebyu_d, chebyu_general, 1.0, 0.5, 0.0),
            (sc.eval_sh_chebyt, chebyt_d, chebyt_general, 1.0, 2.0, -1.0),
            (sc.eval_sh_chebyu, chebyu_d, chebyu_general, 1.0, 2.0, -1.0),
            (sc.eval_sh_legendre, legendre_d, legendre_general, 1.0, 2.0, -1.0)):
        defderiv(f, _parameter(f, "n"), degree(
            f, lambda ans, n, x, _d=d, _cs=c * s, _s=s, _t=t, **kw: _cs * _d(n, _s * x + _t),
            lambda v, x, _g=general, _cs=c * s, _s=s, _t=t: _cs * _g(v, _s * x + _t)))
    # G_n^(p,q)(x) = P_n^(p-q, q-1)(2x - 1) / binom(2n + p - 1, n)
    defderiv(sc.eval_sh_jacobi, _parameter(sc.eval_sh_jacobi, "n"), _parameter(sc.eval_sh_jacobi, "p"),
             _parameter(sc.eval_sh_jacobi, "q"),
             degree(sc.eval_sh_jacobi, lambda ans, n, p, q, x, **kw: np.where(
                 n == 0, 0.0, (n + p) * sc.eval_jacobi(lower(n), p - q + 1.0, q, 2.0 * x - 1.0)
                 / sc.binom(2.0 * n + p - 1.0, n))))
    defderiv(sc.eval_hermite, _parameter(sc.eval_hermite, "n"), lambda ans, n, x, **kw:
             2 * n * sc.eval_hermite(lower(n), x))
    defderiv(sc.eval_hermitenorm, _parameter(sc.eval_hermitenorm, "n"), lambda ans, n, x, **kw:
             n * sc.eval_hermitenorm(lower(n), x))
    # L_v(x) = M(-v, 1, x)
    defderiv(sc.eval_laguerre, _parameter(sc.eval_laguerre, "n"), degree(sc.eval_laguerre, lambda ans, n, x, **kw:
             np.where(n == 0, 0.0, -sc.eval_genlaguerre(lower(n), 1.0, x)),
             lambda v, x: -v * sc.hyp1f1(1 - v, 2.0, x)))
    defderiv(sc.eval_genlaguerre, _parameter(sc.eval_genlaguerre, "n"),
             _parameter(sc.eval_genlaguerre, "alpha"), degree(sc.eval_genlaguerre,
             lambda ans, n, a, x, **kw: np.where(n == 0, 0.0, -sc.eval_genlaguerre(lower(n), a + 1, x))))

    # ----------------------------------------------------------------- elementary functions, SciPy's versions
    defderiv(sc.expm1, lambda ans, x, **kw: ans + 1.0)
    defderiv(sc.log1p, lambda ans, x, **kw: 1.0 / (1.0 + x))
    defderiv(sc.cosm1, lambda ans, x, **kw: -np.sin(x))
    defderiv(sc.exprel, _exprel_d)
    defderiv(sc.exp2, lambda ans, x, **kw: ans * _LN2)
    defderiv(sc.exp10, lambda ans, x, **kw: ans * _LN10)
    defderiv(sc.cbrt, lambda ans, x, **kw: 1.0 / (3.0 * ans * ans))
    defderiv(sc.sindg, lambda ans, x, **kw: _DEG * sc.cosdg(x))
    defderiv(sc.cosdg, lambda ans, x, **kw: -_DEG * sc.sindg(x))
    defderiv(sc.tandg, lambda ans, x, **kw: _DEG * (1.0 + ans * ans))
    defderiv(sc.cotdg, lambda ans, x, **kw: -_DEG * (1.0 + ans * ans))
    defderiv(sc.powm1, lambda ans, x, y, **kw: y * np.power(x, y - 1.0),
             lambda ans, x, y, **kw: (ans + 1.0) * np.log(x))
    nondifferentiable(sc.round)

    # ----------------------------------------------------------------- x log y, entropies, Huber losses
    defderiv(sc.xlogy, lambda ans, x, y, **kw: np.log(y),
             lambda ans, x, y, **kw: x / np.where((x == 0) & (y == 0), 1.0, y))
    defderiv(sc.xlog1py, lambda ans, x, y, **kw: np.log1p(y),
             lambda ans, x, y, **kw: x / np.where((x == 0) & (y == -1), 1.0, 1.0 + y))
    defderiv(sc.entr, lambda ans, x, **kw: -np.log(x) - 1.0)
    defderiv(sc.rel_entr, lambda ans, x, y, **kw: np.log(x / y) + 1.0, lambda ans, x, y, **kw: -x / y)
    defderiv(sc.kl_div, lambda ans, x, y, **kw: np.log(x / y), lambda ans, x, y, **kw: 1.0 - x / y)
    defderiv(sc.huber, lambda ans, d, r, **kw: np.where(np.abs(r) <= d, 0.0, np.abs(r) - d),
             lambda ans, d, r, **kw: np.where(np.abs(r) <= d, r, d * np.sign(r)))
    # (the slope r, d sign(r) turns at |r| = d: there the second derivative jumps)
    defkink(sc.huber, lambda i, ans, d, r, **kw: np.equal(np.abs(r), d))
    defderiv(sc.pseudo_huber,
             lambda ans, d, r, **kw: 2.0 * ans / d - r * r / (d * np.sqrt(1.0 + (r / d) ** 2)),
             lambda ans, d, r, **kw: r / np.sqrt(1.0 + (r / d) ** 2))

    # ----------------------------------------------------------------- Box-Cox
    defderiv(sc.boxcox, lambda ans, x, lm, **kw: np.power(x, lm - 1.0), _boxcox_lambda)
    defderiv(sc.boxcox1p, lambda ans, x, lm, **kw: np.power(1.0 + x, lm - 1.0),
             lambda ans, x, lm, **kw: _boxcox_lambda(ans, 1.0 + x, lm))
    defderiv(sc.inv_boxcox, lambda ans, y, lm, **kw: np.power(ans, 1.0 - lm), _inv_boxcox_lambda)
    defderiv(sc.inv_boxcox1p, lambda ans, y, lm, **kw: np.exp((1.0 - lm) * np.log1p(ans)),  # (1 + ans: rounded)
             lambda ans, y, lm, **kw: _inv_boxcox_lambda(1.0 + ans, y, lm))

    # ----------------------------------------------------------------- SciPy's Python functions
    defimpl(sc.logsumexp, logsumexp)
    defimpl(sc.softmax, softmax)
    defimpl(sc.log_softmax, log_softmax)
    defimpl(sc.factorial, factorial)
    defimpl(sc.comb, comb)
    defimpl(sc.perm, perm)
    _register_more(ai, bi)


def gammainc_a(a, x):
    """``∂/∂a gammainc(a, x)``: the first tail log-moment of the smaller tail (lower below
    ``x = a``, upper above, where ``∂/∂a gammaincc = -∂/∂a gammainc`` is the small one)."""
    upper = x > a  # (a plain choice: both tails give the same number, the small one accurately)
    return np.where(upper, -1.0, 1.0) * gamma_tail_moment(1, a, x, upper)


def _beta_upper(a, b, x):
    return x * (a + b) > a  # (above the mean: the upper tail is the smaller)


def betainc_a(a, b, x):
    """``∂/∂a betainc(a, b, x)`` (see :func:`gammainc_a`)."""
    upper = _beta_upper(a, b, x)
    return np.where(upper, -1.0, 1.0) * beta_tail_moment(1, 0, a, b, x, upper)


def betainc_b(a, b, x):
    """``∂/∂b betainc(a, b, x)``."""
    upper = _beta_upper(a, b, x)
    return np.where(upper, -1.0, 1.0) * beta_tail_moment(0, 1, a, b, x, upper)


def _voigt(ans, x, sigma, gamma, which):
    """A partial of ``voigt_profile(x, sigma, gamma) = Re w(z) / (sigma sqrt(2 pi))``,
    ``z = (x + i gamma) / (sigma sqrt 2)``, through ``w' = -2 z w + 2i/sqrt(pi)``
    (``which``: 0 for x, 1 for sigma, 2 for gamma); ``sigma = 0`` (the Lorentzian limit) is
    refused."""
    if np.any(sigma == 0):
        return refused(sc.voigt_profile, "x, sigma, gamma", "at sigma == 0, the Lorentzian limit, "
                       "the formula through wofz does not hold")(ans)
    s2 = sigma * _SQRT2
    z = (x + 1j * gamma) / s2
    dw = -2.0 * z * sc.wofz(z) + 2j / _SQRT_PI
    norm = 1.0 / (sigma * _SQRT_2PI)
    if which == 0:
        return np.real(dw) * norm / s2
    if which == 2:
        return -np.imag(dw) * norm / s2
    return -(np.real(dw * z) * norm + ans) / sigma


def _dawsn_d(ans, x, **kw):
    """``d dawsn / dx = 1 - 2 x dawsn(x)``, which cancels for large |x| (0 from 1e10 on):
    there its asymptotic series ``-(1 + 3/(2x^2) + 15/(4x^4) + 105/(8x^6)) / (2x^2)``."""
    big = np.abs(np.real(x)) > 1e3
    w = 1.0 / np.square(np.where(big, x, 1e3))
    return np.where(big, -0.5 * w * (1.0 + w * (1.5 + w * (3.75 + w * 13.125))), 1.0 - 2.0 * x * ans)


def _log_ndtr_d(ans, x, **kw):
    """``d log ndtr / dx = pdf / cdf``: for x < 0 as ``sqrt(2/pi) / erfcx(-x/sqrt 2)``,
    not ``exp(-x^2/2 - log_ndtr(x))``, whose exponent cancels (inf at x = -1e10)."""
    neg = x < 0
    return np.where(neg, np.sqrt(2.0 / np.pi) / sc.erfcx(-np.where(neg, x, 0.0) / _SQRT2),
                    np.exp(-0.5 * x * x - ans) / _SQRT_2PI)


def _ndtri_exp_d(ans, y, **kw):
    """``d ndtri_exp / dy = cdf / pdf`` at ``ans``: for ans < 0 as
    ``sqrt(pi/2) erfcx(-ans/sqrt 2)``, not ``exp(y + ans^2/2)``, whose exponent cancels."""
    neg = ans < 0
    return np.where(neg, np.sqrt(np.pi / 2.0) * sc.erfcx(-np.where(neg, ans, 0.0) / _SQRT2),
                    _SQRT_2PI * np.exp(y + 0.5 * ans * ans))


def _sinpi(x):
    """``sin(pi x)`` with the argument reduced exactly (0 at the integers, accurate beside them)."""
    r = np.rint(x)
    return np.where(r % 2 == 0, 1.0, -1.0) * np.sin(np.pi * (x - r))


def digamma_real(x):
    """``digamma(x)`` for real ``x``; left of 0 by the reflection ``digamma(1 - x) - pi cot(pi x)``
    with the cotangent's argument reduced exactly: SciPy's digamma keeps only 2 digits at
    ``-1 + 1e-14`` (and so the slopes of gamma, gammaln, rgamma there)."""
    left = (x < 0) & (x != np.rint(x))
    if not np.any(left):
        return sc.digamma(x)
    f = np.where(left, x - np.rint(x), 0.5)
    reflected = sc.digamma(np.where(left, 1.0 - x, 1.0)) - np.pi * np.cos(np.pi * f) / np.sin(np.pi * f)
    return np.where(left, reflected, sc.digamma(x))


# B_2k / 2k for the asymptotic series digamma(z) ~ log z - 1/(2z) - sum B_2k / (2k z^2k)
_PSI_SERIES = (1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0, -691.0 / 32760.0, 1.0 / 12.0)


def _psi_shifted_difference(y, d):
    """``digamma(y + d) - digamma(y)`` for ``y > 0`` and ``y + d > 0``: the recurrence up to
    20, then the asymptotic series, each term's difference formed without cancellation."""
    x = y + d
    shift = np.maximum(np.ceil(20.0 - np.minimum(x, y)), 0.0)
    total = 0.0 * d
    for j in range(20):  # digamma(z) = digamma(z + 1) - 1/z: -1/(x+j) + 1/(y+j) = d / ((x+j)(y+j))
        take = j < shift
        total = total + np.where(take, d / np.where(take, x + j, 1.0) / np.where(take, y + j, 1.0), 0.0)
    big_x, big_y = x + shift, y + shift
    total = total + np.log1p(d / big_y) + d / big_x / (2.0 * big_y)
    u, w = 1.0 / (big_x * big_x), 1.0 / (big_y * big_y)
    du = -d * (big_x + big_y) * u * w  # u - w
    power_sum = 1.0 + 0.0 * u  # sum_i u^i w^(k-1-i), k = 1, 2, ...
    for k, c in enumerate(_PSI_SERIES, 1):
        total = total - c * du * power_sum
        power_sum = power_sum * w + u ** k
    return total


def psi_difference(a, d):
    """``digamma(a + d) - digamma(a)``, accurate where the plain difference cancels: both
    arguments positive (recurrence and series), both negative (the reflection formula, whose
    cotangents are formed from ``sin(pi d)``: 0 for integral ``d``, where the poles cancel
    exactly), an integral ``d`` of at most 32 across 0 (the sum of ``1/(a + j)``)."""
    x = a + d
    plain = digamma_real(x) - digamma_real(a)
    pos = (a > 0) & (x > 0)
    neg = (a < 0) & (x < 0) & (a != np.rint(a)) & (x != np.rint(x))
    one = 1.0 + 0.0 * a
    out = np.where(pos, _psi_shifted_difference(np.where(pos, a, one), np.where(pos, d, 0.0)), plain)
    if np.any(neg):
        ya, yd, yx = np.where(neg, 1.0 - x, one), np.where(neg, d, 0.0), np.where(neg, x, 0.5)
        reflected = (-_psi_shifted_difference(ya, yd)
                     + np.pi * _sinpi(yd) / (_sinpi(yx) * _sinpi(np.where(neg, a, 0.5))))
        out = np.where(neg, reflected, out)
    across = np.logical_not(pos) & np.logical_not(neg) & (d == np.rint(d)) & (np.abs(d) <= 32) & (d != 0)
    if varies(d):  # (the sum holds at integral d only, without its slope in d: the plain
        across = across & (a == np.rint(a)) & (a <= 0)  # difference, but at a pole of digamma(a))
    if np.any(across):  # d > 0: sum_{j<d} 1/(a + j); d < 0: -sum_{j<-d} 1/(x + j)
        base = np.where(d > 0, a, x)
        n = np.abs(d)
        total = 0.0 * a
        for j in range(32):
            take = across & (j < n)
            total = total + np.where(take, 1.0 / np.where(take, base + j, 1.0), 0.0)
        out = np.where(across, np.where(d > 0, total, -total), out)
    return out


def _finite_or(main, alt):
    """``main`` where it is finite, else ``alt`` (a form without its poles)."""
    return np.where(np.isfinite(main), main, alt)


def _series(u, coefficients):
    """``sum_k coefficients[k] u^k`` (Horner): a slope's Taylor series about a point where
    its closed form is 0/0, so that its own derivatives there are right too."""
    out = 0.0 * u + coefficients[-1]
    for c in coefficients[-2::-1]:
        out = out * u + c
    return out


#: K'(m), E'(m) about m = 0 (K = pi/2 sum c_n^2 m^n, E = pi/2 sum c_n^2 m^n / (1 - 2n),
#: c_n = (2n)! / (4^n n!^2)); log(z) / (1 - z) about z = 1 (in u = z - 1)
_C2 = [1.0, 0.25, 9 / 64, 25 / 256, 1225 / 16384, 3969 / 65536, 53361 / 1048576]
_ELLIPK_SLOPE = [np.pi / 2 * n * _C2[n] for n in range(1, 7)]
_ELLIPE_SLOPE = [np.pi / 2 * n * _C2[n] / (1 - 2 * n) for n in range(1, 7)]
_SPENCE_SLOPE = [-((-1.0) ** k) / (k + 1) for k in range(8)]


#: the series of dF/dm and dE/dm about m = 0 (F = sum_n c_n m^n S_n, E = sum_n c_n m^n
#: S_n / (1 - 2n), c_n = (2n)! / (4^n n!^2), S_n the integral of sin^2n from 0 to phi)
_ELLIPF_TERMS = [n * math.comb(2 * n, n) / 4 ** n for n in range(1, 7)]
_ELLIPE_TERMS = [n * math.comb(2 * n, n) / 4 ** n / (1 - 2 * n) for n in range(1, 7)]


def _incomplete_series(phi, m, terms):
    """``sum_n terms[n-1] m^(n-1) S_n(phi)`` with ``S_n = int_0^phi sin^2n``, by the
    recurrence ``S_n = ((2n - 1) S_(n-1) - sin^(2n-1) cos) / 2n`` from ``S_0 = phi``
    (differentiable in ``phi`` and ``m`` in turn)."""
    s, c = np.sin(phi), np.cos(phi)
    integral, power, out = phi, s, 0.0
    for n in range(1, len(terms) + 1):
        integral = ((2 * n - 1) * integral - power * c) / (2 * n)
        power = power * s * s
        out = out + terms[n - 1] * m ** (n - 1) * integral
    return out


def _ellipkinc_m(ans, phi, m, **kw):
    """``dF(phi|m)/dm = E / (2m(1 - m)) - F / 2m - sin 2phi / (4 (1 - m) sqrt(1 - m sin^2 phi))``."""
    closed = (sc.ellipeinc(phi, m) / (1.0 - m) - ans) / (2.0 * _nz(m)) - np.sin(2.0 * phi) / (
        4.0 * (1.0 - m) * np.sqrt(1.0 - m * np.sin(phi) ** 2))
    return np.where(np.abs(m) < 1e-3, _incomplete_series(phi, m, _ELLIPF_TERMS), closed)


def _agm_slope(a, b, steps=40):
    """``d agm(a, b) / da``: the arithmetic-geometric iteration carried with its derivative
    (quadratic convergence: 40 steps reach the limit from any pair of floats of one sign;
    later steps leave it as it is).  A pair of negative numbers has the slope of their
    magnitudes (``agm(-a, -b) = -agm(a, b)``); square roots of each, not of the product,
    which overflows."""
    a, b = np.abs(a), np.abs(b)
    da, db = 1.0 + 0.0 * a, 0.0 * b
    for _ in range(steps):
        ra, rb = np.sqrt(a), np.sqrt(b)
        a, b, da, db = 0.5 * (a + b), ra * rb, 0.5 * (da + db), 0.5 * (rb / ra * da + ra / rb * db)
    return 0.5 * (da + db)


def _zetac_d(ans, x, **kw):
    if np.any(np.asarray(x) <= 1.0):
        return refused(sc.zetac, "x", "at x <= 1: the integral representation the rule integrates "
                                      "holds for x > 1 only")(ans)
    return zeta_moment(1, x, 1.0)


def _rgamma_slope(z):
    return _rgamma_d(sc.rgamma(z), z)


def _poch_z(ans, z, m, **kw):
    """``d poch(z, m) / dz = poch * (digamma(z + m) - digamma(z))``; where that is 0 * inf
    (a pole of gamma(z), where poch is 0) the slope of ``gamma(z + m) / gamma(z)`` written
    with ``1 / gamma``, finite there."""
    with np.errstate(all="ignore"):
        main = ans * psi_difference(z, m)
        if np.all(np.isfinite(main)):
            return main
        g = sc.gamma(z + m)
        return _finite_or(main, g * (digamma_real(z + m) * sc.rgamma(z) + _rgamma_slope(z)))


def _binom_n(ans, n, k, **kw):
    """``binom * (digamma(n + 1) - digamma(n - k + 1))``; where that is 0 * inf (a pole of
    gamma(n - k + 1), where binom is 0: ``binom(-1.5, 2.5)``) the slope written with
    ``1 / gamma``."""
    with np.errstate(all="ignore"):
        main = ans * psi_difference(n - k + 1.0, k)
        if np.all(np.isfinite(main)):
            return main
        g = sc.gamma(n + 1.0) * sc.rgamma(k + 1.0)
        return _finite_or(main, g * (digamma_real(n + 1.0) * sc.rgamma(n - k + 1.0) + _rgamma_slope(n - k + 1.0)))


def _binom_k(ans, n, k, **kw):
    """``binom * (digamma(n - k + 1) - digamma(k + 1))``, or as ``_binom_n`` at the poles."""
    with np.errstate(all="ignore"):
        main = ans * psi_difference(k + 1.0, n - 2.0 * k)
        if np.all(np.isfinite(main)):
            return main
        alt = sc.gamma(n + 1.0) * (_rgamma_slope(k + 1.0) * sc.rgamma(n - k + 1.0)
                                   - sc.rgamma(k + 1.0) * _rgamma_slope(n - k + 1.0))
        return _finite_or(main, alt)


def _rgamma_d(ans, x, **kw):
    """``d (1/gamma) / dx = -rgamma(x) digamma(x)``; at the zeros x = -n (n = 0, 1, ...)
    that is 0 * inf, and the slope ``(-1)^n n!`` is taken from the reflection
    ``rgamma(x) = sin(pi x) gamma(1 - x) / pi``: ``gamma(1 - x) (cos(pi x) - sin(pi x)
    digamma(1 - x) / pi)``, whose own derivatives are the higher ones there (a constant
    ``(-1)^n n!`` had none)."""
    pole = (np.real(x) <= 0) & (x == np.round(np.real(x)))
    at = np.where(pole, x, 0.0)
    reflected = sc.gamma(1.0 - at) * (np.cos(np.pi * at) - np.sin(np.pi * at) * digamma_real(1.0 - at) / np.pi)
    return np.where(pole, reflected, -ans * digamma_real(np.where(pole, 0.5, x)))


def _scaled_bessel_slope(nu, x, kind, general):
    """The slope of ``ive(nu, x)`` (kind "i") or ``kve(nu, x)`` (kind "k") at real
    ``x > 1e4`` (``> 100 nu^2``) from their asymptotic series, where ``general`` (a
    difference of nearly equal values) cancels: 0 or NaN from x = 1e10 on; ``general``
    elsewhere.  ``ive`` at negative x (integer nu): ``(-1)^(nu+1)`` times the slope at
    ``|x|``."""
    if np.iscomplexobj(x) or np.iscomplexobj(nu):
        return general
    ax = np.abs(x)
    big = (ax > 1e4) & (ax > 100.0 * np.square(nu)) & ((x > 0) if kind == "k" else (
        (x > 0) | (np.asarray(nu) == np.round(nu))))
    if not np.any(big):
        return general
    t = np.where(big, ax, 1e4)
    mu = 4.0 * np.square(nu)
    a, total = 1.0, -0.5 / t
    for k in range(1, 6):
        a = a * (mu - (2 * k - 1) ** 2) / (8.0 * k)
        total = total + (a if kind == "k" else (-1) ** k * a) * (-(k + 0.5)) / t ** (k + 1)
    slope = (np.sqrt(np.pi / 2.0) if kind == "k" else 1.0 / _SQRT_2PI) * total / np.sqrt(t)
    if kind == "i":  # ive(nu, -x) = (-1)^nu ive(nu, x) for integer nu
        slope = np.where(x < 0, np.where(np.round(nu) % 2 == 0, -slope, slope), slope)
    return np.where(big, slope, general)


def _erfcx_d(ans, x, **kw):
    """``d erfcx / dx = 2 x erfcx(x) - 2/sqrt(pi)``, which cancels for large x (0 from
    x = 1e8 on, instead of -1/(sqrt(pi) x^2)): from x > 1e3 on its asymptotic series
    ``-(1 - 3/(2x^2) + 15/(4x^4) - 105/(8x^6)) / (sqrt(pi) x^2)``."""
    big = np.real(x) > 1e3
    xb = np.where(big, x, 1e3)
    w = 1.0 / (xb * xb)
    series = -w * (1.0 - w * (1.5 - w * (3.75 - w * 13.125))) / _SQRT_PI
    return np.where(big, series, 2.0 * x * ans - 2.0 / _SQRT_PI)


def _exprel_d(ans, x, **kw):
    """``d/dx (e^x - 1)/x``: ``(e^x - exprel(x))/x``, by its series near 0 (to x^4: the
    first term left out is below 1e-18 there)."""
    small = np.abs(x) < 1e-3
    xs = np.where(small, 1.0, x)
    return np.where(small, 0.5 + x * (1.0 / 3.0 + x * (1.0 / 8.0 + x * (1.0 / 30.0 + x / 144.0))),
                    (np.exp(x) - ans) / xs)


def _boxcox_lambda(ans, x, lm, **kw):
    """``d/dlambda (x^lambda - 1)/lambda``; where ``|lambda L| < 1e-3`` (``L = log x``) its
    series ``L^2 (1/2 + u/3 + u^2/8 + u^3/30 + u^4/144)`` (``u = lambda L``), since the
    quotient cancels there (0 at lambda = 1e-20 instead of L^2/2); exact in value and
    in the first derivatives."""
    log = np.log(x)
    u = lm * log
    small = np.abs(u) < 1e-3
    safe = np.where(small, 1.0, lm)
    series = log * log * (0.5 + u * (1.0 / 3.0 + u * (1.0 / 8.0 + u * (1.0 / 30.0 + u / 144.0))))
    xl = np.where(x == 0, 0.0, np.power(x, lm) * log)  # (x = 0, lambda > 0: ans = -1/lambda, 0 * -inf)
    return np.where(small, series, (xl - ans) / safe)


def _inv_boxcox_lambda(ans, y, lm, **kw):
    """``d/dlambda (1 + lambda y)^(1/lambda)``; where ``|lambda y| < 1e-3`` its series
    ``ans y^2 (-1/2 + 2u/3 - 3u^2/4 + 4u^3/5 - 5u^4/6)`` (``u = lambda y``), since the
    difference of quotients cancels there; exact in value and in the first derivatives."""
    u = lm * y
    small = np.abs(u) < 1e-3
    safe = np.where(small, 1.0, lm)
    log = np.log1p(safe * y)
    series = ans * y * y * (-0.5 + u * (2.0 / 3.0 + u * (-0.75 + u * (0.8 - u * 5.0 / 6.0))))
    return np.where(small, series, ans * (y / (safe * (1.0 + safe * y)) - log / (safe * safe)))


# ----------------------------------------------------------------------------- logsumexp and softmax
def _shift(a, axis, b=None):
    """The plain (never differentiated) shift of ``logsumexp``: the largest real part
    over ``axis`` among the terms with ``b != 0`` (0 where that is not finite)."""
    r = np.real(a)
    if b is not None:  # (broadcast against b, as the sum will be)
        r = np.where(np.asarray(b) != 0, r, -np.inf)
    m = np.max(r, axis=axis, keepdims=True) if np.size(r) else np.zeros((1,) * np.ndim(r))
    return np.where(np.isfinite(m), m, 0.0)


defjvp(_shift, lambda ts, ans, *args, **kw: None)  # a plain value: no derivative flows
defvjp(_shift, lambda g, ans, *args, **kw: (None,) * len(args))


def _squeezed(x, axis, keepdims):
    if keepdims:
        return x
    out = np.squeeze(x, axis=axis)
    return out[()] if np.ndim(out) == 0 else out


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``scipy.special.logsumexp`` of differentiable operations: the log of the
    (``b``-weighted) sum of exponentials, shifted by the plain maximum."""
    a = np.asarray(a)
    if b is not None:
        b = np.asarray(b)  # (weights given as a list)
    m = _shift(a, axis, b)
    e = np.exp(a - m)
    if b is not None:
        e = b * e
    s = np.sum(e, axis=axis, keepdims=True)
    if not return_sign:
        return _squeezed(np.log(s) + m, axis, keepdims)
    size = np.abs(s)
    sign = s / np.where(size == 0, 1.0, size) if np.iscomplexobj(s) else np.sign(s)
    return _squeezed(np.log(size) + m, axis, keepdims), _squeezed(sign, axis, keepdims)


def softmax(x, axis=None):
    """``scipy.special.softmax``: ``exp(x) / sum(exp(x))`` over ``axis``, shifted."""
    x = np.asarray(x)
    e = np.exp(x - _shift(x, axis))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=None):
    """``scipy.special.log_softmax``: ``x - logsumexp(x)`` over ``axis``."""
    x = np.asarray(x)
    shifted = x - _shift(x, axis)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _exact_refused(name):
    raise TypeError("capstan: scipy.special.%s(..., exact=True) computes with Python integers and "
                    "has no derivative; use exact=False (the gamma-function form) to differentiate"
                    % name)


def factorial(n, exact=False, extend="zero"):
    """``scipy.special.factorial(n)`` for ``exact=False``: ``gamma(n + 1)`` (0 for
    negative ``n`` unless ``extend='complex'``)."""
    if exact:
        _exact_refused("factorial")
    n = np.asarray(n)
    if extend == "complex":
        return sc.gamma(n + 1)
    if extend != "zero":
        raise ValueError("argument `extend` must be either 'zero' or 'complex'")
    if np.iscomplexobj(n):
        raise ValueError("In order to use non-real input, use extend='complex'")
    out = np.where(n >= 0, sc.gamma(np.where(n >= 0, n, 0.0) + 1), 0.0)
    return out[()] if np.ndim(out) == 0 else out


def comb(N, k, *, exact=False, repetition=False):
    """``scipy.special.comb`` for ``exact=False``: ``binom`` where ``0 <= k <= N``."""
    if exact:
        _exact_refused("comb")
    if repetition:
        return comb(N + k - 1, k)
    N, k = np.asarray(N), np.asarray(k)
    ok = (k <= N) & (N >= 0) & (k >= 0)
    out = np.where(ok, sc.binom(N, k), 0.0)
    return out[()] if np.ndim(out) == 0 else out


def perm(N, k, exact=False):
    """``scipy.special.perm`` for ``exact=False``: ``poch(N - k + 1, k)`` where ``0 <= k <= N``."""
    if exact:
        _exact_refused("perm")
    N, k = np.asarray(N), np.asarray(k)
    ok = (k <= N) & (N >= 0) & (k >= 0)
    out = np.where(ok, sc.poch(N - k + 1, k), 0.0)
    return out[()] if np.ndim(out) == 0 else out


# ----------------------------------------------------------------------------- more functions
def _poly(x, coefficients):
    """``sum_k coefficients[k] x^k`` (for the series that replace a closed form near a
    point where it is 0/0 or cancels: a polynomial, so every derivative there is right)."""
    return _series(x, coefficients)


# ber'' and bei'' about 0 (ber = sum (-1)^k (x/2)^4k / (2k)!^2, bei = sum (-1)^k (x/2)^(4k+2) / (2k+1)!^2)
_BER2 = [0.0] * 11
_BEI2 = [0.0] * 11
for _k in range(1, 3):
    _BER2[4 * _k - 2] = (-1) ** _k * 4 * _k * (4 * _k - 1) / (4.0 ** (2 * _k) * math.factorial(2 * _k) ** 2)
for _k in range(0, 3):
    _BEI2[4 * _k] = ((-1) ** _k * (4 * _k + 2) * (4 * _k + 1)
                     / (4.0 ** (2 * _k + 1) * math.factorial(2 * _k + 1) ** 2))
#: (I0(x) - 1)/x and (1 - J0(x))/x about 0: sum_(k>=1) (+-1)^(k+1) x^(2k-1) / (4^k k!^2)
_I0M1 = [0.0] * 13
_J0M1 = [0.0] * 13
for _k in range(1, 7):
    _I0M1[2 * _k - 1] = 1.0 / (4.0 ** _k * math.factorial(_k) ** 2)
    _J0M1[2 * _k - 1] = (-1) ** (_k + 1) / (4.0 ** _k * math.factorial(_k) ** 2)
#: H0(x)/x and L0(x)/x about 0: sum (-+1)^k x^2k / (2^(2k+1) Gamma(k + 3/2)^2)
_H0X = [0.0] * 9
for _k in range(0, 5):
    _H0X[2 * _k] = (-1) ** _k / (2.0 ** (2 * _k + 1) * math.gamma(_k + 1.5) ** 2)


def _ber2(x):
    """``ber''(x) = -ber'(x)/x - bei(x)`` (the Kelvin equation ``x^2 w'' + x w' - i x^2 w = 0``
    for ``w = ber + i bei``, DLMF 10.61.1); near 0 its series."""
    small = np.abs(x) < 1e-2
    return np.where(small, _poly(x, _BER2), -sc.berp(x) / np.where(small, 1.0, x) - sc.bei(x))


def _bei2(x):
    """``bei''(x) = -bei'(x)/x + ber(x)``; near 0 its series."""
    small = np.abs(x) < 1e-2
    return np.where(small, _poly(x, _BEI2), -sc.beip(x) / np.where(small, 1.0, x) + sc.ber(x))


def _near_zero(x, coefficients, closed, limit=0.1):
    """``closed(x)`` (a quotient by x), by its series where ``|x| < limit``."""
    small = np.abs(x) < limit
    return np.where(small, _poly(x, coefficients), closed(np.where(small, limit, x)))


_ELLIPRC_X = [(-1) ** k / (2.0 * (2 * k + 1)) for k in range(1, 16)]
_ELLIPRC_Y = [(-1) ** k * k / (2.0 * k + 1) for k in range(1, 16)]


def _elliprc_partial(ans, x, y, which):
    """``R_C(x, y)`` in x: ``(R_C - 1/sqrt x) / (2(y - x))``; in y: ``(sqrt(x)/y - R_C) / (2(y - x))``
    (from ``x dR/dx + y dR/dy = -R/2`` and an integration by parts of
    ``R_C = 1/2 int (t + x)^(-1/2) (t + y)^(-1) dt``).  Where ``|y/x - 1| < 0.05``,
    where these cancel, their series in ``u = (y - x)/x``:
    ``R_C = x^(-1/2) sum (-u)^k / (2k + 1)``."""
    u = (y - x) / x
    near = np.abs(u) < 0.05
    d = np.where(near, 1.0, y - x)
    if which == 0:
        closed = (ans - 1.0 / np.sqrt(x)) / (2.0 * d)
        series = _poly(u, _ELLIPRC_X)
    else:
        closed = (np.sqrt(x) / y - ans) / (2.0 * d)
        series = _poly(u, _ELLIPRC_Y)
    return np.where(near, series / (x * np.sqrt(x)), closed)


def _apart(f, name, pairs):
    """Refuses ``f``'s partial in ``name`` where two of its arguments (``pairs``: tuples of
    values) agree to about 6 digits: its difference quotient cancels there."""
    for u, v in pairs:
        if np.any(np.abs(u - v) <= 1e-6 * np.maximum(np.abs(u), np.abs(v))):
            return refused(f, name, "where two of its arguments agree to 6 digits or are equal: "
                                    "the rule's difference quotient cancels there")
    return None


def _times(v, d):
    """``v * d``, 0 where ``v == 0`` (where ``d``, the slope at a zero argument, is infinite)."""
    return np.where(v == 0, 0.0, v * d)


def _elliprd_partial(which):
    """``R_D(x, y, z)``: in x ``(R_D - R_D(y, z, x)) / (2(z - x))`` (partial fractions in
    ``R_D = 3/2 int (t + x)^(-1/2) (t + y)^(-1/2) (t + z)^(-3/2) dt``), y alike, z by
    homogeneity ``x dx + y dy + z dz = -3/2 R_D``; refused where z agrees with x (y)."""
    def partial(ans, x, y, z, **kw):
        names = ("x", "y", "z")
        bad = _apart(sc.elliprd, names[which], [(x, z)] * (which != 1) + [(y, z)] * (which != 0))
        if bad is not None:
            return bad(ans)
        dx = (ans - sc.elliprd(y, z, x)) / (2.0 * (z - x)) if which != 1 else None
        dy = (ans - sc.elliprd(z, x, y)) / (2.0 * (z - y)) if which != 0 else None
        if which == 0:
            return dx
        if which == 1:
            return dy
        return (-1.5 * ans - _times(x, dx) - _times(y, dy)) / z
    return partial


def _elliprj_partial(which):
    """``R_J(x, y, z, p)``: in x ``(R_J - R_D(y, z, x)) / (2(p - x))`` (partial fractions), y and
    z alike, p by homogeneity (degree -3/2); refused where p agrees with x, y or z."""
    def partial(ans, x, y, z, p, **kw):
        names = ("x", "y", "z", "p")
        args = (x, y, z)
        pairs = [(args[which], p)] if which < 3 else [(a, p) for a in args]
        bad = _apart(sc.elliprj, names[which], pairs)
        if bad is not None:
            return bad(ans)
        others = ((y, z, x), (z, x, y), (x, y, z))
        d = [(ans - sc.elliprd(*others[i])) / (2.0 * (p - args[i])) if which in (i, 3) else None
             for i in range(3)]
        if which < 3:
            return d[which]
        return (-1.5 * ans - _times(x, d[0]) - _times(y, d[1]) - _times(z, d[2])) / p
    return partial


def _elliprg_partial(which):
    """``R_G`` in its argument ``which``: from ``2 R_G = z R_F - (x - z)(y - z) R_D / 3 + sqrt(xy/z)``
    (DLMF 19.21.10, the larger of the other two arguments as z), with ``dR_F/dx = -R_D(y, z, x)/6``
    and ``R_D``'s partial in x written out (its quotient by ``z - x`` cancels):
    ``2 dR_G/dx = -(y - z) R_D(x, y, z)/6 - y R_D(y, z, x)/6 + sqrt(y/(xz))/2``.  Refused where
    the argument is within 1e-10 of 0 relative to the others (the last two terms cancel)."""
    def partial(ans, *args, **kw):
        x = args[which]
        u, v = [a for i, a in enumerate(args) if i != which]
        swap = np.abs(u) > np.abs(v)
        y, z = np.where(swap, v, u), np.where(swap, u, v)
        if np.any(np.abs(x) <= 1e-10 * np.maximum(np.abs(y), np.abs(z))):
            return refused(sc.elliprg, "xyz"[which], "where it is 0 or within 1e-10 of 0 relative to the "
                                                      "others: the rule's terms cancel there")(ans)
        return 0.5 * (-(y - z) * sc.elliprd(x, y, z) / 6.0 - y * sc.elliprd(y, z, x) / 6.0
                      + 0.5 * np.sqrt(y / (x * z)))
    return partial


def _derivative_stack(f, names):
    """``f(*integers, x, diff_n=d, **options)`` (SciPy's Legendre functions): the stack of
    the derivatives 0..d in ``x``, each a primitive whose slope is the next one (SciPy
    computes them up to d = 2: a third derivative is refused); the integer degrees and
    orders are refused."""
    def one(*args, k=0, **options):
        return f(*args, diff_n=k, **options)[k]
    one.__name__ = one.__qualname__ = f.__name__ + "_derivative"

    def slope(ans, *args, k=0, **options):
        if k >= 2:
            return refused(f, names[-1], "a third derivative: SciPy's diff_n goes to 2")(ans)
        return one(*args, k=k + 1, **options)
    defderiv(one, *[refused(f, n, "an integer") for n in names[:-1]], slope)

    def stack(*args, diff_n=0, **options):
        return np.stack([one(*args, k=k, **options) for k in range(diff_n + 1)])
    defimpl(f, stack)


def _legendre_q(f, names):
    """SciPy's legacy ``lqn(n, z)`` and ``lqmn(m, n, z)``: the values of every degree (and
    order) up to ``n`` (``m``) and their derivatives; the derivatives' slopes from the
    Legendre equation ``(1 - z^2) w'' = 2 z w' - (k(k + 1) - j^2/(1 - z^2)) w`` (degree k,
    order j, DLMF 14.2.2)."""
    def value(*args):
        return f(*args)[0]

    def slope(*args):
        return f(*args)[1]
    value.__name__ = value.__qualname__ = f.__name__ + "_values"
    slope.__name__ = slope.__qualname__ = f.__name__ + "_derivatives"

    def second(ans, *args):
        z = args[-1]
        trailing = (1,) * np.ndim(z)
        k = np.arange(args[-2] + 1.0).reshape((-1,) + trailing)
        j2 = 0.0 if len(args) == 2 else np.arange(args[0] + 1.0).reshape((-1, 1) + trailing) ** 2
        w = 1.0 - z * z
        return (2.0 * z * ans - (k * (k + 1.0) - j2 / w) * value(*args)) / w
    integers = [refused(f, n, "an integer") for n in names[:-1]]
    defderiv(value, *integers, lambda ans, *args: slope(*args))
    defderiv(slope, *integers, second)
    defimpl(f, lambda *args: (value(*args), slope(*args)))


def _sph_harm(all_orders):
    """``sph_harm_y(n, m, theta, phi, diff_n=d)`` (``_all``: every degree to n and order
    0, 1, ..., m, -m, ..., -1), as SciPy defines it: ``sph_legendre_p(n, m, theta) e^(i m phi)``,
    with its gradient and Hessian in (theta, phi) stacked on the last axes for d = 1, 2
    (differentiable through ``sph_legendre_p``'s entries)."""
    legendre = sc.sph_legendre_p_all if all_orders else sc.sph_legendre_p

    def sph_harm_y(n, m, theta, phi, *, diff_n=0):
        p = legendre(n, m, theta, diff_n=diff_n)
        if all_orders:
            j = np.arange(2 * m + 1)
            trailing = (1,) * max(np.ndim(theta), np.ndim(phi))
            orders = np.where(j <= m, j, j - (2 * m + 1)).reshape((-1,) + trailing)
        else:
            orders = m
        e = np.exp(1j * orders * phi)
        y = p[0] * e
        if diff_n == 0:
            return y
        im = 1j * orders
        gradient = np.stack([p[1] * e, im * y], axis=-1)
        if diff_n == 1:
            return y, gradient
        cross = im * p[1] * e
        return y, gradient, np.stack([np.stack([p[2] * e, cross], axis=-1),
                                      np.stack([cross, -orders * orders * y], axis=-1)], axis=-2)
    return sph_harm_y


def _register_more(ai, bi):
    """The Kelvin, scaled Airy, integrated Bessel and Struve, modified Fresnel, parabolic
    cylinder, Jacobi elliptic, scaled Hankel and Wright functions (``ai``, ``bi``: the Airy
    primitives of :func:`_register`)."""
    # ----------------------------------------------------------------- Kelvin functions (DLMF 10.61)
    defderiv(sc.ber, lambda ans, x, **kw: sc.berp(x))
    defderiv(sc.bei, lambda ans, x, **kw: sc.beip(x))
    defderiv(sc.ker, lambda ans, x, **kw: sc.kerp(x))
    defderiv(sc.kei, lambda ans, x, **kw: sc.keip(x))
    defderiv(sc.berp, lambda ans, x, **kw: _ber2(x))
    defderiv(sc.beip, lambda ans, x, **kw: _bei2(x))
    # (ker + i kei satisfies the same equation; singular at 0, where ker is)
    defderiv(sc.kerp, lambda ans, x, **kw: -ans / x - sc.kei(x))
    defderiv(sc.keip, lambda ans, x, **kw: -ans / x + sc.ker(x))
    be, ke, bep, kep = _split("kelvin", sc.kelvin, range(4))
    defderiv(be, lambda ans, x: bep(x))
    defderiv(ke, lambda ans, x: kep(x))
    defderiv(bep, lambda ans, x: _ber2(x) + 1j * _bei2(x))
    defderiv(kep, lambda ans, x: -ans / x + 1j * ke(x))

    # ----------------------------------------------------------------- scaled Airy functions, integrals
    # eAi = Ai exp(zeta), eBi = Bi exp(-zeta), zeta = 2/3 x^(3/2) for x > 0 (0 for x < 0):
    # zeta' = sqrt(x); the complex ones scale by |Re zeta| (not holomorphic): refused
    def root(x):
        pos = x > 0
        return np.where(pos, np.sqrt(np.where(pos, x, 1.0)), 0.0)

    eai, eaip, ebi, ebip = _split("airye", sc.airye, range(4))
    defderiv(eai, _real_only(sc.airye, lambda ans, x: eaip(x) + root(x) * ans))
    defderiv(eaip, _real_only(sc.airye, lambda ans, x: x * eai(x) + root(x) * ans))
    defderiv(ebi, _real_only(sc.airye, lambda ans, x: ebip(x) - root(x) * ans))
    defderiv(ebip, _real_only(sc.airye, lambda ans, x: x * ebi(x) - root(x) * ans))
    # integrals from 0 to x: their integrands (itairy: of Ai(t), Bi(t), Ai(-t), Bi(-t))
    apt, bpt, ant, bnt = _split("itairy", sc.itairy, range(4))
    defderiv(apt, lambda ans, x: ai(x))
    defderiv(bpt, lambda ans, x: bi(x))
    defderiv(ant, lambda ans, x: ai(-x))
    defderiv(bnt, lambda ans, x: bi(-x))
    ii0, ik0 = _split("iti0k0", sc.iti0k0, range(2))
    defderiv(ii0, lambda ans, x: sc.i0(x))
    defderiv(ik0, lambda ans, x: sc.k0(x))
    ij0, iy0 = _split("itj0y0", sc.itj0y0, range(2))
    defderiv(ij0, lambda ans, x: sc.j0(x))
    defderiv(iy0, lambda ans, x: sc.y0(x))
    # int_0^x (I0(t) - 1)/t dt, int_x^inf K0(t)/t dt; int_0^x (1 - J0(t))/t dt, int_x^inf Y0(t)/t dt
    i2i0, i2k0 = _split("it2i0k0", sc.it2i0k0, range(2))
    defderiv(i2i0, lambda ans, x: _near_zero(x, _I0M1, lambda t: (sc.i0(t) - 1.0) / t))
    defderiv(i2k0, lambda ans, x: -sc.k0(x) / x)
    i2j0, i2y0 = _split("it2j0y0", sc.it2j0y0, range(2))
    defderiv(i2j0, lambda ans, x: _near_zero(x, _J0M1, lambda t: (1.0 - sc.j0(t)) / t))
    defderiv(i2y0, lambda ans, x: -sc.y0(x) / x)
    defderiv(sc.itstruve0, lambda ans, x, **kw: sc.struve(0.0, x))
    defderiv(sc.itmodstruve0, lambda ans, x, **kw: sc.modstruve(0.0, x))
    # (int_x^inf H0(t)/t dt)
    defderiv(sc.it2struve0, lambda ans, x, **kw: -_near_zero(x, _H0X, lambda t: sc.struve(0.0, t) / t, 1e-2))

    # ----------------------------------------------------------------- modified Fresnel integrals
    # F+(x) = int_x^inf exp(i t^2) dt, K+(x) = exp(-i(x^2 + pi/4)) F+(x) / sqrt(pi); F-, K- conjugate
    # (for x >= 0: SciPy's values at x < 0 are not these integrals -- their imaginary parts
    # slope the other way -- and are refused)
    def nonnegative(f, partial):
        def checked(ans, x):
            if np.any(np.asarray(x) < 0):
                return refused(f, "x", "at x < 0, where SciPy's values are not the integral's")(ans)
            return partial(ans, x)
        return checked

    fp, kp = _split("modfresnelp", sc.modfresnelp, range(2))
    defderiv(fp, nonnegative(sc.modfresnelp, lambda ans, x: -np.exp(1j * x * x)))
    defderiv(kp, nonnegative(sc.modfresnelp, lambda ans, x:
                             -2j * x * ans - np.exp(-0.25j * np.pi) / _SQRT_PI))
    fm, km = _split("modfresnelm", sc.modfresnelm, range(2))
    defderiv(fm, nonnegative(sc.modfresnelm, lambda ans, x: -np.exp(-1j * x * x)))
    defderiv(km, nonnegative(sc.modfresnelm, lambda ans, x: 2j * x * ans - np.exp(0.25j * np.pi) / _SQRT_PI))

    # ----------------------------------------------------------------- parabolic cylinder functions
    # (each pair is (w, w'), w'' from the Weber equations: D_v, V_v: w'' = (x^2/4 - v - 1/2) w;
    # W(a, x): w'' = (a - x^2/4) w, DLMF 12.2.2, 12.2.3, 12.14.1)
    for f, name, coefficient in ((sc.pbdv, "v", lambda v, x: 0.25 * x * x - v - 0.5),
                                 (sc.pbvv, "v", lambda v, x: 0.25 * x * x - v - 0.5),
                                 (sc.pbwa, "a", lambda a, x: a - 0.25 * x * x)):
        w, wp = _split(f.__name__, f, range(2))
        defderiv(w, _order(f, name), lambda ans, v, x, _wp=wp: _wp(v, x))
        defderiv(wp, _order(f, name), lambda ans, v, x, _w=w, _c=coefficient: _c(v, x) * _w(v, x))

    # ----------------------------------------------------------------- elliptic
    # K(1 - p): -K'(m) at m = 1 - p, with K(1 - p) = ellipkm1(p) (accurate for small p); near
    # p = 1 (m = 0) K' by its series
    defderiv(sc.ellipkm1, lambda ans, p, **kw: np.where(
        np.abs(1.0 - p) < 1e-3, -_series(1.0 - p, _ELLIPK_SLOPE),
        -(sc.ellipe(1.0 - p) - p * ans) / (2.0 * p * _nz(1.0 - p))))
    defderiv(sc.elliprc, lambda ans, x, y, **kw: _elliprc_partial(ans, x, y, 0),
             lambda ans, x, y, **kw: _elliprc_partial(ans, x, y, 1))
    # Carlson's symmetric integrals: R_F's partials are R_D's (-R_D(y, z, x)/6...), R_D's, R_J's
    # and R_G's in _elliprd_partial, _elliprj_partial, _elliprg_partial
    defderiv(sc.elliprf, lambda ans, x, y, z, **kw: -sc.elliprd(y, z, x) / 6.0,
             lambda ans, x, y, z, **kw: -sc.elliprd(z, x, y) / 6.0,
             lambda ans, x, y, z, **kw: -sc.elliprd(x, y, z) / 6.0)
    defderiv(sc.elliprd, *[_elliprd_partial(i) for i in range(3)])
    defderiv(sc.elliprj, *[_elliprj_partial(i) for i in range(4)])
    defderiv(sc.elliprg, *[_elliprg_partial(i) for i in range(3)])
    # Jacobi's sn, cn, dn and the amplitude ph = am(u|m) (F(ph|m) = u): in u the classical
    # rules; in m through d ph/dm = -dn dF/dm(ph, m) (the implicit function theorem)
    sn, cn, dn, ph = _split("ellipj", sc.ellipj, range(4))

    def ph_m(u, m):
        return -dn(u, m) * _ellipkinc_m(u, ph(u, m), m)

    defderiv(sn, lambda ans, u, m: cn(u, m) * dn(u, m), lambda ans, u, m: cn(u, m) * ph_m(u, m))
    defderiv(cn, lambda ans, u, m: -sn(u, m) * dn(u, m), lambda ans, u, m: -sn(u, m) * ph_m(u, m))
    defderiv(dn, lambda ans, u, m: -m * sn(u, m) * cn(u, m), lambda ans, u, m: -(
        sn(u, m) ** 2 + 2.0 * m * sn(u, m) * cn(u, m) * ph_m(u, m)) / (2.0 * ans))
    defderiv(ph, lambda ans, u, m: dn(u, m), lambda ans, u, m: ph_m(u, m))

    # ----------------------------------------------------------------- exponentially scaled Hankel functions
    # hankel1e = H1 exp(-iz), hankel2e = H2 exp(iz): the recurrence and the scaling's derivative
    defderiv(sc.hankel1e, _order(sc.hankel1e), lambda ans, v, z, **kw:
             0.5 * (sc.hankel1e(v - 1, z) - sc.hankel1e(v + 1, z)) - 1j * ans)
    defderiv(sc.hankel2e, _order(sc.hankel2e), lambda ans, v, z, **kw:
             0.5 * (sc.hankel2e(v - 1, z) - sc.hankel2e(v + 1, z)) + 1j * ans)

    # ----------------------------------------------------------------- Wright's generalized Bessel function
    # Phi(a, b; x) = sum x^k / (k! Gamma(a k + b)): d/dx = Phi(a, a + b; x)
    defderiv(sc.wright_bessel, _parameter(sc.wright_bessel, "a"), _parameter(sc.wright_bessel, "b"),
             lambda ans, a, b, x, **kw: sc.wright_bessel(a, a + b, x))
    defderiv(sc.log_wright_bessel, _parameter(sc.log_wright_bessel, "a"),
             _parameter(sc.log_wright_bessel, "b"),
             lambda ans, a, b, x, **kw: np.exp(sc.log_wright_bessel(a, a + b, x) - ans))
    # besselpoly(a, lmb, nu) = int_0^1 t^lmb J_nu(2 a t) dt: in a, by J' = (J_(nu-1) - J_(nu+1))/2
    defderiv(sc.besselpoly, lambda ans, a, lmb, nu, **kw:
             sc.besselpoly(a, lmb + 1.0, nu - 1.0) - sc.besselpoly(a, lmb + 1.0, nu + 1.0),
             _parameter(sc.besselpoly, "lmb"), _order(sc.besselpoly, "nu"))
    # Legendre functions with their derivatives (diff_n), SciPy >= 1.15
    for name, names in (("legendre_p", ("n", "z")), ("legendre_p_all", ("n", "z")),
                        ("assoc_legendre_p", ("n", "m", "z")), ("assoc_legendre_p_all", ("n", "m", "z")),
                        ("sph_legendre_p", ("n", "m", "theta")), ("sph_legendre_p_all", ("n", "m", "theta"))):
        if hasattr(sc, name):
            _derivative_stack(getattr(sc, name), names)
    for name, all_orders in (("sph_harm_y", False), ("sph_harm_y_all", True)):
        if hasattr(sc, name) and hasattr(sc, "sph_legendre_p_all"):
            defimpl(getattr(sc, name), _sph_harm(all_orders))
    # Mathieu functions in x (each returns its derivative too): Mathieu's equation
    # y'' = -(a - 2q cos 2x) y for ce, se (SciPy takes x in degrees: its derivative is in
    # radians), y'' = (a - 2q cosh 2x) y for the radial ones; a the characteristic value
    # (mathieu_a for ce, mathieu_b for se), whose derivative in q has no closed form
    order = "an integer order"
    characteristic = "the characteristic value's derivative in q has no closed form"
    for f in (sc.mathieu_a, sc.mathieu_b):
        defderiv(f, refused(f, "m", order), refused(f, "q", characteristic))
    for f, a, angular in ((sc.mathieu_cem, sc.mathieu_a, True), (sc.mathieu_sem, sc.mathieu_b, True),
                          (sc.mathieu_modcem1, sc.mathieu_a, False), (sc.mathieu_modcem2, sc.mathieu_a, False),
                          (sc.mathieu_modsem1, sc.mathieu_b, False), (sc.mathieu_modsem2, sc.mathieu_b, False)):
        y, yp = _split(f.__name__, f, range(2))
        fixed = (refused(f, "m", order), refused(f, "q", characteristic))
        if angular:
            defderiv(y, *fixed, lambda ans, m, q, x, _yp=yp: _yp(m, q, x) * _DEG)
            defderiv(yp, *fixed, lambda ans, m, q, x, _y=y, _a=a:
                     -(_a(m, q) - 2.0 * q * np.cos(2.0 * _DEG * x)) * _y(m, q, x) * _DEG)
        else:
            defderiv(y, *fixed, lambda ans, m, q, x, _yp=yp: _yp(m, q, x))
            defderiv(yp, *fixed, lambda ans, m, q, x, _y=y, _a=a:
                     (_a(m, q) - 2.0 * q * np.cosh(2.0 * x)) * _y(m, q, x))
    # spheroidal wave functions in x (each returns its derivative too): the spheroidal
    # equation (1 - x^2) y'' - 2x y' + (cv -+ c^2 x^2 - m^2/(1 - x^2)) y = 0 (prolate -, oblate
    # angular +; oblate radial: (1 + x^2) y'' + 2x y' - (cv - c^2 x^2 - m^2/(1 + x^2)) y = 0),
    # cv the characteristic value (pro_cv, obl_cv, or given: the _cv forms).  (pro_rad2 and
    # obl_rad2 are left without rules: SciPy's values miss that equation by up to 1% at some
    # points -- pro_rad2(1, 3, 1.5, 1.3) -- so the slope of its derivative is not the equation's.)
    shape = "the derivative in c (or cv) has no closed form"
    for f in (sc.pro_cv, sc.obl_cv):
        defderiv(f, refused(f, "m", order), refused(f, "n", order), refused(f, "c", shape))

    def spheroidal_second(kind, cv, y):
        def second(ans, *args):
            m, c, x = args[0], args[2], args[-1]
            lam = args[3] if len(args) == 5 else cv(m, args[1], c)
            if kind == "obl_rad":
                w = 1.0 + x * x
                return (-2.0 * x * ans + (lam - c * c * x * x - m * m / w) * y(*args)) / w
            w = 1.0 - x * x
            cx2 = c * c * x * x * (1.0 if kind == "pro" else -1.0)
            return (2.0 * x * ans - (lam - cx2 - m * m / w) * y(*args)) / w
        return second

    for name, kind, cv in (("pro_ang1", "pro", sc.pro_cv), ("pro_rad1", "pro", sc.pro_cv),
                           ("obl_ang1", "obl_ang", sc.obl_cv), ("obl_rad1", "obl_rad", sc.obl_cv)):
        for suffix in ("", "_cv"):
            f = getattr(sc, name + suffix)
            y, yp = _split(f.__name__, f, range(2))
            fixed = [refused(f, "m", order), refused(f, "n", order), refused(f, "c", shape)]
            if suffix:
                fixed.append(refused(f, "cv", shape))
            defderiv(y, *fixed, lambda ans, *args, _yp=yp: _yp(*args))
            defderiv(yp, *fixed, spheroidal_second(kind, cv, y))
    _legendre_q(sc.lqn, ("n", "z"))
    _legendre_q(sc.lqmn, ("m", "n", "z"))
    # radian(d, m, s) = (d + m/60 + s/3600) pi/180: linear
    defderiv(sc.radian, lambda ans, d, m, s, **kw: _DEG + 0.0 * ans,
             lambda ans, d, m, s, **kw: _DEG / 60.0 + 0.0 * ans,
             lambda ans, d, m, s, **kw: _DEG / 3600.0 + 0.0 * ans)


if sc is not None:
    _register()
