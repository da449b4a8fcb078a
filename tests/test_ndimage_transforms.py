"""scipy.ndimage's spline prefilter and geometric transforms (capstan/rules/ndimage_rules.py)
in the image: forward mode (the C function applied to the tangent) against finite
differences, reverse mode (transposes assembled from one-dimensional C transforms of unit
vectors) against forward by the dot-product identity in every boundary mode and spline
order, second order through the rules; the transform parameters (coordinates, shifts,
zoom factors, matrices) are refused clearly."""
import numpy as np
import pytest
import scipy.ndimage as ndi

import capstan
from rule_checks import C, Case, R, check_forward, check_reverse, check_second_order, reseed

reseed("ndimage transforms")

MODES = ["reflect", "mirror", "nearest", "wrap", "constant", "grid-wrap", "grid-constant", "grid-mirror"]
IMG = R(5, 6)


def cases():
    out = []
    for mode in MODES:
        for order in (0, 1, 3):
            out.append(Case(ndi.shift, IMG, (0.4, -1.3), order=order, mode=mode, cval=0.7,
                            name="shift %s order %d" % (mode, order)))
        for order in (1, 2, 5):
            out.append(Case(ndi.zoom, IMG, (1.4, 0.7), order=order, mode=mode, cval=0.3,
                            name="zoom %s order %d" % (mode, order)))
        out.append(Case(ndi.map_coordinates, IMG, np.array([[0.2, 1.5, 3.9, -0.6, 4.4], [5.7, 2.2, 0.0, 1.1, 6.5]]),
                        order=3, mode=mode, cval=0.2, name="map_coordinates %s" % mode))
        out.append(Case(ndi.affine_transform, IMG, np.array([[0.9, 0.2], [-0.3, 1.1]]), offset=(0.4, -0.5),
                        order=2, mode=mode, name="affine_transform %s" % mode))
        out.append(Case(ndi.spline_filter1d, IMG, order=3, axis=0, mode=mode, name="spline_filter1d %s" % mode))
    out += [
        Case(ndi.spline_filter, IMG, order=5, name="spline_filter order 5"),
        Case(ndi.spline_filter, R(1, 4), order=2, name="spline_filter n=1"),
        Case(ndi.spline_filter1d, R(7), order=4, mode="grid-wrap", name="spline_filter1d 1-D"),
        Case(ndi.shift, R(7), 2.25, order=4, name="shift 1-D order 4"),
        Case(ndi.shift, R(1, 4), (0.0, 0.5), name="shift n=1"),
        Case(ndi.shift, R(3, 2, 4), (0.5, -0.2, 1.3), order=3, mode="nearest", name="shift 3-D"),
        Case(ndi.zoom, IMG, 1.5, grid_mode=True, mode="grid-constant", name="zoom grid_mode"),
        Case(ndi.zoom, R(2, 3, 4), (1.0, 1.5, 0.5), order=1, name="zoom 3-D"),
        Case(ndi.rotate, IMG, 30.0, name="rotate reshape"),
        Case(ndi.rotate, IMG, -20.0, reshape=False, order=1, mode="nearest", name="rotate order 1"),
        Case(ndi.rotate, R(3, 4, 3), 15.0, axes=(0, 2), order=2, name="rotate 3-D"),
        Case(ndi.affine_transform, IMG, np.array([0.8, 1.2]), offset=0.3, name="affine_transform diagonal"),
        Case(ndi.affine_transform, IMG, np.array([[0.9, 0.2, 0.3], [-0.3, 1.1, -0.4], [0, 0, 1]]),
             output_shape=(4, 7), order=1, name="affine_transform homogeneous"),
        Case(ndi.map_coordinates, R(6), np.array([[0.3, 2.5, 5.9, 7.0]]), order=5, name="map_coordinates 1-D"),
        Case(ndi.map_coordinates, IMG, np.array([[[0.2, 1.5], [3.9, 2.0]], [[5.7, 2.2], [0.0, 1.1]]]),
             prefilter=False, order=3, name="map_coordinates no prefilter"),
        Case(ndi.geometric_transform, IMG, lambda c: (c[0] * 0.9 + 0.3, c[1] - 0.4 * c[0]), order=3,
             mode="mirror", name="geometric_transform"),
        Case(ndi.geometric_transform, IMG, lambda c, s: (c[0] + s, c[1] * 1.1), output_shape=(3, 4), order=1,
             extra_arguments=(0.4,), name="geometric_transform extra_arguments"),
    ]
    for c in out:
        c.diff = [0]  # (the image; the parameters are refused, below)
    return out


CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward_matches_finite_differences(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse_is_adjoint_of_forward(case):
    check_reverse(case)


@pytest.mark.parametrize("case", [c for c in CASES if "complex" not in c.name][::6], ids=repr)
def test_second_order(case):
    check_second_order(case)


def test_the_image_gradient_of_a_nonlinear_loss():
    """The gradient of ``sum(zoom(x)**3)`` (reverse) equals the forward Jacobian's
    transpose times ``3 zoom(x)**2``."""
    x = R(4, 5)

    def loss(v):
        return np.sum(ndi.zoom(v, 1.5, order=3) ** 3)

    jac = capstan.jacobian(lambda v: ndi.zoom(v, 1.5, order=3), x)
    want = np.tensordot(3 * ndi.zoom(x, 1.5, order=3) ** 2, jac, axes=2)
    np.testing.assert_allclose(capstan.gradient(loss, x)[0], want, rtol=1e-10, atol=1e-12)


# ------------------------------------------------ derivatives in the transform's parameters
MATRIX = np.array([[0.913, 0.187], [-0.121, 1.093]])   # (coordinates away from the spline knots)
COORDS = np.array([[0.21, 1.33, 3.91, -0.62, 4.43, 2.17], [5.71, 2.23, 0.31, 1.12, 6.37, -0.41]])


def parameter_cases():
    out = []
    for mode in ["reflect", "mirror", "nearest", "constant", "grid-wrap", "grid-constant", "grid-mirror"]:
        for order in (1, 2, 3, 5):
            out.append(Case(ndi.map_coordinates, IMG, COORDS, order=order, mode=mode, cval=0.3,
                            name="map_coordinates %s order %d in both" % (mode, order)))
    out += [
        Case(lambda s: ndi.shift(IMG, s, order=3), np.array([0.31, -1.23]), name="shift amount"),
        Case(lambda s: ndi.shift(IMG, s, order=1, mode="nearest"), np.array([0.31, -1.23]), name="shift order 1"),
        Case(lambda x, s: ndi.shift(x, s, order=2, mode="grid-constant", cval=0.5), IMG, np.array([0.31, -1.23]),
             name="shift image and amount"),
        Case(lambda m: ndi.affine_transform(IMG, m, offset=0.37, order=3, mode="mirror"), np.array([0.913, 1.093]),
             name="affine_transform diagonal matrix"),
        Case(lambda m, o: ndi.affine_transform(IMG, m, offset=o, order=3, mode="reflect"), MATRIX,
             np.array([0.311, -0.237]), name="affine_transform matrix and offset"),
        Case(lambda a: ndi.rotate(IMG, a, reshape=False, order=3), 31.3, name="rotate angle"),
        Case(lambda a: ndi.rotate(IMG, a, reshape=False, order=1, mode="nearest"), 33.1, name="rotate order 1"),
        Case(ndi.map_coordinates, R(7), np.array([[0.3, 2.7, 6.6, -1.2]]), order=4, mode="grid-mirror",
             diff=[1], name="map_coordinates 1-D"),
    ]
    return out


PARAMETERS = parameter_cases()


@pytest.mark.parametrize("case", PARAMETERS, ids=repr)
def test_parameter_derivatives(case):
    check_forward(case)
    check_reverse(case)


@pytest.mark.parametrize("case", PARAMETERS[2::5] + PARAMETERS[-8:], ids=repr)
def test_parameter_second_order(case):
    check_second_order(case)


@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "constant", "grid-wrap", "grid-constant",
                                  "grid-mirror"])
def test_the_spline_derivative_identity_holds_for_scipys_weights(mode):
    """``W_k'(x) = W_(k-1)(x + 1/2) - W_(k-1)(x - 1/2)`` for SciPy's one-dimensional weights
    (``constant``: ``mirror``'s inside the image, zero outside), the fact the coordinate
    rules rest on, against central differences of the C function at many points."""
    from scipy.ndimage._ni_support import _extend_mode_to_code
    from capstan.rules.ndimage_rules import axis_weights

    code = _extend_mode_to_code(mode)
    x = np.random.default_rng(7).uniform(-2.5, 7.5, 300)
    for order in range(1, 6):
        h = 1e-6
        fd = (axis_weights(6, x + h, order, code, 0, 0) - axis_weights(6, x - h, order, code, 0, 0)) / (2 * h)
        np.testing.assert_allclose(axis_weights(6, x, order, code, 0, 1), fd, atol=2e-5)


def test_wrap_mode_coordinates_are_refused():
    """SciPy's legacy ``wrap`` mode does not follow the identity: refused, not guessed."""
    for how in (capstan.D, capstan.gradient):
        with pytest.raises(capstan.NoRuleError, match="wrap"):
            how(lambda s: np.sum(ndi.shift(IMG, (s, 0.2), order=3, mode="wrap")), 0.3)


def test_a_mapping_closing_over_a_differentiated_value():
    """``geometric_transform``'s mapping runs in Python under the differentiation, so a
    parameter it closes over is differentiated through the coordinates it makes."""
    def f(s):
        return ndi.geometric_transform(IMG, lambda c: (c[0] * s + 0.13, c[1] - 0.4 * s), order=3, mode="nearest")

    case = Case(f, 0.71, name="geometric_transform closure")
    check_forward(case)
    check_reverse(case)
    check_second_order(case)


# ---------------------------------------------------------------- Fourier-domain filters
SPECTRUM = C(4, 6)
FOURIER = [
    Case(ndi.fourier_gaussian, R(4, 6), 1.2, name="fourier_gaussian real"),
    Case(ndi.fourier_gaussian, SPECTRUM, (0.5, 1.0), name="fourier_gaussian"),
    Case(ndi.fourier_uniform, SPECTRUM, 2.0, n=7, axis=0, name="fourier_uniform n axis"),
    Case(ndi.fourier_ellipsoid, R(4, 6), 1.5, name="fourier_ellipsoid"),
    Case(ndi.fourier_ellipsoid, C(5), 1.5, name="fourier_ellipsoid 1-D"),
    Case(ndi.fourier_shift, SPECTRUM, (0.3, -1.2), name="fourier_shift"),
    Case(ndi.fourier_shift, R(1, 5), 0.5, name="fourier_shift real n=1"),
    Case(lambda v: np.real(np.fft.ifft2(ndi.fourier_gaussian(np.fft.fft2(v), 1.0))), R(4, 6),
         name="blur through the spectrum"),
]
for _c in FOURIER:
    _c.diff = [0]


@pytest.mark.parametrize("case", FOURIER, ids=repr)
def test_fourier_filters(case):
    check_forward(case)
    check_reverse(case)
    check_second_order(case)


@pytest.mark.parametrize("f, argument", [(lambda s: ndi.fourier_gaussian(SPECTRUM, s), "sigma"),
                                         (lambda s: ndi.fourier_uniform(SPECTRUM, s), "size"),
                                         (lambda s: ndi.fourier_shift(SPECTRUM, s), "shift")],
                         ids=["gaussian", "uniform", "shift"])
def test_fourier_parameters_are_refused(f, argument):
    with pytest.raises(capstan.NoRuleError, match=argument):
        capstan.D(lambda s: np.sum(np.abs(f(s))), 1.4)
    with pytest.raises(capstan.NoRuleError, match=argument):
        capstan.gradient(lambda s: np.sum(np.abs(f(s))), 1.4)


@pytest.mark.parametrize("f, at, where", [
    (lambda s: ndi.shift(IMG, (s, 0.25), order=1, mode="nearest"), 0.0, "knot"),  # integer coordinates: kinks
    (lambda s: ndi.shift(IMG, (s, 0.25), order=3), 0.0, "edge"),                   # constant mode: value jumps
    (lambda c: ndi.map_coordinates(IMG, np.array([[c, 1.5], [2.5, 3.5]]), order=1), 2.0, "knot"),
], ids=["shift order 1 at 0", "shift constant at 0", "map_coordinates at an integer"])
def test_points_where_no_derivative_exists_are_refused(f, at, where):
    """At a kink the one-sided derivatives differ (central differences give their mean):
    refused in both modes, never one side."""
    with pytest.raises(capstan.NoRuleError, match=where):
        capstan.D(lambda s: np.sum(f(s) ** 2), at)
    with pytest.raises(capstan.NoRuleError, match=where):
        capstan.gradient(lambda s: np.sum(f(s) ** 2), at)


def test_forward_mode_spares_points_that_do_not_move():
    """Row 0 of ``c[0] * s`` stays exactly on the edge (constant mode) whatever ``s``: its
    tangent is zero, so forward mode differentiates; reverse mode cannot see which points
    move and refuses."""
    def f(s):
        return np.sum(ndi.geometric_transform(IMG, lambda c: (c[0] * s, c[1]), order=1) ** 2)

    h = 1e-6
    np.testing.assert_allclose(capstan.D(f, 0.7), (f(0.7 + h) - f(0.7 - h)) / (2 * h), rtol=1e-6)
    with pytest.raises(capstan.NoRuleError, match="edge"):
        capstan.gradient(f, 0.7)
