"""Sparse Jacobians and Hessians by compressed evaluation, and Hessian-vector products.

A prepared object detects the pattern (``capstan.sparsity``) and colours it
(``capstan.coloring``) once; each call then evaluates the compressed derivative and
gathers the nonzeros out of it:

* column colouring: one chunked forward run of ``f`` whose tangent block is the colour
  seed (``c`` directions instead of ``n``): ``B = J S``;
* row colouring: one reverse run of ``f``, then one backward pass per colour row:
  ``B = S^T J`` (for wide Jacobians);
* star colouring of a Hessian: ``c`` Hessian-vector products ``B = H S``, in one
  chunked forward run over a reverse-mode gradient (forward over reverse), or one
  reverse run recording a chunked forward run's directional derivatives (up to
  ``RO_CHUNK`` colours), then one backward pass per colour over that tape (reverse
  over forward);
* acyclic colouring of a Hessian: the same products, the nonzeros recovered by
  substitution along the two-coloured trees;
* edge pushing for scalar code (``sparse_hessian(..., method="edge_pushing")``): one
  reverse sweep over a kept tape, no pattern or colouring (``capstan.edge_pushing``).

The nonzeros are read out by a precomputed gather (``B.flat[take]``), in the CSR order
of the pattern, so the result is a ``scipy.sparse.csr_array`` with exactly the
pattern's structure (structural zeros kept).

The decisions ``f`` took on differentiated values while the pattern was detected (its
guards) are watched during each evaluation: if one comes out differently, the pattern
may not hold for this input, and the call raises :class:`capstan.TapeGuardError` or
detects the pattern anew (``on_mismatch="redetect"``).
"""
import time
import warnings

from typing import Any, Callable

import numpy as np

from overdub import overdub, tag
from overdub.tagging import value_of

from . import graph_coloring as _coloring
from . import losses, structure
from .adcontext import raw
from .forward import ForwardCtx, _jvp
from .nesting import level
from .pool import borrowed
from .reverse import ReverseCtx, _gradient, _Run
from .sparsity import detect, point, same_decision
from .tape import TapeGuardError

CHUNK = 64  # colours per forward run
RO_CHUNK = 4  # colours per reverse-over-forward run (each backward pass carries the whole chunk)
HVP_MODES = ("rev_over_fwd", "fwd_over_rev")
HESSIAN_HVP = ("auto",) + HVP_MODES


# ----------------------------------------------------------------------------- watching decisions
# Every differentiation context records the decisions it takes on differentiated values
# (comparisons, ``int(x)``, ``if x:``) in ``ctx.decisions`` when that is a list, as sparsity
# detection does: the evaluations below compare them with the pattern's guards.
def _watching(cls):
    """``borrowed(cls)``, whose context records its decisions."""
    return _Watching(cls)


class _Watching(borrowed):
    __slots__ = ()

    def __enter__(self):
        ctx = super().__enter__()
        ctx.decisions = []
        return ctx


def _same_path(guards, decisions):
    return len(guards) == len(decisions) and all(
        (f is g or f == g) and same_decision(a, b) for (f, a), (g, b) in zip(guards, decisions))


# ----------------------------------------------------------------------------- compressed runs
def _flat_tangent(t, width):
    """Output tangents (chunked: a leading axis of ``width``) as a ``(width, m)`` array."""
    leaves, _ = structure.flatten(t)
    parts = [np.reshape(np.asarray(leaf, dtype=float if not np.iscomplexobj(leaf) else complex),
                        (width, -1)) for leaf in leaves]
    return np.concatenate(parts, axis=1) if len(parts) != 1 else parts[0]


def _seeded(x, ctx, block):
    """``x`` tagged with the tangent block ``block`` (``(width, n)``)."""
    width = block.shape[0]
    if isinstance(x, (list, tuple)):
        return type(x)(tag(e, ctx, block[:, i].copy()) for i, e in enumerate(x))
    if isinstance(x, np.ndarray):
        return tag(x.copy(), ctx, block.reshape((width,) + x.shape))
    return tag(x, ctx, block[:, 0].copy())


def forward_compressed(f, x, seed, decisions, inner=None):
    """``J @ seed.T`` as a ``(colours, m)`` array: chunked forward runs of ``f`` at ``x``
    with the rows of ``seed`` as tangents (the decisions of the first run appended to
    ``decisions``; those an inner differentiation records in ``inner`` instead, if given)."""
    blocks = []
    for start in range(0, seed.shape[0], CHUNK):
        block = seed[start:start + CHUNK]
        width = block.shape[0]
        with _watching(ForwardCtx) as ctx, level(ctx), losses.guard(ctx):
            ctx.chunk = width
            y = overdub(ctx, f, _seeded(x, ctx, block))
            losses.check_finished(ctx)
            t = ctx.output_tangent(y)
            if start == 0:
                decisions.extend(ctx.decisions if inner is None else inner)
        blocks.append(_flat_tangent(t, width))
    return np.concatenate(blocks) if len(blocks) != 1 else blocks[0]


def forward_directions(f, x, seed, decisions):
    """``J @ seed.T`` as a ``(colours, m)`` array by one unchunked forward run per row of
    ``seed`` (cheaper than one chunked run for scalar Python code, whose operations have
    inline forms for float tangents only)."""
    rows = []
    for k, direction in enumerate(seed):
        with _watching(ForwardCtx) as ctx, level(ctx), losses.guard(ctx):
            if isinstance(x, (list, tuple)):
                seeded = type(x)(tag(e, ctx, float(d)) for e, d in zip(x, direction.tolist()))
            elif isinstance(x, np.ndarray):
                seeded = tag(x.copy(), ctx, direction.reshape(x.shape).astype(x.dtype))
            else:
                seeded = tag(x, ctx, float(direction[0]))
            y = overdub(ctx, f, seeded)
            losses.check_finished(ctx)
            t = ctx.output_tangent(y)
            if k == 0:
                decisions.extend(ctx.decisions)
        rows.append(_flat_tangent(t, 1)[0])
    return np.array(rows)


def reverse_compressed(f, x, seed, out_size, decisions, fname):
    """``seed @ J`` as a ``(colours, n)`` array: one reverse run of ``f``, one backward pass
    per row of ``seed`` (an output cotangent, flattened)."""
    with _watching(ReverseCtx) as ctx:
        run = _Run(f, (x,), fname, ctx)
        decisions.extend(ctx.decisions)
        leaves = run.out_leaves
        shapes = [np.shape(value_of(leaf) if ctx.owns(leaf) else leaf) for leaf in leaves]
        sizes = [int(np.prod(s)) for s in shapes]
        if sum(sizes) != out_size:
            raise ValueError("capstan.%s: f returned %d values where the pattern has %d rows"
                             % (fname, sum(sizes), out_size))
        rows = []
        for r in seed:
            seeds, start = {}, 0
            for leaf, shape, size in zip(leaves, shapes, sizes):
                node = ctx.node(leaf)
                if node is not None:
                    d = r[start:start + size].reshape(shape)
                    d = d if shape else float(d)
                    seeds[node] = d if node not in seeds else seeds[node] + d
                start += size
            g = run.back(seeds)[0] if seeds else None
            rows.append(np.zeros(np.size(x)) if g is None else np.ravel(np.asarray(g, dtype=float)))
        ctx.cleanup()
    return np.array(rows)


def _watched_gradient(f, z, decisions, fname):
    """``capstan.gradient(f, z)[0]``, its decisions appended to ``decisions``."""
    with _watching(ReverseCtx) as ctx:
        g = _gradient(_Run(f, (z,), fname, ctx), (z,), fname)[0]
        decisions.extend(ctx.decisions)
    if g is None:
        return np.zeros_like(np.asarray(z, dtype=float)) if np.ndim(z) else 0.0
    return g


def _watched_directional(f, z, v, decisions):
    """The directional derivative of ``f`` at ``z`` along ``v`` (forward mode)."""
    with _watching(ForwardCtx) as ctx, level(ctx), losses.guard(ctx):
        leaves, rebuild = structure.flatten((z,))
        tleaves, _ = structure.flatten((v,))
        t = _jvp(ctx, f, leaves, tleaves, rebuild)[1]
        decisions.extend(ctx.decisions)
    return t


def hessian_compressed(f, x, seed, mode, decisions, fname):
    """``H @ seed.T`` as a ``(colours, n)`` array (``H`` symmetric: ``seed @ H``) by
    Hessian-vector products in ``mode``."""
    if mode == "fwd_over_rev":
        sink = []
        return forward_compressed(lambda z: _watched_gradient(f, z, sink, fname), x, seed, decisions, sink)
    if isinstance(x, np.ndarray):
        return np.concatenate([_reverse_over_chunk(f, x, seed[start:start + RO_CHUNK], decisions if not start
                                                   else [], fname)
                               for start in range(0, seed.shape[0], RO_CHUNK)])
    rows = []
    for k, v in enumerate(seed):
        sink = []
        direction = v.reshape(np.shape(x)) if isinstance(x, np.ndarray) else (
            type(x)(v.tolist()) if isinstance(x, (list, tuple)) else float(v[0]))
        g = _gradient_of(lambda z: _watched_directional(f, z, direction, sink), x, fname)
        if k == 0:
            decisions.extend(sink)
        rows.append(np.ravel(np.asarray(g, dtype=float)))
    return np.array(rows)


def _chunked_directional(f, z, block, decisions):
    """The directional derivatives of scalar ``f`` at array ``z`` along the rows of
    ``block`` (``(c, z.size)``), by one chunked forward run: a ``(c,)`` array."""
    with _watching(ForwardCtx) as ctx, level(ctx), losses.guard(ctx):
        ctx.chunk = block.shape[0]
        plain = raw(z)  # (the point's shape and dtype, read without the enclosing differentiation)
        y = overdub(ctx, f, tag(z, ctx, block.reshape((block.shape[0],) + plain.shape).astype(plain.dtype)))
        losses.check_finished(ctx)
        t = ctx.output_tangent(y)
        decisions.extend(ctx.decisions)
    return t


def _reverse_over_chunk(f, x, block, decisions, fname):
    """``block @ H`` (``(c, n)``): one reverse run recording the ``c`` directional
    derivatives of one chunked forward run of ``f`` (reverse over forward), then one
    backward pass per direction over that one tape."""
    c = block.shape[0]
    with borrowed(ReverseCtx) as ctx:
        run = _Run(lambda z: _chunked_directional(f, z, block, decisions), (x,), fname, ctx)
        leaves = run.out_leaves
        if len(leaves) != 1 or np.size(value_of(leaves[0]) if ctx.owns(leaves[0]) else leaves[0]) != c:
            raise ValueError("capstan.%s: f must return a real scalar" % fname)
        node = ctx.node(leaves[0])
        rows = np.zeros((c, np.size(x)))
        if node is not None:
            for k in range(c):
                seed = np.zeros(c)
                seed[k] = 1.0
                g = run.back({node: seed})[0]
                if g is not None:
                    rows[k] = np.ravel(np.asarray(g, dtype=float))
        ctx.cleanup()
    if np.isnan(rows).any() and np.isfinite(x).all():  # (as gradient refuses: a kink's second derivative...)
        raise losses.undefined_in_reverse(fname)
    return rows


def _gradient_of(f, x, fname):
    with borrowed(ReverseCtx) as ctx:
        g = _gradient(_Run(f, (x,), fname, ctx), (x,), fname)[0]
    if g is None:
        return np.zeros(np.size(x))
    return g


# ----------------------------------------------------------------------------- prepared objects
def choose(timings, order):
    """The evaluation strategy to use next among ``order`` (first: the likelier faster),
    given ``timings`` (strategy -> seconds of its evaluations so far): each one is tried
    once, a second time when the first tries were within a factor 2, then the fastest
    is kept."""
    tries = [len(timings.get(mode, ())) for mode in order]
    if min(tries) == 0:
        return order[tries.index(0)]
    best = {mode: min(timings[mode]) for mode in order}
    fastest = min(order, key=best.get)
    if min(tries) < 2 and any(best[mode] < 2 * best[fastest] for mode in order if mode != fastest):
        return order[tries.index(min(tries))]
    return fastest



def _template(P):
    """A float CSR array with ``P``'s structure, whose data each evaluation replaces."""
    import scipy.sparse as sp

    return sp.csr_array((np.zeros(P.nnz), P.indices.copy(), P.indptr.copy()), shape=P.shape)


def _filled(template, values):
    out = template.copy()
    out.data = values
    return out


def _pattern_rows_cols(P):
    rows = np.repeat(np.arange(P.shape[0], dtype=np.int64), np.diff(P.indptr))
    return rows, P.indices.astype(np.int64)


class _Prepared:
    """What the sparse Jacobian and Hessian objects share."""

    kind_default: str | None = None
    fname: str = "sparse"

    def _setup_input(self, x):
        self.x = point(x, self.fname)
        self.shape = np.shape(self.x) if not isinstance(self.x, (list, tuple)) else (len(self.x),)
        self.n = int(np.prod(self.shape))
        self.is_list = isinstance(self.x, (list, tuple))

    def _input(self, x):
        x = point(x, self.fname)
        shape = np.shape(x) if not isinstance(x, (list, tuple)) else (len(x),)
        if shape != self.shape or isinstance(x, (list, tuple)) != self.is_list:
            raise ValueError("capstan.%s: x has shape %s; this prepared object was made for %s%s"
                             % (self.fname, shape, self.shape, " (a list)" if self.is_list else ""))
        return x

    @property
    def ncolors(self):
        """How many colours (compressed directions) one evaluation uses."""
        return int(self.colors.max(initial=-1)) + 1

    def _checked(self, x, decisions):
        """Whether the run at ``x`` took the detected path; re-detects or raises if not."""
        if self.guards is None or _same_path(self.guards, decisions):
            return True
        if self.on_mismatch == "redetect":
            self._prepare(x, None)
            return False
        raise TapeGuardError(
            "capstan.%s: f takes another branch at this x than where its sparsity pattern was "
            "detected (a comparison on a differentiated value came out differently), so the "
            "pattern may not hold; prepare again at this x, or pass on_mismatch='redetect'"
            % self.fname)


class SparseJacobian(_Prepared):
    """A prepared sparse Jacobian of ``f`` (see :func:`prepare_sparse_jacobian`)."""

    fname = "prepare_sparse_jacobian"

    def __init__(self, f, x, sparsity=None, coloring="auto", on_mismatch="error"):
        if not callable(f):
            raise TypeError("capstan.%s(f, x): f must be callable, got %r" % (self.fname, f))
        if coloring not in ("auto", "column", "row"):
            raise ValueError("capstan.%s: coloring must be 'auto', 'column' or 'row', got %r"
                             % (self.fname, coloring))
        if on_mismatch not in ("error", "redetect"):
            raise ValueError("capstan.%s: on_mismatch must be 'error' or 'redetect', got %r"
                             % (self.fname, on_mismatch))
        self.f, self.coloring, self.on_mismatch = f, coloring, on_mismatch
        self.timings = {}  # forward strategy ("chunked", "directions") -> seconds per evaluation
        self._setup_input(x)
        self._prepare(self.x, sparsity)

    def _prepare(self, x, sparsity):
        if sparsity is None:
            found = detect(self.f, x, self.fname)
            P, self.guards = found.jacobian(), found.guards
        else:
            P = _coloring.as_pattern(sparsity, self.fname)
            if P.shape[1] != self.n:
                raise ValueError("capstan.%s: sparsity has %d columns, x has %d elements"
                                 % (self.fname, P.shape[1], self.n))
            self.guards = None
        self.pattern = P
        m, n = P.shape
        rows, cols = _pattern_rows_cols(P)
        colors = _coloring.column_coloring(P)
        kind = "column"
        if self.coloring != "column" and m:
            row_colors = _coloring.column_coloring(P.T.tocsr())
            if self.coloring == "row" or 2 * (row_colors.max() + 1) < colors.max(initial=0) + 1:
                colors, kind = row_colors, "row"
        self.colors, self.kind = colors, kind
        c = int(colors.max(initial=-1)) + 1
        if kind == "column":
            self.seed = np.zeros((c, n))
            self.seed[colors, np.arange(n)] = 1.0
            self.take = colors[cols] * m + rows
        else:
            self.seed = np.zeros((c, m))
            self.seed[colors, np.arange(m)] = 1.0
            self.take = colors[rows] * n + cols
        self.template = _template(P)

    def __call__(self, x):
        """The Jacobian at ``x`` (same shape as the preparation's): a ``csr_array``."""
        x = self._input(x)
        while True:
            decisions = []
            m = self.pattern.shape[0]
            if not self.ncolors:
                B = np.zeros(1)
            elif self.kind == "column":
                mode = choose(self.timings, ("directions", "chunked") if self.is_list else
                              ("chunked", "directions")) if self.ncolors <= 16 else "chunked"
                start = time.perf_counter()
                run = forward_compressed if mode == "chunked" else forward_directions
                B = run(self.f, x, self.seed, decisions)
                self.timings.setdefault(mode, []).append(time.perf_counter() - start)
                if B.shape[1] != m:
                    raise ValueError("capstan.sparse_jacobian: f returned %d values where the pattern "
                                     "has %d rows" % (B.shape[1], m))
            else:
                B = reverse_compressed(self.f, x, self.seed, m, decisions, "sparse_jacobian")
            if not self.ncolors or self._checked(x, decisions):
                return _filled(self.template, B.ravel()[self.take] if len(self.take) else np.zeros(0))

    def check(self, x=None, rtol=1e-9, atol=1e-12):
        """Compare with the dense ``capstan.jacobian`` at ``x`` (default: the preparation's
        point); returns the largest absolute difference, raises ``ValueError`` when a
        value differs or a nonzero lies outside the pattern."""
        x = self.x if x is None else self._input(x)
        J = self(x).toarray()
        dense = forward_compressed(self.f, x, np.eye(self.n), []).T  # (capstan.jacobian's seed)
        return _compare("sparse_jacobian", J, dense.reshape(J.shape), self.pattern, rtol, atol)


def _compare(fname, sparse, dense, pattern, rtol, atol):
    outside = (dense != 0) & ~pattern.toarray()
    if outside.any():
        i, j = np.argwhere(outside)[0]
        raise ValueError("capstan.%s: the dense result has a nonzero at (%d, %d), outside the "
                         "pattern" % (fname, i, j))
    err = np.abs(sparse - dense)
    bad = err > atol + rtol * np.abs(dense)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError("capstan.%s: sparse %r and dense %r differ at (%d, %d)"
                         % (fname, sparse[i, j], dense[i, j], i, j))
    return float(err.max(initial=0.0))


class SparseHessian(_Prepared):
    """A prepared sparse Hessian of scalar ``f`` (see :func:`prepare_sparse_hessian`)."""

    fname = "prepare_sparse_hessian"

    def __init__(self, f, x, sparsity=None, coloring="star", hvp="auto", on_mismatch="error"):
        if not callable(f):
            raise TypeError("capstan.%s(f, x): f must be callable, got %r" % (self.fname, f))
        if coloring not in ("star", "acyclic", "column"):
            raise ValueError("capstan.%s: coloring must be 'star', 'acyclic' or 'column', got %r"
                             % (self.fname, coloring))
        if hvp not in HESSIAN_HVP:
            raise ValueError("capstan.%s: hvp must be 'auto', 'fwd_over_rev' or 'rev_over_fwd', got %r"
                             % (self.fname, hvp))
        self.timings = {}  # hvp mode -> seconds its evaluations took
        self.trusted = False  # "auto" found the two modes disagreeing: forward over reverse only
        if on_mismatch not in ("error", "redetect"):
            raise ValueError("capstan.%s: on_mismatch must be 'error' or 'redetect', got %r"
                             % (self.fname, on_mismatch))
        self.f, self.coloring, self.hvp, self.on_mismatch = f, coloring, hvp, on_mismatch
        self._setup_input(x)
        self._prepare(self.x, sparsity)

    def _prepare(self, x, sparsity):
        import scipy.sparse as sp

        if sparsity is None:
            found = detect(self.f, x, self.fname, second=True)
            P, self.guards = found.hessian, found.guards
        else:
            P = _coloring.as_pattern(sparsity, self.fname, square=True)
            if P.shape[0] != self.n:
                raise ValueError("capstan.%s: sparsity has shape %s, x has %d elements"
                                 % (self.fname, P.shape, self.n))
            P = sp.csr_array(P + P.T).astype(bool)
            P.sort_indices()
            self.guards = None
        self.pattern = P
        n = self.n
        S = _coloring.off_diagonal(P)  # (P is symmetric)
        if self.coloring == "column":
            colors = _coloring.column_coloring(P)
        elif self.coloring == "star":
            colors = _coloring.star_coloring(S)
        else:
            colors = _coloring.acyclic_coloring(S)
        self.colors = colors
        c = int(colors.max(initial=-1)) + 1
        self.seed = np.zeros((c, n))
        self.seed[colors, np.arange(n)] = 1.0
        self.recover = None
        rows, cols = _pattern_rows_cols(P)
        if self.coloring == "acyclic" and not _coloring.is_star_coloring(S, colors):
            self.recover = _Substitution(P, colors)
            self.take = None
        elif self.coloring == "column":
            self.take = colors[cols] * n + rows
        else:
            keys = _coloring.star_sources(P, colors)
            r, col = keys // max(c, 1), keys % max(c, 1)
            self.take = col * n + r
        self.template = _template(P)

    def __call__(self, x):
        """The Hessian at ``x``: a symmetric ``csr_array`` with the pattern's structure."""
        x = self._input(x)
        while True:
            if not self.ncolors:
                return _filled(self.template, np.zeros(0))
            decisions = []
            B = self._compressed(x, decisions)
            if self._checked(x, decisions):
                values = self.recover(B) if self.recover is not None else B.ravel()[self.take]
                return _filled(self.template, values)

    def _compressed(self, x, decisions):
        """``H @ seed.T`` by the HVP mode asked for.  With ``"auto"``: reverse over forward
        first (a first call in a process prepares fewer of capstan's own rules for nesting
        that way); on the second evaluation both modes, which must agree (else a warning,
        and forward over reverse, what ``capstan.hessian`` does, from then on); then the
        faster one."""
        mode = self.hvp
        if mode == "auto":
            if not self.timings or "fwd_over_rev" in self.timings or self.trusted:
                mode = self.hvp_mode
            else:
                B = self._timed("fwd_over_rev", x, decisions)
                try:
                    other = self._timed("rev_over_fwd", x, [])
                except losses.UndefinedInReverse:  # (reverse over forward refused where forward
                    self.trusted = True            # over reverse has the value: kept from now on)
                    return B
                scale = max(float(np.abs(B).max(initial=0.0)), 1.0)
                if not np.allclose(B, other, rtol=1e-8, atol=1e-10 * scale):
                    self.trusted = True
                    warnings.warn("capstan.%s: Hessian-vector products by reverse over forward mode "
                                  "disagree with forward over reverse for this f (f does not compute "
                                  "the same function each run, or one of the nested modes has a "
                                  "bug); keeping forward over reverse" % self.fname, RuntimeWarning,
                                  stacklevel=3)
                return B
        if mode == "rev_over_fwd" and self.hvp == "auto":
            try:
                return self._timed(mode, x, decisions)
            except losses.UndefinedInReverse:  # (a NaN reverse mode cannot resolve, where forward
                self.trusted = True            # over reverse may: capstan.hessian's way from now on)
                del decisions[:]
                return self._timed("fwd_over_rev", x, decisions)
        return self._timed(mode, x, decisions)

    @property
    def hvp_mode(self):
        """The HVP mode the next evaluation uses (``"auto"`` resolved)."""
        if self.hvp != "auto":
            return self.hvp
        if self.trusted:
            return "fwd_over_rev"
        if "fwd_over_rev" not in self.timings:
            return "rev_over_fwd"
        return min(self.timings, key=lambda m: min(self.timings[m]))

    def _timed(self, mode, x, decisions):
        start = time.perf_counter()
        B = hessian_compressed(self.f, x, self.seed, mode, decisions, "sparse_hessian")
        self.timings.setdefault(mode, []).append(time.perf_counter() - start)
        return B

    def check(self, x=None, rtol=1e-9, atol=1e-12):
        """Compare with the dense ``capstan.hessian`` at ``x`` (default: the preparation's
        point); returns the largest absolute difference, raises ``ValueError`` when a
        value differs or a nonzero lies outside the pattern."""
        from .derivatives import hessian

        x = self.x if x is None else self._input(x)
        H = self(x).toarray()
        if self.is_list:  # (capstan.hessian's seed, for a list argument)
            dense = hessian_compressed(self.f, x, np.eye(self.n), "fwd_over_rev", [], "check")
        else:
            dense = np.asarray(hessian(self.f, x), dtype=float)
        return _compare("sparse_hessian", H, dense.reshape(H.shape), self.pattern, rtol, atol)


def _spy_method(self, path, **options):
    """Draw ``self.pattern`` into the image file ``path`` (see :func:`spy`)."""
    return spy(self.pattern, path, **options)


SparseJacobian.spy = SparseHessian.spy = _spy_method  # type: ignore[attr-defined]


def spy(pattern: Any, path: Any, *, title: str | None = None, markersize: float | None = None) -> str:
    """Write a picture of a sparsity pattern (a scipy sparse matrix or 2-D array) to
    ``path``: a PNG or SVG file, one dot per nonzero, row 0 at the top.  Drawn with
    matplotlib when it is installed; without it, SVG files are written directly and a
    PNG raises ImportError.  Returns ``path``.

    Raises:
        TypeError: ``pattern`` is not a sparse matrix or 2-D array.
        ValueError: ``path`` does not end in ``.png`` or ``.svg``.
        ImportError: a PNG without matplotlib.
    """
    P = _coloring.as_pattern(pattern, "sparse.spy")
    path = str(path)
    kind = path.rsplit(".", 1)[-1].lower()
    if kind not in ("png", "svg"):
        raise ValueError("capstan.sparse.spy: path must end in .png or .svg, got %r" % (path,))
    try:
        import matplotlib
    except ImportError:
        if kind == "png":
            raise ImportError("capstan.sparse.spy: writing a PNG needs matplotlib (pip install "
                              "matplotlib); an .svg path works without it") from None
        _write_svg(P, path, title)
        return path
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    m, n = P.shape
    fig, ax = plt.subplots(figsize=(5, 5 * min(max(m / max(n, 1), 0.2), 5)))
    ax.spy(P, markersize=markersize if markersize is not None else max(0.2, 200.0 / max(m, n, 1)))
    ax.set_title(title or "%d x %d, %d nonzeros" % (m, n, P.nnz))
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


def _write_svg(P, path, title, pixels=600):
    """A spy plot as SVG without matplotlib: one square per nonzero, or per occupied cell
    of a ``pixels``-wide grid for large patterns."""
    m, n = P.shape
    scale = pixels / max(m, n, 1)
    rows, cols = _pattern_rows_cols(P)
    cell = max(scale, 1.0)
    if scale < 1.0:  # several nonzeros per cell: draw each occupied cell once
        keys = np.unique((rows * scale).astype(np.int64) * (pixels + 1) + (cols * scale).astype(np.int64))
        ys, xs = keys // (pixels + 1), keys % (pixels + 1)
    else:
        ys, xs = rows * scale, cols * scale
    width, height = n * scale + 2, m * scale + 30
    text = title or "%d x %d, %d nonzeros" % (m, n, P.nnz)
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.1f %.1f">'
             % (width, height, width, height),
             '<text x="1" y="18" font-family="sans-serif" font-size="14">%s</text>'
             % text.replace("&", "&amp;").replace("<", "&lt;"),
             '<rect x="0.5" y="27.5" width="%.1f" height="%.1f" fill="none" stroke="#888"/>'
             % (n * scale + 1, m * scale + 1),
             '<g fill="#1f4e9c">']
    parts.extend('<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f"/>' % (1 + x, 28 + y, cell, cell)
                 for x, y in zip(xs.tolist(), ys.tolist()))
    parts.append("</g></svg>\n")
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(parts))


class _Substitution:
    """Recovery of a Hessian's nonzeros from ``B = H S`` for an acyclic colouring: each
    two-coloured tree is peeled from its leaves, a leaf's entry read from ``B`` minus
    the entries of its row already recovered (Gebremedhin et al. 2009)."""

    def __init__(self, P, colors):
        n = P.shape[0]
        rows, cols = _pattern_rows_cols(P)
        position = {(int(i), int(j)): k for k, (i, j) in enumerate(zip(rows.tolist(), cols.tolist()))}
        S = _coloring.off_diagonal(P)  # (P is symmetric)
        adj = [set(S.indices[S.indptr[v]:S.indptr[v + 1]].tolist()) for v in range(n)]
        cl = colors.tolist()
        steps = []  # (entry k, mirror entry, B index, entries to subtract)
        for i in range(n):
            if (i, i) in position:
                steps.append((position[i, i], None, cl[i] * n + i, ()))
        # per pair of colours, the forest of edges between them, peeled leaf by leaf
        forests = {}
        for i in range(n):
            for j in adj[i]:
                if i < j:
                    pair = (min(cl[i], cl[j]), max(cl[i], cl[j]))
                    forests.setdefault(pair, []).append((i, j))
        for edges in forests.values():
            nbrs = {}
            for i, j in edges:
                nbrs.setdefault(i, set()).add(j)
                nbrs.setdefault(j, set()).add(i)
            done = {}  # vertex -> list of entries (v, w) recovered so far with colour(w) fixed
            leaves = [v for v, s in nbrs.items() if len(s) == 1]
            while leaves:
                v = leaves.pop()
                if len(nbrs[v]) != 1:
                    continue
                w = nbrs[v].pop()
                # B[v, colour w] = H[v, w] + sum of H[v, u] over v's other colour-w neighbours,
                # all recovered already (they were leaves peeled into v)
                others = tuple(position[v, u] for u in done.get(v, ()))
                steps.append((position[v, w], position[w, v], cl[w] * n + v, others))
                done.setdefault(w, []).append(v)
                nbrs[w].discard(v)
                if len(nbrs[w]) == 1:
                    leaves.append(w)
        self.steps, self.nnz = steps, len(rows)

    def __call__(self, B):
        flat = B.ravel()
        values = np.zeros(self.nnz)
        for k, mirror, src, others in self.steps:
            v = flat[src]
            for o in others:
                v -= values[o]
            values[k] = v
            if mirror is not None:
                values[mirror] = v
        return values


# ----------------------------------------------------------------------------- public API
def prepare_sparse_jacobian(f: Callable[..., Any], x: Any, *, sparsity: Any = None, coloring: str = "auto",
                            on_mismatch: str = "error") -> "SparseJacobian":
    """Detect the sparsity pattern of ``f``'s Jacobian at ``x`` and colour it, once; the
    returned object ``prep`` evaluates the sparse Jacobian at any ``x2`` of the same
    shape: ``prep(x2)`` is a ``scipy.sparse.csr_array`` of shape ``(out.size, x.size)``.

    ``prep.pattern`` (bool ``csr_array``), ``prep.colors`` (one colour per column, or per
    row with ``prep.kind == "row"``), ``prep.ncolors``; ``prep.check(x2)`` compares with
    the dense ``capstan.jacobian``.  ``sparsity=`` gives the pattern instead of detecting
    it.  ``coloring="column"`` evaluates ``J`` with one chunked forward run (one
    direction per colour), ``"row"`` with one reverse run and a backward pass per
    colour; ``"auto"`` takes row colouring only when it needs less than half the
    colours.  When ``f`` takes another branch at ``x2`` than at ``x`` (a comparison on a
    differentiated value came out differently), ``prep(x2)`` raises
    ``capstan.TapeGuardError``, or detects the pattern again with
    ``on_mismatch="redetect"``.

    Example::

        >>> import numpy as np, capstan
        >>> prep = capstan.prepare_sparse_jacobian(lambda x: x[1:] ** 2 - x[:-1], np.ones(5))
        >>> prep.ncolors
        2
        >>> prep(np.arange(5.0)).toarray()
        array([[-1.,  2.,  0.,  0.,  0.],
               [ 0., -1.,  4.,  0.,  0.],
               [ 0.,  0., -1.,  6.,  0.],
               [ 0.,  0.,  0., -1.,  8.]])

    Raises:
        TypeError: ``f`` not callable; ``x`` not a float array, number or list of numbers.
        ValueError: an unknown ``coloring`` or ``on_mismatch``; a ``sparsity`` of the wrong
            shape; later, an ``x2`` of another shape.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    return SparseJacobian(f, x, sparsity, coloring, on_mismatch)


def prepare_sparse_hessian(f: Callable[..., Any], x: Any, *, sparsity: Any = None, coloring: str = "star",
                           hvp: str = "auto", on_mismatch: str = "error") -> "SparseHessian":
    """Detect the sparsity pattern of the Hessian of scalar ``f`` at ``x`` and colour it,
    once; ``prep(x2)`` is the Hessian at ``x2`` as a symmetric ``scipy.sparse.csr_array``.

    ``coloring="star"`` (default) reads each nonzero directly from one Hessian-vector
    product; ``"acyclic"`` may need fewer products and recovers the values by
    substitution; ``"column"`` is the distance-2 colouring a Jacobian would use.
    ``hvp="fwd_over_rev"`` computes all the products in one chunked forward run over a
    reverse-mode gradient (as ``capstan.hessian`` does); ``"rev_over_fwd"`` records the
    directional derivatives of one chunked forward run (up to 4 colours) in one reverse
    run and takes one backward pass per colour; ``"auto"``
    (default) starts with the second, computes both on the second evaluation (they must
    agree, else a RuntimeWarning and the first from then on) and then keeps the faster
    (``prep.timings``).  ``prep.pattern``, ``prep.colors``, ``prep.ncolors``, ``prep.check(x2)`` and
    ``on_mismatch`` as for :func:`prepare_sparse_jacobian`.

    Example::

        >>> import numpy as np, scipy.optimize, capstan
        >>> prep = capstan.prepare_sparse_hessian(scipy.optimize.rosen, np.zeros(100))
        >>> prep.ncolors
        3
        >>> H = prep(np.ones(100))
        >>> float(abs(H - scipy.optimize.rosen_hess(np.ones(100))).max())
        0.0

    Raises:
        TypeError: ``f`` not callable; ``x`` not a float array, number or list of numbers.
        ValueError: ``f`` does not return a scalar; an unknown ``coloring``, ``hvp`` or
            ``on_mismatch``; a ``sparsity`` of the wrong shape.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    return SparseHessian(f, x, sparsity, coloring, hvp, on_mismatch)


def sparse_jacobian(f: Callable[..., Any], x: Any, *, sparsity: Any = None, coloring: str = "auto") -> Any:
    """The Jacobian of ``f`` at ``x`` as a ``scipy.sparse.csr_array`` of shape
    ``(out.size, x.size)``, with exactly the detected (or given) pattern's structure:
    detection, colouring and one compressed evaluation.  To evaluate at many points,
    prepare once with :func:`prepare_sparse_jacobian`.

    Example::

        >>> import numpy as np, capstan
        >>> capstan.sparse_jacobian(lambda x: np.exp(x[:-1]) * x[1:], np.zeros(3)).toarray()
        array([[0., 1., 0.],
               [0., 0., 1.]])

    Raises:
        TypeError, ValueError, capstan.NoRuleError: as :func:`prepare_sparse_jacobian`.
    """
    fname = "sparse_jacobian"
    try:
        prep = SparseJacobian(f, x, sparsity, coloring, "error")
    except (TypeError, ValueError) as err:
        raise type(err)(str(err).replace("prepare_sparse_jacobian", fname)) from None
    prep.fname = fname
    return prep(prep.x)


def sparse_hessian(f: Callable[..., Any], x: Any, *, sparsity: Any = None, coloring: str = "star",
                   hvp: str = "auto", method: str = "coloring") -> Any:
    """The Hessian of scalar ``f`` at ``x`` as a symmetric ``scipy.sparse.csr_array`` with
    exactly the detected (or given) pattern's structure.  To evaluate at many points,
    prepare once with :func:`prepare_sparse_hessian`.

    ``method="coloring"`` (default) detects the pattern, colours it and evaluates
    Hessian-vector products; ``method="edge_pushing"`` records ``f`` once on a tape and
    sweeps it backwards carrying the nonlinear interactions between values (Gower and
    Mello's edge pushing, ``capstan.edge_pushing``): no detection, colouring or products,
    but ``f`` must read ``x`` element by element (a scalar tape: Python loops over
    ``x[i]``), and ``coloring``/``hvp`` do not apply.  A ``sparsity`` given to edge
    pushing is checked: a nonzero outside it is a ``ValueError``.

    Example::

        >>> import numpy as np, capstan
        >>> capstan.sparse_hessian(lambda x: np.sum(x[:-1] * x[1:]), np.ones(3)).toarray()
        array([[0., 1., 0.],
               [1., 0., 1.],
               [0., 1., 0.]])

    Raises:
        TypeError, ValueError, capstan.NoRuleError: as :func:`prepare_sparse_hessian`.
    """
    fname = "sparse_hessian"
    if method == "edge_pushing":
        from .edge_pushing import edge_pushing_hessian

        if not callable(f):
            raise TypeError("capstan.%s(f, x): f must be callable, got %r" % (fname, f))
        return edge_pushing_hessian(f, point(x, fname), fname, sparsity)
    if method != "coloring":
        raise ValueError("capstan.%s: method must be 'coloring' or 'edge_pushing', got %r" % (fname, method))
    try:
        prep = SparseHessian(f, x, sparsity, coloring, hvp, "error")
    except (TypeError, ValueError) as err:
        raise type(err)(str(err).replace("prepare_sparse_hessian", fname)) from None
    prep.fname = fname
    return prep(prep.x)


def _directional(fname, f, z, v):
    """``f``'s derivative at ``z`` along ``v``, after checking that ``f`` returns a number
    that can have one (a truth value's tangent is None, not an answer)."""
    from . import checks
    from .forward import jvp_as

    y, t = jvp_as(fname, f, (z,), (v,))
    checks.numeric_output(fname, [y], bools=False)
    return t


def _zero_if_none(g, x):
    """``g``, or zeros shaped like ``x`` where no derivative flowed (``gradient``'s ``None``)."""
    if g is not None:
        return g
    return np.zeros(np.shape(x), dtype=np.result_type(x, float)) if isinstance(x, np.ndarray) else 0.0 * x


def hvp(f: Callable[..., Any], x: Any, v: Any, *, mode: str = "rev_over_fwd") -> Any:
    """The Hessian of scalar ``f`` at ``x`` times ``v``, without forming the Hessian:
    the gradient of the directional derivative along ``v`` (``mode="rev_over_fwd"``,
    default, the faster here) or the directional derivative of the gradient
    (``"fwd_over_rev"``).  Shaped like ``x``.

    Example::

        >>> import numpy as np, capstan
        >>> capstan.hvp(lambda x: x[0] ** 2 * x[1], np.array([1.0, 2.0]), np.array([1.0, 0.0]))
        array([4., 2.])

    Raises:
        TypeError: ``f`` not callable; ``x`` cannot carry a derivative.
        ValueError: ``v`` not shaped like ``x``; ``f`` does not return a real scalar; an
            unknown ``mode``.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    from .forward import jvp_as
    from .reverse import gradient

    if not callable(f):
        raise TypeError("capstan.hvp(f, x, v): f must be callable, got %r" % (f,))
    if mode not in HVP_MODES:
        raise ValueError("capstan.hvp: mode must be 'rev_over_fwd' or 'fwd_over_rev', got %r" % (mode,))
    structure.check_leaf(x, "hvp")
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (float, complex, np.ndarray, np.floating,
                                                             int, np.integer)):
        raise TypeError("capstan.hvp(f, x, v): x must be a float or a float array, got %s"
                        % type(x).__name__)
    if isinstance(x, (int, np.integer)):
        x = float(x)
    if isinstance(x, np.ndarray) and x.dtype.kind not in "fc":
        x = x.astype(float)
    if np.shape(v) != np.shape(x):
        raise ValueError("capstan.hvp: v has shape %s, x has shape %s" % (np.shape(v), np.shape(x)))
    if isinstance(x, np.ndarray):
        v = np.asarray(v, dtype=np.result_type(x, float))
    else:
        v = float(v) if not isinstance(v, complex) else v
    try:
        hv = None
        if mode == "rev_over_fwd":
            try:
                hv = gradient(lambda z: _directional("hvp", f, z, v), x)[0]
            except losses.UndefinedInReverse:  # (NaN where reverse mode cannot tell a zero that
                mode = "fwd_over_rev"  # holds near the point from the point's own: forward over reverse can)
        if mode == "fwd_over_rev":
            hv = jvp_as("hvp", lambda z: _zero_if_none(gradient(f, z)[0], z), (x,), (v,))[1]
        return _zero_if_none(hv, x)  # (f linear, or constant: a Hessian of zeros, as capstan.hessian gives)
    except (ValueError, TypeError) as err:  # (f's output checked by the inner entry point: name ours)
        text = str(err)
        if type(err) in (ValueError, TypeError) and text.startswith(("capstan.gradient:", "capstan.jvp:")):
            raise type(err)("capstan.hvp: " + text.split(": ", 1)[1]) from None
        raise
