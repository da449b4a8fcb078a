"""Views: NumPy arrays that share memory with another array (``v = a[1:]``).

A write through one of them changes the other, so the differentiation contexts keep
derivative information per *memory root* (the array that owns the memory) and see
every view as a region of it, located by geometry: its offset and strides inside the
root.  This module only computes those regions."""
import numpy as np


def root_of(a):
    """The array owning ``a``'s memory (``a`` itself unless it is a view)."""
    while type(a.base) is np.ndarray:
        a = a.base
    return a


def _geometry(view, root):
    """``(offset in elements, strides in elements, part)`` of ``view`` inside C-contiguous
    ``root``, or ``None`` when the view cannot be located that way.  ``part`` is ``None``
    for a view of the root's own dtype, ``"real"`` or ``"imag"`` for a float view of the
    real or imaginary parts of a complex root (``c.real``, ``c.imag``, ``np.real(c)``)."""
    if not root.flags.c_contiguous:
        return None
    size = root.itemsize
    offset = view.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    part = None
    if view.dtype != root.dtype:
        if root.dtype.kind != "c" or view.dtype != root.real.dtype or offset % size not in (0, size // 2):
            return None
        part = "imag" if offset % size else "real"
        offset -= offset % size
    if offset % size or any(s % size for s in view.strides):
        return None
    return offset // size, tuple(s // size for s in view.strides), part


def part(view, root):
    """``"real"`` or ``"imag"`` when ``view`` is a float view of those parts of the complex
    ``root``, else ``None``."""
    geo = _geometry(view, root)
    return None if geo is None else geo[2]


def positions(view, root):
    """Flat (C-order) positions in ``root`` of each element of ``view``, shaped like it (for
    a view of the real or imaginary parts, of the complex elements they belong to)."""
    geo = _geometry(view, root)
    if geo is None:
        raise TypeError("capstan: cannot follow a write through this view of a differentiated "
                        "array (dtype change or non-contiguous base); copy the array first")
    offset, strides, _ = geo
    index = np.arange(root.size, dtype=np.intp)
    return np.lib.stride_tricks.as_strided(index[offset:], shape=view.shape,
                                           strides=tuple(s * index.itemsize for s in strides)).copy()


def region(buffer, root, view):
    """The part of ``buffer`` (same layout as ``root``, plus leading axes) that ``view``
    occupies in ``root``: a view of ``buffer``, so writes into it land in ``buffer``, with
    ``buffer``'s memory root as its own (an enclosing differentiation's shadow of
    ``buffer`` covers it).  ``None`` where ``view`` cannot be located in ``root``."""
    geo = _geometry(view, root)
    if geo is None or buffer.dtype.itemsize == 0:
        return None
    offset, strides, part = geo
    lead = buffer.shape[:buffer.ndim - root.ndim]
    item = buffer.itemsize
    lead_strides = buffer.strides[:len(lead)]
    out = np.ndarray(lead + view.shape, buffer.dtype, buffer=buffer.reshape(-1), offset=offset * item,
                     strides=lead_strides + tuple(s * item for s in strides))
    if part is None:
        return out
    if buffer.dtype.kind != "c":
        return out if part == "real" else None
    return out.real if part == "real" else out.imag


def returned_argument(ans, vals, metas):
    """The position of the differentiated argument that ``f`` returned as it is (the
    same array object: the identity, whose result must stay the argument itself so that
    writes through either name are seen by both), else ``None``."""
    for i, v in enumerate(vals):
        if v is ans and metas[i] is not None:
            return i
    return None
