"""Colouring sparsity patterns, so that one derivative evaluation per colour gives a
whole sparse Jacobian or Hessian (Gebremedhin, Manne & Pothen, *What Color Is Your
Jacobian?*, SIAM Review 2005).

* ``"column"``: columns sharing no row get the same colour (a distance-2 colouring of
  the column vertices); one forward-mode direction per colour.
* ``"row"``: the same for rows; one reverse-mode pass per colour (wide Jacobians).
* ``"star"``: for symmetric (Hessian) patterns: a proper colouring where every path
  on four vertices uses at least three colours, so each nonzero can be read directly
  from one Hessian-vector product (an arrowhead needs 2 colours, where column
  colouring needs n).
* ``"acyclic"``: a proper colouring where every cycle uses at least three colours;
  fewer colours still (a tridiagonal Hessian: 2), values recovered by substitution.

Greedy colourings depend on the order the vertices are visited in; several cheap
orders are tried and the colouring with the fewest colours kept.
"""
from typing import Any

import numpy as np

from .sparsity import sorted_unique

KINDS = ("column", "row", "star", "acyclic")
_STAR_BUDGET = 20_000  # edge visits the Python star colouring may take per order


def as_pattern(pattern, fname, square=False):
    """``pattern`` as a scipy CSR array of bools (from any scipy sparse matrix or a 2-D
    array); a TypeError or ValueError naming ``fname`` otherwise."""
    import scipy.sparse as sp

    if sp.issparse(pattern):
        P = sp.csr_array(pattern)
    elif isinstance(pattern, np.ndarray) or isinstance(pattern, list):
        P = sp.csr_array(np.asarray(pattern))
    else:
        raise TypeError("capstan.%s: the pattern must be a scipy.sparse matrix or a 2-D array, got %s"
                        % (fname, type(pattern).__name__))
    if P.ndim != 2:
        raise ValueError("capstan.%s: the pattern must be 2-D, got shape %s" % (fname, P.shape))
    if square and P.shape[0] != P.shape[1]:
        raise ValueError("capstan.%s: a symmetric colouring needs a square pattern, got shape %s"
                         % (fname, P.shape))
    P = P.astype(bool)
    P.eliminate_zeros()
    P.sort_indices()
    return P


def coloring(pattern: Any, kind: str = "column") -> np.ndarray:
    """Colours for a sparsity pattern: an int array, one colour (0, 1, ...) per column
    (``kind="column"``), per row (``"row"``) or per variable (``"star"``, ``"acyclic"``:
    for a symmetric Hessian pattern; the pattern is symmetrised first).  The number
    of colours is ``colors.max() + 1``.

    Example::

        >>> import numpy as np, scipy.sparse as sp, capstan
        >>> tridiagonal = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(6, 6))
        >>> capstan.coloring(tridiagonal, kind="column")
        array([0, 1, 2, 0, 1, 2])
        >>> arrowhead = np.eye(5, dtype=bool); arrowhead[-1] = arrowhead[:, -1] = True
        >>> int(capstan.coloring(arrowhead, kind="star").max() + 1)
        2

    Raises:
        TypeError: ``pattern`` is not a scipy sparse matrix or a 2-D array.
        ValueError: an unknown ``kind``; a symmetric kind given a non-square pattern.
    """
    if kind not in KINDS:
        raise ValueError("capstan.coloring: kind must be one of %s, got %r"
                         % (", ".join(map(repr, KINDS)), kind))
    P = as_pattern(pattern, "coloring", square=kind in ("star", "acyclic"))
    if kind == "column":
        return column_coloring(P)
    if kind == "row":
        return column_coloring(P.T.tocsr())
    S = symmetric(P)
    if kind == "star":
        return star_coloring(S)
    return acyclic_coloring(S)


def symmetric(P):
    """``P | P.T`` without its diagonal (the adjacency of the variables' graph)."""
    import scipy.sparse as sp

    n = P.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(P.indptr))
    cols = P.indices.astype(np.int64)
    off = rows != cols
    keys = sorted_unique(np.concatenate([rows[off] * n + cols[off], cols[off] * n + rows[off]]))
    r = keys // n
    return sp.csr_array((np.ones(len(keys), bool), (keys - r * n).astype(np.int32),
                         np.searchsorted(r, np.arange(n + 1))), shape=(n, n))


def off_diagonal(P):
    """A symmetric CSR pattern ``P`` (sorted indices) without its diagonal: what
    :func:`symmetric` gives for it, by dropping entries (no sort)."""
    import scipy.sparse as sp

    n = P.shape[0]
    counts = np.diff(P.indptr)
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    off = rows != P.indices
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows[off], minlength=n), out=indptr[1:])
    return sp.csr_array((np.ones(int(indptr[-1]), bool), P.indices[off].astype(np.int32),
                         indptr.astype(np.int32) if indptr[-1] < 2 ** 31 else indptr), shape=(n, n))


def _best(candidates):
    best = None
    for colors in candidates:
        if colors is not None and (best is None or colors.max(initial=-1) < best.max(initial=-1)):
            best = colors
    return best


# ----------------------------------------------------------------------------- column colouring
def column_coloring(P):
    """Distance-2 colouring of ``P``'s columns: natural order first, then largest-first
    and reversed orders unless the count already meets the lower bound (the most
    nonzeros in one row, which must all differ)."""
    m, n = P.shape
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    if P.nnz == 0:
        return np.zeros(n, dtype=np.intp)
    rowlen = np.diff(P.indptr)
    bound = int(rowlen.max())
    C = P.tocsc()
    C.sort_indices()
    best = _group_columns(C, np.arange(n))
    if best.max() + 1 <= bound:
        return best
    weight = np.add.reduceat(rowlen[C.indices], C.indptr[:-1]) if C.nnz else np.zeros(n)
    weight = np.where(np.diff(C.indptr) > 0, weight, 0)
    for order in (np.argsort(-weight, kind="stable"), np.arange(n)[::-1]):
        best = _best([best, _group_columns(C, order)])
        if best.max() + 1 <= bound:
            break
    return best


def _group_columns(C, order):
    """Greedy colouring of the columns of CSC ``C`` visited in ``order`` (SciPy's Cython
    Curtis-Powell-Reid grouping; a Python loop where it is missing)."""
    from .sparsity import Rows, gather

    m, n = C.shape
    moved = gather(Rows(C.indptr.astype(np.int64), C.indices.astype(np.int64), m), order)
    try:
        from scipy.optimize._group_columns import group_sparse  # (private location)
    except ImportError:  # pragma: no cover - depends on the SciPy version
        return _greedy_columns(C, order)
    groups = np.empty(n, dtype=np.intp)
    groups[order] = group_sparse(m, n, moved.indices.astype(np.int32), moved.indptr.astype(np.int32))
    return groups


def _greedy_columns(C, order):
    """The same greedy colouring in Python."""
    P = C.tocsr()
    n = P.shape[1]
    colors = np.full(n, -1, dtype=np.intp)
    indptr, indices = P.indptr.tolist(), P.indices.tolist()
    cptr, cind = C.indptr.tolist(), C.indices.tolist()
    for j in order.tolist():
        used = set()
        for r in cind[cptr[j]:cptr[j + 1]]:
            for k in indices[indptr[r]:indptr[r + 1]]:
                used.add(colors[k])
        c = 0
        while c in used:
            c += 1
        colors[j] = c
    return colors


# ----------------------------------------------------------------------------- star colouring
def star_coloring(S):
    """A star colouring of the graph with adjacency ``S`` (symmetric, no diagonal).

    Two kinds of candidates, the fewest colours kept: (1) a distance-2 colouring of the
    graph without its densest vertices, each of which then gets a colour of its own
    (every path on four vertices meets three colours: through a dense vertex by its
    own colour, elsewhere by distance 2) -- fast, and 2 colours for an arrowhead;
    (2) the greedy star colouring of Gebremedhin, Tarafdar, Manne & Pothen (2007),
    which keeps track of two-coloured stars and their hubs, in natural and
    smallest-degree-first order when its cost stays small."""
    import scipy.sparse as sp

    n = S.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    degree = np.diff(S.indptr)
    candidates = []
    mean = S.nnz / n
    # (with dense vertices, a plain distance-2 colouring needs about as many colours as the
    # densest vertex has neighbours, and takes that many passes: only the cut one is tried)
    limits = [2 * mean + 2] if degree.max(initial=0) > 2 * mean + 2 else [None]
    for limit in limits:
        keep = np.ones(n, bool) if limit is None else degree <= limit
        K = np.flatnonzero(keep)
        sub = S[K][:, K] + sp.eye_array(len(K), dtype=bool, format="csr")
        colors = np.empty(n, dtype=np.intp)
        colors[K] = column_coloring(sp.csr_array(sub)) if len(K) else 0
        dense = np.flatnonzero(~keep)
        colors[dense] = (colors[K].max(initial=-1) + 1) + np.arange(len(dense))
        candidates.append(colors)
    for order in (np.arange(n), np.argsort(degree, kind="stable")):
        if _star_cost(S, order, degree) <= _STAR_BUDGET:
            candidates.append(_greedy_star(S, order))
    return _best(candidates)


def _star_cost(S, order, degree):
    """Roughly how many edge visits the greedy star colouring makes in ``order``: each
    vertex scans the neighbours of its neighbours coloured before it."""
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    before = rank[S.indices] < rank[rows]
    return int(degree[S.indices[before]].sum()) + S.nnz


def _greedy_star(S, order):
    n = S.shape[0]
    indptr, indices = S.indptr.tolist(), S.indices.tolist()
    adj = [indices[indptr[v]:indptr[v + 1]] for v in range(n)]
    color = [-1] * n
    forbidden = [-1] * (n + 1)  # forbidden[c] == v: colour c is forbidden for v
    first = {}  # colour c -> (v, w): the first neighbour w of v with colour c seen while colouring v
    star = {}  # edge (min, max) -> star number
    hub = []  # star number -> its hub (-1: a single edge, no hub yet)

    def forbid_neighbours(v, w):
        for x in adj[w]:
            if color[x] >= 0:
                forbidden[color[x]] = v

    for v in order.tolist():
        for w in adj[v]:
            cw = color[w]
            if cw < 0:
                continue
            forbidden[cw] = v
            p, q = first.get(cw, (-1, -1))
            if p == v:  # v has two neighbours of colour cw: v must be their hub
                forbid_neighbours(v, q)
                forbid_neighbours(v, w)
            else:
                first[cw] = (v, w)
                for x in adj[w]:
                    if x != v and color[x] >= 0 and hub[star[(w, x) if w < x else (x, w)]] == x:
                        forbidden[color[x]] = v  # x is the hub of w's star: v - w - x - ... bicoloured
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c
        for w in adj[v]:  # the stars v's new edges belong to
            cw = color[w]
            if cw < 0:
                continue
            edge = (v, w) if v < w else (w, v)
            for x in adj[w]:
                if x != v and color[x] == c:  # w has neighbours v and x of colour c: w is a hub
                    s = star[(w, x) if w < x else (x, w)]
                    hub[s] = w
                    star[edge] = s
                    break
            else:
                p, q = first.get(cw, (-1, -1))
                if p == v and q != w:  # v has neighbours w and q of colour cw: v is a hub
                    s = star[(v, q) if v < q else (q, v)]
                    hub[s] = v
                    star[edge] = s
                else:
                    hub.append(-1)
                    star[edge] = len(hub) - 1
    return np.asarray(color, dtype=np.intp)


# ----------------------------------------------------------------------------- acyclic colouring
def acyclic_coloring(S):
    """An acyclic colouring: greedy proper colourings (natural and largest-first orders)
    whose two-coloured subgraphs are all forests, or the star colouring (every star
    colouring is acyclic), whichever has fewer colours."""
    n = S.shape[0]
    candidates = [star_coloring(S)]
    degree = np.diff(S.indptr)
    for order in (np.arange(n), np.argsort(-degree, kind="stable")):
        colors = _greedy_proper(S, order)
        if is_acyclic(S, colors):
            candidates.append(colors)
    return _best(candidates)


def _greedy_proper(S, order):
    indptr, indices = S.indptr.tolist(), S.indices.tolist()
    color = [-1] * S.shape[0]
    for v in order.tolist():
        used = {color[w] for w in indices[indptr[v]:indptr[v + 1]]}
        c = 0
        while c in used:
            c += 1
        color[v] = c
    return np.asarray(color, dtype=np.intp)


def two_colored_forests(S, colors):
    """For each edge ``(i, j)``, ``i < j``, of ``S``: the root of its two-coloured
    component (union-find per pair of colours); ``None`` when some two-coloured
    subgraph has a cycle."""
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    upper = rows < S.indices
    I, J = rows[upper].tolist(), S.indices[upper].tolist()
    parent = {}

    def find(a):
        while parent.get(a, a) != a:
            parent[a] = parent.get(parent[a], parent[a])
            a = parent[a]
        return a

    cl = colors.tolist()
    for i, j in zip(I, J):
        pair = (cl[i], cl[j]) if cl[i] < cl[j] else (cl[j], cl[i])
        a, b = find((pair, i)), find((pair, j))
        if a == b:
            return None
        parent[a] = b
    return I, J, find


def is_acyclic(S, colors):
    """Whether ``colors`` is a proper colouring of ``S`` without two-coloured cycles."""
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    if (colors[rows] == colors[S.indices]).any():
        return False
    return two_colored_forests(S, colors) is not None


# ----------------------------------------------------------------------------- checks
def is_column_coloring(P, colors):
    """Whether no two columns of ``P`` with one colour share a row."""
    P = P.tocsr()
    rows = np.repeat(np.arange(P.shape[0]), np.diff(P.indptr))
    keys = rows.astype(np.int64) * (int(colors.max(initial=0)) + 1) + colors[P.indices]
    return len(sorted_unique(keys)) == len(keys)


def is_star_coloring(S, colors):
    """Whether ``colors`` is a proper colouring of ``S`` (no diagonal) where every
    nonzero ``(i, j)`` can be read from one side: ``j`` is ``i``'s only neighbour of its
    colour, or ``i`` is ``j``'s."""
    return star_sources(S, colors) is not None


def star_sources(S, colors):
    """For each stored entry ``(i, j)`` of ``S`` (CSR order), the pair ``(row, colour)``
    of the compressed Hessian ``H @ seed`` that holds it, as flat indices
    ``row * ncolors + colour``; ``None`` when the colouring is no star colouring."""
    n = S.shape[0]
    ncolors = int(colors.max(initial=-1)) + 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(S.indptr))
    cols = S.indices.astype(np.int64)
    off = rows != cols
    if (colors[rows[off]] == colors[cols[off]]).any():
        return None
    key_i = rows * ncolors + colors[cols]  # B[i, colour j]: fine if j is i's only neighbour of it
    counts = np.bincount(key_i[off], minlength=n * ncolors)
    own = (counts[key_i] == 1) | ~off
    key_j = cols * ncolors + colors[rows]
    fine_j = counts[key_j] == 1
    if not (own | fine_j).all():
        return None
    return np.where(own, key_i, key_j)
