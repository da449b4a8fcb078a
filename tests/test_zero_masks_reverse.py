"""Reverse mode over arrays: an exact zero cotangent against an infinite partial.

An array's cotangent holds two kinds of exact zeros: structural ones, which hold near the
point (an index not read, ``np.where``'s untaken branch, a constant factor, a seed of 0),
and a value's (``cos``'s slope at 0).  Against an infinite partial (``sqrt`` at 0) the
first wins -- that element does not depend on the input -- and the second must not: the
limit depends on higher orders (``cos(sqrt(x))`` at 0 has slope -1/2), so reverse mode
refuses, as forward mode does.  Before, every zero of an array's cotangent won, a silent
wrong 0.  Each refusal below is checked against forward mode (which refuses too) and
against finite differences off the point; each guard against forward mode and by hand.
"""
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import capstan

X0 = np.array([0.0, 1.0])

# f, the point, f near the point for finite differences (its argument moved by h > 0 at
# every element that is 0), the true slope at the point where it exists
UNDEFINED_BEFORE = {
    "sum(cos(sqrt(array)))": (lambda x: np.sum(np.cos(np.sqrt(x))), X0),
    "cos(sqrt(x)) through NumPy at a float": (lambda x: float(np.cos(np.sqrt(x))), 0.0),
    "stats.gamma.pdf(x, 2)": (lambda x: float(stats.gamma.pdf(x, 2)), 0.0),
    "float(sum(cos(sqrt([x, 1 + x]))))": (lambda x: float(np.sum(np.cos(np.sqrt([x, 1.0 + x])))), 0.0),
    "sum(sqrt(array) ** 2)": (lambda x: np.sum(np.sqrt(x) ** 2), X0),
    "sum(x * sqrt(x))": (lambda x: np.sum(x * np.sqrt(x)), X0),
    "cos(sqrt(array)) through reshape": (lambda x: np.sum(np.cos(np.sqrt(x).reshape(2, 1))), X0),
    "cos(sqrt(array)) through concatenate": (lambda x: np.sum(np.cos(np.concatenate([np.sqrt(x), x]))), X0),
    "cos(sqrt(array)) through a hook": (lambda x: np.sum(np.cos(capstan.hook(lambda g: g, np.sqrt(x)))), X0),
    "cos of an array of math.sqrt": (lambda x: float(np.sum(np.cos(np.array([math.sqrt(x), x])))), 0.0),
    "elementwise(cos(sqrt(t)))": (lambda x: np.sum(capstan.elementwise(lambda t: math.cos(math.sqrt(t)))(x)), X0),
}
SLOPES = {  # the one-sided slope at 0, where it exists
    "sum(cos(sqrt(array)))": [-0.5, -math.sin(1.0) / 2],
    "cos(sqrt(x)) through NumPy at a float": -0.5,
    "stats.gamma.pdf(x, 2)": 1.0,
    "float(sum(cos(sqrt([x, 1 + x]))))": -0.5 - math.sin(1.0) / 2,
    "sum(sqrt(array) ** 2)": [1.0, 1.0],
    "sum(x * sqrt(x))": [0.0, 1.5],
}


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn()


def _entries(f, x):
    """Every reverse-mode entry point, as (name, thunk)."""
    yield "gradient", lambda: capstan.gradient(f, x)
    yield "grad", lambda: capstan.grad(f)(x)
    yield "value_and_grad", lambda: capstan.value_and_grad(f)(x)
    yield "pullback", lambda: capstan.pullback(f, x)[1](1.0)
    yield "jacrev", lambda: capstan.jacrev(f)(x)
    yield "jacobian", lambda: capstan.jacobian(f, x, mode="reverse")


@pytest.mark.parametrize("name", sorted(UNDEFINED_BEFORE))
def test_a_value_zero_of_an_array_cotangent_does_not_win_over_an_infinite_partial(name):
    f, x = UNDEFINED_BEFORE[name]
    for entry, thunk in _entries(f, x):
        with pytest.raises(capstan.NoRuleError, match="capstan.%s: the derivative came out NaN" % entry):
            _quiet(thunk)


@pytest.mark.parametrize("name", sorted(UNDEFINED_BEFORE))
def test_forward_mode_refuses_the_same(name):
    f, x = UNDEFINED_BEFORE[name]
    with pytest.raises(capstan.NoRuleError, match="NaN"):
        _quiet(lambda: capstan.jacobian(f, x, mode="forward"))


@pytest.mark.parametrize("name", sorted(SLOPES))
def test_off_the_point_reverse_mode_agrees_with_finite_differences(name):
    f, x = UNDEFINED_BEFORE[name]
    x = np.asarray(x, dtype=float) + 1e-6 if np.ndim(x) else float(x) + 1e-6
    got = np.asarray(capstan.gradient(f, x)[0])
    h = 1e-8
    if np.ndim(x):
        fd = np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])
    else:
        fd = (f(x + h) - f(x - h)) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, SLOPES[name], rtol=1e-2, atol=1e-2)


# zeros that hold near the point: f, the point, the gradient there
GUARDS = {
    "np.where(x > 0, sqrt(x), 0)": (lambda x: np.sum(np.where(x > 0, np.sqrt(x), 0.0)), X0, [0.0, 0.5]),
    "np.where(x > 0, sqrt(x), 0) ** 2": (lambda x: np.sum(np.where(x > 0, np.sqrt(x), 0.0) ** 2), X0, [0.0, 1.0]),
    "cos(np.where(x > 0, sqrt(x), 0))": (lambda x: np.sum(np.cos(np.where(x > 0, np.sqrt(x), 0.0))), X0,
                                         [0.0, -math.sin(1.0) / 2]),
    "np.maximum(sqrt(x), .5)": (lambda x: np.sum(np.maximum(np.sqrt(x), 0.5)), X0, [0.0, 0.5]),
    "cos(np.maximum(sqrt(x), .5))": (lambda x: np.sum(np.cos(np.maximum(np.sqrt(x), 0.5))), X0,
                                     [0.0, -math.sin(1.0) / 2]),
    "np.clip(sqrt(x), .5, 2)": (lambda x: np.sum(np.clip(np.sqrt(x), 0.5, 2.0)), X0, [0.0, 0.5]),
    "sqrt(x)[1]": (lambda x: np.sqrt(x)[1], X0, [0.0, 0.5]),
    "cos(sqrt(x)[1])": (lambda x: np.cos(np.sqrt(x)[1]), X0, [0.0, -math.sin(1.0) / 2]),
    "sum(sqrt(x)[1:])": (lambda x: np.sum(np.sqrt(x)[1:]), X0, [0.0, 0.5]),
    "a masked sum": (lambda x: np.sum(np.sqrt(x) * np.array([0.0, 1.0])), X0, [0.0, 0.5]),
    "a masked sum of cos(sqrt)": (lambda x: np.sum(np.cos(np.sqrt(x)) * np.array([0.0, 1.0])), X0,
                                  [0.0, -math.sin(1.0) / 2]),
    "a Huber loss": (lambda r: np.sum(np.where(np.abs(r) < 1, 0.5 * r ** 2, np.abs(r) - 0.5)), np.array([0.0, 2.0]),
                     [0.0, 1.0]),
    "norm at 0": (lambda x: np.linalg.norm(x), np.zeros(3), [0.0, 0.0, 0.0]),
    "sqrt(x) at 0": (lambda x: np.sum(np.sqrt(x)), X0, [math.inf, 0.5]),
    "sqrt after a write": (lambda x: (lambda a: (a.__setitem__(0, 1.0), np.sum(np.cos(a)))[1])(np.sqrt(x)), X0,
                           [0.0, -math.sin(1.0) / 2]),
    "cos(sqrt) where x > 0 is known": (lambda x: np.sum(np.cos(np.sqrt(x))), np.array([0.5, 1.0]),
                                       [-math.sin(math.sqrt(0.5)) / (2 * math.sqrt(0.5)), -math.sin(1.0) / 2]),
    "elementwise(max(sqrt(t), .5))": (lambda x: np.sum(capstan.elementwise(lambda t: max(math.sqrt(t), 0.5))(x)),
                                      X0, [0.0, 0.5]),
    "elementwise(0.0 * sqrt(t) + t)": (lambda x: np.sum(capstan.elementwise(lambda t: 0.0 * math.sqrt(t) + t)(x)),
                                       X0, [1.0, 1.0]),
    "elementwise(1.0 ** sqrt(t) + t)": (lambda x: np.sum(capstan.elementwise(lambda t: 1.0 ** math.sqrt(t) + t)(x)),
                                        X0, [1.0, 1.0]),
}


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_a_structural_zero_still_wins(name):
    f, x, want = GUARDS[name]
    for entry, thunk in _entries(f, x):
        got = _quiet(thunk)
        got = got[0] if type(got) is tuple and entry in ("gradient", "pullback") else got
        got = got[1] if entry == "value_and_grad" else got
        np.testing.assert_allclose(np.asarray(got, dtype=float), want, rtol=1e-12, err_msg=entry)


@pytest.mark.parametrize("name", sorted(n for n in GUARDS if "inf" not in repr(GUARDS[n][2])
                                        and n not in ("norm at 0", "a Huber loss")))
def test_a_structural_zero_agrees_with_forward_mode(name):
    f, x, want = GUARDS[name]
    np.testing.assert_allclose(_quiet(lambda: capstan.jacobian(f, x, mode="forward")), want, rtol=1e-12)


def test_a_jacobians_other_rows_are_structural_zeros():
    """Reverse mode's Jacobian seeds each row with a basis vector: its zeros follow nothing,
    so the infinite slope of sqrt at 0 stays on the diagonal; a value's zero refuses."""
    jac = _quiet(lambda: capstan.jacobian(np.sqrt, X0, mode="reverse"))
    np.testing.assert_array_equal(jac, [[math.inf, 0.0], [0.0, 0.5]])
    with pytest.raises(capstan.NoRuleError):
        _quiet(lambda: capstan.jacobian(lambda x: np.cos(np.sqrt(x)), X0, mode="reverse"))


def test_a_pullbacks_zero_cotangent_is_structural():
    """``dy`` of 0 at the element whose slope is undefined: nothing flows from it."""
    _, back = capstan.pullback(lambda x: np.cos(np.sqrt(x)), X0)
    np.testing.assert_allclose(_quiet(lambda: back(np.array([0.0, 1.0])))[0], [0.0, -math.sin(1.0) / 2])
    with pytest.raises(capstan.NoRuleError):
        _quiet(lambda: back(np.array([1.0, 1.0])))


def test_nested_differentiation_refuses_too():
    f = lambda x: np.sum(np.cos(np.sqrt(x)))
    with pytest.raises(capstan.NoRuleError):
        _quiet(lambda: capstan.hessian(f, X0))
    with pytest.raises(capstan.NoRuleError):
        _quiet(lambda: capstan.gradient(lambda y: capstan.gradient(lambda x: f(x) * y, X0)[0].sum(), 1.0))


def test_a_nan_partial_against_an_untaken_branch_still_gives_its_gradient():
    """(strong_mul's own case: an element that does not depend on the input.)"""
    f = lambda x: np.nansum(np.where(x > 1, np.nan, x) ** 2)
    np.testing.assert_array_equal(_quiet(lambda: capstan.gradient(f, np.array([0.5, 2.0])))[0], [1.0, 0.0])


# Scalar records: a constant operand's exact 0 partial (0.0 * x, 1.0 ** x, 0.0 / x) holds
# near the point, so the zero cotangent it sends wins over sqrt's infinite slope at 0; these
# were refused (NaN) before, where forward mode gives them.
SCALAR_GUARDS = {
    "0.0 * sqrt(x) + x": lambda x: 0.0 * math.sqrt(x) + x,
    "sqrt(x) * 0 + x": lambda x: math.sqrt(x) * 0 + x,
    "1.0 ** sqrt(x) + x": lambda x: 1.0 ** math.sqrt(x) + x,
    "0.0 / (1 + sqrt(x)) + x": lambda x: 0.0 / (1.0 + math.sqrt(x)) + x,
    "0.0 * cos(sqrt(x)) + x": lambda x: 0.0 * math.cos(math.sqrt(x)) + x,
    "np.float64(0) * sqrt(x) + x": lambda x: np.float64(0.0) * math.sqrt(x) + x,
}


@pytest.mark.parametrize("name", sorted(SCALAR_GUARDS))
def test_a_constants_zero_on_a_scalar_record_wins(name):
    f = SCALAR_GUARDS[name]
    assert _quiet(lambda: capstan.D(f, 0.0)) == 1.0  # (forward mode agrees)
    for entry, thunk in _entries(f, 0.0):
        got = _quiet(thunk)
        got = got[1] if entry == "value_and_grad" else got
        got = got[0] if type(got) is tuple else got
        assert float(got) == 1.0, entry


@pytest.mark.parametrize("f", [lambda x: x * math.sqrt(x), lambda x: math.cos(math.sqrt(x)),
                               lambda x: (0.0 + x) * math.sqrt(x), lambda x: math.sqrt(x) * math.sin(x)],
                         ids=["x * sqrt(x)", "cos(sqrt(x))", "(0.0 + x) * sqrt(x)", "sqrt(x) * sin(x)"])
def test_a_zero_taken_at_the_point_on_a_scalar_record_is_still_refused(f):
    for entry, thunk in _entries(f, 0.0):
        with pytest.raises(capstan.NoRuleError, match="NaN"):
            _quiet(thunk)


def test_kept_and_compiled_tapes_tell_the_zeros_apart():
    """``record_tape``'s replay and generated code skipped every zero cotangent (``if g:``):
    ``cos(sqrt(x))`` at 0 gave 0.  The replay now refuses it and keeps a constant's zero;
    the generated code hands a zero that may be a value's to Python's arithmetic error
    (``tape.gradient`` then replays), and still skips a constant's."""
    undefined = capstan.record_tape(lambda x: math.cos(math.sqrt(x)), 1.0)
    with pytest.raises(capstan.NoRuleError, match="tape.gradient"):
        _quiet(lambda: undefined.gradient(0.0))
    with pytest.raises(ArithmeticError):
        undefined.compile()(0.0)
    held = capstan.record_tape(lambda x: 0.0 * math.sqrt(1.0 * x) + x, 1.0)
    assert held.gradient(0.0) == (1.0,)
    assert held.compile()(0.0) == (0.0, (1.0,))
