"""scipy.ndimage's filters, differentiated through Python equivalents of their compiled
kernels (capstan/rules/ndimage_rules.py): the equivalents compute exactly what SciPy
computes, in every boundary mode and origin; the filters' derivatives in the image, in
the weights and in ``sigma`` match central differences in both modes, and at second
order."""
import numpy as np
import pytest
import scipy.ndimage as ndi
import scipy.signal
from scipy.ndimage._ni_support import _extend_mode_to_code

import capstan
from capstan.rules import ndimage_rules as R

RNG = np.random.default_rng(3)
MODES = ["reflect", "mirror", "nearest", "wrap", "constant", "grid-wrap", "grid-constant", "grid-mirror"]


def test_every_kernel_has_an_entry():
    from capstan.rules.registry import IMPLS

    assert R.FUNCTIONS and all(f in IMPLS for f in R.FUNCTIONS)


@pytest.mark.parametrize("mode", MODES)
def test_the_equivalents_compute_what_scipy_computes(mode):
    code = _extend_mode_to_code(mode)
    for shape in [(7,), (4, 5), (1, 3)]:
        a = RNG.normal(size=shape)
        out = np.empty_like(a)
        for w in [np.array([1.0, 2.0, -0.5]), np.array([0.3, 0.7]), np.array([1.0, -2, 3, 0.5])]:
            for origin in range(-(len(w) // 2), (len(w) - 1) // 2 + 1):
                for axis in range(a.ndim):
                    R.correlate1d(a, w, axis, out, code, 0.7, origin)
                    assert np.allclose(out, ndi.correlate1d(a, w, axis=axis, mode=mode, cval=0.7, origin=origin))
                    for minimum, plain in ((1, ndi.minimum_filter1d), (0, ndi.maximum_filter1d)):
                        R.min_or_max_filter1d(a, len(w), axis, out, code, 0.7, origin, minimum)
                        assert np.allclose(out, plain(a, len(w), axis=axis, mode=mode, cval=0.7, origin=origin))
        if a.ndim == 2:
            weights = np.array([[0.5, 1, 0], [2, 0, 1], [0, 0, 3.0]])
            for origins in [(0, 0), (0, -1), (1, 0)]:
                R.correlate(a, weights, out, code, 0.7, origins)
                assert np.allclose(out, ndi.correlate(a, weights, mode=mode, cval=0.7, origin=origins))


def _central(f, x, h=1e-6):
    """The Jacobian of ``f`` at ``x`` by central differences (shape ``out + in``)."""
    x = np.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        cols.append((np.asarray(f(x + e.reshape(x.shape))) - np.asarray(f(x - e.reshape(x.shape)))) / (2 * h))
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(f(x)) + x.shape)


IMAGE = RNG.normal(size=(4, 5))
CASES = {
    "correlate1d mirror": (lambda a: ndi.correlate1d(a, [1.0, -2.0, 0.5], axis=1, mode="mirror"), IMAGE),
    "convolve1d wrap": (lambda a: ndi.convolve1d(a, [1.0, 3.0], axis=0, mode="wrap"), IMAGE),
    "gaussian_filter": (lambda a: ndi.gaussian_filter(a, 0.8), IMAGE),
    "gaussian_filter in sigma": (lambda s: ndi.gaussian_filter(IMAGE, s[0]), np.array([0.9])),
    "sobel": (lambda a: ndi.sobel(a, axis=0), IMAGE),
    "laplace constant": (lambda a: ndi.laplace(a, mode="constant", cval=0.3), IMAGE),
    "gaussian_gradient_magnitude": (lambda a: ndi.gaussian_gradient_magnitude(a, 0.7), IMAGE + 3.0),
    "uniform_filter": (lambda a: ndi.uniform_filter(a, size=3, mode="nearest"), IMAGE),
    "maximum_filter": (lambda a: ndi.maximum_filter(a, size=2), IMAGE),
    "minimum_filter1d": (lambda a: ndi.minimum_filter1d(a, 3, axis=1), IMAGE),
    "convolve in image": (lambda a: ndi.convolve(a, np.array([[0.0, 1.0], [2.0, -1.0]]), mode="reflect"), IMAGE),
    "convolve in weights": (lambda w: ndi.convolve(IMAGE, w, mode="reflect"), np.array([[0.0, 1.0], [2.0, -1.0]])),
    "savgol_filter": (lambda y: scipy.signal.savgol_filter(y, 5, 2), RNG.normal(size=9)),
    "sum_labels": (lambda a: ndi.sum_labels(a, np.array([[1, 1, 2, 2, 0]] * 4), index=[1, 2]), IMAGE),
    "bincount weights": (lambda w: np.bincount([0, 2, 2, 1], weights=w), np.array([0.5, 1.0, -2.0, 3.0])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_derivatives_match_central_differences_in_both_modes(name):
    f, x = CASES[name]
    expected = _central(f, x)
    assert np.allclose(capstan.jacobian(f, x), expected, atol=1e-6)
    assert np.allclose(capstan.jacobian(f, x, mode="reverse"), expected, atol=1e-6)


def test_second_order_in_sigma():
    """The Hessian of a loss of a Gaussian blur in its width (forward over reverse)
    against central differences of the gradient."""
    def loss(s):
        return np.sum(ndi.gaussian_filter(IMAGE, s[0]) ** 2)

    s = np.array([0.9])
    hess = capstan.hessian(loss, s)
    expected = _central(lambda t: capstan.gradient(loss, t)[0], s, h=1e-5)
    assert np.allclose(hess, expected, rtol=1e-5, atol=1e-7)


def test_nextafter_moves_with_its_first_argument():
    """np.nextafter: one ulp from x, so the slope in x is 1 (it was declared without
    derivative: 0, silently); math.nextafter's too."""
    import math

    assert capstan.D(lambda x: float(np.nextafter(np.array([x, 1.0]), 2.0)[0]), 1.3) == 1.0
    assert capstan.gradient(lambda x: np.nextafter(x, 0.0) * 2.0, 1.3) == (2.0,)
    assert capstan.gradient(lambda x: math.nextafter(x, 0.0) * 2.0, 1.3) == (2.0,)
    assert capstan.gradient(lambda y: np.nextafter(1.3, y) * 2.0, 2.0)[0] in (None, 0.0)  # (no flow)
