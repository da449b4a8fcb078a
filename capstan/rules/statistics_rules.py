"""Rules for sums of iterables (``math.fsum``, ``math.sumprod``) and the ``statistics`` module.

``math.fsum`` and ``math.sumprod`` are C functions of iterables: they are taken over
(generators and ``map`` objects are read into lists first, see ``adcontext.apply``)
and differentiated as :func:`exact_sum` and :func:`exact_sumprod`, whose value is
exactly the library's correctly rounded one and whose derivative is the sum of the
terms' derivatives.

``statistics`` computes with exact fractions (``float.as_integer_ratio``), which would
drop the derivative: its functions of differentiated data run as float formulas
instead (``defimpl``), built on the two exact sums.  ``median``, ``quantiles``,
``covariance``, ``correlation`` and ``linear_regression`` need no entry: their library
code (sorting, indexing, ``fsum``, ``sumprod``) is differentiated as it stands.
"""
import math
import operator
import statistics

from .registry import conj, defimpl, defjvp, defvjp

_sumprod = getattr(math, "sumprod", None)  # (Python 3.12+)


def exact_sum(values):
    """``math.fsum`` of the list ``values``."""
    return math.fsum(values)


def exact_sumprod(p, q):
    """``math.sumprod`` of the lists ``p`` and ``q`` (before Python 3.12: ``fsum`` of
    their products, as ``statistics`` computes it there)."""
    if _sumprod is not None:
        return _sumprod(p, q)
    if len(p) != len(q):
        raise ValueError("Inputs are not the same length")
    return math.fsum(map(operator.mul, p, q))


def _add_up(terms):
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


def _sum_jvp(ts, ans, values):
    return _add_up(ts[0])


def _sumprod_jvp(ts, ans, p, q):
    left = () if ts[0] is None else (None if t is None else t * b for t, b in zip(ts[0], q))
    right = () if ts[1] is None else (None if t is None else a * t for a, t in zip(p, ts[1]))
    return _add_up([*left, *right])


defjvp(exact_sum, _sum_jvp, batched=True)
defvjp(exact_sum, lambda g, ans, values: ([g] * len(values),))
defjvp(exact_sumprod, _sumprod_jvp, batched=True)
defvjp(exact_sumprod, lambda g, ans, p, q: ([g * conj(b) for b in q], [g * conj(a) for a in p]))
defimpl(math.fsum, lambda iterable: exact_sum(list(iterable)))
if _sumprod is not None:
    defimpl(math.sumprod, lambda p, q: exact_sumprod(list(p), list(q)))


# ----------------------------------------------------------------------------- statistics
def _need(values, n, name, what="data points"):
    if len(values) < n:
        raise statistics.StatisticsError("%s requires at least %s %s"
                                         % (name, "one" if n == 1 else "two", what))


def _mean(data):
    values = list(data)
    _need(values, 1, "mean", "data point")
    return exact_sum(values) / len(values)


def _fmean(data, weights=None):
    values = list(data)
    if weights is None:
        _need(values, 1, "fmean", "data point")
        return exact_sum(values) / len(values)
    weights = list(weights)
    if len(weights) != len(values):
        raise statistics.StatisticsError("data and weights must be the same length")
    den = exact_sum(weights)
    if not den:
        raise statistics.StatisticsError("sum of weights must be non-zero")
    return exact_sumprod(values, weights) / den


def _squares(values, centre):
    """Sum of squared deviations from ``centre`` (``None``: from the mean, with the
    compensation term that makes it accurate)."""
    if centre is None:
        mean = exact_sum(values) / len(values)
        d = [x - mean for x in values]
        return exact_sumprod(d, d) - exact_sum(d) ** 2 / len(values)
    d = [x - centre for x in values]
    return exact_sumprod(d, d)


def _variance(data, xbar=None):
    values = list(data)
    _need(values, 2, "variance")
    return _squares(values, xbar) / (len(values) - 1)


def _pvariance(data, mu=None):
    values = list(data)
    _need(values, 1, "pvariance", "data point")
    return _squares(values, mu) / len(values)


def _stdev(data, xbar=None):
    values = list(data)
    _need(values, 2, "stdev")
    return math.sqrt(_squares(values, xbar) / (len(values) - 1))


def _pstdev(data, mu=None):
    values = list(data)
    _need(values, 1, "pstdev", "data point")
    return math.sqrt(_squares(values, mu) / len(values))


def _mean_stdev(data):  # (statistics.NormalDist.from_samples)
    values = list(data)
    _need(values, 2, "stdev")
    return _mean(values), _stdev(values)


def _not_at_zero(name):
    from ..adcontext import NoRuleError
    return NoRuleError("capstan: statistics.%s is not differentiable where a value is zero "
                       "(its derivative there is unbounded)" % name)


def _geometric_mean(data):
    values = list(data)
    if not values:
        raise statistics.StatisticsError("geometric mean requires a non-empty dataset "
                                         "containing positive numbers")
    for x in values:
        if x < 0:
            raise statistics.StatisticsError("geometric mean requires a non-empty dataset "
                                             "containing positive numbers")
        if x == 0:
            raise _not_at_zero("geometric_mean")
    return math.exp(exact_sum([math.log(x) for x in values]) / len(values))


def _harmonic_mean(data, weights=None):
    values = list(data)
    _need(values, 1, "harmonic_mean", "data point")
    negative = statistics.StatisticsError("harmonic mean does not support negative values")
    if weights is None:
        weights = [1] * len(values)
    else:
        weights = list(weights)
        if len(weights) != len(values):
            raise statistics.StatisticsError("Number of weights does not match data size")
    if any(x < 0 for x in values) or any(w < 0 for w in weights):
        raise negative
    if len(values) == 1 and weights == [1]:
        return values[0]
    if any(x == 0 for x, w in zip(values, weights) if w):
        raise _not_at_zero("harmonic_mean")
    total = exact_sum([w / x for x, w in zip(values, weights) if w])
    if total <= 0:
        raise statistics.StatisticsError("Weighted sum must be positive")
    return exact_sum(weights) / total


defimpl(statistics.mean, _mean)
defimpl(statistics.fmean, _fmean)
defimpl(statistics.variance, _variance)
defimpl(statistics.pvariance, _pvariance)
defimpl(statistics.stdev, _stdev)
defimpl(statistics.pstdev, _pstdev)
defimpl(statistics.geometric_mean, _geometric_mean)
defimpl(statistics.harmonic_mean, _harmonic_mean)
if hasattr(statistics, "_mean_stdev"):
    defimpl(statistics._mean_stdev, _mean_stdev)
