"""Methods called by name on differentiated numbers and arrays: NumPy scalars' methods
(``np.float64(x).round(2)``, ``.clip``, ``.reshape``, ``.cumsum``, ``.tolist``...) are
differentiated through their ndarray twins' rules, and the conversion and protocol special
methods (``x.__float__()``, ``x.__round__(1)``, ``a.__divmod__(b)``, ``a.__iter__()``) as the
builtins they stand for.  Each was a NoRuleError before; every derivative is checked against
central differences, in forward and reverse mode."""
import math
import warnings

import numpy as np
import pytest

import capstan
from capstan.rules.composite_rules import SCALAR_METHODS

X0 = 1.3
A = np.array([0.3, 1.7, 2.2])


def _fd(f, x, h=1e-6):
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


def _both_modes(f, x=X0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(capstan.D(f, x)), float(capstan.gradient(f, x)[0])


def _check_against_differences(f):
    d, g = _both_modes(f)
    expected = _fd(f, X0)
    assert d == pytest.approx(expected, rel=1e-6, abs=1e-8)
    assert g == pytest.approx(expected, rel=1e-6, abs=1e-8)


SCALAR_CASES = {
    "round": lambda x: (x * A)[0].round(1) + x,
    "clip": lambda x: (x * A).max().clip(0.0, 5.0),
    "clip, differentiated bounds": lambda x: np.float64(9.0).clip(0.0, x * 2.0),
    "reshape": lambda x: (x * A)[1].reshape(1)[0],
    "tolist": lambda x: (x * A)[1].tolist() * x,
    "cumsum": lambda x: (x * A)[2].cumsum()[0],
    "cumprod": lambda x: (x * A)[2].cumprod()[0],
    "sum": lambda x: (x * A)[1].sum() * x,
    "prod": lambda x: (x * A)[1].prod(),
    "mean": lambda x: (x * A)[1].mean() ** 2,
    "max": lambda x: (x * A)[1].max(),
    "min": lambda x: (x * A)[1].min(),
    "ravel": lambda x: (x * A)[1].ravel()[0],
    "flatten": lambda x: (x * A)[1].flatten()[0],
    "transpose": lambda x: (x * A)[1].transpose() * x,
    "repeat": lambda x: (x * A)[1].repeat(3).sum(),
    "take": lambda x: (x * A)[1].take(0),
    "copy": lambda x: (x * A)[1].copy() * x,
    "trace": lambda x: np.float64(x).reshape(1, 1).trace(),
    "conj": lambda x: (x * A)[1].conj() * x,
    "var of a scalar (0)": lambda x: (x * A)[1].var() + x,
}


@pytest.mark.parametrize("name", list(SCALAR_CASES))
def test_numpy_scalar_methods_follow_their_array_twins(name):
    _check_against_differences(SCALAR_CASES[name])


def test_the_scalar_methods_are_the_array_methods_with_a_rule():
    names = {f.__name__ for f in SCALAR_METHODS}
    assert {"round", "clip", "reshape", "tolist", "cumsum", "sum", "mean", "transpose"} <= names
    assert "astype" not in names and "item" not in names  # (rules of their own)
    assert "tobytes" not in names  # (its array twin exports the bytes: no rule to follow)


def test_a_scalar_method_without_a_derivative_is_still_refused_clearly():
    with pytest.raises(capstan.NoRuleError, match="tobytes"):
        capstan.D(lambda x: len((x * A)[1].tobytes()) * x, X0)


def test_scalar_methods_keep_numpy_results():
    def f(x):
        s = (x * A)[1]
        r = s.round(1)
        assert type(r) is np.float64 and type(s.reshape(1)) is np.ndarray and type(s.tolist()) is float
        return r

    assert capstan.D(f, X0) == 0.0 and f(X0) == np.float64(2.2)


PROTOCOL_CASES = {
    "float.__float__": lambda x: x.__float__() * x,
    "float64.__float__": lambda x: np.float64(x).__float__() * x,
    "unbound float.__float__": lambda x: float.__float__(x) * x,
    "complex.__complex__": lambda x: complex(x, 1.0).__complex__().real * x,
    "float.__round__": lambda x: x.__round__(1) + x,
    "floating.__round__": lambda x: np.float64(x).__round__(1) + x,
    "float.__divmod__": lambda x: x.__divmod__(0.5)[1] * x,
    "float64.__divmod__": lambda x: np.float64(x).__divmod__(0.5)[1],
    "float.__rdivmod__": lambda x: x.__rdivmod__(4.0)[1],
    "ndarray.__divmod__": lambda x: (x * A).__divmod__(0.5)[1].sum(),
    "ndarray.__iter__": lambda x: sum((x * A).__iter__()),
    "float.__trunc__": lambda x: x.__trunc__() + x,
    "float.__floor__": lambda x: x.__floor__() * x,
    "ndarray.__len__": lambda x: (x * A).__len__() * x,
}


@pytest.mark.parametrize("name", list(PROTOCOL_CASES))
def test_protocol_special_methods_called_by_name(name):
    _check_against_differences(PROTOCOL_CASES[name])


def test_unbound_special_methods_keep_cpythons_type_checks():
    """``complex.__complex__(1.5)`` raises in plain Python; differentiated, it still does."""
    with pytest.raises(TypeError, match="__complex__"):
        complex.__complex__(1.5)
    with pytest.raises(TypeError, match="__complex__"):
        capstan.D(lambda x: complex.__complex__(x), X0)


def test_a_decision_by_name_is_checked_as_the_builtin_is():
    """``x.__bool__()`` and ``x.__int__()`` decide as ``bool(x)`` and ``int(x)`` do: at a
    point where the decision could flip with the input, the same checks apply."""
    assert _both_modes(lambda x: x * 2.0 if (x - 1.0).__bool__() else -x) == (2.0, 2.0)
    assert _both_modes(lambda x: (x * 3.0).__int__() * x) == (3.0, 3.0)
    assert math.isclose(_fd(lambda x: (x * 3.0).__int__() * x, X0), 3.0)
