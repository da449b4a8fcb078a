"""Rules for ``numpy.linalg``: solve, inv, det, slogdet, norm, cholesky.

Forward rules are batched (they accept tangents with leading chunk axes): they are
written with ``matmul``/``solve``/``einsum``, which broadcast over stacked matrices.
Functions returning tuples (``slogdet``) are differentiated through a definition
made of single-result primitives.
"""
import numpy as np

from .numpy_rules import _axes, _conj, _expand, _lead, _nz, _shifted, defvjp
from ..losses import NoRuleError
from ..nesting import varies
from .kink_rules import at_kink
from .operator_rules import held
from .registry import defimpl, defjvp, unbroadcast

_la = np.linalg


def _h(x):
    """Conjugate transpose of (stacked) matrices."""
    return _conj(np.swapaxes(x, -1, -2))


def _solve_jvp(ts, ans, a, b):
    ta, tb = ts
    vec = np.ndim(b) == 1
    x = np.expand_dims(ans, -1) if vec else ans
    rhs = None
    if ta is not None:
        rhs = -np.matmul(ta, x)
    if tb is not None:
        tb = np.expand_dims(tb, -1) if vec else tb
        rhs = tb if rhs is None else rhs + tb
    d = _la.solve(a, rhs)
    return d[..., 0] if vec else d


def _solve_vjp(g, ans, a, b):
    vec = np.ndim(b) == 1
    x = np.expand_dims(ans, -1) if vec else ans
    gb = _la.solve(_h(a), np.expand_dims(g, -1) if vec else g)
    ga = -np.matmul(gb, _h(x))
    return unbroadcast(ga, a), unbroadcast(gb[..., 0] if vec else gb, b)


defjvp(_la.solve, _solve_jvp, batched=True)
defvjp(_la.solve, _solve_vjp)
defjvp(_la.inv, lambda ts, ans, a: -np.matmul(ans, np.matmul(ts[0], ans)), batched=True)
defvjp(_la.inv, lambda g, ans, a: (-np.matmul(_h(ans), np.matmul(g, _h(ans))),))


def _mat(s):
    """Per-matrix scalars ``s`` shaped to scale stacked matrices."""
    return np.expand_dims(s, (-2, -1))


def _trace_inv(a, t):
    """``trace(inv(a) @ t)`` per matrix (chunk axes allowed in ``t``)."""
    return np.einsum("...ij,...ji->...", _la.inv(a), t)


def _adjugate(a):
    """The adjugate of (stacked) square matrices, ``det(a) inv(a)`` where ``a`` is invertible,
    also where it is singular (the derivative of ``det`` there: LAPACK's inverse fails).
    Up to 16 x 16 from the minors (polynomial, so differentiable again); beyond from the
    SVD ``a = u s vh``: ``adj(a) = det(u) det(vh) vh^H diag(prod_(j != i) s_j) u^H``."""
    n = np.shape(a)[-1]
    if n <= 16:
        keep = np.array([[j for j in range(n) if j != i] for i in range(n)], dtype=np.intp).reshape(n, n - 1)
        rows = keep[:, None, :, None]          # minor (i, j): rows without i, columns without j
        cols = keep[None, :, None, :]
        minors = _la.det(a[..., rows, cols])   # (..., n, n)
        sign = (-1.0) ** np.add.outer(np.arange(n), np.arange(n))
        return np.swapaxes(sign * minors, -1, -2)
    u, s, vh = _la.svd(a)
    ones = np.ones(np.shape(s)[:-1] + (1,), dtype=s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    phase = _la.det(u) * _la.det(vh)
    return _mat(phase) * np.matmul(_h(vh) * (before * after)[..., None, :], _h(u))


def _det_jvp(ts, ans, a):
    try:
        return ans * _trace_inv(a, ts[0])
    except _la.LinAlgError:  # a singular matrix: the adjugate, not det * inverse
        return np.einsum("...ij,...ji->...", _adjugate(a), ts[0])


def _det_vjp(g, ans, a):
    try:
        return (_mat(g * _conj(ans)) * _h(_la.inv(a)),)
    except _la.LinAlgError:
        return (_mat(g) * _h(_adjugate(a)),)


defjvp(_la.det, _det_jvp, batched=True)
defvjp(_la.det, _det_vjp)


def _inv_nonsingular(a):
    """``inv(a)`` for slogdet's slopes, refused where ``a`` is singular (``log|det a|`` is
    -inf there: no derivative)."""
    try:
        return _la.inv(a)
    except _la.LinAlgError:
        raise NoRuleError("capstan: numpy.linalg.slogdet of a singular matrix (log|det| = -inf) has no "
                          "derivative; differentiate numpy.linalg.det instead") from None


def _logabsdet(a):
    """``log|det a|`` (the second result of ``slogdet``)."""
    return _la.slogdet(a)[1]


def _slogdet_sign(a):
    """The sign (phase) of ``det a`` (the first result of ``slogdet``)."""
    return _la.slogdet(a)[0]


def _sign_jvp(ts, ans, a):
    if not np.iscomplexobj(ans):
        return None
    return 1j * ans * np.imag(np.einsum("...ij,...ji->...", _inv_nonsingular(a), ts[0]))


def _sign_vjp(g, ans, a):
    if not np.iscomplexobj(ans):
        return (None,)
    c = np.real(np.conj(g) * 1j * ans)
    return (1j * _mat(c) * _h(_inv_nonsingular(a)),)


defjvp(_logabsdet, lambda ts, ans, a: np.real(np.einsum("...ij,...ji->...", _inv_nonsingular(a), ts[0])),
       batched=True)
defvjp(_logabsdet, lambda g, ans, a: (_mat(np.real(g)) * _h(_inv_nonsingular(a)),))
defjvp(_slogdet_sign, _sign_jvp, batched=True)
defvjp(_slogdet_sign, _sign_vjp)
_SlogdetResult = type(_la.slogdet(np.eye(1)))
defimpl(_la.slogdet, lambda a: _SlogdetResult(_slogdet_sign(a), _logabsdet(a)))


# ----------------------------------------------------------------------------- norms
def _l2norm(x, axes, keepdims=False):
    """Euclidean (Frobenius) norm over ``axes``."""
    return np.sqrt(np.sum(np.real(_conj(x) * x), axis=axes, keepdims=keepdims))


def _scaled(x, axes):
    """``x`` divided by its largest magnitude over ``axes`` (1 where that is 0, infinite or
    NaN): the norms' slopes are formed from it, because the plain sums of squares or powers
    underflow below 1e-154 and overflow past 1e154 (a slope of 1e-300 or 0 for ``|t|``)."""
    m = np.max(np.abs(held(x)), axis=axes, keepdims=True)
    m = np.where((m > 0) & (m < np.inf), m, 1.0)
    if np.iscomplexobj(x):  # (NumPy's complex division of a subnormal by a subnormal is NaN)
        return np.real(x) / m + 1j * (np.imag(x) / m)
    return x / m


def _l2unit(x, axes):
    """``x / ||x||`` over ``axes`` (``x``'s shape; 0 where ``x`` is 0), the gradient of the
    Euclidean norm, free of the over- and underflow of ``||x||`` itself.  The 0 at ``x = 0``
    is the subgradient ``abs`` takes there too: a first derivative's convention, whose
    derivative in an enclosing differentiation is undefined (see :func:`_kinked`)."""
    xs = _scaled(x, axes)
    n = np.sqrt(np.sum(np.real(_conj(xs) * xs), axis=axes, keepdims=True))
    return np.where(n > 0, xs / _nz(n), 0.0)


def _kinked(d, g, x, axes):
    """``d``, a norm's gradient at ``x`` times ``g``, marked where ``x`` is 0 over ``axes``
    (the norm's kink: its Hessian there is infinite) when an enclosing differentiation
    differentiates ``x`` (see ``kink_rules``)."""
    if not varies(x):
        return d
    zero = np.broadcast_to(np.all(np.equal(x, 0), axis=axes, keepdims=True), np.shape(x))
    return at_kink(d, zero, g, x)


def _l2norm_jvp(ts, ans, x, axes, keepdims=False):
    lead = _lead(ts[0], x)
    d = _kinked(np.real(_conj(_l2unit(x, axes)) * ts[0]), ts[0], x, axes)
    return np.sum(d, axis=_shifted(axes, lead), keepdims=keepdims)


def _l2norm_vjp(g, ans, x, axes, keepdims=False):
    g = _expand(np.real(g), axes, keepdims)
    return (_kinked(g * _l2unit(x, axes), g, x, axes), None, None)


defjvp(_l2norm, _l2norm_jvp, batched=True)
defvjp(_l2norm, _l2norm_vjp)


def _pnorm(x, axes, keepdims, ord):
    """The vector ``ord``-norm (``ord > 1``) over ``axes``, as NumPy computes it."""
    return np.sum(np.abs(x) ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)


def _pnorm_unit(x, ord, axes):
    """The gradient of the ``ord``-norm: ``sign(x) |x|^(ord-1) / ||x||^(ord-1)``, formed from
    ``x`` scaled by its largest magnitude (the powers leave the float range otherwise)."""
    xs = _scaled(x, axes)
    a = np.abs(xs)
    w = a ** (ord - 1.0) / _nz(np.sum(a ** ord, axis=axes, keepdims=True) ** ((ord - 1.0) / ord))
    return w * (np.sign(xs) if not np.iscomplexobj(xs) else xs / _nz(a))


def _pnorm_jvp(ts, ans, x, axes, keepdims, ord):
    lead = _lead(ts[0], x)
    d = _kinked(np.real(_conj(_pnorm_unit(x, ord, axes)) * ts[0]), ts[0], x, axes)
    return np.sum(d, axis=_shifted(axes, lead), keepdims=keepdims)


def _pnorm_vjp(g, ans, x, axes, keepdims, ord):
    g = _expand(np.real(g), axes, keepdims)
    return (_kinked(g * _pnorm_unit(x, ord, axes), g, x, axes), None, None, None)


defjvp(_pnorm, _pnorm_jvp, batched=True)
defvjp(_pnorm, _pnorm_vjp)


def _check_symmetric_values(gw, repeated, entry):
    """Reverse mode at repeated eigenvalues (singular values): the cotangent on the values
    must be the same across each repeated group (a function symmetric in them, such as
    their sum, is differentiable there); otherwise the function reads one of them alone
    (the smallest, the largest), whose slope jumps where they meet: refused."""
    if not np.any(repeated):
        return
    gw = np.real(gw)
    tol = 1e-9 * (1.0 + np.max(np.abs(gw)))
    spread = np.abs(gw[..., :, None] - gw[..., None, :])
    if np.any(spread[np.broadcast_to(repeated, np.shape(spread))] > tol):
        raise ValueError("capstan: %s: a repeated eigenvalue (singular value) taken alone has no "
                         "derivative (the sorted values swap where they meet); only functions "
                         "symmetric in the repeated values, such as their sum, have one there" % entry)


def _singular_values(m):
    """Singular values of (stacked) matrices, largest first."""
    return _la.svd(m, compute_uv=False)


def _sv_jvp(ts, ans, m):
    u, _, vh = _la.svd(m, full_matrices=False)
    return np.real(np.einsum("...ki,...kl,...il->...i", _conj(u), ts[0], _conj(vh)))


def _sv_vjp(g, ans, m):
    d = ans[..., None, :] - ans[..., :, None]
    _check_symmetric_values(g, (d == 0) & ~np.eye(np.shape(ans)[-1], dtype=bool), "numpy.linalg.svd")
    u, _, vh = _la.svd(m, full_matrices=False)
    return (np.matmul(u * np.real(g)[..., None, :], vh),)


defjvp(_singular_values, _sv_jvp, batched=True)
defvjp(_singular_values, _sv_vjp)


def _norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm`` in terms of primitives with rules."""
    x = np.asarray(x)  # (a list of numbers, as NumPy's own norm takes)
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    nd = np.ndim(x)
    if axis is None and (ord is None or nd not in (1, 2)):
        return _l2norm(x, tuple(range(nd)), keepdims)
    axes = _axes(axis, nd) if axis is not None else tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        axes = tuple(a % nd for a in axis)
    if len(axes) == 1:
        if ord is None or ord == 2:
            return _l2norm(x, axes, keepdims)
        if ord == np.inf:
            return np.max(np.abs(x), axis=axes, keepdims=keepdims)
        if ord == -np.inf:
            return np.min(np.abs(x), axis=axes, keepdims=keepdims)
        if ord == 0:
            return np.sum(x != 0, axis=axes, keepdims=keepdims).astype(float)
        if ord == 1:
            return np.sum(np.abs(x), axis=axes, keepdims=keepdims)
        if isinstance(ord, (int, float, np.integer, np.floating)) and 1 < ord < np.inf:
            return _pnorm(x, axes, keepdims, ord)
        return np.sum(np.abs(x) ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)
    r, c = axes
    if ord is None or ord == "fro":
        return _l2norm(x, tuple(sorted(axes)), keepdims)
    if ord in ("nuc", 2, -2):
        s = _singular_values(np.moveaxis(x, (r, c), (-2, -1)))
        out = np.sum(s, axis=-1) if ord == "nuc" else (np.max(s, axis=-1) if ord == 2 else np.min(s, axis=-1))
    elif ord in (1, -1, np.inf, -np.inf):
        inner, outer = (r, c) if ord in (1, -1) else (c, r)
        sums = np.sum(np.abs(x), axis=inner, keepdims=True)
        out = np.max(sums, axis=outer, keepdims=True) if ord > 0 else np.min(sums, axis=outer, keepdims=True)
        out = np.squeeze(out, axis=(r, c))
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        out = np.expand_dims(out, tuple(sorted((r, c))))
    return out


defimpl(_la.norm, _norm)


# ----------------------------------------------------------------------------- cholesky
def _real_diagonal(t):
    return np.tril(np.triu(np.real(t)))


def _from_lower(t):
    """The Hermitian matrix that ``cholesky`` reads from ``t`` (its lower triangle)."""
    return np.tril(t, -1) + _h(np.tril(t, -1)) + _real_diagonal(t)


def _phi(m):
    """Lower triangle of ``m`` with its diagonal halved."""
    return np.tril(m, -1) + 0.5 * np.tril(np.triu(m))


def _cholesky_jvp(ts, ans, a, *args, upper=False, **kw):
    # (upper=True: U = L^H for the L of h(a), whose lower triangle is a's upper one)
    low, t = (_h(ans), _h(ts[0])) if upper else (ans, ts[0])
    s = _la.solve(low, _from_lower(t))
    m = _h(_la.solve(low, _h(s)))  # inv(L) dA inv(L)^H
    dl = np.matmul(low, _phi(m))
    return _h(dl) if upper else dl


def _cholesky_vjp(g, ans, a, *args, upper=False, **kw):
    if upper:
        ans, g = _h(ans), _h(g)
    gp = _phi(np.matmul(_h(ans), g))
    lh = _h(ans)
    gm = _h(_la.solve(lh, _h(_la.solve(lh, gp))))  # inv(L)^H gp inv(L)
    ga = np.tril(gm, -1) + np.tril(_h(gm), -1) + _real_diagonal(gm)
    return (unbroadcast(_h(ga) if upper else ga, a),) + (None,) * len(args)


defjvp(_la.cholesky, _cholesky_jvp, batched=True)
defvjp(_la.cholesky, _cholesky_vjp)

try:  # SciPy's array-API view of NumPy (``xp.linalg.solve`` in ``scipy.signal.lfilter_zi``...)
    from scipy._lib._array_api import array_namespace as _array_namespace
    _xp_solve = _array_namespace(np.ones(1)).linalg.solve
except (ImportError, AttributeError):  # pragma: no cover - scipy is optional
    _xp_solve = None
if _xp_solve is not None and _xp_solve is not _la.solve:  # (the same: a 1-D b is a vector)
    defjvp(_xp_solve, _solve_jvp, batched=True)
    defvjp(_xp_solve, _solve_vjp)
