"""NumPy's location-scale samplers with a fixed seed: capstan's equivalents draw the very
numbers NumPy draws, and their derivatives in the parameters match central differences."""
import numpy as np
import pytest

import capstan

_MAKERS = {"Generator": lambda: np.random.default_rng(7), "RandomState": lambda: np.random.RandomState(7)}
_CASES = [
    ("normal", lambda x: (x, 2.0), {}), ("normal", lambda x: (0.3, x), {"size": (2, 3)}),
    ("normal", lambda x: (np.array([x, 1.0]), x * x), {}), ("normal", lambda x: (x, 1.0), {"size": 4}),
    ("uniform", lambda x: (x, 2.0), {"size": 3}), ("uniform", lambda x: (-1.0, x), {}),
    ("exponential", lambda x: (x,), {"size": 5}), ("exponential", lambda x: (x,), {}),
    ("lognormal", lambda x: (x, 0.5), {"size": 2}), ("lognormal", lambda x: (0.1, x), {}),
]


@pytest.mark.parametrize("kind", sorted(_MAKERS))
@pytest.mark.parametrize("name, params, kw", _CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(_CASES)])
def test_sampler_values_and_derivatives(kind, name, params, kw):
    make = _MAKERS[kind]

    def f(x):
        return np.sum(getattr(make(), name)(*params(x), **kw) * 1.0)

    x = 0.7
    plain = getattr(make(), name)(*params(x), **kw)
    value, _ = capstan.jvp(lambda t: getattr(make(), name)(*params(t), **kw), (x,), (1.0,))
    assert type(value) is type(plain)
    np.testing.assert_array_equal(value, plain)
    ref = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
    assert capstan.D(f, x) == pytest.approx(ref, rel=1e-6)
    assert capstan.gradient(f, x)[0] == pytest.approx(ref, rel=1e-6)


def test_monte_carlo_estimate_by_the_reparameterization():
    def f(mu):
        rng = np.random.default_rng(0)
        return np.mean(rng.normal(mu, 1.5, 1000) ** 2)  # E = mu^2 + 2.25
    assert capstan.gradient(f, 0.7)[0] == pytest.approx((f(0.7 + 1e-6) - f(0.7 - 1e-6)) / 2e-6, rel=1e-6)
    assert capstan.hessian(f, 0.7) == pytest.approx(2.0)
