"""Python equivalents of the compiled kernels behind ``scipy.interpolate``'s
interpolants, so that they are differentiated at differentiated points and with
differentiated data: piecewise polynomials (``_ppoly.evaluate``: ``PPoly``,
``CubicSpline``, ``PchipInterpolator``, ``Akima1DInterpolator``,
``CubicHermiteSpline``), B-splines (``_dierckx.evaluate_spline``: ``BSpline``,
``make_interp_spline``, ``interp1d(kind='cubic')``...), ``RegularGridInterpolator``'s
linear kernel (``find_indices``, ``evaluate_linear_2d``, ``_ndim_coords_from_arrays``)
and the banded solves that build splines from data (``solve_banded``, LAPACK's
``gbsv``, as dense solves with ``np.linalg.solve``'s rules).

Each equivalent selects the interval of a point with plain (never differentiated)
comparisons and evaluates the local polynomial with NumPy arithmetic: derivatives in
the points and in the coefficients follow, and second derivatives too.  The banded
solves become dense: right, but O(n^3) -- fine for the hundreds of knots of typical
interpolation, slow for tens of thousands.
"""
import numpy as np

from .registry import defimpl, plain_valued

try:
    import scipy.linalg as sl
    from scipy.interpolate import _dierckx, _ppoly, _rgi_cython
    from scipy.interpolate import _interpnd
    from scipy.linalg import _flapack
except ImportError:  # pragma: no cover - scipy is optional (or laid out differently)
    sl = None
try:  # (SciPy up to 1.17: FITPACK's Fortran wrappers; 1.18 rewrote FITPACK and dropped them)
    from scipy.interpolate import _dfitpack
except ImportError:
    _dfitpack = None
try:  # (SciPy 1.18+: FITPACK's evaluation in C, ``splder`` taking the order before ``x``)
    from scipy.interpolate import _fitpack as _cfitpack
except ImportError:  # pragma: no cover
    _cfitpack = None

#: the functions this table gives entries (tests/test_interpolate.py checks them)
FUNCTIONS = []


def _interval(breaks, x, lowest, highest):
    """The plain index ``i`` with ``breaks[i] <= x < breaks[i + 1]``, clipped to
    ``[lowest, highest]`` (the first and last intervals extend outwards)."""
    return np.clip(np.searchsorted(breaks, x, side="right") - 1, lowest, highest)


plain_valued(_interval)


def _outside(x, lo, hi):
    """Whether points lie outside ``[lo, hi]`` (plain)."""
    return (x < lo) | (x > hi)


plain_valued(_outside)


# ----------------------------------------------------------------------------- piecewise polynomials
def ppoly_evaluate(c, x, xp, dx, extrapolate, out):
    """``_ppoly.evaluate``: ``out[j] = d^dx/dx^dx sum_m c[m, i] (xp[j] - x[i])^(k-1-m)``
    for ``xp[j]`` in interval ``i`` of the breakpoints ``x`` (NaN outside them unless
    ``extrapolate``)."""
    if dx < 0:
        raise TypeError("capstan: PPoly's antiderivative evaluation (nu < 0) has no derivative rule; "
                        "use .antiderivative() and evaluate that")
    if np.size(x) > 1 and np.asarray(x)[-1] < np.asarray(x)[0]:
        raise TypeError("capstan: PPoly with decreasing breakpoints has no derivative rule")
    k, m = np.shape(c)[0], np.shape(c)[1]
    i = _interval(x, xp, 0, m - 1)
    s = (xp - x[i])[:, None]
    result = np.zeros((np.size(xp), np.shape(c)[2]), dtype=np.result_type(c, xp, 1.0))
    for power in range(dx, k):  # (Horner would save work; the direct sum keeps it short)
        factor = float(np.prod(np.arange(power - dx + 1, power + 1))) if dx else 1.0
        result = result + factor * c[k - 1 - power, i] * s ** (power - dx)
    if not extrapolate:
        result = np.where(_outside(xp, x[0], x[-1])[:, None], np.nan, result)
    out[...] = result


def ppoly_integrate(c, x, a, b, extrapolate, out=None):
    """``_ppoly.integrate``: the integral of the piecewise polynomial from ``a`` to ``b``,
    ``F(b) - F(a)`` with ``F`` its antiderivative from ``x[0]`` (the whole intervals before
    a point's, then its own part); NaN for a limit outside the breakpoints unless
    ``extrapolate`` (``PPoly.integrate``, ``CubicSpline.integrate``...)."""
    if np.size(x) > 1 and np.asarray(x)[-1] < np.asarray(x)[0]:
        raise TypeError("capstan: PPoly with decreasing breakpoints has no derivative rule")
    k, m = np.shape(c)[0], np.shape(c)[1]
    h = (x[1:] - x[:-1])[:, None]
    whole = sum(c[k - 1 - p] * h ** (p + 1) / (p + 1) for p in range(k))
    before = np.concatenate([np.zeros((1,) + np.shape(whole)[1:]), np.cumsum(whole, axis=0)], axis=0)

    def antiderivative(t):
        i = _interval(x, t, 0, m - 1)
        s = t - x[i]
        return before[i] + sum(c[k - 1 - p, i] * s ** (p + 1) / (p + 1) for p in range(k))

    result = antiderivative(b) - antiderivative(a)
    if not extrapolate and (bool(_outside(a, x[0], x[-1])) or bool(_outside(b, x[0], x[-1]))):
        result = result * np.nan
    if out is None:  # (out=: the caller writes the result into it)
        return result
    out[...] = result
    return out


# ----------------------------------------------------------------------------- B-splines
def _spline_derivative(t, c, k):
    """Knots, coefficients and degree of the derivative of a B-spline."""
    n = len(t) - k - 1
    width = t[k + 1:k + n] - t[1:n]
    safe = np.where(width == 0, 1.0, width)
    dc = k * (c[1:n] - c[:n - 1]) / safe[:, None]
    return t[1:-1], np.where((width == 0)[:, None], 0.0, dc), k - 1


def bspline_evaluate(t, c, k, xp, nu, extrapolate, out=None):
    """``_dierckx.evaluate_spline``: the B-spline ``(t, c, k)`` (or its ``nu``-th
    derivative) at the points ``xp``, by de Boor's recursion; NaN outside the base
    interval unless ``extrapolate``."""
    if nu < 0:
        raise TypeError("capstan: BSpline antiderivative evaluation (nu < 0) has no derivative rule")
    t, c, xp = np.asarray(t), np.asarray(c), np.ravel(xp)
    lo, hi = t[k], t[len(t) - k - 1]
    for _ in range(nu):
        t, c, k = _spline_derivative(t, c, k)
    n = len(t) - k - 1
    base = _interval(t, xp, k, n - 1)
    d = [c[base - k + j] for j in range(k + 1)]
    x = xp[:, None]
    for r in range(1, k + 1):
        for j in range(k, r - 1, -1):
            left = t[base - k + j][:, None]
            right = t[base + 1 + j - r][:, None]
            alpha = (x - left) / (right - left)
            d[j] = (1.0 - alpha) * d[j - 1] + alpha * d[j]
    result = d[k]
    if not extrapolate:
        result = np.where(_outside(xp, lo, hi)[:, None], np.nan, result)
    if out is not None:
        out[...] = result
        return out
    return result


# ----------------------------------------------------------------------------- FITPACK evaluation
def fitpack_splder(t, c, k, x, nu=0, e=0):
    """FITPACK's ``splder`` (``splev`` for ``nu = 0``): the spline ``(t, c, k)`` (its
    ``nu``-th derivative) at ``x``, as ``(y, ier)``; ``e`` is SciPy's ``ext``: 0
    extrapolates, 1 gives 0 outside the base interval, 2 reports an error (ier 1), 3 takes
    the value at the nearer end (``splev``, ``UnivariateSpline``)."""
    t = np.asarray(t)
    n = len(t) - k - 1
    x = np.ravel(x)
    lo, hi = t[k], t[n]
    outside = _outside(x, lo, hi)
    if e == 2 and np.any(outside):
        return np.zeros(np.shape(x)), 1
    if e == 3:
        x = np.clip(x, lo, hi)
    y = bspline_evaluate(t, np.reshape(c[:n], (n, 1)), k, x, nu, True)[:, 0]
    if e == 1:
        y = np.where(outside, 0.0, y)
    return y, 0


def fitpack_splev(t, c, k, x, e=0):
    return fitpack_splder(t, c, k, x, 0, e)


def c_fitpack_splder(t, c, k, nu, x, e=0):
    """SciPy 1.18's ``_fitpack.splder``: FITPACK's ``splder`` with the order before ``x``."""
    return fitpack_splder(t, c, k, x, nu, e)


def fitpack_splint(t, c, k, a, b):
    """FITPACK's ``splint``: the integral of the spline over ``[a, b]`` (zero outside its base
    interval), from its antiderivative (SciPy's ``splantider``), with FITPACK's integrals of
    the B-splines (``wrk``, which do not depend on ``c``)."""
    from scipy.interpolate import _fitpack_impl
    t = np.asarray(t)
    n = len(t) - k - 1
    lo, hi = t[k], t[n]
    t2, c2, k2 = _fitpack_impl.splantider((t, np.concatenate([c[:n], np.zeros(k + 1)]), k))
    ends = np.clip(np.stack([a, b]), lo, hi)
    values = fitpack_splev(t2, c2, k2, ends)[0]
    return values[1] - values[0], _splint_weights(t, k, a, b)


def _splint_weights(t, k, a, b):
    """FITPACK's integrals of the B-splines over ``[a, b]`` (plain)."""
    from scipy.interpolate import _dfitpack
    return _dfitpack.splint(t, np.zeros(len(t)), k, a, b)[1]


plain_valued(_splint_weights)


# ----------------------------------------------------------------------------- banded solves
def _dense(ab, rows_above, n):
    """The ``n x n`` matrix whose band ``ab`` holds (``ab[rows_above + i - j, j] = A[i, j]``)."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    depth = rows_above + i - j
    inside = (depth >= 0) & (depth < np.shape(ab)[0])
    a = np.zeros((n, n), dtype=np.result_type(ab, 1.0))
    a[i[inside], j[inside]] = ab[depth[inside], j[inside]]
    return a


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """``scipy.linalg.solve_banded`` as a dense ``np.linalg.solve``."""
    lower, upper = l_and_u
    ab = np.asarray(ab)
    if ab.shape[0] != lower + upper + 1:
        raise ValueError("invalid values for the number of lower and upper diagonals: l+u+1 (%d) "
                         "does not equal ab.shape[0] (%d)" % (lower + upper + 1, ab.shape[0]))
    b = np.asarray(b)
    if check_finite and not (np.all(np.isfinite(ab)) and np.all(np.isfinite(b))):
        raise ValueError("array must not contain infs or NaNs")
    if b.shape[0] != ab.shape[-1]:
        raise ValueError("shapes of ab and b are not compatible.")
    return np.linalg.solve(_dense(ab, upper, ab.shape[-1]), b)


def lapack_gbsv(kl, ku, ab, b, overwrite_ab=False, overwrite_b=False):
    """LAPACK's ``?gbsv`` (band LU solve): ``(lu, piv, x, info)`` with the solution ``x``
    from a dense solve (``lu`` and ``piv`` are not formed: SciPy's callers read ``x`` and
    ``info`` only)."""
    n = np.shape(ab)[-1]
    a = _dense(ab, kl + ku, n)  # (rows 0..kl-1 of ab are LAPACK's workspace for the LU)
    try:
        x = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        return ab, np.zeros(n, dtype=np.int32), b, 1
    return ab, np.arange(1, n + 1, dtype=np.int32), x, 0


# ----------------------------------------------------------------------------- RegularGridInterpolator
def ndim_coords_from_arrays(points, ndim=None):
    """``_ndim_coords_from_arrays``: points as an array whose last axis indexes the
    coordinates (a tuple of coordinate arrays broadcast and stacked)."""
    if isinstance(points, tuple) and len(points) == 1:
        points = points[0]
    if isinstance(points, tuple):
        parts = np.broadcast_arrays(*points)
        return np.stack([np.asarray(p, dtype=float) for p in parts], axis=-1)
    points = np.asanyarray(points)
    if points.ndim == 1:
        points = points.reshape(-1, 1) if ndim is None else points.reshape(-1, ndim)
    return points


def find_indices(grid, xi):
    """``find_indices``: for each dimension, the plain interval index of each point
    (clipped to the grid) and its normalized distance from the interval's left end."""
    indices, distances = [], []
    for g, x in zip(grid, xi):
        i = _interval(g, x, 0, len(g) - 2)
        indices.append(i)
        distances.append((x - g[i]) / (g[i + 1] - g[i]))
    return np.array(indices), np.stack(distances) if distances else np.zeros((0, np.shape(xi)[-1]))


def evaluate_linear_2d(values, indices, norm_distances, grid, out):
    """``evaluate_linear_2d``: bilinear interpolation of ``values`` at the points given
    by their cells (``indices``) and positions in them (``norm_distances``)."""
    i0, i1 = indices
    y0, y1 = norm_distances[0], norm_distances[1]
    result = (values[i0, i1] * (1 - y0) * (1 - y1) + values[i0, i1 + 1] * (1 - y0) * y1
              + values[i0 + 1, i1] * y0 * (1 - y1) + values[i0 + 1, i1 + 1] * y0 * y1)
    out[...] = result
    return out


def _register():
    for f, impl in ((_ppoly.evaluate, ppoly_evaluate), (_ppoly.integrate, ppoly_integrate), (_dierckx.evaluate_spline, bspline_evaluate),
                    (sl.solve_banded, solve_banded), (_flapack.dgbsv, lapack_gbsv), (_flapack.zgbsv, lapack_gbsv),
                    (_interpnd._ndim_coords_from_arrays, ndim_coords_from_arrays),
                    (_rgi_cython.find_indices, find_indices), (_rgi_cython.evaluate_linear_2d, evaluate_linear_2d)):
        defimpl(f, impl)
        FUNCTIONS.append(f)
    if _dfitpack is not None:
        fitpack = ((_dfitpack.splev, fitpack_splev), (_dfitpack.splder, fitpack_splder),
                   (_dfitpack.splint, fitpack_splint))
    elif _cfitpack is not None and hasattr(_cfitpack, "splder"):
        # (no splint: its rule needs FITPACK's integrals of the B-splines, which SciPy 1.18
        # no longer returns; it stays a NoRuleError there)
        fitpack = ((_cfitpack.splev, fitpack_splev), (_cfitpack.splder, c_fitpack_splder))
    else:  # pragma: no cover
        fitpack = ()
    for f, impl in fitpack:
        defimpl(f, impl)
        FUNCTIONS.append(f)
    FUNCTIONS.extend((_interval, _outside, _splint_weights))  # (plain-valued helpers of the equivalents)


if sl is not None:
    _register()
