"""Survey cases: scipy.ndimage -- filters, interpolation (zoom, shift, rotate,
map_coordinates, affine and geometric transforms) with respect to the image and to
the transform's parameters, and measurements."""
import numpy as np
from scipy import ndimage as ndi

from . import Table

T = Table("scipy.ndimage")
add = T.add
IMG = (np.array([[7, 3, 12, 0, 18], [9, 21, 5, 14, 1], [16, 2, 24, 8, 11],
                 [4, 19, 10, 22, 6], [13, 23, 15, 17, 20]]) * 0.1 + 0.1)     # distinct values 0.1 apart
K = np.array([[0.1, 0.2, 0.0], [0.3, 0.4, 0.1], [0.0, 0.2, 0.1]])
SIG = IMG[2].copy()
LABELS = np.array([[1, 1, 2, 2, 2]] * 5)
X = 0.7

add("gaussian_filter", lambda x: ndi.gaussian_filter(x, 1.0), IMG)
add("gaussian_filter sigma", lambda s: ndi.gaussian_filter(IMG, s), X)
add("gaussian_filter1d", lambda x: ndi.gaussian_filter1d(x, 0.8), SIG)
add("gaussian_laplace", lambda x: ndi.gaussian_laplace(x, 1.0), IMG)
add("gaussian_gradient_magnitude", lambda x: ndi.gaussian_gradient_magnitude(x, 1.0), IMG)
add("convolve", lambda x: ndi.convolve(x, K), IMG)
add("convolve weights", lambda k: ndi.convolve(IMG, k), K)
add("correlate", lambda x: ndi.correlate(x, K, mode="nearest"), IMG)
add("convolve1d", lambda x: ndi.convolve1d(x, [0.2, 0.5, 0.3]), SIG)
add("uniform_filter", lambda x: ndi.uniform_filter(x, 3), IMG)
add("uniform_filter1d", lambda x: ndi.uniform_filter1d(x, 3), SIG)
add("laplace", ndi.laplace, IMG)
add("sobel", lambda x: ndi.sobel(x, axis=0), IMG)
add("prewitt", lambda x: ndi.prewitt(x, axis=1), IMG)
add("median_filter", lambda x: ndi.median_filter(x, 3), IMG)
add("maximum_filter", lambda x: ndi.maximum_filter(x, 3), IMG)
add("minimum_filter1d", lambda x: ndi.minimum_filter1d(x, 3), SIG)
add("percentile_filter", lambda x: ndi.percentile_filter(x, 30, size=3), IMG)
add("generic_filter", lambda x: ndi.generic_filter(x, np.mean, size=3), IMG)
add("zoom order 1", lambda x: ndi.zoom(x, 1.4, order=1), IMG)
add("zoom order 3", lambda x: ndi.zoom(x, 1.4, order=3), IMG)
add("shift image", lambda x: ndi.shift(x, (0.3, 0.2), order=1), IMG)
add("shift amount", lambda s: ndi.shift(IMG, (s, 0.2), order=1), 0.3)
add("shift amount order 3", lambda s: ndi.shift(IMG, (s, 0.2), order=3), 0.3)
add("rotate image", lambda x: ndi.rotate(x, 30.0, reshape=False, order=1), IMG)
add("rotate angle", lambda a: ndi.rotate(IMG, a, reshape=False, order=3), 30.0)
add("map_coordinates coordinates", lambda c: ndi.map_coordinates(IMG, c.reshape(2, 2), order=1),
    np.array([1.3, 2.6, 0.4, 3.2]))
add("map_coordinates image", lambda x: ndi.map_coordinates(x, [[1.3, 2.6], [0.4, 3.2]], order=3), IMG)
add("affine_transform matrix", lambda m: ndi.affine_transform(IMG, m.reshape(2, 2), offset=0.37, order=1,
                                                                mode="nearest"),
    np.array([0.93, 0.07, -0.11, 0.91]), step=1e-4)
add("affine_transform image",
    lambda x: ndi.affine_transform(x, [[0.9, 0.1], [-0.1, 0.9]], offset=0.3, order=1), IMG)
add("geometric_transform closure",
    lambda s: ndi.geometric_transform(IMG, lambda c: (c[0] * s, c[1]), order=1), 0.7)
add("spline_filter", lambda x: ndi.spline_filter(x, order=3), IMG)
add("fourier_gaussian", lambda x: ndi.fourier_gaussian(x, 1.0), IMG)
add("sum_labels", lambda x: ndi.sum_labels(x, LABELS, [1, 2]), IMG)
add("mean labels", lambda x: np.asarray(ndi.mean(x, LABELS, [1, 2])), IMG)
add("variance", lambda x: ndi.variance(x), IMG)
add("center_of_mass", lambda x: np.asarray(ndi.center_of_mass(x)), IMG)
add("maximum value", lambda x: ndi.maximum(x, LABELS, 2), IMG)
add("distance-free morphological gradient", lambda x: ndi.grey_dilation(x, size=(3, 3)) - x, IMG)
