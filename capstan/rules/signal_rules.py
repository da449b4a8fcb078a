"""Rules for ``scipy.signal``'s recursive filters: ``lfilter`` (and so ``filtfilt``,
``lfiltic``-made states, ``cspline1d``...) and ``sosfilt`` (``sosfiltfilt``, ``decimate``),
differentiable in the signal ``x``, the initial state ``zi`` and the coefficients ``b``,
``a`` (``sos``), along any ``axis``, real or complex.

``scipy.signal.lfilter`` runs in its place a Python equivalent that calls one primitive,
``filter_with_state(b, a, x, zi, axis)``: the output ``y`` and the final state ``zf`` packed
along ``axis`` (``N + K`` samples, ``K = max(len(a), len(b)) - 1``; a missing ``zi`` is a zero
state).  Its rules, written with ``lfilter`` itself, rest on one fact about the transposed
direct form SciPy uses: with ``b``, ``a`` divided by ``a[0]``, a numerator ``c`` applied to
a signal ``s`` enters the filter's state equations as the injections ``c[k] s[n]``, and the
response ``(y, zf)`` is linear in the injections and in ``zi``.  So

* forward: ``d(y, zf) = F(b, a; dx, dzi) + F(db, a; x, 0) - F(da, a; y, 0)`` where ``F`` is
  the filter with its final state (the derivative in ``a[0]`` is that of the division);
* reverse: the cotangent ``w`` of the injections solves the filter's recursion backwards in
  time, ``sum_k conj(a[k]) w[n + k] = gy[n]``, started from the final state's cotangent
  ``w[N + i] = gzf[i]``: ``lfilter([1], conj(a), .)`` on the reversed cotangent, preceded by
  ``K`` samples that set that start exactly.  Then ``gx[n] = sum_k conj(b[k]) w[n + k]``,
  ``gzi = w[:K]``, ``gb[k] = sum_n w[n + k] conj(x[n])``, ``ga[k] = -sum_n w[n + k] conj(y[n])``.

``scipy.signal.sosfilt`` runs as the cascade of its second-order sections through
``lfilter`` (its compiled core, which filters in place, never sees a differentiated value).

Both rules call ``lfilter``, which has these rules, so they are differentiated in turn
(Hessians).
"""
import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from .registry import conj, defimpl, defjvp, defvjp

try:
    import scipy.signal as _signal
    from scipy.signal import _sigtools
    from scipy.signal._filter_design import _validate_sos
except ImportError:  # pragma: no cover - scipy is optional
    _signal = None

#: the functions this table gives entries (tests/test_signal_rules.py checks them)
FUNCTIONS = []


def _along(a, axis, start, stop=None):
    index = [slice(None)] * np.ndim(a)
    index[axis] = slice(start, stop)
    return a[tuple(index)]


def _reversed(a, axis):
    return np.flip(a, axis=axis)


def _state_shape(x, axis, k):
    shape = list(np.shape(x))
    shape[axis] = k
    return tuple(shape)


def filter_with_state(b, a, x, zi, axis):
    """``lfilter(b, a, x, axis, zi)`` as one array: ``y`` followed by the final state
    ``zf`` along ``axis`` (``zi=None``: a zero initial state)."""
    k = max(len(a), len(b)) - 1
    if zi is None:
        y = _signal.lfilter(b, a, x, axis=axis)
        if k == 0:
            return y
        zi = np.zeros(_state_shape(x, axis, k), dtype=y.dtype)
    y, zf = _signal.lfilter(b, a, x, axis=axis, zi=zi)
    return np.concatenate([y, zf.astype(y.dtype)], axis=axis)


def _real_like(g, like):
    return g if np.iscomplexobj(like) else np.real(g)


def _normalized(b, a):
    a0 = a[0]
    return b / a0, a / a0


def _numerator(c, k):
    """Numerator ``c`` padded with zeros to ``k + 1`` taps (the filter's state keeps its
    ``k`` elements whichever coefficient vector is the longer)."""
    if len(c) > k:
        return c
    return np.concatenate([c, np.zeros(k + 1 - len(c), dtype=np.result_type(c))])


def _filter_jvp(ts, ans, b, a, x, zi, axis):
    db, da, dx, dzi = ts[:4]
    n = np.shape(x)[axis]
    k = max(len(a), len(b)) - 1
    y = _along(ans, axis, 0, n)
    bn, an = _normalized(b, a)
    out = None
    if dx is not None or dzi is not None:
        if dx is None:
            dx = np.zeros(np.shape(x), dtype=np.result_type(dzi))
        out = filter_with_state(_numerator(bn, k), an, dx, dzi, axis)
    if da is not None:  # (the division by a[0]: d(c / a0) = (dc - (c / a0) da0) / a0)
        db = (-bn * da[0] if db is None else db - bn * da[0]) / a[0]
        dan = (da - an * da[0]) / a[0]
        term = -filter_with_state(_numerator(dan, k), an, y, None, axis)
        out = term if out is None else out + term
    elif db is not None:
        db = db / a[0]
    if db is not None:
        term = filter_with_state(_numerator(db, k), an, x, None, axis)
        out = term if out is None else out + term
    return out


def _filter_vjp(g, ans, b, a, x, zi, axis):
    n = np.shape(x)[axis]
    k = max(len(a), len(b)) - 1
    y = _along(ans, axis, 0, n)
    bn, an = _normalized(b, a)
    bc, ac = conj(bn), conj(an)
    gy = _along(g, axis, 0, n)
    if k:  # the start that makes the backward recursion's first K outputs the state's cotangent
        start = _signal.lfilter(ac, [1.0], _reversed(_along(g, axis, n), axis), axis=axis)
        w_back = _signal.lfilter([1.0], ac, np.concatenate([start, _reversed(gy, axis)], axis=axis),
                                 axis=axis)
    else:
        w_back = _signal.lfilter([1.0], ac, _reversed(gy, axis), axis=axis)
    w = _reversed(w_back, axis)  # the injections' cotangent, N + K samples
    gx = _reversed(_along(_signal.lfilter(bc, [1.0], w_back, axis=axis), axis, k), axis)
    gzi = None if zi is None else _real_like(_along(w, axis, 0, k), zi)
    gbn = np.stack([np.sum(_along(w, axis, j, j + n) * conj(x)) for j in range(len(b))])
    gan = -np.stack([np.sum(_along(w, axis, j, j + n) * conj(y)) for j in range(len(a))])
    a0c = conj(a[0])
    gb = gbn / a0c
    ga = gan / a0c
    ga0 = -(np.sum(gbn * conj(b)) + np.sum(gan * conj(a))) / (a0c * a0c)
    ga = ga + ga0 * (np.arange(len(a)) == 0)
    return (_real_like(gb, b), _real_like(ga, a), _real_like(gx, x), gzi, None)


def lfilter(b, a, x, axis=-1, zi=None):
    """``scipy.signal.lfilter`` through ``filter_with_state``: the output, and the final
    state when ``zi`` is given."""
    b = np.atleast_1d(b)
    a = np.atleast_1d(a)
    x = np.asarray(x)
    if b.ndim != 1 or a.ndim != 1 or not b.size or not a.size or x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        return filter_with_state(b, a, x, zi, axis)  # (SciPy's own error)
    axis = axis % x.ndim
    n = np.shape(x)[axis]
    if zi is None:
        return _along(filter_with_state(b, a, x, None, axis), axis, 0, n)
    zi = np.asarray(zi)
    k = max(len(a), len(b)) - 1
    expected = _state_shape(x, axis, k)
    if np.ndim(zi) == x.ndim and np.shape(zi) != expected and all(
            z == e or (z == 1 and i != axis) for i, (z, e) in enumerate(zip(np.shape(zi), expected))):
        zi = np.broadcast_to(zi, expected)  # (lfilter expands singleton axes of zi)
    out = filter_with_state(b, a, x, zi, axis)
    return _along(out, axis, 0, n), _along(out, axis, n)


def sosfilt(sos, x, axis=-1, zi=None):
    """``scipy.signal.sosfilt``: the cascade of its second-order sections, each through
    ``lfilter`` with its own state (``zi[s]``); returns the final states stacked as SciPy
    does when ``zi`` is given."""
    x = np.asarray(x)
    sos, n_sections = _validate_sos(sos)
    axis = normalize_axis_index(axis, x.ndim)
    shape = (n_sections,) + _state_shape(x, axis, 2)
    if zi is not None and np.shape(zi) != shape:
        raise ValueError("Invalid zi shape. With axis=%r, an input with shape %r, and an sos array "
                         "with %d sections, zi must have shape %r, got %r."
                         % (axis, x.shape, n_sections, shape, np.shape(zi)))
    signal, states = x, []
    for s in range(n_sections):
        if zi is None:
            signal = _signal.lfilter(sos[s, :3], sos[s, 3:], signal, axis=axis)
        else:
            signal, state = _signal.lfilter(sos[s, :3], sos[s, 3:], signal, axis=axis, zi=zi[s])
            states.append(state)
    return signal if zi is None else (signal, np.stack(states))


_BOUNDARIES = {0: "constant", 1 << 2: "symmetric", 2 << 2: "wrap"}  # (_sigtools' codes)


def convolve2d(in1, in2, flip, mode, boundary, fillvalue):
    """``scipy.signal._sigtools._convolve2d``: the two-dimensional convolution (``flip``)
    or correlation of ``in1`` with ``in2``, ``in1`` extended beyond its edges by
    ``boundary``; the ``full`` result (a sum of shifted slices of the extended ``in1``,
    weighted by ``in2``'s elements), cropped for ``same`` (centred) and ``valid``."""
    pad = _BOUNDARIES.get(boundary)
    if pad is None or mode not in (0, 1, 2):
        raise ValueError("capstan: scipy.signal.convolve2d/correlate2d: boundary code %r and mode "
                         "code %r have no derivative rule" % (boundary, mode))
    in1, in2 = np.asarray(in1), np.asarray(in2)
    (m, n), (p, q) = np.shape(in1), np.shape(in2)
    widths = ((p - 1, p - 1), (q - 1, q - 1))
    ext = (np.pad(in1, widths, mode="constant", constant_values=fillvalue) if pad == "constant"
           else np.pad(in1, widths, mode=pad))
    kernel = in2[::-1, ::-1] if flip else in2
    full = 0.0
    for a in range(p):
        for b in range(q):
            full = full + kernel[a, b] * ext[a:a + m + p - 1, b:b + n + q - 1]
    if mode == 2:
        return full
    if mode == 1:
        top, left = (p - 1) // 2 if flip else p // 2, (q - 1) // 2 if flip else q // 2
        return full[top:top + m, left:left + n]
    return full[p - 1:m, q - 1:n]


def correlate_nd(in1, in2, out, mode):
    """``scipy.signal._sigtools._correlateND`` (behind ``convolve``/``correlate`` with the
    direct method in any dimension): the correlation ``sum_j conj(in2[j]) in1[k + j - o]``
    (``in1`` zero beyond its edges) over the output's shape, starting at offset ``o`` =
    ``n2 - 1`` (mode 0, valid), ``(n2 - 1) // 2`` (1, same) or 0 (2, full, on an ``in1``
    SciPy has already zero-padded).  C fills ``out``; this returns a new array."""
    if mode not in (0, 1, 2):
        raise ValueError("capstan: scipy.signal._sigtools._correlateND: mode code %r has no derivative rule"
                         % (mode,))
    in1, in2 = np.asarray(in1), np.asarray(in2)
    n1, n2, shape = np.shape(in1), np.shape(in2), np.shape(out)
    start = [m - 1 if mode == 0 else ((m - 1) // 2 if mode == 1 else 0) for m in n2]
    widths = [(m - 1, max(0, o + s - n)) for m, o, s, n in zip(n2, shape, start, n1)]
    ext = np.pad(in1, widths)
    weights = conj(in2)
    total = np.zeros(shape, dtype=np.result_type(in1, in2, out))
    for j in np.ndindex(*n2):
        total = total + weights[j] * ext[tuple(slice(s + i, s + i + o) for s, i, o in zip(start, j, shape))]
    return total


def upfirdn(h, x, up=1, down=1, axis=-1, mode="constant", cval=0):
    """``scipy.signal.upfirdn`` (behind ``resample_poly`` and ``decimate(ftype="fir")``):
    ``x`` upsampled by ``up`` (zeros between samples), filtered by the FIR filter ``h``
    (``lfilter(h, [1], .)`` over the full length), then every ``down``-th sample kept.
    Linear in ``x`` and in ``h``.  Only the zero extension (``mode="constant"``,
    ``cval=0``, the default) is covered."""
    if mode != "constant" or not (cval is None or (np.ndim(cval) == 0 and cval == 0)):
        from ..losses import NoRuleError
        raise NoRuleError("capstan: scipy.signal.upfirdn(..., mode=%r, cval=%r) has no derivative rule "
                          "(only the default zero extension, mode='constant' with cval=0, is covered)"
                          % (mode, cval))
    h = np.asarray(h)
    x = np.asarray(x)
    up, down = int(up), int(down)
    if h.ndim != 1 or h.size == 0:
        raise ValueError("h must be 1-D with non-zero length")  # (SciPy's checks and messages)
    if up < 1 or down < 1:
        raise ValueError("Both up and down must be >= 1")
    axis = normalize_axis_index(axis, max(x.ndim, 1))
    n = np.shape(x)[axis]
    dtype = np.result_type(h.dtype, x.dtype, np.float32)
    if up > 1:  # (each sample followed by up - 1 zeros, the last ones dropped)
        zeros = np.zeros(np.shape(x) + (up - 1,), dtype=x.dtype)
        spread = np.concatenate([np.expand_dims(x, -1), zeros], axis=-1)
        spread = np.moveaxis(spread, axis, -2)
        spread = np.reshape(spread, np.shape(spread)[:-2] + (n * up,))
        x = np.moveaxis(spread, -1, axis)
        x = _along(x, axis, 0, (n - 1) * up + 1)
    tail = np.zeros(_state_shape(x, axis, len(h) - 1), dtype=x.dtype)
    full = _signal.lfilter(h, np.ones(1, dtype=h.dtype), np.concatenate([x, tail], axis=axis), axis=axis)
    index = [slice(None)] * np.ndim(full)
    index[axis] = slice(None, None, down)
    return full[tuple(index)].astype(dtype, copy=False)


if _signal is not None:
    defjvp(filter_with_state, _filter_jvp)
    defvjp(filter_with_state, _filter_vjp)
    defimpl(_signal.lfilter, lfilter)
    defimpl(_signal.sosfilt, sosfilt)
    defimpl(_sigtools._convolve2d, convolve2d)
    defimpl(_sigtools._correlateND, correlate_nd)
    defimpl(_signal.upfirdn, upfirdn)
    FUNCTIONS += [filter_with_state, _signal.lfilter, _signal.sosfilt, _sigtools._convolve2d, _sigtools._correlateND,
                  _signal.upfirdn]
