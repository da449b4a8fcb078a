"""Reference derivatives: the case's closed form, or careful finite differences.

The finite difference is a central difference of ``f(x + t v)`` in ``t``, improved twice
by Richardson extrapolation (error O(h^6)), with the step relative to ``|x|``.  The
difference of the last two extrapolations is kept as the error estimate: a case whose
estimate is not small against the derivative itself has a point where finite
differences cannot be trusted (a kink nearby, a noisy adaptive algorithm), and the
survey refuses it as a badly chosen case rather than judging capstan by it.
"""
import dataclasses
import functools
import warnings

import numpy as np


@dataclasses.dataclass
class Reference:
    """What a run is judged against: the plain value ``y``, the direction ``v``, the
    directional derivative ``jv`` (shaped like ``y``), the output weight ``w`` (shaped
    like ``y``), the weighted derivative ``d = Re <w, jv>`` that a reverse run must
    reproduce as ``Re <gradient, v>``, and an absolute error allowance ``atol``."""
    y: object
    v: object
    jv: object
    w: object
    d: float
    atol: float
    source: str
    kink: tuple = None


class UnreliableReference(Exception):
    """Finite differences disagree with themselves at this point: choose another point."""


def plain(f, x):
    """``f(x)`` run plainly, warnings and floating-point flags silenced."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return f(x.copy() if isinstance(x, np.ndarray) else x)


def _as_array(y):
    if isinstance(y, (list, tuple)):
        raise TypeError("a survey case must return a number or an array, got %s" % type(y).__name__)
    return np.asarray(y)


def _central(f, x, v, h):
    return (_as_array(plain(f, x + h * v)) - _as_array(plain(f, x - h * v))) / (2 * h)


def _one_sided(f, x, v, h):
    """Second-order one-sided differences ``(forward, backward)`` with step ``h``."""
    f0 = _as_array(plain(f, x))
    fp1, fp2, fm1, fm2 = (_as_array(plain(f, x + k * h * v)) for k in (1, 2, -1, -2))
    return (-3 * f0 + 4 * fp1 - fp2) / (2 * h), (3 * f0 - 4 * fm1 + fm2) / (2 * h)


def finite_difference(f, x, v, step=None):
    """``(derivative of f(x + t v) at t=0, error estimate)``.  A point where the one-sided
    derivatives disagree is a kink (a tie in a sort or a min, an assignment that switches),
    where a central difference averages two branches: it gets an infinite error estimate."""
    h = step if step is not None else 1e-2 * max(float(np.max(np.abs(x))), 0.1)
    d1, d2, d3 = (_central(f, x, v, h / k) for k in (1, 2, 4))
    r1 = (4 * d2 - d1) / 3
    r2 = (4 * d3 - d2) / 3
    best = (16 * r2 - r1) / 15
    err = float(np.linalg.norm(np.ravel(r2 - r1)))
    ahead, behind = _one_sided(f, x, v, h / 4)
    if not np.linalg.norm(np.ravel(ahead - behind)) <= 1e-2 * np.linalg.norm(np.ravel(best)) + 1e-6:
        err = np.inf
    return best, err


def _rng(case):
    seed = functools.reduce(lambda a, ch: (a * 131 + ord(ch)) % (2 ** 32), case.id, 7)
    return np.random.default_rng(seed)


def _random_like(rng, like):
    a = np.asarray(like)
    r = rng.standard_normal(a.shape)
    if np.iscomplexobj(a):
        r = r + 1j * rng.standard_normal(a.shape)
    return r


def direction(case):
    """The input direction: 1.0 for a real scalar, random (seeded by the case) otherwise."""
    x = case.x
    if np.ndim(x) == 0 and not np.iscomplexobj(x):
        return 1.0
    v = _random_like(_rng(case), x)
    v = v / np.max(np.abs(v))
    return complex(v) if np.ndim(x) == 0 else v


def reference(case):
    """The case's Reference; raises UnreliableReference for a badly chosen point."""
    x = case.x
    y = _as_array(plain(case.f, x))
    v = direction(case)
    if case.kink is not None:
        lo, hi = case.kink
        mid = (lo + hi) / 2
        source = "a kink: any of [%g, %g]" % (lo, hi)
        return Reference(y, v, np.asarray(mid), 1.0, mid, 0.0, source, case.kink)
    if case.ref is not None:
        jv = np.asarray(plain(lambda x: case.ref(x, v), x))
        if jv.shape != y.shape:
            raise AssertionError("%s: reference shape %s, output shape %s" % (case.id, jv.shape, y.shape))
        err, source = 0.0, "closed form"
        fd, fd_err = finite_difference(case.f, x, v, case.step)
        scale = float(np.linalg.norm(np.ravel(jv)))
        if not np.linalg.norm(np.ravel(fd - jv)) <= 1e-4 * scale + 1e-6 + 10 * fd_err:
            raise AssertionError("%s: closed form %s disagrees with finite differences %s"
                                 % (case.id, jv, fd))
    else:
        jv, err = finite_difference(case.f, x, v, case.step)
        source = "finite differences"
    scale = float(np.linalg.norm(np.ravel(jv)))
    if not np.all(np.isfinite(jv)) or not err <= 1e-5 * scale + 1e-9:
        raise UnreliableReference("%s: finite differences unreliable at x=%r (estimate %s, error %.3g)"
                                  % (case.id, x, jv, err))
    w = 1.0 if y.ndim == 0 and not np.iscomplexobj(y) else _random_like(_rng(case), y)
    if y.ndim == 0 and np.iscomplexobj(y):
        w = complex(w)
    d = float(np.real(np.vdot(w, jv)))
    return Reference(y, v, jv, w, d, 1e-9 + 100 * err, source)
