"""Builtins that call a special method of their argument's class (``abs``, ``round``,
``math.floor``/``ceil``/``trunc``, ``next``, ``operator.index``): under a routed context
a Python-level method runs routed, as CPython would call it, with plain Python's results
and errors; capstan then differentiates through it (``abs(vector)`` was refused)."""
import math
import operator

import numpy as np
import pytest

import capstan
import overdub


class Log(overdub.Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata.append(getattr(f, "__qualname__", None))


class Vec:
    def __init__(self, *c):
        self.c = c

    def __abs__(self):
        return math.sqrt(sum(a * a for a in self.c))

    def __round__(self, n=None):
        return ("round", n)

    def __floor__(self):
        return ("floor",)

    def __ceil__(self):
        return ("ceil",)

    def __trunc__(self):
        return ("trunc",)

    def __index__(self):
        return len(self.c)


class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        return self.n


def program():
    v = Vec(3.0, 4.0)
    return (abs(v), operator.abs(v), round(v), round(v, None), round(v, 2), math.floor(v), math.ceil(v),
            math.trunc(v), operator.index(v), [10, 20, 30][v], next(Countdown(2)), next(Countdown(0), "done"),
            abs(-2), round(2.5), math.floor(2.5))


def test_results_are_plain_pythons_and_the_methods_run_routed():
    events = []
    assert overdub.overdub(Log(events), program) == program()
    for name in ("Vec.__abs__", "Vec.__round__", "Vec.__floor__", "Vec.__ceil__", "Vec.__trunc__",
                 "Vec.__index__", "Countdown.__next__"):
        assert name in events, name
    assert events.count("Vec.__abs__") == 2 and events.count("Vec.__round__") == 3


def test_operator_index_takes_an_int_subclass_as_it_is():
    """CPython's ``operator.index`` returns an int (subclass) without calling its
    ``__index__`` (test_index)."""
    class MyInt(int):
        def __index__(self):
            return int(str(self)) + 1

    def program():
        return operator.index(MyInt(7)), MyInt(7).__index__(), [0, 1, 2, 3, 4, 5, 6, 7, 8][MyInt(7)]

    assert overdub.overdub(Log([]), program) == program() == (7, 8, 7)


def test_errors_are_plain_pythons():
    class Bad:
        def __index__(self):
            return 1.5

        def __abs__(self):
            raise KeyError("inside")

    for f in (lambda: operator.index(Bad()), lambda: abs(Bad()), lambda: next(Countdown(0)),
              lambda: round(object()), lambda: math.trunc(object())):
        with pytest.raises(Exception) as plain:
            f()
        with pytest.raises(type(plain.value)) as routed:
            overdub.overdub(Log([]), f)
        assert str(routed.value) == str(plain.value)


def test_capstan_differentiates_through_the_special_methods():
    f = lambda x: abs(Vec(x, 2.0 * x, 1.0)) + operator.abs(Vec(x * x))
    x, h = 0.7, 1e-6
    expected = (f(x + h) - f(x - h)) / (2 * h)
    assert capstan.D(f, x) == pytest.approx(expected, rel=1e-7)
    assert capstan.gradient(f, x)[0] == pytest.approx(expected, rel=1e-7)
    g = lambda v: abs(Vec(*v))
    np.testing.assert_allclose(capstan.gradient(g, np.array([3.0, 4.0]))[0], [0.6, 0.8], rtol=1e-12)


class Quantity:
    """A number by protocol: ``float(q)`` runs its Python ``__float__``."""

    def __init__(self, v):
        self.v = v

    def __float__(self):
        return self.v * 2.0 + 1.0


class Returns:
    def __init__(self, r):
        self.r = r

    def __float__(self):
        return self.r


def float_program():
    import warnings

    class Sub(float):
        pass

    out = [float(Quantity(1.5)), float(Returns(2.5)), float("3.5"), float(4)]
    for r in (1, "x", None):
        try:
            float(Returns(r))
        except TypeError as exc:
            out.append(str(exc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out.append(float(Returns(Sub(2.0))))
    out.append([(str(w.message), w.category, w.lineno) for w in caught])
    try:
        float(Returns(1.0), 2)
    except TypeError as exc:
        out.append(str(exc))
    return out


def test_float_runs_a_python_float_method_routed_with_plain_pythons_results_and_warnings():
    events = []
    assert overdub.overdub(Log(events), float_program) == float_program()
    assert "Quantity.__float__" in events and "Returns.__float__" in events


@pytest.mark.parametrize("f, df, d2f", [
    (lambda x: float(Quantity(x)) ** 2, lambda x: 4 * (2 * x + 1), lambda x: 8.0),
    (lambda x: math.sin(Quantity(x)), lambda x: 2 * math.cos(2 * x + 1), lambda x: -4 * math.sin(2 * x + 1)),
    (lambda x: math.atan2(Quantity(x), 2.0), lambda x: 2 * 2.0 / ((2 * x + 1) ** 2 + 4.0),
     lambda x: -16.0 * (2 * x + 1) / ((2 * x + 1) ** 2 + 4.0) ** 2),
    (lambda x: float(np.float64(Quantity(x))) * x, lambda x: 4 * x + 1, lambda x: 4.0),
], ids=["float", "math.sin", "math.atan2", "np.float64"])
def test_capstan_differentiates_through_a_python_float_method(f, df, d2f):
    """``float(q)``, ``math.sin(q)`` and ``np.float64(q)`` call ``q.__float__`` (from C for
    the last two): it computes with the differentiated value, and the derivative is kept
    (it was a TypeError naming overdub's tagged type)."""
    x = 0.35
    assert capstan.D(f, x) == pytest.approx(df(x), rel=1e-12)
    assert capstan.gradient(f, x)[0] == pytest.approx(df(x), rel=1e-12)
    assert capstan.D(lambda y: capstan.D(f, y), x) == pytest.approx(d2f(x), rel=1e-10)
    assert capstan.hessian(f, x) == pytest.approx(d2f(x), rel=1e-10)
