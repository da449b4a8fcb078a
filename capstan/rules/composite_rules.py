"""NumPy functions differentiated through a Python equivalent written with functions that
have rules (``defimpl``): NumPy 2's vector gufuncs (``vecdot``, ``matvec``, ``vecmat``),
the ufuncs with two results (``divmod``, ``modf``), the selections ``compress`` and
``choose``, and ``squeeze`` of a NumPy scalar.  (``np.frexp`` and ``math.frexp`` stay
refused, as in ``stdlib_rules``: their mantissa is mostly taken apart into integers to
rebuild the number exactly, where ``int()`` would drop the derivative silently.)  Each equivalent gives the very values NumPy gives; the
ufunc keywords a rule does not cover (``out=``, ``where=``, ``axes=``...) are refused
with a ``NoRuleError`` naming them."""
import numpy as np

from .registry import IMPLS, JVP, NONDIFF, PARTIALS, SOLVERS, VJP, defimpl


def _refuse_keywords(name, kwargs):
    if kwargs:
        from ..losses import NoRuleError

        raise NoRuleError("capstan: numpy.%s(..., %s=...) has no derivative rule for that keyword "
                          "argument (the rule covers the plain call%s)"
                          % (name, sorted(kwargs)[0], " and axis=" if name == "vecdot" else ""))


def _vecdot(x1, x2, /, *, axis=-1, **kwargs):
    """``sum(conj(x1) * x2)`` along ``axis``."""
    _refuse_keywords("vecdot", kwargs)
    return np.sum(np.conj(x1) * x2, axis=axis)


def _matvec(x1, x2, /, **kwargs):
    """``x1 @ x2`` for stacks of matrices ``x1`` and vectors ``x2``."""
    _refuse_keywords("matvec", kwargs)
    return np.matmul(x1, np.expand_dims(x2, -1))[..., 0]


def _vecmat(x1, x2, /, **kwargs):
    """``conj(x1) @ x2`` for stacks of vectors ``x1`` and matrices ``x2``."""
    _refuse_keywords("vecmat", kwargs)
    return np.matmul(np.expand_dims(np.conj(x1), -2), x2)[..., 0, :]


def _divmod(x1, x2, /, **kwargs):
    """``(floor_divide, remainder)``: the quotient is piecewise constant."""
    _refuse_keywords("divmod", kwargs)
    return np.floor_divide(x1, x2), np.remainder(x1, x2)


def _exact_shift(x, plain):
    """``plain - x`` where ``plain`` is finite: 0.0 in value, -1 in derivative (so that
    ``v - shift`` keeps ``v``'s value, signed zeros included, and gains ``x``'s tangent)."""
    return np.where(np.isfinite(plain), plain - x, 0.0)


def _modf(x, /, **kwargs):
    """``(fractional part, integral part)``: NumPy's values; the fractional part has
    derivative 1, the integral part none."""
    _refuse_keywords("modf", kwargs)
    from ..markers import stop_gradient

    plain = stop_gradient(x)
    frac, whole = np.modf(plain)
    return frac - _exact_shift(x, plain), whole


def _compress(a, condition, axis=None, out=None):
    """``a.compress(condition, axis)``: the entries (along ``axis``, or of the flattened
    ``a``) where ``condition`` holds."""
    if out is not None:
        _refuse_keywords("compress", {"out": out})
    picked = np.flatnonzero(np.asarray(condition))
    if axis is None:
        return np.take(np.ravel(a), picked)
    return np.take(a, picked, axis=axis)


def _choose(a, choices, out=None, mode="raise"):
    """``a.choose(choices)``: ``choices[a[i]][i]`` at every position ``i`` (broadcast)."""
    if out is not None:
        _refuse_keywords("choose", {"out": out})
    index = np.asarray(a)
    n = len(choices)
    if mode == "wrap":
        index = index % n
    elif mode == "clip":
        index = np.clip(index, 0, n - 1)
    elif np.any((index < 0) | (index >= n)):
        raise ValueError("invalid entry in choice array")
    arrays = np.broadcast_arrays(index, *choices)
    stacked = np.stack(arrays[1:])
    return np.take_along_axis(stacked, arrays[0][None], axis=0)[0]


#: the functions this table gives entries (tests/test_composite_rules.py checks each one)
FUNCTIONS = [getattr(np, name) for name in ("vecdot", "matvec", "vecmat") if hasattr(np, name)]
for _f, _impl in zip(FUNCTIONS, (_vecdot, _matvec, _vecmat)):  # (vecdot: NumPy 2.0+, the others 2.2+)
    defimpl(_f, _impl)
defimpl(np.divmod, _divmod)
defimpl(np.modf, _modf)
defimpl(np.ndarray.compress, _compress)
defimpl(np.ndarray.choose, _choose)
defimpl(np.generic.squeeze, lambda x, /, axis=None: x)  # (a scalar squeezed is itself)
FUNCTIONS += [np.divmod, np.modf, np.ndarray.compress, np.ndarray.choose, np.generic.squeeze]


def _scalar_method(name):
    """NumPy's own definition of a NumPy scalar's method (``np.float64(x).round(2)``,
    ``.clip``, ``.reshape``, ``.cumsum``, ``.tolist``...): the array method of the scalar
    as a 0-d array, a 0-d result read back as a scalar."""
    array_method = getattr(np.ndarray, name)

    def method(scalar, /, *args, **kwargs):
        out = array_method(np.asarray(scalar), *args, **kwargs)
        return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out

    method.__name__ = method.__qualname__ = "generic_" + name
    return method


def _has_rule(f):
    return any(f in table for table in (PARTIALS, JVP, VJP, IMPLS, NONDIFF, SOLVERS))


#: NumPy scalars' methods differentiated through their ndarray twins' rules (those without
#: a rule of their own whose twin has one; this module is imported after every table)
SCALAR_METHODS = [getattr(np.generic, _name) for _name in sorted(vars(np.generic))
                  if not _name.startswith("_") and callable(vars(np.generic)[_name])
                  and callable(vars(np.ndarray).get(_name)) and not _has_rule(vars(np.generic)[_name])
                  and _has_rule(vars(np.ndarray)[_name])]
for _f in SCALAR_METHODS:
    defimpl(_f, _scalar_method(_f.__name__))
