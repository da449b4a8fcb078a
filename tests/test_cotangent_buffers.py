"""The backward pass adds into cotangent arrays in place only when it alone holds them
(capstan/reverse.py ``_add_into``, ``_scatter_into``): random programs whose steps pass a
cotangent on unchanged (``a + b``, ``a - b``, ``a + 0.0``), read elements, take maxima
(whose cotangent is a few elements, ``registry.SCATTERS``) and reuse values, against
central differences."""
import random

import numpy as np
import pytest

import capstan

STEPS = ["{A} + {B}", "{A} - {B}", "{B} - {A}", "{A} * 1.0", "{A} + 0.0", "-{A}",
         "{A}.reshape(2, 3).T.reshape(-1)", "{A}[::-1] + {B}", "np.exp({A} * 0.1)", "{A} * {B}",
         "{A} + np.max({B})", "{A} - np.min({A})", "{A} + {A}", "np.sin({A}) + {B}", "{A} + {B}[3]",
         "{A} * {A}[1]", "np.maximum({A}, {B})", "{A} + np.sum({B})", "{A} / (1.0 + {B} * {B})",
         "np.max({A}) * {B}"]


def _program(seed):
    rng = random.Random(seed)
    names, lines = ["x", "y"], []
    for k in range(rng.randrange(2, 7)):
        lines.append("v%d = %s" % (k, rng.choice(STEPS).format(A=rng.choice(names), B=rng.choice(names))))
        names.append("v%d" % k)
    reads = " + ".join("%s[%d] * %.3f" % (rng.choice(names), rng.randrange(6), rng.uniform(-2, 2))
                       for _ in range(rng.randrange(1, 4)))
    lines.append("return np.sum(%s) * 0.5 + %s + np.max(%s)" % (names[-1], reads, rng.choice(names)))
    source = "def f(x, y):\n    " + "\n    ".join(lines)
    namespace = {"np": np}
    exec(source, namespace)
    return namespace["f"], source


def _central(f, args, which, h=1e-6):
    out = np.zeros(6)
    for i in range(6):
        e = np.zeros(6)
        e[i] = h
        up, down = list(args), list(args)
        up[which], down[which] = args[which] + e, args[which] - e
        out[i] = (f(*up) - f(*down)) / (2 * h)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_random_program_gradient_matches_central_differences(seed):
    f, source = _program(seed)
    r = np.random.default_rng(seed)
    x, y = r.standard_normal(6), r.standard_normal(6)
    grads = capstan.gradient(f, x, y)
    for which in (0, 1):
        g = np.zeros(6) if grads[which] is None else grads[which]
        np.testing.assert_allclose(g, _central(f, (x, y), which), rtol=1e-4, atol=1e-5, err_msg=source)


def test_maximum_of_a_whole_array_shares_ties_and_adds_into_the_other_terms():
    x = np.array([1.0, 3.0, 3.0, -2.0])
    (g,) = capstan.gradient(lambda v: np.max(v) + np.sum(v * v) + np.min(v), x)
    np.testing.assert_array_equal(g, 2 * x + np.array([0.0, 0.5, 0.5, 1.0]))
    m = np.arange(12.0).reshape(3, 4)
    (gm,) = capstan.gradient(lambda v: np.max(v) * 2.0 + np.sum(v), m)
    expected = np.ones((3, 4))
    expected[2, 3] += 2.0
    np.testing.assert_array_equal(gm, expected)


def test_logsumexp_gradient_is_the_softmax():
    x = np.random.default_rng(0).standard_normal(100_000)

    def logsumexp(v):
        m = np.max(v)
        return m + np.log(np.sum(np.exp(v - m)))
    (g,) = capstan.gradient(logsumexp, x)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(g, e / e.sum(), rtol=1e-10, atol=1e-18)


def test_the_input_array_is_never_written():
    x = np.array([1.0, 5.0, 2.0])
    keep = x.copy()
    capstan.gradient(lambda v: np.max(v) + np.sum(v + 0.0) + v[1], x)
    np.testing.assert_array_equal(x, keep)
