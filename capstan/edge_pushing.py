"""Sparse Hessians of scalar code by edge pushing (Gower & Mello 2012) over a kept tape.

``f`` is recorded once as a scalar tape (``capstan.record_tape``): every step one float
operation of one or two earlier nodes.  One reverse sweep then carries, besides the
adjoints of the nodes (the gradient), a symmetric set of weighted *edges* between nodes:
the second-order information not yet pushed down to the inputs.  At each node ``i``, from
the last to the first,

* pushing: an edge ``(p, i)`` of weight ``w`` becomes edges ``(p, j)`` of weight
  ``w * d_j`` for each parent ``j`` of ``i`` (``2 * w * d_p`` on the diagonal when
  ``j == p``); a self-edge ``(i, i)`` becomes ``(j, k)`` of weight ``w * d_j * d_k``;
* creating: the adjoint of ``i`` times the local second derivatives of its operation
  makes edges ``(j, k)`` between its parents;
* the adjoint of ``i`` times its partials goes to its parents (reverse mode),

where ``d_j`` is the partial of ``i``'s operation with respect to parent ``j``.  The edges
left between inputs are the Hessian: its nonzeros come out of the sweep, no pattern or
colouring is needed, and each is exact.  The local second derivatives are written out
below for the operators and the one-argument ``math`` functions; a tape with any other
step (array code, a function without a second derivative here) is refused.
"""
import math
import operator

import numpy as np

from .reverse import GUARD, INPUT, RULE, Record
from .rules.registry import PARTIALS

# f -> local second derivatives of r = f(a[, b]): a function of (r, a[, b]) returning
# (d2/da2[, d2/dadb, d2/db2])
_ZERO2 = lambda r, a, b: (0.0, 0.0, 0.0)  # noqa: E731


def _div2(r, a, b):
    return 0.0, -1.0 / (b * b), 2.0 * a / (b * b * b)


def _pow2(r, a, b):
    aa = b * (b - 1.0) * a ** (b - 2.0) if b not in (0, 1) else 0.0
    if a > 0:
        log_a = math.log(a)
        return aa, a ** (b - 1.0) * (1.0 + b * log_a), r * log_a * log_a
    return aa, math.nan, math.nan  # (the exponent's derivatives exist only for a > 0)


SECOND_BINARY = {operator.add: _ZERO2, operator.sub: _ZERO2, operator.iadd: _ZERO2, operator.isub: _ZERO2,
                 operator.mul: lambda r, a, b: (0.0, 1.0, 0.0), operator.imul: lambda r, a, b: (0.0, 1.0, 0.0),
                 operator.truediv: _div2, operator.itruediv: _div2, operator.pow: _pow2,
                 operator.ipow: _pow2, pow: _pow2}
SECOND_UNARY = {
    operator.neg: lambda r, a: 0.0, operator.pos: lambda r, a: 0.0,
    math.exp: lambda r, a: r, math.expm1: lambda r, a: r + 1.0,
    math.log: lambda r, a: -1.0 / (a * a), math.log1p: lambda r, a: -1.0 / ((1.0 + a) * (1.0 + a)),
    math.sin: lambda r, a: -r, math.cos: lambda r, a: -r, math.tan: lambda r, a: 2.0 * r * (1.0 + r * r),
    math.sqrt: lambda r, a: -0.25 / (a * r), math.tanh: lambda r, a: -2.0 * r * (1.0 - r * r),
    math.sinh: lambda r, a: r, math.cosh: lambda r, a: r,
    math.atan: lambda r, a: -2.0 * a / ((1.0 + a * a) * (1.0 + a * a)),
}


def _scalar(v):
    return type(v) is float or type(v) is int or type(v) is np.float64


def _local(rec, fname):
    """``(parents, first, second)`` of a scalar step: its distinct parent nodes, the
    partial with respect to each, and the local second derivatives as a dict
    ``(k, l) -> value`` over positions in ``parents`` (``k <= l``)."""
    f, vals, ans = rec.f, rec.vals, rec.ans
    if not (_scalar(ans) and all(_scalar(v) for v in vals)):
        raise ValueError("capstan.%s(method='edge_pushing'): f must be scalar code (floats and "
                         "Python loops); %s works on arrays here: use the colouring method"
                         % (fname, getattr(f, "__name__", f)))
    partials = PARTIALS.get(f)
    if len(vals) == 1 and f in SECOND_UNARY:
        h = ((SECOND_UNARY[f](ans, vals[0]),),)
    elif len(vals) == 2 and f in SECOND_BINARY:
        aa, ab, bb = SECOND_BINARY[f](ans, vals[0], vals[1])
        h = ((aa, ab), (ab, bb))
    else:
        raise ValueError("capstan.%s(method='edge_pushing'): no second derivative of %s is written "
                         "out for edge pushing; use the colouring method"
                         % (fname, getattr(f, "__name__", f)))
    parents, first, where = [], [], {}
    slots = []
    for k, p in enumerate(rec.parents):
        if p is None:
            slots.append(None)
            continue
        d = float(partials[k](ans, *vals))
        if p not in where:
            where[p] = len(parents)
            parents.append(p)
            first.append(0.0)
        first[where[p]] += d
        slots.append(where[p])
    second = {}
    for k, sk in enumerate(slots):
        for m, sm in enumerate(slots):
            if sk is None or sm is None or sk > sm or h[k][m] == 0.0:
                continue
            # (ordered pairs of argument positions: two on distinct parents count once, the
            # one with sk < sm; an argument repeated (x * x) adds all four to its diagonal)
            second[sk, sm] = second.get((sk, sm), 0.0) + h[k][m]
    return parents, first, second


def _add(W, p, q, v):
    """Weight ``v`` onto the symmetric edge ``(p, q)``."""
    row = W.get(p)
    if row is None:
        row = W[p] = {}
    row[q] = row.get(q, 0.0) + v
    if p != q:
        row = W.get(q)
        if row is None:
            row = W[q] = {}
        row[p] = row.get(p, 0.0) + v


def edge_pushing(f, x, fname="sparse_hessian"):
    """The Hessian of scalar ``f`` at the list (or tuple) of floats ``x`` by edge pushing:
    a symmetric ``scipy.sparse.csr_array`` of shape ``(len(x), len(x))`` whose entries
    are the pairs of inputs the sweep connects."""
    import scipy.sparse as sp

    from .tape import record_tape

    n = len(x)
    tape = record_tape(f, type(x)(x))
    if len(tape.out_nodes) != 1 or not _scalar(tape.value):
        raise ValueError("capstan.%s: f must return a real scalar" % fname)
    root = tape.out_nodes[0]
    nodes = tape.inputs[0][1]
    if root is None:
        return sp.csr_array((n, n))
    records = tape.records
    adjoint = [0.0] * len(records)
    adjoint[root] = 1.0
    W = {}
    for i in range(root, -1, -1):
        rec = records[i]
        if type(rec) is not Record:
            raise ValueError("capstan.%s(method='edge_pushing'): the tape holds an inline step "
                             "it cannot read" % fname)
        kind = rec.kind
        if kind is INPUT or kind is GUARD:
            continue
        if kind is not RULE:
            raise ValueError("capstan.%s(method='edge_pushing'): f must be scalar code (a %s step "
                             "on arrays here); use the colouring method" % (fname, kind.name))
        edges = W.pop(i, None)
        a_i = adjoint[i]
        if edges is None and a_i == 0.0:
            continue
        parents, first, second = _local(rec, fname)
        if edges:
            self_edge = edges.pop(i, 0.0)
            for p, w in edges.items():  # pushing the edges (p, i) down to i's parents
                W[p].pop(i, None)
                for j, d in zip(parents, first):
                    if d != 0.0:
                        _add(W, p, j, (2.0 * d * w) if j == p else d * w)
            if self_edge != 0.0:
                for k, (j, dj) in enumerate(zip(parents, first)):
                    for m in range(k, len(parents)):
                        v = dj * first[m] * self_edge
                        if v != 0.0:
                            _add(W, j, parents[m], v)
        if a_i != 0.0:
            for (k, m), h in second.items():  # creating: the operation's own curvature
                _add(W, parents[k], parents[m], a_i * h)
            for j, d in zip(parents, first):
                adjoint[j] += a_i * d
    position = {node: k for k, node in enumerate(nodes) if node is not None}
    rows, cols, data = [], [], []
    for node, k in position.items():
        for other, w in W.get(node, {}).items():
            m = position.get(other)
            if m is not None:
                rows.append(k)
                cols.append(m)
                data.append(w)
    H = sp.csr_array((np.array(data, dtype=float), (np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64))),
                     shape=(n, n))
    H.sum_duplicates()
    H.sort_indices()
    return H
