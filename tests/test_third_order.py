"""Third and fourth derivatives of array functions, every mix of forward and reverse
mode, against closed forms and finite differences; and derivatives of derivatives taken
through closures (a Hessian in a parameter of the function).

Two mechanisms are checked: a derivative an enclosing differentiation carries through a
plain array (its shadow -- a Jacobian's blocks, ``np.full(n, s)``) stays visible to the
differentiations nested inside it, and a call of only enclosing differentiations'
values goes to the innermost of them, so that their tags stay nested in order.
"""
import itertools

import numpy as np
import pytest

import capstan
from capstan import D, gradient, hessian, jacfwd, jacobian, jacrev

X = np.array([0.3, 0.7, -0.4])


def _jac(mode):
    if mode == "F":
        return jacfwd
    if mode == "R":
        return jacrev
    if mode == "1":  # forward, one direction per run
        return lambda g: lambda x: jacobian(g, x, mode="forward", chunk=1)
    return lambda g: lambda x: jacobian(g, x, mode="reverse")


def _nested(f, modes):
    for m in modes:
        f = _jac(m)(f)
    return f


def _third_fd(f, x, h=1e-5):
    """The third-derivative tensor, by central differences of a reverse-over-reverse Hessian."""
    second = jacrev(jacrev(f))
    cols = [(second(x + h * e) - second(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    return np.stack(cols, axis=-1)


def _elementwise_third(x):
    """(x**2 sin x)''' = 6 cos x - 6 x sin x - x**2 cos x."""
    return 6 * np.cos(x) - 6 * x * np.sin(x) - x ** 2 * np.cos(x)


@pytest.mark.parametrize("modes", ["".join(m) for m in itertools.product("FR", repeat=3)] + ["1F1", "FV1", "V11"])
def test_third_jacobian_of_an_elementwise_function_is_its_closed_form(modes):
    out = _nested(lambda x: x ** 2 * np.sin(x), modes)(X)
    want = np.zeros((3,) * 4)
    for i in range(3):
        want[i, i, i, i] = _elementwise_third(X[i])
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def _placed(x):
    y = np.zeros(3)
    y[0] = x[0] * x[1]
    y[1:] = x[1:] ** 2 * x[0]
    return y


_COUPLED = {
    "product": lambda x: np.sum(x * x) * x,
    "matmul": lambda x: (np.array([[1.0, 2.0, 0.3], [0.5, -1.0, 0.2], [0.1, 0.4, 2.0]]) @ x) * x ** 2,
    "written": _placed,
    "scalar loop": lambda x: np.array([x[0] * x[1] * x[2], x[0] ** 3, np.exp(x[2]) * x[1]]),
}


@pytest.mark.parametrize("name", sorted(_COUPLED))
@pytest.mark.parametrize("modes", ["FFF", "RFF", "FRF", "FFR", "RRF", "1FR"])
def test_third_jacobian_of_coupled_functions_matches_finite_differences(name, modes):
    f = _COUPLED[name]
    np.testing.assert_allclose(_nested(f, modes)(X), _third_fd(f, X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("modes", ["".join(m) for m in itertools.product("FR", repeat=4)])
def test_fourth_jacobian(modes):
    x = np.array([0.3, -0.5])
    out = _nested(lambda v: v ** 5 * np.array([1.0, 2.0]), modes)(x)
    want = np.zeros((2,) * 5)
    want[0, 0, 0, 0, 0], want[1, 1, 1, 1, 1] = 120 * x[0], 240 * x[1]
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


# -- a derivative in a parameter of a function whose Hessian (or gradient) is taken -------------
Y = np.array([0.3, -0.5])


def test_derivative_of_a_hessian_in_a_closed_over_parameter():
    # H = 12 s diag(y**2): d/ds = 12 diag(y**2), whether s multiplies the sum or its terms
    want = np.diag(12 * Y ** 2)
    for g in (lambda s: hessian(lambda y: s * np.sum(y ** 4), Y),
              lambda s: hessian(lambda y: np.sum(y ** 4) * s, Y),
              lambda s: jacobian(lambda v: gradient(lambda y: s * np.sum(y ** 4), v)[0], Y, mode="reverse"),
              lambda s: jacfwd(capstan.grad(lambda y: s * np.sum(y ** 4)))(Y)):
        np.testing.assert_allclose(D(g, 2.0), want, rtol=1e-12)
    np.testing.assert_allclose(gradient(lambda s: hessian(lambda y: s * np.sum(y ** 4), Y)[0, 0], 2.0)[0],
                               12 * Y[0] ** 2, rtol=1e-12)


def test_derivative_of_a_third_derivative_in_a_parameter():
    # d3/dy0^3 of s * sum(y**4) is 24 s y0
    g = lambda s: jacobian(lambda x: hessian(lambda y: s * np.sum(y ** 4), x), Y)[0, 0, 0]
    assert D(g, 2.0) == pytest.approx(24 * Y[0], rel=1e-12)
    assert gradient(g, 2.0)[0] == pytest.approx(24 * Y[0], rel=1e-12)


def test_mixed_second_derivative_in_two_parameters_of_a_gradient_and_a_hessian():
    # d2/(dt ds) of 4 s t y**3 (the gradient) and of 12 s t y0**2 (the Hessian's corner)
    grad_st = lambda t: D(lambda s: gradient(lambda y: s * t * np.sum(y ** 4), Y)[0], 2.0)
    np.testing.assert_allclose(D(grad_st, 1.0), 4 * Y ** 3, rtol=1e-12)
    hess_st = lambda t: D(lambda s: hessian(lambda y: s * t * np.sum(y ** 4), Y), 2.0)[0, 0]
    assert D(hess_st, 1.0) == pytest.approx(12 * Y[0] ** 2, rel=1e-12)


def test_a_product_of_two_enclosing_parameters_inside_a_third_derivative():
    # d/dt d/ds d/du of (s t) u**4 at u = 0.3 is 4 u**3, however the product is grouped
    for body in (lambda u, s, t: s * t * u ** 4, lambda u, s, t: (s * t) * u ** 4,
                 lambda u, s, t: s * (t * u ** 4)):
        out = D(lambda t: D(lambda s: D(lambda u: body(u, s, t), 0.3), 2.0), 1.0)
        assert out == pytest.approx(4 * 0.3 ** 3, rel=1e-12)


def test_a_plain_array_filled_with_an_enclosing_parameter():
    # np.full writes s into a plain array: the inner differentiation must still see s in it
    assert list(D(lambda s: D(lambda t: t * np.full(2, s), 1.0), 2.0)) == [1.0, 1.0]
    out = D(lambda t: D(lambda s: D(lambda u: u * np.sum(np.full(2, s * t)), 0.3), 2.0), 1.0)
    assert out == pytest.approx(2.0, rel=1e-12)
