"""Python equivalents of NumPy's C helpers that only combine or reorganise values:
the methods of every ufunc (``reduce``, ``accumulate``, ``outer``, ``at``), NumPy 2's
``_array_converter`` (behind ``ediff1d``, ``unique``, ``insert``, ``delete``,
``apply_along_axis``...), ``np.unique``'s hash table and ``ndarray.tolist``.

Each is differentiated by running its equivalent in the C function's place
(``defimpl``), written with operations that have rules: a ``ufunc`` method becomes
calls of the ufunc itself, so any ufunc with a rule gets its methods for free.
``np.add.reduce`` and the other methods with a NumPy function of their own
(``np.sum``...) keep going to that function (``adcontext._UFUNC_REDUCTIONS``).
"""
import numpy as np

from .registry import defimpl, plain_valued

try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # pragma: no cover - NumPy 1.x
    from numpy.core.numeric import normalize_axis_tuple

try:
    from numpy._core._multiarray_umath import _array_converter
except ImportError:  # pragma: no cover - NumPy 1.x has no such helper
    _array_converter = None


# ----------------------------------------------------------------------------- ufunc methods
def _reduce_plain_max(a, axes, keepdims, lowest):
    """``fmax.reduce`` (``lowest=-inf``) or ``fmin.reduce`` (``inf``): the extreme of the
    non-NaN elements (NaN where all are NaN), as a selection ``np.max`` differentiates."""
    nan = np.isnan(a)
    finite = np.where(nan, lowest, a)
    picked = np.max(finite, axis=axes, keepdims=keepdims) if lowest < 0 else \
        np.min(finite, axis=axes, keepdims=keepdims)
    return np.where(np.all(nan, axis=axes, keepdims=keepdims), np.nan, picked)


def _moved(a, axes):
    """``a`` with ``axes`` flattened into a leading axis (the rest in order after it)."""
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = np.transpose(a, list(axes) + rest)
    return np.reshape(moved, (-1,) + tuple(a.shape[i] for i in rest))


def ufunc_reduce(ufunc, array, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue,
                 where=True):
    """``ufunc.reduce``: the ufunc folded over ``axis`` (left to right, as NumPy does for
    the ufuncs without a reordering of their own); ``logaddexp``/``logaddexp2`` as a
    shifted log-sum-exp and ``fmax``/``fmin`` as a NaN-skipping selection."""
    if ufunc.nin != 2 or ufunc.nout != 1:
        raise ValueError("reduce only supported for binary functions")
    a = np.asarray(array) if dtype is None else np.asarray(array).astype(dtype)
    axes = tuple(range(a.ndim)) if axis is None else normalize_axis_tuple(axis, a.ndim)
    plain = where is True and initial is np._NoValue
    if plain and a.size and ufunc in (np.logaddexp, np.logaddexp2):
        base = np.e if ufunc is np.logaddexp else 2.0
        shift = _shift(a, axes)
        total = np.sum(np.power(base, a - shift), axis=axes, keepdims=True)
        r = (np.log(total) if ufunc is np.logaddexp else np.log2(total)) + shift
        r = r if keepdims else np.reshape(r, tuple(n for i, n in enumerate(a.shape) if i not in axes))
    elif plain and a.size and ufunc in (np.fmax, np.fmin):
        r = _reduce_plain_max(a, axes, keepdims, -np.inf if ufunc is np.fmax else np.inf)
    else:
        r = _fold(ufunc, a, axes, initial, where)
        if keepdims:
            r = np.reshape(r, tuple(1 if i in axes else n for i, n in enumerate(a.shape)))
    if out is not None:
        target = out[0] if type(out) is tuple else out
        target[...] = r
        return target
    return r[()] if type(r) is np.ndarray and r.ndim == 0 else r


def _shift(a, axes):
    """The plain largest finite element over ``axes`` (0 where none is finite)."""
    return _plain_shift(np.real(a), axes)


def _plain_shift(a, axes):
    m = np.max(np.where(np.isfinite(a), a, -np.inf), axis=axes, keepdims=True)
    return np.where(np.isfinite(m), m, 0.0)


plain_valued(_plain_shift)


def _fold(ufunc, a, axes, initial, where):
    m = _moved(a, axes)
    mask = None if where is True else _moved(np.broadcast_to(np.asarray(where), a.shape), axes)
    if initial is np._NoValue and mask is not None:
        initial = ufunc.identity
        if initial is None:
            raise ValueError("reduction operation '%s' does not have an identity, so to use a where "
                             "mask one has to specify 'initial'" % ufunc.__name__)
    if initial is np._NoValue or initial is None:
        if m.shape[0] == 0:
            raise ValueError("zero-size array to reduction operation %s which has no identity"
                             % ufunc.__name__)
        r, start = m[0], 1
    else:
        r, start = np.full(m.shape[1:], initial, dtype=np.result_type(a, initial)), 0
    for i in range(start, m.shape[0]):
        step = ufunc(r, m[i])
        r = step if mask is None else np.where(mask[i], step, r)
    return r


def ufunc_accumulate(ufunc, array, axis=0, dtype=None, out=None):
    """``ufunc.accumulate``: every partial fold along ``axis``."""
    a = np.asarray(array) if dtype is None else np.asarray(array).astype(dtype)
    moved = np.moveaxis(a, axis, 0)
    partials = []
    for i in range(moved.shape[0]):
        partials.append(moved[0] if i == 0 else ufunc(partials[-1], moved[i]))
    r = np.moveaxis(np.stack(partials), 0, axis) if partials else np.array(a, copy=True)
    if out is not None:
        target = out[0] if type(out) is tuple else out
        target[...] = r
        return target
    return r


def ufunc_outer(ufunc, a, b, /, **kwargs):
    """``ufunc.outer(a, b)``: the ufunc of ``a`` (with ``b``'s axes appended) and ``b``."""
    a = np.asarray(a)
    return ufunc(np.reshape(a, np.shape(a) + (1,) * np.ndim(b)), b, **kwargs)


def ufunc_at(ufunc, a, indices, b=None, /):
    """``ufunc.at(a, indices, b)``: ``a[i] = ufunc(a[i], b)`` for each selected position in
    turn (unbuffered: a position selected twice is updated twice)."""
    if not isinstance(a, np.ndarray):
        raise TypeError("first operand of ufunc.at must be an array")
    positions = np.arange(a.size).reshape(a.shape)[indices]
    flat = np.ravel(positions)
    if b is not None:
        values = np.ravel(np.broadcast_to(b, positions.shape))
    if ufunc is np.add or ufunc is np.subtract:  # (one sum per distinct position)
        unique = np.unique(flat)
        onehot = (unique[:, None] == flat[None, :]).astype(np.result_type(a))
        where = np.unravel_index(unique, a.shape)
        total = onehot @ values
        a[where] = a[where] + total if ufunc is np.add else a[where] - total
        return None
    for k, p in enumerate(flat):
        where = np.unravel_index(p, a.shape)
        a[where] = ufunc(a[where]) if b is None else ufunc(a[where], values[k])
    return None


def ufunc_reduceat(ufunc, array, indices, axis=0, dtype=None, out=None):
    """``ufunc.reduceat``: for each ``i``, the fold of ``array[indices[i]:indices[i + 1]]``
    along ``axis`` (to the end for the last), or ``array[indices[i]]`` itself where
    ``indices[i] >= indices[i + 1]``."""
    a = np.asarray(array) if dtype is None else np.asarray(array).astype(dtype)
    axis = normalize_axis_tuple(axis, a.ndim)[0]
    idx = np.asarray(indices)
    if idx.ndim != 1:
        raise ValueError("index array must be 1-D")
    n = a.shape[axis]
    if np.any((idx < 0) | (idx >= n)):
        bad = int(idx[(idx < 0) | (idx >= n)][0])
        raise IndexError("index %d out-of-bounds in %s.reduceat [0, %d)" % (bad, ufunc.__name__, n))
    moved = np.moveaxis(a, axis, 0)
    parts = []
    for k, start in enumerate(idx):
        stop = int(idx[k + 1]) if k + 1 < len(idx) else n
        start = int(start)
        parts.append(moved[start] if start >= stop else ufunc.reduce(moved[start:stop], axis=0))
    r = np.moveaxis(np.stack(parts), 0, axis)
    # NumPy's own values (its summation order differs from reduce's), with r's derivative
    from ..markers import stop_gradient
    r = _plain_reduceat(ufunc, a, idx, axis) + (r - stop_gradient(r))
    if out is not None:
        target = out[0] if type(out) is tuple else out
        target[...] = r
        return target
    return r


def _plain_reduceat(ufunc, a, idx, axis):
    return ufunc.reduceat(a, idx, axis=axis)


plain_valued(_plain_reduceat)


#: ufunc method name -> its Python equivalent, called as ``equivalent(ufunc, *args, **kwargs)``
METHODS = {"reduce": ufunc_reduce, "accumulate": ufunc_accumulate, "outer": ufunc_outer, "at": ufunc_at,
           "reduceat": ufunc_reduceat}


# ----------------------------------------------------------------------------- _array_converter
class ArrayConverter:
    """NumPy 2's ``_array_converter(*array_likes)``: the inputs as arrays (``conv[i]``,
    ``as_arrays``), their ``result_type`` and ``wrap`` of a result (a scalar when every
    input was a scalar)."""

    def __init__(self, *array_likes):
        self._inputs = array_likes
        self._arrays = tuple(np.asarray(a) for a in array_likes)
        self.scalar_input = tuple(not isinstance(a, (np.ndarray, np.generic)) and np.ndim(a) == 0
                                  and not hasattr(a, "__array__") for a in array_likes)

    def __getitem__(self, i):
        return self._arrays[i]

    def __len__(self):
        return len(self._arrays)

    def as_arrays(self, subok=True, pyscalars="convert_if_no_array"):
        if pyscalars == "convert" or (pyscalars == "convert_if_no_array" and all(self.scalar_input)):
            return self._arrays
        return tuple(x if scalar else a for x, a, scalar in zip(self._inputs, self._arrays, self.scalar_input))

    def result_type(self, extra_dtype=None, ensure_inexact=False):
        parts = [x if scalar else a for x, a, scalar in zip(self._inputs, self._arrays, self.scalar_input)]
        if extra_dtype is not None:
            parts.append(extra_dtype)
        if ensure_inexact:
            parts.append(0.0)
        return np.result_type(*parts)

    def wrap(self, arr, /, to_scalar=None):
        """An array as it is (its scalar, for a 0-d one, when ``to_scalar`` or every input
        was a scalar); anything else (a NumPy scalar, a tuple of index arrays from
        ``nonzero``) unchanged, as NumPy's converter does."""
        if not isinstance(arr, np.ndarray):
            return arr
        if to_scalar is None:
            to_scalar = all(self.scalar_input)
        return arr[()] if to_scalar and arr.ndim == 0 else arr


def _tolist(a):
    """``ndarray.tolist``: nested lists of Python numbers (floats and complexes keep
    their derivatives)."""
    kind = np.result_type(a).kind
    if np.ndim(a) == 0:
        return float(a) if kind == "f" else complex(a) if kind == "c" else np.asarray(a).item()
    return [_tolist(a[i]) for i in range(len(a))]


def _converter_wrap(conv, arr, /, to_scalar=None):
    """``wrap`` of a converter NumPy made from plain inputs (``np.choose``'s
    ``_wrapit``), given a differentiated result: the array itself, or its scalar, as the
    converter gives for the plain result; a subclass it would wrap into is refused."""
    from ..markers import stop_gradient

    plain = conv.wrap(stop_gradient(arr), to_scalar=to_scalar)
    out = np.asarray(arr)
    if type(plain) is np.ndarray:
        return out
    if isinstance(plain, (np.generic, float, complex, int)):
        return out[()]
    from ..losses import NoRuleError

    raise NoRuleError("capstan: numpy's array converter would wrap a differentiated result into a %s; "
                      "there is no derivative rule for that" % type(plain).__name__)


if _array_converter is not None:
    defimpl(_array_converter, ArrayConverter)
    defimpl(_array_converter.wrap, _converter_wrap)
try:  # NumPy 2.3+: np.unique's hash table, which answers NotImplemented for what it cannot do
    from numpy._core._multiarray_umath import _unique_hash
except ImportError:  # pragma: no cover
    _unique_hash = None
if _unique_hash is not None:  # (values being differentiated take np.unique's sorting way)
    defimpl(_unique_hash, lambda ar, **kw: NotImplemented)
defimpl(np.ndarray.tolist, _tolist)
#: the functions this table gives entries (tests/test_coverage_rules.py checks each one)
FUNCTIONS = [f for f in (_array_converter, getattr(_array_converter, "wrap", None), _unique_hash,
                          np.ndarray.tolist, _plain_shift) if f is not None]
