"""Rules for sorting and order statistics: ``np.partition``, ``ndarray.sort`` and
``ndarray.partition`` (in place), ``np.median``, ``np.percentile``, ``np.quantile``,
their NaN-skipping versions and ``np.ptp``.

A sort or partition rearranges its input, so its derivative is the same rearrangement
of the input's derivative (ties share nothing: each position follows one element).
Order statistics are read from the sorted data with NumPy's own index arithmetic and
interpolation formula, so values match NumPy's; their derivative flows to the one or
two elements they are read from.  NumPy's library code for them partitions a copy in
place in C, so they run as these Python equivalents instead (``defimpl``).
"""
import operator
import types

import numpy as np

from ..nesting import varies
from .kink_rules import at_kink, tied
from .numpy_rules import _flat, _lead, _scatter
from .registry import defimpl, defjvp, defvjp, nondifferentiable, unbroadcast

try:  # NumPy's table of quantile methods: virtual index and interpolation weight of each
    from numpy.lib._function_base_impl import _QuantileMethods as _METHODS
except ImportError:  # pragma: no cover - NumPy < 2
    _METHODS = {}


def _no_rule(message):
    from ..adcontext import NoRuleError
    return NoRuleError("capstan: " + message)


# ----------------------------------------------------------------------------- rearrangements
def _rearrangement(a, ans, axis):
    """Fancy index with ``a[index] == ans``, for ``ans`` a rearrangement of ``a`` along
    ``axis`` (equal values are matched in order of position)."""
    a, ans = np.asarray(a), np.asarray(ans)
    source = np.argsort(a, axis=axis, kind="stable")
    target = np.argsort(ans, axis=axis, kind="stable")
    order = np.empty_like(source)
    np.put_along_axis(order, target, source, axis=axis)
    index = list(np.indices(order.shape, sparse=True))
    index[axis] = order
    return tuple(index)


def _partition_jvp(ts, ans, a, kth, axis=-1, *args, **kw):
    t, lead = ts[0], _lead(ts[0], a)
    if axis is None:
        a, t, axis = np.ravel(a), _flat(t, lead), 0
    axis = operator.index(axis) % np.ndim(a)
    d = t[(slice(None),) * lead + _rearrangement(a, ans, axis)]
    return at_kink(d, tied(ans, axis), None, a, aligned=False) if varies(a) else d  # (ties: a kink, see kink_rules)


def _partition_vjp(g, ans, a, kth, axis=-1, *args, **kw):
    arr = np.ravel(a) if axis is None else np.asarray(a)
    axis = 0 if axis is None else operator.index(axis) % arr.ndim
    z = _scatter(g, arr.shape, arr.dtype, _rearrangement(arr, ans, axis))
    if varies(a):  # (ties: a kink, see kink_rules)
        z = at_kink(z, tied(arr, axis), z, arr, aligned=False)
    return (unbroadcast(np.reshape(z, np.shape(a)), a),) + (None,) * (1 + len(args))


def _sort_in_place(a, axis=-1, kind=None, order=None, **kw):
    """``a.sort()``: the sorted values written back into ``a`` (a write the contexts follow)."""
    a[...] = np.sort(a, axis, kind=kind, order=order, **kw)


def _partition_in_place(a, kth, axis=-1, kind="introselect", order=None):
    """``a.partition(kth)``: the partitioned values written back into ``a``."""
    a[...] = np.partition(a, kth, axis, kind=kind, order=order)


defjvp(np.partition, _partition_jvp, batched=True)
defvjp(np.partition, _partition_vjp)
defimpl(np.ndarray.sort, _sort_in_place)
defimpl(np.ndarray.partition, _partition_in_place)


def _unique_along(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, **kwargs):
    """``np.unique(ar, axis=k)``: NumPy's answer on the plain values gives the positions;
    each unique slice is the first one equal to it, with its derivative.  (NumPy's own
    code views the array as records, which a differentiated array cannot be.)"""
    from ..markers import stop_gradient

    if axis is None:
        raise _no_rule("np.unique without axis= runs NumPy's own code (this entry is for axis=)")
    _, index, *rest = np.unique(stop_gradient(ar), True, return_inverse, return_counts, axis, **kwargs)
    values = np.take(np.asarray(ar), index, axis=axis)
    if not (return_index or return_inverse or return_counts):
        return values
    return (values,) + ((index,) if return_index else ()) + tuple(rest)


def _unique(ar, *args, **kwargs):
    axis = kwargs.get("axis", args[3] if len(args) > 3 else None)
    if axis is None:
        return _UNIQUE(ar, *args, **kwargs)  # (NumPy's Python code: sorting, which has rules)
    return _unique_along(ar, *args, **kwargs)


def _clone(f):
    """A copy of Python function ``f`` that is not the table's key: capstan steps into it."""
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    return g


_UNIQUE = _clone(getattr(np.unique, "__wrapped__", np.unique))
defimpl(np.unique, _unique)
nondifferentiable(np.argpartition, np.ndarray.argpartition, np.lexsort)


# ----------------------------------------------------------------------------- order statistics
def _lerp(lo, hi, t):
    """NumPy's interpolation ``lo + (hi - lo) * t``, from the nearer end."""
    d = hi - lo
    return np.where(t >= 0.5, hi - d * (1 - t), lo + d * t)


def _axes_of(axis, nd):
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        axes = tuple(operator.index(i) % max(nd, 1) for i in axis)
        if len(set(axes)) != len(axes):
            raise ValueError("repeated axis")
        return axes
    return (operator.index(axis) % max(nd, 1),)


def _order_statistic(a, q, axis, method, keepdims, skip_nan):
    """``q``-quantiles of ``a`` over ``axis`` (``method="median"``: NumPy's median,
    the mean of the two middle values), with NaNs skipped or propagated."""
    a = np.asarray(a)
    shape, nd = np.shape(a), np.ndim(a)
    axes = _axes_of(axis, nd)
    rest = [i for i in range(nd) if i not in axes]
    rest_shape = tuple(shape[i] for i in rest)
    s = np.sort(np.reshape(np.transpose(a, rest + list(axes)), rest_shape + (-1,)), axis=-1)
    size = np.shape(s)[-1]
    nans = np.isnan(s)
    count = size - np.sum(nans, axis=-1) if skip_nan else np.full(rest_shape, size)
    qs = np.shape(q)
    if method == "median":
        prev, nxt, gamma = (count - 1) // 2, count // 2, None
    else:
        q = np.reshape(q, qs + (1,) * len(rest))
        virtual = np.asarray(_METHODS[method]["get_virtual_index"](count, q))
        if virtual.dtype.kind in "iu":
            prev = nxt = np.clip(virtual, 0, np.maximum(count - 1, 0))
            gamma = None
        else:
            above, below = virtual >= count - 1, virtual < 0
            prev = np.where(above, count - 1, np.where(below, 0, np.floor(virtual)))
            nxt = np.where(above, count - 1, np.where(below, 0, np.floor(virtual) + 1))
            gamma = np.asarray(_METHODS[method]["fix_gamma"](np.asarray(virtual - prev), virtual),
                               dtype=virtual.dtype)
            prev, nxt = prev.astype(np.intp), nxt.astype(np.intp)
    lead = len(np.shape(prev)) - len(rest)
    where = tuple(np.arange(n).reshape((1,) * (lead + j) + (n,) + (1,) * (len(rest) - j - 1))
                  for j, n in enumerate(rest_shape))
    lo = s[where + (prev,)]
    if method == "median":
        result = (lo + s[where + (nxt,)]) / 2.0
    elif gamma is None:
        result = lo
    else:
        result = _lerp(lo, s[where + (nxt,)], gamma)
    undefined = count == 0 if skip_nan else np.any(nans, axis=-1)
    if np.any(undefined):
        result = np.where(undefined, np.nan, result)
    target = np.result_type(s.dtype, np.float16)  # (float32 data, float32 result: NumPy's dtype)
    if method != "median":
        target = np.result_type(target, np.asarray(q).dtype)
    if np.result_type(result) != target:
        result = np.asarray(result).astype(target)
    if keepdims is True:
        result = np.reshape(result, np.shape(result)[:lead] + tuple(1 if i in axes else n
                                                                     for i, n in enumerate(shape)))
    return result[()] if np.ndim(result) == 0 else result


def _check(name, q, out, method, extra):
    given = (["out"] if out is not None else []) + [k for k, v in extra.items() if v is not None]
    if given:
        raise _no_rule("np.%s(..., %s=) has no derivative rule" % (name, "=, ".join(given)))
    if method != "median" and method not in _METHODS:
        raise ValueError("%r is not a valid method. Use one of: %s" % (method, _METHODS.keys()))
    if not (np.all(0 <= q) and np.all(q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if "percentile" in name
                         else "Quantiles must be in the range [0, 1]")


def _quantile_impl(name, skip_nan, scale):
    def impl(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             weights=None, interpolation=None):
        q = np.true_divide(q, scale) if scale != 1 else np.asarray(q)
        _check(name, q, out, method, {"weights": weights, "interpolation": interpolation})
        return _order_statistic(a, q, axis, method, keepdims, skip_nan)

    impl.__name__ = impl.__qualname__ = "_" + name
    impl.__doc__ = "``np.%s`` from the sorted data (see ``_order_statistic``)." % name
    return impl


def _median_impl(name, skip_nan):
    def impl(a, axis=None, out=None, overwrite_input=False, keepdims=False):
        _check(name, 0.5, out, "median", {})
        return _order_statistic(a, 0.5, axis, "median", keepdims, skip_nan)

    impl.__name__ = impl.__qualname__ = "_" + name
    return impl


def _ptp(a, axis=None, out=None, keepdims=False):
    """``np.ptp`` as the difference of the extremes (each a reduction with a rule)."""
    if out is not None:
        raise _no_rule("np.ptp(..., out=) has no derivative rule")
    keep = keepdims is True
    return np.max(a, axis=axis, keepdims=keep) - np.min(a, axis=axis, keepdims=keep)


defimpl(np.quantile, _quantile_impl("quantile", False, 1))
defimpl(np.percentile, _quantile_impl("percentile", False, 100))
defimpl(np.nanquantile, _quantile_impl("nanquantile", True, 1))
defimpl(np.nanpercentile, _quantile_impl("nanpercentile", True, 100))
defimpl(np.median, _median_impl("median", False))
defimpl(np.nanmedian, _median_impl("nanmedian", True))
defimpl(np.ptp, _ptp)
