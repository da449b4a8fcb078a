"""Rules for NumPy's functions that write values into an array in place: ``np.place``,
``np.putmask``, ``np.put`` (and ``ndarray.put``), ``ndarray.fill`` and
``np.fill_diagonal``.

Each runs as a subscript assignment ``a[positions] = values`` (``defimpl``), which
both differentiation contexts follow like any other write: the array's tangent (or
tape node) gets the written values' derivatives, and the overwritten elements'
derivatives are dropped.  The positions and the cyclic repetition of ``values`` are
NumPy's; where one call writes one position twice, only its last write is made (as
NumPy keeps only the last), so the derivative of the discarded value is not counted.
"""
import numpy as np

from .registry import defimpl


def _write(a, flat_positions, values):
    """``a.flat[flat_positions[i]] = values[i % len(values)]``, the last write to a
    position winning."""
    flat_positions = np.asarray(flat_positions, dtype=np.intp)
    if flat_positions.size == 0:
        return
    values = np.ravel(values)
    values = values[np.arange(flat_positions.size) % np.size(values)]
    reversed_positions = flat_positions[::-1]
    _, first = np.unique(reversed_positions, return_index=True)
    keep = flat_positions.size - 1 - first  # (each position's last write)
    if np.ndim(a) == 0:  # (a 0-d array has one position)
        a[()] = values[keep[0]]
        return
    a[np.unravel_index(flat_positions[keep], np.shape(a))] = values[keep]


def _place(arr, mask, vals):
    """``np.place``: the masked positions get ``vals`` in turn, repeated as needed."""
    if not isinstance(arr, np.ndarray):
        raise TypeError("argument 1 must be numpy.ndarray, not %s" % type(arr).__name__)
    mask = np.ravel(np.asarray(mask, dtype=bool))
    if mask.size != np.size(arr):
        raise ValueError("place: mask and data must be the same size")
    positions = np.flatnonzero(mask)
    if positions.size and np.size(vals) == 0:
        raise ValueError("Cannot insert from an empty array!")
    _write(arr, positions, vals)


def _putmask(a, mask, values):
    """``np.putmask``: ``a.flat[n] = values.flat[n % len(values)]`` where the mask is set."""
    if not isinstance(a, np.ndarray):
        raise TypeError("putmask: first argument must be an array")
    mask = np.ravel(np.asarray(mask, dtype=bool))
    if mask.size != np.size(a):
        raise ValueError("putmask: mask and data must be the same size")
    positions = np.flatnonzero(mask)
    if positions.size == 0:
        return
    if np.size(values) == 0:
        raise ValueError("putmask: values must not be empty when the mask selects elements")
    flat = np.ravel(values)
    _write(a, positions, flat[positions % np.size(flat)])


def _put(a, ind, v, mode="raise"):
    """``np.put``: ``a.flat[ind] = v`` (``mode``: what out-of-range indices do)."""
    if not isinstance(a, np.ndarray):
        raise TypeError("argument 1 must be numpy.ndarray, not %s" % type(a).__name__)
    n = np.size(a)
    ind = np.ravel(np.asarray(ind))
    if ind.dtype.kind not in "iub":
        ind = ind.astype(np.intp, casting="same_kind")
    if mode == "wrap":
        ind = ind % n
    elif mode == "clip":
        ind = np.clip(ind, 0, n - 1)
    else:
        bad = (ind < -n) | (ind >= n)
        if np.any(bad):
            raise IndexError("index %d is out of bounds for axis 0 with size %d" % (ind[bad][0], n))
        ind = ind % n
    if ind.size and np.size(v) == 0:
        return
    _write(a, ind, v)


def _fill(a, value):
    """``a.fill(value)``."""
    a[...] = value


def _fill_diagonal(a, val, wrap=False):
    """``np.fill_diagonal``: the main diagonal's positions (NumPy's stride arithmetic)."""
    shape = np.shape(a)
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    end = None
    if len(shape) == 2:
        step = shape[1] + 1
        if not wrap:
            end = shape[1] * shape[1]
    else:
        if not np.all(np.diff(shape) == 0):
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(shape[:-1]).sum())
    _write(a, np.arange(np.size(a))[:end:step], val)


defimpl(np.place, _place)
defimpl(np.putmask, _putmask)
defimpl(np.put, _put)
defimpl(np.ndarray.put, _put)
defimpl(np.ndarray.fill, _fill)
defimpl(np.fill_diagonal, _fill_diagonal)
