"""The rules of statistics_rules, sorting_rules, placement_rules and stride_rules,
checked end to end through the public API.

For every program ``f`` of an array ``x``: (a) its value is the plain one, (b) the
forward derivative along a random direction matches central finite differences
(Richardson-extrapolated), (c) the reverse derivative satisfies the dot-product
identity ``<g, J v> == <J* g, v>`` with the forward one, and (d) at second order,
forward over reverse (the derivative of a gradient along ``v``) matches finite
differences of the gradient.  Then the exact values the issue names, and the
refusals: a clear NoRuleError where no derivative can be followed.
"""
import heapq
import itertools
import json
import math
import statistics

import numpy as np
import pytest
import scipy.linalg
import scipy.stats
from numpy.lib.stride_tricks import as_strided, sliding_window_view

import capstan
from capstan import NoRuleError

rng = np.random.default_rng(7)


def _fd(f, x, v, h=1e-4):
    def d(e):
        return (np.asarray(f(x + e * v), dtype=float) - np.asarray(f(x - e * v), dtype=float)) / (2 * e)
    return (4 * d(h / 2) - d(h)) / 3


def _close(a, b, rtol=1e-6):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


def _zeros_if_none(g, x):
    return np.zeros_like(x) if g is None else np.asarray(g)


def check(f, x, second=True):
    x = np.array(x, dtype=float)
    v = rng.standard_normal(x.shape)
    y, t = capstan.jvp(f, (x,), (v,))
    _close(y, f(x.copy()), rtol=1e-12)
    _close(t, _fd(f, x, v))
    y2, back = capstan.pullback(f, x)
    _close(y2, y, rtol=1e-12)
    g = rng.standard_normal(np.shape(y))
    (gx,) = back(g if np.ndim(y) else float(g))
    gx = _zeros_if_none(gx, x)
    assert gx.shape == x.shape
    _close(np.vdot(gx, v), np.vdot(g, np.asarray(t)))
    if second:
        w = rng.standard_normal(np.shape(y))

        def grad(z):
            return _zeros_if_none(capstan.gradient(lambda u: np.sum(w * f(u)), z)[0], z)

        _, hv = capstan.jvp(grad, (x,), (v,))
        _close(hv, _fd(grad, x, v), rtol=1e-5)


def spread(n, low=0.5, high=3.0):
    """``n`` well separated values in a shuffled order (no ties: sorting is smooth here)."""
    return rng.permutation(np.linspace(low, high, n)) + rng.uniform(-0.05, 0.05, n)


X5, X6, X8 = spread(5), spread(6), spread(8)
X34 = spread(12).reshape(3, 4)
W5, W6 = rng.standard_normal(5), rng.standard_normal(6)


# ----------------------------------------------------------------------------- math.fsum and statistics
STATISTICS = [
    ("fsum-generator", lambda x: math.fsum(x[i] * (i + 1) for i in range(5)), X5),
    ("fsum-map", lambda x: math.fsum(map(lambda v: v * v, x)), X5),
    ("fsum-list", lambda x: math.fsum([x[0], x[1] * x[2], 1e16, -1e16]), X5),
    ("mean", lambda x: statistics.mean(x[i] * x[i] for i in range(5)), X5),
    ("fmean", lambda x: statistics.fmean(list(x)), X5),
    ("fmean-generator", lambda x: statistics.fmean(v * v for v in x), X5),
    ("fmean-weights", lambda x: statistics.fmean(list(x[:3]), weights=[x[3], x[4], 2.0]), X5),
    ("median", lambda x: statistics.median(list(x)), X5),
    ("median-even", lambda x: statistics.median(v * v for v in x), X6),
    ("median_low", lambda x: statistics.median_low(list(x)), X6),
    ("median_high", lambda x: statistics.median_high(list(x)), X6),
    ("variance", lambda x: statistics.variance(list(x)), X5),
    ("variance-xbar", lambda x: statistics.variance(list(x), x[0]), X5),
    ("pvariance", lambda x: statistics.pvariance(v * v for v in x), X5),
    ("stdev", lambda x: statistics.stdev(list(x)), X5),
    ("pstdev", lambda x: statistics.pstdev(list(x), 1.5), X5),
    ("covariance", lambda x: statistics.covariance(list(x[:4]), list(x[4:] ** 2)), X8),
    ("correlation", lambda x: statistics.correlation(list(x[:4]), list(x[4:] ** 2)), X8),
    ("linear_regression", lambda x: np.array([*statistics.linear_regression(list(x[:4]), list(x[4:]))]), X8),
    ("linear_regression-proportional",
     lambda x: statistics.linear_regression(list(x[:4]), list(x[4:]), proportional=True).slope, X8),
    ("geometric_mean", lambda x: statistics.geometric_mean(list(x)), X5),
    ("harmonic_mean", lambda x: statistics.harmonic_mean(list(x)), X5),
    ("harmonic_mean-weights", lambda x: statistics.harmonic_mean(list(x[:3]), weights=[x[3], x[4], 1.0]), X5),
    ("quantiles", lambda x: np.array(statistics.quantiles(list(x), n=4)), X6),
    ("quantiles-inclusive", lambda x: np.array(statistics.quantiles(list(x), n=5, method="inclusive")), X6),
    ("NormalDist", lambda x: statistics.NormalDist.from_samples(list(x)).stdev, X5),
]


@pytest.mark.parametrize("name,f,x", STATISTICS, ids=[c[0] for c in STATISTICS])
def test_statistics(name, f, x):
    check(f, x)


def test_fsum_and_fmean_of_generators_give_the_issue_values():
    assert capstan.D(lambda x: math.fsum(x * i for i in (1, 2, 3)), 1.5) == 6.0
    assert capstan.gradient(lambda x: math.fsum(x * i for i in (1, 2, 3)), 1.5) == (6.0,)
    assert capstan.D(lambda x: statistics.fmean(x * k for k in range(1, 5)), 0.7) == 2.5
    assert capstan.gradient(lambda x: statistics.fmean(x * k for k in range(1, 5)), 0.7) == (2.5,)


def test_fsum_value_is_exactly_fsum():
    y, t = capstan.jvp(lambda x: math.fsum([x * 1e16, 1.0, -x * 1e16, 0.1, 0.2]), (1.0,), (1.0,))
    assert y == math.fsum([1e16, 1.0, -1e16, 0.1, 0.2]) and t == 0.0


def test_statistics_errors_are_the_library_ones():
    with pytest.raises(statistics.StatisticsError):
        capstan.D(lambda x: statistics.variance([x]), 1.0)
    with pytest.raises(statistics.StatisticsError):
        capstan.D(lambda x: statistics.harmonic_mean([x, -1.0]), 1.0)
    with pytest.raises(NoRuleError, match="geometric_mean"):
        capstan.D(lambda x: statistics.geometric_mean([x, 0.0]), 1.0)


# ----------------------------------------------------------------------------- sorting and order statistics
def sort_in_place(x, axis=-1):
    y = x * 1.0
    y.sort(axis=axis)
    return y


def partition_in_place(x):
    y = x + 0.0
    y.partition(2)
    return y


def heap_program(x):
    values = list(x)
    small, large = heapq.nsmallest(2, values), heapq.nlargest(3, values)
    return small[0] * 2.0 + small[1] + large[0] * large[1] - large[2]


SORTING = [
    ("ndarray.sort", lambda x: sort_in_place(x) * W6, X6),
    ("ndarray.sort-axis0", lambda x: sort_in_place(x, 0), X34),
    ("partition", lambda x: np.partition(x, 2) * W6, X6),
    ("partition-axis0", lambda x: np.partition(x, 1, axis=0), X34),
    ("partition-kths", lambda x: np.partition(x, [1, 4])[[1, 4]], X6),
    ("partition-None", lambda x: np.partition(x, 5, axis=None)[5], X34),
    ("ndarray.partition", lambda x: partition_in_place(x)[2], X6),
    ("argsort", lambda x: x[np.argsort(x)] * W6, X6),
    ("median-odd", np.median, X5),
    ("median-even", np.median, X6),
    ("median-axis", lambda x: np.median(x, axis=0), X34),
    ("median-axes-keepdims", lambda x: np.median(x, axis=(0, 1), keepdims=True), X34),
    ("percentile", lambda x: np.percentile(x, 30), X6),
    ("percentile-many", lambda x: np.percentile(x, [10, 50, 95], axis=1), X34),
    ("quantile", lambda x: np.quantile(x, 0.8, axis=0), X34),
    ("quantile-keepdims", lambda x: np.quantile(x, [0.2, 0.7], axis=1, keepdims=True), X34),
    ("quantile-lower", lambda x: np.quantile(x, 0.3, method="lower"), X6),
    ("quantile-higher", lambda x: np.quantile(x, 0.3, method="higher"), X6),
    ("quantile-nearest", lambda x: np.quantile(x, 0.55, method="nearest"), X6),
    ("quantile-midpoint", lambda x: np.quantile(x, 0.3, method="midpoint"), X6),
    ("quantile-hazen", lambda x: np.quantile(x, 0.3, method="hazen"), X6),
    ("quantile-median_unbiased", lambda x: np.quantile(x, 0.3, method="median_unbiased"), X6),
    ("nanmedian", lambda x: np.nanmedian(np.where(np.arange(6) == 2, np.nan, x)), X6),
    ("nanmedian-axis", lambda x: np.nanmedian(np.where(np.eye(3, 4) > 0, np.nan, x), axis=1), X34),
    ("nanpercentile", lambda x: np.nanpercentile(np.where(np.arange(6) == 0, np.nan, x), [25, 60]), X6),
    ("nanquantile", lambda x: np.nanquantile(np.where(np.eye(3, 4) > 0, np.nan, x), 0.4, axis=0), X34),
    ("ptp", np.ptp, X6),
    ("ptp-axis", lambda x: np.ptp(x, axis=1), X34),
    ("sorted", lambda x: np.array(sorted(list(x))) * W6, X6),
    ("sorted-reverse", lambda x: sorted(x * x, reverse=True)[1], X6),
    ("heapq", heap_program, X6),
]


@pytest.mark.parametrize("name,f,x", SORTING, ids=[c[0] for c in SORTING])
def test_sorting(name, f, x):
    check(f, x)


def test_order_statistics_values_are_numpys():
    x = np.array([0.1, 0.7, 0.2, 0.3000000000000001, 0.9, np.nan, 0.4])
    for f in (lambda a: np.percentile(a, [13, 50, 77]), lambda a: np.nanpercentile(a, [13, 50, 77]),
              lambda a: np.nanmedian(a), lambda a: np.median(a), lambda a: np.quantile(a[:5], 0.37)):
        y, _ = capstan.jvp(f, (x,), (np.ones_like(x),))
        np.testing.assert_array_equal(y, f(x))


def test_nsmallest_keeps_every_derivative():
    """heapq.nsmallest(2, ...) of three values replaces the heap top through the C helper
    heapq._heapreplace_max: every derivative must survive it."""
    g = capstan.gradient(lambda a, b, c: sum(heapq.nsmallest(2, [a, b, c])), 3.0, 1.0, 2.0)
    assert g == (None, 1.0, 1.0)
    assert capstan.D(lambda s: sum(heapq.nsmallest(2, [3 * s, s, 2 * s * s])), 1.0) == 5.0


def test_quantile_refusals():
    # (out= gets the result and its derivative: the same gradient as without it)
    g = capstan.gradient(lambda x: np.quantile(x, 0.3, out=np.zeros(())), X6)[0]
    assert np.allclose(g, capstan.gradient(lambda x: np.quantile(x, 0.3), X6)[0])
    with pytest.raises(ValueError):
        capstan.gradient(lambda x: np.quantile(x, 1.5), X6)


# ----------------------------------------------------------------------------- writing into arrays
MASK6 = np.array([True, False, True, True, False, True])


def place(x):
    b = np.linspace(0.0, 1.0, 6)
    np.place(b, MASK6, x[:3] * x[3])  # (three values for four places: repeated)
    return b


def putmask(x):
    b = np.linspace(0.0, 1.0, 6)
    np.putmask(b, MASK6, x[:4])
    return b * W6


def put(x):
    b = np.ones(6)
    np.put(b, [0, 2, 0, -1], x[:4])  # (0 is written twice: the last write stays)
    return b * W6


def put_wrap(x):
    b = x * 2.0
    b.put([7, -8], x[4:] ** 2, mode="wrap")
    return b


def fill(x):
    b = np.empty(3)
    b.fill(x[1])
    return b * x[:3]


def fill_diagonal(x, wrap=False, shape=(4, 4)):
    b = np.ones(shape)
    np.fill_diagonal(b, x[:2] if wrap else x, wrap=wrap)
    return b * np.arange(1.0, b.size + 1).reshape(shape)


def fill_cube(x):
    b = np.zeros((3, 3, 3))
    np.fill_diagonal(b, x[0] * x[1])
    return b.sum(axis=0)


def copyto(x):
    b = np.full(6, 0.5)
    np.copyto(b, x * x, where=MASK6)
    return b


def ufunc_out(x):
    b = np.zeros(6)
    np.sin(x, out=b)
    return np.multiply(b, x)


def test_out_naming_a_differentiated_array_writes_into_it():
    def f(x):
        b = np.sin(x)
        np.multiply(b, x, out=b)  # (b[...] = b * x)
        return b

    expected = np.cos(X6) * X6 + np.sin(X6)
    np.testing.assert_allclose(capstan.gradient(lambda x: np.sum(f(x)), X6)[0], expected, rtol=1e-12)
    np.testing.assert_allclose(capstan.jvp(lambda x: np.sum(f(x)), (X6,), (X6,))[1], np.sum(expected * X6),
                               rtol=1e-12)


def out_programs():
    def sum_axis(x):
        o = np.zeros(3)
        np.sum(x.reshape(2, 3), axis=0, out=o)
        return o * x[:3]

    def cumsum(x):
        o = np.zeros(6)
        np.cumsum(x, out=o)
        return o * W6

    def dot(x):
        o = np.zeros(2)
        np.dot(x.reshape(2, 3), x[:3], out=o)
        return o

    def clip(x):
        o = np.zeros(6)
        np.clip(x, 1.0, 2.0, out=o)
        return o * x

    def exp_into_view(x):
        o = np.ones((2, 6))
        np.exp(x, out=o[1])
        return o * x

    def tuple_out(x):
        o = np.zeros(6)
        np.multiply(x, x, out=(o,))
        return o

    def max_scalar(x):
        o = np.zeros(())
        np.max(x, out=o)
        return o * x

    return [("out-sum-axis", sum_axis, X6), ("out-cumsum", cumsum, X6), ("out-dot", dot, X6),
            ("out-clip", clip, X6), ("out-view", exp_into_view, X6), ("out-tuple", tuple_out, X6),
            ("out-max", max_scalar, X6)]


PLACEMENT = out_programs() + [
    ("place", place, X6), ("putmask", putmask, X6), ("put", put, X6), ("ndarray.put-wrap", put_wrap, X6),
    ("ndarray.fill", fill, X6), ("fill_diagonal", fill_diagonal, spread(4)),
    ("fill_diagonal-wrap", lambda x: fill_diagonal(x, True, (7, 3)), spread(4)),
    ("fill_diagonal-3d", fill_cube, spread(2)), ("copyto-where", copyto, X6), ("ufunc-out", ufunc_out, X6),
]


@pytest.mark.parametrize("name,f,x", PLACEMENT, ids=[c[0] for c in PLACEMENT])
def test_placement(name, f, x):
    check(f, x)


def test_placement_errors_are_numpys():
    with pytest.raises(ValueError, match="same size"):
        capstan.gradient(lambda x: np.place(np.zeros(3), [True, False], x), X6)
    with pytest.raises(IndexError):
        capstan.gradient(lambda x: np.put(np.zeros(3), [5], x[0]), X6)


# ----------------------------------------------------------------------------- views, iterators, makers
def windows(x):
    step = x.strides[0]
    return as_strided(x, shape=(4, 3), strides=(step, step)) * np.arange(12.0).reshape(4, 3)


def flat(x):
    return x.flat[2] * 2.0 + sum(x.flat) + np.sum(x.flat[[1, 4]] ** 2)


def broadcast(x):
    y = np.arange(1.0, 4.0).reshape(3, 1)
    b = np.broadcast(x[:4], y)
    return np.sum(x) * b.shape[0] * b.size + sum(u * v for u, v in np.broadcast(x[:4], y))


def poly(x):
    p = np.poly1d(x[:3])
    q = np.poly1d(x[3:])
    return np.concatenate([(p * q).coeffs, [p(0.7), p(x[5]), p.deriv()(x[4])]])


VIEWS = [
    ("as_strided", windows, X6),
    ("as_strided-2d", lambda x: as_strided(x, (2, 2, 2), (x.strides[0], x.strides[0], x.strides[1])), X34),
    ("sliding_window_view", lambda x: sliding_window_view(x, 3) ** 2, X6),
    ("sliding_window_view-2d", lambda x: np.sum(sliding_window_view(x, (2, 3)) ** 2, axis=(2, 3)), X34),
    ("toeplitz", lambda x: scipy.linalg.toeplitz(x[:3]), X6),
    ("toeplitz-r", lambda x: scipy.linalg.toeplitz(x[:3], x[3:]), X6),
    ("hankel", lambda x: scipy.linalg.hankel(x[:4], x[3:]), X6),
    ("circulant", lambda x: scipy.linalg.circulant(x), X5),
    ("flat", flat, X6), ("flat-2d", lambda x: np.array(list(x.flat)) ** 2, X34),
    ("broadcast", broadcast, X6),
    ("broadcast_shapes", lambda x: x * np.broadcast_shapes(x.shape, (2, 1))[0], X6),
    ("broadcast_to", lambda x: np.broadcast_to(x, (2, 6)) * np.arange(12.0).reshape(2, 6), X6),
    ("broadcast_arrays", lambda x: np.stack(np.broadcast_arrays(x, np.ones((2, 1)))) ** 2, X6),
    ("meshgrid", lambda x: np.stack(np.meshgrid(x[:2], x[2:5])) ** 2, X6),
    ("meshgrid-ij-sparse", lambda x: np.meshgrid(x[:2], x[2:5], indexing="ij", sparse=True)[1] * x[0], X6),
    ("poly1d", poly, X6),
    ("polymul", lambda x: np.polymul(x[:2], list(x[2:])), X6),
    ("convolve", lambda x: np.convolve(x[:4], x[4:]), X6),
    ("convolve-same", lambda x: np.convolve(x[:2], x[2:], "same"), X6),
    ("convolve-valid", lambda x: np.convolve(x[:4], x[4:] * 2.0, mode="valid"), X6),
    ("cov", lambda x: np.cov(x[:4], x[4:] ** 2), X8), ("cov-rows", lambda x: np.cov(x), X34),
    ("corrcoef", lambda x: np.corrcoef(x[:4], x[4:] ** 2), X8),
    ("fromiter", lambda x: np.fromiter((v * v for v in x), float), X6),
    ("fromiter-count", lambda x: np.fromiter((v * x[0] for v in x), dtype=float, count=3), X6),
    ("fromiter-endless", lambda x: np.fromiter((x[i % 6] * i for i in itertools.count()), float, 8), X6),
]


@pytest.mark.parametrize("name,f,x", VIEWS, ids=[c[0] for c in VIEWS])
def test_views_and_makers(name, f, x):
    check(f, x)


def test_strided_view_reading_outside_its_array_is_refused():
    def outside(x):
        part = x[2:]
        return as_strided(part, shape=(3,), strides=(-part.strides[0],))

    with pytest.raises(NoRuleError, match="outside"):
        capstan.gradient(lambda x: np.sum(outside(x)), X6)
    with pytest.raises(NoRuleError, match="outside"):
        capstan.D(lambda s: np.sum(outside(X6 * s)), 1.0)


def test_flat_of_a_transposed_array_cannot_be_written_silently():
    def f(x):
        y = (x * 1.0).T
        y.flat[0] = 5.0
        return y

    with pytest.raises(ValueError, match="read-only"):
        capstan.gradient(lambda x: np.sum(f(x)), X34)


def test_json_formats_differentiated_numbers():
    def f(x):
        text = json.dumps({"a": x, "b": [x * 2.0, (x, 1)]}, sort_keys=True)
        assert text == json.dumps({"a": 1.5, "b": [3.0, [1.5, 1]]}, sort_keys=True)
        return x * len(text)

    n = len(json.dumps({"a": 1.5, "b": [3.0, [1.5, 1]]}))
    assert capstan.D(f, 1.5) == n
    assert capstan.gradient(f, 1.5) == (float(n),)


JACOBIAN_CASES = {c[0]: c for c in STATISTICS + SORTING + PLACEMENT + VIEWS}


@pytest.mark.parametrize("name", ["fsum-generator", "covariance", "variance", "fmean-weights", "partition-axis0",
                                  "ndarray.sort", "percentile-many", "put", "fill_diagonal", "as_strided",
                                  "toeplitz-r", "convolve", "flat"])
def test_chunked_jacobians(name):
    """Forward rules applied to blocks of tangents (one run for the whole Jacobian)."""
    _, f, x = JACOBIAN_CASES[name]
    J = capstan.jacobian(f, x)
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = 1.0
        e = e.reshape(x.shape)
        _close(J[(Ellipsis,) + np.unravel_index(k, x.shape)], _fd(f, x, e))


def test_placement_into_a_zero_dimensional_array():
    def f(x):
        b = np.array(1.0)
        np.place(b, [True], [x])
        return b * 2.0

    assert capstan.D(f, 2.0) == 2.0
    assert capstan.gradient(f, 2.0) == (2.0,)
    # scipy.stats' methods write results with np.place into 0-d arrays
    want = -1 / 1.2 + 0.3 ** 2 / 1.2 ** 3
    assert np.isclose(capstan.D(lambda s: scipy.stats.norm.logpdf(0.3, 0.0, s), 1.2), want)
