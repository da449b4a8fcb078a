"""Rules for the ``math`` and ``cmath`` modules (one entry per function)."""
import cmath
import math

from ..nesting import varies
from .operator_rules import (infinite_mixed, infinite_slope, log, mod_divisor, one, sign, zero_base_exponent,
                             zero_power_slope)
from .kink_rules import all_zero, at_zero
from .registry import defderiv, reciprocal_slope, defkink, defimpl, defjvp, defvjp, nondifferentiable

_SQRT_PI = math.sqrt(math.pi)


def _polygamma(n, x):
    """The ``n``-th derivative of the digamma function at real ``x`` (``n = 0``: digamma
    itself), a primitive whose own derivative is the next one: gamma and lgamma can be
    differentiated to any order."""
    try:
        from scipy.special import polygamma
    except ImportError:  # pragma: no cover - scipy is a test dependency
        raise NotImplementedError("the derivative of gamma/lgamma needs scipy.special; "
                                  "install scipy") from None
    if n == 0 and x < 0 and x != round(x):  # (reflected: SciPy's digamma keeps 2 digits at -1 + 1e-14)
        f = x - round(x)
        return float(polygamma(0, 1.0 - x)) - math.pi * math.cos(math.pi * f) / math.sin(math.pi * f)
    return float(polygamma(n, x))


def _digamma(x):
    return _polygamma(0, x)


for m in (math, cmath):
    defderiv(m.sin, lambda ans, x, m=m: m.cos(x))
    defderiv(m.cos, lambda ans, x, m=m: -m.sin(x))
    defderiv(m.tan, lambda ans, x: 1.0 + ans * ans)
    # (asin, acos, asinh, acosh: the slopes from the value, cos(asin x) for sqrt(1 - x^2)...,
    # which lies on the branch the function took: on a cut (cmath.acos(1.4), a float, is on
    # acos's) sqrt(1 - x * x) picked the other side, a slope of the wrong sign)
    defderiv(m.asin, lambda ans, x, m=m: 1.0 / m.cos(ans))
    defderiv(m.acos, lambda ans, x, m=m: -1.0 / m.sin(ans))
    defderiv(m.atan, lambda ans, x: 1.0 / (1.0 + x * x))
    defderiv(m.sinh, lambda ans, x, m=m: m.cosh(x))
    defderiv(m.cosh, lambda ans, x, m=m: m.sinh(x))
    defderiv(m.tanh, lambda ans, x: 1.0 - ans * ans)  # (complex; real tanh: below)
    defderiv(m.asinh, lambda ans, x, m=m: 1.0 / m.cosh(ans))
    defderiv(m.acosh, lambda ans, x, m=m: 1.0 / m.sinh(ans))
    defderiv(m.atanh, lambda ans, x: 1.0 / (1.0 - x * x))
    defderiv(m.exp, lambda ans, x: ans)
    defderiv(m.sqrt, lambda ans, x: 0.5 / ans)
    defderiv(m.log10, lambda ans, x: reciprocal_slope(x, math.log(10.0)))  # (not x * log 10: past the float range at 1.7e308)
    defderiv(m.log, lambda ans, x, base=math.e: reciprocal_slope(x, log(base)),
             lambda ans, x, base: -ans / (base * log(base)))


def _atan2_scale(y, x):
    """``x * x + y * y`` for the partials of atan2, or ``hypot(x, y) ** 2`` formed as two
    divisions where the squares leave the float range (there the plain sum is 0 or inf:
    a partial of 0, or NaN, instead of the right one)."""
    s = x * x + y * y
    return s if 1e-290 < s < 1e290 else None


def _atan2_dy(ans, y, x):
    s = _atan2_scale(y, x)
    return x / s if s is not None else x / (h := math.hypot(x, y)) / h


def _atan2_dx(ans, y, x):
    s = _atan2_scale(y, x)
    return -y / s if s is not None else -y / (h := math.hypot(x, y)) / h


defderiv(math.atan2, _atan2_dy, _atan2_dx)
defderiv(math.asinh, lambda ans, x: 1.0 / math.hypot(x, 1.0))  # (x * x + 1 overflows past 1e154)
# 1 / cosh^2, not 1 - tanh^2: tanh rounds to +-1 from |x| > 19 on, where that is 0 (cosh
# overflows past 710, where the slope is below the float range: 0)
defderiv(math.tanh, lambda ans, x: 0.0 if abs(x) > 710.0 else (1.0 / math.cosh(x)) ** 2)
defderiv(math.expm1, lambda ans, x: ans + 1.0)
defderiv(math.log1p, lambda ans, x: 1.0 / (1.0 + x))
defderiv(math.log2, lambda ans, x: reciprocal_slope(x, math.log(2.0)))


def _pow_exponent(ans, a, b):
    """``d math.pow(a, b) / db``: for ``a < 0`` there is none (``math.pow`` is not
    defined around ``b`` in the reals), so NaN, not 0."""
    if a > 0:
        return ans * math.log(a)
    if a == 0:
        return infinite_mixed(0.0, zero_base_exponent(a, b), a)
    return math.nan


def _pow_base(ans, a, b):
    if b == 0 and (type(b) is int or (a == 0 and not varies(b))):
        return 0.0  # (b * a ** -1 otherwise: 0, with the slope 1 / a in b, which a Hessian needs)
    if b < 1 and type(a) is float and a == 0:
        return zero_power_slope(a, b)  # (not 0.0 ** (b - 1), which raises)
    return b * a ** (b - 1)


defderiv(math.pow, _pow_base, _pow_exponent)
def _hypot_slope(i, xs):
    """``xs[i] / hypot(*xs)`` from ``xs`` scaled by the largest magnitude: for subnormal
    operands the result is rounded to a few bits (a slope of 1.5 for ``hypot(t, t, t)`` at
    5e-324, not 1/sqrt(3))."""
    m = max(abs(v) for v in xs)
    if not 0.0 < m < math.inf:  # (0, inf, NaN: the plain formula)
        h = math.hypot(*xs)
        return xs[i] / h if h else 0.0
    return (xs[i] / m) / math.hypot(*[v / m for v in xs])


defderiv(math.hypot, *[lambda ans, *xs, i=i: _hypot_slope(i, xs) for i in range(8)])
defderiv(math.fabs, lambda ans, x: sign(x))
defderiv(math.copysign, lambda ans, x, y: sign(x) * (-1.0 if math.copysign(1.0, ans) < 0 else 1.0), None)
defkink(math.hypot, all_zero)  # (a second derivative at a kink: see kink_rules)
defkink(math.fabs, at_zero)
defkink(math.copysign, at_zero)
defderiv(math.fmod, one, mod_divisor)  # (the quotient truncated, not floored: the same recovery)
defderiv(math.degrees, lambda ans, x: 180.0 / math.pi)
defderiv(math.radians, lambda ans, x: math.pi / 180.0)
defderiv(math.erf, lambda ans, x: 2.0 / _SQRT_PI * math.exp(-x * x))
defderiv(math.erfc, lambda ans, x: -2.0 / _SQRT_PI * math.exp(-x * x))
defderiv(_polygamma, None, lambda ans, n, x: _polygamma(n + 1, x))
defderiv(math.gamma, lambda ans, x: ans * _digamma(x))
defderiv(math.lgamma, lambda ans, x: _digamma(x))
defderiv(math.ldexp, lambda ans, x, i: 2.0 ** i, None)
# at the ends of their domains (0 for sqrt and cbrt, +-1 for asin and acos) the real slopes are
# infinite, as NumPy's rules compute them, where Python's float division raises: infinite,
# an exactly zero tangent or cotangent beside it then contributes nothing (strong_mul)
def _at_end(v, end):
    """Whether plain float ``v`` is ``end`` (0) or, with ``end == 1``, +-1."""
    return type(v) is float and (abs(v) if end else v) == end


defderiv(math.sqrt, lambda ans, x: infinite_slope(1.0, x) if _at_end(ans, 0) else 0.5 / ans)
defderiv(math.asin, lambda ans, x: infinite_slope(1.0, x) if _at_end(x, 1) else 1.0 / math.sqrt(1.0 - x * x))
defderiv(math.acosh, lambda ans, x: infinite_slope(1.0, x) if _at_end(ans, 0) else 1.0 / (math.sqrt(x - 1.0) * math.sqrt(x + 1.0)))
defderiv(math.acos, lambda ans, x: infinite_slope(-1.0, x) if _at_end(x, 1) else -1.0 / math.sqrt(1.0 - x * x))
if hasattr(math, "cbrt"):
    defderiv(math.cbrt, lambda ans, x: infinite_slope(1.0, x) if _at_end(ans, 0) else 1.0 / (3.0 * ans * ans))
if hasattr(math, "exp2"):
    defderiv(math.exp2, lambda ans, x: ans * math.log(2.0))
if hasattr(math, "fma"):  # (3.13+) x * y + z, rounded once
    defderiv(math.fma, lambda ans, x, y, z: y, lambda ans, x, y, z: x, lambda ans, x, y, z: 1.0)
nondifferentiable(math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite,
                  math.isclose, math.factorial, math.gcd, math.comb,
                  math.perm, cmath.isnan, cmath.isinf, cmath.isfinite, cmath.isclose)
# nextafter(x, y) is x moved by a few units in the last place: slope 1 in x (as np.nextafter's);
# y only gives the direction.  ulp(x) is a step function of x (constant between powers of 2),
# as np.spacing
defderiv(math.nextafter, lambda ans, x, y, **kw: 1.0, None)
nondifferentiable(math.ulp)


def _phase_parts(z):
    """``(z / |z|^2).real, .imag`` from ``z`` scaled by its larger part (``|z|^2`` underflows
    below 1e-154 and overflows past 1e154); ``None`` at 0."""
    m = max(abs(z.real), abs(z.imag))
    if not 0.0 < m < math.inf:
        r2 = abs(z) ** 2
        return (z.real / r2, z.imag / r2) if r2 else None
    x, y = z.real / m, z.imag / m
    r2 = x * x + y * y
    return x / r2 / m, y / r2 / m


def _phase_jvp(ts, ans, z):  # arg(z) is not holomorphic: d arg = Im(conj(z) dz) / |z|^2
    p = _phase_parts(z)
    return p[0] * ts[0].imag - p[1] * ts[0].real if p else 0.0 * ts[0].real


def _phase_vjp(g, ans, z):  # gradient of arg(z) = d/dx + i d/dy = i z / |z|^2
    p = _phase_parts(z)
    return (complex(-g * p[1], g * p[0]) if p else 0j,)  # (i z / |z|^2 without complex
    # arithmetic, which turns a slope past the float range into NaN)


defjvp(cmath.phase, _phase_jvp)
defvjp(cmath.phase, _phase_vjp)
defderiv(cmath.rect, lambda ans, r, phi: cmath.exp(1j * phi), lambda ans, r, phi: 1j * ans)


def _prod(xs, *, start=1):
    out = start
    for x in xs:
        out = out * x
    return out


def _dist(p, q):
    """``math.hypot`` of the differences: the same value as ``math.dist`` (one C routine
    computes both), and hypot's rule is scaled against over- and underflow (the sum of
    squares formed here before gave NaN at 5e-324)."""
    return math.hypot(*[a - b for a, b in zip(p, q, strict=True)])


def _modf(x):
    if not math.isfinite(x):
        return (math.copysign(0.0, x) if math.isinf(x) else x, x)
    whole = float(math.trunc(x))
    return x - whole, whole


# functions of iterables: differentiated through a Python equivalent
defimpl(math.prod, _prod)
defimpl(math.dist, _dist)
defimpl(math.modf, _modf)
