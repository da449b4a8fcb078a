"""The C helpers that used to block whole classes of programs, each now differentiated
by a general mechanism (issue 10): every ufunc's ``reduce``/``accumulate``/``outer``/
``at``, NumPy 2's ``_array_converter`` (``ediff1d``, ``unique``, ``insert``, ``delete``,
``apply_along_axis``), ``ndarray.tolist``, ``sum``/``prod`` with ``where=``/``initial=``
(the nan-functions), ``out=`` into an array that carries a derivative (given by keyword
or by position), ``functools.partial``, ``itertools.chain``/``product``, ``heapq``'s C
operations, ``statistics.NormalDist.inv_cdf`` and ``math.remainder``.

Each program is checked in forward mode against central differences, reverse mode
against forward mode (dot-product identity) and at second order (``rule_checks``).
"""
import functools
import heapq
import itertools
import math
import statistics

import numpy as np
import pytest

import capstan
from rule_checks import Case, P, R, check_forward, check_reverse, check_second_order, reseed

reseed("coverage rules")

A = R(5)
M = R(3, 4)
NAN_M = np.array([[0.5, np.nan, 1.3, 0.2], [2.0, 0.7, np.nan, 1.1], [0.3, 0.4, 0.9, np.nan]])
MASK = np.array([[True, False, True, True], [True, True, False, True], [False, True, True, True]])


def _add_at(x):
    y = np.zeros(3)
    np.add.at(y, [0, 1, 0, 2, 0], x)
    return y


def _multiply_at(x):
    y = x[:3] * 1.0
    np.multiply.at(y, [0, 0, 2], x[2:])
    return y


def _subtract_at_2d(x):
    y = np.ones((3, 4))
    np.subtract.at(y, (np.array([0, 2, 0]), np.array([1, 3, 1])), x[0, :3])
    return y


def _positional_out(x):
    y = np.empty(x.size)
    y[:1] = x[0]
    np.subtract(x[1:], x[:-1], y[1:])
    return y


def _out_into_itself(x):
    y = x * 1.0
    np.multiply(y, x, out=y)
    np.exp(y, y)
    return y


def _out_where(x):
    y = x * 2.0
    np.sin(x, out=y, where=x > 0)
    return y


def _heap(x):
    heap = []
    for v in (x[0], 2 * x[1], 0.1, x[2] * x[3]):
        heapq.heappush(heap, v)
    first = heapq.heappop(heap)
    second = heapq.heapreplace(heap, x[4])
    third = heapq.heappushpop(heap, 3 * x[0])
    rest = list(heap)
    heapq.heapify(rest)
    return np.array([first, second, third] + sorted(rest))


def _partial(x):
    scaled = functools.partial(np.multiply, x[:2])
    nested = functools.partial(functools.partial(lambda a, b, c=1.0: a * b + c, x[2]), c=x[3])
    return scaled(x[4]), nested(x[0])


CASES = [
    # ufunc methods
    Case(lambda x: np.logaddexp.reduce(x), A, name="logaddexp.reduce"),
    Case(lambda x: np.logaddexp.reduce(x, axis=1, keepdims=True), M, name="logaddexp.reduce axis keepdims"),
    Case(lambda x: np.logaddexp2.reduce(x, axis=(0, 1)), M, name="logaddexp2.reduce axes"),
    Case(lambda x: np.hypot.reduce(x, axis=0), M, name="hypot.reduce (a fold)"),
    Case(lambda x: np.logaddexp.reduce(x, where=MASK, initial=-1.0, axis=1), M, name="logaddexp.reduce where"),
    Case(lambda x: np.subtract.accumulate(x, axis=1), M, name="subtract.accumulate"),
    Case(lambda x: np.multiply.outer(x, x[:3]), A, name="multiply.outer"),
    Case(lambda x: np.power.outer(np.abs(x) + 0.5, x[:2]), A, name="power.outer"),
    Case(_add_at, A, name="add.at"), Case(_multiply_at, A, name="multiply.at"),
    Case(_subtract_at_2d, M, name="subtract.at 2-d"),
    # nan-functions (fmax/fmin.reduce, sum/prod where=/initial=, out= writes)
    Case(lambda x: np.nanmax(x, axis=1), NAN_M, name="nanmax"), Case(np.nanmin, NAN_M, name="nanmin"),
    Case(lambda x: np.nanprod(x, axis=0), NAN_M, name="nanprod"),
    Case(lambda x: np.nanvar(x, axis=1), NAN_M, name="nanvar"), Case(np.nanstd, NAN_M, name="nanstd"),
    Case(lambda x: np.sum(x, axis=0, where=MASK), M, name="sum where"),
    Case(lambda x: np.prod(x, axis=1, where=MASK, initial=2.5), M, name="prod where initial"),
    Case(lambda x: np.sum(x, initial=3.0), M, name="sum initial"),
    Case(_positional_out, A, name="ufunc out by position"), Case(_out_into_itself, A, name="out=itself"),
    Case(_out_where, A, name="out= where="),
    Case(lambda x: np.cross(x[:3], x[2:]), A, name="np.cross"),
    # NumPy 2's _array_converter and np.unique's hash table
    Case(lambda x: np.ediff1d(x, to_begin=x[0], to_end=[1.0, 2.0]), A, name="ediff1d"),
    Case(np.unique, A, name="unique"), Case(lambda x: np.insert(x, 1, x[2] * 2), A, name="insert"),
    Case(lambda x: np.delete(x, [0, 3]), A, name="delete"),
    Case(lambda x: np.apply_along_axis(lambda r: r[0] * r[1] + r[2], 1, x), M, name="apply_along_axis"),
    # tolist
    Case(lambda x: sum(v * v for v in x.tolist()), A, name="tolist"),
    Case(lambda x: sum(r[0] * r[1] for r in x.tolist()), M, name="tolist 2-d"),
    # the standard library
    Case(_partial, A, name="functools.partial"),
    Case(lambda x: sum(itertools.chain([x[0]], (x[1] * k for k in range(3)))), A, name="itertools.chain"),
    Case(lambda x: sum(itertools.chain.from_iterable([[x[0]], [x[1], 2 * x[2]]])), A,
         name="itertools.chain.from_iterable"),
    Case(lambda x: np.array([a * b for a, b in itertools.product([x[0], 1.0], [x[1], 2.0], repeat=1)]), A,
         name="itertools.product"),
    Case(_heap, P(5), name="heapq"),
    Case(lambda x: sum(heapq.nsmallest(2, [3 * x[0], 5.0, x[1]])), P(5), name="heapq.nsmallest"),
    Case(lambda x: statistics.NormalDist(x[0], 0.5 + x[1] ** 2).inv_cdf(0.3 + 0.1 * x[2] ** 2), A,
         name="NormalDist.inv_cdf"),
    Case(lambda x: math.remainder(5 * x[0], 0.7 + x[1] ** 2), A, name="math.remainder"),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse(case):
    check_reverse(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.hessian], ids=repr)
def test_second_order(case):
    check_second_order(case)


def test_ufunc_methods_keep_numpys_values_and_errors():
    x = np.array([0.3, -1.2, 2.0])
    assert np.allclose(capstan.jvp(np.logaddexp.reduce, (x,), (np.ones(3),))[0], np.logaddexp.reduce(x))
    with pytest.raises(ValueError, match="identity"):
        capstan.gradient(lambda v: np.arctan2.reduce(v, where=np.array([True, False, True])), x)
    with pytest.raises(ValueError, match="zero-size"):
        capstan.gradient(lambda v: np.arctan2.reduce(v[:0]) + v[0], x)
    with pytest.raises(ValueError, match="binary"):
        capstan.gradient(lambda v: np.sin.reduce(v), x)


def test_an_all_nan_slice_of_nanmax_has_no_derivative_and_stays_nan():
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        value, tangent = capstan.jvp(lambda v: np.nanmax(v, axis=1), (x,), (np.ones((2, 2)),))
    assert np.isnan(value[0]) and value[1] == 1.0 and tangent[1] == 1.0


def test_partial_keeps_its_attributes():
    p = capstan.jvp(lambda x: functools.partial(math.pow, x, y=2.0).args[0] * 1.0, (0.5,), (1.0,))
    assert p == (0.5, 1.0)


def test_frexp_stays_refused_so_that_mpmath_conversions_are_not_silent():
    # (mpmath.mpf(x) takes x apart with frexp and int(); a frexp rule would let int() drop
    # the derivative silently)
    mpmath = pytest.importorskip("mpmath")
    with pytest.raises(capstan.NoRuleError, match="frexp"):
        capstan.jvp(lambda x: float(mpmath.mpf(x) ** 2), (0.7,), (1.0,))


def test_astype_copy_has_its_own_tangent():
    def f(q):
        p = np.asarray(q * 2.0)
        out = np.astype(p, p.dtype, copy=True) if hasattr(np, "astype") else p.astype(p.dtype)
        out[np.asarray(True)] = 7.0  # (a write into the copy leaves p and its derivative alone)
        return p

    assert capstan.jvp(f, (0.7,), (1.0,))[1] == 2.0


# ----------------------------------------------------------------------------- eigvals of a pencil
def test_generalized_eigenvalues_in_both_matrices():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 3))
    b = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    for case in (Case(lambda a, b: scipy_linalg.eigvals(a, b), a, b),
                 Case(lambda a, b: scipy_linalg.eig(a, b, right=False), a + 1j * rng.standard_normal((3, 3)), b),
                 Case(lambda b: np.abs(scipy_linalg.eigvals(a, b)), b)):
        check_forward(case)
        check_reverse(case)


def test_generalized_eigenvalues_refuse_what_has_no_derivative():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 0.2], [0.0, 0.4, 2.0]])
    with pytest.raises(ValueError, match="infinite eigenvalue"):
        capstan.gradient(lambda b: np.sum(np.real(scipy_linalg.eigvals(a, b))), np.diag([1.0, 0.0, 2.0]))
    rotation = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    with pytest.raises(TypeError, match="scipy.linalg.eig"):  # (complex eigenvectors of a pencil: no rule)
        capstan.gradient(lambda m: np.sum(np.real(scipy_linalg.eig(m, np.eye(3))[1])), rotation)
    with pytest.raises(TypeError, match="scipy.linalg.eig"):  # (second order: the left vectors' rule)
        capstan.hessian(lambda m: np.sum(np.real(scipy_linalg.eigvals(m, np.eye(3) * 2.0))), a)


def test_a_write_into_a_products_result_leaves_the_factors_derivative_alone():
    # (y = x * 1.0 once shared x's tangent array in forward mode: the write into y wrote
    # into x's derivative too, and sum(x) came out with derivative 0)
    def f(x):
        y = x * 1.0
        y[...] = 0.0
        return np.sum(x)

    assert capstan.jvp(f, (np.array([0.3, 0.5]),), (np.ones(2),))[1] == 2.0

    def g(x):  # (forward over reverse of a write over values read before: y[...] = y * x)
        y = x * 1.0
        y[...] = y * x
        return np.sum(y)

    np.testing.assert_allclose(capstan.hessian(g, np.array([0.3, -0.5, 0.8])), 2 * np.eye(3))
