"""Python equivalents of ``scipy.ndimage``'s compiled filters, so that the filters built
on them are differentiated in the image and in the weights: ``correlate1d`` (behind
``convolve1d``, ``gaussian_filter``/``gaussian_filter1d`` -- in ``sigma`` too, through the
weights --, ``sobel``, ``prewitt``, ``laplace``, ``gaussian_laplace``,
``gaussian_gradient_magnitude``, ``scipy.signal.savgol_filter``), ``uniform_filter1d``
(``uniform_filter``), ``correlate`` (``correlate``, ``convolve``) and
``min_or_max_filter1d`` (``minimum_filter``/``maximum_filter`` and their 1-D forms: the
derivative of the selected element), plus ``np.bincount`` with weights (linear in them:
``ndimage.sum_labels``, ``ndimage.mean``).

Each filter is the extension of the image by the boundary mode (``np.pad``, whose rules
send derivatives of padded elements back to the elements they copy) followed by a sum
of shifted slices: plain NumPy that both modes differentiate.  The C functions write into
their ``output`` argument; the equivalents do the same (``output[...] = ...``), so the
filters' Python code, which returns ``output``, hands back the differentiated result.
"""
import math

import numpy as np

from overdub import overdub

from .registry import defimpl, defjvp, defsolver, defvjp, plain_valued

try:
    from scipy.ndimage import _nd_image
except ImportError:  # pragma: no cover - scipy is optional
    _nd_image = None

#: the functions this table gives entries (tests/test_ndimage_rules.py checks them)
FUNCTIONS = []

# ndimage's boundary-mode codes (``_ni_support._extend_mode_to_code``) as ``np.pad`` modes
_PAD_MODES = {0: "edge", 1: "wrap", 2: "symmetric", 3: "reflect", 4: "constant", 5: "wrap",
              6: "constant"}


def _padded(a, axis, before, after, mode, cval):
    """``a`` extended along ``axis`` as ndimage extends it beyond its edges."""
    pad = _PAD_MODES.get(mode)
    if pad is None:  # pragma: no cover - every code ndimage passes is listed
        raise TypeError("capstan: scipy.ndimage boundary mode code %r has no derivative rule" % (mode,))
    widths = [(0, 0)] * np.ndim(a)
    widths[axis] = (before, after)
    if pad == "constant":
        return np.pad(a, widths, mode="constant", constant_values=cval)
    if pad == "reflect" and np.shape(a)[axis] == 1:
        pad = "edge"  # (mirroring a single element repeats it, as ndimage does)
    return np.pad(a, widths, mode=pad)


def _windows(a, axis, size, mode, cval, origin):
    """The ``size`` shifted views of ``a`` (extended) along ``axis`` whose element ``i``
    is the window element ``j`` of output element ``i``."""
    n = np.shape(a)[axis]
    before = size // 2 + origin
    ext = _padded(a, axis, before, size - 1 - before, mode, cval)
    index = [slice(None)] * np.ndim(a)
    views = []
    for j in range(size):
        index[axis] = slice(j, j + n)
        views.append(ext[tuple(index)])
    return views


def correlate1d(input, weights, axis, output, mode, cval, origin):
    """``_nd_image.correlate1d``: ``output[i] = sum_j weights[j] input[i + j - size//2 - origin]``
    along ``axis``, the image extended by ``mode``."""
    weights = np.asarray(weights)
    views = _windows(input, axis, len(weights), mode, cval, origin)
    total = 0.0
    for j, view in enumerate(views):
        total = total + weights[j] * view
    output[...] = total


def uniform_filter1d(input, size, axis, output, mode, cval, origin):
    """``_nd_image.uniform_filter1d``: the mean of ``size`` neighbours along ``axis``."""
    correlate1d(input, np.full(size, 1.0 / size), axis, output, mode, cval, origin)


def min_or_max_filter1d(input, size, axis, output, mode, cval, origin, minimum):
    """``_nd_image.min_or_max_filter1d``: the least (``minimum``) or greatest of ``size``
    neighbours along ``axis``; its derivative is the selected element's."""
    stacked = np.stack(_windows(input, axis, size, mode, cval, origin), axis=0)
    output[...] = np.min(stacked, axis=0) if minimum else np.max(stacked, axis=0)


def correlate(input, weights, output, mode, cval, origins):
    """``_nd_image.correlate``: the n-dimensional correlation, as a sum over the
    weights of the image shifted (and extended) along every axis."""
    weights = np.asarray(weights)
    ext = input
    shape = np.shape(input)
    for axis, (size, origin) in enumerate(zip(np.shape(weights), origins)):
        before = size // 2 + origin
        ext = _padded(ext, axis, before, size - 1 - before, mode, cval)
    total = 0.0
    for offset in np.ndindex(*np.shape(weights)):  # (zero weights too: the weights' derivative)
        window = tuple(slice(o, o + n) for o, n in zip(offset, shape))
        total = total + weights[offset] * ext[window]
    output[...] = total


def bincount(x, /, weights=None, minlength=0):
    """``np.bincount`` with weights: ``out[k] = sum of weights[i] where x[i] == k``,
    linear in the weights (the counts themselves are integers: no derivative)."""
    if weights is None:
        return np.bincount(x, minlength=minlength)
    index = np.asarray(x)
    n = max(int(index.max()) + 1 if index.size else 0, minlength)
    out = np.zeros(n, dtype=np.result_type(np.asarray(weights).dtype, np.float64))
    np.add.at(out, index, weights)
    return out


if _nd_image is not None:
    for _f, _impl in ((_nd_image.correlate1d, correlate1d), (_nd_image.uniform_filter1d, uniform_filter1d),
                      (_nd_image.min_or_max_filter1d, min_or_max_filter1d),
                      (_nd_image.correlate, correlate)):
        defimpl(_f, _impl)
        FUNCTIONS.append(_f)
defimpl(np.bincount, bincount)
FUNCTIONS.append(np.bincount)


# ----------------------------------------------------------------------------------------
# Spline prefilter and geometric transforms: linear in the image.
#
# ``spline_filter1d``, ``zoom_shift`` and ``geometric_transform`` (behind ``spline_filter``,
# ``zoom``, ``shift``, ``rotate``, ``affine_transform``, ``map_coordinates`` and
# ``geometric_transform``) are linear in their input array for fixed coordinates (the
# constant ``cval`` aside).  Each runs, in its C function's place, a pure primitive whose
# forward rule applies the C function to the tangent (with ``cval = 0``) and whose reverse
# rule applies the exact transpose, assembled from the C function itself applied to unit
# vectors in one dimension at a time:
#
# * the spline prefilter along an axis is one ``n x n`` matrix (the C filter of the
#   identity), applied transposed along that axis;
# * every interpolation weighs the coefficients around an output point by a product of
#   one-dimensional weights, one per axis (SciPy's C code computes the weights, and folds
#   the indices at the edges, axis by axis).  So the weights of axis ``d`` for every output
#   point are the one-dimensional C transform of the unit vectors of that axis's length:
#   ``n_d`` calls, each over all the output points; the transpose contracts the cotangent
#   with these per-axis weight matrices.  For ``zoom_shift`` an axis's coordinates depend
#   only on that axis's output index (a small ``out_d x n_d`` matrix); for
#   ``geometric_transform`` they are the output points' own coordinates (the given
#   ``coordinates``; ``matrix @ index + offset``; the user's ``mapping`` at each index).
#
# The tests check the transposes against the forward rule by the dot-product identity in
# every mode and order.  The coordinates, zoom factors, shifts and matrices are not
# differentiated: a differentiated one is refused (NoRuleError naming it).
# ----------------------------------------------------------------------------------------

def _refuse_parameter(function, argument, why=""):
    from ..losses import NoRuleError
    raise NoRuleError("capstan: scipy.ndimage.%s has no derivative with respect to its argument %s%s "
                      "(the derivative in the image is supported)" % (function, argument, why))


def _part_of_complex(output):
    """Whether ``output`` is a real view of a complex array (its real or imaginary part)."""
    base = getattr(output, "base", None)
    return base is not None and np.iscomplexobj(base) and not np.iscomplexobj(output)


def _writable(output, function):
    """``output``, unless it is the real or imaginary part of a complex array: SciPy filters
    a complex image as two real ones written into those views, which capstan cannot follow."""
    if _part_of_complex(output):
        raise TypeError("capstan: scipy.ndimage.%s of a complex image has no derivative rule (SciPy writes "
                        "its real and imaginary parts into views of a complex output); transform "
                        "np.real(x) and np.imag(x) separately and combine them" % function)
    return output


def spline_filtered(input, order, axis, mode, dtype):
    """``_nd_image.spline_filter1d`` as a pure function: the B-spline coefficients of
    ``input`` along ``axis``."""
    out = np.zeros(np.shape(input), dtype=dtype)
    _nd_image.spline_filter1d(input, order, axis, out, mode)
    return out


def _spline_matrix(n, order, mode):
    """Row ``j``: the spline prefilter of the ``j``-th unit vector of length ``n``
    (so the prefilter's matrix, transposed)."""
    out = np.zeros((n, n))
    _nd_image.spline_filter1d(np.eye(n), order, 1, out, mode)
    return out


def _along_axis(matrix, g, axis):
    """``matrix`` (``m x n``) applied along ``axis`` of ``g`` (length ``n`` there)."""
    return np.moveaxis(np.tensordot(matrix, np.moveaxis(g, axis, 0), axes=1), 0, axis)


def _spline_filtered_vjp(g, ans, input, order, axis, mode, dtype):
    rows = _spline_matrix(np.shape(input)[axis], order, mode)
    gx = _along_axis(rows, np.real(g) if not np.iscomplexobj(input) else g, axis)
    return gx


def spline_filter1d(input, order, axis, output, mode):
    """``_nd_image.spline_filter1d(input, order, axis, output, mode)``."""
    _writable(output, "spline_filter")[...] = spline_filtered(input, order, axis, mode, output.dtype)


def zoomed(input, zoom, shift, order, mode, cval, npad, grid_mode, shape, dtype):
    """``_nd_image.zoom_shift`` as a pure function (``shape``, ``dtype``: the output's)."""
    out = np.zeros(shape, dtype=dtype)
    _nd_image.zoom_shift(input, zoom, shift, out, order, mode, cval, npad, grid_mode)
    return out


def _zoom_coordinates(input, zoom, shift, shape):
    """The input coordinates ``zoom * (index + shift)`` of every output point of
    ``zoom_shift`` (``ndim x points``; ``None``: no zoom, no shift), and the output indices."""
    index = np.indices(shape, dtype=np.float64).reshape(len(shape), -1)
    zoom = np.ones(len(shape)) if zoom is None else zoom
    shift = np.zeros(len(shape)) if shift is None else shift
    return np.reshape(zoom, (-1, 1)) * (index + np.reshape(shift, (-1, 1))), index


def _zoom_slopes(input, zoom, shift, order, mode, cval, npad, grid_mode, shape, dzoom=None, dshift=None,
                 forward=False):
    """``d out / d coordinates`` at the points of ``zoom_shift`` (its interpolation is the
    geometric transform's at ``zoom * (index + shift)``), the output indices, and (forward
    mode: ``dzoom``, ``dshift`` given) the coordinates' tangent."""
    if grid_mode:  # pragma: no cover - SciPy's zoom computes its factors from the shapes
        _refuse_parameter("zoom", "zoom", " with grid_mode=True")
    coordinates, index = _zoom_coordinates(input, zoom, shift, shape)
    moved = None
    if forward:
        moved = 0.0
        if dzoom is not None:  # d(zoom * (index + shift))
            shifted = index + (0.0 if shift is None else np.reshape(shift, (-1, 1)))
            moved = np.reshape(dzoom, (-1, 1)) * shifted
        if dshift is not None:
            moved = moved + np.reshape(dshift, (-1, 1)) * (1.0 if zoom is None else np.reshape(zoom, (-1, 1)))
        moved = moved * np.ones(np.shape(coordinates))
    return _coordinate_gradients(input, coordinates, order, mode, cval, npad, moved), index, moved


def _zoom_jvp(ts, ans, input, zoom, shift, order, mode, cval, npad, grid_mode, shape, dtype):
    out = None
    if ts[0] is not None:
        out = zoomed(ts[0], zoom, shift, order, mode, 0.0, npad, grid_mode, shape, dtype)
    if ts[1] is not None or ts[2] is not None:
        slopes, index, moved = _zoom_slopes(input, zoom, shift, order, mode, cval, npad, grid_mode, shape,
                                            ts[1], ts[2], forward=True)
        term = np.reshape(np.sum(slopes * moved, axis=0), shape)
        out = term if out is None else out + term
    if ts[5] is not None:  # (the output is linear in the image and cval together)
        term = _zoom_cval_slope(input, zoom, shift, order, mode, npad, grid_mode, shape, dtype) * ts[5]
        out = term if out is None else out + term
    return out


def _zoom_cval_slope(input, zoom, shift, order, mode, npad, grid_mode, shape, dtype):
    """``d zoomed / d cval``: the output for a zero image and ``cval = 1``."""
    return zoomed(np.zeros(np.shape(input)), zoom, shift, order, mode, 1.0, npad, grid_mode, shape, dtype)


def _zoom_cval_vjp(g, ans, input, zoom, shift, order, mode, cval, npad, grid_mode, shape, dtype):
    slope = _zoom_cval_slope(input, zoom, shift, order, mode, npad, grid_mode, shape, dtype)
    return np.sum(np.real(g) * slope)


def _zoom_factor_vjp(g, ans, input, zoom, shift, order, mode, cval, npad, grid_mode, shape, dtype):
    slopes, index, _ = _zoom_slopes(input, zoom, shift, order, mode, cval, npad, grid_mode, shape)
    moved = index + (0.0 if shift is None else np.reshape(shift, (-1, 1)))
    return np.sum(slopes * moved * np.reshape(np.real(g), (1, -1)), axis=1)


def _zoom_shift_vjp(g, ans, input, zoom, shift, order, mode, cval, npad, grid_mode, shape, dtype):
    slopes, index, _ = _zoom_slopes(input, zoom, shift, order, mode, cval, npad, grid_mode, shape)
    gshift = np.sum(slopes * np.reshape(np.real(g), (1, -1)), axis=1)
    return gshift if zoom is None else gshift * zoom


def _zoom_weights(n, m, zoom, shift, d, order, mode, npad, grid_mode):
    """The ``m x n`` weights of axis ``d``: the one-dimensional C transform of each unit
    vector of length ``n``."""
    z = None if zoom is None else np.ascontiguousarray(zoom[d:d + 1], dtype=np.float64)
    s = None if shift is None else np.ascontiguousarray(shift[d:d + 1], dtype=np.float64)
    cols = np.zeros((n, m))
    for j, e in enumerate(np.eye(n)):
        _nd_image.zoom_shift(e, z, s, cols[j], order, mode, 0.0, npad, grid_mode)
    return cols.T


def _zoom_vjp(g, ans, input, zoom, shift, order, mode, cval, npad, grid_mode, shape, dtype):
    if not np.iscomplexobj(input):
        g = np.real(g)
    for d in range(np.ndim(input)):
        w = _zoom_weights(np.shape(input)[d], shape[d], zoom, shift, d, order, mode, npad, grid_mode)
        g = _along_axis(w.T, g, d)
    return g


def zoom_shift(input, zoom, shift, output, order, mode, cval, npad, grid_mode):
    """``_nd_image.zoom_shift(input, zoom, shift, output, ...)``."""
    _writable(output, "zoom/shift")[...] = zoomed(input, zoom, shift, order, mode, cval, npad, grid_mode,
                         np.shape(output), output.dtype)


def transformed(input, coordinates, order, mode, cval, npad, shape, dtype):
    """``_nd_image.geometric_transform`` as a pure function of the input and the
    coordinates of every output point (``coordinates``: ``ndim x points``)."""
    out = np.zeros(shape, dtype=dtype)
    _nd_image.geometric_transform(input, None, np.reshape(coordinates, (np.ndim(input),) + tuple(shape)),
                                  None, None, out, order, mode, cval, npad, None, None)
    return out


# The derivative in the coordinates.  SciPy's one-dimensional weights ``W_k(x)`` (order
# ``k``, the C function on unit vectors) satisfy the B-spline identity
# ``W_k'(x) = W_(k-1)(x + 1/2) - W_(k-1)(x - 1/2)`` in the modes whose edges only fold
# indices (checked for every order and mode in the tests); in ``constant`` mode the
# weights are ``mirror``'s inside ``[0, n - 1]`` and zero outside (the output is ``cval``
# there).  ``wrap`` (SciPy's legacy periodic mode) is refused.  Higher derivatives repeat
# the identity, so the rules are differentiable in turn.  Where the derivative asked for
# does not exist -- a point exactly on a knot where it jumps (an integer coordinate for
# order 1), or exactly on the edge in ``constant`` mode (the value jumps to ``cval``) --
# it is refused rather than one side chosen.
_CONSTANT, _MIRROR, _WRAP, _GRID_CONSTANT = 4, 3, 1, 6


_TRANSFORMS = "map_coordinates (and affine_transform, rotate, shift, geometric_transform)"


def _check_defined(n, x, order, mode, deriv, moving=None):
    """Refuse the ``deriv``-th derivative in the coordinates ``x`` where it does not exist:
    ``wrap`` mode; a point exactly on the edge in ``constant`` mode (the value jumps to
    ``cval``); a point exactly on a knot where that derivative jumps.  ``moving`` (forward
    mode: the coordinates' tangent) spares the points that do not move."""
    if not deriv or deriv > order:
        return
    x = np.reshape(x, -1)
    live = np.ones(x.shape, dtype=bool) if moving is None else np.reshape(moving, -1) != 0
    if mode == _WRAP and np.any(live):
        _refuse_parameter(_TRANSFORMS, "coordinates", " in mode 'wrap' (use 'grid-wrap')")
    if mode == _CONSTANT and np.any(live & ((x == 0) | (x == n - 1))):
        _refuse_parameter(_TRANSFORMS, "coordinates",
                          " at a point exactly on the image's edge in mode 'constant' (the value jumps to "
                          "cval just outside: no derivative exists there)")
    if order == deriv:
        for i in range(deriv + 1):
            at = x + (deriv / 2.0 - i)
            if np.any(live & np.isfinite(at) & (np.floor(at - 0.5) == at - 0.5)):
                _refuse_parameter(_TRANSFORMS, "coordinates",
                                  " at a point exactly on a knot of the order-%d spline (an integer for "
                                  "order 1): its derivative of order %d jumps there and does not exist"
                                  % (order, deriv))


def axis_weights(n, x, order, mode, npad, deriv):
    """``points x n``: the ``deriv``-th derivative in ``x`` of the one-dimensional
    interpolation weights of order ``order`` at the coordinates ``x`` (where it exists:
    the callers check with ``_check_defined``)."""
    x = np.ascontiguousarray(np.reshape(x, (1, -1)), dtype=np.float64)
    if deriv > order:
        return np.zeros((x.shape[1], n))
    base = _MIRROR if mode == _CONSTANT and deriv else mode
    total = np.zeros((x.shape[1], n))
    for i in range(deriv + 1):  # the deriv-th central difference of the lower order's weights
        at = x + (deriv / 2.0 - i)
        cols = np.zeros((n, x.shape[1]))
        for j, e in enumerate(np.eye(n)):
            _nd_image.geometric_transform(e, None, at, None, None, cols[j], order - deriv, base, 0.0, npad,
                                          None, None)
        total += (-1) ** i * math.comb(deriv, i) * cols.T
    if mode == _CONSTANT and deriv:
        inside = (x[0] >= 0) & (x[0] <= n - 1)
        total *= inside[:, None]
    return total


def _axis_weights_jvp(ts, ans, n, x, order, mode, npad, deriv):
    _check_defined(n, x, order, mode, deriv + 1, ts[1])
    return axis_weights(n, x, order, mode, npad, deriv + 1) * np.reshape(ts[1], (-1, 1))


def _axis_weights_vjp(g, ans, n, x, order, mode, npad, deriv):
    _check_defined(n, x, order, mode, deriv + 1)
    return np.reshape(np.sum(g * axis_weights(n, x, order, mode, npad, deriv + 1), axis=1), np.shape(x))


def _interpolated(input, weights):
    """``sum_j input[j] prod_d weights[d][p, j_d]`` for every point ``p``."""
    letters = "abcdefghijklmnopqrstuvwxyz"[:np.ndim(input)]
    spec = ",".join("z" + c for c in letters) + "," + letters + "->z"
    return np.einsum(spec, *weights, input)


def _coordinate_gradients(input, coordinates, order, mode, cval, npad, moving=None):
    """``d out[p] / d coordinates[e, p]`` for every axis ``e`` (``ndim x points``;
    ``moving``: the coordinates' tangent, in forward mode).  In ``grid-constant`` mode the
    coefficients beyond the edges are ``cval``: the output is ``cval`` plus the
    interpolation of ``input - cval`` (the weights sum to one)."""
    coordinates = np.reshape(coordinates, (np.ndim(input), -1))
    for d, n in enumerate(np.shape(input)):
        _check_defined(n, coordinates[d], order, mode, 1,
                       None if moving is None else np.reshape(moving, (np.ndim(input), -1))[d])
    if mode == _GRID_CONSTANT:
        input = input - cval
    dims = np.shape(input)
    values = [axis_weights(n, coordinates[d], order, mode, npad, 0) for d, n in enumerate(dims)]
    slopes = [axis_weights(n, coordinates[d], order, mode, npad, 1) for d, n in enumerate(dims)]
    return np.stack([_interpolated(input, values[:e] + [slopes[e]] + values[e + 1:])
                     for e in range(len(dims))])


def _transformed_jvp(ts, ans, input, coordinates, order, mode, cval, npad, shape, dtype):
    out = None
    if ts[0] is not None:
        out = transformed(ts[0], coordinates, order, mode, 0.0, npad, shape, dtype)
    if ts[1] is not None:
        _complex_coefficients(input)
        slopes = _coordinate_gradients(input, coordinates, order, mode, cval, npad, ts[1])
        term = np.reshape(np.sum(slopes * np.reshape(ts[1], np.shape(slopes)), axis=0), shape)
        out = term if out is None else out + term
    if ts[4] is not None:  # (the output is linear in the image and cval together)
        term = _transformed_cval_slope(input, coordinates, order, mode, npad, shape, dtype) * ts[4]
        out = term if out is None else out + term
    return out


def _transformed_cval_slope(input, coordinates, order, mode, npad, shape, dtype):
    """``d transformed / d cval``: the output for a zero image and ``cval = 1``."""
    return transformed(np.zeros(np.shape(input)), coordinates, order, mode, 1.0, npad, shape, dtype)


def _transformed_cval_vjp(g, ans, input, coordinates, order, mode, cval, npad, shape, dtype):
    return np.sum(np.real(g) * _transformed_cval_slope(input, coordinates, order, mode, npad, shape, dtype))


def _complex_coefficients(input):
    if np.iscomplexobj(input):  # pragma: no cover - SciPy transforms complex images part by part
        _refuse_parameter("map_coordinates", "coordinates", " of a complex image")


def _transformed_coordinates_vjp(g, ans, input, coordinates, order, mode, cval, npad, shape, dtype):
    _complex_coefficients(input)
    slopes = _coordinate_gradients(input, coordinates, order, mode, cval, npad)
    return np.reshape(slopes * np.reshape(np.real(g), (1, -1)), np.shape(coordinates))


def _point_weights(n, coords, order, mode, npad, chunk=1 << 20):
    """The one-dimensional C interpolation of each unit vector of length ``n`` at the
    coordinates ``coords`` (one axis's coordinate of every output point), kept sparse:
    ``(index, weight)``, each ``points x m`` for the at most ``m`` indices that weigh on
    each point (computed over chunks of points, so memory stays ``n x chunk / n``)."""
    coords = np.ascontiguousarray(np.reshape(coords, (1, -1)), dtype=np.float64)
    step = max(1, chunk // max(n, 1))
    blocks = []
    for start in range(0, coords.shape[1], step):
        part = coords[:, start:start + step]
        cols = np.zeros((n, part.shape[1]))
        for j, e in enumerate(np.eye(n)):
            _nd_image.geometric_transform(e, None, part, None, None, cols[j], order, mode, 0.0, npad,
                                          None, None)
        blocks.append(cols.T)
    rows = np.concatenate(blocks) if blocks else np.zeros((0, n))
    m = max(1, int(np.max(np.count_nonzero(rows, axis=1), initial=1)))
    index = np.argsort(rows == 0, axis=1, kind="stable")[:, :m]  # (the nonzero entries first)
    return index, np.take_along_axis(rows, index, axis=1)


def _transformed_vjp(g, ans, input, coordinates, order, mode, cval, npad, shape, dtype):
    """``gx[j] = sum_p g[p] prod_d w_d[p, j_d]`` over the few indices weighing on each point."""
    if not np.iscomplexobj(input):
        g = np.real(g)
    dims = np.shape(input)
    coordinates = np.reshape(coordinates, (len(dims), -1))
    flat = np.zeros((coordinates.shape[1], 1), dtype=np.intp)
    weight = np.ones((coordinates.shape[1], 1))
    for d, n in enumerate(dims):
        index, w = _point_weights(n, coordinates[d], order, mode, npad)
        flat = (flat[:, :, None] * n + index[:, None, :]).reshape(len(flat), -1)
        weight = (weight[:, :, None] * w[:, None, :]).reshape(len(weight), -1)
    contributions = np.reshape(g, (-1, 1)) * weight
    size = int(np.prod(dims))
    if np.iscomplexobj(contributions):
        total = (np.bincount(flat.ravel(), np.real(contributions).ravel(), size)
                 + 1j * np.bincount(flat.ravel(), np.imag(contributions).ravel(), size))
    else:
        total = np.bincount(flat.ravel(), contributions.ravel(), size)
    return np.reshape(total, dims)


def _output_coordinates(input, mapping, coordinates, matrix, offset, shape, extra_arguments,
                        extra_keywords):
    """The input coordinates of every output point (``ndim x points``), as the C function
    computes them."""
    if coordinates is not None:
        return np.reshape(coordinates, (np.ndim(input), -1))
    index = np.indices(shape, dtype=np.float64).reshape(len(shape), -1)
    if matrix is not None:
        offset = np.reshape(np.asarray(offset, np.float64), (-1, 1))
        return np.asarray(matrix, dtype=np.float64) @ index + offset
    args = () if extra_arguments is None else tuple(extra_arguments)
    kw = {} if extra_keywords is None else dict(extra_keywords)
    points = [mapping(tuple(int(i) for i in point), *args, **kw) for point in index.T]
    return np.asarray(points, dtype=np.float64).reshape(-1, np.ndim(input)).T


def geometric_transform(input, mapping, coordinates, matrix, offset, output, order, mode, cval, npad,
                        extra_arguments, extra_keywords):
    """``_nd_image.geometric_transform``: the output points' coordinates, then the
    interpolation at them."""
    coords = _output_coordinates(input, mapping, coordinates, matrix, offset, np.shape(output),
                                 extra_arguments, extra_keywords)
    out = transformed(input, coords, order, mode, cval, npad, np.shape(output), output.dtype)
    _writable(output, "map_coordinates/affine_transform/geometric_transform")[...] = out


plain_valued(_part_of_complex)  # (it reads the array's memory layout, not its values)
if _nd_image is not None:
    defjvp(spline_filtered, lambda ts, ans, input, order, axis, mode, dtype:
           None if ts[0] is None else spline_filtered(ts[0], order, axis, mode, dtype))
    defvjp(spline_filtered, _spline_filtered_vjp, None)
    defjvp(zoomed, _zoom_jvp)
    defvjp(zoomed, _zoom_vjp, _zoom_factor_vjp, _zoom_shift_vjp, None, None, _zoom_cval_vjp)
    defjvp(transformed, _transformed_jvp)
    defvjp(transformed, _transformed_vjp, _transformed_coordinates_vjp, None, None, _transformed_cval_vjp)
    defjvp(axis_weights, _axis_weights_jvp)
    defvjp(axis_weights, None, _axis_weights_vjp)
    for _f, _impl in ((_nd_image.spline_filter1d, spline_filter1d), (_nd_image.zoom_shift, zoom_shift),
                      (_nd_image.geometric_transform, geometric_transform)):
        defimpl(_f, _impl)
        FUNCTIONS.append(_f)
    # (every call: a ``mapping`` may close over a differentiated value, which its arguments
    # do not show; it then runs in Python, under the differentiation)
    defsolver(_nd_image.geometric_transform,
              lambda ctx, f, args, kwargs: overdub(ctx, geometric_transform, *args, **kwargs))


# ----------------------------------------------------------------------------------------
# Fourier-domain filters: ``fourier_gaussian``, ``fourier_uniform``, ``fourier_ellipsoid``
# (``_nd_image.fourier_filter``) and ``fourier_shift`` (``_nd_image.fourier_shift``)
# multiply their input elementwise by a weight that depends only on the shape and the
# parameters.  The weights are the C function applied to ones; the product is NumPy's, so
# both modes (and higher orders) follow.  The parameters (sigma, size, shift) are not
# differentiated: a differentiated one is refused.
# ----------------------------------------------------------------------------------------

_FOURIER_NAMES = {0: ("fourier_gaussian", "sigma"), 1: ("fourier_uniform", "size"),
                  2: ("fourier_ellipsoid", "size"), "shift": ("fourier_shift", "shift")}


def fourier_weights(shape, parameters, n, axis, kind, dtype):
    """The weights ``_nd_image.fourier_filter`` (``kind``: its filter type) or
    ``fourier_shift`` (``kind == "shift"``) multiplies an array of ``shape`` by."""
    out = np.zeros(shape, dtype=dtype)
    ones = np.ones(shape, dtype=np.float64)
    if kind == "shift":
        _nd_image.fourier_shift(ones, parameters, n, axis, out)
    else:
        _nd_image.fourier_filter(ones, parameters, n, axis, out, kind)
    return out


def _refuse_fourier_parameter(kind):
    function, argument = _FOURIER_NAMES.get(kind, ("fourier filter", "parameters"))
    _refuse_parameter(function, argument)


def _fourier_weights_jvp(ts, ans, shape, parameters, n, axis, kind, dtype):
    if ts[1] is not None:
        _refuse_fourier_parameter(kind)
    return None


def fourier_filter(input, sigmas, n, axis, output, filter_type):
    """``_nd_image.fourier_filter``: the input times the filter's weights."""
    weights = fourier_weights(np.shape(input), sigmas, n, axis, filter_type, output.dtype)
    _writable(output, _FOURIER_NAMES.get(filter_type, ("fourier filter",))[0])[...] = input * weights


def fourier_shift(input, shifts, n, axis, output):
    """``_nd_image.fourier_shift``: the input times the phase ramp of the shift."""
    weights = fourier_weights(np.shape(input), shifts, n, axis, "shift", output.dtype)
    _writable(output, "fourier_shift")[...] = input * weights


if _nd_image is not None:
    defjvp(fourier_weights, _fourier_weights_jvp)
    defvjp(fourier_weights, None, lambda g, ans, shape, parameters, n, axis, kind, dtype:
           _refuse_fourier_parameter(kind))
    for _f, _impl in ((_nd_image.fourier_filter, fourier_filter), (_nd_image.fourier_shift, fourier_shift)):
        defimpl(_f, _impl)
        FUNCTIONS.append(_f)


# ----------------------------------------------------------------------------------------
# Rank filters: ``rank_filter``, ``median_filter``, ``percentile_filter`` (and
# ``scipy.signal.medfilt``): the element of the given rank among the footprint's
# neighbours.  As the other filters: the image extended by the boundary mode (``np.pad``),
# the neighbours as shifted slices, then ``np.sort`` along the neighbours; the derivative is
# the selected element's.  Where the selected value is shared by different elements (or an
# element and ``cval``), the derivative does not exist: refused (NoRuleError), never one
# of the one-sided derivatives chosen silently.
# ----------------------------------------------------------------------------------------

def _neighbours(input, footprint, mode, cval, origins):
    """The stack (footprint elements first) of the shifted views of ``input`` (extended
    by ``mode``) that hold each output element's neighbours."""
    footprint = np.asarray(footprint, dtype=bool)
    ext = input
    shape = np.shape(input)
    for axis, (size, origin) in enumerate(zip(np.shape(footprint), origins)):
        before = size // 2 + origin
        ext = _padded(ext, axis, before, size - 1 - before, mode, cval)
    views = [ext[tuple(slice(o, o + n) for o, n in zip(offset, shape))]
             for offset in np.ndindex(*np.shape(footprint)) if footprint[offset]]
    return np.stack(views, axis=0)


def _ranked(input, rank, footprint, mode, cval, origins, function):
    """The ``rank``-th smallest neighbour of every element, refused where the selected value
    is shared by different elements (or by an element and the constant ``cval``): there the
    one-sided derivatives differ, and no derivative exists.  Copies of one element made by
    the boundary mode are that element (its derivative either way)."""
    neighbours = _neighbours(input, footprint, mode, cval, origins)
    # (np.sort's order, read through an index: copies of one element that the boundary mode
    # made tie, and move together -- no kink, as np.sort's rule would take it for one;
    # ties of different elements are refused below)
    order = np.argsort(neighbours, axis=0, kind="stable")[rank:rank + 1]
    selected = np.take_along_axis(neighbours, order, axis=0)[0]
    tied = neighbours == selected[None]  # (a comparison: plain booleans)
    source = _neighbours(np.arange(np.size(input)).reshape(np.shape(input)), footprint, mode, -1, origins)
    first = np.min(np.where(tied, source, np.size(input)), axis=0)
    last = np.max(np.where(tied, source, -2), axis=0)
    if np.any(first != last):
        from ..losses import NoRuleError
        raise NoRuleError("capstan: scipy.ndimage.%s: at %d output elements the selected value is "
                          "shared by different input elements (or by an element and cval); the "
                          "derivative does not exist there (its one-sided derivatives differ)"
                          % (function, int(np.count_nonzero(first != last))))
    return selected


def rank_filter(input, rank, footprint, output, mode, cval, origins):
    """``_nd_image.rank_filter``: the ``rank``-th smallest of the footprint's neighbours."""
    output[...] = _ranked(input, rank, footprint, mode, cval, origins,
                          "rank_filter (median_filter, percentile_filter)")


def rank_filter_1d(x, rank, size, x_out, mode, cval, origin):
    """``_rank_filter_1d.rank_filter``: the one-dimensional rank filter of ``size``."""
    x_out[...] = _ranked(x, rank, np.ones(size, dtype=bool), mode, cval, (origin,),
                         "rank_filter (median_filter, percentile_filter, scipy.signal.medfilt)")


try:
    from scipy.ndimage import _rank_filter_1d
except ImportError:  # pragma: no cover - older SciPy: every rank filter goes through _nd_image
    _rank_filter_1d = None
if _nd_image is not None:
    defimpl(_nd_image.rank_filter, rank_filter)
    FUNCTIONS.append(_nd_image.rank_filter)
if _rank_filter_1d is not None:
    defimpl(_rank_filter_1d.rank_filter, rank_filter_1d)
    FUNCTIONS.append(_rank_filter_1d.rank_filter)
