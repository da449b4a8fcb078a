"""Sparse Hessians by edge pushing (Gower & Mello, 2012): one reverse sweep over a
scalar tape that carries, beside each node's adjoint, the nonlinear interactions
("edges") between nodes, so that the Hessian's nonzeros come out exactly without
colouring or Hessian-vector products.

``f`` is recorded once by :func:`capstan.record_tape`; every step of that tape must be a
scalar operation (an operator or a ``math``-like function of numbers, or the read of one
element of ``x``): array operations (``np.sum(x)``, ``x @ A``) have no scalar tape and are
refused with a ``ValueError`` that points to the default colouring method.

The sweep goes over the tape backwards. For the step ``v_i = phi(v_j, ...)``, with first
partials ``d_j`` and second partials ``h_jk`` of ``phi`` at the recorded values, and
``W`` the symmetric weights of the edges found so far:

* pushing: each edge ``{p, i}`` moves to ``{p, j}`` with weight ``d_j W_pi`` (doubled
  when ``p == j``), and the self-edge ``{i, i}`` to ``{j, k}`` with ``d_j d_k W_ii``;
* creating: ``{j, k}`` gains ``adjoint_i * h_jk``;
* the adjoints: ``adjoint_j += adjoint_i * d_j``.

Edges are kept structurally (an edge whose weight happens to be 0.0 at this point stays),
so the result's pattern is the structural Hessian pattern of the path ``f`` took at ``x``.
"""
import math
import operator
from typing import Any, Callable

import numpy as np

from .reverse import GETITEM, GUARD, INPUT, RULE


# ----------------------------------------------------------------------------- local second order
# f -> (y, args) -> (first partials, {(i, k): second partial, i <= k}) over argument
# positions; only structurally nonzero second partials are listed.
def _div(y, a, b):
    return (1.0 / b, -a / (b * b)), {(0, 1): -1.0 / (b * b), (1, 1): 2.0 * a / (b * b * b)}


def _pow(y, a, b):
    if b == 0:
        return (0.0, _log(a) * y), {(1, 1): _log(a) ** 2 * y}
    da = b * a ** (b - 1)
    haa = b * (b - 1) * a ** (b - 2) if b != 1 else 0.0
    if a <= 0:  # (b constant below: no log of a needed)
        return (da, None), {(0, 0): haa}
    la = math.log(a)
    return (da, y * la), {(0, 0): haa, (0, 1): a ** (b - 1) * (1.0 + b * la), (1, 1): y * la * la}


def _log(a):
    return math.log(a) if a > 0 else math.nan


LOCAL: dict[Any, Callable[..., Any]] = {
    operator.add: lambda y, a, b: ((1.0, 1.0), {}),
    operator.sub: lambda y, a, b: ((1.0, -1.0), {}),
    operator.mul: lambda y, a, b: ((b, a), {(0, 1): 1.0}),
    operator.truediv: _div,
    operator.pow: _pow,
    operator.neg: lambda y, a: ((-1.0,), {}),
    operator.pos: lambda y, a: ((1.0,), {}),
    math.sin: lambda y, a: ((math.cos(a),), {(0, 0): -y}),
    math.cos: lambda y, a: ((-math.sin(a),), {(0, 0): -y}),
    math.tan: lambda y, a: ((1.0 + y * y,), {(0, 0): 2.0 * y * (1.0 + y * y)}),
    math.exp: lambda y, a: ((y,), {(0, 0): y}),
    math.expm1: lambda y, a: ((y + 1.0,), {(0, 0): y + 1.0}),
    math.log1p: lambda y, a: ((1.0 / (1.0 + a),), {(0, 0): -1.0 / (1.0 + a) ** 2}),
    math.sqrt: lambda y, a: ((0.5 / y,), {(0, 0): -0.25 / (y * a)}),
    math.sinh: lambda y, a: ((math.cosh(a),), {(0, 0): y}),
    math.cosh: lambda y, a: ((math.sinh(a),), {(0, 0): y}),
    math.tanh: lambda y, a: (((s := (1.0 / math.cosh(a)) ** 2),), {(0, 0): -2.0 * y * s}),  # (not 1 - y*y: 0 past 19)
    math.atan: lambda y, a: ((1.0 / (1.0 + a * a),), {(0, 0): -2.0 * a / (1.0 + a * a) ** 2}),
}
for _same, _plain in [(operator.iadd, operator.add), (operator.isub, operator.sub),
                      (operator.imul, operator.mul), (operator.itruediv, operator.truediv),
                      (operator.ipow, operator.pow), (pow, operator.pow), (np.add, operator.add),
                      (np.subtract, operator.sub), (np.multiply, operator.mul),
                      (np.divide, operator.truediv), (np.power, operator.pow), (np.negative, operator.neg),
                      (np.sin, math.sin), (np.cos, math.cos), (np.tan, math.tan), (np.exp, math.exp),
                      (np.expm1, math.expm1), (np.log1p, math.log1p), (np.sqrt, math.sqrt),
                      (np.sinh, math.sinh), (np.cosh, math.cosh), (np.tanh, math.tanh),
                      (np.arctan, math.atan)]:
    LOCAL[_same] = LOCAL[_plain]
LOCAL[math.log] = LOCAL[np.log] = lambda y, a, *base: (
    ((1.0 / a,), {(0, 0): -1.0 / (a * a)}) if not base else None)


def _by_capstan(f, vals, kwargs, positions):
    """First and second partials of ``f`` in the argument ``positions`` by capstan's own
    gradient and Hessian (any function with a derivative rule)."""
    from .derivatives import hessian
    from .reverse import gradient

    def g(z):
        args = list(vals)
        for i, p in enumerate(positions):
            args[p] = z[i]
        return f(*args, **kwargs)

    z = np.array([float(vals[p]) for p in positions])
    d, H = gradient(g, z)[0], hessian(g, z)
    k = len(positions)
    return ({p: float(d[i]) for i, p in enumerate(positions)},
            {(positions[i], positions[j]): float(H[i, j]) for i in range(k) for j in range(i, k)})


def local_partials(rec, positions):
    """``({position: first partial}, {(position, position): second partial})`` of one
    scalar step at its recorded values, over the argument positions that carry ``x``."""
    rule = LOCAL.get(rec.f) if not rec.kwargs else None
    found = None
    if rule is not None:
        try:
            found = rule(float(rec.ans), *(float(v) for v in rec.vals))
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            found = None
    if found is None:
        return _by_capstan(rec.f, rec.vals, rec.kwargs or {}, positions)
    first, second = found
    wanted = set(positions)
    d = {p: first[p] for p in positions}
    if any(v is None for v in d.values()):
        return _by_capstan(rec.f, rec.vals, rec.kwargs or {}, positions)
    return d, {pq: h for pq, h in second.items() if pq[0] in wanted and pq[1] in wanted}


# ----------------------------------------------------------------------------- the sweep
class _NotScalar(ValueError):
    pass


_SCALARS = (float, int, np.float64, np.float32, np.int64)


def _is_scalar(v):
    return type(v) in _SCALARS or np.ndim(v) == 0


def _all_ints(index):
    return all(isinstance(i, (int, np.integer)) for i in (index if isinstance(index, tuple) else (index,)))


def _scalar_steps(tape, n):
    """The tape as scalar steps ``(node, record, positions, parents)``: the argument
    positions that carry ``x`` and the node each reads, an element ``x.flat[k]`` being
    the node ``-1 - k`` (what a read of one element of ``x`` stands for)."""
    alias: dict[int, int] = {}
    (leaves, nodes), = tape.inputs
    array_node = None
    if len(nodes) == 1 and isinstance(leaves[0], np.ndarray):
        array_node = nodes[0]
    else:
        for k, node in enumerate(nodes):
            if node is not None:
                alias[node] = -1 - k
    steps = []
    for node, rec in enumerate(tape.records):
        kind = rec.kind
        if kind is INPUT or kind is GUARD:
            continue
        if kind is GETITEM and array_node is not None and rec.parents[0] == array_node:
            shape, _, index = rec.kwargs
            if type(index) is int and len(shape) == 1 and -n <= index < n:
                alias[node] = -1 - index % n
                continue
            try:
                flat = np.ravel_multi_index(index if isinstance(index, tuple) else (index,), shape,
                                            mode="wrap" if _all_ints(index) else "raise")
            except (TypeError, ValueError):
                raise _NotScalar("reads x[%r], not one element" % (index,)) from None
            alias[node] = -1 - int(flat)
            continue
        if kind is not RULE or not _is_scalar(rec.ans):
            what = getattr(rec.f, "__name__", repr(rec.f)) if kind is RULE else "an array write"
            raise _NotScalar("calls %s on whole arrays" % what if kind is RULE else "makes %s" % what)
        positions, parents = [], []
        for pos, parent in enumerate(rec.parents):
            if parent is None:
                continue
            if type(parent) is list or parent == array_node or not _is_scalar(rec.vals[pos]):
                raise _NotScalar("calls %s with an array" % getattr(rec.f, "__name__", repr(rec.f)))
            positions.append(pos)
            parents.append(alias.get(parent, parent))
        steps.append((node, rec, positions, parents))
    return steps, alias


def _add(W, j, k, v):
    row = W.get(j)
    if row is None:
        row = W[j] = {}
    row[k] = row.get(k, 0.0) + v
    if j != k:
        row = W.get(k)
        if row is None:
            row = W[k] = {}
        row[j] = row.get(j, 0.0) + v


def sweep(steps, out_node):
    """Edge pushing over ``steps`` (last to first) from the output node: the symmetric
    weights ``{node: {node: weight}}`` left when every step is swept (between elements
    of ``x``, the negative nodes, only)."""
    W: dict[int, dict[int, float]] = {}
    adjoint: dict[int, float] = {out_node: 1.0}
    for node, rec, positions, parents in reversed(steps):
        edges = W.pop(node, None)
        has_adjoint = node in adjoint
        if edges is None and not has_adjoint:
            continue
        w_self = None
        if edges is not None:
            w_self = edges.pop(node, None)
            for p in edges:
                del W[p][node]
        first, second = local_partials(rec, positions)
        d: dict[int, float] = {}  # the partials by parent (x * x reads x twice: they add up)
        for pos, j in zip(positions, parents):
            d[j] = d.get(j, 0.0) + first[pos]
        if edges:
            for p, w in edges.items():
                for j, dj in d.items():
                    _add(W, j, p, 2.0 * dj * w if j == p else dj * w)
        if w_self is not None:
            js = list(d)
            for a, j in enumerate(js):
                for k in js[a:]:
                    _add(W, j, k, d[j] * d[k] * w_self)
        if has_adjoint:
            a_i = adjoint.pop(node)
            if second:
                parent_at = dict(zip(positions, parents))
                for (pa, pb), h in second.items():
                    j, k = parent_at[pa], parent_at[pb]
                    # (h_ab and h_ba both land on one entry when a and b read one node: x * x)
                    _add(W, j, k, 2.0 * a_i * h if j == k and pa != pb else a_i * h)
            for j, dj in d.items():
                adjoint[j] = adjoint.get(j, 0.0) + a_i * dj
    return W


def edge_pushing_hessian(f, x, fname, sparsity=None):
    """The Hessian of scalar ``f`` at the point ``x`` (already checked by ``point``) as a
    symmetric ``csr_array`` (see the module docstring)."""
    import scipy.sparse as sp

    from .tape import record_tape

    n = int(np.size(x)) if not isinstance(x, (list, tuple)) else len(x)
    tape = record_tape(f, x)
    if len(tape.out_nodes) != 1 or np.ndim(tape.value) != 0 or isinstance(tape.value, complex):
        raise ValueError("capstan.%s: f must return a real scalar, got %r" % (fname, tape.value))
    out = tape.out_nodes[0]
    try:
        steps, alias = _scalar_steps(tape, n)
    except _NotScalar as why:
        raise ValueError("capstan.%s(..., method='edge_pushing') needs a scalar tape (f reading x "
                         "element by element); here f %s: use the default method='coloring'"
                         % (fname, why)) from None
    rows, cols, vals = [], [], []
    if out is not None:
        for j, row in sweep(steps, alias.get(out, out)).items():
            for k, v in row.items():
                if j >= 0 or k >= 0:  # (a step off the path to the output: no second order)
                    continue
                rows.append(-1 - j)
                cols.append(-1 - k)
                vals.append(v)
    H = sp.csr_array((np.array(vals, dtype=float), (np.array(rows, dtype=np.intp),
                                                    np.array(cols, dtype=np.intp))), shape=(n, n))
    H.sum_duplicates()
    H.sort_indices()
    if sparsity is None:
        return H
    from . import graph_coloring as _coloring

    P = _coloring.as_pattern(sparsity, fname, square=True)
    if P.shape != (n, n):
        raise ValueError("capstan.%s: sparsity has shape %s, x has %d elements" % (fname, P.shape, n))
    P = sp.csr_array(P + P.T).astype(bool)
    missed = H - H.multiply(P)
    missed.eliminate_zeros()
    if missed.nnz:
        missed = missed.tocoo()
        r, c = missed.row[0], missed.col[0]
        raise ValueError("capstan.%s: the sparsity given misses a nonzero of the Hessian at (%d, %d)"
                         % (fname, r, c))
    P.sort_indices()
    found = dict(zip(zip(*(a.tolist() for a in H.nonzero())), H.data[H.data != 0].tolist()))
    rows = np.repeat(np.arange(n), np.diff(P.indptr))
    values = np.array([found.get((r, c), 0.0) for r, c in zip(rows.tolist(), P.indices.tolist())])
    return sp.csr_array((values, P.indices.copy(), P.indptr.copy()), shape=(n, n))
