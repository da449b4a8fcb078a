"""Sparsity detection: which outputs of ``f`` depend on which inputs, and which pairs
of inputs interact (the nonzeros of a Jacobian or Hessian), found by running ``f``
unmodified on values that carry *index sets*.

:class:`PatternCtx` is a differentiation context like forward mode, except that the
"tangent" of a value is the set of input positions it depends on: a Python ``int``
bit mask for a scalar, a :class:`Pat` (one set per element, CSR layout) for an array.
Each primitive's rule comes from the rule tables (``capstan.rules.pattern_rules``):
elementwise functions union their differentiated arguments' sets (after
broadcasting), shape functions move sets around, reductions union them, ``@``
combines them; a function with a derivative rule but no pattern rule makes its
result depend on every input it was given (a one-time warning says so): a pattern
may have extra entries, never missing ones.  Sets follow *structure*, not values:
``x * y`` depends on ``x`` even where ``y`` happens to be 0.

Second order: every operation whose second derivative may be nonzero (``SECOND``)
records which sets meet (``x * y``: the pairs of ``x``'s set with ``y``'s); the
Hessian pattern is the union of those products, one set shared by the whole run.

Branches: a comparison (any function without derivative) on a tracked value is
computed on the real values, so ``f`` takes the branch it takes at ``x``; its result
is kept as a *guard*.  The pattern holds for every input taking the same branches;
prepared sparse derivatives check the guards on each evaluation
(``capstan.sparse``).
"""
import math
import operator
import warnings

from typing import Any, Callable

import numpy as np

from overdub import Tagged, overdub, primitive
from overdub._native import capstan_native
from overdub.tagging import metadata_of, tag_of, value_of

from . import losses, structure
from .adcontext import INPLACE, ADContext, out_argument
from .aliasing import positions, returned_argument, root_of
from .nesting import level
from .pool import borrowed
from .rules import pattern_rules  # noqa: F401  (fills PATTERN and SECOND)
from .rules import registry
from .rules.numpy_rules import _axes  # (axis arguments read as NumPy reads them)

_PARTIALS, _PATTERN, _SECOND = registry.PARTIALS, registry.PATTERN, registry.SECOND
_SCALARS = (float, int, np.float64, complex, np.complex128, np.float32)
_FLOATS = (float, np.float64)
_warned: set[Any] = set()


# ----------------------------------------------------------------------------- index sets
class Rows:
    """Index sets of ``m`` elements over ``n`` inputs in CSR layout: the set of element
    ``r`` is ``indices[indptr[r]:indptr[r + 1]]``, sorted, without repeats."""

    __slots__ = ("indptr", "indices", "n", "keys")

    def __init__(self, indptr, indices, n, keys=None):
        self.indptr, self.indices, self.n = indptr, indices, n
        self.keys = keys  # (the sets as sorted keys, when known: see _keys)

    @property
    def m(self):
        return len(self.indptr) - 1

    def to_scipy(self, shape=None):
        import scipy.sparse as sp

        shape = (self.m, self.n) if shape is None else shape
        return sp.csr_array((np.ones(len(self.indices), dtype=bool), self.indices.astype(np.int32)
                             if self.n < 2 ** 31 else self.indices, self.indptr), shape=shape)


_I = np.int64


def empty_rows(m, n):
    return Rows(np.zeros(m + 1, _I), np.zeros(0, _I), n)


def identity_rows(n):
    return Rows(np.arange(n + 1, dtype=_I), np.arange(n, dtype=_I), n)


def sorted_unique(a):
    """``np.unique(a)`` by sorting (NumPy 2's hashing ``unique`` is slower on int keys; a
    stable sort merges the sorted runs a union is made of in linear time)."""
    a = np.sort(a, kind="stable")
    if len(a) < 2:
        return a
    keep = np.empty(len(a), bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


_SHIFT = 32  # a key is ``row << 32 | column``: shifts and masks, no division (n < 2**32)
_LOW = (1 << _SHIFT) - 1


def _key(rows, columns):
    return (rows << _SHIFT) | columns


def _from_keys(keys, m, n):
    """Rows from sorted unique keys ``_key(row, column)``."""
    indptr = np.zeros(m + 1, _I)
    np.cumsum(np.bincount(keys >> _SHIFT, minlength=m), out=indptr[1:])
    return Rows(indptr, keys & _LOW, n, keys)


def _keys(R):
    if R.keys is None:
        R.keys = _key(np.repeat(np.arange(R.m, dtype=_I), np.diff(R.indptr)), R.indices)
    return R.keys


def _width(R):
    """``w`` when every set of ``R`` has exactly ``w`` elements, else ``None``."""
    m, total = R.m, len(R.indices)
    if m == 0 or total % m:
        return None
    w = total // m
    return w if np.array_equal(R.indptr, np.arange(0, total + 1, w, dtype=_I) if w else R.indptr * 0) else None


def gather(R, idx):
    """Rows ``R[idx[k]]`` for each ``k`` (``idx[k] < 0``: an empty set)."""
    idx = np.asarray(idx, dtype=_I).ravel()
    w = _width(R) if len(idx) and idx.min() >= 0 else None
    if w:  # (sets of one size, every one read: np.roll of the inputs' own sets)
        return Rows(np.arange(0, len(idx) * w + 1, w, dtype=_I), R.indices.reshape(-1, w)[idx].ravel(), R.n)
    safe = np.where(idx >= 0, idx, 0)
    starts = R.indptr[safe]
    lens = np.where(idx >= 0, R.indptr[safe + 1] - starts, 0)
    indptr = np.zeros(len(idx) + 1, _I)
    np.cumsum(lens, out=indptr[1:])
    total = int(indptr[-1])
    if total == 0:
        return Rows(indptr, np.zeros(0, _I), R.n)
    pos = np.arange(total, dtype=_I) - np.repeat(indptr[:-1] - starts, lens)
    return Rows(indptr, R.indices[pos], R.n)


def scatter(R, src, dst, m):
    """Rows of ``m`` elements where element ``dst[k]`` joins the set ``R[src[k]]``."""
    src = np.asarray(src, dtype=_I).ravel()
    dst = np.asarray(dst, dtype=_I).ravel()
    G = gather(R, src)
    if not len(G.indices):
        return empty_rows(m, R.n)
    keys = _key(np.repeat(dst, np.diff(G.indptr)), G.indices)
    return _from_keys(sorted_unique(keys), m, R.n)


def union(parts):
    """The elementwise union of several Rows with the same number of elements."""
    parts = [p for p in parts if len(p.indices)] or parts[:1]
    first = parts[0]
    if all(p is first or (np.array_equal(p.indptr, first.indptr) and np.array_equal(p.indices, first.indices))
           for p in parts[1:]):
        return first
    return _from_keys(sorted_unique(np.concatenate([_keys(p) for p in parts])), first.m, first.n)


def vstack(parts, n):
    if not parts:
        return empty_rows(0, n)
    if len(parts) == 1:
        return parts[0]
    ptrs, offset = [np.zeros(1, _I)], 0
    for p in parts:
        ptrs.append(p.indptr[1:] + offset)
        offset += int(p.indptr[-1])
    return Rows(np.concatenate(ptrs), np.concatenate([p.indices for p in parts]), n)


def bits(mask):
    """The positions set in ``mask``, ascending."""
    if mask.bit_count() > 24:
        packed = np.frombuffer(mask.to_bytes((mask.bit_length() + 7) // 8, "little"), np.uint8)
        return np.flatnonzero(np.unpackbits(packed, bitorder="little")).tolist()
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def rows_from_masks(masks, n):
    """Rows whose sets are the bit masks ``masks`` (a list of ints)."""
    unique, ids = distinct_masks(masks, n)
    return gather(unique, ids)


def distinct_masks(masks, n):
    """``(Rows, ids)``: the sets of the distinct masks among ``masks`` (a list of ints, or
    of tuples of ints), told apart by identity, in order of first appearance, and the
    number of each int's distinct mask (one per int, in order).  In C, one pass over the
    masks' digits (``_capstan_native.mask_table``); else :func:`_distinct_masks`."""
    if capstan_native is None:
        return _distinct_masks(masks, n)
    indptr, indices, ids = capstan_native.mask_table(masks)
    return Rows(np.frombuffer(indptr, _I), np.frombuffer(indices, _I), n), np.frombuffer(ids, _I)


def _distinct_masks(masks, n):
    """The pure-Python reference of :func:`distinct_masks`.  Masks whose set bits span
    at most 64 positions (the usual case: a scalar loop's values depend on a few
    neighbouring inputs) are converted together, as 64-bit words shifted down to their
    lowest bit, without a Python loop over their bits."""
    if masks and type(masks[0]) is tuple:
        masks = [m for ms in masks for m in ms]
    index: dict[int, int] = {}  # id of a mask -> its number (masks are big ints: slow to hash;
    unique = []  # the same value is mostly the same object, and ``masks`` keeps each alive)
    ids = []
    for m in masks:
        k = index.get(id(m))
        if k is None:
            k = index[id(m)] = len(unique)
            unique.append(m)
        ids.append(k)
    # each mask's top 64 bits (a shift of a big int costs only the digits it keeps) hold all
    # of its bits when their counts agree
    shifts = [max(m.bit_length() - 64, 0) for m in unique]
    tops = [m >> s for m, s in zip(unique, shifts)]
    near = [k for k, (m, top) in enumerate(zip(unique, tops)) if top.bit_count() == m.bit_count()]
    counts = np.zeros(len(unique), _I)
    found_rows, found_cols = [], []
    if near:
        words = np.array([tops[k] for k in near], dtype=np.uint64)
        flags = np.unpackbits(words.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        r, c = np.nonzero(flags)
        near_ids = np.array(near, _I)
        found_rows.append(near_ids[r])
        found_cols.append(c.astype(_I) + np.array(shifts, _I)[near_ids][r])
    wide = set(range(len(unique))).difference(near) if len(near) != len(unique) else ()
    for k in sorted(wide):
        b = bits(unique[k])
        found_rows.append(np.full(len(b), k, _I))
        found_cols.append(np.array(b, _I))
    if found_rows:
        rows, cols = np.concatenate(found_rows), np.concatenate(found_cols)
        order = np.argsort(rows, kind="stable")  # (each unique mask's bits stay ascending)
        rows, cols = rows[order], cols[order]
        counts = np.bincount(rows, minlength=len(unique)).astype(_I)
    else:
        cols = np.zeros(0, _I)
    uptr = np.zeros(len(unique) + 1, _I)
    np.cumsum(counts, out=uptr[1:])
    return Rows(uptr, cols, n), np.array(ids, _I)


def row_mask(R, i):
    """The set of element ``i`` of ``R`` as a bit mask."""
    cols = R.indices[R.indptr[i]:R.indptr[i + 1]]
    if len(cols) > 16:
        flags = np.zeros(int(cols[-1]) + 1, bool)
        flags[cols] = True
        return int.from_bytes(np.packbits(flags, bitorder="little").tobytes(), "little")
    m = 0
    for j in cols.tolist():
        m |= 1 << j
    return m


def repeated(mask, m, n):
    """``m`` elements, each with the set ``mask``."""
    b = np.array(bits(mask), dtype=_I)
    return Rows(np.arange(m + 1, dtype=_I) * len(b), np.tile(b, m), n)


def _union_row(R):
    """One set: the union of all of ``R``'s."""
    cols = sorted_unique(R.indices)
    return Rows(np.array([0, len(cols)], _I), cols, R.n)


class Pat:
    """The index sets of an array's elements (C order).  A *view* (``root`` set) reads
    and writes its root's sets through ``where``, the root positions of its elements,
    so that writes through either name are seen by both; a root keeps scalar writes
    aside (``pending``) until its sets are read as a whole."""

    __slots__ = ("shape", "n", "_rows", "pending", "root", "where", "version", "_seen", "identity")

    def __init__(self, shape, n, rows=None, root=None, where=None):
        self.shape, self.n, self._rows, self.root, self.where = tuple(shape), n, rows, root, where
        self.identity = False  # (the input itself, unwritten: element i's set is {i})
        self.pending = {}
        self.version = 0  # (a root's count of writes: views keep what they read until it changes)
        self._seen = None

    @property
    def size(self):
        return math.prod(self.shape)

    def rows(self):
        if self.root is not None:
            root = self.root
            if self._seen is None or self._seen[0] != root.version or root.pending:
                self._seen = (root.version, gather(root.rows(), self.where.ravel()))
            return self._seen[1]
        if self.pending:
            pos = np.fromiter(self.pending, _I, len(self.pending))
            new = rows_from_masks(list(self.pending.values()), self.n)
            self.pending = {}
            self._replace(pos, new)
        return self._rows

    def mask(self, i):
        """The set of flat element ``i`` as a bit mask."""
        if self.root is not None:
            return self.root.mask(int(self.where.flat[i]))
        m = self.pending.get(i)
        if m is not None:
            return m
        return 1 << i if self.identity else row_mask(self._rows, i)

    def root_positions(self):
        return self.where if self.root is not None else np.arange(self.size, dtype=_I).reshape(self.shape)

    def write(self, pos, src):
        """Elements at flat positions ``pos`` get the sets ``src`` (a bit mask for all of
        them, or Rows aligned with ``pos``)."""
        pos = np.asarray(pos, dtype=_I).ravel()
        if self.root is not None:
            self.root.write(self.where.ravel()[pos], src)
            return
        self.version += 1
        if type(src) is int:
            if len(pos) == 1:
                self.pending[int(pos[0])] = src
                return
            src = repeated(src, len(pos), self.n)
        for p in pos.tolist():
            self.pending.pop(p, None)
        self.rows()
        self._replace(pos, src)

    def _replace(self, pos, new):
        self.identity = False
        size = self.size
        idx = np.arange(size, dtype=_I)
        idx[pos] = size + np.arange(len(pos), dtype=_I)
        self._rows = gather(vstack([self._rows, new], self.n), idx)


# ----------------------------------------------------------------------------- the context
class PatternCtx(ADContext):
    """Runs ``f`` on values carrying index sets (see the module docstring)."""

    mode = "sparsity detection"

    def __init__(self):
        super().__init__()
        self._clear()

    def _clear(self):
        self.n = 0
        self.second = False
        self.pairs = []  # (Rows, Rows) aligned: their elements' sets interact
        self.scalar_pairs = []  # (mask, mask)
        self.decisions = []  # (function, result) of each decision taken on a tracked value

    def reset(self):
        super().reset()
        self._clear()

    # -- rules --------------------------------------------------------------------------------
    def compute(self, f, vals, metas, kwargs, args, run, foreign):
        if foreign is not None:
            raise TypeError("capstan: sparsity detection cannot run inside another differentiation "
                            "(%s was given values of an enclosing one)" % getattr(f, "__name__", f))
        inplace = f in INPLACE and type(vals[0]) is np.ndarray
        ans = run(INPLACE[f], *vals) if inplace else run(f, *vals, **kwargs)
        if type(ans) is np.ndarray and not inplace and out_argument(kwargs) is None:
            same = returned_argument(ans, vals, metas)
            if same is not None:
                return args[same]
        if f in _PARTIALS:
            meta = self._elementwise(f, ans, vals, metas)
        elif f in registry.PLAIN_VALUED:  # (plain values: scipy.stats' validity plans, shapes...)
            return ans
        else:
            kind = _PATTERN.get(f)
            meta = getattr(self, "_" + kind)(f, ans, vals, metas, kwargs) if kind else None
            if meta is None:
                meta = self._dense(f, ans, vals, metas)
            elif self.second and _SECOND.get(f, None) is None and type(meta) is Rows:
                self.pairs.append((meta, meta))
        result = self._result(ans, meta)
        if inplace:
            self.setitem(args[0], Ellipsis, result)
            return args[0]
        out = out_argument(kwargs)
        if out is not None and ans is out:
            self.setitem(out, Ellipsis, result)
            return out
        return result

    def _result(self, ans, meta):
        """``ans`` tagged with ``meta`` (Rows aligned with its elements, or a mask)."""
        if meta is None:
            return ans
        if type(ans) is np.ndarray:
            if type(meta) is int:
                meta = repeated(meta, ans.size, self.n)
            if type(meta) is Rows:
                if meta.m != ans.size:
                    meta = gather(_union_row(meta), np.zeros(ans.size, _I))
                meta = Pat(ans.shape, self.n, meta)
            return Tagged(ans, meta, self)
        if type(ans) is tuple or type(ans) is list:  # (several results: each depends on all)
            whole = repeated(meta, 1, self.n) if type(meta) is int else _union_row(meta)
            return Tagged(ans, tuple(metadata_of(self._result(a, gather(whole, np.zeros(np.size(a), _I))))
                                     if isinstance(a, (np.ndarray, float, complex)) else None
                                     for a in ans), self)
        if type(meta) is Rows:  # (a scalar made by an array operation: its set stays a row)
            meta = Pat((), self.n, meta if meta.m == 1 else _union_row(meta))
        return Tagged(ans, meta, self) if meta else ans

    def rows_of(self, value, meta, shape=None):
        """Rows of the (broadcast) elements of a value with ``meta``."""
        vshape = np.shape(value)
        shape = vshape if shape is None else tuple(shape)
        size = math.prod(shape)
        if meta is None:
            return empty_rows(size, self.n)
        if type(meta) is int:
            return repeated(meta, size, self.n)
        if type(meta) is list or type(meta) is tuple:
            parts = []
            for v, m in zip(value, meta):
                parts.append(self.rows_of(v, m))
            R = vstack(parts, self.n)
        else:
            R = meta.rows()
        if vshape == shape:
            return R
        idx = np.broadcast_to(np.arange(math.prod(vshape), dtype=_I).reshape(vshape), shape)
        return gather(R, idx)

    def _elementwise(self, f, ans, vals, metas, kwargs=None):
        partials = _PARTIALS.get(f)
        deps = [i for i, m in enumerate(metas)
                if m is not None and (partials is None or (i < len(partials) and partials[i] is not None))]
        if not deps:
            return None
        pairs = _SECOND.get(f)
        if pairs is None:
            pairs = [(i, j) for i in deps for j in deps if i <= j]
        if type(ans) is not np.ndarray and all(type(metas[i]) is int for i in deps):
            mask = 0
            for i in deps:
                mask |= metas[i]
            if self.second:
                for i, j in pairs:
                    if i in deps and j in deps:
                        self.scalar_pairs.append((metas[i], metas[j]))
            return mask
        shape = np.shape(ans)
        R = {i: self.rows_of(vals[i], metas[i], shape) for i in deps}
        if self.second:
            for i, j in pairs:
                if i in R and j in R:
                    self.pairs.append((R[i], R[j]))
        return union(list(R.values()))

    def _dense(self, f, ans, vals, metas):
        """No pattern rule: the result depends on every input of every argument."""
        key = getattr(f, "__qualname__", None) or repr(f)
        if key not in _warned and (len(ans) > 1 if type(ans) is tuple or type(ans) is list else np.size(ans) > 1):
            _warned.add(key)
            warnings.warn("capstan sparsity: %s has no sparsity rule; its result is taken to depend on "
                          "all of its differentiated inputs (a dense block in the pattern)"
                          % losses.qualified_name(f), stacklevel=2)
        parts = []
        for v, m in zip(vals, metas):
            if type(m) is list or type(m) is tuple:
                parts.extend(self.rows_of(e, me) for e, me in zip(v, m) if me is not None)
            elif m is not None:
                parts.append(self.rows_of(v, m))
        if not parts:
            return None
        U = _union_row(vstack(parts, self.n))
        if self.second:
            self.pairs.append((U, U))
        return U if type(ans) is not np.ndarray else gather(U, np.zeros(ans.size, _I))

    def _index_args(self, vals, metas, stack):
        """``vals`` with each tracked array replaced by the numbers (from 1) of its
        elements' rows in ``stack`` (appended to); constants inside lists become 0."""
        def number(v, m):
            if m is None:
                return np.zeros(np.shape(v), _I)
            R = self.rows_of(v, m)
            start = 1 + sum(p.m for p in stack)
            stack.append(R)
            return start + np.arange(R.m, dtype=_I).reshape(np.shape(v))

        out = []
        for v, m in zip(vals, metas):
            if type(m) is list or type(m) is tuple:
                out.append(type(v)(number(e, me) for e, me in zip(v, m)))
            elif m is not None:
                out.append(number(v, m))
            else:
                out.append(v)
        return out

    def _moves(self, f, ans, vals, metas, kwargs):
        stack = []
        try:
            idx = np.asarray(f(*self._index_args(vals, metas, stack), **kwargs))
        except Exception:
            return None
        if idx.shape != np.shape(ans) or idx.dtype.kind not in "iu":
            return None
        tracked = [i for i, m in enumerate(metas) if m is not None]
        if (type(ans) is np.ndarray and ans.base is not None and len(tracked) == 1
                and type(metas[tracked[0]]) is Pat and type(vals[tracked[0]]) is np.ndarray
                and root_of(ans) is root_of(vals[tracked[0]])):  # a view: writes reach the root
            src = metas[tracked[0]]
            base = src.root_positions()
            args = list(vals)
            args[tracked[0]] = base + 1
            where = np.asarray(f(*args, **kwargs)) - 1
            if where.shape == ans.shape and (where >= 0).all():
                return Pat(ans.shape, self.n, root=src.root or src, where=where.astype(_I))
        return gather(vstack(stack, self.n), idx.ravel() - 1)

    def _same(self, f, ans, vals, metas, kwargs):
        R = self.rows_of(vals[0], metas[0])
        return R if R.m == np.size(ans) else None

    def _reduce(self, f, ans, vals, metas, kwargs):
        a, m = vals[0], metas[0]
        if m is None or any(x is not None for x in metas[1:]):
            return None
        axis = vals[1] if len(vals) > 1 else kwargs.get("axis")
        shape = np.shape(a)
        try:
            axes = _axes(axis, len(shape))
        except (TypeError, ValueError):
            return None
        kept = tuple(1 if d in axes else s for d, s in enumerate(shape))
        out_size = math.prod(kept)
        if out_size != np.size(ans):
            return None
        dst = np.broadcast_to(np.arange(out_size, dtype=_I).reshape(kept), shape)
        return scatter(self.rows_of(a, m), np.arange(math.prod(shape), dtype=_I), dst, out_size)

    def _along(self, f, ans, vals, metas, kwargs):
        name = getattr(f, "__name__", "")
        a, m = vals[0], metas[0]
        if m is None or any(x is not None for x in metas[1:]):
            return None
        at, default = (2, -1) if name == "partition" else (1, -1 if name == "sort" else None)
        axis = vals[at] if len(vals) > at else kwargs.get("axis", default)
        R = self.rows_of(a, m)
        if axis is None:
            return gather(_union_row(R), np.zeros(np.size(ans), _I))
        shape = np.shape(a)
        if np.shape(ans) != shape:
            return None
        axes = _axes(axis, len(shape))
        kept = tuple(1 if d in axes else s for d, s in enumerate(shape))
        group = np.broadcast_to(np.arange(math.prod(kept), dtype=_I).reshape(kept), shape)
        reduced = scatter(R, np.arange(R.m, dtype=_I), group, math.prod(kept))
        return gather(reduced, group)

    def _matmul(self, f, ans, vals, metas, kwargs):
        if len(vals) != 2 or kwargs:
            return None
        a, b = vals
        if not (1 <= np.ndim(a) <= 2 and 1 <= np.ndim(b) <= 2):
            return None
        ia = np.arange(np.size(a), dtype=_I).reshape(np.shape(a))
        ib = np.arange(np.size(b), dtype=_I).reshape(np.shape(b))
        if getattr(f, "__name__", "") == "inner" and np.ndim(b) == 2:
            ib = ib.T
        ia = ia.reshape(1, -1) if ia.ndim == 1 else ia
        ib = ib.reshape(-1, 1) if ib.ndim == 1 else ib
        (mm, k), (k2, p) = ia.shape, ib.shape
        if k != k2 or np.size(ans) != mm * p:
            return None
        Ra = self.rows_of(a, metas[0]) if metas[0] is not None else None
        Rb = self.rows_of(b, metas[1]) if metas[1] is not None else None
        bval, aval = np.asarray(b).ravel()[ib], np.asarray(a).ravel()[ia]
        parts_src, parts_dst, stack = [], [], []
        if Ra is not None:
            l, j = np.nonzero(np.ones(ib.shape, bool) if Rb is not None else bval != 0)
            i = np.arange(mm, dtype=_I)[:, None]
            parts_src.append(ia[i, l[None, :]].ravel())
            parts_dst.append((i * p + j[None, :]).ravel())
            stack.append(Ra)
        if Rb is not None:
            i, l = np.nonzero(np.ones(ia.shape, bool) if Ra is not None else aval != 0)
            j = np.arange(p, dtype=_I)[None, :]
            offset = Ra.m if Ra is not None else 0
            parts_src.append((offset + ib[l[:, None], j]).ravel())
            parts_dst.append((i[:, None] * p + j).ravel())
            stack.append(Rb)
        out = scatter(vstack(stack, self.n), np.concatenate(parts_src), np.concatenate(parts_dst), mm * p)
        if self.second and Ra is not None and Rb is not None:
            i, l, j = np.meshgrid(np.arange(mm), np.arange(k), np.arange(p), indexing="ij")
            self.pairs.append((gather(Ra, ia[i, l].ravel()), gather(Rb, ib[l, j].ravel())))
        return out

    # -- subscripts ---------------------------------------------------------------------------
    @primitive(operator.getitem, Tagged)
    @primitive(operator.getitem, np.ndarray)
    def getitem(self, c, k):
        if type(k) is int and type(c) is Tagged and tag_of(c) is self._tagkey:  # x[i] in loops
            value, meta = value_of(c), metadata_of(c)
            if type(value) is np.ndarray and value.ndim == 1 and type(meta) is Pat:
                ans = value[k]
                return Tagged(ans, meta.mask(k % len(value)), self)
        ans, meta, value, k, foreign = self.subscript(c, k)
        if meta is None:
            return ans
        if type(meta) is tuple or type(meta) is list:
            mk = meta[k]
            return ans if mk is None else Tagged(ans, mk, self)
        if type(meta) is int:
            return Tagged(ans, meta, self)
        where = np.arange(meta.size, dtype=_I).reshape(meta.shape)[k]
        if type(ans) is not np.ndarray:
            return Tagged(ans, meta.mask(int(where)), self)
        if ans.base is not None and type(value) is np.ndarray and root_of(ans) is root_of(value):
            return Tagged(ans, Pat(ans.shape, self.n, root=meta.root or meta,
                                   where=np.asarray(meta.root_positions()[k], _I)), self)
        return Tagged(ans, Pat(ans.shape, self.n, gather(meta.rows(), where)), self)

    @primitive(operator.setitem, Tagged)
    @primitive(operator.setitem, np.ndarray)
    def setitem(self, c, k, v):
        value, _ = self.unwrap(c)
        if type(k) is Tagged:
            k = self.unwrap(k)[0]
        vm = self.meta(v)
        v, _ = self.unwrap(v)
        value[k] = v
        cm = self.meta(c)
        if cm is None:
            if vm is None or value.dtype.kind not in "fc":
                return None
            root = root_of(value)
            pat = Pat(root.shape, self.n, empty_rows(root.size, self.n))
            self.shadows[id(root)] = (root, pat, None)
            cm = pat if root is value else Pat(value.shape, self.n, root=pat,
                                               where=positions(value, root))
        if type(cm) is not Pat:
            raise TypeError("capstan sparsity: cannot follow a write into %s" % type(value).__name__)
        pos = np.arange(value.size, dtype=_I).reshape(value.shape)[k]
        if vm is None:
            src = 0
        elif type(vm) is int and np.ndim(pos) == 0:
            src = vm
        else:
            src = self.rows_of(v, vm, np.shape(pos))
        cm.write(pos, src)
        return None

    def view_meta(self, view, root, pat, foreign):
        return Pat(view.shape, self.n, root=pat, where=positions(view, root))

    # -- results ------------------------------------------------------------------------------
    def output_rows(self, y, fname="jacobian_sparsity"):
        """Rows of every element of output ``y`` (numbers, arrays, lists of them)."""
        leaves, _ = structure.flatten(y)
        parts = []
        masks = []  # (a run of scalar outputs: their sets read out together)
        key = self._tagkey
        for leaf in leaves:
            if type(leaf) is Tagged and tag_of(leaf) is key and type(metadata_of(leaf)) is int and type(value_of(leaf)) in _FLOATS:
                masks.append(metadata_of(leaf))  # (the commonest leaf, a number from a scalar loop)
                continue
            meta = self.meta(leaf)
            value, _ = self.unwrap(leaf)
            if not isinstance(value, (int, float, complex, np.number, np.ndarray, np.bool_)):
                raise TypeError("capstan.%s: f must return numbers or arrays (or lists of them), "
                                "got %s" % (fname, type(value).__name__))
            if (meta is None or type(meta) is int) and type(value) is not np.ndarray:
                masks.append(meta or 0)
                continue
            if masks:
                parts.append(rows_from_masks(masks, self.n))
                masks = []
            parts.append(self.rows_of(value, meta))
        if masks:
            parts.append(rows_from_masks(masks, self.n))
        return vstack(parts, self.n)

    def interactions(self):
        """The Hessian pattern of this run (symmetric scipy CSR of bools, n x n)."""
        import scipy.sparse as sp

        n = self.n
        As = [a for a, _ in self.pairs]
        Bs = [b for _, b in self.pairs]
        if self.scalar_pairs:
            # (a loop meets the same pairs often: each distinct pair of masks counted once)
            unique, ids = distinct_masks(self.scalar_pairs, n)
            pairs = sorted_unique(ids[0::2] * unique.m + ids[1::2])
            As.append(gather(unique, pairs // unique.m))
            Bs.append(gather(unique, pairs % unique.m))
        if not As:
            return sp.csr_array((n, n), dtype=bool)
        A = vstack(As, n).to_scipy().astype(np.int8)
        B = vstack(Bs, n).to_scipy().astype(np.int8)
        H = (A.T @ B)
        H = (H + H.T).tocsr()
        H.data[:] = 1
        H.eliminate_zeros()
        H.sort_indices()
        return H.astype(bool)


def same_decision(a, b):
    if type(a) is np.ndarray or type(b) is np.ndarray:
        return (type(a) is np.ndarray and type(b) is np.ndarray and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    try:
        return type(a) is type(b) and (a == b or (a != a and b != b))
    except Exception:
        return False


# ----------------------------------------------------------------------------- scalar fast paths
_BINARY_SOURCE = """
def method(self, x, y):
    key = self._tagkey
    if type(x) is Tagged and tag_of(x) is key:
        a, ma = value_of(x), metadata_of(x)
    else:
        a, ma = x, 0
    if type(y) is Tagged and tag_of(y) is key:
        b, mb = value_of(y), metadata_of(y)
    else:
        b, mb = y, 0
    if type(ma) is int and type(mb) is int and type(a) in SCALARS and type(b) in SCALARS:
        r = f(a, b)
        if self.second:
{pairs}
        return Tagged(r, ma | mb if ma and mb else ma or mb, self)
    return self.apply(f, (x, y), {{}})
"""


def _fast_binary(f, pairs):
    """The scalar fast path of binary operator ``f``: the union of the operands' masks
    (no new int when one operand is a constant), and the ``pairs`` of operands whose
    second derivative may be nonzero, written out (generated source: no loop per call)."""
    lines = []
    for i, j in pairs:
        mi, mj = ("ma", "mb")[i], ("ma", "mb")[j]
        lines.append("            if %s and %s:\n                self.scalar_pairs.append((%s, %s))"
                     % (mi, mj, mi, mj))
    source = _BINARY_SOURCE.format(pairs="\n".join(lines) or "            pass")
    ns = {"Tagged": Tagged, "f": f, "SCALARS": _SCALARS, "value_of": value_of, "metadata_of": metadata_of,
          "tag_of": tag_of}
    exec(compile(source, "<capstan sparsity fast path for %s>" % f.__name__, "exec"), ns)
    return _twin(ns["method"], f, 2, pairs)


def _fast_unary(f, linear):
    def method(self, /, *args, **kwargs):
        if len(args) == 1 and not kwargs:
            x = args[0]
            if type(x) is Tagged and tag_of(x) is self._tagkey:
                a, ma = value_of(x), metadata_of(x)
                if type(ma) is int and type(a) in _SCALARS:
                    r = f(a)
                    if self.second and not linear:
                        self.scalar_pairs.append((ma, ma))
                    return Tagged(r, ma, self)
            elif type(x) in _SCALARS:
                return f(x)
        return self.apply(f, args, kwargs)

    method.__name__ = "fast_" + getattr(f, "__name__", "f")
    return _twin(method, f, 1, () if linear else ((0, 0),))


def _twin(method, f, arity, pairs):
    """Give fast path ``method`` its native twin (``_capstan_native.PatternKernel``: the
    same computation in C for Python floats and ints and NumPy float64 scalars, every
    other case handed back to ``method``); ``pairs`` are the operands whose second
    derivative may be nonzero.  The pure-Python path (``OVERDUB_PURE_PYTHON=1``) keeps
    ``method`` alone."""
    if capstan_native is not None:
        bits = {(0, 0): capstan_native.PAIR_00, (0, 1): capstan_native.PAIR_01, (1, 1): capstan_native.PAIR_11}
        kernel = capstan_native.PatternKernel(f, arity, sum(bits[p] for p in pairs), method)
        method.__overdub_native__ = kernel
    return method


_ALL = ((0, 0), (0, 1), (1, 1))
for _f, _pairs in ((operator.add, ()), (operator.sub, ()), (operator.mul, ((0, 1),)),
                   (operator.truediv, ((0, 1), (1, 1))), (operator.pow, _ALL)):
    for _g in [_f] + [k for k, v in INPLACE.items() if v is _f]:
        _method = _fast_binary(_g, _pairs)
        primitive(_g, Tagged, total=True)(_method)
        primitive(_g, object, Tagged)(_method)
        setattr(PatternCtx, "_fast_%s" % _g.__name__, _method)
for _f, _linear in ((operator.neg, True), (operator.pos, True)):  # type: ignore[assignment]
    _method = _fast_unary(_f, _linear)
    primitive(_f, Tagged, total=True)(_method)
    setattr(PatternCtx, "_fast_%s" % _f.__name__, _method)
for _f, _partials in list(_PARTIALS.items()):
    if getattr(_f, "__module__", None) == "math" and len(_partials) == 1:
        _method = _fast_unary(_f, _SECOND.get(_f) == ())
        primitive(_f, Tagged, total=True)(_method)
        setattr(PatternCtx, "_fast_math_%s" % _f.__name__, _method)


# ----------------------------------------------------------------------------- running f
class Detected:
    """What one detection run found: ``rows`` (one index set per output element),
    ``out_shape``, ``hessian`` (scipy CSR, second order only), ``guards``."""

    __slots__ = ("rows", "out_size", "hessian", "guards", "n")

    def __init__(self, rows, out_size, hessian, guards, n):
        self.rows, self.out_size, self.hessian, self.guards, self.n = rows, out_size, hessian, guards, n

    def jacobian(self):
        return self.rows.to_scipy()


def point(x, fname):
    """``x`` as the point to detect at: a float scalar, a float array or a list of floats;
    refuses anything else with a TypeError naming ``fname``."""
    if isinstance(x, (str, bytes)) or isinstance(x, (bool, np.bool_)):
        raise TypeError("capstan.%s(f, x): x must be a float array or number, got %s"
                        % (fname, type(x).__name__))
    if isinstance(x, (list, tuple)):
        if not all(type(e) in _FLOATS for e in x) and not all(  # (the common case first)
                isinstance(e, (int, float, np.integer, np.floating)) and not isinstance(e, bool) for e in x):
            raise TypeError("capstan.%s(f, x): a list x must hold only real numbers" % fname)
        return type(x)([float(e) for e in x])
    if isinstance(x, (int, np.integer)):
        return float(x)
    if isinstance(x, (float, np.floating)):
        return x
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "iu":
            return x.astype(float)
        if x.dtype.kind != "f":
            raise TypeError("capstan.%s(f, x): x must be a real float array, got dtype %s"
                            % (fname, x.dtype))
        return x
    raise TypeError("capstan.%s(f, x): x must be a float array, a float or a list of floats, got %s"
                    % (fname, type(x).__name__))


def _identity(shape, n):
    pat = Pat(shape, n, identity_rows(n))
    pat.identity = True
    return pat


def detect(f, x, fname, second=False):
    """Run ``f`` at ``x`` under :class:`PatternCtx` (see the module docstring)."""
    if not callable(f):
        raise TypeError("capstan.%s(f, x): f must be callable, got %r" % (fname, f))
    x = point(x, fname)
    n = int(np.size(x)) if not isinstance(x, (list, tuple)) else len(x)
    if n > _LOW + 1:  # (index sets are keyed as row << 32 | column)
        raise ValueError("capstan.%s: x has %d elements; sparsity detection handles up to 2**32" % (fname, n))
    with borrowed(PatternCtx) as ctx, level(ctx), losses.guard(ctx):
        ctx.n, ctx.second, ctx.decisions = n, second, []
        if isinstance(x, np.ndarray):
            seeded = Tagged(x.copy(), _identity(x.shape, n), ctx) if n else x.copy()
        elif isinstance(x, (list, tuple)):
            seeded = type(x)([Tagged(e, 1 << i, ctx) for i, e in enumerate(x)])
        else:
            seeded = Tagged(x, 1, ctx)
        y = overdub(ctx, f, seeded)
        losses.check_finished(ctx)
        rows = ctx.output_rows(y, fname)
        hessian = None
        if second:
            if rows.m != 1:
                raise ValueError("capstan.%s: f must return a real scalar, got %d values"
                                 % (fname, rows.m))
            hessian = ctx.interactions()
        ctx.cleanup()
        return Detected(rows, rows.m, hessian, list(ctx.decisions), n)


def jacobian_sparsity(f: Callable[..., Any], x: Any) -> Any:
    """The sparsity pattern of ``f``'s Jacobian at ``x``: a ``scipy.sparse.csr_array`` of
    bools, shape ``(output size, x.size)`` (both flattened in C order).

    Found by running ``f`` once on values carrying index sets (no derivative is
    computed); ``True`` wherever an output may depend on an input for any input that
    takes the same branches as ``x``.  Never too sparse: a function without a pattern
    rule gives a dense block (with a one-time warning).

    Example::

        >>> import numpy as np, capstan
        >>> capstan.jacobian_sparsity(lambda x: x[1:] * x[:-1], np.ones(4)).toarray()
        array([[ True,  True, False, False],
               [False,  True,  True, False],
               [False, False,  True,  True]])

    Raises:
        TypeError: ``f`` not callable; ``x`` not a float array, number or list of numbers;
            ``f`` returns something other than numbers and arrays.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    return detect(f, x, "jacobian_sparsity").jacobian()


def hessian_sparsity(f: Callable[..., Any], x: Any) -> Any:
    """The sparsity pattern of the Hessian of scalar ``f`` at ``x``: a symmetric
    ``scipy.sparse.csr_array`` of bools, shape ``(x.size, x.size)``.

    ``(i, j)`` is ``True`` when some operation whose second derivative may be nonzero
    combines values depending on ``x[i]`` and ``x[j]`` (``x[i] * x[j]``, ``exp(x[i] +
    x[j])``); linear operations add nothing.

    Example::

        >>> import numpy as np, capstan
        >>> capstan.hessian_sparsity(lambda x: np.sum(x[1:] * x[:-1]), np.ones(3)).toarray()
        array([[False,  True, False],
               [ True, False,  True],
               [False,  True, False]])

    Raises:
        TypeError: ``f`` not callable; ``x`` not a float array, number or list of numbers.
        ValueError: ``f`` does not return a scalar.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    return detect(f, x, "hessian_sparsity", second=True).hessian
