"""Survey cases: the standard library (math, cmath, statistics, heapq, functools,
itertools, builtins) and plain numeric Python code."""
import bisect
import cmath
import functools
import heapq
import itertools
import math
import operator
import statistics
import sys

from . import Table

T = Table("stdlib")
add = T.add
X = 0.7

# ----------------------------------------------------------------------------- math
add("math.sin", math.sin, X, d=math.cos)
add("math.cos", math.cos, X, d=lambda x: -math.sin(x))
add("math.tan", math.tan, X, d=lambda x: 1 / math.cos(x) ** 2)
add("math.asin", math.asin, 0.4, d=lambda x: 1 / math.sqrt(1 - x * x))
add("math.acos", math.acos, 0.4, d=lambda x: -1 / math.sqrt(1 - x * x))
add("math.atan", math.atan, X, d=lambda x: 1 / (1 + x * x))
add("math.sinh", math.sinh, X, d=math.cosh)
add("math.cosh", math.cosh, X, d=math.sinh)
add("math.tanh", math.tanh, X, d=lambda x: 1 - math.tanh(x) ** 2)
add("math.asinh", math.asinh, X, d=lambda x: 1 / math.sqrt(x * x + 1))
add("math.acosh", math.acosh, 1.7, d=lambda x: 1 / math.sqrt(x * x - 1))
add("math.atanh", math.atanh, 0.4, d=lambda x: 1 / (1 - x * x))
add("math.exp", math.exp, X, d=math.exp)
add("math.expm1", math.expm1, X, d=math.exp)
add("math.log", math.log, X, d=lambda x: 1 / x)
add("math.log(x, 3)", lambda x: math.log(x, 3), X, d=lambda x: 1 / (x * math.log(3)))
add("math.log(3, x)", lambda x: math.log(3, x), 1.7, d=lambda x: -math.log(3) / (x * math.log(x) ** 2))
add("math.log2", math.log2, X, d=lambda x: 1 / (x * math.log(2)))
add("math.log10", math.log10, X, d=lambda x: 1 / (x * math.log(10)))
add("math.log1p", math.log1p, X, d=lambda x: 1 / (1 + x))
add("math.sqrt", math.sqrt, X, d=lambda x: 0.5 / math.sqrt(x))
add("math.pow(x, 2.5)", lambda x: math.pow(x, 2.5), X, d=lambda x: 2.5 * x ** 1.5)
add("math.pow(2.5, x)", lambda x: math.pow(2.5, x), X, d=lambda x: math.log(2.5) * 2.5 ** x)
add("math.atan2(x, 0.3)", lambda x: math.atan2(x, 0.3), X, d=lambda x: 0.3 / (x * x + 0.09))
add("math.atan2(0.3, x)", lambda x: math.atan2(0.3, x), X, d=lambda x: -0.3 / (x * x + 0.09))
add("math.hypot(x, 0.3)", lambda x: math.hypot(x, 0.3), X, d=lambda x: x / math.hypot(x, 0.3))
add("math.hypot(x, 2x, 3x)", lambda x: math.hypot(x, 2 * x, 3 * x), X, d=lambda x: math.sqrt(14))
add("math.dist", lambda x: math.dist((x, 1.0), (0.0, 2 * x)), X)
add("math.erf", math.erf, X, d=lambda x: 2 / math.sqrt(math.pi) * math.exp(-x * x))
add("math.erfc", math.erfc, X, d=lambda x: -2 / math.sqrt(math.pi) * math.exp(-x * x))
add("math.gamma", math.gamma, 1.3)
add("math.lgamma", math.lgamma, 1.3)
add("math.fabs", math.fabs, -X, d=lambda x: -1.0)
add("math.copysign(x, -1)", lambda x: math.copysign(x, -1.0), X, d=lambda x: -1.0)
add("math.fmod(x, 0.3)", lambda x: math.fmod(x, 0.3), X, d=lambda x: 1.0)
add("math.fmod(2.0, x)", lambda x: math.fmod(2.0, x), X, d=lambda x: -2.0)
add("math.remainder(x, 0.3)", lambda x: math.remainder(x, 0.3), X, d=lambda x: 1.0)
add("math.degrees", math.degrees, X, d=lambda x: 180 / math.pi)
add("math.radians", math.radians, X, d=lambda x: math.pi / 180)
add("math.floor * x", lambda x: math.floor(x * 3) * x, X, d=lambda x: 2.0)
add("math.ceil + x", lambda x: math.ceil(x) + x, X, d=lambda x: 1.0)
add("math.trunc(x) + x", lambda x: math.trunc(x * 5) + x, X, d=lambda x: 1.0)
add("math.ldexp", lambda x: math.ldexp(x, 3), X, d=lambda x: 8.0)
add("math.frexp mantissa", lambda x: math.frexp(x)[0], X, d=lambda x: 1.0)
add("math.modf fraction", lambda x: math.modf(3 * x)[0], X, d=lambda x: 3.0)
add("math.prod", lambda x: math.prod([x, 2.0, x]), X, d=lambda x: 4 * x)
add("math.prod generator", lambda x: math.prod(x + k for k in range(3)), X)
add("math.fsum list", lambda x: math.fsum([x, 2 * x, x * x]), X, d=lambda x: 3 + 2 * x)
add("math.fsum generator", lambda x: math.fsum(x * i for i in (1, 2, 3)), X, d=lambda x: 6.0)
add("math.isqrt-free cbrt", lambda x: x ** (1 / 3), X, d=lambda x: x ** (-2 / 3) / 3)
if sys.version_info >= (3, 12):
    add("math.sumprod", lambda x: math.sumprod([x, 2.0], [3.0, x]), X, d=lambda x: 5.0)
if sys.version_info >= (3, 13):
    add("math.fma", lambda x: math.fma(x, x, 1.0), X, d=lambda x: 2 * x)

# ----------------------------------------------------------------------------- builtins
add("abs", abs, -X, d=lambda x: -1.0)
add("pow(x, 3)", lambda x: pow(x, 3), X, d=lambda x: 3 * x * x)
add("pow(2, x)", lambda x: pow(2, x), X, d=lambda x: math.log(2) * 2 ** x)
add("x ** x", lambda x: x ** x, X, d=lambda x: x ** x * (math.log(x) + 1))
add("round(x, 2) + x", lambda x: round(x, 2) + x, 0.703, d=lambda x: 1.0)
add("divmod(x, 0.3) remainder", lambda x: divmod(x, 0.3)[1], X, d=lambda x: 1.0)
add("x // 0.3 * x", lambda x: x // 0.3 * x, X, d=lambda x: 2.0)
add("float(x)", lambda x: float(x) * 2, X, d=lambda x: 2.0)
add("complex(x).real", lambda x: complex(x, 1.0).real * x, X, d=lambda x: 2 * x)
add("sum generator", lambda x: sum(x ** k for k in range(4)), X, d=lambda x: 1 + 2 * x + 3 * x * x)
add("sum(list, start)", lambda x: sum([x, x * x], 1.0), X, d=lambda x: 1 + 2 * x)
add("min(list)", lambda x: min([x, 2.0, x * x]), X, d=lambda x: 2 * x)
add("max(a, b)", lambda x: max(x, 1 - x), X, d=lambda x: 1.0)
add("max(key=abs)", lambda x: max([x, -2 * x], key=abs), X, d=lambda x: -2.0)
add("sorted()[1]", lambda x: sorted([x * 3, 1.0, x])[1], X, d=lambda x: 0.0)
add("sorted(reverse)[0]", lambda x: sorted([x * 3, 1.0, x], reverse=True)[0], X, d=lambda x: 3.0)
add("list.sort", lambda x: _sorted_copy([x * x, 0.3, 2 * x])[2], X, d=lambda x: 2.0)
add("map + sum", lambda x: sum(map(math.sin, [x, 2 * x])), X, d=lambda x: math.cos(x) + 2 * math.cos(2 * x))
add("zip + sum", lambda x: sum(a * b for a, b in zip([x, 1.0], [2.0, x])), X, d=lambda x: 3.0)
add("enumerate weights", lambda x: sum(i * v for i, v in enumerate([x, x * x, 1.0])), X, d=lambda x: 2 * x)
add("dict values", lambda x: sum({"a": x, "b": x * x}.values()), X, d=lambda x: 1 + 2 * x)
add("tuple unpack", lambda x: (lambda a, b: a * b)(*(x, x + 1)), X, d=lambda x: 2 * x + 1)
add("closure counter", lambda x: _closure_power(x)(), X, d=lambda x: 3 * x * x)
add("recursion", lambda x: _rpow(x, 5), X, d=lambda x: 5 * x ** 4)
add("while loop Newton sqrt", lambda x: _newton_sqrt(x), 2.0, d=lambda x: 0.5 / math.sqrt(x))
add("Horner", lambda x: _horner([1.0, -2.0, 0.5, 3.0], x), X, d=lambda x: -2.0 + x + 9 * x * x)
add("Simpson rule", lambda x: _simpson(lambda t: math.exp(x * t), 0.0, 1.0, 8), X)
add("class with __init__ and method", lambda x: _Poly(x).value(2.0), X, d=lambda x: 4.0)
add("dataclass-free __slots__ object", lambda x: _Slotted(x).square(), X, d=lambda x: 2 * x)
add("bisect on a differentiated list", lambda x: x * bisect.bisect([0.1, 0.5, 0.9], x), X, d=lambda x: 2.0)
add("operator.mul reduce", lambda x: functools.reduce(operator.mul, [x, x, 2.0]), X, d=lambda x: 4 * x)
add("functools.reduce lambda", lambda x: functools.reduce(lambda a, b: a * b + 1, [x, 2.0, x]), X,
    d=lambda x: 4 * x + 1)
add("functools.partial", lambda x: functools.partial(math.pow, x)(3), X, d=lambda x: 3 * x * x)
add("functools.lru_cache", lambda x: _cached_square(x) + x, X, d=lambda x: 2 * x + 1)
add("itertools.accumulate", lambda x: list(itertools.accumulate([x, x, 2.0], operator.mul))[-1], X,
    d=lambda x: 4 * x)
add("itertools.starmap", lambda x: sum(itertools.starmap(pow, [(x, 2), (x, 3)])), X,
    d=lambda x: 2 * x + 3 * x * x)
add("itertools.chain", lambda x: sum(itertools.chain([x], (x * k for k in range(2)))), X, d=lambda x: 2.0)
add("itertools.product", lambda x: sum(a * b for a, b in itertools.product([x, 1.0], [x, 2.0])), X,
    d=lambda x: 2 * x + 3)
add("heapq.nsmallest", lambda x: heapq.nsmallest(2, [x * 3, 0.5, x])[1], X, d=lambda x: 1.0)
add("heapq.nsmallest differentiated", lambda x: sum(heapq.nsmallest(2, [x * 3, 5.0, x])), X, d=lambda x: 4.0)
add("heapq.nlargest", lambda x: heapq.nlargest(1, [x * 3, 0.5, x])[0], X, d=lambda x: 3.0)
add("heapq push/pop", lambda x: _heap_drain([x, 2 * x, 0.1])[1], X, d=lambda x: 1.0)
add("heapq.merge", lambda x: list(heapq.merge([x, 3.0], [2 * x, 4.0]))[1], X, d=lambda x: 2.0)

# ----------------------------------------------------------------------------- cmath (complex input)
Z = 0.6 + 0.3j
add("cmath.exp", cmath.exp, Z, d=cmath.exp)
add("cmath.log", cmath.log, Z, d=lambda z: 1 / z)
add("cmath.sqrt", cmath.sqrt, Z, d=lambda z: 0.5 / cmath.sqrt(z))
add("cmath.sin", cmath.sin, Z, d=cmath.cos)
add("cmath.cos", cmath.cos, Z, d=lambda z: -cmath.sin(z))
add("cmath.tan", cmath.tan, Z, d=lambda z: 1 / cmath.cos(z) ** 2)
add("cmath.sinh", cmath.sinh, Z, d=cmath.cosh)
add("cmath.tanh", cmath.tanh, Z, d=lambda z: 1 / cmath.cosh(z) ** 2)
add("cmath.asin", cmath.asin, Z, d=lambda z: 1 / cmath.sqrt(1 - z * z))
add("cmath.atan", cmath.atan, Z, d=lambda z: 1 / (1 + z * z))
add("cmath.log10", cmath.log10, Z, d=lambda z: 1 / (z * math.log(10)))
add("cmath.phase", cmath.phase, Z)
add("abs(complex)", abs, Z)
add("cmath.polar modulus", lambda z: cmath.polar(z)[0], Z)
add("cmath.rect(r, 0.4)", lambda r: cmath.rect(r, 0.4), X, d=lambda r: cmath.rect(1.0, 0.4))
add("cmath.rect(1.5, phi)", lambda p: cmath.rect(1.5, p), X, d=lambda p: 1j * cmath.rect(1.5, p))
add("complex conjugate product", lambda z: (z * z.conjugate()).real, Z)
add("z ** 3", lambda z: z ** 3, Z, d=lambda z: 3 * z * z)

# ----------------------------------------------------------------------------- statistics
add("statistics.mean", lambda x: statistics.mean([x, 2 * x, 1.0]), X, d=lambda x: 1.0)
add("statistics.fmean generator", lambda x: statistics.fmean(x * k for k in range(1, 5)), X, d=lambda x: 2.5)
add("statistics.fmean weights", lambda x: statistics.fmean([1.0, 2.0], weights=[x, 1.0]), X)
add("statistics.median odd", lambda x: statistics.median([x, 3 * x, 0.5]), X, d=lambda x: 1.0)
add("statistics.median even", lambda x: statistics.median([x, 3 * x, 1.0, 5.0]), X, d=lambda x: 1.5)
add("statistics.median_high", lambda x: statistics.median_high([x, 3 * x, 1.0, 5.0]), X, d=lambda x: 3.0)
add("statistics.variance", lambda x: statistics.variance([x, 2 * x, 1.0]), X)
add("statistics.pvariance", lambda x: statistics.pvariance([x, 2 * x, 1.0]), X)
add("statistics.stdev", lambda x: statistics.stdev([x, 2 * x, 1.0]), X)
add("statistics.pstdev", lambda x: statistics.pstdev([x, 2 * x, 1.0]), X)
add("statistics.covariance", lambda x: statistics.covariance([x, 2.0, 3.0], [1.0, x * x, 2.0]), X)
add("statistics.correlation", lambda x: statistics.correlation([x, 2.0, 3.0], [1.0, x * x, 2.0]), X)
add("statistics.linear_regression slope", lambda x: statistics.linear_regression([1.0, 2.0, 3.0],
                                                                                 [x, 2.5, 3 * x]).slope, X)
add("statistics.geometric_mean", lambda x: statistics.geometric_mean([x, 2.0, 4.0]), X)
add("statistics.harmonic_mean", lambda x: statistics.harmonic_mean([x, 2.0, 4.0]), X)
add("statistics.quantiles", lambda x: statistics.quantiles([x, 2.0, 3.0, 5.0], n=4)[1], X)
add("statistics.NormalDist.pdf", lambda x: statistics.NormalDist(0.2, 1.3).pdf(x), X)
add("statistics.NormalDist.cdf", lambda x: statistics.NormalDist(0.2, 1.3).cdf(x), X)
add("statistics.NormalDist(mu).cdf", lambda m: statistics.NormalDist(m, 1.3).cdf(0.2), X)
add("statistics.NormalDist.inv_cdf", lambda p: statistics.NormalDist(0.2, 1.3).inv_cdf(p), 0.3)


# ----------------------------------------------------------------------------- helpers
def _sorted_copy(values):
    values = list(values)
    values.sort()
    return values


def _closure_power(x):
    def cube():
        return x * x * x
    return cube


def _rpow(x, n):
    return 1.0 if n == 0 else x * _rpow(x, n - 1)


def _newton_sqrt(a):
    y = a
    for _ in range(30):
        y = 0.5 * (y + a / y)
    return y


def _horner(coeffs, x):
    acc = 0.0
    for c in reversed(coeffs):
        acc = acc * x + c
    return acc


def _simpson(g, a, b, n):
    h = (b - a) / n
    total = g(a) + g(b)
    for i in range(1, n):
        total += (4 if i % 2 else 2) * g(a + i * h)
    return total * h / 3


class _Poly:
    def __init__(self, scale, method="direct"):
        self.scale = scale
        self.method = method

    def value(self, t):
        return self.scale * t * t


class _Slotted:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def square(self):
        return self.v * self.v


@functools.lru_cache(maxsize=None)
def _cached_square(x):
    return x * x


def _heap_drain(values):
    heap = []
    for v in values:
        heapq.heappush(heap, v)
    return [heapq.heappop(heap) for _ in range(len(heap))]
