"""Tail log-moments of the gamma and beta distributions, by numerical quadrature: the
primitives behind the derivatives of the regularized incomplete gamma and beta
functions in their shape parameters (``gammainc(a, x)`` in ``a``, ``betainc(a, b, x)``
in ``a`` and ``b``), which have no closed form in SciPy's functions; and the same for
the Hurwitz zeta function in ``x`` (:func:`zeta_moment`, at the end).

With the gamma density ``g(a, t) = t^(a-1) e^-t / Γ(a)`` and ``u = ln t - ψ(a)``
(``∂g/∂a = u g``), the *tail moments*

    G_k(a, x) = ∫_0^x u^k g(a, t) dt        (lower tail)  or   ∫_x^∞ u^k g(a, t) dt  (upper)

form a family closed under differentiation (``∂u/∂a = -ψ'(a)``):

    ∂G_k/∂a = G_(k+1) - k ψ'(a) G_(k-1),     ∂G_k/∂x = ± u(x)^k g(a, x),

and ``∂P/∂a = G_1`` (lower) ``= -G_1`` (upper: the full moment of ``u`` is 0).  So
:func:`gamma_tail_moment` is one primitive with rules in ``a`` and ``x`` written with
itself: derivatives of every order follow.  Likewise for the beta density
``b(t) = t^(a-1) (1-t)^(b-1) / B(a, b)`` with ``u = ln t - ψ(a) + ψ(a+b)`` and
``v = ln(1-t) - ψ(b) + ψ(a+b)``: ``B_jk = ∫ u^j v^k b dt`` over a tail, and

    ∂B_jk/∂a = B_(j+1)k + j (ψ'(a+b) - ψ'(a)) B_(j-1)k + k ψ'(a+b) B_j(k-1),
    ∂B_jk/∂b = B_j(k+1) + j ψ'(a+b) B_(j-1)k + k (ψ'(a+b) - ψ'(b)) B_j(k-1).

Each point integrates the smaller tail (the lower one below the mean, the upper one
above), so derivatives of values near 0 or 1 keep their relative accuracy at every
order: the two tails differ by the full moment, which no value here ever subtracts.
The integrals are ``scipy.integrate.quad`` to a relative tolerance of ``1e-13``, with
the endpoint singularity ``t^(a-1)`` at 0 removed by the substitution ``s = t^a``; a
point whose error estimate exceeds ``1e-10`` of its scale is refused with
:class:`capstan.NoRuleError` (never an inaccurate number).  The computation is plain
Python, two quadratures per point and moment (about 1-2 ms): these rules are for shape
parameters, not for large arrays of them.
"""
import math
import warnings

import numpy as np

try:
    import scipy.special as sc
    from scipy import integrate as _integrate
except ImportError:  # pragma: no cover - scipy is optional
    sc = _integrate = None

#: the relative tolerance asked of quad, and the one a result must meet to be returned
EPSREL, ACCEPT = 1e-13, 1e-10


def _refuse(name, args):
    from ..adcontext import NoRuleError
    raise NoRuleError("capstan: the derivative of scipy.special.%s in its %s at %s "
                      "could not be computed to a relative accuracy of %g by numerical quadrature "
                      "(see capstan.rules.log_moments); differentiate at another point, or pass the "
                      "argument as a constant" % (name, "argument x" if name == "zeta" else "shape parameter",
                                               ", ".join("%r" % float(v) for v in args), ACCEPT))


def _quad(f, lo, hi, points=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if points is not None and not (lo < points < hi):
            points = None
        value, err = _integrate.quad(f, lo, hi, epsabs=0.0, epsrel=EPSREL, limit=200,
                                     points=None if points is None else (points,))
    return value, err


def _substituted_then_direct(g, f, a, c, x, m):
    """``∫_0^x f`` as ``∫_0^(c^a) g(s) ds / a`` (``s = t^a``, which removes ``t^(a-1)``'s
    singularity at 0) up to ``c``, then ``f`` itself from ``c`` to ``x`` (``m``: a point
    quad should split at); the value and quad's error estimate."""
    v, e = _quad(g, 0.0, c ** a)
    v, e = v / a, e / a
    if x > c:
        v2, e2 = _quad(f, c, x, m)
        v, e = v + v2, e + e2
    return v, e


def _gamma_integral(k, a, x, upper, psi):
    """``∫ (ln t - ψ)^k t^(a-1) e^-t dt`` over the tail, scaled by an unknown constant (the
    same for every ``k``), and quad's error estimate.  The exponent is taken relative to a
    reference point ``m`` (``(a-1) log1p((t-m)/m) - (t-m)``): no rounding of large
    ``(a-1) ln t`` and ``t`` that cancel."""
    if upper:
        m = x
    else:
        m = min(x, a - 1.0) if a > 1.0 else 0.0
    if m > 0.0:
        lm = math.log(m) - psi

        def f(t):
            d = t - m
            r = math.log1p(d / m)
            return math.exp((a - 1.0) * r - d) * (r + lm) ** k
    else:  # (a <= 1 below: the integrand is largest at 0, no reference point)
        def f(t):
            lt = math.log(t)
            return math.exp((a - 1.0) * lt - t) * (lt - psi) ** k
    if upper:
        return _quad(f, x, math.inf)
    if a >= 2.0:
        return _quad(f, 0.0, x, m)
    # the part near 0 through s = t^a (t^(a-1) is singular or steep there)
    c = min(x, 1.0)
    inv = 1.0 / a
    ref = (a - 1.0) * math.log(m) - m if m > 0.0 else 0.0

    def g(s):
        if s <= 0.0:
            return 0.0 if k else math.exp(-ref)
        return math.exp(-(s ** inv) - ref) * (math.log(s) * inv - psi) ** k
    return _substituted_then_direct(g, f, a, c, x, m)


def _checked(v, e, v0, e0, spread, k, name, args):
    """``v / v0`` after checking both error estimates against the result's scale: the
    tail's mass times the spread of the logarithm to the power ``k``."""
    size = max(abs(v), 1e-3 * v0 * spread ** (0.5 * k))
    if not (e <= ACCEPT * size and e0 <= ACCEPT * v0) or not v0 > 0.0:
        _refuse(name, args)
    return v / v0


def _one_gamma(k, a, x, upper):
    """One tail moment ``G_k(a, x)`` (see the module's docstring): the tail's probability
    (SciPy's ``gammainc``/``gammaincc``) times the mean of ``u^k`` over the tail (a ratio of
    two quadratures, so that no large normalizing constant enters)."""
    if math.isnan(a) or math.isnan(x) or a <= 0.0 or x < 0.0:
        return math.nan
    tail = float(sc.gammaincc(a, x) if upper else sc.gammainc(a, x))
    if k == 0 or tail == 0.0:
        return tail
    psi = float(sc.digamma(a))
    v, e = _gamma_integral(k, a, x, upper, psi)
    v0, e0 = _gamma_integral(0, a, x, upper, psi)
    return tail * _checked(v, e, v0, e0, float(sc.polygamma(1, a)), k,
                           "gammaincc" if upper else "gammainc", (a, x))


def gamma_tail_moment(k, a, x, upper):
    """``∫ (ln t - ψ(a))^k t^(a-1) e^-t / Γ(a) dt`` over ``[0, x]`` where ``upper`` is
    false and over ``[x, ∞)`` where it is true, elementwise (``k`` a plain integer)."""
    a, x, upper = np.broadcast_arrays(np.asarray(a, float), np.asarray(x, float), np.asarray(upper, bool))
    out = np.empty(a.shape)
    for i in np.ndindex(a.shape):
        out[i] = _one_gamma(int(k), float(a[i]), float(x[i]), bool(upper[i]))
    return out[()] if out.ndim == 0 else out


def _beta_integral(j, k, a, b, x, pa, pb):
    """``∫_0^x (ln t - pa)^j (ln(1-t) - pb)^k t^(a-1) (1-t)^(b-1) dt``, scaled by an unknown
    constant (the same for every ``j``, ``k``), and quad's error estimate; the exponent
    relative to a reference point ``m`` (as for the gamma function)."""
    m = (a - 1.0) / (a + b - 2.0) if a > 1.0 and b > 1.0 else (x if a > 1.0 else 0.0)
    m = min(x, m)
    if m > 0.0:
        lm, l1m = math.log(m) - pa, math.log1p(-m) - pb

        def f(t):
            d = t - m
            r, r1 = math.log1p(d / m), math.log1p(-d / (1.0 - m))
            return math.exp((a - 1.0) * r + (b - 1.0) * r1) * (r + lm) ** j * (r1 + l1m) ** k
    else:
        def f(t):
            return math.exp((a - 1.0) * math.log(t) + (b - 1.0) * math.log1p(-t)) * (
                math.log(t) - pa) ** j * (math.log1p(-t) - pb) ** k
    if a >= 2.0:
        return _quad(f, 0.0, x, m)
    c = min(x, 0.5)  # the part near 0 through s = t^a
    inv = 1.0 / a
    ref = ((a - 1.0) * math.log(m) + (b - 1.0) * math.log1p(-m)) if m > 0.0 else 0.0

    def g(s):
        if s <= 0.0:
            return 0.0 if j else math.exp(-ref) * (0.0 - pb) ** k
        t = s ** inv
        return math.exp((b - 1.0) * math.log1p(-t) - ref) * (math.log(s) * inv - pa) ** j * (
            math.log1p(-t) - pb) ** k
    return _substituted_then_direct(g, f, a, c, x, m)


def _one_beta(j, k, a, b, x, upper, name="betainc"):
    """One tail moment ``B_jk(a, b, x)``: the tail's probability (SciPy's ``betainc``) times
    the mean of ``u^j v^k`` over it; the upper tail by the mirror ``t -> 1 - t``."""
    if math.isnan(a) or math.isnan(b) or math.isnan(x) or a <= 0.0 or b <= 0.0 or not 0.0 <= x <= 1.0:
        return math.nan
    if upper:  # ∫_x^1 u^j v^k b(a, b, t) dt = ∫_0^(1-x) (its mirror: a <-> b, u <-> v)
        return _one_beta(k, j, b, a, 1.0 - x, False, name)
    tail = float(sc.betainc(a, b, x))
    if (j == 0 and k == 0) or tail == 0.0:
        return tail
    ab = float(sc.digamma(a + b))
    pa, pb = float(sc.digamma(a)) - ab, float(sc.digamma(b)) - ab
    v, e = _beta_integral(j, k, a, b, x, pa, pb)
    v0, e0 = _beta_integral(0, 0, a, b, x, pa, pb)
    return tail * _checked(v, e, v0, e0, float(sc.polygamma(1, a) + sc.polygamma(1, b)), j + k,
                           name, (a, b, x))


def beta_tail_moment(j, k, a, b, x, upper):
    """``∫ u^j v^k t^(a-1) (1-t)^(b-1) / B(a, b) dt`` (``u = ln t - ψ(a) + ψ(a+b)``,
    ``v = ln(1-t) - ψ(b) + ψ(a+b)``) over ``[0, x]`` where ``upper`` is false and over
    ``[x, 1]`` where it is true, elementwise (``j``, ``k`` plain integers)."""
    a, b, x, upper = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float), np.asarray(x, float),
                                         np.asarray(upper, bool))
    out = np.empty(a.shape)
    for i in np.ndindex(a.shape):
        out[i] = _one_beta(int(j), int(k), float(a[i]), float(b[i]), float(x[i]), bool(upper[i]))
    return out[()] if out.ndim == 0 else out


# ----------------------------------------------------------------------------- the Hurwitz zeta function
def _zeta_integral(k, s, q, psi):
    """``∫_0^∞ (ln t - ψ)^k t^(s-1) e^(-q t) / (1 - e^-t) dt`` scaled by an unknown constant
    (the same for every ``k``), and quad's error estimate."""
    def log_w(t):  # ln of t^(s-2) e^(-q t) * t / (1 - e^-t), relative to its value at m (below)
        return (s - 2.0) * (math.log1p((t - m) / m) if m > 0.0 else math.log(t)) - q * (t - m) + math.log(
            t / -math.expm1(-t))

    m = (s - 2.0) / q if s > 2.0 else 0.0

    def f(t):
        return math.exp(log_w(t)) * (math.log(t) - psi) ** k
    if s >= 2.0:
        if m > 0.0:
            v1, e1 = _quad(f, 0.0, m)
            v2, e2 = _quad(f, m, math.inf)
            return v1 + v2, e1 + e2
        return _quad(f, 0.0, math.inf)
    c = min(1.0, 1.0 / q)  # the part near 0 through u = t^(s-1) (t^(s-2) is singular there)
    sigma = s - 1.0
    inv = 1.0 / sigma

    def g(u):
        if u <= 0.0:
            return 0.0 if k else 1.0
        lt = math.log(u) * inv
        t = math.exp(lt)
        h = 1.0 if t == 0.0 else t / -math.expm1(-t)
        return math.exp(-q * t) * h * (lt - psi) ** k
    v, e = _quad(g, 0.0, c ** sigma)
    v2, e2 = _quad(f, c, math.inf)
    return v * inv + v2, e * inv + e2


def _one_zeta(k, s, q):
    """``Z_k(s, q) = (1/Γ(s)) ∫_0^∞ (ln t - ψ(s))^k t^(s-1) e^(-q t) / (1 - e^-t) dt``
    (``Z_0`` is the Hurwitz zeta function, ``s > 1``): SciPy's ``zeta(s, q)`` times the
    mean of ``(ln t - ψ(s))^k`` under that weight."""
    if math.isnan(s) or math.isnan(q) or q <= 0.0:
        return math.nan
    if s <= 1.0:
        from ..adcontext import NoRuleError
        raise NoRuleError("capstan: scipy.special.zeta has no derivative rule with respect to its argument x "
                          "at x <= 1 (its integral representation, which the rule integrates, holds for "
                          "x > 1 only); pass x as a constant there")
    if k == 0:
        return float(sc.zeta(s, q))
    # the first term of zeta(s, q) = q^-s + zeta(s, q + 1) in closed form: q^-s times the
    # k-th moment of ln T - ψ(s) - ln q, T ~ Gamma(s) (its cumulants: -ln q, ψ'(s), ψ''(s)...);
    # the rest by quadrature (whose weight is then never close to the gamma density, where
    # the mean of ln t - ψ(s) would cancel: zeta(30) - 1 is 1e-9)
    cumulants = [-math.log(q)] + [float(sc.polygamma(i, s)) for i in range(1, k)]
    moments = [1.0]
    for n in range(1, k + 1):
        moments.append(sum(math.comb(n - 1, i) * cumulants[i] * moments[n - 1 - i] for i in range(n)))
    first = math.exp(-s * math.log(q)) * moments[k]
    psi = float(sc.digamma(s))
    v, e = _zeta_integral(k, s, q + 1.0, psi)
    v0, e0 = _zeta_integral(0, s, q + 1.0, psi)
    return first + float(sc.zeta(s, q + 1.0)) * _checked(v, e, v0, e0, float(sc.polygamma(1, s)), k, "zeta",
                                                        (s, q))


def zeta_moment(k, s, q):
    """``Z_k(s, q)`` elementwise (``k`` a plain integer): ``∂ζ(s, q)/∂s = Z_1``,
    ``∂Z_k/∂s = Z_(k+1) - k ψ'(s) Z_(k-1)``, ``∂Z_k/∂q = -s Σ_i C(k, i) s^(i-k) Z_i(s+1, q)``."""
    s, q = np.broadcast_arrays(np.asarray(s, float), np.asarray(q, float))
    out = np.empty(s.shape)
    for i in np.ndindex(s.shape):
        out[i] = _one_zeta(int(k), float(s[i]), float(q[i]))
    return out[()] if out.ndim == 0 else out
