"""Survey cases: scipy.integrate -- quadrature of closures over the differentiated value
(integrand, limits, ``args=``), ODE solutions (odeint, solve_ivp) as functions of a
parameter or the initial value, and the sample-based rules."""
import math

import numpy as np
from scipy import integrate

import capstan

from . import Table

T = Table("scipy.integrate")
add = T.add
X = 0.7
Y = np.array([0.9, 0.2, 1.3, 0.5, 1.7])
TIGHT = dict(rtol=1e-10, atol=1e-12)

add("quad closure p*t**2", lambda p: integrate.quad(lambda t: p * t ** 2, 0, 1)[0], X, d=lambda p: 1 / 3)
add("quad closure exp(-p t)", lambda p: integrate.quad(lambda t: math.exp(-p * t), 0, 1)[0], X,
    d=lambda p: (math.exp(-p) * (1 + p) - 1) / p ** 2)
add("quad upper limit", lambda b: integrate.quad(math.cos, 0, b)[0], X, d=math.cos)
add("quad args=", lambda p: integrate.quad(lambda t, a: a * t, 0, 1, args=(p,))[0], X, d=lambda p: 0.5)
add("quad infinite range", lambda p: integrate.quad(lambda t: math.exp(-p * t * t), -np.inf, np.inf)[0], X,
    d=lambda p: -0.5 * math.sqrt(math.pi) * p ** -1.5)
add("quad numpy integrand", lambda p: integrate.quad(lambda t: np.sin(p * t), 0, 1)[0], X,
    d=lambda p: (p * math.sin(p) + math.cos(p) - 1) / p ** 2)
add("dblquad", lambda p: integrate.dblquad(lambda y, x: p * x * y, 0, 1, 0, 1)[0], X, d=lambda p: 0.25)
add("nquad", lambda p: integrate.nquad(lambda x, y: p * x * y + x, [[0, 1], [0, 1]])[0], X, d=lambda p: 0.25)
add("fixed_quad", lambda p: integrate.fixed_quad(lambda t: np.sin(p * t), 0, 1, n=5)[0], X)
add("quad_vec", lambda p: integrate.quad_vec(lambda t: p * t ** np.arange(3.0), 0, 1)[0], X,
    d=lambda p: 1 / np.arange(1.0, 4.0))
add("simpson", lambda y: integrate.simpson(y, x=np.linspace(0, 1, 5)), Y)
add("trapezoid", lambda y: integrate.trapezoid(y * y, dx=0.25), Y)
add("cumulative_trapezoid", lambda y: integrate.cumulative_trapezoid(y, dx=0.25), Y)
add("cumulative_simpson", lambda y: integrate.cumulative_simpson(y, dx=0.25), Y)
add("romb", lambda y: integrate.romb(y, dx=0.25), Y)
decay = lambda p: -math.exp(-p)  # noqa: E731   d/dp of y(1) for y' = -p y, y(0) = 1
add("odeint closure", lambda p: integrate.odeint(lambda y, t: -p * y, 1.0, [0.0, 1.0], **TIGHT)[-1, 0], X,
    d=decay, rtol=1e-5)
add("odeint args=", lambda p: integrate.odeint(lambda y, t, a: -a * y, 1.0, [0.0, 1.0], args=(p,),
                                               **TIGHT)[-1, 0], X, d=decay, rtol=1e-5)
add("odeint initial value",
    lambda y0: integrate.odeint(lambda y, t: -0.5 * y, y0, [0.0, 1.0], **TIGHT)[-1, 0], X,
    d=lambda y0: math.exp(-0.5), rtol=1e-5)
add("solve_ivp closure RK45", lambda p: _ivp(lambda t, y: -p * y, [1.0]), X, d=decay, rtol=1e-5)
add("solve_ivp args=", lambda p: _ivp(lambda t, y, a: -a * y, [1.0], args=(p,)), X, d=decay, rtol=1e-5)
add("solve_ivp initial value", lambda y0: _ivp(lambda t, y: -0.5 * y, [y0]), X, d=lambda y0: math.exp(-0.5),
    rtol=1e-5)
add("solve_ivp DOP853", lambda p: _ivp(lambda t, y: -p * y, [1.0], method="DOP853"), X, d=decay, rtol=1e-5)
add("solve_ivp t_eval", lambda p: integrate.solve_ivp(lambda t, y: [y[1], -p * y[0]], (0.0, 1.0), [1.0, 0.0],
                                                      t_eval=[0.5, 1.0], **TIGHT).y[0], X, rtol=1e-5)
add("solve_ivp moving t_eval", lambda T: integrate.solve_ivp(lambda t, y: -2.0 * t * y, (0.0, 2.0), [1.0],
                                                              t_eval=[0.5, T], **TIGHT).y[0, 1], X,
    d=lambda T: -2.0 * T * math.exp(-T * T), rtol=1e-5)
add("solve_ivp moving start", lambda t0: integrate.solve_ivp(lambda t, y: -2.0 * t * y, (t0, 2.0), [1.0],
                                                             t_eval=[1.5], **TIGHT).y[0, 0], X / 4,
    d=lambda t0: 2.0 * t0 * math.exp(t0 * t0 - 2.25), rtol=1e-5)
add("solve_ivp Radau", lambda p: _ivp(lambda t, y: -p * y, [1.0], method="Radau"), X, d=decay, rtol=1e-4)
add("solve_ivp LSODA", lambda p: _ivp(lambda t, y: -p * y, [1.0], method="LSODA"), X, d=decay, rtol=1e-4)
add("RK45 stepper", lambda p: _rk45_final(p), X, d=lambda p: -math.exp(-p), rtol=1e-5)


def _ivp(rhs, y0, **kw):
    """y(1) by solve_ivp, tightly."""
    return integrate.solve_ivp(rhs, (0.0, 1.0), y0, **TIGHT, **kw).y[0, -1]


def _rk45_final(p):
    solver = integrate.RK45(lambda t, y: -p * y, 0.0, [1.0], 1.0, **TIGHT)
    while solver.status == "running":
        solver.step()
    return solver.y[0]
add("solve_ivp decay's slope (second order)",
    lambda p: capstan.D(lambda q: integrate.solve_ivp(lambda t, y: -q * y, (0.0, 1.0), [1.0], rtol=1e-10,
                                                      atol=1e-12).y[0, -1], p), X,
    d=lambda p: math.exp(-p), rtol=1e-5)
add("odeint logistic's gradient (second order)",
    lambda q: capstan.gradient(lambda r: integrate.odeint(lambda y, t: r[0] * y * (1 - y / r[1]), 0.3,
                                                          [0.0, 2.0], rtol=1e-10, atol=1e-12)[-1, 0], q)[0],
    np.array([0.9, 2.0]), rtol=1e-5, step=1e-3)
