"""Tail log-moments of the gamma and beta distributions, by numerical quadrature: the
primitives behind the derivatives of the regularized incomplete gamma and beta
functions in their shape parameters (``gammainc(a, x)`` in ``a``, ``betainc(a, b, x)``
in ``a`` and ``b``), which have no closed form in SciPy's functions.

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
Python per point (about 0.1-1 ms): these rules are for shape parameters, not for
large arrays.
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
    raise NoRuleError("capstan: the derivative of scipy.special.%s in its shape parameter at %s "
                      "could not be computed to a relative accuracy of %g by numerical quadrature "
                      "(see capstan.rules.log_moments); differentiate at another point, or pass the "
                      "shape as a constant" % (name, ", ".join("%r" % float(v) for v in args), ACCEPT))


def _quad(f, lo, hi, points=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if points is not None and not (lo < points < hi):
            points = None
        value, err = _integrate.quad(f, lo, hi, epsabs=0.0, epsrel=EPSREL, limit=200,
                                     points=None if points is None else (points,))
    return value, err


def _scaled(tail, scale):
    """``tail * exp(-scale)`` (a tail mass in the units of a scaled integral), capped."""
    return math.exp(min(math.log(tail) - scale, 700.0)) if tail > 0.0 else 0.0


def _one_gamma(k, a, x, upper):
    """One tail moment ``G_k(a, x)`` (see the module's docstring)."""
    if math.isnan(a) or math.isnan(x) or a <= 0.0 or x < 0.0:
        return math.nan
    if (x == 0.0 and not upper) or (math.isinf(x) and upper):
        return 0.0
    psi = float(sc.digamma(a))
    lg = math.lgamma(a)
    if upper:
        ref = (a - 1.0) * math.log(x) - x  # (the integrand's largest value, at x > a: scaled out)

        def f(t):
            lt = math.log(t)
            return math.exp((a - 1.0) * lt - t - ref) * (lt - psi) ** k
        v, e = _quad(f, x, math.inf)
        scale = ref - lg
        tail = float(sc.gammaincc(a, x))
    else:
        peak = min(x, a - 1.0)
        ref = (a - 1.0) * math.log(peak) - peak if peak > 0.0 else 0.0  # (the largest value, scaled out)

        def f(t):
            lt = math.log(t)
            return math.exp((a - 1.0) * lt - t - ref) * (lt - psi) ** k
        if a < 2.0:  # the part near 0 through s = t^a (t^(a-1) singular or steep there)
            c = min(x, 1.0)
            inv = 1.0 / a

            def g(s):
                if s <= 0.0:
                    return 0.0 if k else math.exp(-ref)
                return math.exp(-(s ** inv) - ref) * (math.log(s) * inv - psi) ** k
            v, e = _quad(g, 0.0, c ** a)
            v, e = v * inv, e * inv
            if x > c:
                v2, e2 = _quad(f, c, x, a - 1.0)
                v, e = v + v2, e + e2
        else:
            v, e = _quad(f, 0.0, x, a - 1.0)
        scale = ref - lg
        tail = float(sc.gammainc(a, x))
    # (the scale of the result: the tail's mass times the spread of u to the power k)
    size = max(abs(v), 1e-3 * _scaled(tail, scale) * float(sc.polygamma(1, a)) ** (0.5 * k))
    if not (e <= ACCEPT * size) and not (v == 0.0 and e == 0.0):
        _refuse("gammainc" if not upper else "gammaincc", (a, x))
    return v * math.exp(scale)


def gamma_tail_moment(k, a, x, upper):
    """``∫ (ln t - ψ(a))^k t^(a-1) e^-t / Γ(a) dt`` over ``[0, x]`` where ``upper`` is
    false and over ``[x, ∞)`` where it is true, elementwise (``k`` a plain integer)."""
    a, x, upper = np.broadcast_arrays(np.asarray(a, float), np.asarray(x, float), np.asarray(upper, bool))
    out = np.empty(a.shape)
    for i in np.ndindex(a.shape):
        out[i] = _one_gamma(int(k), float(a[i]), float(x[i]), bool(upper[i]))
    return out[()] if out.ndim == 0 else out


def _one_beta(j, k, a, b, x, upper, name="betainc"):
    """One tail moment ``B_jk(a, b, x)``; the upper tail by the mirror ``t -> 1 - t``."""
    if math.isnan(a) or math.isnan(b) or math.isnan(x) or a <= 0.0 or b <= 0.0 or not 0.0 <= x <= 1.0:
        return math.nan
    if upper:  # ∫_x^1 u^j v^k b(a, b, t) dt = ∫_0^(1-x) (its mirror: a <-> b, u <-> v)
        return _one_beta(k, j, b, a, 1.0 - x, False, name)
    if x == 0.0:
        return 0.0
    ab = float(sc.digamma(a + b))
    pa, pb = float(sc.digamma(a)) - ab, float(sc.digamma(b)) - ab
    lb = float(sc.betaln(a, b))

    def powers(lt, l1t):
        return (lt - pa) ** j * (l1t - pb) ** k

    peak = (a - 1.0) / (a + b - 2.0) if a > 1.0 and b > 1.0 else (x if a > 1.0 else 0.0)
    peak = min(x, peak)
    ref = ((a - 1.0) * math.log(peak) if peak > 0.0 else 0.0) + (b - 1.0) * math.log1p(-peak)

    def f(t):
        return math.exp((a - 1.0) * math.log(t) + (b - 1.0) * math.log1p(-t) - ref) * powers(
            math.log(t), math.log1p(-t))
    c = min(x, 0.5)
    if a < 2.0:  # the part near 0 through s = t^a
        inv = 1.0 / a

        def g(s):
            if s <= 0.0:
                return 0.0 if j else math.exp(-ref) * (0.0 - pb) ** k
            t = s ** inv
            lt = math.log(s) * inv
            return math.exp((b - 1.0) * math.log1p(-t) - ref) * powers(lt, math.log1p(-t))
        v, e = _quad(g, 0.0, c ** a)
        v, e = v * inv, e * inv
        if x > c:
            v2, e2 = _quad(f, c, x, peak)
            v, e = v + v2, e + e2
    else:
        v, e = _quad(f, 0.0, x, peak)
    scale = ref - lb
    tail = float(sc.betainc(a, b, x))
    spread = float(sc.polygamma(1, a) + sc.polygamma(1, b))
    size = max(abs(v), 1e-3 * _scaled(tail, scale) * spread ** (0.5 * (j + k)))
    if not (e <= ACCEPT * size) and not (v == 0.0 and e == 0.0):
        _refuse(name, (a, b, x))
    return v * math.exp(scale)


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
