"""Survey cases: the examples named in issue 8, each as written there (each is a sample
of a class that the library tables cover more widely)."""
import decimal
import heapq
import json
import math
import statistics

import mpmath
import numpy as np
import scipy.integrate
import scipy.interpolate
import scipy.linalg
import scipy.optimize
import scipy.signal
from numpy.lib.stride_tricks import as_strided, sliding_window_view

import capstan

from . import Table

T = Table("issue")
add = T.add
X = 0.7
V = np.array([0.9, 0.2, 1.3, 0.5])
c = np.array([0.5, -0.2, 0.8])
one = lambda x: 1.0  # noqa: E731

# ----------------------------------------------------------------------------- generators into C functions
add("math.fsum(x * i for i in (1, 2, 3))", lambda x: math.fsum(x * i for i in (1, 2, 3)), X, d=lambda x: 6.0)
add("statistics.fmean(x * k for k in range(1, 5))", lambda x: statistics.fmean(x * k for k in range(1, 5)), X,
    d=lambda x: 2.5)
add("statistics.covariance", lambda x: statistics.covariance([x, 2.0, 3.0 * x], [1.0, 0.5, 2.0]), X)
add("statistics.geometric_mean", lambda x: statistics.geometric_mean([x, 2.0, 3.0]), X)
add("np.fromiter", lambda x: np.fromiter((x * k for k in range(1, 4)), float), X)

# ----------------------------------------------------------------------------- C calling back closures
add("scipy.integrate.quad", lambda p: scipy.integrate.quad(lambda t: p * t ** 2, 0, 1)[0], X,
    d=lambda p: 1 / 3)
add("scipy.optimize.brentq", lambda p: scipy.optimize.brentq(lambda t: t * t - p, 0.0, 2.0, xtol=1e-14), X,
    d=lambda p: 0.5 / math.sqrt(p))
add("scipy.optimize.fsolve", lambda p: scipy.optimize.fsolve(lambda t: t * t - p, 1.0, xtol=1e-13)[0], X,
    d=lambda p: 0.5 / math.sqrt(p))
add("odeint closure over the parameter",
    lambda p: scipy.integrate.odeint(lambda y, t: -p * y, 1.0, [0.0, 1.0], rtol=1e-11, atol=1e-12)[-1, 0], X,
    d=lambda p: -math.exp(-p), rtol=1e-5)

# ----------------------------------------------------------------------------- in-place writes
add("np.median (ndarray.sort on a copy)", np.median, V)
add("np.place", lambda x: _place(x), V)
add("np.fill_diagonal", lambda x: _fill_diagonal(x), np.array([[1.0, 0.3], [0.2, 0.8]]))
add("out= argument", lambda x: np.multiply(x, x, out=np.empty(4)), V)
spline = scipy.interpolate.CubicSpline([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 0.5, 2.0])
add("CubicSpline at a differentiated point",
    lambda t: scipy.interpolate.CubicSpline([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 0.5, 2.0])(t), 1.3,
    ref=lambda t, v: spline.derivative()(t) * v)

# ----------------------------------------------------------------------------- views and special matrices
add("as_strided", lambda x: as_strided(x, shape=(3, 2), strides=(8, 8)) * 1.0, V)
add("sliding_window_view", lambda x: sliding_window_view(x, 2) * 1.0, V)
add("scipy.linalg.toeplitz", scipy.linalg.toeplitz, V[:3])
add("ndarray.flat", lambda x: np.array(list(x.flat)) ** 2, V)
add("np.nditer", lambda x: sum(float(v) ** 2 for v in np.nditer(x)), V)
add("np.poly1d", lambda x: np.poly1d([1.0, 2.0, 3.0])(x), X, d=lambda x: 2 * x + 2)
add("scipy.linalg.expm (forward returns the direction)", scipy.linalg.expm,
    np.array([[0.1, 0.4], [0.3, 0.2]]),
    ref=lambda x, v: scipy.linalg.expm_frechet(x, v, compute_expm=False))
add("scipy.signal.sosfilt", lambda x: scipy.signal.sosfilt(scipy.signal.butter(2, 0.3, output="sos"), x),
    np.linspace(0.0, 1.0, 8) ** 2)

# ----------------------------------------------------------------------------- conversions: an error, not 0
add("mpmath float conversion inside a bare except", lambda x: _mpmath_or_plain(x), X, d=math.cos)
add("float(mpmath.mpf(x) ** 2)", lambda x: float(mpmath.mpf(x) ** 2), X, d=lambda x: 2 * x)
add("float(str(x))", lambda x: float(str(x)), X, d=one)
add("float(format(x, '.17g'))", lambda x: float(format(x, ".17g")), X, d=one)
add("float(repr(x))", lambda x: float(repr(x)), X, d=one)
add("float('%.17g' % x)", lambda x: float("%.17g" % x), X, d=one)
add("json.loads(json.dumps(x))", lambda x: json.loads(json.dumps(x)), X, d=one)
add("float(Decimal(str(x)))", lambda x: float(decimal.Decimal(str(x))), X, d=one)
add("float(Decimal(x))", lambda x: float(decimal.Decimal(x)), X, d=one)
add("float.fromhex(x.hex())", lambda x: float.fromhex(x.hex()), X, d=one)
add("struct round trip", lambda x: __import__("struct").unpack("d", __import__("struct").pack("d", x))[0], X,
    d=one)
add("json.dumps({'a': x})", lambda x: json.loads(json.dumps({"a": x}))["a"] * 2, X, d=lambda x: 2.0)
add("heapq.nsmallest over differentiated values", lambda x: sum(heapq.nsmallest(2, [3 * x, x, 5.0])), X,
    d=lambda x: 4.0)

# ----------------------------------------------------------------------------- broadcasting against constants
add("jvp(lambda x: x + c) with c an array", lambda x: x + c, 2.0, d=lambda x: np.ones(3))
add("D(lambda x: np.sum(x + c))", lambda x: np.sum(x + c), 2.0, d=lambda x: 3.0)
add("np.sum(x * c) scalar x", lambda x: np.sum(x * c), 2.0, d=lambda x: np.sum(c))
add("np.mean(x - c) scalar x", lambda x: np.mean(x - c), 2.0, d=lambda x: 1.0)

# ----------------------------------------------------------------------------- kinks and modulo
add("abs at 0", abs, 0.0, kink=(-1.0, 1.0))
add("math.fabs at 0", math.fabs, 0.0, kink=(-1.0, 1.0))
add("np.abs at 0", np.abs, 0.0, kink=(-1.0, 1.0))
add("max(x, 0) at 0", lambda x: max(x, 0.0), 0.0, kink=(0.0, 1.0))
add("np.maximum(x, 0) at 0", lambda x: np.maximum(x, 0.0), 0.0, kink=(0.0, 1.0))
add("np.clip(x, 0, 1) at 0", lambda x: np.clip(x, 0.0, 1.0), 0.0, kink=(0.0, 1.0))
add("np.linalg.norm([x, 0]) at 0", lambda x: np.linalg.norm(np.array([x, 0.0])), 0.0, kink=(-1.0, 1.0))
add("math.hypot(x, 0) at 0", lambda x: math.hypot(x, 0.0), 0.0, kink=(-1.0, 1.0))
add("0.4000006104218249 % y", lambda y: 0.4000006104218249 % y, -1.4900001044317974, d=lambda y: 1.0)
add("x % 0.3", lambda x: x % 0.3, X, d=one)
add("np.mod(0.4, y) negative y", lambda y: np.mod(0.4000006104218249, y), -1.4900001044317974,
    d=lambda y: 1.0)

# ----------------------------------------------------------------------------- crashes named in the issue
add("np.partition", lambda x: np.partition(x, 1), V)
add("np.nan_to_num", lambda x: np.nan_to_num(x * x), V)
add("np.linalg.norm of a list", lambda x: np.linalg.norm([x, 2.0 * x]), X, d=lambda x: math.sqrt(5.0))
add("np.moveaxis(a, source=0, destination=1)", lambda a: np.moveaxis(a, source=0, destination=1),
    np.array([[1.0, 0.3], [0.2, 0.8]]))
add("np.r_[x] scalar", lambda x: np.r_[x] * 2, X)
add("np.r_[x] array", lambda x: np.r_[x] * 2, V)
add("user class with a keyword named method", lambda x: _Model(x, method="fast").value(), X,
    d=lambda x: 2 * x)
add("np.ptp", np.ptp, V)
add("np.meshgrid", lambda x: np.meshgrid(x, x[:2])[0] * 2, V)
add("np.poly1d coefficients", lambda x: np.poly1d(x)(0.5), V)
add("np.cov(x, y)", lambda x: np.cov(x, V[::-1]), V)

# ----------------------------------------------------------------------------- nesting
add("D(sum(sin(jacobian(sin, s * c))))", lambda s: np.sum(np.sin(capstan.jacobian(np.sin, s * c))), 1.0)


def _place(x):
    y = np.zeros(4)
    np.place(y, x > 0.6, x[x > 0.6] ** 2)
    return y


def _fill_diagonal(x):
    y = x.copy()
    np.fill_diagonal(y, x[0, 1] * 3)
    return y


def _mpmath_or_plain(x):
    try:
        return float(mpmath.sin(x))
    except:  # noqa: E722 -- the bare except is the point of the case
        return math.sin(x)


class _Model:
    def __init__(self, a, method="slow"):
        self.a = a
        self.method = method

    def value(self):
        return self.a * self.a
