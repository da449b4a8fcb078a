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


# ------------------------------------------------------------------ rules that were missing
def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


sc = pytest.importorskip("scipy.special")
stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("f, x, expected", [
    (lambda z: sc.hyp0f1(1.5, z), 0.7, 0.8729993718497425),  # (mpmath's, 30 digits)
    (lambda z: sc.hyperu(0.5, 1.5, z), 0.7, -0.8537347209531384),
    (lambda x: sc.zetac(x), 2.5, -0.38734195032621),
    (lambda m: sc.ellipkinc(0.7, m), 0.3, 0.0585699547087012),
    (lambda m: sc.ellipeinc(0.7, m), 0.3, -0.05396184696448806),
    (lambda a: sc.agm(a, 2.0), 1.0, 0.6052092391381492),
    (lambda p: stats.binom.pmf(3, 10, p), 0.45, -1.00895935078125),
    (lambda p: stats.nbinom.pmf(3, 5.5, p), 0.45, 0.6228486987992445),
    (lambda n: stats.nbinom.pmf(3, n, 0.45), 5.5, -0.03032575265349122),
])
def test_functions_that_had_no_rule(f, x, expected):
    """Each raised NoRuleError ("has no derivative rule"); the expected slopes are mpmath's."""
    assert capstan.D(f, x) == pytest.approx(expected, rel=1e-12)
    assert capstan.gradient(f, x)[0] == pytest.approx(expected, rel=1e-12)
    assert capstan.D(lambda t: capstan.D(f, t), x) == pytest.approx(_fd(lambda t: capstan.D(f, t), x), rel=1e-5)


@pytest.mark.parametrize("k, n, p, expected", [(0, 10, 0.0, -10.0), (10, 10, 1.0, 10.0), (9, 10, 1.0, -10.0)])
def test_binomial_pmf_slope_at_the_ends_of_p(k, n, p, expected):
    """The ends, where ``pmf (k/p - (n-k)/(1-p))`` would be 0/0: ``d/dp p^10`` at 1 is 10."""
    assert capstan.gradient(lambda p: stats.binom.pmf(k, n, p), p)[0] == pytest.approx(expected)


def test_elliptic_integrals_in_m_at_and_near_zero():
    """(The closed forms are 0/0 at m = 0: the series takes over.)  dF/dm at 0 is
    (phi/2 - sin(2 phi)/4)/2, dE/dm minus that."""
    phi = 0.7
    half = (phi / 2 - math.sin(2 * phi) / 4) / 2
    assert capstan.D(lambda m: sc.ellipkinc(phi, m), 0.0) == pytest.approx(half, rel=1e-14)
    assert capstan.D(lambda m: sc.ellipeinc(phi, m), 0.0) == pytest.approx(-half, rel=1e-14)
    for m in (5e-4, 2e-3):
        assert capstan.D(lambda m: sc.ellipkinc(phi, m), m) == pytest.approx(
            _fd(lambda t: sc.ellipkinc(phi, t), m, 1e-7), rel=1e-7)


def test_math_nextafter_and_ulp():
    """nextafter moves x by an ulp: slope 1 in x, none in y; ulp is a step function."""
    assert capstan.gradient(lambda x, y: math.nextafter(x, y) * 2.0, 1.3, 2.0) == (2.0, None)
    assert capstan.D(lambda x: math.nextafter(x * x, 0.0), 3.0) == 6.0
    assert capstan.D(lambda x: x * math.ulp(x), 1.5) == math.ulp(1.5)


@pytest.mark.parametrize("f", [lambda x: float(__import__("fractions").Fraction(x)),
                               lambda x: float.fromhex(x.hex())])
def test_exact_exports_stay_refused_with_a_reason(f):
    """The message suggested registering a derivative rule for float.as_integer_ratio."""
    for mode in (capstan.D, capstan.gradient):
        with pytest.raises(capstan.NoRuleError, match=r"exports the exact value .* cannot carry its "
                                                      r"derivative") as info:
            mode(f, 1.5)
        assert "defderiv" not in str(info.value)
