"""Rules for views, iterators and array makers whose NumPy code escapes into C: strided
views (``as_strided``, hence ``sliding_window_view``, and SciPy's ``toeplitz``,
``hankel`` and ``circulant``), ``ndarray.flat``, ``np.broadcast`` and
``np.broadcast_arrays``, ``np.meshgrid``'s helpers, ``np.fromiter``.

A strided view reads elements of its argument at positions given by byte strides:
it is differentiated as a *gather* of those elements (``np.ravel(x)[positions]``), so
its value is a copy holding the same numbers; writing through it would not reach
``x``, so the copy is read-only and a write into it is refused.  A view that reads memory outside its argument has no derivative to follow and
is refused (:class:`capstan.NoRuleError`).
"""
import math
import weakref

import numpy as np

from overdub import Tagged, overdub
from overdub.tagging import context_of

from ..adcontext import ATTRIBUTES as _ATTRIBUTES
from .registry import TUPLE_PARAMETERS, defimpl, plain_valued

try:
    from scipy import linalg as _scipy_linalg
except ImportError:  # pragma: no cover - SciPy is optional
    _scipy_linalg = None


def _no_rule(message):
    from ..adcontext import NoRuleError
    return NoRuleError("capstan: " + message)


def _byte_offsets(shape, strides):
    """Byte offset of every element of an array of ``shape`` and ``strides``, C order."""
    out = np.zeros(shape, dtype=np.intp)
    for axis, (n, s) in enumerate(zip(shape, strides)):
        out = out + np.arange(n, dtype=np.intp).reshape((n,) + (1,) * (len(shape) - axis - 1)) * s
    return np.ravel(out)


def _as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    """``as_strided`` as a gather of the elements of ``x`` the view reads."""
    x = np.asarray(x)
    shape = np.shape(x) if shape is None else tuple(shape)
    strides = x.strides if strides is None else tuple(strides)
    own = _byte_offsets(np.shape(x), x.strides)
    read = _byte_offsets(shape, strides)
    order = np.argsort(own, kind="stable")
    ranked = own[order]
    slot = np.clip(np.searchsorted(ranked, read), 0, max(ranked.size - 1, 0))
    if read.size and (ranked.size == 0 or np.any(ranked[slot] != read)):
        raise _no_rule("np.lib.stride_tricks.as_strided reads memory outside the array it views, "
                       "so its derivative cannot be followed; index the array instead")
    out = np.reshape(np.ravel(x)[order[slot]], shape)
    _read_only(out, bool(writeable))  # (NumPy's view writes into x; this copy cannot)
    return out


def _read_only(value, refuse):
    """Make the copy standing for a strided view read-only (as NumPy's is with
    ``writeable=False``); remember it where NumPy's would be writeable (``refuse``)."""
    if type(value) is np.ndarray and value.flags.writeable:
        value.flags.writeable = False
        if refuse:
            key = id(value)
            GATHERED[key] = weakref.ref(value, lambda ref: GATHERED.pop(key, None) if GATHERED.get(key) is ref
                                        else None)


plain_valued(_read_only)  # (it runs on the plain value, outside the differentiation)
#: id -> weak reference of the read-only copies standing for strided views (for the refusal
#: of a write into one: ``ADContext.write``)
GATHERED = {}


def gathered_view(value):
    """Whether ``value`` (or an array it views) is a copy standing for a strided view."""
    while type(value) is np.ndarray:
        ref = GATHERED.get(id(value))
        if ref is not None:
            if ref() is value:
                return True
            del GATHERED[id(value)]
        value = value.base
    return False


def refuse_write(value):
    """The refusal of a write into the copy standing for a strided view (or None)."""
    if gathered_view(value):
        return _no_rule("a write through np.lib.stride_tricks.as_strided's view of an array being "
                        "differentiated: capstan reads that view as a copy of the elements it shows, "
                        "which a write cannot pass on to the array; write into the array itself "
                        "(index it), or copy the view first")
    return None


defimpl(np.lib.stride_tricks.as_strided, _as_strided)


# ----------------------------------------------------------------------------- SciPy's structured matrices
def _toeplitz(c, r=None):
    """``T[..., i, j] = c[..., i - j]`` below the diagonal, ``r[..., j - i]`` above."""
    c = np.atleast_1d(c)
    r = np.conjugate(c) if r is None else np.atleast_1d(r)
    batch = np.broadcast_shapes(np.shape(c)[:-1], np.shape(r)[:-1])  # (SciPy's batch dimensions)
    n, m = np.shape(c)[-1], np.shape(r)[-1]
    c, r = np.broadcast_to(c, batch + (n,)), np.broadcast_to(r, batch + (m,))
    vals = np.concatenate((c[..., ::-1], r[..., 1:]), axis=-1)
    return vals[..., (n - 1) - np.arange(n)[:, None] + np.arange(m)[None, :]]


def _hankel(c, r=None):
    """``H[i, j] = c[i + j]``, continued by ``r[1:]``."""
    c = np.asarray(c)
    r = np.zeros_like(c) if r is None else np.asarray(r)
    if np.ndim(c) > 1 or np.ndim(r) > 1:
        c, r = np.ravel(c), np.ravel(r)
    vals = np.concatenate((c, r[1:]))
    return vals[np.arange(np.size(c))[:, None] + np.arange(np.size(r))[None, :]]


def _circulant(c):
    """``C[..., i, j] = c[..., (i - j) % N]``."""
    c = np.atleast_1d(c)
    n = np.shape(c)[-1]
    return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def _solve_toeplitz(c_or_cr, b, check_finite=True):
    """``scipy.linalg.solve_toeplitz``: SciPy's own solution ``x`` (Levinson recursion), with
    the derivative of ``T x = b``, ``dx = T^-1 (db - dT x)``, added as a term whose value is
    exactly 0 (so that ``x`` keeps SciPy's value to the last bit)."""
    from ..markers import stop_gradient

    c, r = c_or_cr if isinstance(c_or_cr, tuple) else (c_or_cr, None)
    plain = stop_gradient((c, r, b))
    x = _scipy_linalg.solve_toeplitz(tuple(plain[:2]) if r is not None else plain[0], plain[2], check_finite)
    t = _toeplitz(c, r)
    step = np.linalg.solve(t, b - t @ x)
    return x + (step - stop_gradient(step))


if _scipy_linalg is not None:
    defimpl(_scipy_linalg.toeplitz, _toeplitz)
    defimpl(_scipy_linalg.solve_toeplitz, _solve_toeplitz)
    TUPLE_PARAMETERS.add(_scipy_linalg.solve_toeplitz)
    defimpl(_scipy_linalg.hankel, _hankel)
    defimpl(_scipy_linalg.circulant, _circulant)


# ----------------------------------------------------------------------------- ndarray.flat
def _flat(a):
    """``a.flat`` of a differentiated array: ``np.ravel(a)``, which indexes, iterates and
    (for a C-contiguous ``a``, whose ravel is a view) assigns like ``a.flat``.  For other
    arrays the ravel is a copy, made read-only so that a write cannot silently miss ``a``."""
    out = np.ravel(a)
    if np.ndim(a) and not a.flags.c_contiguous:
        out.setflags(write=False)
    return out


def flat_of(a):
    """The entry ``x.flat`` is read through (its rule runs :func:`_flat`)."""
    return a.flat


defimpl(flat_of, _flat)
_ATTRIBUTES["flat"] = flat_of  # (x.flat of a differentiated array x is flat_of(x))


# ----------------------------------------------------------------------------- broadcasting
class Broadcast:
    """What ``np.broadcast(*args)`` describes for differentiated arguments: the shape
    attributes, and iteration over tuples of elements that keep their derivatives."""

    def __init__(self, *args):
        parts = []
        for a in args:
            parts.extend(a.arrays if isinstance(a, Broadcast) else [a])
        self.arrays = parts
        self.shape = np.broadcast_shapes(*[np.shape(a) for a in parts])
        self.nd = self.ndim = len(self.shape)
        self.size = math.prod(self.shape)
        self.numiter = len(parts)
        self.index = 0

    @property
    def iters(self):
        raise _no_rule("np.broadcast(...).iters has no derivative rule; iterate the broadcast "
                       "object itself, or use np.broadcast_arrays")

    def reset(self):
        self.index = 0

    def __iter__(self):
        # iter() calls this method outside the context: the generator of the tuples is
        # made inside the context of the differentiated arrays, so that its reads keep
        # their derivatives
        for a in self.arrays:
            if type(a) is Tagged:
                return overdub(context_of(a), self._tuples)
        return self._tuples()

    def _tuples(self):
        columns = [np.ravel(np.broadcast_to(a, self.shape)) for a in self.arrays]
        while self.index < self.size:
            self.index += 1
            yield tuple(c[self.index - 1] for c in columns)


def _broadcast_arrays(*args, subok=False):
    """``np.broadcast_arrays``: every argument ``np.broadcast_to`` the common shape."""
    arrays = [np.asarray(a) for a in args]
    shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
    return tuple(a if np.shape(a) == shape else np.broadcast_to(a, shape) for a in arrays)


defimpl(np.broadcast, Broadcast)
defimpl(np.broadcast_arrays, _broadcast_arrays)


# ----------------------------------------------------------------------------- array makers
def _fromiter(iterable, dtype, count=-1, *, like=None):
    """``np.fromiter``: the first ``count`` values (all for ``-1``) as an array."""
    values = list(iterable)
    if count >= 0:
        if len(values) < count:
            raise ValueError("iterator too short: Expected %d but iterator had only %d items."
                             % (count, len(values)))
        values = values[:count]
    return np.array(values, dtype=dtype)


defimpl(np.fromiter, _fromiter)


def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """``np.meshgrid`` with reshapes in place of its ``x.shape = ...`` assignments."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    s0 = (1,) * ndim
    output = [np.reshape(np.asarray(x), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        output[0] = np.reshape(output[0], (1, -1) + s0[2:])
        output[1] = np.reshape(output[1], (-1, 1) + s0[2:])
    if not sparse:
        output = np.broadcast_arrays(*output)
    if copy:
        output = [np.array(x) for x in output]
    return tuple(output)


defimpl(np.meshgrid, _meshgrid)


def _corrcoef(x, y=None, rowvar=True, *args, dtype=None, **deprecated):
    """``np.corrcoef`` from ``np.cov``, with NumPy's arithmetic but no ``out=`` writes."""
    c = np.cov(x, y, rowvar, *args, dtype=dtype, **deprecated)
    if np.ndim(c) == 0:
        return c / c
    stddev = np.sqrt(np.real(np.diag(c)))
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    if np.iscomplexobj(c):
        return np.clip(np.real(c), -1, 1) + 1j * np.clip(np.imag(c), -1, 1)
    return np.clip(c, -1, 1)


defimpl(np.corrcoef, _corrcoef)


def _convolve(a, v, mode="full"):
    """``np.convolve`` as a product with the matrix of shifted copies of the shorter input
    (NumPy's C correlation would hold the inputs untagged)."""
    a, v = np.atleast_1d(a), np.atleast_1d(v)
    if np.ndim(a) != 1 or np.ndim(v) != 1:
        raise ValueError("object too deep for desired array")
    if len(v) > len(a):
        a, v = v, a
    if len(a) == 0:
        raise ValueError("a cannot be empty")
    if len(v) == 0:
        raise ValueError("v cannot be empty")
    n, m = len(a), len(v)
    shift = np.arange(n + m - 1)[None, :] - np.arange(n)[:, None]
    inside = (shift >= 0) & (shift < m)
    full = np.dot(a, np.where(inside, v[np.clip(shift, 0, m - 1)], 0))
    if mode == "full":
        return full
    if mode == "same":
        return full[(m - 1) // 2:(m - 1) // 2 + n]
    if mode == "valid":
        return full[m - 1:n]
    raise ValueError("mode must be one of 'valid', 'same', or 'full' (got %r)" % (mode,))


def _polymul(a1, a2):
    """``np.polymul`` over :func:`_convolve`."""
    truepoly = isinstance(a1, np.poly1d) or isinstance(a2, np.poly1d)
    a1, a2 = (a if isinstance(a, np.poly1d) else np.asarray(a) for a in (a1, a2))
    val = np.convolve(np.poly1d(a1).coeffs, np.poly1d(a2).coeffs)
    return np.poly1d(val) if truepoly else val


def _correlate(a, v, mode="valid"):
    """``np.correlate`` as a convolution with the conjugate reversed shorter input (NumPy
    swaps the inputs and reverses the result when ``v`` is the longer one)."""
    if np.ndim(a) == 0 or np.ndim(v) == 0:
        raise ValueError("object of too small depth for desired array")
    if np.ndim(a) == 1 and np.ndim(v) == 1 and len(v) > len(a):
        return np.conj(_convolve(v, np.conj(a[::-1]), mode))[::-1]
    return _convolve(a, np.conj(v[::-1]), mode)


defimpl(np.convolve, _convolve)
defimpl(np.correlate, _correlate)
defimpl(np.polymul, _polymul)


def _ndenumerate(arr):
    """``np.ndenumerate``: ``(index, element)`` pairs in C order, the elements read by
    subscript (so that they keep their derivatives)."""
    a = np.asarray(arr)
    for index in np.ndindex(*np.shape(a)):
        yield index, a[index]


defimpl(np.ndenumerate, _ndenumerate)
