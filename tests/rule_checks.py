"""Shared checks for rule tables, run through the public API (``capstan.jvp``,
``capstan.pullback``, ``capstan.hessian``), so that what is tested is what a user's
call of the public function meets.

For a case ``f(*args, **kw)`` differentiated in the positions ``diff``:

* forward: the tangent against central finite differences (Richardson-extrapolated);
* reverse: the cotangents against the forward tangent by the dot-product identity
  ``Re<g, J t> == Re<J* g, t>``;
* second order: ``hessian`` of a fixed random weighting of the (real) outputs,
  symmetric, and times random directions against central differences of ``gradient``.

Tuple results (``eigh``, ``airy``, ``logsumexp(..., return_sign=True)``) are checked
component by component.
"""
import zlib

import numpy as np

import capstan

rng = np.random.default_rng(20261123)


def reseed(name):
    """Restart the generator from ``name`` (each test module, before making its inputs,
    so that they do not depend on which modules were imported first)."""
    global rng
    rng = np.random.default_rng(zlib.crc32(name.encode()))


def P(*shape):  # positive, away from zero
    return rng.uniform(0.2, 0.9, shape) if shape else float(rng.uniform(0.2, 0.9))


def R(*shape):
    return rng.standard_normal(shape) if shape else float(rng.standard_normal())


def C(*shape):
    if not shape:
        return complex(rng.standard_normal(), rng.standard_normal())
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


class Case:
    """``f(*args, **kw)`` differentiated in the positions ``diff`` (default: every float
    or float-array argument)."""

    def __init__(self, f, *args, diff=None, name=None, hessian=True, rtol=1e-6, **kw):
        self.f, self.args, self.kw, self.rtol, self.hessian = f, args, kw, rtol, hessian
        self.diff = [i for i, a in enumerate(args) if _inexact(a)] if diff is None else diff
        self.name = name

    def __repr__(self):
        if self.name:
            return self.name
        fname = getattr(self.f, "__name__", repr(self.f))
        shapes = ",".join(_describe(a) for a in self.args)
        kws = "".join(",%s=%r" % kv for kv in self.kw.items())[:40]
        return "%s(%s%s)" % (fname, shapes, kws)

    def call(self, *diff_values):
        args = [a.copy() if isinstance(a, np.ndarray) else a for a in self.args]
        for i, v in zip(self.diff, diff_values):
            args[i] = v
        return self.f(*args, **self.kw)

    def primals(self):
        return tuple(self.args[i] for i in self.diff)


def _describe(a):
    if isinstance(a, np.ndarray):
        return ("c" if a.dtype.kind == "c" else "") + str(a.shape)
    if isinstance(a, complex):
        return "c"
    return repr(a) if isinstance(a, (int, str, type(None), bool)) else type(a).__name__


def _inexact(a):
    return isinstance(a, (float, complex)) or (isinstance(a, np.ndarray) and a.dtype.kind in "fc")


def like(a):
    """A random value shaped (and typed) like ``a``."""
    shape = np.shape(a)
    t = rng.standard_normal(shape)
    if np.iscomplexobj(a):
        t = t + 1j * rng.standard_normal(shape)
    return t if isinstance(a, np.ndarray) else t[()].item()


def parts(y):
    """The outputs of a call as a list of arrays (one per result of a tuple)."""
    if isinstance(y, tuple):
        return [np.asarray(e) for e in y]
    return [np.asarray(y)]


def _rdot(a, b):
    return float(np.real(np.vdot(np.asarray(a), np.asarray(b))))


def close(a, b, rtol=1e-6, atol=1e-7):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * scale)


def finite_difference(fn, primals, tans, h=1e-3):
    """Directional derivative of ``fn`` by central differences with one Richardson step."""
    def central(step):
        plus = parts(fn(*[p + step * t for p, t in zip(primals, tans)]))
        minus = parts(fn(*[p - step * t for p, t in zip(primals, tans)]))
        return [(a - b) / (2 * step) for a, b in zip(plus, minus)]
    coarse, fine = central(h), central(h / 2)
    return [(4 * f - c) / 3 for f, c in zip(fine, coarse)]


def check_forward(case):
    reseed("forward " + repr(case))
    primals = case.primals()
    tans = tuple(like(p) for p in primals)
    y, t = capstan.jvp(case.call, primals, tans)
    for got, want in zip(parts(y), parts(case.call(*primals))):
        close(got, want, 1e-10, 1e-12)
    for got, want in zip(parts(t), finite_difference(case.call, primals, tans)):
        close(got, want, case.rtol, case.rtol)


def check_reverse(case):
    reseed("reverse " + repr(case))
    primals = case.primals()
    tans = tuple(like(p) for p in primals)
    _, t = capstan.jvp(case.call, primals, tans)
    y, back = capstan.pullback(case.call, *primals)
    gs = [like(p) if np.ndim(p) else like(p[()].item()) for p in parts(y)]
    cots = back(tuple(gs) if isinstance(y, tuple) else gs[0])
    assert len(cots) == len(primals)
    for c, p in zip(cots, primals):  # every cotangent is shaped (and typed) like its argument
        assert np.shape(c) == np.shape(p)
        if not np.iscomplexobj(p):
            assert not np.iscomplexobj(c)
    lhs = sum(_rdot(g, ti) for g, ti in zip(gs, parts(t)))
    rhs = sum(_rdot(c, ti) for c, ti in zip(cots, tans))
    close(lhs, rhs, 1e-8, 1e-10)


def check_second_order(case, h=1e-3):
    """Hessian of ``sum(w * real(outputs))`` over the real differentiated arguments, packed
    into one vector, against central differences of the gradient."""
    reseed("second order " + repr(case))
    primals = case.primals()
    shapes = [np.shape(p) for p in primals]
    sizes = [int(np.prod(s)) for s in shapes]
    x0 = np.concatenate([np.ravel(p) for p in primals])
    weights = [like(np.real(p)) for p in parts(case.call(*primals))]

    def scalar(x):
        args, start = [], 0
        for shape, size, p in zip(shapes, sizes, primals):
            piece = x[start:start + size]
            args.append(np.reshape(piece, shape) if isinstance(p, np.ndarray) else piece[0])
            start += size
        return sum(np.sum(w * np.real(o)) for w, o in zip(weights, parts_of(case.call(*args))))

    H = capstan.hessian(scalar, x0)
    np.testing.assert_allclose(H, H.T, rtol=1e-7, atol=1e-9 * max(1.0, np.max(np.abs(H))))
    def grad(x):
        return capstan.gradient(scalar, x)[0]

    for _ in range(2):  # H v against differences of gradients along random directions v
        v = rng.standard_normal(x0.size)
        fd = finite_difference(grad, (x0,), (v,), h)[0]
        close(H @ v, fd, 1e-6, 1e-6)


def parts_of(y):
    """``parts`` without converting (the values may be differentiated)."""
    return list(y) if isinstance(y, tuple) else [y]
