"""Sixteenth hunt: where reverse mode's zero masks, second derivatives at kinks and the C
paths of routed NumPy calls meet (nested differentiation at kinks and infinite slopes,
selections, first derivatives at special points, C path against the pure-Python one).

Each case gave a silent wrong answer (or an internal error) before its fix; the expected
values come from forward mode and by hand.
"""
import math
import warnings

import numpy as np
import pytest

import capstan
from capstan import jacfwd, jacrev, pullback

X10 = np.array([1.0, 0.0])


# -- a seed's zero against a NumPy float's infinite partial -------------------------------
# An element of an array (``x[1]``) is a NumPy float, so ``1 / x[1]`` records its partial as
# one; the backward pass tested the product ``0 * -inf`` for a NaN only when it was a Python
# float, so a structural zero (a seed of 0: a Jacobian's other rows) lost to it.

ROW0 = {  # f, the Jacobian's first row at (1, 0): f[0] does not depend on where f[1] blows up
    "array([x0, 1 / x1])": (lambda x: np.array([x[0], 1 / x[1]]), [1.0, 0.0]),
    "array([x0, x0 / sqrt(x1)])": (lambda x: np.array([x[0], x[0] / np.sqrt(x[1])]), [1.0, 0.0]),
    "stack([x0, x0 / sqrt(x1)])": (lambda x: np.stack([x[0], x[0] / np.sqrt(x[1])]), [1.0, 0.0]),
    "array([sqrt(x1), x0 / 2 / sqrt(x1)])": (
        lambda x: np.array([np.sqrt(x[1]), x[0] * 0.5 / np.sqrt(x[1])]), [0.0, math.inf]),
}


@pytest.mark.parametrize("name", ROW0)
def test_seed_zero_wins_over_numpy_float_infinite_partial(name):
    f, row = ROW0[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        (got,) = pullback(f, X10)[1](np.array([1.0, 0.0]))
        assert np.array_equal(got, row)  # (was NaN)
        assert np.array_equal(jacrev(f)(X10)[0], row)
        assert np.array_equal(jacfwd(f)(X10)[0], row)


def test_jacrev_of_jacfwd_at_an_infinite_slope():
    """The mixed row of x0 * sqrt(x1)'s Hessian at (1, 0): (0, inf) by every route (it
    was NaN by reverse over forward mode)."""
    f = lambda v: v[0] * np.sqrt(v[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.array([[0.0, math.inf], [math.inf, -math.inf]])
        assert np.array_equal(jacrev(jacfwd(f))(X10), want)
        assert np.array_equal(jacrev(lambda v: capstan.gradient(f, v)[0])(X10), want)
        assert np.array_equal(capstan.hessian(f, X10), want)


def test_value_zero_against_numpy_float_infinite_partial_still_refused():
    """A value's zero (cos's slope at 0) against x[0] ** 0.5's infinite partial stays
    undefined: refused, in both passes."""
    f = lambda x: math.cos(x[0] ** 0.5) + x[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError):
            capstan.gradient(f, np.array([0.0, 1.0]))


# -- a rule's own factor of an operand's zero, in the pass that tells zeros apart ----------
# Where a zero cotangent met an infinite partial, the second backward pass ran rules given
# by a pullback (``np.dot``, ``np.abs``, ``norm``, ``elementwise`` kernels) on weights and
# took a zero weight for a zero that holds near the point -- also where the rule multiplied
# by an operand's value that is 0 at the point alone (the other ``sqrt(x)`` of
# ``dot(sqrt(x), sqrt(x))``, ``abs``'s slope at 0).  That zero won over sqrt's infinite
# slope: a silent 0 (the true slope is 1, or none).  Now those are refused, as forward mode
# refuses them; a user adjoint's and a checkpoint's zeros, which the pass cannot see into,
# count as the point's where a live cotangent went in.

X01 = np.array([0.0, 1.0])


def mysq(a):
    return a * a


@capstan.adjoint(mysq)
def _mysq(a):
    return a * a, lambda g: (2 * a * g,)


VALUE_FACTOR = {  # f at (0, 1), whose slope in x0 is 1 (x0 in disguise) or none (+inf / cusp)
    "dot(sqrt, sqrt)": lambda x: np.dot(np.sqrt(x), np.sqrt(x)),
    "sqrt @ sqrt": lambda x: np.sqrt(x) @ np.sqrt(x),
    "einsum(sqrt, sqrt)": lambda x: np.einsum("i,i->", np.sqrt(x), np.sqrt(x)),
    "inner(sqrt, sqrt)": lambda x: np.inner(np.sqrt(x), np.sqrt(x)),
    "vdot(sqrt, sqrt)": lambda x: np.vdot(np.sqrt(x), np.sqrt(x)),
    "tensordot(sqrt, sqrt)": lambda x: np.tensordot(np.sqrt(x), np.sqrt(x), 1),
    "norm(sqrt) ** 2": lambda x: np.linalg.norm(np.sqrt(x)) ** 2,
    "norm(sqrt)": lambda x: np.linalg.norm(np.sqrt(x)),
    "prod(sqrt([x0, x0]))": lambda x: np.prod(np.sqrt(np.array([x[0], x[0]]))) + x[1],
    "abs(sqrt)": lambda x: np.sum(np.abs(np.sqrt(x))),
    "elementwise(t * t)(sqrt)": lambda x: np.sum(capstan.elementwise(lambda t: t * t)(np.sqrt(x))),
    "elementwise(abs)(sqrt)": lambda x: np.sum(capstan.elementwise(abs)(np.sqrt(x))),
    "adjoint mysq(sqrt)": lambda x: np.sum(mysq(np.sqrt(x))),
    "checkpoint(y * y, sqrt)": lambda x: np.sum(capstan.checkpoint(lambda y: y * y, np.sqrt(x))),
    "checkpoint at a float": lambda x: capstan.checkpoint(lambda y: y * y, math.sqrt(x[0])) + x[1],
}


@pytest.mark.parametrize("name", VALUE_FACTOR)
def test_a_rules_value_zero_does_not_win_over_an_infinite_slope(name):
    f = VALUE_FACTOR[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for thunk in (lambda: capstan.gradient(f, X01), lambda: jacrev(f)(X01),
                      lambda: pullback(f, X01)[1](1.0)):
            with pytest.raises(capstan.NoRuleError, match="NaN"):
                thunk()  # (was 0 in x0)


@pytest.mark.parametrize("name", sorted(VALUE_FACTOR))
def test_a_rules_value_zero_off_the_point(name):
    """Off the point the same functions keep their gradient (checked by differences)."""
    f = VALUE_FACTOR[name]
    x = np.array([0.3, 1.0])
    got = capstan.gradient(f, x)[0]
    h = 1e-7
    fd = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)


def test_selections_keep_their_structural_zeros():
    """Moving an operand's zero changes no selection: maximum, clip, where, an index, a
    constant mask, a hook that masks still let their zero win (the gradient in x0 is 0)."""
    cases = [
        lambda x: np.sum(np.maximum(np.sqrt(x), 0.5)),
        lambda x: np.sum(np.clip(np.sqrt(x), 0.5, 2.0)),
        lambda x: np.sum(np.where(x > 0, np.sqrt(x), 0.0)),
        lambda x: np.dot(np.sqrt(x), np.array([0.0, 1.0])),
        lambda x: np.sum(capstan.hook(lambda g: g * np.array([0.0, 1.0]), np.sqrt(x))),
        lambda x: np.max(np.sqrt(x)),
        lambda x: np.sum(np.sort(np.sqrt(x))[1:]),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for f in cases:
            np.testing.assert_allclose(capstan.gradient(f, X01)[0], [0.0, 0.5])


# -- capstan.elementwise kernels fed an infinite tangent -----------------------------------
# Forward mode multiplied a kernel's per-element partial by the tangent letting every zero
# partial win, so ``elementwise(t * t)(sqrt(x))`` at 0 had slope 0 (it is x: 1) and
# ``elementwise(abs)(sqrt(x))`` 0 (+inf).  Such elements are now differentiated again by
# forward mode through the kernel itself (refused where undefined); reverse mode's kernel
# node tells its own structural zeros (a constant path, ``0 * b``) from a value's.

E = capstan.elementwise
KERNELS_REFUSED = {
    "t * t": lambda x: np.sum(E(lambda t: t * t)(np.sqrt(x))),
    "abs": lambda x: np.sum(E(abs)(np.sqrt(x))),
    "a * b of (sqrt(x), x)": lambda x: np.sum(E(lambda a, b: a * b)(np.sqrt(x), x)),
}
KERNELS_KEPT = {  # f, its gradient at (0, 1)
    "max(t, .5)": (lambda x: np.sum(E(lambda t: max(t, 0.5))(np.sqrt(x))), [0.0, 0.5]),
    "0 * t + 1": (lambda x: np.sum(E(lambda t: 0.0 * t + 1.0)(np.sqrt(x))), [0.0, 0.0]),
    "t": (lambda x: np.sum(E(lambda t: t)(np.sqrt(x))), [math.inf, 0.5]),
    "a + 0 * b": (lambda x: np.sum(E(lambda a, b: a + 0.0 * b)(np.sqrt(x), np.sqrt(x))), [math.inf, 0.5]),
    "max(t, .5) * t": (lambda x: np.sum(E(lambda t: max(t, 0.5) * t)(np.sqrt(x))), [math.inf, 1.0]),
}


@pytest.mark.parametrize("name", sorted(KERNELS_REFUSED))
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_elementwise_value_zero_against_an_infinite_tangent_refused(name, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError, match="NaN"):
            capstan.jacobian(KERNELS_REFUSED[name], X01, mode=mode)


@pytest.mark.parametrize("name", sorted(KERNELS_KEPT))
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_elementwise_structural_zero_kept(name, mode):
    f, want = KERNELS_KEPT[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(capstan.jacobian(f, X01, mode=mode), want)


def test_hessian_refusal_names_hessian():
    """A Hessian refused (a second derivative at a kink) named ``capstan.jacobian``, the
    helper it runs, not the user's entry point; ``chunk``'s error too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError, match=r"^capstan\.hessian: "):
            capstan.hessian(lambda v: np.max(v) ** 2, np.zeros(2))
    with pytest.raises(ValueError, match=r"^capstan\.hessian: chunk"):
        capstan.hessian(lambda v: v @ v, np.zeros(2), chunk=0)
    with pytest.raises(ValueError, match=r"^capstan\.jacobian: chunk"):
        capstan.jacobian(lambda v: v, np.zeros(2), chunk=0)


# -- a checkpoint's segment in the pass that tells zeros apart ------------------------------
# A value's zero entering a checkpoint met the infinite partial inside it unseen: the
# segment's own backward pass took its seed's zero for structural, and the enclosing pass
# never learnt that a zero met an infinite partial (``np.cos(checkpoint(np.sqrt, x))`` at 0
# gave 0; the slope is -1/2).  The segment's passes now report to the enclosing one and take
# its weights; its structural zeros (an index, a selection) are kept.

CP = capstan.checkpoint
CHECKPOINT_REFUSED = {
    "cos(checkpoint(sqrt))": lambda x: np.sum(np.cos(CP(np.sqrt, x))),
    "cos(checkpoint(math.sqrt)) at a float": lambda x: math.cos(CP(math.sqrt, x[0])) + x[1],
    "checkpoint(y * y)(sqrt)": lambda x: np.sum(CP(lambda y: y * y, np.sqrt(x))),
}
CHECKPOINT_KEPT = {
    "checkpoint(sqrt)[1]": (lambda x: CP(np.sqrt, x)[1], [0.0, 0.5]),
    "where(x > 0, checkpoint(sqrt), 0)": (lambda x: np.sum(np.where(x > 0, CP(np.sqrt, x), 0.0)), [0.0, 0.5]),
    "checkpoint(maximum(sqrt, .5))": (lambda x: np.sum(CP(lambda y: np.maximum(np.sqrt(y), 0.5), x)), [0.0, 0.5]),
    "checkpoint(y[1:])(sqrt)": (lambda x: np.sum(CP(lambda y: y[1:], np.sqrt(x))), [0.0, 0.5]),
    "checkpoint(sqrt)": (lambda x: np.sum(CP(np.sqrt, x)), [math.inf, 0.5]),
}


@pytest.mark.parametrize("name", sorted(CHECKPOINT_REFUSED))
def test_a_value_zero_through_a_checkpoint_refused(name):
    f = CHECKPOINT_REFUSED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for mode in ("reverse", "forward"):
            with pytest.raises(capstan.NoRuleError, match="NaN"):
                capstan.jacobian(f, X01, mode=mode)


@pytest.mark.parametrize("name", sorted(CHECKPOINT_KEPT))
def test_a_structural_zero_through_a_checkpoint_kept(name):
    f, want = CHECKPOINT_KEPT[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(capstan.gradient(f, X01)[0], want)
        np.testing.assert_array_equal(capstan.jacobian(f, X01, mode="forward"), want)
