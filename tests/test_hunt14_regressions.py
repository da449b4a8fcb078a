"""Regressions from the fourteenth bug hunt (leftovers of earlier hunts): bad input that
raised Python's own unclear message or was accepted silently, a pullback answering
``None`` for an output without derivative, builtin kernels of ``np.vectorize`` returning
truth values, and functions that had no derivative rule."""
import math

import numpy as np
import pytest

import capstan
import overdub
from overdub import Context, primitive


# ------------------------------------------------------------------ hook
def test_hook_with_a_non_callable_inside_gradient():
    """Was "TypeError: 'int' object is not callable" from the backward pass."""
    with pytest.raises(TypeError, match=r"capstan\.hook\(fn, x\): fn must be callable.*got 3"):
        capstan.gradient(lambda x: capstan.hook(3, x) * 2.0, 1.0)


@pytest.mark.parametrize("run", [lambda f: f(1.0), lambda f: capstan.D(f, 1.0)])
def test_hook_with_a_non_callable_outside_reverse_mode(run):
    """Was accepted (the identity) outside reverse mode: the same program now fails the same
    way in and out of a differentiation."""
    with pytest.raises(TypeError, match=r"capstan\.hook\(fn, x\): fn must be callable"):
        run(lambda x: capstan.hook(3, x) * 2.0)


# ------------------------------------------------------------------ @capstan.adjoint
def _with_adjoint(rule, nargs=1):
    if nargs == 1:
        def f(x):
            return x * 2.0
    else:
        def f(x, y):
            return x * y
    capstan.adjoint(f)(rule)
    return f


@pytest.mark.parametrize("rule, got", [
    (lambda x: 2.0 * x, r"returned float"),
    (lambda x: (2.0 * x, lambda dy: (dy,), 0), r"returned a tuple of 3"),
    (lambda x: (2.0 * x, 3), r"returned \(y, int\), whose pullback is not callable"),
])
def test_adjoint_rule_not_returning_a_pair(rule, got):
    """Was 'cannot unpack non-iterable float object', 'too many values to unpack' or
    "'int' object is not callable"."""
    f = _with_adjoint(rule)
    with pytest.raises(TypeError, match=r"@capstan\.adjoint\(.*f\): the rule .* " + got):
        capstan.gradient(f, 1.0)


@pytest.mark.parametrize("rule, nargs, got", [
    (lambda x: (2.0 * x, lambda dy: 2.0 * dy), 1, r"returned a bare float.*\(1 here"),
    (lambda x, y: (x * y, lambda dy: (dy * y,)), 2, r"returned a tuple of 1.*\(2 here"),
    (lambda x: (2.0 * x, lambda dy: (2.0 * dy, 1.0)), 1, r"returned a tuple of 2.*\(1 here"),
])
def test_adjoint_pullback_with_the_wrong_number_of_cotangents(rule, nargs, got):
    """A bare cotangent raised "'float' object is not iterable"; too few or too many were
    accepted silently (too few: a None gradient for the second argument)."""
    f = _with_adjoint(rule, nargs)
    with pytest.raises(TypeError, match=r"@capstan\.adjoint: the pullback .* " + got):
        capstan.gradient(f, *([2.0] * nargs))


def test_adjoint_pullback_of_the_right_length_still_works():
    f = _with_adjoint(lambda x, y: (x * y, lambda dy: [dy * y, None]), 2)
    assert capstan.gradient(f, 2.0, 3.0) == (3.0, None)
    g = _with_adjoint(lambda x: [2.0 * x, lambda dy: (2.0 * dy,)])
    assert capstan.gradient(lambda x: g(x) * x, 3.0) == (12.0,)
    assert capstan.hessian(lambda x: g(x) * x, 3.0) == pytest.approx(4.0)


# ------------------------------------------------------------------ overdub entry points
class _Plain(Context):
    pass


@pytest.mark.parametrize("entry", [overdub.recurse, overdub.fallback])
def test_recurse_and_fallback_of_a_non_callable(entry):
    """Was "TypeError: 'int' object is not callable" (overdub.overdub named itself)."""
    name = entry.__name__
    with pytest.raises(TypeError, match=r"^%s\(ctx, f, \.\.\.\): f must be callable, got int" % name):
        entry(_Plain(), 3)


def test_a_wildcard_recursing_into_a_non_callable_keeps_python_s_message():
    """Inside a run, the non-callable comes from the user's code: plain Python's error."""
    class Every(Context):
        @primitive()
        def every(self, f, *args, **kwargs):
            return overdub.recurse(self, f, *args, **kwargs)

    def user():
        x = 3
        return x()

    with pytest.raises(TypeError, match=r"^'int' object is not callable$"):
        overdub.overdub(Every(), user)


def test_context_with_a_non_callable_pass_names_the_class():
    with pytest.raises(TypeError, match=r"^_Plain\(metadata=None, pass_=None\): pass_ must be a callable"):
        _Plain(pass_=3)
    with pytest.raises(TypeError, match=r"^ctx\.similar\(.*pass_ must be a callable"):
        _Plain().similar(pass_=3)


def test_bit32pass_called_by_hand():
    """Was a message naming replace_match, which the user never called."""
    with pytest.raises(TypeError, match=r"^capstan\.bit32pass\(ctx_type, code\): code must be a "
                                        r"bytecode\.Bytecode, got int"):
        capstan.bit32pass(3, 4)


# ------------------------------------------------------------------ pullback of a non-number
@pytest.mark.parametrize("f, dy", [
    (lambda x: "abc", 1.0),
    (lambda x: None, 1.0),
    (lambda x: (x * 2.0, "label"), (1.0, 1.0)),
])
def test_pullback_cotangent_for_an_output_without_derivative(f, dy):
    """``back(dy)`` answered ``(None,)`` (or dropped the part), where ``gradient`` refuses
    the same output."""
    y, back = capstan.pullback(f, 1.0)
    with pytest.raises(TypeError, match=r"capstan\.pullback: back\(dy\) got a cotangent for .* "
                                        r"in f's output, which is not a number"):
        back(dy)


def test_pullback_none_for_an_output_without_derivative_is_fine():
    y, back = capstan.pullback(lambda x: (x * 2.0, "label"), 1.0)
    assert back((1.0, None)) == (2.0,)
    y, back = capstan.pullback(lambda x: 3, 1.0)  # (an int: a constant, as gradient says)
    assert back(1.0) == (None,)


# ------------------------------------------------------------------ np.vectorize of a builtin
@pytest.mark.parametrize("kernel, otypes", [(bool, None), (bool, [bool]), (math.isfinite, None),
                                            (bool, [int])])
def test_vectorize_of_a_builtin_returning_truth_values(kernel, otypes):
    """``np.vectorize(bool)`` was refused ("the kernel bool must return one real number per
    element"), though a Python kernel returning bools worked: its result has no
    derivative, plain truth values as NumPy gives them."""
    v = np.vectorize(kernel, otypes=otypes)
    x = np.array([0.5, -1.5, 2.0])
    seen = []

    def f(x):
        b = v(x)
        seen.append(b)
        return np.sum(b * x ** 2)

    expected = v(x)
    g, = capstan.gradient(f, x)
    np.testing.assert_allclose(g, 2 * x)
    assert seen[-1].dtype == expected.dtype and not isinstance(seen[-1], overdub.Tagged)
    np.testing.assert_array_equal(seen[-1], expected)
    assert capstan.D(lambda s: f(s * x), 1.0) == pytest.approx(2 * np.sum(x ** 2))
    np.testing.assert_allclose(capstan.hessian(f, x), 2 * np.eye(3))


def test_vectorize_of_int_gives_ints_as_numpy_does():
    """``np.vectorize(int)`` gave floats under differentiation (ints without)."""
    x = np.array([0.5, 1.5, -2.5])
    seen = []

    def f(x):
        seen.append(np.vectorize(int)(x))
        return np.sum(seen[-1] * x)

    np.testing.assert_allclose(capstan.gradient(f, x)[0], [0.0, 1.0, -2.0])
    assert seen[-1].dtype == np.vectorize(int)(x).dtype


@pytest.mark.parametrize("point", [np.array([0.0, 1.5]), 0.0])
def test_vectorize_of_bool_at_a_differentiated_zero_is_refused(point):
    """``bool`` of a differentiated 0 is a test that held (``sum(bool(x) * x)`` is ``x``,
    whose slope 1 the branch misses), as for a Python kernel or ``bool(x)`` in the program."""
    v = np.vectorize(bool)
    with pytest.raises(capstan.NoRuleError, match="truth test"):
        capstan.gradient(lambda x: np.sum(v(x) * x), point)
    with pytest.raises(capstan.NoRuleError, match="truth test"):
        capstan.jvp(lambda x: np.sum(v(x) * x), (np.array([0.0, 1.5]),), (np.ones(2),))
