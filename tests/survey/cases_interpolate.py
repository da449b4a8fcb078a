"""Survey cases: scipy.interpolate -- interpolants evaluated at a differentiated point
(reference: the interpolant's own derivative) and built from differentiated data."""
import numpy as np
from scipy import interpolate as ip

from . import Table

T = Table("scipy.interpolate")
add = T.add
XS = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
YS = np.array([0.2, 0.9, 0.4, 1.3, 0.8])
AT = np.array([0.3, 0.7, 1.1])           # evaluation points, away from the knots
X = 0.7


def _by_derivative(spline):
    """The reference of 'evaluate at x': the interpolant's own derivative at x."""
    return lambda x, v: spline.derivative()(x) * v


cs = ip.CubicSpline(XS, YS)
add("CubicSpline at x", lambda x: ip.CubicSpline(XS, YS)(x), AT, ref=_by_derivative(cs))
add("CubicSpline at scalar x", lambda x: ip.CubicSpline(XS, YS)(x), X, ref=_by_derivative(cs))
add("CubicSpline data", lambda y: ip.CubicSpline(XS, y)(AT), YS)
add("CubicSpline natural data", lambda y: ip.CubicSpline(XS, y, bc_type="natural")(AT), YS)
add("CubicSpline derivative at x", lambda x: ip.CubicSpline(XS, YS).derivative()(x), AT,
    ref=lambda x, v: cs.derivative(2)(x) * v)
add("CubicSpline integrate to x", lambda b: ip.CubicSpline(XS, YS).integrate(0.0, b), X, ref=lambda b,
    v: cs(b) * v)
add("interp1d linear at x", lambda x: ip.interp1d(XS, YS)(x), AT)
add("interp1d linear data", lambda y: ip.interp1d(XS, y)(AT), YS)
add("interp1d cubic data", lambda y: ip.interp1d(XS, y, kind="cubic")(AT), YS)
add("interp1d quadratic at x", lambda x: ip.interp1d(XS, YS, kind="quadratic")(x), AT)
pchip = ip.PchipInterpolator(XS, YS)
add("PchipInterpolator at x", lambda x: ip.PchipInterpolator(XS, YS)(x), AT, ref=_by_derivative(pchip))
add("PchipInterpolator data", lambda y: ip.PchipInterpolator(XS, y)(AT), YS)
akima = ip.Akima1DInterpolator(XS, YS)
add("Akima1DInterpolator at x", lambda x: ip.Akima1DInterpolator(XS, YS)(x), AT, ref=_by_derivative(akima))
add("Akima1DInterpolator data", lambda y: ip.Akima1DInterpolator(XS, y)(AT), YS)
add("CubicHermiteSpline dydx", lambda d: ip.CubicHermiteSpline(XS, YS, d)(AT), YS - 0.5)
spl = ip.make_interp_spline(XS, YS, k=3)
add("make_interp_spline at x", lambda x: ip.make_interp_spline(XS, YS, k=3)(x), AT, ref=_by_derivative(spl))
add("make_interp_spline data", lambda y: ip.make_interp_spline(XS, y, k=3)(AT), YS)
add("BSpline coefficients", lambda c: ip.BSpline(spl.t, c, 3)(AT), spl.c.copy())
add("BSpline at x", lambda x: ip.BSpline(spl.t, spl.c, 3)(x), AT, ref=_by_derivative(spl))
add("splrep/splev data", lambda y: ip.splev(AT, ip.splrep(XS, y)), YS)
add("splev at x", lambda x: ip.splev(x, ip.splrep(XS, YS)), AT)
add("UnivariateSpline s=0 data", lambda y: ip.UnivariateSpline(XS, y, s=0)(AT), YS)
add("lagrange data", lambda y: ip.lagrange(XS, y)(AT), YS)
add("lagrange at x", lambda x: ip.lagrange(XS, YS)(x), AT)
add("BarycentricInterpolator at x", lambda x: ip.BarycentricInterpolator(XS, YS)(x), AT)
add("BarycentricInterpolator data", lambda y: ip.BarycentricInterpolator(XS, y)(AT), YS)
add("KroghInterpolator at x", lambda x: ip.KroghInterpolator(XS, YS)(x), AT)
add("KroghInterpolator data", lambda y: ip.KroghInterpolator(XS, y)(AT), YS)
add("PPoly at x", lambda x: ip.PPoly(cs.c, cs.x)(x), AT, ref=_by_derivative(cs))
GRID = (np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0, 3.0]))
VALUES = np.arange(12.0).reshape(3, 4) ** 1.5 / 5
add("RegularGridInterpolator at a point", lambda p: ip.RegularGridInterpolator(GRID, VALUES)(p)[0],
    np.array([0.3, 1.6]))
add("RegularGridInterpolator values", lambda v: ip.RegularGridInterpolator(GRID, v)([[0.3, 1.6], [1.2, 2.5]]),
    VALUES)
add("interpn at a point", lambda p: ip.interpn(GRID, VALUES, p[None, :])[0], np.array([0.3, 1.6]))
add("RBFInterpolator at a point", lambda p: ip.RBFInterpolator(XS[:, None], YS)(p[:, None]), AT)
add("RBFInterpolator data", lambda y: ip.RBFInterpolator(XS[:, None], y)(AT[:, None]), YS)
add("griddata linear values",
    lambda v: ip.griddata(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), v,
                          np.array([[0.3, 0.4]])), YS[:4])
add("pade", lambda c: ip.pade(c, 1)[0](0.3), np.array([1.0, 0.5, 0.2]))

# ----------------------------------------------------------------------------- issue 10
add("CubicSpline clamped data", lambda y: ip.CubicSpline(XS, y, bc_type="clamped")(AT), YS)
add("makima data", lambda y: ip.Akima1DInterpolator(XS, y, method="makima")(AT), YS)
add("make_interp_spline natural at x", lambda x: ip.make_interp_spline(XS, YS, bc_type="natural")(x), AT,
    ref=_by_derivative(ip.make_interp_spline(XS, YS, bc_type="natural")))
GRID3 = GRID + (np.array([0.0, 1.0]),)
VALUES3 = np.cos(np.arange(24.0).reshape(3, 4, 2))
add("RegularGridInterpolator 3-d at a point", lambda p: ip.RegularGridInterpolator(GRID3, VALUES3)(p)[0],
    np.array([0.3, 1.6, 0.4]))
add("RegularGridInterpolator 3-d values", lambda v: ip.RegularGridInterpolator(GRID3, v)([[0.3, 1.6, 0.4]]),
    VALUES3)
add("interpn values", lambda v: ip.interpn(GRID, v, np.array([[0.3, 1.6], [1.2, 2.5]])), VALUES)
