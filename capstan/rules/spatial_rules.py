"""``scipy.spatial.distance``'s ``cdist``, ``pdist`` and ``squareform`` differentiated
through Python equivalents (``defimpl``): SciPy computes them in C++ kernels, which
capstan cannot see into.  Each metric is written with NumPy operations that have rules,
over the pairs of rows (``cdist``: every row of ``XA`` with every row of ``XB``;
``pdist``: the pairs ``i < j`` of ``X``, in SciPy's condensed order), with SciPy's
definitions and its defaults for ``w``, ``p``, ``V`` and ``VI``.  A metric without an
equivalent here (the boolean ones, ``jensenshannon``...) is refused with a
``NoRuleError`` naming it; a callable metric runs pair by pair, as SciPy runs it; ``out=``
gets the result written into it (``ADContext.apply``)."""
import numpy as np

try:
    import scipy.spatial.distance as _distance
except ImportError:  # pragma: no cover - scipy is optional
    _distance = None

from .registry import defimpl

_ALIASES = {"euclid": "euclidean", "eu": "euclidean", "e": "euclidean", "sqe": "sqeuclidean",
            "sqeuclid": "sqeuclidean", "cityblock": "cityblock", "cblock": "cityblock", "cb": "cityblock",
            "c": "cityblock", "manhattan": "cityblock", "cos": "cosine", "chebychev": "chebyshev",
            "cheby": "chebyshev", "cheb": "chebyshev", "ch": "chebyshev", "mi": "minkowski", "m": "minkowski",
            "pnorm": "minkowski", "corr": "correlation", "co": "correlation", "bray": "braycurtis",
            "braycurtis": "braycurtis", "canb": "canberra", "se": "seuclidean", "s": "seuclidean",
            "mahal": "mahalanobis", "mah": "mahalanobis"}


def _refuse(what):
    from ..losses import NoRuleError

    raise NoRuleError("capstan: scipy.spatial.distance %s has no derivative rule; compute the "
                      "distances with NumPy (or pass a callable metric)" % what)


def _weighted(w, d):
    return d if w is None else np.asarray(w) * d


def _pairs(metric, U, V, stacked, kwargs):
    """The distances between ``U[..., k, :]`` and ``V[..., k, :]`` (broadcast), reduced over
    the last axis; ``stacked`` (all the rows of the inputs) gives the ``V`` and ``VI``
    defaults."""
    name = _ALIASES.get(metric, metric)
    w = kwargs.pop("w", None)
    if name == "minkowski":
        p = kwargs.pop("p", 2.0)
    else:
        p = None
    V_arg = kwargs.pop("V", None) if name == "seuclidean" else None
    VI = kwargs.pop("VI", None) if name == "mahalanobis" else None
    if kwargs:
        _refuse("%s(..., %s=...)" % (metric, sorted(kwargs)[0]))
    diff = U - V
    if name == "euclidean":
        return np.sqrt(np.sum(_weighted(w, diff * diff), axis=-1))
    if name == "sqeuclidean":
        return np.sum(_weighted(w, diff * diff), axis=-1)
    if name == "cityblock":
        return np.sum(_weighted(w, np.abs(diff)), axis=-1)
    if name == "chebyshev":
        a = np.abs(diff)
        if w is not None:
            a = np.where(np.asarray(w) > 0, a, 0.0)
        return np.max(a, axis=-1)
    if name == "minkowski":
        return np.sum(_weighted(w, np.abs(diff) ** p), axis=-1) ** (1.0 / p)
    if name in ("cosine", "correlation"):
        if name == "correlation":
            weights = np.ones(np.shape(U)[-1]) if w is None else np.asarray(w)
            weights = weights / np.sum(weights)
            U = U - np.sum(U * weights, axis=-1, keepdims=True)
            V = V - np.sum(V * weights, axis=-1, keepdims=True)
        uv = np.sum(_weighted(w, U * V), axis=-1)
        uu = np.sum(_weighted(w, U * U), axis=-1)
        vv = np.sum(_weighted(w, V * V), axis=-1)
        return np.clip(1.0 - uv / np.sqrt(uu * vv), 0.0, 2.0)
    if name == "braycurtis":
        return np.sum(_weighted(w, np.abs(diff)), axis=-1) / np.sum(_weighted(w, np.abs(U + V)), axis=-1)
    if name == "canberra":
        num = np.abs(diff)
        den = np.abs(U) + np.abs(V)
        safe = np.where(den == 0, 1.0, den)
        return np.sum(_weighted(w, np.where(den == 0, 0.0, num / safe)), axis=-1)
    if name == "seuclidean":
        if V_arg is None:
            V_arg = np.var(stacked, axis=0, ddof=1)
        return np.sqrt(np.sum(diff * diff / V_arg, axis=-1))
    if name == "mahalanobis":
        if VI is None:
            VI = np.linalg.inv(np.cov(stacked.T)).T
        return np.sqrt(np.einsum("...i,ij,...j->...", diff, VI, diff))
    _refuse("metric %r" % (metric,))


def _callable_pairs(metric, rows_a, rows_b, kwargs):
    return np.array([[metric(u, v, **kwargs) for v in rows_b] for u in rows_a])


def _cdist(XA, XB, metric="euclidean", *, out=None, **kwargs):
    """``scipy.spatial.distance.cdist``: the ``(mA, mB)`` distances between the rows."""
    if out is not None:
        _refuse("cdist(..., out=...)")
    XA, XB = np.asarray(XA), np.asarray(XB)
    if XA.ndim != 2 or XB.ndim != 2 or XA.shape[1] != XB.shape[1]:
        return _distance.cdist(XA, XB, metric, **kwargs)  # (SciPy's own error)
    if callable(metric):
        return _callable_pairs(metric, XA, XB, kwargs)
    if not isinstance(metric, str):
        _refuse("metric %r" % (metric,))
    stacked = np.concatenate([XA, XB]) if _ALIASES.get(metric, metric) in ("seuclidean", "mahalanobis") \
        else None
    return _pairs(metric.lower(), XA[:, None, :], XB[None, :, :], stacked, dict(kwargs))


def _pdist(X, metric="euclidean", *, out=None, **kwargs):
    """``scipy.spatial.distance.pdist``: the distances between rows ``i < j``, condensed."""
    if out is not None:
        _refuse("pdist(..., out=...)")
    X = np.asarray(X)
    if X.ndim != 2:
        return _distance.pdist(X, metric, **kwargs)  # (SciPy's own error)
    i, j = np.triu_indices(X.shape[0], 1)
    if callable(metric):
        return np.array([metric(X[a], X[b], **kwargs) for a, b in zip(i, j)])
    if not isinstance(metric, str):
        _refuse("metric %r" % (metric,))
    return _pairs(metric.lower(), X[i], X[j], X, dict(kwargs))


def _squareform(X, force="no", checks=True):
    """``scipy.spatial.distance.squareform``: a condensed vector as the symmetric matrix
    with a zero diagonal, or such a matrix as its condensed vector."""
    X = np.asarray(X)
    if force.lower() == "tomatrix" or (force.lower() != "tovector" and X.ndim == 1):
        n = int(np.ceil(np.sqrt(X.shape[0] * 2)))
        if X.ndim != 1 or n * (n - 1) // 2 != X.shape[0]:
            return _distance.squareform(np.asarray(X), force, checks)  # (SciPy's own error)
        i, j = np.triu_indices(n, 1)
        M = np.zeros((n, n), dtype=np.result_type(X, np.float64))
        M[i, j] = X
        return M + M.T
    if X.ndim != 2 or X.shape[0] != X.shape[1]:
        return _distance.squareform(X, force, checks)  # (SciPy's own error)
    return X[np.triu_indices(X.shape[0], 1)]


#: the functions given equivalents here (tests/test_spatial_rules.py checks them)
FUNCTIONS = []
if _distance is not None:
    for _f, _impl in ((_distance.cdist, _cdist), (_distance.pdist, _pdist), (_distance.squareform, _squareform)):
        defimpl(_f, _impl)
        FUNCTIONS.append(_f)
