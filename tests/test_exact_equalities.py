"""Exact equalities that held (``losses``, channel 6): code that tests a differentiated
value with ``==``/``!=`` and finds it equal may switch to a formula valid only at that
point (SciPy's ``kappa4`` at ``h == 0``), so the derivative there is refused in both
modes -- but only when the compared values' difference really moves with the input:
validations of constants, ``x != x`` and comparisons made by capstan's own rules pass."""
import math

import numpy as np
import pytest

import capstan
from capstan import NoRuleError

stats = pytest.importorskip("scipy.stats")


def switched(h):
    """(1 - 2h)^(1/h), with its limit e^-2 written out at h == 0: the branch has no h."""
    if h == 0:
        return math.exp(-2.0)
    return (1.0 - 2.0 * h) ** (1.0 / h)


def switched_ne(h):
    if h != 0.0:
        return (1.0 - 2.0 * h) ** (1.0 / h)
    return math.exp(-2.0)


SCALAR_ENTRIES = {
    "D": lambda f, x: capstan.D(f, x),
    "gradient": lambda f, x: capstan.gradient(f, x)[0],
    "grad": lambda f, x: capstan.grad(f)(x),
    "jvp": lambda f, x: capstan.jvp(f, (x,), (1.0,))[1],
    "hessian": lambda f, x: capstan.hessian(f, x),
    "D of gradient": lambda f, x: capstan.D(lambda z: capstan.gradient(f, z)[0], x),
}


@pytest.mark.parametrize("entry", sorted(SCALAR_ENTRIES))
@pytest.mark.parametrize("f", [switched, switched_ne], ids=["==", "!="])
def test_a_branch_at_the_point_is_refused(entry, f):
    with pytest.raises(NoRuleError, match="exact equality"):
        SCALAR_ENTRIES[entry](f, 0.0)


@pytest.mark.parametrize("entry", ["D", "gradient", "jvp"])
def test_away_from_the_point_the_derivative_is_right(entry):
    h = 0.1
    fd = (switched(h + 1e-6) - switched(h - 1e-6)) / 2e-6
    assert SCALAR_ENTRIES[entry](switched, h) == pytest.approx(fd, rel=1e-6)


def test_the_refusal_survives_code_that_catches_it():
    def careful(h):
        try:
            special = h == 0
        except Exception:
            special = False
        return math.exp(-2.0) if special else (1.0 - 2.0 * h) ** (1.0 / h)

    for entry in ("D", "gradient"):
        with pytest.raises(NoRuleError):
            SCALAR_ENTRIES[entry](careful, 0.0)


def masked(x):
    return np.sum(np.where(x == 0.0, 1.0, np.sin(x) / np.where(x == 0.0, 1.0, x)) * np.arange(1.0, 4.0))


def test_arrays_refuse_only_where_the_equality_held_and_moves():
    with pytest.raises(NoRuleError):
        capstan.gradient(masked, np.array([0.5, 0.0, 1.0]))
    with pytest.raises(NoRuleError):
        capstan.jacobian(masked, np.array([0.5, 0.0, 1.0]))
    x = np.array([0.5, 0.7, 1.0])
    expected = np.arange(1.0, 4.0) * (np.cos(x) / x - np.sin(x) / x ** 2)
    np.testing.assert_allclose(capstan.gradient(masked, x)[0], expected, rtol=1e-12)
    # the element that equals 0 is a constant: its equality decides nothing about x
    fixed = lambda x: masked(np.concatenate([x, [0.0]]))
    np.testing.assert_allclose(capstan.gradient(fixed, x[:2])[0], expected[:2], rtol=1e-12)
    np.testing.assert_allclose(capstan.jacobian(fixed, x[:2]), expected[:2], rtol=1e-12)


def test_a_direction_that_does_not_move_the_compared_element_passes():
    x = np.array([0.5, 0.0])
    _, t = capstan.jvp(masked_two, (x,), (np.array([1.0, 0.0]),))
    assert t == pytest.approx(math.cos(0.5) / 0.5 - math.sin(0.5) / 0.25)
    with pytest.raises(NoRuleError):
        capstan.jvp(masked_two, (x,), (np.array([0.0, 1.0]),))


def masked_two(x):
    return np.sum(np.where(x == 0.0, 1.0, np.sin(x) / np.where(x == 0.0, 1.0, x)))


def test_a_validation_of_a_constant_passes():
    def validated(a):
        sos = np.array([a, 2.0 * a, 1.0])
        if not np.all(sos[2] == 1.0):  # (scipy.signal's _validate_sos checks sos[:, 3] == 1)
            raise ValueError("not normalised")
        return np.sum(sos * sos)

    assert capstan.D(validated, 1.5) == pytest.approx(15.0)
    assert capstan.gradient(validated, 1.5) == pytest.approx((15.0,))


def test_equal_values_that_move_together_pass():
    def same(x):
        y = x * 1.0 + 0.0
        return x * 3.0 if x == y and not (x != x) else 0.0

    assert capstan.D(same, 0.0) == 3.0
    assert capstan.gradient(same, 0.0) == (3.0,)
    assert capstan.gradient(lambda v: np.sum(np.where(v != v, 0.0, v)), np.zeros(3))[0].tolist() == [1.0] * 3


def test_two_values_that_move_apart_are_refused():
    def meet(x, y):
        return x * y if x == y else x + y

    with pytest.raises(NoRuleError):
        capstan.gradient(meet, 1.0, 1.0)
    with pytest.raises(NoRuleError):
        capstan.D(lambda t: meet(t, 1.0), 1.0)
    assert capstan.gradient(lambda t: meet(t, t), 1.0) == (2.0,)


def test_scipy_kappa4_at_its_special_cases():
    """SciPy evaluates kappa4 at h == 0 or k == 0 with a formula without that parameter:
    its derivative there was 0 in both modes."""
    for fn in (lambda k: stats.kappa4.logpdf(0.5, 0.1, k), lambda h: stats.kappa4.cdf(0.5, h, 0.1)):
        with pytest.raises(NoRuleError):
            capstan.D(fn, 0.0)
        with pytest.raises(NoRuleError):
            capstan.gradient(fn, 0.0)
    # in x, the shapes are constants: their equality decides nothing
    d = capstan.D(lambda x: stats.kappa4.logpdf(x, 0.1, 0.0), 0.5)
    fd = (stats.kappa4.logpdf(0.5 + 1e-6, 0.1, 0.0) - stats.kappa4.logpdf(0.5 - 1e-6, 0.1, 0.0)) / 2e-6
    assert d == pytest.approx(fd, rel=1e-6)
    g = capstan.gradient(lambda x: stats.kappa4.logpdf(x, 0.1, 0.0), 0.5)[0]
    assert g == pytest.approx(fd, rel=1e-6)


def test_capstan_rules_compare_values_themselves():
    """A rule's Python equivalent of a compiled kernel (a median filter ranks elements by
    exact comparisons) is capstan's code, not the program's: it passes."""
    ndi = pytest.importorskip("scipy.ndimage")
    x = np.array([1.0, 3.0, 2.0, 4.0, 5.0])
    g = capstan.gradient(lambda v: np.sum(ndi.median_filter(v, 3) * np.arange(5.0)), x)[0]
    assert np.isfinite(g).all() and g.sum() == pytest.approx(np.arange(5.0).sum())
