"""Rules for ``numpy.fft`` and ``scipy.fft``: discrete Fourier transforms are linear.

Forward mode transforms the tangent with the same parameters.  Reverse mode applies
the adjoint transform:

* the adjoint of ``fft(., norm)`` is ``ifft(., norm=dual)`` and vice versa, where the
  dual of ``"backward"`` (the default) is ``"forward"`` and ``"ortho"`` is its own;
* ``n=``/``s=`` crop or zero-pad the input before transforming, so the cotangent is
  padded or cropped back to the input's length;
* ``rfft`` of a real input: the cotangent is zero-padded to the full spectrum, inverse
  transformed, and its real part taken;
* ``irfft`` reads a half spectrum as a Hermitian one: the cotangent is the ``rfft`` of
  the output's cotangent, with weight 2 on the bins that stand for two (every bin but
  the zero frequency and, for even ``n``, the Nyquist one).

``rfftn``/``irfftn``/``hfft``/``ihfft`` (and the 2-D spellings) are defined from those,
as NumPy defines them, so one rule per transform serves all.
"""
import operator

import numpy as np

from .registry import defimpl, defjvp, defvjp

_DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
_ONE_D = ("n", "axis", "norm")
_N_D = ("s", "axes", "norm")


def _bound(names, args, kw):
    p = dict(zip(names, args))
    p.update(kw)
    return p


def _without_out(kw):
    if "out" in kw:
        kw = dict(kw)
        del kw["out"]
    return kw


def _dual(norm):
    try:
        return _DUAL[norm]
    except (KeyError, TypeError):
        raise ValueError('Invalid norm value %r; should be "backward", "ortho" or "forward".'
                         % (norm,)) from None


def _fit(z, axis, length):
    """``z`` cropped or zero-padded to ``length`` along ``axis`` (the adjoint of the
    other direction's resizing)."""
    have = np.shape(z)[axis]
    if have > length:
        index = [slice(None)] * np.ndim(z)
        index[axis] = slice(0, length)
        return z[tuple(index)]
    if have < length:
        shape = list(np.shape(z))
        shape[axis] = length - have
        return np.concatenate([z, np.zeros(shape, dtype=np.result_type(z))], axis=axis)
    return z


def _like_input(g, x):
    return g if np.iscomplexobj(x) else np.real(g)


def _axes_nd(x, s, axes):
    nd = np.ndim(x)
    if axes is None:
        axes = range(nd) if s is None else range(nd - len(s), nd)
    return [operator.index(a) % nd for a in axes]


def _register(m):
    """The rules of the transforms of module ``m`` (``numpy.fft`` or ``scipy.fft``)."""
    for f in (m.fft, m.ifft, m.fftn, m.ifftn, m.rfft, m.irfft):
        defjvp(f, lambda ts, ans, x, *args, _f=f, **kw: _f(ts[0], *args, **_without_out(kw)))

    def complex_1d(inverse):
        def vjp(g, ans, x, *args, **kw):
            p = _bound(_ONE_D, args, kw)
            axis = operator.index(p.get("axis", -1)) % max(np.ndim(x), 1)
            gx = _fit(inverse(g, axis=axis, norm=_dual(p.get("norm"))), axis, np.shape(x)[axis])
            return (_like_input(gx, x),) + (None,) * len(args)
        return vjp

    def complex_nd(inverse):
        def vjp(g, ans, x, *args, **kw):
            p = _bound(_N_D, args, kw)
            axes = _axes_nd(x, p.get("s"), p.get("axes"))
            gx = inverse(g, axes=axes, norm=_dual(p.get("norm")))
            for a in axes:
                gx = _fit(gx, a, np.shape(x)[a])
            return (_like_input(gx, x),) + (None,) * len(args)
        return vjp

    def rfft_vjp(g, ans, x, *args, **kw):
        p = _bound(_ONE_D, args, kw)
        axis = operator.index(p.get("axis", -1)) % np.ndim(x)
        n = p.get("n") or np.shape(x)[axis]
        full = m.ifft(_fit(g, axis, n), axis=axis, norm=_dual(p.get("norm")))
        return (np.real(_fit(full, axis, np.shape(x)[axis])),) + (None,) * len(args)

    def irfft_vjp(g, ans, y, *args, **kw):
        p = _bound(_ONE_D, args, kw)
        axis = operator.index(p.get("axis", -1)) % np.ndim(y)
        n = p.get("n") or 2 * (np.shape(y)[axis] - 1)
        half = m.rfft(g, axis=axis, norm=_dual(p.get("norm")))
        weights = np.full(n // 2 + 1, 2.0)
        weights[0] = 1.0
        if n % 2 == 0:
            weights[-1] = 1.0
        shape = [1] * np.ndim(y)
        shape[axis] = n // 2 + 1
        gy = _fit(half * weights.reshape(shape), axis, np.shape(y)[axis])
        return (_like_input(gy, y),) + (None,) * len(args)

    defvjp(m.fft, complex_1d(m.ifft))
    defvjp(m.ifft, complex_1d(m.fft))
    defvjp(m.fftn, complex_nd(m.ifftn))
    defvjp(m.ifftn, complex_nd(m.fftn))
    defvjp(m.rfft, rfft_vjp)
    defvjp(m.irfft, irfft_vjp)

    def rfftn(x, s=None, axes=None, norm=None, *rest, **kw):
        """``rfft`` over the last axis, then ``fftn`` over the others (NumPy's definition)."""
        axes = _axes_nd(x, s, axes)
        s = [np.shape(x)[a] for a in axes] if s is None else list(s)
        kw = _without_out(kw)
        out = m.rfft(x, s[-1], axes[-1], norm, *rest, **kw)
        if len(axes) > 1:
            out = m.fftn(out, s[:-1], axes[:-1], norm, *rest, **kw)
        return out

    def irfftn(x, s=None, axes=None, norm=None, *rest, **kw):
        """``ifftn`` over all axes but the last, then ``irfft`` over the last."""
        axes = _axes_nd(x, s, axes)
        if s is None:
            s = [np.shape(x)[a] for a in axes]
            s[-1] = 2 * (s[-1] - 1)
        s = list(s)
        kw = _without_out(kw)
        if len(axes) > 1:
            x = m.ifftn(x, s[:-1], axes[:-1], norm, *rest, **kw)
        return m.irfft(x, s[-1], axes[-1], norm, *rest, **kw)

    def two_d(f):
        return lambda x, s=None, axes=(-2, -1), norm=None, *rest, **kw: f(x, s, axes, norm, *rest, **kw)

    defimpl(m.rfftn, rfftn)
    defimpl(m.irfftn, irfftn)
    defimpl(m.fft2, two_d(m.fftn))
    defimpl(m.ifft2, two_d(m.ifftn))
    defimpl(m.rfft2, two_d(rfftn))
    defimpl(m.irfft2, two_d(irfftn))
    # Hermitian input (output): the inverse real transforms of the conjugate, with the
    # normalization direction swapped (as both libraries define them)
    defimpl(m.hfft, lambda x, n=None, axis=-1, norm=None, *rest, **kw:
            m.irfft(np.conj(x), n, axis, _dual(norm), *rest, **_without_out(kw)))
    defimpl(m.ihfft, lambda x, n=None, axis=-1, norm=None, *rest, **kw:
            np.conj(m.rfft(x, n, axis, _dual(norm), *rest, **_without_out(kw))))
    if hasattr(m, "hfftn"):
        defimpl(m.hfftn, lambda x, s=None, axes=None, norm=None, *rest, **kw:
                irfftn(np.conj(x), s, axes, _dual(norm), *rest, **kw))
        defimpl(m.ihfftn, lambda x, s=None, axes=None, norm=None, *rest, **kw:
                np.conj(rfftn(x, s, axes, _dual(norm), *rest, **kw)))
        defimpl(m.hfft2, lambda x, s=None, axes=(-2, -1), norm=None, *rest, **kw:
                irfftn(np.conj(x), s, axes, _dual(norm), *rest, **kw))
        defimpl(m.ihfft2, lambda x, s=None, axes=(-2, -1), norm=None, *rest, **kw:
                np.conj(rfftn(x, s, axes, _dual(norm), *rest, **kw)))


_register(np.fft)
try:
    import scipy.fft
except ImportError:  # pragma: no cover - scipy is optional
    pass
else:
    _register(scipy.fft)


# ----------------------------------------------------------------------------- real transforms
def _along(z, axis, index, factor):
    """``z`` with its ``index``-th entry along ``axis`` multiplied by ``factor``."""
    w = np.ones(np.shape(z)[axis])
    w[index] = factor
    shape = [1] * np.ndim(z)
    shape[axis] = -1
    return z * w.reshape(shape)


def _register_real(m):
    """``scipy.fft``'s ``dct``, ``dst``, ``idct``, ``idst`` (every type, ``norm``,
    ``orthogonalize`` and ``n``) and their n-dimensional forms.  They are real linear maps:
    forward mode transforms the tangent; reverse mode applies the transpose.  With
    ``norm="ortho"`` (orthogonalized, the default there) a transform is orthogonal, its
    transpose its inverse.  Otherwise it is a constant multiple of the unnormalized
    transform of its type (the inverse's: type 2 <-> 3), whose transpose is a transform
    of the transposed type with one end weighted: DCT-II^T g = DCT-III(g, g_0 doubled),
    DCT-III^T g = DCT-II(g), its first entry halved, DCT-I^T g = c DCT-I(g / c) (c: 1 at the
    ends, 2 inside), DST-II^T g = DST-III(g, g_last doubled), DST-III^T g = DST-II(g), its
    last entry halved; types 4 and DST-I are symmetric."""
    names = ("type", "n", "axis", "norm", "overwrite_x", "workers", "orthogonalize")
    inverse_type = {1: 1, 2: 3, 3: 2, 4: 4}
    pairs = {m.dct: (m.dct, m.idct, False), m.idct: (m.dct, m.dct, True),
             m.dst: (m.dst, m.idst, False), m.idst: (m.dst, m.dst, True)}

    def unnormalized_transpose(base, t, g, axis):
        if base is m.dct:
            if t == 1:
                return _along(m.dct(_along(g, axis, slice(1, -1), 0.5), 1, axis=axis), axis, slice(1, -1), 2.0)
            if t == 2:
                return m.dct(_along(g, axis, 0, 2.0), 3, axis=axis)
            if t == 3:
                return _along(m.dct(g, 2, axis=axis), axis, 0, 0.5)
            return m.dct(g, 4, axis=axis)
        if t == 2:
            return m.dst(_along(g, axis, -1, 2.0), 3, axis=axis)
        if t == 3:
            return _along(m.dst(g, 2, axis=axis), axis, -1, 0.5)
        return m.dst(g, t, axis=axis)

    def rule(f):
        base, inverse, is_inverse = pairs[f]

        def jvp(ts, ans, x, *args, **kw):
            return f(ts[0], *args, **kw)

        def vjp(g, ans, x, *args, **kw):
            p = _bound(names, args, kw)
            t = operator.index(p.get("type", 2))
            n, norm = p.get("n"), p.get("norm")
            axis = operator.index(p.get("axis", -1)) % np.ndim(x)
            length = np.shape(x)[axis] if n is None else n
            if norm == "ortho" and p.get("orthogonalize") in (None, True):
                if is_inverse:
                    gx = base(g, t, axis=axis, norm="ortho")
                else:
                    gx = inverse(g, t, axis=axis, norm="ortho")
            else:
                bt = inverse_type[t] if is_inverse else t
                probe = np.cos(np.arange(length) * 0.7) + np.arange(length) / (length + 1.0)
                plain = base(probe, bt)
                mine = f(probe, t, norm=norm, orthogonalize=p.get("orthogonalize"))
                c = float(np.dot(mine, plain) / np.dot(plain, plain))
                if not np.allclose(mine, c * plain, rtol=1e-10, atol=1e-12 * np.max(np.abs(mine))):
                    raise ValueError("capstan: scipy.fft.%s(type=%d, norm=%r): no transpose rule for this "
                                     "normalization" % (f.__name__, t, norm))
                gx = c * unnormalized_transpose(base, bt, g, axis)
            return (_like_input(_fit(gx, axis, np.shape(x)[axis]), x),) + (None,) * len(args)

        defjvp(f, jvp)
        defvjp(f, vjp)

    for f in pairs:
        rule(f)

    def n_dimensional(one):
        def transform(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
                      orthogonalize=None):
            """The 1-D transform along each axis in turn (the n-D transform is separable)."""
            axes = _axes_nd(x, s, axes)
            sizes = [None] * len(axes) if s is None else list(s)
            for a, size in zip(axes, sizes):
                x = one(x, type, size, a, norm, orthogonalize=orthogonalize)
            return x
        return transform

    for nd, one in ((m.dctn, m.dct), (m.idctn, m.idct), (m.dstn, m.dst), (m.idstn, m.idst)):
        defimpl(nd, n_dimensional(one))


try:
    _register_real(scipy.fft)
except NameError:  # pragma: no cover - scipy is optional
    pass
