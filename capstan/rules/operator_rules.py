"""Rules for Python's operators (``a + b`` arrives as ``operator.add(a, b)``).

They hold for Python numbers and NumPy arrays alike; in-place operators on
immutable numbers are their plain counterparts (mutable arrays are handled by the
differentiation contexts, which keep the tagged object's identity)."""
import cmath
import math
import numbers
import operator

import numpy as np

from ..losses import NoRuleError
from ..nesting import nestlevel, varies

from .kink_rules import at_kink, kink
from .registry import FOLDS, defderiv, defjvp, defvjp, nondifferentiable, unbroadcast


def one(ans, *args):
    return 1.0


def minus_one(ans, *args):
    return -1.0


def log(x):
    """Natural log for Python reals, complex numbers and arrays alike."""
    tx = type(x)
    if tx is float or tx is int:
        return math.log(x) if x > 0 else cmath.log(x)
    if tx is complex:
        return cmath.log(x)
    if tx is not np.ndarray and isinstance(x, numbers.Rational) and not isinstance(x, np.generic):
        return log(float(x))  # (a Fraction: ``Fraction(1, 3) ** x`` is ``float(base) ** x``)
    return np.log(x)


def pow_base(ans, base, exp, mod=None):
    """``exp * base ** (exp - 1)``.  Its shortcuts at ``exp == 2`` and ``exp == 0`` hold
    the value only: where an enclosing differentiation (a Hessian, ``D`` of ``D``) moves
    ``exp``, they would lose its slope (``2 * base`` has slope ``base`` in ``exp``, not
    ``base * (1 + 2 log(base))``), so the formula is used there."""
    te = type(exp)
    if (te is int or te is float) and exp == 2 and not varies(exp):  # a square: base ** 1 times 2
        return exp * base
    if te is not np.ndarray and exp == 0 and (te is int or not varies(exp)):
        return 0.0 * base  # (x ** 0 is constant; moving, exp * base ** -1: the slope 1 / base in exp)
    if (te is float or te is int) and exp < 1 and type(base) is float and base == 0:
        return zero_power_slope(base, exp)  # (0.0 ** -0.5 raises in Python: NumPy's infinity)
    return exp * base ** (exp - 1)


def zero_power_slope(base, exp):
    """``exp * base ** (exp - 1)`` at a zero float ``base`` and ``exp < 1`` (not 0): the
    infinite slope NumPy computes, signed as ``exp`` (times the sign of ``-0.0`` where
    ``exp - 1`` is an odd integer), where Python's power raises ZeroDivisionError."""
    e = exp - 1
    odd = e == int(e) and int(e) % 2 == 1
    sign = math.copysign(1.0, base) if odd else 1.0
    return infinite_slope(exp * sign, base, exp)


def infinite_slope(sign, *values):
    """The infinite slope (signed as ``sign``) of a real function at the end of its domain
    (sqrt at 0...), where Python's float arithmetic raises ZeroDivisionError: an exact
    zero tangent or cotangent beside it then contributes nothing (``strong_mul``), as
    with NumPy's functions.  Inside an enclosing differentiation (a Hessian; ``values``,
    the rule's arguments, varying) the derivative of that slope is undefined: refused."""
    if nestlevel() > 1 or any(varies(v) for v in values):
        raise NoRuleError("capstan: a function's slope is infinite at this point (sqrt, cbrt, arcsin, "
                          "arccos or a fractional power at the end of its domain), so a higher derivative "
                          "through it is undefined here; differentiate at a point off that singularity, "
                          "or write the function without it there (the i == j terms of a distance)")
    return math.copysign(math.inf, sign)


def _fold_pow_base(run, ans, base, exp, mod=None):
    """``pow_base`` of a square (a constant exponent 2, the commonest power): ``2 * base``,
    its value exactly, one routed multiplication instead of a power and a product."""
    if (type(exp) is int or type(exp) is float) and exp == 2 and mod is None:
        return run(operator.mul, exp, base)
    return NotImplemented


FOLDS[pow_base] = _fold_pow_base


def pow_exponent(ans, base, exp, mod=None):
    if type(base) is np.ndarray or type(exp) is np.ndarray:
        mixed = zero_base_exponent(base, exp)
        return infinite_mixed(ans * np.log(np.where(base == 0, 1.0, base)), mixed, base)
    if base != 0:
        return ans * log(base)
    return infinite_mixed(0.0 * ans, zero_base_exponent(base, exp), base)


def zero_base_exponent(base, exp):
    """Refuse the slope of ``base ** exp`` in ``exp`` at ``base = 0`` where it does not
    exist: at ``exp = 0`` the power jumps (``0 ** 0 = 1``, ``0 ** e = 0`` for ``e > 0``).
    Inside an enclosing differentiation, return the mask where ``0 < exp <= 1`` at
    ``base = 0`` (else None): there the slope 0 holds, but its derivative in ``base``, the
    mixed partial ``base ** (exp - 1) * (1 + exp * log(base))``, is infinite (the slope 0
    made it 0 one way and 1 the other); :func:`infinite_mixed` marks it.  (``exp > 1``:
    slope 0 with mixed partial 0, as computed.)"""
    zero = np.asarray(base == 0)
    if not zero.any():
        return None
    e = np.asarray(exp)
    if (zero & (e == 0)).any():
        raise NoRuleError("capstan: a ** b has no derivative in b at a = 0 with b = 0 (the power jumps "
                          "from 1 to 0); differentiate at a point with a != 0, or keep b constant there")
    if nestlevel() > 1 or varies(base) or varies(exp):  # (routed, type() cannot tell them)
        mixed = zero & (e > 0) & (e <= 1)
        if mixed.any():
            return mixed
    return None


def infinite_mixed(slope, mask, base):
    """``slope`` (of ``base ** exp`` in ``exp``), whose derivative in ``base`` is undefined
    (NaN, so refused) where ``mask`` holds and an enclosing differentiation moves ``base``;
    moving ``exp`` alone keeps it: ``d2/db2 0.0 ** b`` is 0, as ``hessian`` gives it."""
    if mask is None:
        return slope
    return kink(slope, mask, base)


def mod_divisor(ans, a, b):
    """``-floor(a / b)``, the quotient ``a % b`` took away, recovered as the integer
    ``(a - ans) / b`` is up to rounding: ``(a - ans) // b`` can be one off (2.0 for
    ``0.4000006104218249 % -1.4900001044317974``, where the quotient is -1)."""
    q = np.rint((a - ans) / b)
    return -q if np.ndim(q) else -float(q)


for add in (operator.add, operator.iadd):
    defderiv(add, one, one)
for sub in (operator.sub, operator.isub):
    defderiv(sub, one, minus_one)
for mul in (operator.mul, operator.imul):
    defderiv(mul, lambda ans, a, b: b, lambda ans, a, b: a)
for div in (operator.truediv, operator.itruediv):
    defderiv(div, lambda ans, a, b: 1.0 / b, lambda ans, a, b: -ans / b)
for pw in (operator.pow, operator.ipow, pow):
    defderiv(pw, pow_base, pow_exponent)
for mod in (operator.mod, operator.imod):
    defderiv(mod, one, mod_divisor)
defderiv(operator.neg, minus_one)
defderiv(operator.pos, one)
nondifferentiable(operator.floordiv, operator.ifloordiv, operator.lt, operator.le, operator.eq,
                  operator.ne, operator.gt, operator.ge, operator.not_, operator.truth,
                  operator.index, operator.and_, operator.or_, operator.xor, operator.invert,
                  operator.lshift, operator.rshift)


def sign(x):
    """Real ``x``'s sign, 0 at 0: the derivative of ``|x|`` everywhere but at 0, where
    capstan takes the subgradient 0 (the midpoint of [-1, 1]) for every absolute value --
    ``abs``, ``math.fabs``, ``np.abs``/``np.fabs``, complex ``abs`` -- and for
    ``copysign``: one convention, whatever the spelling or the type of ``x``."""
    if np.ndim(x):
        return np.sign(x)
    return 1.0 if x > 0 else -1.0 if x < 0 else 0.0 if x == 0 else math.nan


def held(x):
    """``x`` held constant in every enclosing differentiation (``capstan.stop_gradient``),
    for the scale factors of the overflow-safe rules below: they divide by the largest
    magnitude and the quotient does not depend on it, so it must not be differentiated
    either -- its ``max`` has a kink at a tie (``|x| == |y|``, ``z = 1 + 1j``) that made
    third derivatives of ``np.hypot``, ``abs``, ``angle`` and the norms NaN there."""
    from ..markers import stop_gradient

    return stop_gradient(x)


def complex_unit(z):
    """``z / |z|`` (0 at 0) from ``z`` scaled by its larger part: ``|z|`` is subnormal and
    rounded for tiny ``z``, where ``z / |z|`` came out 1 ulp off or infinite."""
    zc = held(z)
    m = np.maximum(np.abs(np.real(zc)), np.abs(np.imag(zc)))
    m = np.where((m > 0) & (m < np.inf), m, 1.0)
    u = np.real(z) / m + 1j * (np.imag(z) / m)  # (not z / m: NumPy's complex division of a
    # subnormal by a subnormal is NaN)
    a = np.abs(u)
    return u / np.where(a == 0, 1.0, a)


def _abs_jvp(ts, ans, x, **kw):
    t = ts[0]
    if np.iscomplexobj(x):  # |z| is not holomorphic: d|z| = Re(conj(z) dz) / |z|
        d = np.real(np.conj(complex_unit(x)) * t)
    else:
        d = sign(x) * t
    return at_kink(d, x == 0, t, x) if varies(x) else d


def _abs_vjp(g, ans, x, **kw):
    if np.iscomplexobj(x):  # gradient of |z| is z / |z|
        d = g * complex_unit(x)
        return (at_kink(d, x == 0, g, x) if varies(x) else d,)
    d = g * sign(x)
    if varies(x):  # (differentiated by an enclosing run: see kink_rules)
        d = at_kink(d, x == 0, g, x)
    return (unbroadcast(d, x) if type(x) is np.ndarray else d,)


for absolute in (abs, operator.abs):
    defjvp(absolute, _abs_jvp, batched=True)
    defvjp(absolute, _abs_vjp)
