"""Second derivatives at a kink: the slope there is a convention, its derivative undefined.

``abs``, the norms, ``hypot``, ``copysign``, ``maximum``/``minimum`` and ``clip`` take a
slope at their kink (``|x|``'s 0 at 0, a tie's 0.5, ``norm``'s gradient 0 at 0): a first
derivative keeps it.  Differentiated again (a Hessian, ``D(D(f))``), that slope is
piecewise constant around the point, so its derivative would come out 0 -- and the chain
rule would then give ``hessian(lambda v: norm(v) ** 2, 0)`` as 0, not ``2 I``, and
``x * abs(x)`` a second derivative of 0 where it has none.  Instead, inside an enclosing
differentiation, a rule's product ``g * slope`` at the kink goes through :func:`kink`,
whose derivative is NaN there, so that the NaN checks refuse it (NoRuleError) -- unless
``g`` is a constant 0 there (an untaken ``np.where`` branch: a Huber loss at a zero
residual keeps its Hessian), whose product is 0 near the point too.
"""
import math
import operator

import numpy as np

from ..nesting import varies
from .registry import KINKS, defjump, defjvp, defvjp, unbroadcast


def kink(v, mask, *at, aligned=True):
    """``v``, a rule's value whose elements ``mask`` were formed from a slope at its kink,
    a kink of the arguments ``at``: differentiated by an enclosing run, those elements
    have no derivative (NaN) where ``at`` moves (element by element where ``aligned``, the
    elements of ``at`` at the same positions as ``v``'s; anywhere otherwise: a tie of a
    sort or a max parts where any of its elements moves)."""
    return v.copy() if type(v) is np.ndarray else v  # (a new array: not read as v passed through)


def _lead_any(m, shape):
    """``m`` reduced by ``any`` over its leading axes beyond ``shape`` (chunk axes)."""
    extra = np.ndim(m) - len(shape)
    return np.any(m, axis=tuple(range(extra))) if extra > 0 else m


def _kink_jvp(ts, ans, v, mask, *at, aligned=True):
    moving = None
    lead = ()
    for t, a in zip(ts[2:], at):
        if t is None:
            continue
        extra = np.ndim(t) - np.ndim(a)
        lead = np.shape(t)[:extra] if extra > 0 else ()
        m = _lead_any(t != 0, np.shape(a)) if aligned else np.any(t != 0)
        moving = m if moving is None else _either(moving, m)
    if moving is None:  # (the kink does not move: v's own derivative)
        return ts[0]
    try:
        nan_at = np.logical_and(mask, moving)
    except ValueError:  # (shapes of different reductions: any move counts)
        nan_at = np.logical_and(mask, np.any(moving))
    if not np.any(nan_at):
        return ts[0]
    t = ts[0]
    if t is None:
        t = np.zeros(lead + np.shape(v), dtype=np.result_type(v, float))
    t = np.where(nan_at, np.nan, t)
    return t if np.ndim(t) else t[()]


def _either(a, b):
    try:
        return np.logical_or(a, b)
    except ValueError:
        return np.any(a) | np.any(b)


def _kink_vjp(g, ans, v, mask, *at, aligned=True):
    out = [unbroadcast(g, v), None]
    for a in at:  # (NaN whatever g is: reverse mode cannot tell a zero of g that holds near the
        # point from the point's own, 2 |x| times this slope in |x| ** 2)
        nan = np.where(mask, np.nan, 0.0)
        c = unbroadcast(nan + 0j if np.iscomplexobj(a) else nan, a)
        out.append(c if type(a) is np.ndarray else complex(c) if np.iscomplexobj(c) else float(c))
    return tuple(out)


defjvp(kink, _kink_jvp, batched=True)
defvjp(kink, _kink_vjp)


def at_kink(v, mask, g, *at, aligned=True):
    """``v`` (a rule's product ``g * slope``), marked by :func:`kink` where ``mask`` holds
    (the slope taken at its kink) and ``g`` does not hold 0 near the point (``g=None``:
    no such zero is known).  Rules call it where an argument in ``at`` varies
    (:func:`capstan.nesting.varies`): their body then runs inside an enclosing
    differentiation."""
    if not np.any(mask):
        return v
    if g is not None and not varies(g):  # (a constant 0 of g wins over the undefined derivative of the slope)
        mask = np.logical_and(mask, np.not_equal(g, 0))
        if not np.any(mask):
            return v
    return kink(v, mask, *at, aligned=aligned)


def at_zero(i, ans, x, *rest, **kw):
    """``KINKS`` entry of a function whose kink is at ``x == 0`` (its first argument):
    ``fabs``, ``copysign``."""
    return np.equal(x, 0) if i == 0 else False


def all_zero(i, ans, *xs, **kw):
    """``KINKS`` entry of ``hypot``: the kink is where every argument is 0."""
    m = np.equal(xs[0], 0)
    for x in xs[1:]:
        m = np.logical_and(m, np.equal(x, 0))
    return m


def tie(i, ans, a, b, **kw):
    """``KINKS`` entry of ``maximum``/``minimum``: a tie, where the slope is shared."""
    return np.equal(a, b)


def tied(x, axis):
    """Whether each element of ``x`` equals another one along ``axis`` (a tie of a sort
    or of a max/min, whose rearrangement changes where they part: a kink)."""
    x = np.moveaxis(np.asarray(x), axis, -1)
    order = np.argsort(x, axis=-1, kind="stable")
    s = np.take_along_axis(x, order, axis=-1)
    equal = s[..., 1:] == s[..., :-1]
    dup = np.zeros(s.shape, dtype=bool)
    dup[..., 1:] |= equal
    dup[..., :-1] |= equal
    out = np.empty_like(dup)
    np.put_along_axis(out, order, dup, axis=-1)
    return np.moveaxis(out, -1, axis)


# -- steps: where the value itself jumps (registry.JUMPS) ---------------------------------------
def _integral(x, *rest, **kw):
    x = np.asarray(x)
    return np.isfinite(x) & np.equal(x, np.floor(x))


def _integral_nonzero(x, *rest, **kw):
    return _integral(x) & np.not_equal(x, 0)


def _half_unit(x, decimals=0, *rest, **kw):
    y = np.asarray(x) * 10.0 ** decimals
    return np.isfinite(y) & np.equal(y - np.floor(y), 0.5)


def _multiple(x, y, *rest, **kw):
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.isfinite(x) & np.not_equal(y, 0) & np.equal(np.fmod(x, y), 0)


for _f in (np.sign,):
    defjump(_f, lambda x, *rest, **kw: np.equal(x, 0))
defjump(np.heaviside, lambda x1, x2, *rest, **kw: np.equal(x1, 0))
for _f in (np.floor, np.ceil):
    defjump(_f, _integral)
for _f in (np.trunc, np.fix):
    defjump(_f, _integral_nonzero)
for _f in (np.rint, np.round, np.around, np.ndarray.round):
    defjump(_f, _half_unit)
for _f in (np.floor_divide, operator.floordiv, np.mod, np.remainder, operator.mod, np.fmod, math.fmod):
    defjump(_f, _multiple)
