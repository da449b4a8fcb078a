"""Functions compiled by numba (``@njit``, ``@jit``, ``@vectorize``) are differentiated
through the Python functions they were compiled from (``capstan/jitted.py``); what has
no such function (``@guvectorize``, a ``target='parallel'`` ufunc) or is called in a way
the Python function does not cover is refused clearly.  Before: a NoRuleError for the
dispatchers and a RecursionError (an internal error) for ``@vectorize``."""
import math
import warnings

import numba
import numpy as np
import pytest

import capstan

X0 = 0.7


@numba.njit
def _square(x):
    return x * x


@numba.njit
def _composite(x):
    return _square(x) + math.sin(x)


@numba.njit
def _sum_of_squares(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


@numba.vectorize(["float64(float64)"])
def _kernel(x):
    return x * x + 1.0


@numba.vectorize
def _lazy_kernel(x):  # (compiled on first call, for the types it meets)
    return math.exp(x) - x


@numba.vectorize(["float64(float64, float64)"])
def _binary_kernel(x, y):
    return x * y + y


@numba.guvectorize(["void(float64[:], float64[:])"], "(n)->()")
def _gu_sum(a, out):
    out[0] = (a * a).sum()


def _fd(f, x=X0, h=1e-6):
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


CASES = {
    "njit scalar": lambda x: _composite(x),
    "njit array loop": lambda x: _sum_of_squares(x * np.array([1.0, 2.0, 3.0])),
    "vectorize, array": lambda x: _kernel(x * np.array([1.0, -2.0])).sum(),
    "vectorize, scalar": lambda x: _kernel(x),
    "vectorize, compiled lazily": lambda x: _lazy_kernel(x * np.ones(2)).sum(),
    "vectorize, broadcast": lambda x: _binary_kernel(x * np.ones((2, 1)), np.array([1.0, 2.0, 3.0])).sum(),
    "inside a nested D": lambda x: capstan.D(lambda y: _composite(y) * x, x),
}


@pytest.mark.parametrize("name", list(CASES))
def test_numba_functions_are_differentiated_through_their_python(name):
    f = CASES[name]
    expected = _fd(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert float(capstan.D(f, X0)) == pytest.approx(expected, rel=1e-6)
        assert float(capstan.gradient(f, X0)[0]) == pytest.approx(expected, rel=1e-6)
        assert float(capstan.jvp(f, (X0,), (1.0,))[1]) == pytest.approx(expected, rel=1e-6)


def test_values_and_plain_calls_stay_numbas():
    """Without a differentiated argument the compiled code runs, inside a run too."""
    def f(x):
        assert _square(3.0) == 9.0 and _kernel(np.array([2.0]))[0] == 5.0
        return _composite(x)

    assert capstan.D(f, X0) == pytest.approx(2 * X0 + math.cos(X0))
    assert len(_square.signatures) == 1  # (compiled for float64 only: never called with a tagged value)


@pytest.mark.parametrize("f, match", [
    (lambda x: _gu_sum(x * np.ones(3)), "_gu_sum has no derivative rule"),
    (lambda x: _kernel(x * np.ones(2), out=np.empty(2)).sum(), "keywords \\(out\\)"),
])
def test_what_has_no_python_equivalent_is_refused(f, match):
    for entry in (capstan.D, capstan.gradient):
        with pytest.raises(capstan.NoRuleError, match=match):
            entry(f, X0)


def test_a_python_call_of_a_c_base_is_not_routed_back_into_itself():
    """``super().__call__(x)`` in a class whose ``__call__`` is Python calls its C base's
    call; it was sent back to the object's own ``__call__``, which recursed (numba's DUFunc
    is such a class)."""
    import functools

    calls = []

    class Scaled(functools.partial):
        def __call__(self, *args):
            calls.append(1)
            return super().__call__(*args)

    f = Scaled(lambda s, t: s * t, 3.0)
    assert capstan.D(lambda x: f(x * x), X0) == pytest.approx(6.0 * X0)
    assert capstan.gradient(lambda x: f(x * x), X0)[0] == pytest.approx(6.0 * X0)
    assert len(calls) == 2
