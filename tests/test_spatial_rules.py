"""scipy.spatial.distance's cdist, pdist and squareform: capstan's Python equivalents give
SciPy's values, and their derivatives match central differences in both modes."""
import numpy as np
import pytest

import capstan

distance = pytest.importorskip("scipy.spatial.distance")

_B = np.array([[0.1, 0.2, 0.4], [1.0, 3.0, 0.5], [0.7, -0.2, 1.1], [2.0, 0.3, 0.9]])
_METRICS = [("euclidean", {}), ("sqeuclidean", {}), ("cityblock", {}), ("cosine", {}),
            ("chebyshev", {}), ("minkowski", {}), ("minkowski", {"p": 3.0}), ("correlation", {}),
            ("braycurtis", {}), ("canberra", {}), ("seuclidean", {}), ("mahalanobis", {}),
            ("euclidean", {"w": np.array([1.0, 2.0, 0.5])}), ("cosine", {"w": np.array([1.0, 2.0, 0.5])}),
            ("seuclidean", {"V": np.array([1.0, 2.0, 0.5])}), ("cityblock", {"w": np.array([1.0, 2.0, 0.5])})]


def _points(x):
    return np.array([[x, 1.0, 0.3], [0.3, x * x, 1.2], [2.0, 0.5, -x], [1.5, 0.2 * x, 0.8],
                     [0.4, 0.6, 0.9]]) + 1.0


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("metric, kw", _METRICS,
                         ids=[m + ("-" + "-".join(k) if k else "") for m, k in _METRICS])
def test_cdist_pdist_values_and_derivatives(metric, kw):
    weights = np.arange(1.0, 1.0 + 5 * len(_B)).reshape(5, len(_B))
    cd = lambda x: np.sum(weights * distance.cdist(_points(x), _B, metric, **kw))  # noqa: E731
    pd = lambda x: np.sum(np.arange(1.0, 11.0) * distance.pdist(_points(x), metric, **kw))  # noqa: E731
    x = 0.73  # (no ties between the coordinates of a pair: chebyshev has no kink here)
    for f, plain in ((cd, lambda X: distance.cdist(X, _B, metric, **kw)),
                     (pd, lambda X: distance.pdist(X, metric, **kw))):
        value, jv = capstan.jvp(lambda t: plain(_points(t)), (x,), (1.0,))
        np.testing.assert_allclose(value, plain(_points(x)), rtol=1e-12, atol=1e-12)
        ref = _fd(f, x)
        assert capstan.D(f, x) == pytest.approx(ref, rel=1e-6, abs=1e-8)
        assert capstan.gradient(f, x)[0] == pytest.approx(ref, rel=1e-6, abs=1e-8)


def test_pdist_of_an_array_argument_and_squareform():
    X = _points(0.7)
    f = lambda X: np.sum(np.exp(-distance.squareform(distance.pdist(X))))  # noqa: E731
    g, = capstan.gradient(f, X)
    ref = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[i] = 1e-6
        ref[i] = (f(X + e) - f(X - e)) / 2e-6
    np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-9)
    v = distance.pdist(X)
    assert capstan.jacobian(lambda v: distance.squareform(distance.squareform(v)), v) == pytest.approx(
        np.eye(len(v)))


def test_unsupported_metric_refused_by_name():
    with pytest.raises(capstan.NoRuleError, match="jensenshannon"):
        capstan.gradient(lambda x: distance.cdist(_points(x), _B, "jensenshannon").sum(), 0.7)



def test_out_argument_gets_the_distances_and_their_derivative():
    def into(x):
        out = np.zeros((5, 4))
        distance.cdist(_points(x), _B, out=out)
        return np.sum(out * np.arange(20.0).reshape(5, 4))
    want = (into(0.7 + 1e-6) - into(0.7 - 1e-6)) / 2e-6
    assert capstan.D(into, 0.7) == pytest.approx(want, rel=1e-6)
    assert capstan.gradient(into, 0.7)[0] == pytest.approx(want, rel=1e-6)
