"""scipy.linalg functions found by a sweep of the module with a differentiated argument in
each position: ``solve_toeplitz`` had no rule (NoRuleError from its Levinson kernel),
``toeplitz`` of batched columns (SciPy 1.17 broadcasts batch dimensions) raised an internal
ValueError, and ``sqrtm`` with a differentiated value in a flag argument raised an
internal TypeError.  Derivatives are checked against central differences."""
import warnings

import numpy as np
import pytest
import scipy.linalg as sl

import capstan

C = np.array([4.0, 1.2, 0.3])
R = np.array([4.0, 0.7, -0.2])
B = np.array([1.0, 2.0, -0.5])
B2 = np.array([[1.0, 0.1], [2.0, 0.3], [-0.5, 1.0]])
M = np.array([[2.1, 0.3, 0.5], [0.2, 1.9, 0.4]])
V = np.array([0.3, -0.5, 1.2, 4.0])
S = np.array([[5.0, 1.0, 0.5], [1.0, 4.0, 0.2], [0.5, 0.2, 3.0]])
X0 = 1.1

CASES = {
    "solve_toeplitz in c": lambda x: sl.solve_toeplitz(x * C, B).sum(),
    "solve_toeplitz in r": lambda x: sl.solve_toeplitz((C, x * R), B).sum(),
    "solve_toeplitz in c, r and b (matrix)": lambda x: (sl.solve_toeplitz((C + x, R * x), x * B2) ** 2).sum(),
    "solve_toeplitz in b": lambda x: sl.solve_toeplitz(C, B * x).sum(),
    "toeplitz, batched columns": lambda x: (sl.toeplitz(x * M, V) ** 2).sum(),
    "toeplitz, batched rows": lambda x: (sl.toeplitz(V[:3], x * M) ** 2).sum(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_first_and_second_derivatives(name):
    f, h = CASES[name], 1e-4
    first = (f(X0 + h) - f(X0 - h)) / (2 * h)
    second = (f(X0 + h) - 2 * f(X0) + f(X0 - h)) / h ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert capstan.D(f, X0) == pytest.approx(first, rel=1e-6)
        assert capstan.gradient(f, X0)[0] == pytest.approx(first, rel=1e-6)
        assert capstan.hessian(f, X0) == pytest.approx(second, rel=1e-4, abs=1e-6)


def test_solve_toeplitz_keeps_scipys_value():
    def f(x):
        return sl.solve_toeplitz((C, x * R), B)

    y, _ = capstan.jvp(f, (X0,), (1.0,))
    np.testing.assert_array_equal(y, sl.solve_toeplitz((C, X0 * R), B))


def test_toeplitz_agrees_with_scipy_on_batches():
    from capstan.rules.stride_rules import _toeplitz
    for c, r in ((M, V), (V, M[0]), (M, None), (M[None], M), (np.array([1 + 2j, 3]), None)):
        np.testing.assert_array_equal(_toeplitz(c, r), sl.toeplitz(c, r))


def test_a_differentiated_flag_of_a_matrix_function_is_refused():
    """(SciPy 1.18 removed sqrtm's flags: there the call fails as it does plainly.)"""
    def f(x):
        return sl.sqrtm(S, x * np.ones(2)).sum()

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            f(X0)
        expected = capstan.NoRuleError, "does not cover its argument"
    except TypeError:  # (no such argument: Python's TypeError, or refused before the call)
        expected = (TypeError, capstan.NoRuleError), "takes 1 positional argument|does not cover its argument"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (sqrtm's disp=)
        for entry in (capstan.D, capstan.gradient):
            with pytest.raises(expected[0], match=expected[1]):
                entry(f, X0)
