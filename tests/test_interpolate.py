"""``scipy.interpolate``'s interpolants evaluated at differentiated points and built
from differentiated data, SciPy's own code running unmodified over the Python
equivalents of its compiled kernels (``capstan/rules/interpolate_rules.py``): forward
mode against central differences, reverse against forward (dot-product identity), and
second order; the derivative at a point against the interpolant's own derivative."""
import numpy as np
import pytest

ip = pytest.importorskip("scipy.interpolate")

import capstan  # noqa: E402
from capstan.rules import interpolate_rules  # noqa: E402
from rule_checks import Case, check_forward, check_reverse, check_second_order, reseed  # noqa: E402

reseed("interpolate")

XS = np.array([0.0, 0.4, 1.0, 1.7, 2.0, 2.6])
YS = np.array([0.2, 0.9, 0.4, 1.3, 0.8, 1.1])
AT = np.array([0.3, 0.75, 1.1, 1.95, 2.5])  # (away from the knots and their midpoints: smooth there)
Y2 = np.stack([YS, YS ** 2], axis=1)
GRID = (np.array([0.0, 1.0, 2.5]), np.array([0.0, 0.5, 1.0, 3.0]))
VALUES = np.sin(np.arange(12.0).reshape(3, 4))
GRID3 = GRID + (np.array([0.0, 1.0]),)
VALUES3 = np.cos(np.arange(24.0).reshape(3, 4, 2))
POINTS = np.array([[0.3, 0.7], [1.2, 2.1], [2.2, 0.2]])
POINTS3 = np.array([[0.3, 0.7, 0.5], [1.2, 2.1, 0.1]])


def _interpolants():
    """``(name, make(x_data, y_data))`` of the interpolants built from data."""
    return [
        ("CubicSpline", lambda x, y: ip.CubicSpline(x, y)),
        ("CubicSpline natural", lambda x, y: ip.CubicSpline(x, y, bc_type="natural")),
        ("CubicSpline clamped 2-d", lambda x, y: ip.CubicSpline(x, np.stack([y, y * y], 1), bc_type="clamped")),
        ("PchipInterpolator", lambda x, y: ip.PchipInterpolator(x, y)),
        ("Akima1DInterpolator", lambda x, y: ip.Akima1DInterpolator(x, y)),
        ("makima", lambda x, y: ip.Akima1DInterpolator(x, y, method="makima")),
        ("CubicHermiteSpline", lambda x, y: ip.CubicHermiteSpline(x, y, np.cos(y))),
        ("interp1d linear", lambda x, y: ip.interp1d(x, y)),
        ("interp1d quadratic", lambda x, y: ip.interp1d(x, y, kind="quadratic")),
        ("interp1d cubic", lambda x, y: ip.interp1d(x, y, kind="cubic")),
        ("make_interp_spline k=3", lambda x, y: ip.make_interp_spline(x, y, k=3)),
        ("make_interp_spline k=5", lambda x, y: ip.make_interp_spline(x, y, k=5)),
    ]


CASES = []
for _name, _make in _interpolants():
    CASES += [Case(lambda at, m=_make: m(XS, YS)(at), AT, name=_name + " at points"),
              Case(lambda y, m=_make: m(XS, y)(AT), YS, name=_name + " data")]
CASES += [
    Case(lambda at: ip.CubicSpline(XS, YS)(at, 1), AT, name="CubicSpline first derivative at points"),
    Case(lambda y: ip.CubicSpline(XS, y).derivative(2)(AT), YS, name="CubicSpline.derivative(2) data"),
    Case(lambda at: ip.make_interp_spline(XS, YS)(at, nu=2), AT, name="BSpline second derivative at points"),
    Case(lambda c: ip.BSpline(np.r_[[0.0] * 3, 0.5, 1.2, [2.0] * 3], c, 2)(AT / 1.3), YS[:5],
         name="BSpline coefficients"),
    Case(lambda at: ip.CubicSpline(XS, Y2)(at), AT, name="CubicSpline of 2-d data at points"),
    Case(lambda x: ip.CubicSpline(x, YS)(AT), XS, name="CubicSpline knots"),
    Case(lambda at: ip.RegularGridInterpolator(GRID, VALUES)(at), POINTS, name="RegularGridInterpolator at points"),
    Case(lambda v: ip.RegularGridInterpolator(GRID, v)(POINTS), VALUES, name="RegularGridInterpolator values"),
    Case(lambda at: ip.RegularGridInterpolator(GRID3, VALUES3)(at), POINTS3, name="RegularGridInterpolator 3-d"),
    Case(lambda v: ip.RegularGridInterpolator(GRID3, v)(POINTS3), VALUES3, name="RegularGridInterpolator 3-d values"),
    Case(lambda at: ip.interpn(GRID, VALUES, at), POINTS, name="interpn at points"),
    Case(lambda at: ip.RegularGridInterpolator(GRID, VALUES)((at[:, 0], at[:, 1])), POINTS,
         name="RegularGridInterpolator coordinate tuple"),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse(case):
    check_reverse(case)


@pytest.mark.parametrize("case", [c for c in CASES if "linear" not in repr(c) and "Grid" not in repr(c)
                                  and "interpn" not in repr(c)], ids=repr)
def test_second_order(case):
    check_second_order(case)


def test_piecewise_linear_interpolants_have_zero_second_derivative_in_the_points():
    h = capstan.hessian(lambda p: np.sum(ip.RegularGridInterpolator(GRID, VALUES)(p[None, :])), POINTS[1])
    x0, x1 = POINTS[1]
    # bilinear: d2/dx0^2 = d2/dx1^2 = 0, the mixed derivative the cell's twist
    i, j = 1, 2
    g0, g1 = GRID
    twist = (VALUES[i + 1, j + 1] - VALUES[i + 1, j] - VALUES[i, j + 1] + VALUES[i, j]) / (
        (g0[i + 1] - g0[i]) * (g1[j + 1] - g1[j]))
    np.testing.assert_allclose(h, [[0.0, twist], [twist, 0.0]], atol=1e-12)


@pytest.mark.parametrize("name,make", _interpolants()[:7] + _interpolants()[-2:], ids=lambda v: v if type(v) is str else "")
def test_the_derivative_at_a_point_is_the_interpolants_own(name, make):
    spline = make(XS, YS)
    own = spline.derivative() if hasattr(spline, "derivative") else None
    g = capstan.gradient(lambda at: np.sum(spline(at)), AT)[0]
    expected = np.sum(own(AT), axis=tuple(range(1, np.ndim(own(AT))))) if own is not None else None
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)


def test_outside_the_data_extrapolate_false_gives_a_constant_nan():
    spline = ip.CubicSpline(XS, YS, extrapolate=False)
    value, tangent = capstan.jvp(spline, (np.array([-1.0, 0.5]),), (np.ones(2),))
    assert np.isnan(value[0]) and tangent[0] == 0.0  # (the fill value does not move with x)
    assert np.isclose(tangent[1], spline.derivative()(0.5))


def test_every_kernel_has_a_python_equivalent_checked_here():
    kernels = [f for f in interpolate_rules.FUNCTIONS if not getattr(f, "__module__", "").startswith("capstan")]
    # (and FITPACK's splev, splder, splint -- SciPy 1.18: splev, splder -- and _ppoly.integrate:
    # tests/test_scan_scipy_modules.py)
    assert len(kernels) == (12 if interpolate_rules._dfitpack is not None else 11)
