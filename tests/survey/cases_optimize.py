"""Survey cases: scipy.optimize -- roots and minimisers as functions of a parameter the
objective closes over (the reference is the implicit-function derivative), and the
test functions (rosen, rosen_der, ...)."""
import math

import numpy as np
from scipy import optimize

import capstan

from . import Table

T = Table("scipy.optimize")
add = T.add
X = 0.7
A = np.array([0.3, 0.7, 1.1])
C = np.array([0.5, -0.2, 0.8])
sqrt_d = lambda p: 0.5 / math.sqrt(p)  # noqa: E731
cube_d = lambda p: 1 / (3 * p ** (2 / 3))  # noqa: E731   d/dp of the root of t**3 - p

add("brentq", lambda p: optimize.brentq(lambda t: t * t - p, 0.0, 3.0, xtol=1e-14), X, d=sqrt_d)
add("brenth", lambda p: optimize.brenth(lambda t: t * t - p, 0.0, 3.0, xtol=1e-14), X, d=sqrt_d)
add("ridder", lambda p: optimize.ridder(lambda t: t * t - p, 0.0, 3.0, xtol=1e-14), X, d=sqrt_d)
add("bisect", lambda p: optimize.bisect(lambda t: t * t - p, 0.0, 3.0, xtol=1e-14), X, d=sqrt_d)
add("toms748", lambda p: optimize.toms748(lambda t: t * t - p, 0.0, 3.0, xtol=1e-14), X, d=sqrt_d)
add("newton", lambda p: optimize.newton(lambda t: t ** 3 - p, 1.0, tol=1e-14), X, d=cube_d)
add("newton fprime",
    lambda p: optimize.newton(lambda t: t ** 3 - p, 1.0, fprime=lambda t: 3 * t * t, tol=1e-14),
    X, d=cube_d)
add("newton secant args=", lambda p: optimize.newton(lambda t, a: t ** 3 - a, 1.0, args=(p,), tol=1e-14), X,
    d=cube_d)
add("root_scalar brentq", lambda p: optimize.root_scalar(lambda t: t * t - p, bracket=(0.0, 3.0),
                                                         xtol=1e-14).root, X, d=sqrt_d)
add("root_scalar newton", lambda p: optimize.root_scalar(lambda t: t * t - p, x0=1.0, fprime=lambda t: 2 * t,
                                                         xtol=1e-14).root, X, d=sqrt_d)
add("fsolve", lambda p: optimize.fsolve(lambda t: t ** 3 + t - p, 1.0, xtol=1e-13)[0], X,
    d=lambda p: 1 / (3 * optimize.fsolve(lambda t: t ** 3 + t - p, 1.0, xtol=1e-13)[0] ** 2 + 1))
add("root hybr", lambda p: optimize.root(lambda t: t ** 3 + t - p, 1.0, tol=1e-13).x[0], X)
add("fixed_point", lambda p: _fixed(p), X, d=lambda p: 1 / (1 + 0.5 * math.sin(_fixed(p))))
add("minimize_scalar argmin", lambda p: optimize.minimize_scalar(_quartic(p), options={"xtol": 1e-12}).x, X,
    d=lambda p: 2 / (2 + 12 * optimize.minimize_scalar(_quartic(p), options={"xtol": 1e-12}).x ** 2),
    rtol=1e-4)
add("minimize_scalar minimum", lambda p: optimize.minimize_scalar(_quartic(p)).fun, X, rtol=1e-5)
add("minimize_scalar bounded",
    lambda p: optimize.minimize_scalar(_quartic(p), bounds=(-2, 2), method="bounded").fun, X, rtol=1e-5)
add("golden minimum", lambda p: _quartic(p)(optimize.golden(_quartic(p))), X, rtol=1e-5)
add("minimize BFGS argmin", lambda p: optimize.minimize(lambda t: np.sum((t - p * C[:2]) ** 2), np.zeros(2),
                                                        method="BFGS", options={"gtol": 1e-10}).x, X,
    d=lambda p: C[:2], rtol=1e-5)
add("minimize Nelder-Mead minimum",
    lambda p: optimize.minimize(lambda t: np.sum((t - p) ** 2) + p * p, np.zeros(2),
                                method="Nelder-Mead").fun, X,
    d=lambda p: 2 * p, rtol=1e-4)
add("minimize L-BFGS-B minimum",
    lambda p: optimize.minimize(lambda t: np.sum((t - p) ** 2) + p * t[0], np.zeros(2),
                                method="L-BFGS-B").fun, X,
    rtol=1e-4)
add("minimize_scalar argmin's slope (second order)",
    lambda p: capstan.D(lambda q: optimize.minimize_scalar(_quartic(q), options={"xtol": 1e-12}).x, p), X,
    rtol=1e-4)
add("minimize BFGS argmin's gradient (second order)",
    lambda p: capstan.gradient(lambda q: np.sum(optimize.minimize(
        lambda t: np.sum(np.cosh(t - q[0])) + 0.5 * np.sum(t * t) + q[1] * t[0] * t[1], np.zeros(2),
        jac=lambda t: np.sinh(t - q[0]) + t + q[1] * t[::-1], method="BFGS", options={"gtol": 1e-13}).x),
        p)[0], np.array([0.5, 0.3]), rtol=1e-4, step=1e-3)
add("least_squares", lambda p: optimize.least_squares(lambda t: t - p * C, np.zeros(3)).x, X, d=lambda p: C,
    rtol=1e-5)
add("curve_fit ydata", lambda y: optimize.curve_fit(lambda t, a, b: a * t + b, np.arange(3.0), y)[0], A,
    rtol=1e-5)
add("lsq_linear rhs", lambda b: optimize.lsq_linear(np.array([[1.0, 0.2], [0.3, 1.0], [0.5, 0.5]]), b).x, A,
    rtol=1e-5)
add("nnls rhs", lambda b: optimize.nnls(np.array([[1.0, 0.2], [0.3, 1.0], [0.5, 0.5]]), b)[0], A)
add("approx_fprime", lambda p: optimize.approx_fprime(np.array([p]), lambda t: t[0] ** 3)[0], X)
add("rosen", optimize.rosen, A, ref=lambda x, v: optimize.rosen_der(x) @ v)
add("rosen_der", optimize.rosen_der, A, ref=lambda x, v: optimize.rosen_hess(x) @ v)
add("rosen_hess", optimize.rosen_hess, A)
add("rosen_hess_prod", lambda x: optimize.rosen_hess_prod(x, C), A)
add("linear_sum_assignment cost", lambda c: c[optimize.linear_sum_assignment(c)].sum(),
    np.array([[0.9, 0.2, 1.3], [0.5, 1.7, 0.1], [1.1, 0.6, 0.8]]), step=1e-3)    # optimum unique by 0.1


def _fixed(p):
    return optimize.fixed_point(lambda t: 0.5 * np.cos(t) + p, 0.5, xtol=1e-13)


def _quartic(p):
    return lambda t: (t - p) ** 2 + t ** 4
