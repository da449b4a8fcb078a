"""Rules for matrix decompositions and matrix functions: ``numpy.linalg`` (eigh,
eigvalsh, eig, eigvals, svd, qr, pinv, lstsq) and ``scipy.linalg`` (solve, inv, det,
cholesky, eigh, eigvalsh, eig, eigvals, svd, svdvals, qr, solve_triangular,
cho_factor/cho_solve, lu_factor/lu_solve, lu, schur, eig(a, b), expm, logm, sqrtm).

Every rule sits on the public function, so LAPACK wrappers never see a differentiated
value.  Decompositions with several results are one primitive whose result *packs*
the factors into one array (eigenvalues as an extra row above the eigenvectors, or
the flattened factors side by side); the public function is defined (``defimpl``) as
that primitive followed by the subscripts that unpack it, so forward mode, reverse
mode and nested (higher-order) differentiation all see one decomposition.

Conventions (docs/capstan-scipy.md has the table):

* ``eigh``/``eigvalsh``/``cholesky`` read one triangle (``UPLO``/``lower``): the
  derivative is that of the function LAPACK computes, i.e. with respect to that
  triangle; on symmetric (Hermitian) directions it equals the textbook formula.
* Eigenvectors (``eigh``, ``eig``) and singular vectors are defined up to a sign or
  phase; the derivative keeps NumPy's choice (real vectors: exactly; ``eig``: unit
  norm with the largest component real, as LAPACK normalizes; complex ``eigh``/``svd``
  vectors: ``v^H dv`` imaginary-free, so only phase-invariant functions of them are
  meaningful).  Repeated eigenvalues (singular values) leave the vectors without a
  derivative: reverse mode raises ``ValueError`` unless the cotangent is a multiple of
  the identity on the repeated space; forward mode gives NaN there (for ``eig``, in the
  eigenvalues too where the tangent couples their eigenvectors or the matrix is defective).
"""
import numpy as np

from .linalg_rules import _check_symmetric_values, _h, _singular_values
from .registry import defimpl, defjvp, defvjp, only_first_argument

la = np.linalg
try:
    import scipy.linalg as sl
except ImportError:  # pragma: no cover - scipy is optional
    sl = None


# ----------------------------------------------------------------------------- helpers
def plain_function(f):
    """Declare the Python function ``f`` a primitive without derivative: it runs on plain
    values (pivots, ranks: integers that steer the computation)."""
    defjvp(f, lambda ts, ans, *args, **kw: None)
    defvjp(f, lambda g, ans, *args, **kw: (None,) * len(args))
    return f


def _t(x):
    return np.swapaxes(x, -1, -2)


def _diag(x):
    """The diagonals of (stacked) matrices."""
    return np.diagonal(x, axis1=-2, axis2=-1)


def _diag_matrix(d):
    """(Stacked) diagonal matrices with diagonals ``d``."""
    return d[..., :, None] * np.eye(np.shape(d)[-1])


def _real_diagonal(x):
    return np.tril(np.triu(np.real(x)))


def _triangle(x, lower, k=0):
    return np.tril(x, -k) if lower else np.triu(x, k)


def _hermitian_read(t, lower=True):
    """The Hermitian matrix LAPACK reads from one triangle of ``t`` (the imaginary part
    of the diagonal is ignored)."""
    strict = _triangle(t, lower, 1)
    return strict + _h(strict) + _real_diagonal(t)


def _hermitian_read_adjoint(x, lower=True):
    return _triangle(x, lower, 1) + _triangle(_h(x), lower, 1) + _real_diagonal(x)


def _symmetric_read(t, lower=True):
    """The complex-symmetric matrix read from one triangle of ``t`` (``assume_a='sym'``)."""
    strict = _triangle(t, lower, 1)
    return strict + _t(strict) + np.tril(np.triu(t))


def _inverse_gaps(w):
    """``1 / (w_j - w_i)`` off the diagonal, 0 on it, and the mask of repeated values."""
    d = w[..., None, :] - w[..., :, None]
    n = np.shape(w)[-1]
    off = ~np.eye(n, dtype=bool)
    repeated = (d == 0) & off
    return np.where(off & ~repeated, 1.0 / np.where(off & ~repeated, d, 1.0), 0.0), repeated


def _check_rotation_invariant(x, repeated, entry):
    """Reverse mode at repeated eigenvalues (singular values): the cotangent ``x`` in the
    eigenbasis must be a multiple of the identity on each repeated space (as it is for
    functions of the eigenvalues alone, or of the matrix itself); anything else depends on
    the basis LAPACK happened to pick, or needs a limit the rule cannot see: refused."""
    if not np.any(repeated):
        return
    tol = 1e-9 * (1.0 + np.max(np.abs(x)))
    d = _diag(x)
    spread = np.abs(d[..., :, None] - d[..., None, :]) + np.abs(x)
    if np.any(spread[np.broadcast_to(repeated, np.shape(spread))] > tol):
        raise ValueError("capstan: %s: the eigenvectors (singular vectors) of a repeated eigenvalue "
                         "(singular value) have no derivative, and the function uses them in a way "
                         "that depends on the choice of basis" % entry)


def _forward_gaps(f, repeated, q, d):
    """The gap factors ``f`` (multiplying ``q``) for forward mode: NaN where a repeated
    value meets a tangent that would turn its vectors, or split it (``d``: the values'
    tangents; split, the sorted values swap, and their vectors with them): their
    derivative does not exist."""
    if np.any(repeated):
        bad = repeated & (np.abs(q) > 1e-12 * (1.0 + np.max(np.abs(q))))
        split = np.abs(d[..., :, None] - d[..., None, :])
        bad |= repeated & (split > 1e-12 * (1.0 + np.max(np.abs(d))))
        f = np.where(bad, np.nan, f)
    return f


def _refuse(entry, what):
    raise TypeError("capstan: %s(..., %s) has no derivative rule; %s" % (entry, what[0], what[1]))


# ----------------------------------------------------------------------------- eigh, eigvalsh
def _eigh_packed(a, lower=True, library="numpy"):
    """``eigh`` as one array: the eigenvalues as a row above the eigenvectors (``library``:
    whose LAPACK driver, and so whose choice of signs, to use)."""
    if library == "scipy":
        w, v = sl.eigh(a, lower=lower)
    else:
        w, v = la.eigh(a, "L" if lower else "U")
    return np.concatenate([w[..., None, :].astype(v.dtype), v], axis=-2)


def _eigh_parts(p):
    return np.real(p[..., 0, :]), p[..., 1:, :]


def _eigh_jvp(ts, ans, a, lower=True, library="numpy"):
    w, v = _eigh_parts(ans)
    m = _h(v) @ _hermitian_read(ts[0], lower) @ v
    f, repeated = _inverse_gaps(w)
    dv = v @ (_forward_gaps(f, repeated, m, np.real(_diag(m))) * m)
    return np.concatenate([np.real(_diag(m))[..., None, :].astype(np.result_type(dv)), dv], axis=-2)


def _eigh_vjp(g, ans, a, lower=True, library="numpy"):
    w, v = _eigh_parts(ans)
    gw, gv = np.real(g[..., 0, :]), g[..., 1:, :]
    f, repeated = _inverse_gaps(w)
    x = _h(v) @ gv
    _check_rotation_invariant(x, repeated, "numpy.linalg.eigh")
    _check_symmetric_values(gw, repeated, "numpy.linalg.eigh")
    k = _diag_matrix(gw) + f * x
    ga = _hermitian_read_adjoint(v @ k @ _h(v), lower)
    return (ga if np.iscomplexobj(a) else np.real(ga), None, None)


defjvp(_eigh_packed, _eigh_jvp)
defvjp(_eigh_packed, _eigh_vjp)
_EighResult = type(la.eigh(np.eye(1)))


def _uplo(UPLO):
    UPLO = UPLO.upper()
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO == "L"


def _eigh(a, UPLO="L"):
    w, v = _eigh_parts(_eigh_packed(a, _uplo(UPLO)))
    return _EighResult(w, v)


def _eigvalsh(a, UPLO="L"):
    """Eigenvalues through the full decomposition (its vectors give the derivative)."""
    return _eigh_parts(_eigh_packed(a, _uplo(UPLO)))[0]


defimpl(la.eigh, _eigh)
defimpl(la.eigvalsh, _eigvalsh)


# ----------------------------------------------------------------------------- eig, eigvals
def _eig_packed(a, library="numpy"):
    w, v = sl.eig(a) if library == "scipy" else la.eig(a)
    return np.concatenate([w[..., None, :], v], axis=-2)


def _eig_gauge_index(v):
    """The component of each eigenvector LAPACK makes real (the largest)."""
    return np.argmax(np.abs(v), axis=-2)


def _take_rows(x, k):
    """``x[..., k_j, j]`` for each column ``j``."""
    return np.take_along_axis(x, k[..., None, :], axis=-2)[..., 0, :]


def _eig_jvp(ts, ans, a, library="numpy"):
    w, v = ans[..., 0, :], ans[..., 1:, :]
    f, repeated = _inverse_gaps(w)
    if np.any(repeated):
        with np.errstate(all="ignore"):
            try:
                m = la.solve(v, ts[0] @ v)
            except la.LinAlgError:  # (no basis of eigenvectors: a defective matrix)
                m = np.full(np.shape(v), np.nan, dtype=np.result_type(v, ts[0]))
        # a repeated eigenvalue's derivative is the diagonal of m only where the tangent does
        # not couple its eigenvectors (m's block there is diagonal); else the eigenvalues of
        # that block, in an order LAPACK decides, or none at all (a defective matrix, whose
        # eigenvector matrix is singular: m was 1e15 where the slope is infinite): NaN
        couples = repeated & ~(np.abs(m) <= 1e-12 * (1.0 + np.max(np.abs(np.nan_to_num(m, nan=np.inf)))))
        dw = np.where(np.any(couples, axis=-1), np.nan, _diag(m))
        f = _forward_gaps(f, repeated, m, dw)
    else:
        m = la.solve(v, ts[0] @ v)
        dw = _diag(m)
    r = v @ (f * m)
    # LAPACK's normalization: unit norm, the largest component real
    k = _eig_gauge_index(v)
    re = np.real(np.sum(np.conj(v) * r, axis=-2))
    if np.iscomplexobj(v):
        im = np.imag(_take_rows(r, k)) / np.real(_take_rows(v, k))
        dv = r - v * (re + 1j * im)[..., None, :]
    else:
        dv = r - v * re[..., None, :]
    return np.concatenate([dw[..., None, :], dv], axis=-2)


def _eig_vjp(g, ans, a, library="numpy"):
    w, v = ans[..., 0, :], ans[..., 1:, :]
    gw, gv = g[..., 0, :], g[..., 1:, :]
    f, repeated = _inverse_gaps(w)
    if np.any(repeated):
        raise ValueError("capstan: numpy.linalg.eig: repeated eigenvalues have no derivative "
                         "(the eigenvalues of a general matrix are not differentiable there)")
    # adjoint of the normalization (unit norm, largest component real)
    c = np.sum(np.conj(v) * gv, axis=-2)
    gr = gv - v * np.real(c)[..., None, :]
    if np.iscomplexobj(v):
        k = _eig_gauge_index(v)
        n = np.shape(v)[-2]
        onehot = (np.arange(n)[:, None] == k[..., None, :])
        gr = gr - 1j * onehot * (np.imag(c) / np.real(_take_rows(v, k)))[..., None, :]
    gm = _diag_matrix(gw) + np.conj(f) * (_h(v) @ gr)  # (the gaps are complex)
    ga = la.solve(_h(v), gm @ _h(v))  # V^-H gm V^H
    return (ga if np.iscomplexobj(a) else np.real(ga), None)


defjvp(_eig_packed, _eig_jvp)
defvjp(_eig_packed, _eig_vjp)
_EigResult = type(la.eig(np.eye(1)))


def _eig(a):
    p = _eig_packed(a)
    return _EigResult(p[..., 0, :], p[..., 1:, :])


def _eigvals(a):
    return _eig_packed(a)[..., 0, :]


defimpl(la.eig, _eig)
defimpl(la.eigvals, _eigvals)


# ----------------------------------------------------------------------------- svd
def _svd_packed(a, library="numpy"):
    """The thin SVD as one array: ``u``, ``s`` and ``vh`` flattened side by side."""
    u, s, vh = sl.svd(a, full_matrices=False) if library == "scipy" else la.svd(a, full_matrices=False)
    lead = np.shape(a)[:-2]
    return np.concatenate([u.reshape(lead + (-1,)), s.astype(u.dtype), vh.reshape(lead + (-1,))], axis=-1)


def _svd_parts(p, a):
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    lead = np.shape(p)[:-1]
    u = np.reshape(p[..., :m * k], lead + (m, k))
    s = np.real(p[..., m * k:m * k + k])
    vh = np.reshape(p[..., m * k + k:], lead + (k, n))
    return u, s, vh


def _svd_pack(u, s, vh):
    lead = np.shape(s)[:-1]
    dtype = np.result_type(u, vh)
    parts = [np.reshape(u, lead + (-1,)), s.astype(dtype), np.reshape(vh, lead + (-1,))]
    return np.concatenate(parts, axis=-1)


def _svd_gaps(s):
    """``1 / (s_j^2 - s_i^2)`` off the diagonal and the mask of repeated values."""
    return _inverse_gaps(s * s)


def _svd_jvp(ts, ans, a, library="numpy"):
    u, s, vh = _svd_parts(ans, a)
    v = _h(vh)
    da = ts[0]
    dp = _h(u) @ da @ v
    ds = np.real(_diag(dp))
    f, repeated = _svd_gaps(s)
    sm = s[..., None, :]  # scales columns
    sym = dp * sm + _h(dp * sm)  # dP S + S dP^H
    sym_v = _h(dp) * sm + _h(_h(dp) * sm)  # S dP + dP^H S
    f = _forward_gaps(f, repeated, np.abs(sym) + np.abs(sym_v), ds)
    inv_s = 1.0 / sm
    du = u @ (f * sym) + (da @ v - u @ dp) * inv_s
    dv = v @ (f * sym_v) + (_h(da) @ u - v @ _h(dp)) * inv_s
    if np.iscomplexobj(dp):
        du = du + u * (1j * np.imag(_diag(dp)) / s)[..., None, :]
    return _svd_pack(du, ds, _h(dv))


def _svd_vjp(g, ans, a, library="numpy"):
    u, s, vh = _svd_parts(ans, a)
    gu, gs, gvh = _svd_parts(g, a)
    v, gv = _h(vh), _h(gvh)
    f, repeated = _svd_gaps(s)
    sm = s[..., None, :]
    ju, jv = _h(u) @ gu, _h(v) @ gv
    _check_rotation_invariant(ju, repeated, "numpy.linalg.svd")
    _check_rotation_invariant(jv, repeated, "numpy.linalg.svd")
    _check_symmetric_values(gs, repeated, "numpy.linalg.svd")
    x, y = f * ju, f * jv
    gp = _diag_matrix(gs) + x * sm + _h(x) * sm + _t(sm) * y + _t(sm) * _h(y)
    if np.iscomplexobj(ju):
        gp = gp + _diag_matrix(1j * np.imag(_diag(ju)) / s)
    inv_s = 1.0 / sm
    ga = u @ gp @ vh
    ga = ga + (gu - u @ ju) * inv_s @ vh  # (I - U U^H) gU S^-1 V^H
    ga = ga + u @ (_h(gv * inv_s) - _h(gv * inv_s) @ v @ vh)  # U S^-1 gV^H (I - V V^H)
    return (ga if np.iscomplexobj(a) else np.real(ga), None)


defjvp(_svd_packed, _svd_jvp)
defvjp(_svd_packed, _svd_vjp)
_SVDResult = type(la.svd(np.eye(1)))


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False, library="numpy"):
    if hermitian:
        _refuse("numpy.linalg.svd", ("hermitian=True", "use hermitian=False (the same values)"))
    if not compute_uv:
        return _singular_values(a)
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n:
        _refuse("numpy.linalg.svd", ("full_matrices=True", "for a non-square matrix the extra singular "
                                     "vectors are not determined; use full_matrices=False"))
    return _SVDResult(*_svd_parts(_svd_packed(a, library), a))


defimpl(la.svd, _svd)


# ----------------------------------------------------------------------------- qr
def _qr_packed(a):
    """The reduced QR of a tall or square matrix as one array: ``[Q | R^T]`` side by side
    (``m x (n + n)``... flattened)."""
    q, r = la.qr(a)
    lead = np.shape(a)[:-2]
    return np.concatenate([q.reshape(lead + (-1,)), r.reshape(lead + (-1,))], axis=-1)


def _qr_parts(p, a):
    m, n = np.shape(a)[-2:]
    lead = np.shape(p)[:-1]
    return np.reshape(p[..., :m * n], lead + (m, n)), np.reshape(p[..., m * n:], lead + (n, n))


def _qr_omega(c):
    """The skew-Hermitian ``Q^H dQ`` (on the span of ``Q``) that keeps ``dR`` upper
    triangular with a real diagonal."""
    low = np.tril(c, -1)
    out = low - _h(low)
    if np.iscomplexobj(c):
        out = out + 1j * np.tril(np.triu(np.imag(c)))
    return out


def _qr_jvp(ts, ans, a):
    q, r = _qr_parts(ans, a)
    rinv_right = _h(la.solve(_h(r), _h(ts[0])))  # dA R^-1
    c = _h(q) @ rinv_right
    omega = _qr_omega(c)
    dr = (c - omega) @ r
    dq = q @ omega + rinv_right - q @ c
    lead = np.shape(dq)[:-2]
    return np.concatenate([np.reshape(dq, lead + (-1,)), np.reshape(dr, lead + (-1,))], axis=-1)


def _qr_vjp(g, ans, a):
    q, r = _qr_parts(ans, a)
    gq, gr = _qr_parts(g, a)
    gz = gr @ _h(r)  # cotangent of C - Omega
    gomega = _h(q) @ gq - gz
    gc = gz - _h(q) @ gq
    gc = gc + np.tril(gomega, -1) - np.tril(_h(gomega), -1)
    if np.iscomplexobj(gomega):
        gc = gc + 1j * np.tril(np.triu(np.imag(gomega)))
    # C = Q^H dA R^-1  and  dQ's  dA R^-1  term
    ga = _h(la.solve(r, _h(q @ gc + gq)))  # (Q gC + gQ) R^-H
    return (ga if np.iscomplexobj(a) else np.real(ga),)


defjvp(_qr_packed, _qr_jvp)
defvjp(_qr_packed, _qr_vjp)
_QRResult = type(la.qr(np.eye(1)))


def _qr_factors(a):
    """``(Q, R)`` of the reduced QR: tall and square directly; wide as ``[X | Y]`` with
    ``X = QR`` square and ``R``'s right block ``Q^H Y`` (the same numbers LAPACK makes)."""
    m, n = np.shape(a)[-2:]
    if m >= n:
        return _qr_parts(_qr_packed(a), a)
    q, rx = _qr_parts(_qr_packed(a[..., :, :m]), a[..., :, :m])
    return q, np.concatenate([rx, _h(q) @ a[..., :, m:]], axis=-1)


def _qr(a, mode="reduced"):
    m, n = np.shape(a)[-2:]
    if mode == "complete" and m > n:
        _refuse("numpy.linalg.qr", ("mode='complete'", "for a tall matrix the extra columns of Q are "
                                    "not determined; use mode='reduced'"))
    if mode not in ("reduced", "complete", "r"):
        _refuse("numpy.linalg.qr", ("mode=%r" % (mode,), "use mode='reduced' or 'r'"))
    q, r = _qr_factors(a)
    return r if mode == "r" else _QRResult(q, r)


defimpl(la.qr, _qr)


# ----------------------------------------------------------------------------- pinv, lstsq
def _pinv_tangent(p, a, da):
    """Derivative of the pseudo-inverse ``p`` of ``a`` (constant rank)."""
    out = -p @ da @ p
    out = out + p @ _h(p) @ _h(da) @ (np.eye(np.shape(a)[-2]) - a @ p)
    out = out + (np.eye(np.shape(a)[-1]) - p @ a) @ _h(da) @ _h(p) @ p
    return out


def _pinv_cotangent(p, a, g):
    ga = -_h(p) @ g @ _h(p)
    ga = ga + (np.eye(np.shape(a)[-2]) - a @ p) @ _h(g) @ p @ _h(p)
    ga = ga + _h(p) @ p @ _h(g) @ (np.eye(np.shape(a)[-1]) - p @ a)
    return ga if np.iscomplexobj(a) else np.real(ga)


def _pinv_hermitian(args, kw):
    """Whether ``pinv(a, rcond, hermitian)`` was told ``a`` is Hermitian: NumPy then reads
    its lower triangle alone (``eigh``), so the derivative does too."""
    return bool(kw.get("hermitian", args[1] if len(args) > 1 else False))


def _pinv_jvp(ts, ans, a, *args, **kw):
    if _pinv_hermitian(args, kw):
        return _pinv_tangent(ans, _hermitian_read(a), _hermitian_read(ts[0]))
    return _pinv_tangent(ans, a, ts[0])


def _pinv_vjp(g, ans, a, *args, **kw):
    if _pinv_hermitian(args, kw):
        ga = _hermitian_read_adjoint(_pinv_cotangent(ans, _hermitian_read(a), g))
        return (ga if np.iscomplexobj(a) else np.real(ga),) + (None,) * len(args)
    return (_pinv_cotangent(ans, a, g),) + (None,) * len(args)


defjvp(la.pinv, _pinv_jvp)
defvjp(la.pinv, _pinv_vjp)


def _lstsq_solution(a, b, rcond=None):
    """The solution of ``numpy.linalg.lstsq`` alone."""
    return la.lstsq(a, b, rcond=rcond)[0]


def _lstsq_jvp(ts, ans, a, b, rcond=None):
    ta, tb = ts[0], ts[1] if len(ts) > 1 else None
    vec = np.ndim(b) == 1
    p = la.pinv(a)
    out = None
    if ta is not None:
        bb = b[:, None] if vec else b
        out = _pinv_tangent(p, a, ta) @ bb
    if tb is not None:
        d = p @ (tb[:, None] if vec else tb)
        out = d if out is None else out + d
    return out[:, 0] if vec else out


def _lstsq_vjp(g, ans, a, b, rcond=None):
    vec = np.ndim(b) == 1
    gg = g[:, None] if vec else g
    bb = b[:, None] if vec else b
    p = la.pinv(a)
    ga = _pinv_cotangent(p, a, gg @ _h(bb))
    gb = _h(p) @ gg
    gb = gb[:, 0] if vec else gb
    return ga, (gb if np.iscomplexobj(b) else np.real(gb)), None


defjvp(_lstsq_solution, _lstsq_jvp)
defvjp(_lstsq_solution, _lstsq_vjp)


@plain_function
def _matrix_rank(a, rcond):
    s = la.svd(a, compute_uv=False)
    return int(np.sum(s > rcond * s[..., :1]))


@plain_function
def _lstsq_rank(a, b, rcond=None):
    return la.lstsq(a, b, rcond=rcond)[2]


def _lstsq(a, b, rcond=None):
    """``(x, residuals, rank, s)`` as NumPy returns them, each differentiable."""
    x = _lstsq_solution(a, b, rcond)
    rank = _lstsq_rank(a, b, rcond)
    m, n = np.shape(a)
    if rank == n and m > n:
        r = b - a @ x
        res = np.sum(np.real(np.conj(r) * r), axis=0)
        if np.ndim(b) == 1:
            res = np.reshape(res, (1,))
    else:
        res = np.zeros((0,))
    return x, res, rank, _singular_values(a)


defimpl(la.lstsq, _lstsq)


# ----------------------------------------------------------------------------- cond, tensorsolve, tensorinv
def _cond(x, p=None):
    """``numpy.linalg.cond`` from singular values and norms (NumPy's own calls the
    inverse's C kernel directly)."""
    if p is None or p == 2 or p == -2:
        s = _singular_values(x)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    return la.norm(x, p, axis=(-2, -1)) * la.norm(la.inv(x), p, axis=(-2, -1))


def _tensorsolve(a, b, axes=None):
    """``numpy.linalg.tensorsolve`` as a reshaped ``solve``."""
    if axes is not None:
        allaxes = list(range(np.ndim(a)))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(np.ndim(a), k)
        a = np.transpose(a, allaxes)
    shape = np.shape(a)[-(np.ndim(a) - np.ndim(b)):]
    n = int(np.prod(shape))
    return np.reshape(la.solve(np.reshape(a, (n, n)), np.ravel(b)), shape)


def _tensorinv(a, ind=2):
    """``numpy.linalg.tensorinv`` as a reshaped ``inv``."""
    shape = np.shape(a)
    outer, inner = shape[:ind], shape[ind:]
    n = int(np.prod(outer))
    return np.reshape(la.inv(np.reshape(a, (n, -1))), inner + outer)


defimpl(la.cond, _cond)
defimpl(la.tensorsolve, _tensorsolve)
defimpl(la.tensorinv, _tensorinv)


# ----------------------------------------------------------------------------- scipy.linalg
def _solve_triangular_jvp(ts, ans, a, b, trans=0, lower=False, unit_diagonal=False, *args, **kw):
    op = _trans_code(trans)
    rhs = None
    if ts[0] is not None:
        ta = _triangle(ts[0], lower, 1 if unit_diagonal else 0)
        rhs = -_op(ta, op) @ _column(ans)
    if len(ts) > 1 and ts[1] is not None:
        rhs = _column(ts[1]) if rhs is None else rhs + _column(ts[1])
    d = sl.solve_triangular(a, rhs, trans=op, lower=lower, unit_diagonal=unit_diagonal)
    return d[..., 0] if np.ndim(b) == 1 else d


_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def _conj(x):
    return np.conj(x) if np.iscomplexobj(x) else x


def _trans_code(trans):
    return _TRANS[trans]


def _op(x, op):
    return x if op == 0 else (_t(x) if op == 1 else _h(x))


def _op_adjoint(g, op):
    """Cotangent of ``x`` from the cotangent ``g`` of ``op(x)``."""
    return g if op == 0 else (_t(g) if op == 1 else _h(g))


def _column(x):
    return x[..., None] if np.ndim(x) == 1 else x


# ----------------------------------------------------------------------------- eigvals(a, b)
def generalized_eigvals(a, b):
    """The eigenvalues ``w`` of the pencil ``(a, b)``, ``a v = w b v`` (SciPy's ``ggev``)."""
    return sl.eig(a, b, right=False)


def _pencil(a, b, w):
    """Left and right eigenvectors of the pencil and ``s_i = u_i^H b v_i``, from plain
    values; refused where an eigenvalue is infinite or repeated (no derivative there)."""
    w2, u, v = sl.eig(a, b, left=True, right=True)
    if not np.allclose(w2, w, equal_nan=True) or not np.all(np.isfinite(w)):
        raise ValueError("capstan: scipy.linalg.eigvals(a, b) has no derivative at an infinite "
                         "eigenvalue (b singular)")
    s = np.sum(np.conj(u) * (b @ v), axis=0)
    scale = np.linalg.norm(u, axis=0) * np.linalg.norm(v, axis=0) * max(np.linalg.norm(b), 1e-300)
    if np.any(np.abs(s) <= 1e-10 * scale):
        raise ValueError("capstan: scipy.linalg.eigvals(a, b) has no derivative at a repeated "
                         "(defective) eigenvalue")
    return u, v, s


def _generalized_eigvals_jvp(ts, ans, a, b):
    """``dw_i = u_i^H (da - w_i db) v_i / s_i``."""
    u, v, s = _pencil(a, b, ans)
    out = 0
    if ts[0] is not None:
        out = out + np.sum(np.conj(u) * (ts[0] @ v), axis=0) / s
    if ts[1] is not None:
        out = out - ans * np.sum(np.conj(u) * (ts[1] @ v), axis=0) / s
    return out


def _generalized_eigvals_vjp(g, ans, a, b):
    """The adjoint: ``a`` gets ``U diag(g / conj(s)) V^H``, ``b`` minus the same with
    ``g conj(w)`` (real parts for real matrices)."""
    u, v, s = _pencil(a, b, ans)
    ga = (u * (g / np.conj(s))) @ np.conj(v).T
    gb = -(u * (g * np.conj(ans) / np.conj(s))) @ np.conj(v).T
    return (ga if np.iscomplexobj(a) else np.real(ga)), (gb if np.iscomplexobj(b) else np.real(gb))


defjvp(generalized_eigvals, _generalized_eigvals_jvp)
defvjp(generalized_eigvals, _generalized_eigvals_vjp)


# ----------------------------------------------------------------------------- eig(a, b): vectors
def generalized_eig(a, b):
    """The eigenvalues and right eigenvectors of a real pencil ``(a, b)`` with real, finite
    eigenvalues, as one real array (the values a row above the vectors, unit columns as
    SciPy normalizes them).  Refused elsewhere: complex eigenvectors of ``ggev`` come in a
    phase that no normalization fixes (LAPACK scales their largest component only in
    modulus), so they have no derivative to give; an infinite eigenvalue (``b`` singular)
    has none either."""
    if np.iscomplexobj(a) or np.iscomplexobj(b):
        _refuse("scipy.linalg.eig", ("b=..., complex matrices", "the phase of ggev's complex eigenvectors is "
                                     "not fixed by a normalization; use the eigenvalues (right=False)"))
    w, v = sl.eig(a, b)
    if not np.all(np.isfinite(w)):
        raise ValueError("capstan: scipy.linalg.eig(a, b) has no derivative at an infinite eigenvalue "
                         "(b singular)")
    if np.any(np.imag(w) != 0):
        _refuse("scipy.linalg.eig", ("b=..., complex eigenvalues", "the phase of ggev's complex "
                                     "eigenvectors is not fixed by a normalization; use the "
                                     "eigenvalues (right=False)"))
    return np.concatenate([np.real(w)[None, :], np.real(v)], axis=0)


def _pencil_matrix(a, b):
    """``b^-1 a``: the pencil's eigenvectors are this matrix's, with the same values."""
    return la.solve(b, a)


def _generalized_eig_jvp(ts, ans, a, b):
    """Through ``C = b^-1 a`` (``dC = b^-1 (da - db C)``) and ``eig``'s rule: the pencil's
    vectors are ``C``'s, unit norm and real."""
    c = _pencil_matrix(a, b)
    dc = 0
    if ts[0] is not None:
        dc = dc + ts[0]
    if ts[1] is not None:
        dc = dc - ts[1] @ c
    return _eig_jvp((la.solve(b, dc + np.zeros_like(c)),), ans, c)


def _generalized_eig_vjp(g, ans, a, b):
    """``eig``'s adjoint ``gC`` taken back through ``C = b^-1 a``: ``ga = b^-T gC``,
    ``gb = -ga C^T``."""
    c = _pencil_matrix(a, b)
    gc = _eig_vjp(g, ans, c)[0]
    ga = la.solve(_t(b), gc)
    return ga, -(ga @ _t(c))


defjvp(generalized_eig, _generalized_eig_jvp)
defvjp(generalized_eig, _generalized_eig_vjp)


# ----------------------------------------------------------------------------- schur
def real_schur(a):
    """SciPy's real Schur form ``a = Z T Z^T`` of a real matrix with real, distinct
    eigenvalues (``T`` upper triangular), as one array: ``T`` above ``Z``.  Refused
    elsewhere: a 2x2 block of a complex pair, and complex Schur forms (the phases of their
    vectors follow no normalization), have no derivative to give; a repeated eigenvalue
    leaves ``Z`` without one."""
    if np.iscomplexobj(a):
        _refuse("scipy.linalg.schur", ("a complex matrix", "only the real Schur form of a real matrix "
                                       "with real eigenvalues has a derivative"))
    t, z = sl.schur(a)
    n = np.shape(t)[-1]
    if n > 1 and np.any(np.diag(t, -1) != 0):
        _refuse("scipy.linalg.schur", ("complex eigenvalues", "the 2x2 blocks of the real Schur form "
                                       "are not determined by the matrix (only their eigenvalues are)"))
    w = np.diag(t)
    gaps = np.abs(w[:, None] - w[None, :]) + np.eye(n)
    if np.any(gaps <= 1e-10 * (1.0 + np.max(np.abs(w)))):
        raise ValueError("capstan: scipy.linalg.schur has no derivative at a repeated eigenvalue")
    return np.concatenate([t, z], axis=0)


def _schur_rotation(t, e):
    """The antisymmetric ``W = Z^T dZ`` that keeps ``dT = E + T W - W T`` upper triangular:
    its strictly lower part solves ``(T W - W T)_ij = -E_ij`` (``i > j``), row by row from
    the bottom, each row a triangular system in ``T``'s leading block."""
    n = np.shape(t)[-1]
    rows = [np.zeros(n, dtype=np.result_type(t, e))] * n
    for i in range(n - 1, 0, -1):
        below = np.stack(rows[i + 1:]) if i + 1 < n else np.zeros((0, n))
        rhs = -e[i, :i] - t[i, i + 1:] @ below[:, :i]  # (the rows below are solved)
        lead = t[:i, :i] - t[i, i] * np.eye(i)  # (row i: w M = -rhs, M upper triangular)
        rows[i] = np.concatenate([la.solve(_t(lead), -rhs), np.zeros(n - i)])
    lower = np.stack(rows)
    return lower - _t(lower)


def _schur_rotation_adjoint(t, g):
    """The adjoint of :func:`_schur_rotation` (as a map ``E -> W``), applied to ``g``: the
    strictly lower ``Y`` with ``(T^T Y - Y T^T)_ij = (g - g^T)_ij`` (``i > j``), row by row
    from the top, then ``-Y``."""
    n = np.shape(t)[-1]
    gl = g - _t(g)
    rows = [np.zeros(n, dtype=np.result_type(t, g))] * n
    for i in range(1, n):
        above = np.stack(rows[:i])
        rhs = gl[i, :i] - (t[:i, i] @ above)[:i]  # sum over earlier rows k < i of T_ki Y_kj
        lead = t[i, i] * np.eye(i) - t[:i, :i]  # ((T_ii I - T_lead) y = rhs, upper triangular)
        rows[i] = np.concatenate([la.solve(lead, rhs), np.zeros(n - i)])
    return -np.stack(rows)


def _schur_jvp(ts, ans, a):
    n = np.shape(a)[-1]
    t, z = ans[:n], ans[n:]
    e = _t(z) @ ts[0] @ z
    w = _schur_rotation(t, e)
    return np.concatenate([np.triu(e + t @ w - w @ t), z @ w], axis=0)


def _schur_vjp(g, ans, a):
    n = np.shape(a)[-1]
    t, z = ans[:n], ans[n:]
    gt, gz = np.triu(g[:n]), g[n:]
    gw = _t(z) @ gz + _t(t) @ gt - gt @ _t(t)  # (W enters dZ = Z W and dT = E + T W - W T)
    ge = gt + np.tril(_schur_rotation_adjoint(t, gw), -1)
    return (z @ ge @ _t(z),)


defjvp(real_schur, _schur_jvp)
defvjp(real_schur, _schur_vjp)


def _register_scipy():
    def triangular_vjp(g, ans, a, b, trans=0, lower=False, unit_diagonal=False, *args, **kw):
        op = _trans_code(trans)
        shape = dict(lower=lower, unit_diagonal=unit_diagonal)
        if op == 1:  # op(a)^H = conj(a): solve with a, conjugated
            gb = _conj(sl.solve_triangular(a, _conj(_column(g)), **shape))
        else:  # op(a)^H: a^H for a, a for a^H
            gb = sl.solve_triangular(a, _column(g), trans=2 - op, **shape)
        gop = -gb @ _h(_column(ans))
        ga = _triangle(_op_adjoint(gop, op), lower, 1 if unit_diagonal else 0)
        gb = gb[..., 0] if np.ndim(b) == 1 else gb
        out = ((ga if np.iscomplexobj(a) else np.real(ga)), (gb if np.iscomplexobj(b) else np.real(gb)))
        return out + (None,) * len(args)

    defjvp(sl.solve_triangular, _solve_triangular_jvp)
    defvjp(sl.solve_triangular, triangular_vjp)

    # solve: the matrix LAPACK reads for each assume_a, then numpy.linalg.solve's rules
    def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None,
              transposed=False):
        kind = {None: "gen", "general": "gen", "symmetric": "sym", "hermitian": "her",
                "positive definite": "pos", "upper triangular": "upper", "lower triangular": "lower",
                "diagonal": "diagonal"}.get(assume_a, assume_a)
        if kind == "gen":
            m = a
        elif kind == "sym":
            m = _symmetric_read(a, lower)
        elif kind in ("her", "pos"):
            m = _hermitian_read(a, lower)
        elif kind in ("upper", "lower"):
            m = _triangle(a, kind == "lower")
        elif kind == "diagonal":
            m = np.tril(np.triu(a))
        else:
            _refuse("scipy.linalg.solve", ("assume_a=%r" % (assume_a,), "use assume_a='gen', 'sym', "
                                           "'her', 'pos', 'diagonal' or a triangular kind"))
        if transposed:
            m = _t(m)
        return la.solve(m, b)

    defimpl(sl.solve, solve)
    def inv(a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
        if assume_a in (None, "gen", "general"):
            return la.inv(a)
        if assume_a in ("sym", "symmetric"):
            return la.inv(_symmetric_read(a, lower))
        if assume_a in ("her", "hermitian", "pos", "positive definite"):
            return la.inv(_hermitian_read(a, lower))
        if assume_a in ("upper triangular", "lower triangular"):
            return la.inv(_triangle(a, assume_a.startswith("lower")))
        if assume_a == "diagonal":
            return la.inv(np.tril(np.triu(a)))
        _refuse("scipy.linalg.inv", ("assume_a=%r" % (assume_a,), "use the default"))

    defimpl(sl.inv, inv)
    defimpl(sl.det, lambda a, overwrite_a=False, check_finite=True: la.det(a))

    def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
        if lower:
            return la.cholesky(a)
        return _h(la.cholesky(_h(a)))  # U with U^H U = the matrix read from the upper triangle

    defimpl(sl.cholesky, cholesky)

    probe = np.array([[4.0, 1.0], [3.0, 2.0]])
    keeps_other_triangle = sl.cho_factor(probe)[0][1, 0] == 3.0  # (SciPy < 1.18: left as it was)

    def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
        c = cholesky(a, lower)
        if keeps_other_triangle:
            c = c + _triangle(a, not lower, 1)
        return c, lower

    def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
        c, lower = c_and_lower
        if lower:  # A = L L^H
            y = sl.solve_triangular(c, b, lower=True)
            return sl.solve_triangular(c, y, trans=2, lower=True)
        y = sl.solve_triangular(c, b, trans=2, lower=False)  # A = U^H U
        return sl.solve_triangular(c, y, lower=False)

    defimpl(sl.cho_factor, cho_factor)
    defimpl(sl.cho_solve, cho_solve)

    # LU: the plain factorization once, then a primitive that carries its derivative
    @plain_function
    def lu_plain(a):
        return sl.lu_factor(a)

    def lu_attached(a, lu, piv):
        """``lu`` (the packed factors of ``a``) as a function of ``a``."""
        return lu.copy()

    def lu_jvp(ts, ans, a, lu, piv):
        perm = _permutation(piv, np.shape(a)[-1])
        x = sl.solve_triangular(ans, ts[0][perm], lower=True, unit_diagonal=True)  # L^-1 P dA
        x = _t(sl.solve_triangular(ans, _t(x), trans=1, lower=False))  # ... U^-1
        low = np.tril(ans, -1) + np.eye(np.shape(a)[-1])
        return low @ np.tril(x, -1) + np.triu(x) @ np.triu(ans)

    def lu_vjp(g, ans, a, lu, piv):
        n = np.shape(a)[-1]
        perm = _permutation(piv, n)
        low, up = np.tril(ans, -1) + np.eye(n), np.triu(ans)
        gx = np.tril(_h(low) @ np.tril(g, -1), -1) + np.triu(np.triu(g) @ _h(up))
        # X = L^-1 P dA U^-1  ->  gP dA = L^-H gX U^-H
        y = sl.solve_triangular(ans, gx, trans=2, lower=True, unit_diagonal=True)
        y = _h(sl.solve_triangular(ans, _h(y), lower=False))
        ga = y[np.argsort(perm)]  # P dA = dA[perm]
        return (ga if np.iscomplexobj(a) else np.real(ga), None, None)

    defjvp(lu_attached, lu_jvp)
    defvjp(lu_attached, lu_vjp)

    def lu_factor(a, overwrite_a=False, check_finite=True):
        m, n = np.shape(a)[-2:]
        if m != n or np.ndim(a) != 2:
            _refuse("scipy.linalg.lu_factor", ("a non-square or stacked matrix", "only square matrices"))
        lu, piv = lu_plain(a)
        return lu_attached(a, lu, piv), piv

    def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
        lu, piv = lu_and_piv
        n = np.shape(lu)[-1]
        perm = _permutation(piv, n)
        op = _trans_code(trans)
        if op == 0:  # P A = L U
            y = sl.solve_triangular(lu, b[perm], lower=True, unit_diagonal=True)
            return sl.solve_triangular(lu, y, lower=False)
        y = sl.solve_triangular(lu, b, trans=op, lower=False)
        z = sl.solve_triangular(lu, y, trans=op, lower=True, unit_diagonal=True)
        return z[np.argsort(perm)]

    defimpl(sl.lu_factor, lu_factor)
    defimpl(sl.lu_solve, lu_solve)

    def lu(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
        packed, piv = lu_factor(a)
        n = np.shape(a)[-1]
        perm = _permutation(piv, n)
        low, up = np.tril(packed, -1) + np.eye(n), np.triu(packed)
        inverse = np.argsort(perm)  # A = P L U with P[perm[i], i] = 1
        if permute_l:
            return low[inverse], up
        if p_indices:
            return inverse, low, up
        return _perm_matrix(perm), low, up

    defimpl(sl.lu, lu)

    # decompositions: numpy's rules, with SciPy's options
    def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, type=1,
             check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
        if b is not None or subset_by_index is not None or subset_by_value is not None:
            _refuse("scipy.linalg.eigh", ("b=/subset_by_index=/subset_by_value=",
                                          "only the standard problem with all eigenvalues"))
        w, v = _eigh_parts(_eigh_packed(a, lower, "scipy"))
        return w if eigvals_only else (w, v)

    defimpl(sl.eigh, eigh)
    defimpl(sl.eigvalsh, lambda a, b=None, **kw: eigh(a, b, eigvals_only=True, **kw))

    def eig(a, b=None, left=False, right=True, overwrite_a=False, overwrite_b=False, check_finite=True,
            homogeneous_eigvals=False):
        if b is not None and not left and not right and not homogeneous_eigvals:
            return generalized_eigvals(a, b)  # (eigvals(a, b): the values of the pencil)
        if b is not None and right and not left and not homogeneous_eigvals:
            p = generalized_eig(a, b)  # (the right eigenvectors of a real pencil, real eigenvalues)
            return p[0, :] + 0j, p[1:, :]
        if b is not None or left or homogeneous_eigvals:
            _refuse("scipy.linalg.eig", ("left=True/homogeneous_eigvals=True", "only right eigenvectors "
                                         "(of the standard problem, or of a real pencil (a, b) with real "
                                         "eigenvalues), and the eigenvalues of a pencil (a, b)"))
        p = _eig_packed(a, "scipy")
        w = p[..., 0, :] + 0j  # SciPy's eigenvalues are always complex
        return (w, p[..., 1:, :]) if right else w

    defimpl(sl.eig, eig)

    def schur(a, output="real", lwork=None, overwrite_a=False, sort=None, check_finite=True):
        if output not in ("real", "r"):
            _refuse("scipy.linalg.schur", ("output=%r" % (output,), "the complex Schur vectors' phases "
                                           "follow no normalization; use output='real' (real eigenvalues)"))
        if sort is not None:
            _refuse("scipy.linalg.schur", ("sort=...", "the order of the eigenvalues is a choice that "
                                           "changes with their values"))
        if np.ndim(a) != 2:
            _refuse("scipy.linalg.schur", ("a stack of matrices", "call it on each matrix"))
        p = real_schur(a)
        n = np.shape(p)[-1]
        return p[:n], p[n:]

    defimpl(sl.schur, schur)
    defimpl(sl.eigvals, lambda a, b=None, overwrite_a=False, check_finite=True, homogeneous_eigvals=False:
            eig(a, b, right=False, homogeneous_eigvals=homogeneous_eigvals))

    def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
            lapack_driver="gesdd"):
        out = _svd(a, full_matrices, compute_uv, library="scipy")
        return tuple(out) if compute_uv else out

    defimpl(sl.svd, svd)
    defimpl(sl.svdvals, lambda a, overwrite_a=False, check_finite=True: _singular_values(a))

    def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
        if pivoting:
            _refuse("scipy.linalg.qr", ("pivoting=True", "the pivots change with the values"))
        m, n = np.shape(a)[-2:]
        if mode == "full" and m > n:
            _refuse("scipy.linalg.qr", ("mode='full'", "for a tall matrix the extra columns of Q are not "
                                        "determined; use mode='economic'"))
        if mode not in ("full", "economic", "r"):
            _refuse("scipy.linalg.qr", ("mode=%r" % (mode,), "use mode='economic' or 'r'"))
        q, r = _qr_factors(a)
        if mode == "r":  # SciPy's R has the full m rows
            return (np.concatenate([r, np.zeros((m - n,) + np.shape(r)[-1:], dtype=np.result_type(r))])
                    if m > n else r,)
        return q, r

    defimpl(sl.qr, qr)

    defimpl(sl.norm, lambda a, ord=None, axis=None, keepdims=False, check_finite=True:
            la.norm(a, ord, axis, keepdims))

    def pinv(a, *, atol=None, rtol=None, return_rank=False, check_finite=True):
        if atol:
            _refuse("scipy.linalg.pinv", ("atol=", "use rtol= (relative to the largest singular value)"))
        rcond = rtol if rtol is not None else max(np.shape(a)[-2:]) * np.finfo(np.result_type(a, 1.0)).eps
        p = la.pinv(a, rcond)
        return (p, _matrix_rank(a, rcond)) if return_rank else p

    def lstsq(a, b, cond=None, overwrite_a=False, overwrite_b=False, check_finite=True, lapack_driver=None):
        x, res, rank, sv = _lstsq(a, b, cond)
        if np.ndim(b) == 1 and np.size(res) == 1:
            res = res[0]  # SciPy's residue of one right-hand side is a scalar
        return x, res, rank, sv

    defimpl(sl.pinv, pinv)
    defimpl(sl.lstsq, lstsq)

    # matrix functions: Frechet derivatives
    defjvp(sl.expm, lambda ts, ans, a: expm_frechet(a, ts[0]))
    defvjp(sl.expm, lambda g, ans, a: (_real_like(expm_frechet(_h(a), g), a),))
    defjvp(expm_frechet, _expm_frechet_jvp)
    defvjp(expm_frechet, _expm_frechet_vjp)
    # A^t = expm(t logm(A)): the chain of the two Frechet derivatives (A^t commutes with logm A)
    defjvp(sl.fractional_matrix_power, _fractional_power_jvp)
    defvjp(sl.fractional_matrix_power, _fractional_power_vjp_a, _fractional_power_vjp_t)
    defjvp(sl.solve_sylvester, _solve_sylvester_jvp)
    defvjp(sl.solve_sylvester, _solve_sylvester_vjp)
    defimpl(sl.solve_continuous_lyapunov, lambda a, q: sl.solve_sylvester(a, _h(a), q))  # a x + x a^H = q
    defjvp(sylvester_sum, _sylvester_sum_jvp)
    defvjp(sylvester_sum, _sylvester_sum_vjp)
    # sqrtm: X^2 = A gives X dX + dX X = dA, a Sylvester equation in X (exact at any
    # order; the block trick of _frechet lets rounding split the repeated eigenvalues of
    # a real matrix's [[A, E], [0, A]] across the branch cut when they are negative).
    defjvp(sl.sqrtm, lambda ts, ans, a, *args, **kw: sylvester_sum(ans, ts[0]))
    defvjp(sl.sqrtm, lambda g, ans, a, *args, **kw:
           (_real_like(sylvester_sum(_h(ans), g), a),) + (None,) * len(args))
    # logm: log A = 2 log B with B = sqrtm(A), whose eigenvalues lie off logm's branch cut
    defjvp(sl.logm, lambda ts, ans, a, *args, **kw: _logm_frechet(a, ts[0], *args, **kw))
    defvjp(sl.logm, lambda g, ans, a, *args, **kw: (_real_like(_logm_frechet_adjoint(a, g, *args, **kw), a),)
           + (None,) * len(args))
    only_first_argument(sl.sqrtm)  # (disp=, blocksize=: flags, never differentiated)
    only_first_argument(sl.logm)


def _real_like(g, a):
    return g if np.iscomplexobj(a) else np.real(g)


def _block(a, e):
    """``[[a, e], [0, a]]``: ``f`` of it holds ``f(a)`` on the diagonal and the Fréchet
    derivative ``L_f(a, e)`` in the upper right block."""
    zero = np.zeros(np.shape(a), dtype=np.result_type(a, e))
    return np.concatenate([np.concatenate([a + zero, e + zero], axis=-1),
                           np.concatenate([zero, a + zero], axis=-1)], axis=-2)


def _frechet(f, a, e, *args, **kw):
    """The Fréchet derivative ``L_f(a, e)`` of the primary matrix function ``f``, as the
    upper right block of ``f([[a, e], [0, a]])`` (differentiable again)."""
    n = np.shape(a)[-1]
    return f(_block(a, e), *args, **kw)[..., :n, n:]


def _frechet_adjoint(f, a, g, *args, **kw):
    """The adjoint of ``e -> L_f(a, e)``: ``conj(L_f(a^T, conj(g)))``.  (Not ``L_f(a^H, g)``:
    that needs ``f(conj z) == conj f(z)``, false for sqrtm and logm at eigenvalues on
    their branch cut, the negative reals, where a real matrix has a complex sqrtm/logm.)"""
    return np.conj(_frechet(f, _t(a), np.conj(g), *args, **kw))


def _logm_frechet(a, e, *args, **kw):
    """``L_log(a, e) = 2 L_log(b, L_sqrt(a, e))`` with ``b = sqrtm(a)``: the block
    ``[[b, .], [0, b]]`` has no eigenvalues near the negative reals, unlike ``[[a, e], [0, a]]``
    for a real ``a`` with negative eigenvalues (where rounding splits them across the cut)."""
    b = sl.sqrtm(a)
    return 2.0 * _frechet(sl.logm, b, sylvester_sum(b, e), *args, **kw)


def _logm_frechet_adjoint(a, g, *args, **kw):
    b = sl.sqrtm(a)
    return 2.0 * sylvester_sum(_h(b), _frechet_adjoint(sl.logm, b, g, *args, **kw))


def _fractional_power_jvp(ts, ans, a, t):
    da, dt = (tuple(ts) + (None, None))[:2]
    log = sl.logm(a)
    out = None if da is None else _real_like(expm_frechet(t * log, t * _logm_frechet(a, da)), ans)
    if dt is not None:
        part = _power_dt(ans, log) * dt
        out = part if out is None else out + part
    return out


def _power_dt(ans, log):
    """``d(a^t)/dt = logm(a) a^t``; refused where ``a^t`` is real but ``logm(a)`` is not (an
    integer ``t`` and negative eigenvalues: the powers around ``t`` are complex)."""
    if np.iscomplexobj(log) and not np.iscomplexobj(ans):
        _refuse("scipy.linalg.fractional_matrix_power", ("a differentiated integer power t of a matrix with "
                                                         "negative eigenvalues", "the powers next to t are "
                                                         "complex, the one at t is real"))
    return log @ ans


def _fractional_power_vjp_a(g, ans, a, t):
    log = sl.logm(a)
    return _real_like(_logm_frechet_adjoint(a, np.conj(t) * expm_frechet(_h(t * log), g)), a)


def _fractional_power_vjp_t(g, ans, a, t):
    gt = np.sum(np.conj(_power_dt(ans, sl.logm(a))) * g)
    return gt if np.iscomplexobj(t) else np.real(gt)


def _sylvester(a, b, q):
    """``solve_sylvester`` with all three in one dtype: SciPy's mixes a complex system with
    the real (quasi-triangular) Schur form of a real ``b`` and solves the wrong equation."""
    if np.iscomplexobj(a) or np.iscomplexobj(b) or np.iscomplexobj(q):
        a, b, q = (np.asarray(m).astype(complex) for m in (a, b, q))
    return sl.solve_sylvester(a, b, q)


def _solve_sylvester_jvp(ts, ans, a, b, q):
    """``a x + x b = q``: ``a dx + dx b = dq - da x - x db``."""
    da, db, dq = (tuple(ts) + (None, None, None))[:3]
    rhs = dq
    for part in (None if da is None else -(da @ ans), None if db is None else -(ans @ db)):
        if part is not None:
            rhs = part if rhs is None else rhs + part
    return _sylvester(a, b, rhs)


def _solve_sylvester_vjp(g, ans, a, b, q):
    """The adjoint of ``y -> a y + y b`` is ``y -> a^H y + y b^H``."""
    gq = _sylvester(_h(a), _h(b), g)
    return _real_like(-(gq @ _h(ans)), a), _real_like(-(_h(ans) @ gq), b), _real_like(gq, q)


def sylvester_sum(x, e):
    """The ``l`` with ``x l + l x = e`` (matrix by matrix for stacks): the derivative of
    sqrtm at ``x @ x`` in direction ``e``."""
    x, e = np.broadcast_arrays(x, e)
    if x.ndim == 2:
        return _sylvester(x, x, e)
    each = [_sylvester(m, m, r) for m, r in zip(x.reshape((-1,) + x.shape[-2:]),
                                                         e.reshape((-1,) + e.shape[-2:]))]
    return np.stack(each).reshape(x.shape)


def _sylvester_sum_jvp(ts, ans, x, e):
    """``x dl + dl x = de - dx l - l dx``."""
    rhs = ts[1] if len(ts) > 1 and ts[1] is not None else None
    if ts[0] is not None:
        part = -(ts[0] @ ans + ans @ ts[0])
        rhs = part if rhs is None else rhs + part
    return sylvester_sum(x, rhs)


def _sylvester_sum_vjp(g, ans, x, e):
    """The map ``e -> l`` has adjoint ``g -> sylvester_sum(x^H, g)``."""
    ge = sylvester_sum(_h(x), g)
    gx = -(ge @ _h(ans) + _h(ans) @ ge)
    return _real_like(gx, x), _real_like(ge, e)


def expm_frechet(a, e):
    """``L_exp(a, e)``, the Fréchet derivative of ``expm`` at ``a`` in direction ``e``
    (SciPy's ``expm_frechet``, matrix by matrix for stacks)."""
    a, e = np.broadcast_arrays(a, e)
    if a.ndim == 2:
        return sl.expm_frechet(a, e, compute_expm=False)
    flat_a, flat_e = a.reshape((-1,) + a.shape[-2:]), e.reshape((-1,) + e.shape[-2:])
    each = [sl.expm_frechet(x, y, compute_expm=False) for x, y in zip(flat_a, flat_e)]
    return np.stack(each).reshape(a.shape)


def _expm_frechet_jvp(ts, ans, a, e):
    """Linear in ``e``; in ``a``, the derivative of ``L(a, e)`` is the upper right block of
    ``L([[a, e], [0, a]], [[da, 0], [0, da]])``."""
    out = None
    if len(ts) > 1 and ts[1] is not None:
        out = expm_frechet(a, ts[1])
    if ts[0] is not None:
        n = np.shape(a)[-1]
        d = expm_frechet(_block(a, e), _block(ts[0], np.zeros(np.shape(e), dtype=np.result_type(e, ts[0]))))
        d = d[..., :n, n:]
        out = d if out is None else out + d
    return out


def _expm_frechet_vjp(g, ans, a, e):
    n = np.shape(a)[-1]
    ge = expm_frechet(_h(a), g)
    zero = np.zeros(np.shape(g), dtype=np.result_type(g))
    padded = np.concatenate([np.concatenate([zero, g], axis=-1),
                             np.concatenate([zero, zero], axis=-1)], axis=-2)  # [[0, g], [0, 0]]
    big = expm_frechet(_h(_block(a, e)), padded)
    ga = big[..., :n, :n] + big[..., n:, n:]
    return _real_like(ga, a), _real_like(ge, e)


def _permutation(piv, n):
    """LAPACK's row interchanges ``piv`` as the permutation ``perm`` with ``P A = A[perm]``."""
    perm = np.arange(n)
    for i, p in enumerate(np.asarray(piv)[:n]):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _perm_matrix(perm):
    """``P`` with ``A = P L U`` when ``A[perm] = L U``."""
    n = len(perm)
    p = np.zeros((n, n))
    p[perm, np.arange(n)] = 1.0
    return p


if sl is not None:
    _register_scipy()
