"""Regressions from the seventh bug hunt (reductions, einsum and indexing, standard-library
numerics, control flow and caches, differentially against finite differences): each test
failed (a zero or ``None`` derivative, or an internal exception) before its fix."""
import fractions
import math

import numpy as np
import pytest

import capstan

A = np.array([[0.3, -0.7, 1.1], [2.0, 0.4, -1.3], [0.4, 0.9, -0.2]])


def _fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# ------------------------------------------------------------------- einsum with a given path
def _einsum_path(a):
    path = np.einsum_path("ij,jk->", A, A)[0]  # (['einsum_path', (0, 1)]: for these two operands)
    return np.einsum("ij,jk->", a, a, optimize=path)


def test_einsum_with_an_explicit_contraction_path():
    # the reverse rule contracted other operands with the user's path: RuntimeError before
    want = _fd_grad(_einsum_path, A)
    assert np.allclose(capstan.gradient(_einsum_path, A.copy())[0], want, atol=1e-7)
    _, back = capstan.pullback(_einsum_path, A.copy())
    assert np.allclose(back(1.0)[0], want, atol=1e-7)
    v = np.ones_like(A)
    assert capstan.jvp(_einsum_path, (A.copy(),), (v,))[1] == pytest.approx(np.sum(want * v))


# ---------------------------------------------------- exact values of NumPy float scalars
@pytest.mark.parametrize("f", [
    lambda a: float(fractions.Fraction(a[0])) * 2,
    lambda a: (lambda p, q: p / q)(*a[0].as_integer_ratio()),
    lambda a: (lambda p, q: p / q)(*np.float32(a[0]).as_integer_ratio()),
    lambda a: a[0].view(np.int64).view(np.float64) * 2,
], ids=["Fraction(a[0])", "float64.as_integer_ratio", "float32.as_integer_ratio", "scalar view round trip"])
def test_numpy_scalar_exports_are_refused(f):
    # an array's element (np.float64) exported its exact value as integers or bits: the
    # derivative was silently dropped (gradient None, jvp 0.0)
    x = np.array([0.3, 1.7])
    with pytest.raises(capstan.NoRuleError):
        capstan.gradient(f, x.copy())
    with pytest.raises(capstan.NoRuleError):
        capstan.jvp(f, (x.copy(),), (np.array([1.0, 0.0]),))


def test_numpy_scalar_view_of_its_own_dtype_carries_the_derivative():
    x = np.array([0.3, 1.7])
    g = capstan.gradient(lambda a: a[0].view(np.float64) * 2 + a[1].view() * 3, x)[0]
    assert np.array_equal(g, [2.0, 3.0])


# ------------------------------------------- values a finished nested run left in globals
class _Slotted:
    __slots__ = ("v",)


_SLOTTED = _Slotted()
_LEFT = None


def _via_global(x):
    def inner(y):
        global _LEFT
        _LEFT = y * x  # tagged by the inner run (finished on return) and by the outer one
        return y

    capstan.D(inner, x)
    return _LEFT


def _via_slot(x):
    def inner(y):
        _SLOTTED.v = (y * x, 2.0 * x)
        return y

    capstan.gradient(inner, x)
    return [_SLOTTED.v[0], _SLOTTED.v[1]]


def test_value_left_in_a_global_by_a_nested_run():
    # d(x * x)/dx = 2x: the outer run read the inner run's dead tag as a constant (0.0, None)
    x = 0.7
    assert capstan.D(_via_global, x) == pytest.approx(1.4)
    assert capstan.gradient(_via_global, x)[0] == pytest.approx(1.4)
    assert capstan.jvp(_via_global, (x,), (1.0,))[1] == pytest.approx(1.4)
    _, back = capstan.pullback(_via_global, x)
    assert back(1.0)[0] == pytest.approx(1.4)
    assert capstan.jacobian(_via_global, x) == pytest.approx(1.4)
    assert capstan.hessian(_via_global, x) == pytest.approx(2.0)
    assert capstan.D(lambda t: capstan.D(_via_global, t), x) == pytest.approx(2.0)


def test_values_left_in_a_slot_by_a_nested_run():
    x = 0.7
    assert capstan.jvp(_via_slot, (x,), (1.0,))[1] == pytest.approx([1.4, 2.0])
    _, back = capstan.pullback(_via_slot, x)
    assert back([1.0, 1.0])[0] == pytest.approx(3.4)


# ----------------------------------------------------- state the run leaves behind
class _Cache:
    value = None


def _class_cache(x):
    if _Cache.value is None:
        _Cache.value = np.array([x, 2 * x])
    return _Cache.value.sum() + x


def test_differentiated_value_stored_as_a_class_attribute():
    # the run's cleanup wrote into the class's mappingproxy: an internal TypeError before
    _Cache.value = None
    assert capstan.D(_class_cache, 0.7) == pytest.approx(4.0)
    assert type(_Cache.value) is np.ndarray  # (left plain, as plain Python leaves it)
    assert capstan.gradient(_class_cache, 0.7)[0] == pytest.approx(1.0)  # the cache: a constant now
    _Cache.value = None
    assert capstan.gradient(_class_cache, 0.7)[0] == pytest.approx(4.0)
    assert type(_Cache.value) is np.ndarray


def test_differentiated_value_stored_in_a_slot_is_left_plain():
    s = _Slotted()

    def f(x):
        s.v = x * 2
        return s.v * x

    assert capstan.D(f, 0.7) == pytest.approx(2.8)
    assert type(s.v) is float
    assert capstan.gradient(f, 0.7)[0] == pytest.approx(2.8)
    assert type(s.v) is float


# ------------------------------------------------- truth tests: exact equalities in disguise
@pytest.mark.parametrize("f, x", [
    (lambda x: x * 2 if x else x * 3, 0.0),                     # if x: is x != 0
    (lambda x: x * 3 if not x else x * 2, 0.0),
    (lambda x: x * (1 + bool(x)), 0.0),
    (lambda x: (x or 5.0 * x) * 1.0, 0.0),
    (lambda x: x * (2 if any([x, 0.0]) else 3), 0.0),
    (lambda x: (lambda a: a[0] * 2 if a[0] else a[0] * 3)(np.array([x, 1.0])), 0.0),
    (lambda x: x * 2 if x.is_integer() else x * 3, 2.0),       # x == round(x)
    (lambda x: x * 2 if np.float64(x).is_integer() else x * 3, 2.0),
], ids=["if x", "not x", "bool(x)", "x or y", "any", "array element", "is_integer", "np is_integer"])
def test_truth_test_that_held_at_a_point_is_refused(f, x):
    # the branch of that single point was differentiated (3.0 where the slope is 2.0 both sides)
    with pytest.raises(capstan.NoRuleError, match="exact equality"):
        capstan.D(f, x)
    with pytest.raises(capstan.NoRuleError, match="exact equality"):
        capstan.gradient(f, x)


@pytest.mark.parametrize("f, x, want", [
    (lambda x: x * 2 if x else x * 3, 0.5, 2.0),
    (lambda x: x * 2 if x.is_integer() else x * 3, 2.5, 3.0),
    (lambda x: x * 2 if capstan.stop_gradient(x) else x * 3, 0.0, 3.0),  # (a constant: no refusal)
    (lambda x: math.sin(x) if x else 1.0 + 0.0 * x, 0.3, math.cos(0.3)),
])
def test_truth_tests_elsewhere_differentiate(f, x, want):
    assert capstan.D(f, x) == pytest.approx(want)
    assert capstan.gradient(f, x)[0] == pytest.approx(want)
