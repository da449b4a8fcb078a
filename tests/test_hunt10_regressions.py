"""Regressions from the tenth bug hunt (user-defined numeric classes and Python language
features around differentiated values, each program in every entry point against finite
differences): user classes registered as ``numbers.Real``, classes overriding NumPy's
ufuncs and functions in Python, ``complex()`` of a user object, and ``operator``'s getters.
Each test failed (a wrong number, an internal exception or a refusal of a derivative that
plain Python computes) before its fix, except the guards marked as such."""
import math
import numbers
import warnings

import numpy as np
import pytest

import capstan
from overdub import Context, overdub

X = 0.7


def _fd(f, x=X, h=1e-5):
    d = lambda h: (f(x + h) - f(x - h)) / (2 * h)  # noqa: E731
    return (4 * d(h / 2) - d(h)) / 3


def _all_modes(f, x=X):
    """The derivative of scalar ``f`` at ``x`` in the four first-order entry points."""
    _, back = capstan.pullback(f, x)
    return [capstan.D(f, x), capstan.jvp(f, (x,), (1.0,))[1], capstan.gradient(f, x)[0], back(1.0)[0]]


def _check(f, x=X, second=True):
    ref = _fd(f, x)
    for d in _all_modes(f, x):
        assert float(d) == pytest.approx(ref, rel=1e-6, abs=1e-8)
    if second:  # hessian, D o D and gradient o D against differences of differences
        ref2 = _fd(lambda t: _fd(f, t, 1e-4), x, 1e-3)
        for d2 in (capstan.hessian(f, x), capstan.D(lambda t: capstan.D(f, t), x),
                   capstan.gradient(lambda t: capstan.D(f, t), x)[0]):
            assert float(np.asarray(d2)) == pytest.approx(ref2, rel=1e-4, abs=1e-6)


# ------------------------------------------------------------------ user numbers.Real classes
class _Real:
    """A number class holding a value, registered (not subclassed) as ``numbers.Real``."""

    def __init__(self, v):
        self.v = v

    def __mul__(self, o):
        return _Real(self.v * o)

    def __rmul__(self, o):
        return _Real(o * self.v)

    def __truediv__(self, o):
        return _Real(self.v / o)

    def __iadd__(self, o):
        self.v = self.v + 2 * o
        return self

    def __float__(self):
        return float(self.v)


numbers.Real.register(_Real)


def _iadd(x):
    r = _Real(x)
    r += x * x
    return r.v


# The operators took a numbers.Real for a constant of their rules: the derivative inside
# the object was dropped (0.7 for 1.4), or the rule's formula failed on it.
@pytest.mark.parametrize("f", [
    lambda x: (_Real(x) * x).v,
    lambda x: (x * _Real(x)).v,
    lambda x: (_Real(x) / x ** 2).v,
    _iadd,
    lambda x: float(_Real(x) * x) ** 2,
], ids=["mul", "rmul", "truediv", "iadd", "float"])
def test_a_user_class_registered_as_a_number_runs_its_own_operators(f):
    _check(f)


# ------------------------------------------------- Python overrides of NumPy's ufuncs/functions
class _Wrap:
    """A duck array: NumPy hands ufuncs and functions to its Python methods."""

    def __init__(self, a):
        self.a = np.asarray(a)

    def __array__(self, dtype=None, copy=None):
        return self.a

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        ins = [i.a if isinstance(i, _Wrap) else i for i in inputs]
        out = getattr(ufunc, method)(*ins, **kwargs)
        return out if method == "reduce" else _Wrap(out)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.concatenate:
            return _Wrap(np.concatenate([w.a for w in args[0]]))
        args = [a.a if isinstance(a, _Wrap) else a for a in args]
        return _Wrap(func(*args, **kwargs))


# NumPy called the override from C, where the values it read were refused or lost (the
# wrong branch: __array__ instead of __array_ufunc__, an internal AttributeError)
@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.sin(_Wrap([x, 2 * x]))).a.item(),
    lambda x: np.multiply(_Wrap([x, x * x]), 3.0).a.sum(),
    lambda x: np.multiply(np.array([x, 1.0]), _Wrap([x, x])).a.sum(),
    lambda x: (np.array([x, 1.0]) * _Wrap([x, x])).a.sum(),
    lambda x: (_Wrap([x, x * x]) + np.array([x, 1.0]) ** 2).a.sum(),
    lambda x: (np.array([3.0, 1.0]) * _Wrap([x, x * x])).a.sum(),
    lambda x: np.add.reduce(_Wrap([x, x * x])),
    lambda x: np.concatenate([_Wrap([x]), _Wrap([x ** 3])]).a.sum(),
    lambda x: np.sin.__call__(np.array([x, x * x])).sum(),
], ids=["ufunc+function", "ufunc", "ufunc of array and wrap", "array * wrap", "wrap + array",
        "plain array * wrap", "ufunc.reduce", "function of a list", "ufunc.__call__"])
def test_python_overrides_of_numpy_run_in_the_differentiation(f):
    _check(f, second=False)


def test_override_results_are_plain_pythons():
    """The override is called as NumPy calls it (its result as it is, NotImplemented
    passes to the next one)."""
    class Declines:
        def __array_ufunc__(self, *args, **kwargs):
            return NotImplemented

    w = _Wrap([1.0, 2.0])
    for run in (lambda f, *a: f(*a), lambda f, *a: overdub(Context(), f, *a)):
        assert type(run(np.sin, w)) is _Wrap
        with pytest.raises(TypeError):
            run(np.sin, Declines())
    assert capstan.D(lambda x: type(np.sin(_Wrap([x]))).__name__ == "_Wrap" and x * 2, X) == 2.0


# ------------------------------------------------------------------------------ complex(obj)
class _C:
    def __init__(self, v):
        self.v = v

    def __complex__(self):
        return complex(self.v, self.v)


class _F:
    def __init__(self, v):
        self.v = v

    def __float__(self):
        return self.v * 2


# complex(obj) called __complex__ (or __float__) from C: refused before, as plain float() was
@pytest.mark.parametrize("f", [
    lambda x: abs(complex(_C(x * x))),
    lambda x: complex(_F(x)).real * x,
], ids=["__complex__", "__float__"])
def test_complex_of_a_user_object_runs_its_python_method(f):
    _check(f)


def test_complex_keeps_cpythons_checks_on_the_result():
    """(A guard: plain Python's errors and warnings, routed or not.)"""
    class Bad:
        def __complex__(self):
            return 1.0

    class Sub(complex):
        pass

    class Subclassed:
        def __complex__(self):
            return Sub(1, 2)

    for run in (complex, lambda o: overdub(Context(), complex, o)):
        with pytest.raises(TypeError, match="__complex__ returned non-complex"):
            run(Bad())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert type(run(Subclassed())) is complex
        assert any("strict subclass of complex" in str(w.message) for w in caught)


# ------------------------------------------------------------------------ operator's getters
class _P:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def norm(self):
        return math.hypot(self.a, self.b)


# C getters read values out of tuples and objects unseen: refused before
@pytest.mark.parametrize("f", [
    lambda x: max([(x, 1.0), (x * x, 2.0)], key=__import__("operator").itemgetter(0))[0] ** 3,
    lambda x: __import__("operator").itemgetter(0)((x, 1.0)) ** 3,
    lambda x: __import__("operator").itemgetter(0, 2)((x, 1.0, x * x))[1] * x,
    lambda x: __import__("operator").methodcaller("norm")(_P(x, x * x)),
    lambda x: __import__("operator").methodcaller("__mul__", x)(x),
], ids=["max key", "itemgetter", "itemgetter items", "methodcaller", "methodcaller of a value"])
def test_operator_getters_keep_the_derivative(f):
    _check(f)


def test_operator_getters_results_are_plain_pythons():
    """(A guard: the Python equivalents answer as the C getters do.)"""
    import operator
    p = _P(1.0, 2.0)
    cases = [(operator.itemgetter(1), [1, 2]), (operator.itemgetter(0, 1), (3, 4)),
             (operator.attrgetter("a.real"), p), (operator.methodcaller("norm"), p),
             (operator.methodcaller("count", 2), [2, 2])]
    for getter, obj in cases:
        assert overdub(Context(), getter, obj) == getter(obj)
    with pytest.raises(IndexError):
        capstan.D(lambda x: operator.itemgetter(5)([x]), X)
