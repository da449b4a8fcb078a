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
import numpy as np

from .registry import defimpl

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
