"""Rules for NumPy: ufuncs, reductions, products, shape functions and ndarray methods.

One entry per primitive.  Elementwise functions list their partial derivatives
(``defderiv``); the rest have forward and reverse rules side by side.  Forward rules
marked ``batched=True`` also accept tangents with one leading chunk axis (their
``lead``), as chunked Jacobians pass them.  Arguments that are lists of
differentiated values (``np.stack([a, b])``) come with a list of tangents and send
back a list of cotangents.
"""
import math
import operator
import string
from collections import Counter

import numpy as np

from overdub import Tagged
from overdub.tagging import value_of

from ..losses import count_nonzero_c as _count_nonzero
from .operator_rules import _abs_jvp, _abs_vjp, held, infinite_mixed, zero_base_exponent
from ..nesting import varies
from .kink_rules import all_zero, at_kink, at_zero, tie, tied
from .registry import (FOLDS, JVP, SCATTERS, VJP, defderiv, defkink, defimpl, defjvp, no_object_arrays,
                       nondifferentiable, only_first_argument, reciprocal_slope,
                       unbroadcast)
from .registry import defvjp as _defvjp

_LN2 = float(np.log(2.0))
_LN10 = float(np.log(10.0))


# ----------------------------------------------------------------------------- helpers
def _lead(t, x):
    """Number of leading chunk axes tangent ``t`` has beyond argument ``x``."""
    return np.ndim(t) - np.ndim(x)


def _axes(axis, ndim):
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(operator.index(a) % ndim for a in axis))
    return (operator.index(axis) % max(ndim, 1),)


def _shifted(axes, lead):
    return tuple(a + lead for a in axes)


def _conj(x):
    return np.conj(x) if np.iscomplexobj(x) else x


_F64 = np.dtype(np.float64)


def _spread(g, shape):
    """``g`` broadcast to ``shape``: a read-only view, no copy (the backward pass never
    writes into cotangents; the gradients handed to the user are made writable)."""
    g = np.asarray(g)
    if g.dtype.kind not in "fc":
        g = g.astype(np.float64)
    if g.ndim == 0 and math.prod(shape) <= 65536:
        return np.full(shape, g)  # (small: cheaper than broadcast_to's Python wrapper)
    return np.broadcast_to(g, shape)


def _expand(g, axes, keepdims):
    """Reduction result ``g`` with the reduced ``axes`` put back (as size 1)."""
    return g if keepdims or not axes else np.expand_dims(g, axes)


def _zeros(leadshape, x, like=None):
    dtype = np.result_type(x, np.float64) if like is None else np.result_type(like, np.float64)
    return np.zeros(tuple(leadshape) + np.shape(x), dtype=dtype)


def _each(t, lead, fn):
    """``fn`` applied to every chunk slice of ``t`` (or to ``t`` when it has none)."""
    if not lead:
        return fn(t)
    return np.stack([fn(tk) for tk in t])


def _elements(xs, ts):
    """``(values, tangents filled with zeros, chunk shape)`` of a list argument."""
    if isinstance(xs, np.ndarray):
        lead = _lead(ts, xs)
        vals = list(xs)
        tans = [ts[(slice(None),) * lead + (i,)] for i in range(len(vals))]
    else:
        vals, tans = list(xs), list(ts)
    known = [(t, x) for t, x in zip(tans, vals) if t is not None]
    t0, x0 = known[0]
    leadshape = np.shape(t0)[:_lead(t0, x0)]
    like = np.result_type(*[t for t, _ in known])
    return vals, [_zeros(leadshape, x, like) if t is None else t for t, x in zip(tans, vals)], leadshape


def _cast(t, dtype):
    """Tangent ``t`` of a value cast to ``dtype`` (the real part for real targets)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and np.iscomplexobj(t):
        t = np.real(t)
    return np.asarray(t, dtype=dtype)


def _args(names, args, kwargs):
    """Positional ``args`` and ``kwargs`` bound to parameter ``names``."""
    bound = dict(zip(names, args))
    bound.update(kwargs)
    return bound


def defvjp(f, rule):
    """``registry.defvjp``, with the rule's tuple fitted to the positional arguments given
    (rules may list cotangents for parameters left at their defaults)."""
    def fitted(g, ans, *args, **kw):
        out = tuple(rule(g, ans, *args, **kw))
        n = len(args)
        return out[:n] if len(out) >= n else out + (None,) * (n - len(out))

    fitted.__name__ = getattr(rule, "__name__", "vjp")
    return _defvjp(f, fitted)


# ----------------------------------------------------------------------------- ufuncs
def _one(ans, *args, **kw):
    return 1.0


def _minus_one(ans, *args, **kw):
    return -1.0


def _nz(d):
    """``d`` with zeros replaced by ones (a safe denominator)."""
    return np.where(d == 0, 1.0, d)


def _pow_base(ans, a, b, **kw):
    corner = (b == 0) & (a == 0)  # (0 * 0 ** -1 = NaN; elsewhere at b = 0 the formula's 0 keeps
    # its slope 1 / a in b: a mixed second derivative)
    return np.where(corner, 0.0, b * np.power(np.where(corner, 1.0, a), b - 1))


def _pow_exponent(ans, a, b, **kw):
    mixed = zero_base_exponent(a, b)
    return infinite_mixed(ans * np.log(np.where(a == 0, 1.0, a)) * (a != 0), mixed, a)


def _pick_first(ans, a, b, **kw):  # maximum/minimum: ties share the derivative
    return np.where(a == b, 0.5, np.where(a == ans, 1.0, 0.0))


def _pick_second(ans, a, b, **kw):
    return np.where(a == b, 0.5, np.where(b == ans, 1.0, 0.0))


def _quotient(ans, a, b, **kw):  # a - ans == b * q for mod, remainder and fmod
    return -np.rint((a - ans) / b)


def _sinc(ans, x, **kw):
    """``d sinc / dx``: ``(cos(pi x) - sinc(x)) / x``, which cancels near 0 (0 at x = 1e-10
    instead of -pi^2 x / 3): there its series ``-pi^2 x/3 + pi^4 x^3/30 - pi^6 x^5/840``."""
    small = np.abs(x) < 1e-3
    p2 = np.pi * np.pi
    series = x * p2 * (-1.0 / 3.0 + x * x * p2 * (1.0 / 30.0 - x * x * p2 / 840.0))
    return np.where(small, series, (np.cos(np.pi * x) - ans) / np.where(small, 1.0, x))


defderiv(np.sin, lambda ans, x, **kw: np.cos(x))
defderiv(np.cos, lambda ans, x, **kw: -np.sin(x))
defderiv(np.tan, lambda ans, x, **kw: 1.0 + ans * ans)
# (complex: the slopes from the value, cos(arcsin z) for sqrt(1 - z^2)..., on the branch the
# function took: on a cut, np.emath.arccos(1.4), sqrt(1 - z * z) picked the other side)
defderiv(np.arcsin, lambda ans, x, **kw: 1.0 / np.cos(ans) if np.iscomplexobj(ans) else 1.0 / np.sqrt(1.0 - x * x))
defderiv(np.arccos, lambda ans, x, **kw: -1.0 / np.sin(ans) if np.iscomplexobj(ans) else -1.0 / np.sqrt(1.0 - x * x))
defderiv(np.arctan, lambda ans, x, **kw: 1.0 / (1.0 + x * x))
# (over hypot(x, y) twice, not x * x + y * y: the squares leave the float range for |x|, |y|
# below 1e-154 or above 1e154, where the partials came out 0 or NaN)
defderiv(np.arctan2, lambda ans, y, x, **kw: x / (h := np.hypot(x, y)) / h,
         lambda ans, y, x, **kw: -y / (h := np.hypot(x, y)) / h)
defderiv(np.sinh, lambda ans, x, **kw: np.cosh(x))
defderiv(np.cosh, lambda ans, x, **kw: np.sinh(x))
def _sech2(ans, x, **kw):
    """``d tanh / dx``.  ``1 - tanh^2`` where that is exact to 1e-13 (tanh below
    0.9995 in size: the cheap form, from the result); ``1 / cosh^2`` elsewhere, since tanh
    rounds to +-1 from |x| > 19 on, where the cheap form is 0 (cosh past the float range:
    0, below it)."""
    if type(ans) is np.ndarray and ans.dtype == _F64 and type(x) is np.ndarray and x.dtype == _F64:
        d = np.multiply(ans, ans)
        np.subtract(1.0, d, out=d)  # (in place: one temporary, not three)
        near = d < 1e-3  # (1 - tanh^2 carries tanh's rounding, 1e-16 absolute: relative 1e-13 here)
        if near.any():
            d[near] = _sech2(None, x[near])
        return d
    with np.errstate(over="ignore"):
        c = np.cosh(x)
    return 1.0 / c / c


defderiv(np.tanh, _sech2)
defderiv(np.arcsinh, lambda ans, x, **kw: 1.0 / np.cosh(ans) if np.iscomplexobj(ans)
         else 1.0 / np.hypot(x, 1.0))  # (real: x * x + 1 overflows past 1e154)
defderiv(np.arccosh, lambda ans, x, **kw: 1.0 / np.sinh(ans) if np.iscomplexobj(ans)
         else 1.0 / (np.sqrt(x - 1.0) * np.sqrt(x + 1.0)))
defderiv(np.arctanh, lambda ans, x, **kw: 1.0 / (1.0 - x * x))
defderiv(np.exp, lambda ans, x, **kw: ans)
defderiv(np.exp2, lambda ans, x, **kw: ans * _LN2)
defderiv(np.expm1, lambda ans, x, **kw: ans + 1.0)
defderiv(np.log, lambda ans, x, **kw: reciprocal_slope(x))
defderiv(np.log2, lambda ans, x, **kw: reciprocal_slope(x, _LN2))
defderiv(np.log10, lambda ans, x, **kw: reciprocal_slope(x, _LN10))  # (x * ln 10 overflows at 1.7e308)
defderiv(np.log1p, lambda ans, x, **kw: 1.0 / (1.0 + x))
defderiv(np.sqrt, lambda ans, x, **kw: 0.5 / ans)
defderiv(np.cbrt, lambda ans, x, **kw: 1.0 / (3.0 * ans * ans))
defderiv(np.square, lambda ans, x, **kw: 2.0 * x)
defderiv(np.reciprocal, lambda ans, x, **kw: -ans * ans)
defderiv(np.negative, _minus_one)
defderiv(np.positive, _one)
defderiv(np.fabs, lambda ans, x, **kw: np.sign(x))
defderiv(np.add, _one, _one)
defderiv(np.subtract, _one, _minus_one)
defderiv(np.multiply, lambda ans, a, b, **kw: b, lambda ans, a, b, **kw: a)
defderiv(np.divide, lambda ans, a, b, **kw: 1.0 / b, lambda ans, a, b, **kw: -ans / b)
defderiv(np.power, _pow_base, _pow_exponent)
defderiv(np.float_power, _pow_base, _pow_exponent)
def _hypot_slope(a, b):
    """``a / hypot(a, b)`` from ``a`` and ``b`` scaled by the larger magnitude: the result
    ``hypot(a, b)`` is subnormal, or rounded to one of them, for tiny operands (a slope of 2
    for ``hypot(t, t)`` at 5e-324)."""
    m = np.maximum(np.abs(held(a)), np.abs(held(b)))
    m = np.where((m > 0) & (m < np.inf), m, 1.0)
    return (a / m) / _nz(np.hypot(a / m, b / m))


defderiv(np.hypot, lambda ans, a, b, **kw: _hypot_slope(a, b), lambda ans, a, b, **kw: _hypot_slope(b, a))
for _f in (np.maximum, np.minimum, np.fmax, np.fmin):
    defderiv(_f, _pick_first, _pick_second)
defderiv(np.logaddexp, lambda ans, a, b, **kw: np.exp(a - ans), lambda ans, a, b, **kw: np.exp(b - ans))
defderiv(np.logaddexp2, lambda ans, a, b, **kw: np.exp2(a - ans), lambda ans, a, b, **kw: np.exp2(b - ans))
defderiv(np.sinc, _sinc)
for _f in (np.deg2rad, np.radians):
    defderiv(_f, lambda ans, x, **kw: np.pi / 180.0)
for _f in (np.rad2deg, np.degrees):
    defderiv(_f, lambda ans, x, **kw: 180.0 / np.pi)
defderiv(np.copysign, lambda ans, x, y, **kw: np.sign(x) * np.where(np.signbit(ans), -1.0, 1.0), None)
defderiv(np.remainder, _one, _quotient)
defderiv(np.fmod, _one, _quotient)
defderiv(np.ldexp, lambda ans, x, i, **kw: np.exp2(i), None)
defderiv(np.where, None, lambda ans, c, x, y, **kw: np.where(c, 1.0, 0.0),
         lambda ans, c, x, y, **kw: np.where(c, 0.0, 1.0))


def _clip_bounds(lo, hi, kw):
    lo = kw.get("min", lo)
    hi = kw.get("max", hi)
    return -np.inf if lo is None else lo, np.inf if hi is None else hi


def _clip_a(ans, a, a_min=None, a_max=None, **kw):
    lo, hi = _clip_bounds(a_min, a_max, kw)
    return np.where((a >= lo) & (a <= hi), 1.0, 0.0)


def _clip_lo(ans, a, a_min=None, a_max=None, **kw):
    lo, hi = _clip_bounds(a_min, a_max, kw)
    return np.where((a < lo) & (lo <= hi), 1.0, 0.0)


def _clip_hi(ans, a, a_min=None, a_max=None, **kw):
    lo, hi = _clip_bounds(a_min, a_max, kw)
    return np.where(np.maximum(a, lo) > hi, 1.0, 0.0)


defderiv(np.clip, _clip_a, _clip_lo, _clip_hi)


def _clip_kinks(i, ans, a, a_min=None, a_max=None, **kw):
    """``KINKS`` entry of ``np.clip``: ``a`` at a bound."""
    lo, hi = _clip_bounds(a_min, a_max, kw)
    return np.equal(a, lo) | np.equal(a, hi)


# (second derivatives at a kink: see kink_rules)
for _f in (np.maximum, np.minimum, np.fmax, np.fmin):
    defkink(_f, tie)
defkink(np.hypot, all_zero)
defkink(np.fabs, at_zero)
defkink(np.copysign, at_zero)
defkink(np.clip, _clip_kinks)

# |z|, arg z, conj z, Re z, Im z are not holomorphic: explicit rules
defjvp(np.absolute, _abs_jvp, batched=True)
defvjp(np.absolute, _abs_vjp)


def _inverse_conj(z):
    """The real and imaginary parts of ``1 / conj(z)`` (``z / |z|^2``; 0 at 0), from ``z``
    scaled by its larger part: ``|z|^2`` underflows below 1e-154 (a slope of 0 for
    ``angle(z)`` at ``z = 1e-200j``) and overflows past 1e154."""
    zc = held(z)
    m = np.maximum(np.abs(np.real(zc)), np.abs(np.imag(zc)))
    m = np.where((m > 0) & (m < np.inf), m, 1.0)
    x, y = np.real(z) / m, np.imag(z) / m
    r2 = _nz(x * x + y * y)
    return x / r2 / m, y / r2 / m


def _angle_jvp(ts, ans, z, deg=False):
    if not np.iscomplexobj(z):
        return None
    (p, q), t = _inverse_conj(z), ts[0]  # Im(conj(p + iq) t), in real arithmetic (a slope
    d = p * np.imag(t) - q * np.real(t)  # past the float range stays infinite, not NaN)
    return d * (180.0 / np.pi) if deg else d


def _angle_vjp(g, ans, z, deg=False):
    if not np.iscomplexobj(z):
        return (None,)
    g = g * (180.0 / np.pi) if deg else g
    p, q = _inverse_conj(z)
    return (g * 1j * (p + 1j * q),)


defjvp(np.angle, _angle_jvp, batched=True)
defvjp(np.angle, _angle_vjp)


def _sign_jvp(ts, ans, z, **kw):
    """``sign(z) = z / |z| = exp(i angle z)`` turns with ``z``'s angle (complex ``z``; a real
    sign is a step, slope 0): ``i sign(z) d(angle z)``."""
    if not np.iscomplexobj(z):
        return None
    return 1j * ans * _angle_jvp(ts, None, z)


def _sign_vjp(g, ans, z, **kw):
    if not np.iscomplexobj(z):
        return (None,)
    return _angle_vjp(np.imag(np.conj(ans) * g), None, z)


defjvp(np.sign, _sign_jvp, batched=True)
defvjp(np.sign, _sign_vjp)
defjvp(np.conjugate, lambda ts, ans, x, **kw: np.conj(ts[0]), batched=True)
defvjp(np.conjugate, lambda g, ans, x, **kw: (unbroadcast(np.conj(g), x),))
defjvp(np.real, lambda ts, ans, val: np.real(ts[0]), batched=True)
defvjp(np.real, lambda g, ans, val: (np.real(g) + 0j if np.iscomplexobj(val) else unbroadcast(g, val),))
defjvp(np.imag, lambda ts, ans, val: np.imag(ts[0]) if np.iscomplexobj(val) else None, batched=True)
defvjp(np.imag, lambda g, ans, val: (1j * np.real(g) if np.iscomplexobj(val) else None,))

nondifferentiable(
    np.floor, np.ceil, np.trunc, np.rint, np.round, np.around, np.fix, np.isnan, np.isinf,
    np.isfinite, np.isneginf, np.isposinf, np.signbit, np.greater, np.greater_equal, np.less,
    np.less_equal, np.equal, np.not_equal, np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.floor_divide, np.argmax, np.argmin, np.argsort, np.argwhere, np.nonzero,
    np.flatnonzero, np.count_nonzero, np.isclose, np.allclose, np.array_equal, np.searchsorted,
    np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.shape, np.ndim, np.size, np.iscomplexobj,
    np.isrealobj, np.iscomplex, np.isreal, np.digitize, np.any, np.all, np.bitwise_and, np.bitwise_or,
    np.bitwise_xor, np.invert, np.left_shift, np.right_shift, np.gcd, np.lcm, np.spacing,
    np.ndarray.argmax, np.ndarray.argmin, np.ndarray.argsort, np.ndarray.nonzero, np.ndarray.any,
    np.ndarray.all, np.ndarray.round, np.linalg.matrix_rank, _count_nonzero)
# the next float after x towards y moves with x (a step of one ulp: slope 1), not with y
defderiv(np.nextafter, lambda ans, x, y: np.ones_like(ans), None)
# heaviside(x1, x2) is a step in x1, and x2 itself where x1 == 0
defderiv(np.heaviside, None, lambda ans, x1, x2, **kw: np.where(np.equal(x1, 0), 1.0, 0.0))


# ----------------------------------------------------------------------------- reductions
def _listarg(a, t):
    """A list argument of a reduction as one array, with its stacked tangent."""
    if isinstance(a, (list, tuple)) and isinstance(t, list):
        vals, tans, leadshape = _elements(a, t)
        return np.array(vals), np.stack(tans, axis=len(leadshape))
    return a, t


def _listcot(g, a):
    """Cotangent of a list argument of a reduction: one entry per element."""
    if isinstance(a, (list, tuple)):
        return [unbroadcast(g[i], x) for i, x in enumerate(a)]
    return unbroadcast(g, a)


def defreduction(f, names, jvp, vjp, whole=None):
    """Register reduction ``f(a, *names)``: ``jvp(t, ans, a, axes, lead, p)`` and
    ``vjp(g, ans, a, axes, p)`` get the normalized axes and the bound parameters ``p``;
    ``whole(shape, g)``, if given, is ``vjp``'s cotangent for ``f(a)`` of a whole array
    (no other argument) and a real scalar ``g``, without binding parameters."""
    def jvp_rule(ts, ans, a, *args, **kwargs):
        a, t = _listarg(a, ts[0])
        if t is None:
            return None
        p = _args(names, args, kwargs)
        a, where, factor = _plain_reduction(f, p, a)
        if where is not None:
            t = np.where(where, t, 0)
        out = jvp(t, ans, a, _axes(p.get("axis"), np.ndim(a)), _lead(t, a), p)
        return out if factor is None else out * factor

    def vjp_rule(g, ans, a, *args, **kwargs):
        if (whole is not None and not args and not kwargs and type(a) is np.ndarray and a.dtype.kind in "fc"
                and (type(g) is float or type(g) is np.float64) and a.size <= 65536):
            return (whole(a.shape, g),)  # (np.sum(a): the commonest loss)
        p = _args(names, args, kwargs)
        arr = np.array(a) if isinstance(a, (list, tuple)) else a
        arr, where, factor = _plain_reduction(f, p, arr)
        ga = vjp(g, ans, arr, _axes(p.get("axis"), np.ndim(arr)), p)
        if where is not None:
            ga = np.where(where, ga, 0)
        if factor is not None:
            ga = ga * factor
        return (_listcot(ga, a),) + (None,) * len(args)

    defjvp(f, jvp_rule, batched=True)
    defvjp(f, vjp_rule)
    only_first_argument(f)  # (np.sum(a, None, None, None, False, x): initial's derivative is not modelled)


#: reductions whose ``where=`` and ``initial=`` the rules model: the neutral element that a
#: masked-out element amounts to, and whether ``initial`` scales the result (else adds to it)
_MASKABLE = {np.sum: (0, False), np.prod: (1, True), np.ndarray.sum: (0, False), np.ndarray.prod: (1, True)}


def _plain_reduction(f, p, a):
    """``(a, mask, factor)`` for reduction ``f`` with parameters ``p`` (which lose ``where``
    and ``initial``): for ``sum``/``prod``, a masked-out element is the neutral element
    (its derivative 0: ``mask`` is applied to the tangent or cotangent), and a product's
    ``initial`` is a constant ``factor``; other reductions refuse them (rather than
    ignore them)."""
    for name in [k for k, v in p.items() if v is np._NoValue]:  # (NumPy's "not given")
        del p[name]
    where = p.pop("where", True)
    initial = p.pop("initial", None)
    if where is True and (initial is None or f in _EXTREMES):  # (max(a, initial=c): the weights
        return a, None, None  # of a's elements equal to the result, none when c is the larger)
    if f not in _MASKABLE:
        raise TypeError("capstan: %s(..., where=/initial=) has no derivative rule; multiply by "
                        "the mask (or add the initial value) instead" % getattr(f, "__name__", f))
    neutral, scales = _MASKABLE[f]
    mask = None if where is True else np.asarray(where)
    if mask is not None:
        a = np.where(mask, a, neutral)
    return a, mask, initial if scales and initial is not None else None


def _count(a, axes):
    return int(np.prod([np.shape(a)[i] for i in axes]))


def _sum_jvp(t, ans, a, axes, lead, p):
    if type(t) is np.ndarray:  # (what np.sum calls for an array, without its Python wrapper)
        return np.add.reduce(t, axis=_shifted(axes, lead), dtype=p.get("dtype"), keepdims=p.get("keepdims", False))
    return np.sum(t, axis=_shifted(axes, lead), dtype=p.get("dtype"), keepdims=p.get("keepdims", False))


def _sum_vjp(g, ans, a, axes, p):
    if np.ndim(g) == 0:
        return _spread(g, np.shape(a))
    return _spread(_expand(g, axes, p.get("keepdims", False)), np.shape(a))


def _mean_jvp(t, ans, a, axes, lead, p):
    return np.mean(t, axis=_shifted(axes, lead), dtype=p.get("dtype"), keepdims=p.get("keepdims", False))


def _mean_vjp(g, ans, a, axes, p):
    return _spread(_expand(g, axes, p.get("keepdims", False)) / _count(a, axes), np.shape(a))


def _prod_others(a, axes):
    """For every element, the product of the others in its reduction group (zero-safe)."""
    a = np.asarray(a)
    if a.size == 0:  # (np.prod of an empty array: no element, no partial)
        return np.zeros_like(a)
    rest = [i for i in range(a.ndim) if i not in axes]
    perm = rest + list(axes)
    m = np.transpose(a, perm)
    shape = m.shape
    m = m.reshape(shape[:len(rest)] + (-1,))
    ones = np.ones(m.shape[:-1] + (1,), dtype=m.dtype)
    left = np.cumprod(np.concatenate([ones, m[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, np.flip(m, -1)[..., :-1]], axis=-1), axis=-1)
    return np.transpose((left * np.flip(right, -1)).reshape(shape), np.argsort(perm))


def _prod_jvp(t, ans, a, axes, lead, p):
    return np.sum(t * _prod_others(a, axes), axis=_shifted(axes, lead), keepdims=p.get("keepdims", False))


def _prod_vjp(g, ans, a, axes, p):
    return _expand(g, axes, p.get("keepdims", False)) * _conj(_prod_others(a, axes))


def _extreme_weights(ans, a, axes, keepdims):
    """Where ``a`` attains its max/min, shared equally among ties (nowhere, where an
    ``initial`` value is the result)."""
    mask = np.asarray(a) == _expand(ans, axes, keepdims)
    return mask / np.maximum(np.sum(mask, axis=axes, keepdims=True), 1)


def _extreme_ties(ans, a, axes, keepdims):
    """The elements where ``a`` attains its max/min with another one: a kink."""
    mask = np.asarray(a) == _expand(ans, axes, keepdims)
    return mask & (np.sum(mask, axis=axes, keepdims=True) > 1)


def _extreme_jvp(t, ans, a, axes, lead, p):
    keep = p.get("keepdims", False)
    d = t * _extreme_weights(ans, a, axes, keep)
    if varies(a):  # (ties: a kink, see kink_rules)
        d = at_kink(d, _extreme_ties(ans, a, axes, keep), None, a, aligned=False)
    return np.sum(d, axis=_shifted(axes, lead), keepdims=keep)


def _extreme_vjp(g, ans, a, axes, p):
    keep = p.get("keepdims", False)
    if varies(a):  # (ties: a kink, see kink_rules)
        g = _expand(g, axes, keep)
        return at_kink(g * _extreme_weights(ans, a, axes, keep), _extreme_ties(ans, a, axes, keep), g, a,
                       aligned=False)
    if len(axes) == np.ndim(a) and np.ndim(g) == 0:  # the whole array: write the few maxima only
        where = np.flatnonzero(np.asarray(a) == ans)
        out = np.zeros(np.size(a), dtype=np.result_type(a, np.float64))
        out[where] = g / max(len(where), 1)
        return out.reshape(np.shape(a))
    return _expand(g, axes, keep) * _extreme_weights(ans, a, axes, keep)


def _var_parts(a, axes, p):
    centred = a - np.mean(a, axis=axes, keepdims=True)
    ddof = p["correction"] if p.get("correction") is not None else p.get("ddof", 0)  # (NumPy 2's name)
    return centred, _count(a, axes) - ddof


def _var_jvp(t, ans, a, axes, lead, p):
    centred, n = _var_parts(a, axes, p)
    d = np.real(_conj(centred) * t)
    return 2.0 * np.sum(d, axis=_shifted(axes, lead), keepdims=p.get("keepdims", False)) / n


def _var_vjp(g, ans, a, axes, p):
    centred, n = _var_parts(a, axes, p)
    return _expand(np.real(g), axes, p.get("keepdims", False)) * (2.0 / n) * centred


def _std_jvp(t, ans, a, axes, lead, p):
    return _var_jvp(t, ans, a, axes, lead, p) / (2.0 * _nz(ans))


def _std_vjp(g, ans, a, axes, p):
    return _var_vjp(g / (2.0 * _nz(ans)), ans, a, axes, p)


_SUM = ("axis", "dtype", "out", "keepdims")
_MAX = ("axis", "out", "keepdims")
_VAR = ("axis", "dtype", "out", "ddof", "keepdims")
defreduction(np.sum, _SUM, _sum_jvp, _sum_vjp, whole=np.full)  # (what _spread makes of a scalar)


def _fold_sum_jvp(run, ts, ans, a, *args, **kwargs):
    """The sum rule's tangent, for a plain array of an enclosing differentiation's values
    summed without ``where=``/``initial=``: one routed ``np.sum`` of the tangent (the
    rule's own call), its axes worked out on the plain values."""
    t = ts[0]
    if t is None or type(_plain(a)) is not np.ndarray or any(type(v) is Tagged for v in args) or any(
            type(v) is Tagged for v in kwargs.values()):
        return NotImplemented
    p = _args(_SUM, args, kwargs)
    if any(p.get(k, np._NoValue) is not np._NoValue for k in ("where", "initial", "out")):
        return NotImplemented
    ndim = np.ndim(_plain(a))
    try:
        axes = _axes(p.get("axis"), ndim)
    except TypeError:
        return NotImplemented
    lead = np.ndim(_plain(t)) - ndim
    return run(np.sum, t, axis=_shifted(axes, lead), dtype=p.get("dtype"), keepdims=p.get("keepdims", False))


def _plain(x):
    while type(x) is Tagged:
        x = value_of(x)
    return x


FOLDS[JVP[np.sum][0]] = _fold_sum_jvp
defreduction(np.mean, _SUM, _mean_jvp, _mean_vjp)
defreduction(np.prod, _SUM, _prod_jvp, _prod_vjp)
def _extreme_scatter(g, ans, a, *args, **kwargs):
    """``_extreme_vjp``'s cotangent as ``(index, values)`` for the extreme of a whole float
    array at a real scalar cotangent: its few positions (ties share ``g`` equally)."""
    if args or kwargs or a.dtype.kind != "f" or not (type(g) is float or type(g) is np.float64):
        return None
    where = np.nonzero(a == ans)
    return where, g / max(len(where[0]), 1)


_EXTREMES = (np.max, np.min, np.amax, np.amin)
for _f in _EXTREMES:
    defreduction(_f, _MAX, _extreme_jvp, _extreme_vjp)
    SCATTERS[_f] = (VJP[_f], _extreme_scatter)
defreduction(np.var, _VAR, _var_jvp, _var_vjp)
defreduction(np.std, _VAR, _std_jvp, _std_vjp)
defimpl(np.nansum, lambda a, *args, **kw: np.sum(np.where(np.isnan(a), 0.0, a), *args, **kw))
def _nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    total = np.sum(np.where(np.isnan(a), 0.0, a), axis, dtype, None, keepdims, where=where)
    count = np.sum(~np.isnan(a), axis=axis, keepdims=keepdims, where=where)
    return total / np.asarray(count, dtype=np.finfo(np.result_type(total)).dtype)  # (float32 in, float32 out)


defimpl(np.nanmean, _nanmean)


def _flat(t, lead):
    return np.reshape(t, np.shape(t)[:lead] + (-1,))


def _rcumsum(g, axis):
    return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)


def _cumsum_jvp(ts, ans, a, axis=None, *args, **kw):
    t = ts[0]
    lead = _lead(t, a)
    if axis is None:
        return np.cumsum(_flat(t, lead), axis=lead)
    return np.cumsum(t, axis=operator.index(axis) % np.ndim(a) + lead)


def _cumsum_vjp(g, ans, a, axis=None, *args, **kw):
    if axis is None:
        return (unbroadcast(np.reshape(_rcumsum(g, 0), np.shape(a)), a),) + (None,) * (1 + len(args))
    return (unbroadcast(_rcumsum(g, axis), a),) + (None,) * (1 + len(args))


def _cumprod_partials(a):
    """``M[..., j, k]``: the derivative of ``cumprod(a)[k]`` by ``a[j]`` along the last
    axis of ``a`` (the product of ``a[:k+1]`` without ``a[j]``): the zero-safe form."""
    n = np.shape(a)[-1]
    others = np.cumprod(np.where(np.eye(n, dtype=bool), 1.0, np.expand_dims(a, -2)), axis=-1)
    return np.where(np.tri(n, dtype=bool).T, others, 0.0)


def _cumprod_jvp(ts, ans, a, axis=None, *args, **kw):
    t = ts[0]
    lead = _lead(t, a)
    if axis is None:
        a, t, axis = np.ravel(a), _flat(t, lead), 0
    axis = operator.index(axis) % np.ndim(a)
    if np.all(a != 0):
        return ans * np.cumsum(t / a, axis=axis + lead)
    m = _cumprod_partials(np.moveaxis(a, axis, -1))
    return np.moveaxis(np.einsum("...jk,...j->...k", m, np.moveaxis(t, axis + lead, -1)), -1, axis + lead)


def _cumprod_vjp(g, ans, a, axis=None, *args, **kw):
    arr, ax = (np.ravel(a), 0) if axis is None else (a, operator.index(axis) % np.ndim(a))
    if np.all(arr != 0):
        ga = _rcumsum(np.reshape(g, np.shape(arr)) * _conj(np.reshape(ans, np.shape(arr))), ax) / _conj(arr)
    else:
        m = _conj(_cumprod_partials(np.moveaxis(arr, ax, -1)))
        gm = np.moveaxis(np.reshape(g, np.shape(arr)), ax, -1)
        ga = np.moveaxis(np.einsum("...jk,...k->...j", m, gm), -1, ax)
    return (unbroadcast(np.reshape(ga, np.shape(a)), a),) + (None,) * (1 + len(args))


defjvp(np.cumsum, _cumsum_jvp, batched=True)
defvjp(np.cumsum, _cumsum_vjp)
defjvp(np.cumprod, _cumprod_jvp, batched=True)
defvjp(np.cumprod, _cumprod_vjp)


# ----------------------------------------------------------------------------- products
def _tensordot_axes(axes, na, nb):
    if isinstance(axes, (int, np.integer)):
        return list(range(na - axes, na)), list(range(axes))
    xa, xb = axes
    xa = [xa] if isinstance(xa, (int, np.integer)) else list(xa)
    xb = [xb] if isinstance(xb, (int, np.integer)) else list(xb)
    return [i % na for i in xa], [i % nb for i in xb]


def _contract_jvp(ta, tb, a, b, xa, xb):
    """Tangent of ``tensordot(a, b, (xa, xb))`` (chunk axes allowed)."""
    na, nb = np.ndim(a), np.ndim(b)
    out = None
    if ta is not None:
        out = np.tensordot(ta, b, ([i - na for i in xa], xb))
    if tb is not None:
        d = np.tensordot(a, tb, (xa, [i - nb for i in xb]))
        lead = _lead(tb, b)
        if lead:
            free = na - len(xa)
            d = np.moveaxis(d, list(range(free, free + lead)), list(range(lead)))
        out = d if out is None else out + d
    return out


def _contract_vjp(g, a, b, xa, xb):
    """Cotangents of ``a`` and ``b`` for ``tensordot(a, b, (xa, xb))``."""
    na, nb = np.ndim(a), np.ndim(b)
    fa = [i for i in range(na) if i not in xa]
    fb = [i for i in range(nb) if i not in xb]
    nfa = len(fa)
    order_b = np.argsort(xb)
    order_a = np.argsort(xa)
    ga = np.tensordot(g, _conj(b), (list(range(nfa, np.ndim(g))), fb))
    ga = np.transpose(ga, np.argsort(fa + [xa[k] for k in order_b]))
    gb = np.tensordot(_conj(a), g, (fa, list(range(nfa))))
    gb = np.transpose(gb, np.argsort([xb[k] for k in order_a] + fb))
    return unbroadcast(ga, a), unbroadcast(gb, b)


def _scaled(t, x, other):
    """Chunked tangent ``t`` of ``x`` times ``other`` (for products with a scalar)."""
    lead = _lead(t, x)
    if lead:
        t = np.reshape(t, np.shape(t)[:lead] + (1,) * np.ndim(other) + np.shape(x))
    return t * other


def _scalar_product_jvp(ts, a, b):
    out = None
    if ts[0] is not None:
        out = _scaled(ts[0], a, b)
    if ts[1] is not None:
        d = _scaled(ts[1], b, a)
        out = d if out is None else out + d
    return out


def _scalar_product_vjp(g, a, b):
    return unbroadcast(g * _conj(b), a), unbroadcast(g * _conj(a), b)


def _tensordot_jvp(ts, ans, a, b, axes=2):
    xa, xb = _tensordot_axes(axes, np.ndim(a), np.ndim(b))
    return _contract_jvp(ts[0], ts[1], a, b, xa, xb)


def _tensordot_vjp(g, ans, a, b, axes=2):
    return _contract_vjp(g, a, b, *_tensordot_axes(axes, np.ndim(a), np.ndim(b))) + (None,)


def _dot_axes(a, b):
    return [np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)]


def _inner_axes(a, b):
    return [np.ndim(a) - 1], [np.ndim(b) - 1]


def _defcontraction(f, axes_of):
    """``f(a, b)``: a tensordot over ``axes_of(a, b)``, or a product when one is a scalar."""
    def jvp(ts, ans, a, b, *args, **kw):
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            return _scalar_product_jvp(ts, a, b)
        return _contract_jvp(ts[0], ts[1], a, b, *axes_of(a, b))

    def vjp(g, ans, a, b, *args, **kw):
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            return _scalar_product_vjp(g, a, b) + (None,) * len(args)
        return _contract_vjp(g, a, b, *axes_of(a, b)) + (None,) * len(args)

    defjvp(f, jvp, batched=True)
    defvjp(f, vjp)


defjvp(np.tensordot, _tensordot_jvp, batched=True)
defvjp(np.tensordot, _tensordot_vjp)
_defcontraction(np.dot, _dot_axes)
_defcontraction(np.inner, _inner_axes)
defimpl(np.ndarray.dot, lambda a, b, out=None: np.dot(a, b))
defimpl(np.vdot, lambda a, b: np.dot(np.ravel(np.conj(a)), np.ravel(b)))
defimpl(np.outer, lambda a, b, out=None: np.reshape(a, (-1, 1)) * np.reshape(b, (1, -1)))


def _matmul_part(t, lead, a, b, left):
    """``t @ b`` (``left``) or ``a @ t`` for tangent ``t`` with ``lead`` chunk axes."""
    av, bv = np.ndim(a) == 1, np.ndim(b) == 1
    if lead == 1 and not left and bv and np.ndim(a) == 2:  # matrix @ vector, a block of tangents:
        return np.matmul(t, np.swapaxes(a, 0, 1))  # one matrix product, not one per tangent
    if lead == 1 and left and av and np.ndim(b) == 2:
        return np.matmul(t, b)
    x, y = (t, b) if left else (a, t)
    if av:
        x = np.expand_dims(x, -2)
    if bv:
        y = np.expand_dims(y, -1)
    if lead:
        nd = max(np.ndim(a) + av, np.ndim(b) + bv)
        if left:
            x = np.reshape(x, np.shape(x)[:lead] + (1,) * (nd - np.ndim(x) + lead) + np.shape(x)[lead:])
        else:
            y = np.reshape(y, np.shape(y)[:lead] + (1,) * (nd - np.ndim(y) + lead) + np.shape(y)[lead:])
    r = np.matmul(x, y)
    if av and bv:
        return r[..., 0, 0]
    if bv:
        return r[..., 0]
    if av:
        return r[..., 0, :]
    return r


def _matmul_jvp(ts, ans, a, b, **kw):
    out = None
    if ts[0] is not None:
        out = _matmul_part(ts[0], _lead(ts[0], a), a, b, True)
    if ts[1] is not None:
        d = _matmul_part(ts[1], _lead(ts[1], b), a, b, False)
        out = d if out is None else out + d
    return out


def _real_matrices(g, a, b):
    """Whether ``a @ b`` multiplied two float64 matrices (the common case, whose cotangents
    need no unit axes, conjugates or sums over broadcast axes)."""
    return (type(a) is np.ndarray and type(b) is np.ndarray and type(g) is np.ndarray
            and a.ndim == 2 and b.ndim == 2 and a.dtype == _F64 and b.dtype == _F64 and g.dtype == _F64)


def _matmul_operands(g, a, b):
    """``a``, ``b`` and ``g`` as stacks of matrices (vectors get a unit axis)."""
    av, bv = np.ndim(a) == 1, np.ndim(b) == 1
    a2 = np.expand_dims(a, 0) if av else a
    b2 = np.expand_dims(b, -1) if bv else b
    if bv:
        g = np.expand_dims(g, -1)
    if av:
        g = np.expand_dims(g, -2)
    return av, bv, a2, b2, g


def _matmul_vjp_a(g, ans, a, b, **kw):
    if _real_matrices(g, a, b):
        return np.matmul(g, b.T)
    av, bv, a2, b2, g2 = _matmul_operands(g, a, b)
    ga = unbroadcast(np.matmul(g2, np.swapaxes(_conj(b2), -1, -2)), a2)
    return ga[0] if av else ga


def _matmul_vjp_b(g, ans, a, b, **kw):
    if _real_matrices(g, a, b):
        return np.matmul(a.T, g)
    av, bv, a2, b2, g2 = _matmul_operands(g, a, b)
    gb = unbroadcast(np.matmul(np.swapaxes(_conj(a2), -1, -2), g2), b2)
    return gb[..., 0] if bv else gb


def _matmul_vjp(g, ans, a, b, **kw):
    return _matmul_vjp_a(g, ans, a, b), _matmul_vjp_b(g, ans, a, b)


for _f in (np.matmul, operator.matmul, operator.imatmul):
    defjvp(_f, _matmul_jvp, batched=True)
    _defvjp(_f, _matmul_vjp_a, _matmul_vjp_b)  # one rule per operand: constants cost nothing


def _einsum_parse(subscripts, operands):
    """``(input terms, output term, unused letters)`` with ellipses spelled out."""
    s = subscripts.replace(" ", "")
    ins, out = s.split("->") if "->" in s else (s, None)
    ins = ins.split(",")
    free = [c for c in string.ascii_letters if c not in s]
    ell_nd = [np.ndim(op) - len(term.replace("...", "")) if "..." in term else 0
              for term, op in zip(ins, operands)]
    n_ell = max(ell_nd, default=0)
    ell, free = "".join(free[:n_ell]), free[n_ell:]
    ins = [term.replace("...", ell[n_ell - e:]) for term, e in zip(ins, ell_nd)]
    if out is None:
        counts = Counter("".join(ins))
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return ins, out, free


def _einsum_sublists(args):
    """NumPy's other calling form ``einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])``
    as ``(subscripts string, operands, positions of the operands among args)``."""
    def letters(sub):
        return "".join("..." if k is Ellipsis else string.ascii_letters[operator.index(k)] for k in sub)

    n = len(args) // 2
    terms = [letters(args[2 * i + 1]) for i in range(n)]
    spec = ",".join(terms) + ("->" + letters(args[-1]) if len(args) % 2 else "")
    return spec, args[0:2 * n:2], tuple(range(0, 2 * n, 2))


def _einsum_kw(kw):
    """The keywords for the rules' own einsums: no ``out``, and no contraction path given
    as a list (``np.einsum_path``'s), which is only valid for the user's operands (the
    reverse rule contracts other operands: NumPy raised RuntimeError); greedy instead."""
    kw = {k: v for k, v in kw.items() if k != "out"}
    if not isinstance(kw.get("optimize", False), (bool, str)):
        kw["optimize"] = "greedy"
    return kw


def _einsum_jvp(ts, ans, subscripts, *ops, **kw):
    if not isinstance(subscripts, str):
        spec, operands, where = _einsum_sublists((subscripts,) + ops)
        return _einsum_jvp((None,) + tuple(ts[p] if p < len(ts) else None for p in where), ans, spec,
                           *operands, **kw)
    ins, out, free = _einsum_parse(subscripts, ops)
    total = None
    for i, t in enumerate(ts[1:]):
        if t is None:
            continue
        lead = "".join(free[:_lead(t, ops[i])])
        spec = ",".join(lead + term if j == i else term for j, term in enumerate(ins)) + "->" + lead + out
        d = np.einsum(spec, *[t if j == i else op for j, op in enumerate(ops)], **_einsum_kw(kw))
        total = d if total is None else total + d
    return total


def _einsum_vjp(g, ans, subscripts, *ops, **kw):
    if not isinstance(subscripts, str):
        spec, operands, where = _einsum_sublists((subscripts,) + ops)
        each = _einsum_vjp(g, ans, spec, *operands, **kw)[1:]
        result = [None] * (1 + len(ops))
        for p, gi in zip(where, each):
            result[p] = gi
        return tuple(result)
    ins, out, free = _einsum_parse(subscripts, ops)
    sizes = {}
    for term, op in zip(ins, ops):
        for c, n in zip(term, np.shape(op)):
            sizes[c] = max(sizes.get(c, 1), n)
    result = [None]
    for i, (term, op) in enumerate(zip(ins, ops)):
        others = [(ins[j], _conj(ops[j])) for j in range(len(ops)) if j != i]
        extra, target, seen, spare = [], "", set(), list(free)
        for c in term:
            if c in seen:  # repeated subscript (a diagonal): fresh letter tied by an identity
                f = spare.pop()
                target += f
                extra.append((c + f, np.eye(sizes[c])))
            else:
                seen.add(c)
                target += c
        present = set(out).union(*[set(s) for s, _ in others])
        extra += [(c, np.ones(sizes[c])) for c in sorted(seen - present)]
        terms = [out] + [s for s, _ in others] + [s for s, _ in extra]
        gi = np.einsum(",".join(terms) + "->" + target, g, *[o for _, o in others], *[o for _, o in extra],
                       **_einsum_kw(kw))
        result.append(unbroadcast(gi, op))
    return tuple(result)


defjvp(np.einsum, _einsum_jvp, batched=True)
defvjp(np.einsum, _einsum_vjp)


def _diag_index(n, m, offset):
    if offset >= 0:
        rows = np.arange(max(0, min(n, m - offset)))
        return rows, rows + offset
    cols = np.arange(max(0, min(n + offset, m)))
    return cols - offset, cols


def _embed_diagonal(d, shape2, offset):
    """Array of trailing shape ``shape2`` with ``d``'s last axis on diagonal ``offset``."""
    z = np.zeros(np.shape(d)[:-1] + tuple(shape2), dtype=np.result_type(d, np.float64))
    rows, cols = _diag_index(shape2[0], shape2[1], offset)
    z[..., rows, cols] = d
    return z


def _diagonal_jvp(ts, ans, a, offset=0, axis1=0, axis2=1):
    lead, nd = _lead(ts[0], a), np.ndim(a)
    return np.diagonal(ts[0], offset, axis1 % nd + lead, axis2 % nd + lead)


def _diagonal_vjp(g, ans, a, offset=0, axis1=0, axis2=1):
    nd, shape = np.ndim(a), np.shape(a)
    axis1, axis2 = axis1 % nd, axis2 % nd
    z = _embed_diagonal(g, (shape[axis1], shape[axis2]), offset)
    return (unbroadcast(np.moveaxis(z, [-2, -1], [axis1, axis2]), a), None, None, None)


def _trace_jvp(ts, ans, a, offset=0, axis1=0, axis2=1, *args, **kw):
    lead, nd = _lead(ts[0], a), np.ndim(a)
    return np.trace(ts[0], offset, axis1 % nd + lead, axis2 % nd + lead)


def _trace_vjp(g, ans, a, offset=0, axis1=0, axis2=1, *args, **kw):
    nd, shape = np.ndim(a), np.shape(a)
    axis1, axis2 = axis1 % nd, axis2 % nd
    n = len(_diag_index(shape[axis1], shape[axis2], offset)[0])
    z = _embed_diagonal(np.expand_dims(g, -1) * np.ones(n), (shape[axis1], shape[axis2]), offset)
    return (unbroadcast(np.moveaxis(z, [-2, -1], [axis1, axis2]), a),) + (None,) * (3 + len(args))


def _diag_jvp(ts, ans, v, k=0):
    t, lead = ts[0], _lead(ts[0], v)
    if np.ndim(v) == 1:
        return _embed_diagonal(t, np.shape(ans), k)
    return np.diagonal(t, k, lead, lead + 1)


def _diag_vjp(g, ans, v, k=0):
    if np.ndim(v) == 1:
        return (unbroadcast(np.diagonal(g, k).copy(), v), None)
    return (unbroadcast(_embed_diagonal(g, np.shape(v), k), v), None)


for _f in (np.tril, np.triu):
    defjvp(_f, lambda ts, ans, m, k=0, _f=_f: _f(ts[0], k), batched=True)
    defvjp(_f, lambda g, ans, m, k=0, _f=_f: (_f(g, k), None))
defjvp(np.diagonal, _diagonal_jvp, batched=True)
defvjp(np.diagonal, _diagonal_vjp)
defjvp(np.trace, _trace_jvp, batched=True)
defvjp(np.trace, _trace_vjp)
defjvp(np.diag, _diag_jvp, batched=True)
defvjp(np.diag, _diag_vjp)


# ----------------------------------------------------------------------------- selection
def _scatter(g, shape, dtype, index):
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeated indices add up): the
    transpose of indexing, a primitive of its own so that it is differentiable too."""
    z = np.zeros(shape, dtype=np.result_type(dtype, np.float64))
    if z.dtype.kind != "c" and np.iscomplexobj(g):
        g = np.real(g)
    if _no_repeats(index):
        z[index] += g  # (a basic index repeats no position: far cheaper than ufunc.at)
    else:
        np.add.at(z, index, g)
    return z


def _no_repeats(index):
    """Whether ``index`` is basic (ints, slices, None, Ellipsis), selecting each element once."""
    if type(index) is not tuple:
        index = (index,)
    return all(type(e) is int or type(e) is slice or e is None or e is Ellipsis
               or isinstance(e, np.integer) for e in index)


def _scatter_jvp(ts, ans, g, shape, dtype, index):
    lead = np.shape(ts[0])[:_lead(ts[0], g)]
    prefix = (slice(None),) * len(lead)
    return _scatter(ts[0], lead + tuple(shape), dtype, prefix + (index if type(index) is tuple else (index,)))


defjvp(_scatter, _scatter_jvp, batched=True)
defvjp(_scatter, lambda gg, ans, g, shape, dtype, index: (unbroadcast(gg[index], g), None, None, None))


def _getitem_vjp(g, ans, x, index):
    """Cotangent of ``x[index]``: ``g`` scattered into zeros."""
    if isinstance(x, (list, tuple)):
        out = [None] * len(x)
        if isinstance(index, slice):
            for i, gi in zip(range(*index.indices(len(x))), g):
                out[i] = gi
        else:
            out[index] = g
        return (out, None)
    z = _scatter(g, np.shape(x), np.result_type(x), index)
    return (z if isinstance(x, np.ndarray) else z[()], None)


defvjp(operator.getitem, _getitem_vjp)


def _take_index(indices, axis, a, mode):
    n = np.size(a) if axis is None else np.shape(a)[axis]
    if mode == "wrap":
        indices = np.mod(indices, n)
    elif mode == "clip":
        indices = np.clip(indices, 0, n - 1)
    return indices


def _take_jvp(ts, ans, a, indices, axis=None, out=None, mode="raise"):
    t, lead = ts[0], _lead(ts[0], a)
    if axis is None:
        return np.take(_flat(t, lead), indices, axis=lead, mode=mode)
    return np.take(t, indices, axis=axis % np.ndim(a) + lead, mode=mode)


def _take_vjp(g, ans, a, indices, axis=None, out=None, mode="raise"):
    dtype = np.result_type(a)
    if axis is None:
        z = np.reshape(_scatter(g, (np.size(a),), dtype, _take_index(indices, None, a, mode)), np.shape(a))
    else:
        axis = axis % np.ndim(a)
        z = _scatter(g, np.shape(a), dtype, (slice(None),) * axis + (_take_index(indices, axis, a, mode),))
    return (z, None)


defjvp(np.take, _take_jvp, batched=True)
defvjp(np.take, _take_vjp)


def _sort_index(a, axis, kth=None):
    """Fancy index that sorts ``a`` along ``axis``: ``a[index] == np.sort(a, axis)`` (or
    partitions it around ``kth``: ``a[index] == np.partition(a, kth, axis)``)."""
    order = np.argsort(a, axis=axis, kind="stable") if kth is None else np.argpartition(a, kth, axis=axis)
    index = list(np.indices(order.shape, sparse=True))
    index[axis] = order
    return tuple(index)


def _sort_jvp(ts, ans, a, axis=-1, *args, **kw):
    t, lead = ts[0], _lead(ts[0], a)
    if axis is None:
        a, t = np.ravel(a), _flat(t, lead)
        axis = 0
    axis = axis % np.ndim(a)
    d = t[(slice(None),) * lead + _sort_index(a, axis)]
    return at_kink(d, tied(ans, axis), None, a, aligned=False) if varies(a) else d  # (ties: a kink, see kink_rules)


def _sort_vjp(g, ans, a, axis=-1, *args, **kw):
    arr = np.ravel(a) if axis is None else np.asarray(a)
    axis = 0 if axis is None else axis % arr.ndim
    z = _scatter(g, arr.shape, arr.dtype, _sort_index(arr, axis))
    if varies(a):  # (ties: a kink, see kink_rules)
        z = at_kink(z, tied(arr, axis), z, arr, aligned=False)
    return (unbroadcast(np.reshape(z, np.shape(a)), a),) + (None,) * (1 + len(args))


defjvp(np.sort, _sort_jvp, batched=True)
defvjp(np.sort, _sort_vjp)


def _partition_jvp(ts, ans, a, kth, axis=-1, *args, **kw):
    t, lead = ts[0], _lead(ts[0], a)
    if axis is None:
        a, t = np.ravel(a), _flat(t, lead)
        axis = 0
    return t[(slice(None),) * lead + _sort_index(a, axis % np.ndim(a), kth)]


def _partition_vjp(g, ans, a, kth, axis=-1, *args, **kw):
    arr = np.ravel(a) if axis is None else np.asarray(a)
    index = _sort_index(arr, 0 if axis is None else axis % arr.ndim, kth)
    z = _scatter(g, arr.shape, arr.dtype, index)
    return (unbroadcast(np.reshape(z, np.shape(a)), a),) + (None,) * (1 + len(args))


defjvp(np.partition, _partition_jvp, batched=True)
defvjp(np.partition, _partition_vjp)


def _sort_in_place(a, axis=-1, kind=None, order=None, *, stable=None):
    """``a.sort()``: the sorted values written back, a write the contexts follow."""
    a[...] = np.sort(a, axis, kind=kind, order=order, stable=stable)


def _partition_in_place(a, kth, axis=-1, kind="introselect", order=None):
    """``a.partition(kth)``: the partitioned values written back."""
    a[...] = np.partition(a, kth, axis, kind, order)


defimpl(np.ndarray.sort, _sort_in_place)
defimpl(np.ndarray.partition, _partition_in_place)


# ----------------------------------------------------------------------------- shapes
def _reshape_order(a, args, kw, pos):
    """The order ``f`` reads ``a``'s elements in: "C", "F", or for ``ravel(a, "K")`` of an
    array neither C- nor F-contiguous, the permutation of its C-order positions that is
    its memory order."""
    order = kw.get("order", args[pos] if len(args) > pos else "C")
    if order is None:
        order = "C"
    if order in ("A", "K"):
        arr = np.asarray(a)
        if arr.flags.c_contiguous:
            return "C"
        if arr.flags.f_contiguous:
            return "F"
        if order == "A":
            return "C"
        perm = _memory_order(arr)
        if perm is None:
            from ..losses import NoRuleError
            raise NoRuleError("capstan: numpy.ravel(a, order='K') of an array whose strides are not "
                              "whole elements has no derivative rule; copy the array first")
        return perm
    return order


def _memory_order(arr):
    """``ravel(arr, order="K")`` as a permutation of ``ravel(arr)``.  NumPy's choice of
    axis order (by stride, broadcast axes aside) is read off NumPy itself: an index array
    laid out with ``arr``'s strides over scratch memory that holds each place's number,
    raveled "K", gives the places in the order read; elements sharing a place (a broadcast
    axis) are matched to its reads in C order."""
    size = arr.itemsize
    if any(stride % size for stride in arr.strides):
        return None
    steps = [stride // size for stride in arr.strides]
    places = np.zeros(arr.shape, dtype=np.intp)
    for k, (n, step) in enumerate(zip(arr.shape, steps)):
        shape = [1] * arr.ndim
        shape[k] = n
        places = places + np.reshape(np.arange(n, dtype=np.intp) * step, shape)
    places = np.ravel(places)
    lo = int(places.min())
    scratch = np.arange(lo, int(places.max()) + 1, dtype=np.intp)
    probe = np.ndarray(arr.shape, dtype=np.intp, buffer=scratch, offset=-lo * scratch.itemsize,
                       strides=[step * scratch.itemsize for step in steps])
    read = np.ravel(probe, order="K")
    perm = np.empty(arr.size, dtype=np.intp)
    perm[np.argsort(read, kind="stable")] = np.argsort(places, kind="stable")
    return perm


def _defreshape(f, order_pos=None):
    """``f`` keeps the elements of its first argument in C order: a reshape."""
    def jvp(ts, ans, a, *args, **kw):
        t, lead = ts[0], _lead(ts[0], a)
        order = "C" if order_pos is None else _reshape_order(a, args, kw, order_pos)
        if type(order) is np.ndarray:  # (ravel "K" of a strided array: a gather)
            return np.reshape(t, np.shape(t)[:lead] + (-1,))[..., order]
        if order == "F":
            return _each(t, lead, lambda tk: np.reshape(tk, np.shape(ans), order="F"))
        return np.reshape(t, np.shape(t)[:lead] + np.shape(ans))

    def vjp(g, ans, a, *args, **kw):
        order = "C" if order_pos is None else _reshape_order(a, args, kw, order_pos)
        if type(order) is np.ndarray:
            flat = np.zeros(np.size(a), dtype=np.result_type(g))
            flat[order] = np.ravel(g)
            return (unbroadcast(np.reshape(flat, np.shape(a)), a),) + (None,) * len(args)
        return (unbroadcast(np.reshape(g, np.shape(a), order=order), a),) + (None,) * len(args)

    defjvp(f, jvp, batched=True)
    defvjp(f, vjp)


_defreshape(np.reshape, 1)
_defreshape(np.ravel, 0)
_defreshape(np.squeeze)
_defreshape(np.expand_dims)


def _transpose_perm(a, axes):
    nd = np.ndim(a)
    if axes is None:
        return list(range(nd))[::-1]
    if not isinstance(axes, (tuple, list)) and np.ndim(axes) == 0:
        axes = (axes,)  # (np.transpose(a, 0) of a 1-d array, as scipy.signal.czt calls it)
    return [operator.index(i) % nd for i in axes]


def _transpose_jvp(ts, ans, a, axes=None):
    lead = _lead(ts[0], a)
    return np.transpose(ts[0], list(range(lead)) + [p + lead for p in _transpose_perm(a, axes)])


def _transpose_vjp(g, ans, a, axes=None):
    return (np.transpose(g, np.argsort(_transpose_perm(a, axes))), None)


def _swapaxes_jvp(ts, ans, a, axis1, axis2):
    lead, nd = _lead(ts[0], a), np.ndim(a)
    return np.swapaxes(ts[0], axis1 % nd + lead, axis2 % nd + lead)


def _moveaxis_norm(axes, nd):
    return [operator.index(i) % nd for i in (axes if isinstance(axes, (tuple, list)) else [axes])]


def _moveaxis_jvp(ts, ans, a, source, destination):
    lead, nd = _lead(ts[0], a), np.ndim(a)
    return np.moveaxis(ts[0], [i + lead for i in _moveaxis_norm(source, nd)],
                       [i + lead for i in _moveaxis_norm(destination, nd)])


defjvp(np.transpose, _transpose_jvp, batched=True)
defvjp(np.transpose, _transpose_vjp)
defjvp(np.swapaxes, _swapaxes_jvp, batched=True)
defvjp(np.swapaxes, lambda g, ans, a, axis1, axis2: (np.swapaxes(g, axis1, axis2), None, None))
defjvp(np.moveaxis, _moveaxis_jvp, batched=True)
defvjp(np.moveaxis, lambda g, ans, a, source, destination: (np.moveaxis(g, destination, source), None, None))
if hasattr(np, "matrix_transpose"):
    defimpl(np.matrix_transpose, lambda x: np.swapaxes(x, -1, -2))


def _concatenate_jvp(ts, ans, arrays, axis=0, *args, **kw):
    if ts[0] is None:
        return None
    _, tans, leadshape = _elements(arrays, ts[0])
    lead = len(leadshape)
    if axis is None:
        return np.concatenate([_flat(t, lead) for t in tans], axis=lead)
    return np.concatenate(tans, axis=axis % np.ndim(ans) + lead)


def _concatenate_vjp(g, ans, arrays, axis=0, *args, **kw):
    vals = list(arrays)
    if axis is None:
        sizes = [np.size(x) for x in vals]
        flat, ends = np.ravel(g), np.cumsum(sizes)
        pieces = [np.reshape(flat[e - n:e], np.shape(x)) for n, e, x in zip(sizes, ends, vals)]
    else:
        axis = axis % np.ndim(ans)
        sizes = [np.shape(x)[axis] for x in vals]
        pieces = [g[(slice(None),) * axis + (slice(e - n, e),)] for n, e in zip(sizes, np.cumsum(sizes))]
    pieces = [unbroadcast(p, x) for p, x in zip(pieces, vals)]
    out = np.stack(pieces) if isinstance(arrays, np.ndarray) else pieces
    return (out,) + (None,) * (1 + len(args))


def _stack_jvp(ts, ans, arrays, axis=0, *args, **kw):
    if ts[0] is None:
        return None
    _, tans, leadshape = _elements(arrays, ts[0])
    return np.stack(tans, axis=axis % np.ndim(ans) + len(leadshape))


def _stack_vjp(g, ans, arrays, axis=0, *args, **kw):
    axis = axis % np.ndim(ans)
    pieces = [unbroadcast(np.take(g, i, axis=axis), x) for i, x in enumerate(arrays)]
    out = np.stack(pieces) if isinstance(arrays, np.ndarray) else pieces
    return (out,) + (None,) * (1 + len(args))


defjvp(np.concatenate, _concatenate_jvp, batched=True)
defvjp(np.concatenate, _concatenate_vjp)
defjvp(np.stack, _stack_jvp, batched=True)
defvjp(np.stack, _stack_vjp)


def _array_jvp(ts, ans, obj, *args, **kw):
    """``np.array``/``asarray``...: a copy (or the same values) of ``obj``."""
    no_object_arrays(ans)
    if ts[0] is None or np.result_type(ans).kind not in "fc":
        return None
    if isinstance(obj, (list, tuple)):
        _, tans, leadshape = _elements(obj, ts[0])
        t, lead = np.stack(tans, axis=len(leadshape)), len(leadshape)
    else:
        t, lead = np.array(ts[0]), _lead(ts[0], obj)
    lead = max(lead, 0)
    if np.shape(t)[lead:] != np.shape(ans):  # (ndmin= put axes in front; a tangent of fewer axes)
        front = np.shape(t)[:lead]
        t = np.reshape(np.array(np.broadcast_to(t, front + np.shape(obj))), front + np.shape(ans))
    return _cast(t, np.result_type(ans))


def _array_vjp(g, ans, obj, *args, **kw):
    no_object_arrays(ans)
    if isinstance(obj, (list, tuple)):
        return ([unbroadcast(g[i], x) for i, x in enumerate(obj)],) + (None,) * len(args)
    return (unbroadcast(_cast(g, np.result_type(obj, g)), obj),) + (None,) * len(args)


for _f in (np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.copy):
    defjvp(_f, _array_jvp, batched=True)
    defvjp(_f, _array_vjp)


def _astype_jvp(ts, ans, a, dtype, *args, **kw):
    no_object_arrays(ans)
    if np.result_type(ans).kind not in "fc":
        return None
    return _cast(ts[0], np.result_type(ans))


def _astype_vjp(g, ans, a, dtype, *args, **kw):
    no_object_arrays(ans)
    if np.result_type(ans).kind not in "fc":
        return (None,) * (2 + len(args))
    return (unbroadcast(_cast(g, np.result_type(a, np.float64)
                              if np.iscomplexobj(a) else np.float64), a),) + (None,) * (1 + len(args))


defjvp(np.ndarray.astype, _astype_jvp, batched=True)
defvjp(np.ndarray.astype, _astype_vjp)
defjvp(np.generic.astype, _astype_jvp, batched=True)  # (NumPy scalars: np.float64(x).astype(...))
defvjp(np.generic.astype, _astype_vjp)
if hasattr(np, "astype"):
    defjvp(np.astype, _astype_jvp, batched=True)
    defvjp(np.astype, _astype_vjp)


def _broadcast_to_jvp(ts, ans, a, shape, *args, **kw):
    t, lead = ts[0], _lead(ts[0], a)
    shape = np.shape(ans)
    t = np.reshape(t, np.shape(t)[:lead] + (1,) * (len(shape) - np.ndim(a)) + np.shape(a))
    return np.broadcast_to(t, np.shape(t)[:lead] + shape)


defjvp(np.broadcast_to, _broadcast_to_jvp, batched=True)
defvjp(np.broadcast_to, lambda g, ans, a, shape, *args, **kw: (unbroadcast(g, a), None) + (None,) * len(args))


def _flip_jvp(ts, ans, m, axis=None):
    lead = _lead(ts[0], m)
    return np.flip(ts[0], _shifted(_axes(axis, np.ndim(m)), lead))


defjvp(np.flip, _flip_jvp, batched=True)
defvjp(np.flip, lambda g, ans, m, axis=None: (np.flip(g, axis), None))


def _roll_jvp(ts, ans, a, shift, axis=None):
    t, lead = ts[0], _lead(ts[0], a)
    if axis is None:
        return np.reshape(np.roll(_flat(t, lead), shift, axis=lead), np.shape(t))
    nd = np.ndim(a)
    axis = tuple(i % nd + lead for i in axis) if isinstance(axis, (tuple, list)) else axis % nd + lead
    return np.roll(t, shift, axis=axis)


def _roll_vjp(g, ans, a, shift, axis=None):
    return (np.roll(g, tuple(-np.asarray(shift).reshape(-1)) if np.ndim(shift) else -shift, axis),
            None, None)


defjvp(np.roll, _roll_jvp, batched=True)
defvjp(np.roll, _roll_vjp)


def _repeat_jvp(ts, ans, a, repeats, axis=None):
    t, lead = ts[0], _lead(ts[0], a)
    if axis is None:
        return np.repeat(_flat(t, lead), repeats, axis=lead)
    return np.repeat(t, repeats, axis=axis % np.ndim(a) + lead)


def _repeat_vjp(g, ans, a, repeats, axis=None):
    arr = np.ravel(a) if axis is None else np.asarray(a)
    axis = 0 if axis is None else axis % arr.ndim
    owner = np.repeat(np.arange(arr.shape[axis]), repeats)
    z = _scatter(g, arr.shape, arr.dtype, (slice(None),) * axis + (owner,))
    z = np.reshape(z, np.shape(a))
    return (z if np.ndim(a) else z[()], None, None)


defjvp(np.repeat, _repeat_jvp, batched=True)
defvjp(np.repeat, _repeat_vjp)


# composite shape functions: differentiated through their definitions
def _atleast(nd):
    def promote(x):
        x = np.asanyarray(x)  # (a list comes back an array, as from NumPy)
        shape = np.shape(x)
        if len(shape) >= nd:
            return x
        if nd == 3 and len(shape) == 2:
            return np.reshape(x, shape + (1,))
        if nd == 3 and len(shape) == 1:
            return np.reshape(x, (1,) + shape + (1,))
        return np.reshape(x, (1,) * (nd - len(shape)) + shape)

    def impl(*arys):
        out = [promote(x) for x in arys]
        return out[0] if len(out) == 1 else tuple(out)
    return impl


def _hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [np.atleast_1d(x) for x in tup]
    return np.concatenate(arrs, axis=0 if np.ndim(arrs[0]) == 1 else 1)


def _column_stack(tup):
    arrs = [np.reshape(x, (-1, 1)) if np.ndim(x) < 2 else x for x in tup]
    return np.concatenate(arrs, axis=1)


def _tile(a, reps):
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    shape = np.shape(a)
    n = max(len(reps), len(shape))
    shape = (1,) * (n - len(shape)) + shape
    reps = (1,) * (n - len(reps)) + reps
    spread = np.broadcast_to(np.reshape(a, tuple(x for s in shape for x in (1, s))),
                             tuple(x for r, s in zip(reps, shape) for x in (r, s)))
    return np.reshape(spread, tuple(r * s for r, s in zip(reps, shape)))


defimpl(np.atleast_1d, _atleast(1))
defimpl(np.atleast_2d, _atleast(2))
defimpl(np.atleast_3d, _atleast(3))
defimpl(np.hstack, _hstack)
defimpl(np.vstack, lambda tup, **kw: np.concatenate([np.atleast_2d(x) for x in tup], axis=0))
defimpl(np.dstack, lambda tup, **kw: np.concatenate([np.atleast_3d(x) for x in tup], axis=2))
defimpl(np.column_stack, _column_stack)
defimpl(np.tile, _tile)


# ----------------------------------------------------------------------------- ndarray methods
def _method(fn):
    return lambda a, *args, **kw: fn(a, *args, **kw)


#: ndarray method -> the NumPy function it is (``a.sum(...)`` is ``np.sum(a, ...)``): what
#: ``getattr`` on a differentiated array binds, so that the call reaches the function's rule
METHOD_FUNCTIONS = {}
for _name in ("sum", "mean", "prod", "max", "min", "cumsum", "cumprod", "var", "std", "ravel", "swapaxes",
              "squeeze", "clip", "repeat", "take", "diagonal", "trace", "conj", "conjugate", "sort"):
    if _name != "sort":
        defimpl(getattr(np.ndarray, _name), _method(getattr(np, _name)))
        METHOD_FUNCTIONS[getattr(np.ndarray, _name)] = getattr(np, _name)
defimpl(np.ndarray.reshape,
        lambda a, *shape, **kw: np.reshape(a, shape[0] if len(shape) == 1 else shape, **kw))
defimpl(np.ndarray.transpose, lambda a, *axes: np.transpose(a, axes[0] if len(axes) == 1 else (axes or None)))
defimpl(np.ndarray.flatten, lambda a, order="C": np.array(np.ravel(a, order)))
defimpl(np.ndarray.copy, lambda a, order="C": np.array(a, order=order))
def _python_number(v):
    """The Python float (or complex) ``item()`` gives for a NumPy scalar; a float keeps its
    derivative (``float(x)``)."""
    kind = np.result_type(v).kind
    return float(v) if kind == "f" else complex(v) if kind == "c" else np.asarray(v).item()


defimpl(np.ndarray.item, lambda a, *args: _python_number(
    np.ravel(a)[args[0] if len(args) == 1 else np.ravel_multi_index(args, np.shape(a))] if args
    else np.ravel(a)[0]))
defimpl(np.generic.item, lambda a, *args: _python_number(a))


def _view(a, *args, **kwargs):
    """``a.view()`` (or a view of the same dtype as a plain ndarray): ``a[...]``, a view
    that writes go through; another dtype reads the memory as other numbers."""
    spec = [*args, *kwargs.values()]
    if all(s is None or s is np.ndarray or (not isinstance(s, type) or not issubclass(s, np.ndarray))
           and np.dtype(s) == np.result_type(a) for s in spec):
        return a[...]
    from ..losses import NoRuleError, masked_array
    if any(isinstance(s, type) and issubclass(s, np.ma.MaskedArray) for s in spec):
        raise masked_array()
    raise NoRuleError("capstan: ndarray.view(%s) reads a differentiated array's memory as another type; "
                      "there is no derivative rule for that (use astype for a conversion)"
                      % ", ".join(map(repr, spec)))


defimpl(np.ndarray.view, _view)


def _scalar_view(a, *args, **kwargs):
    """``a.view(t)`` of a NumPy scalar (an array's element): ``a`` itself for its own dtype;
    another reads its bits as other numbers (``x.view(np.int64)`` and back dropped the
    derivative: a zero)."""
    if all(s is None or (not isinstance(s, type) or not issubclass(s, np.ndarray))
           and np.dtype(s) == np.result_type(a) for s in [*args, *kwargs.values()]):
        return a
    return _view(a, *args, **kwargs)


defimpl(np.generic.view, _scalar_view)


# ----------------------------------------------------------------------------- writing into arrays
def _copyto(dst, src, casting="same_kind", where=True):
    """``np.copyto`` as a subscript assignment, which the contexts differentiate."""
    if type(src) is list or type(src) is tuple:  # (read as the array NumPy makes of it, not
        src = np.asarray(src)  # as a dtype specification)
    if not np.can_cast(np.result_type(src), dst.dtype, casting):
        raise TypeError("Cannot cast array data from %r to %r according to the rule %r"
                        % (np.result_type(src), dst.dtype, casting))
    dst[...] = src if where is True else np.where(where, src, dst)


defimpl(np.copyto, _copyto)


def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, **kw):
    """``np.linspace`` with NumPy's own arithmetic, as operations that have rules (its C
    helper for converting the inputs would hold them untagged)."""
    num = operator.index(num)
    if num < 0:
        return np.linspace(0.0, 1.0, num)  # NumPy's own error
    div = (num - 1) if endpoint else num
    start, stop = np.asarray(start) * 1.0, np.asarray(stop) * 1.0
    delta = stop - start
    y = np.arange(0, num, dtype=np.result_type(delta)).reshape((-1,) + (1,) * np.ndim(delta))
    if div > 0:
        step = delta / div
        y = y / div * delta if np.any(step == 0) else y * step
    else:
        step = np.nan
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y[-1, ...] = stop
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if dtype is not None:
        y = y.astype(dtype)
    return (y, step) if retstep else y


defimpl(np.linspace, _linspace)


def _interp_parts(x, xp, fp, left=None, right=None, period=None):
    """For each point of ``x``: segment index, the weights of ``fp`` at its two ends, and
    the slope (0 outside ``xp``, where the value is ``fp``'s end -- or the constant
    ``left``/``right`` when given, which takes ``fp``'s weight away too)."""
    if period is not None:
        raise TypeError("capstan: np.interp(..., period=) has no derivative rule")
    if len(np.shape(xp)) != 1 or len(xp) < 2:
        raise TypeError("capstan: np.interp needs at least two sample points to be differentiated")
    x, xp, fp = np.asarray(x, dtype=float), np.asarray(xp, dtype=float), np.asarray(fp)
    # (np.searchsorted(xp, x, side="right"), spelled with comparisons: those take
    # values an enclosing differentiation tagged, as rules run under a Hessian)
    i = np.clip(np.sum(np.expand_dims(xp, tuple(range(np.ndim(x)))) <= np.expand_dims(x, -1), axis=-1) - 1,
                0, len(xp) - 2)
    span = xp[i + 1] - xp[i]
    inside = (x >= xp[0]) & (x <= xp[-1])
    w = np.where(inside, (x - xp[i]) / span, np.where(x < xp[0], 0.0, 1.0))
    own = np.ones(np.shape(x))  # 0 where a constant left/right value replaces fp's end
    if left is not None:
        own = own * (x >= xp[0])
    if right is not None:
        own = own * (x <= xp[-1])
    return i, own * (1.0 - w), own * w, np.where(inside, (fp[i + 1] - fp[i]) / span, 0.0)


def _interp_jvp(ts, ans, x, xp, fp, left=None, right=None, period=None):
    if ts[1] is not None:
        raise TypeError("capstan: np.interp is differentiated in x and fp, not in xp")
    i, w0, w1, slope = _interp_parts(x, xp, fp, left, right, period)
    t = 0.0
    if ts[0] is not None:
        t = slope * ts[0]
    if ts[2] is not None:
        tfp = np.asarray(ts[2])
        t = t + w0 * tfp[i] + w1 * tfp[i + 1]
    for k, outside in ((3, _interp_left), (4, _interp_right)):  # the constant left=/right= values
        if k < len(ts) and ts[k] is not None:
            t = t + outside(x, xp) * ts[k]
    return t


def _interp_left(x, xp):
    """1.0 where ``x`` lies left of ``xp``, whose value is then ``left``."""
    return (np.asarray(x) < np.asarray(xp)[0]).astype(float)


def _interp_right(x, xp):
    return (np.asarray(x) > np.asarray(xp)[-1]).astype(float)


def _interp_vjp_left(g, ans, x, xp, fp, left=None, right=None, period=None):
    return unbroadcast(g * _interp_left(x, xp), left)


def _interp_vjp_right(g, ans, x, xp, fp, left=None, right=None, period=None):
    return unbroadcast(g * _interp_right(x, xp), right)


def _interp_vjp_x(g, ans, x, xp, fp, left=None, right=None, period=None):
    slope = _interp_parts(x, xp, fp, left, right, period)[3]
    return unbroadcast(g * np.conj(slope), x)


def _interp_vjp_xp(g, ans, x, xp, fp, *args, **kw):
    raise TypeError("capstan: np.interp is differentiated in x and fp, not in xp")


def _interp_vjp_fp(g, ans, x, xp, fp, left=None, right=None, period=None):
    i, w0, w1, _ = _interp_parts(x, xp, fp, left, right, period)
    dtype = np.result_type(np.asarray(fp), g, np.float64)  # (fp may be a list)
    return (_scatter(np.ravel(g * w0), np.shape(fp), dtype, np.ravel(i))
            + _scatter(np.ravel(g * w1), np.shape(fp), dtype, np.ravel(i) + 1))


defjvp(np.interp, _interp_jvp)
_defvjp(np.interp, _interp_vjp_x, _interp_vjp_xp, _interp_vjp_fp, _interp_vjp_left,  # (one rule
        _interp_vjp_right)  # per argument)


def _ndarray_array(a, dtype=None, /, *, copy=None):
    """``a.__array__(dtype)``: ``a`` itself, or as ``dtype`` (a copy when asked)."""
    if dtype is None:
        return a.copy() if copy else a
    return np.asarray(a).astype(dtype, copy=bool(copy))


defimpl(np.ndarray.__array__, _ndarray_array)
defimpl(np.generic.conjugate, lambda z, /: np.conjugate(z))  # (np.float64(x).conjugate())


def _ndarray_deepcopy(a, memo, /):
    """``a.__deepcopy__(memo)`` of a numeric array: a copy (its elements are numbers)."""
    if a.dtype.kind == "O":
        raise TypeError("capstan: copy.deepcopy of an object array holding differentiated values has no "
                        "derivative rule")
    return a.copy()


defimpl(np.ndarray.__copy__, lambda a, /: a.copy())  # (copy.copy(a))
defimpl(np.ndarray.__deepcopy__, _ndarray_deepcopy)  # (copy.deepcopy(a))
defimpl(np.generic.__copy__, lambda z, /: z)  # (a NumPy scalar is immutable: itself)
defimpl(np.generic.__deepcopy__, lambda z, memo, /: z)
