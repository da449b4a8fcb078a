"""Solver rules (capstan/rules/solver_rules.py): root finders, quadrature, ODE solvers
and minimisers, differentiated with respect to parameters passed by ``args=`` and by
closure, in forward and reverse mode, against closed forms and central finite
differences; reverse against forward by the dot-product identity; second order where
the rules support it, and a clear NoRuleError where they do not."""
import math

import numpy as np
import pytest

import capstan

optimize = pytest.importorskip("scipy.optimize")
integrate = pytest.importorskip("scipy.integrate")

X = 0.7


def central(f, x, h=1e-5):
    """Richardson-extrapolated central difference of ``f`` at scalar ``x``."""
    return (8 * (f(x + h) - f(x - h)) - (f(x + 2 * h) - f(x - 2 * h))) / (12 * h)


def both_modes(f, x):
    """``(forward derivative, reverse derivative)`` of scalar-input ``f`` at ``x``."""
    forward = capstan.jvp(f, (x,), (1.0,))[1]
    y, back = capstan.pullback(f, x)
    if np.ndim(y) == 0:
        return forward, back(1.0)[0]
    rows = [back(e.reshape(np.shape(y)))[0] for e in np.eye(np.size(y))]
    return forward, np.reshape(rows, np.shape(y))


def check(f, x, want, rtol=1e-8, atol=1e-10):
    fwd, rev = both_modes(f, x)
    np.testing.assert_allclose(fwd, want, rtol=rtol, atol=atol)
    np.testing.assert_allclose(rev, want, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- roots
SQRT_D = 0.5 / math.sqrt(X)


@pytest.mark.parametrize("solver", ["brentq", "bisect", "brenth", "ridder", "toms748"])
def test_bracketing_root_closure_and_args(solver):
    find = getattr(optimize, solver)
    check(lambda p: find(lambda t: t * t - p, 0.0, 3.0, xtol=1e-14), X, SQRT_D)
    check(lambda p: find(lambda t, a: t * t - a, 0.0, 3.0, args=(p,), xtol=1e-14), X, SQRT_D)


def test_brentq_value_is_scipys_own():
    value = capstan.jvp(lambda p: optimize.brentq(lambda t: t * t - p, 0.0, 3.0), (X,), (1.0,))[0]
    assert value == optimize.brentq(lambda t: t * t - X, 0.0, 3.0)


def test_newton_forms():
    cube = 1 / (3 * X ** (2 / 3))
    check(lambda p: optimize.newton(lambda t: t ** 3 - p, 1.0, tol=1e-14), X, cube)
    check(lambda p: optimize.newton(lambda t: t ** 3 - p, 1.0, fprime=lambda t: 3 * t * t, tol=1e-14),
          X, cube)
    check(lambda p: optimize.newton(lambda t, a: t ** 3 - a, 1.0, args=(p,), tol=1e-14), X, cube)


def test_newton_elementwise_array():
    p = np.array([0.5, 0.7, 1.3])
    jac = capstan.jacobian(lambda q: optimize.newton(lambda t: t ** 3 - q, np.ones(3), tol=1e-14), p)
    np.testing.assert_allclose(jac, np.diag(1 / (3 * p ** (2 / 3))), rtol=1e-8, atol=1e-12)


def test_root_scalar_methods():
    check(lambda p: optimize.root_scalar(lambda t: t * t - p, bracket=(0.0, 3.0), xtol=1e-14).root, X, SQRT_D)
    check(lambda p: optimize.root_scalar(lambda t: t * t - p, x0=1.0, fprime=lambda t: 2 * t,
                                         xtol=1e-14).root, X, SQRT_D)


def _system(t, a, b):
    """Two equations in two unknowns: the intersection of a circle and a cubic."""
    return [t[0] ** 2 + t[1] ** 2 - a, t[1] - t[0] ** 3 - b]


def test_fsolve_and_root_systems_against_finite_differences():
    def by_fsolve(p):
        return optimize.fsolve(_system, [1.0, 0.5], args=(p, 0.1), xtol=1e-13)

    def by_root(p):
        return optimize.root(lambda t: _system(t, 1.5, p), [1.0, 0.5], tol=1e-13).x

    for f in (by_fsolve, by_root):
        check(f, X, central(lambda p: np.asarray(f(p)), X), rtol=1e-7)


def test_fsolve_dot_product_identity():
    """Reverse against forward for a parameter vector captured by closure."""
    rng = np.random.default_rng(1)
    p0, v, w = np.array([1.5, 0.1]), rng.standard_normal(2), rng.standard_normal(2)

    def f(p):
        return optimize.fsolve(lambda t: _system(t, p[0], p[1]), [1.0, 0.5], xtol=1e-13)

    jv = capstan.jvp(f, (p0,), (v,))[1]
    y, back = capstan.pullback(f, p0)
    assert np.isclose(w @ jv, back(w)[0] @ v, rtol=1e-10)


def test_root_second_order():
    """d^2/dp^2 sqrt(p) through brentq, both nestings; a Hessian through fsolve."""
    want = -0.25 * X ** -1.5
    root = lambda p: optimize.brentq(lambda t: t * t - p, 0.0, 3.0, xtol=1e-14)  # noqa: E731
    assert np.isclose(capstan.D(lambda p: capstan.D(root, p), X), want, rtol=1e-7)
    assert np.isclose(capstan.hessian(lambda p: root(p[0]), np.array([X]))[0, 0], want, rtol=1e-7)

    def g(p):
        return np.sum(optimize.fsolve(lambda t: _system(t, p[0], p[1]), [1.0, 0.5], xtol=1e-13) ** 2)

    p0 = np.array([1.5, 0.1])
    hess = capstan.hessian(g, p0)
    fd = np.stack([(capstan.gradient(g, p0 + h)[0] - capstan.gradient(g, p0 - h)[0]) / 2e-5
                   for h in np.eye(2) * 1e-5])
    np.testing.assert_allclose(hess, fd, rtol=1e-5, atol=1e-7)


def test_root_not_converged_is_refused():
    with pytest.raises(capstan.NoRuleError, match="not a solution"):
        capstan.D(lambda p: optimize.root(lambda t: _system(t, 1.5, p), [1.0, 0.5],
                                          options={"maxfev": 3}).x[0], X)


def test_no_dependence_is_plain():
    """A solver whose callback holds no differentiated value: its result is a constant."""
    assert capstan.D(lambda p: p * optimize.brentq(lambda t: t * t - 2.0, 0.0, 3.0), X) == pytest.approx(
        math.sqrt(2))


# ----------------------------------------------------------------------------- quadrature
def test_quad_under_the_integral_sign():
    check(lambda p: integrate.quad(lambda t: p * t ** 2, 0, 1)[0], X, 1 / 3)
    check(lambda p: integrate.quad(lambda t: math.exp(-p * t), 0, 1)[0], X,
          (math.exp(-X) * (1 + X) - 1) / X ** 2)
    check(lambda p: integrate.quad(lambda t, a: np.sin(a * t), 0, 1, args=(p,))[0], X,
          (X * math.sin(X) + math.cos(X) - 1) / X ** 2)


def test_quad_limits():
    check(lambda b: integrate.quad(math.cos, 0, b)[0], X, math.cos(X))
    check(lambda a: integrate.quad(math.cos, a, 2.0)[0], X, -math.cos(X))
    check(lambda b: integrate.quad(lambda t: b * t, 0, b)[0], X, 1.5 * X * X)  # limit and integrand
    check(lambda b: integrate.quad(math.cos, 1.0, b)[0], 0.3, math.cos(0.3))  # reversed range
    check(lambda b: integrate.quad(math.cos, b, b)[0], X, 0.0)


def test_quad_infinite_ranges():
    check(lambda p: integrate.quad(lambda t: math.exp(-p * t * t), -np.inf, np.inf)[0], X,
          -0.5 * math.sqrt(math.pi) * X ** -1.5)
    check(lambda p: integrate.quad(lambda t: math.exp(-p * t), 0, np.inf)[0], X, -1 / X ** 2)
    check(lambda a: integrate.quad(lambda t: math.exp(-t), a, np.inf)[0], X, -math.exp(-X))
    check(lambda b: integrate.quad(lambda t: math.exp(t), -np.inf, b)[0], X, math.exp(X))
    check(lambda a: integrate.quad(lambda t: math.exp(-t), np.inf, a)[0], X, math.exp(-X))


def test_quad_full_output_and_second_order():
    out = capstan.jvp(lambda p: integrate.quad(lambda t: p * t, 0, 1, full_output=1)[:2], (X,), (1.0,))
    assert out[0][0] == pytest.approx(X / 2) and out[1][0] == pytest.approx(0.5)
    # d^2/dp^2 of the integral of exp(-p t) over [0, b], and its mixed derivative in b
    f = lambda p, b: integrate.quad(lambda t: math.exp(-p * t), 0, b)[0]  # noqa: E731
    hess = capstan.hessian(lambda v: f(v[0], v[1]), np.array([X, 1.2]))
    want_pp = integrate.quad(lambda t: t * t * math.exp(-X * t), 0, 1.2)[0]
    want_pb = -1.2 * math.exp(-X * 1.2)
    np.testing.assert_allclose(hess, [[want_pp, want_pb], [want_pb, -X * math.exp(-X * 1.2)]], rtol=1e-8)


def test_quad_vec_and_dblquad():
    check(lambda p: integrate.quad_vec(lambda t: p * t ** np.arange(3.0), 0, 1)[0], X,
          1 / np.arange(1.0, 4.0))
    check(lambda p: integrate.quad_vec(lambda t: np.exp(-p * t) * np.ones(2), 0, np.inf)[0], X,
          -np.ones(2) / X ** 2)
    check(lambda b: integrate.quad_vec(lambda t: np.array([t, 1.0]), 0, b)[0], X, [X, 1.0])
    check(lambda p: integrate.dblquad(lambda y, x: p * x * y, 0, 1, 0, 1)[0], X, 0.25)


def test_weighted_quad_is_refused():
    with pytest.raises(capstan.NoRuleError, match="weight="):
        capstan.D(lambda p: integrate.quad(lambda t: p * t, 0, 1, weight="cos", wvar=2.0)[0], X)


# ----------------------------------------------------------------------------- ODEs
TIGHT = dict(rtol=1e-10, atol=1e-12)


def decay_ivp(p, method="RK45"):
    return integrate.solve_ivp(lambda t, y: -p * y, (0.0, 1.0), [1.0], method=method, **TIGHT).y[0, -1]


@pytest.mark.parametrize("method", ["RK45", "DOP853", "LSODA"])
def test_solve_ivp_exponential_decay(method):
    check(lambda p: decay_ivp(p, method), X, -math.exp(-X), rtol=1e-7)


def test_solve_ivp_args_and_initial_value():
    check(lambda p: integrate.solve_ivp(lambda t, y, a: -a * y, (0.0, 1.0), [1.0], args=(p,),
                                        **TIGHT).y[0, -1],
          X, -math.exp(-X), rtol=1e-7)
    check(lambda y0: integrate.solve_ivp(lambda t, y: -0.5 * y, (0.0, 1.0), [y0], **TIGHT).y[0, -1],
          X, math.exp(-0.5), rtol=1e-7)


def test_solve_ivp_harmonic_oscillator_t_eval():
    """y'' = -w^2 y, y(0) = 1, y'(0) = 0: y(t) = cos(w t), dy/dw = -t sin(w t)."""
    times = np.array([0.5, 1.0, 2.0])

    def f(w):
        return integrate.solve_ivp(lambda t, y: [y[1], -w * w * y[0]], (0.0, 2.0), [1.0, 0.0],
                                   t_eval=times, **TIGHT).y[0]

    check(f, 1.3, -times * np.sin(1.3 * times), rtol=1e-7)


def test_ode_second_order_closed_forms():
    """Second derivatives of ODE solutions (two Newton steps on the collocation equations):
    exponential decay (d^2/dp^2 exp(-p t) = t^2 exp(-p t)) through solve_ivp and odeint, in
    both nestings; the harmonic oscillator cos(w t) (-t^2 cos(w t)); an initial value
    y0 = p^2 (2 exp(-t/2))."""
    want = math.exp(-X)
    assert np.isclose(capstan.D(lambda p: capstan.D(decay_ivp, p), X), want, rtol=1e-7)
    assert np.isclose(capstan.hessian(lambda p: decay_ivp(p[0]), np.array([X]))[0, 0], want, rtol=1e-7)
    assert np.isclose(capstan.D(lambda p: capstan.D(lambda q: decay_ivp(q, "Radau"), p), X), want, rtol=1e-6)
    by_odeint = lambda p: integrate.odeint(lambda y, t, a: -a * y, 1.0, [0.0, 0.5, 1.0], args=(p,),  # noqa: E731
                                           **TIGHT)[-1, 0]
    assert np.isclose(capstan.hessian(lambda p: by_odeint(p[0]), np.array([X]))[0, 0], want, rtol=1e-6)
    times = np.array([0.5, 1.0, 2.0])
    cosine = lambda w: integrate.solve_ivp(lambda t, y: [y[1], -w * w * y[0]], (0.0, 2.0), [1.0, 0.0],  # noqa: E731
                                           t_eval=times, **TIGHT).y[0]
    np.testing.assert_allclose(capstan.jacobian(lambda w: capstan.jvp(cosine, (w,), (1.0,))[1], 1.3),
                               -times ** 2 * np.cos(1.3 * times), rtol=1e-6)
    start = lambda p: integrate.solve_ivp(lambda t, y: -0.5 * y, (0.0, 1.0), [p * p], **TIGHT).y[0, -1]  # noqa: E731
    assert np.isclose(capstan.D(lambda p: capstan.D(start, p), X), 2 * math.exp(-0.5), rtol=1e-8)


def test_ode_hessian_of_a_nonlinear_system_in_all_nestings():
    """The logistic equation y' = r y (1 - y/k), y(0) = y0, in (r, k, y0): the Hessian of
    y(2) against the closed form's (differentiated by capstan), forward over reverse,
    reverse over reverse and forward over forward -- the equation's own second derivatives
    (in y and mixed) enter here."""
    def solved(q):
        return integrate.solve_ivp(lambda t, y: q[0] * y * (1 - y / q[1]), (0.0, 2.0), [q[2]],
                                   **TIGHT).y[0, -1]

    def closed(q):
        r, k, y0 = q[0], q[1], q[2]
        return k / (1 + (k / y0 - 1) * np.exp(-2.0 * r))

    q0 = np.array([0.9, 2.0, 0.3])
    want = capstan.hessian(closed, q0)
    np.testing.assert_allclose(capstan.hessian(solved, q0), want, rtol=1e-6, atol=1e-8)
    for i, e in enumerate(np.eye(3)):
        rr = capstan.gradient(lambda q: capstan.gradient(solved, q)[0][i], q0)[0]
        ff = capstan.jacobian(lambda q: capstan.jvp(solved, (q,), (e,))[1], q0)
        np.testing.assert_allclose(rr, want[i], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(ff, want[i], rtol=1e-6, atol=1e-8)


def test_solve_ivp_stiff_method_with_jacobian():
    def f(p):
        return integrate.solve_ivp(lambda t, y: -p * y, (0.0, 1.0), [1.0], method="Radau",
                                   jac=lambda t, y: [[-p]], **TIGHT).y[0, -1]

    check(f, X, -math.exp(-X), rtol=1e-6)


def _three_state(t, y, a, b, c, d):
    return np.array([-a * y[0] + b * y[1] * y[2], a * y[0] - b * y[1] * y[2] - c * y[1] ** 2,
                     c * y[1] ** 2 - d * y[2]])


def test_solve_ivp_three_states_four_parameters():
    """Jacobian of the solution at several times in the 4 parameters (args=) against finite
    differences, forward and reverse; the dot-product identity."""
    p0, y0 = np.array([0.4, 3.0, 1.5, 0.2]), np.array([1.0, 0.2, 0.1])

    def f(p):
        return integrate.solve_ivp(_three_state, (0.0, 2.0), y0, t_eval=[1.0, 2.0], args=tuple(p),
                                   **TIGHT).y

    fd = np.stack([(f(p0 + h) - f(p0 - h)) / 2e-6 for h in np.eye(4) * 1e-6], axis=-1)
    np.testing.assert_allclose(capstan.jacfwd(f)(p0), fd, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(capstan.jacrev(f)(p0), fd, rtol=1e-5, atol=1e-8)
    rng = np.random.default_rng(3)
    v, w = rng.standard_normal(4), rng.standard_normal((3, 2))
    jv = capstan.jvp(f, (p0,), (v,))[1]
    _, back = capstan.pullback(f, p0)
    assert np.isclose(np.sum(w * jv), back(w)[0] @ v, rtol=1e-9)


@pytest.mark.parametrize("rhs", [
    lambda t, y, p: [p * math.sin(y[0]) - 0.3 * y[0]],  # one state at a time only (math.sin)
    lambda t, y, p: -p * y / np.sum(y),  # runs on all nodes at once, but mixes them: not batched
    lambda t, y, p: -p * y * (1 + 0.1 * np.cos(t)),  # batches
], ids=["scalar-only", "mixing", "batching"])
def test_solve_ivp_callback_shapes(rhs):
    def f(p):
        return integrate.solve_ivp(rhs, (0.0, 1.5), [0.8], args=(p,), t_eval=[0.5, 1.5], **TIGHT).y[0]

    check(f, X, central(f, X), rtol=1e-6, atol=1e-9)


def test_solve_ivp_callback_batching_only_for_distinct_times():
    """The Jacobians at the nodes come from one run on every node repeated once per state;
    a callback that batches over distinct times only (here it doubles when a time repeats)
    is noticed and gets one run per state instead: the derivative stays right."""
    def rhs(t, y, p):
        repeated = np.ndim(t) and len(np.unique(t)) < np.size(t)
        return np.array([-p * y[0] + y[1], -y[0] * y[1]]) * (2.0 if repeated else 1.0)

    def f(p):
        return integrate.solve_ivp(rhs, (0.0, 1.5), [0.8, 0.3], args=(p,), t_eval=[0.5, 1.5], **TIGHT).y

    check(f, X, central(f, X), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("method", ["RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA"])
@pytest.mark.parametrize("span", [(0.0, 3.0), (3.0, 0.0)])
def test_dense_values_at_the_nodes_are_scipys(method, span):
    """The states at the collocation nodes, read from the plain solution's steps all at
    once (explicit Runge-Kutta), are what its dense output gives, to rounding."""
    from capstan.rules.solver_rules import _dense_values

    out = integrate.solve_ivp(_three_state, span, [1.0, 0.2, 0.1], args=(0.4, 3.0, 1.5, 0.2),
                              method=method, dense_output=True, rtol=1e-6, atol=1e-9)
    ts = out.sol.ts
    s = (ts[:-1, None] + np.diff(ts)[:, None] * np.array([0.1, 0.5, 0.9])).ravel()
    np.testing.assert_allclose(_dense_values(out.sol, s), out.sol(s), rtol=1e-14, atol=1e-15)


def test_solve_ivp_dense_output():
    """sol(t) of a differentiated solve: the derivative at any time in the span, one time or
    several; kept past the differentiation, the plain values."""
    kept = []

    def f(p):
        out = integrate.solve_ivp(lambda t, y: -p * y, (0.0, 1.0), [1.0], dense_output=True, **TIGHT)
        kept.append(out.sol)
        return out.sol(0.5)[0] + out.sol([0.25, 0.75])[0].sum()

    times = np.array([0.5, 0.25, 0.75])
    check(f, X, -np.sum(times * np.exp(-X * times)), rtol=1e-7)
    assert np.allclose(kept[-1](0.5), [math.exp(-0.5 * X)], rtol=1e-8)


def test_odeint_forms():
    times = [0.0, 0.5, 1.0]
    check(lambda p: integrate.odeint(lambda y, t: -p * y, 1.0, times, **TIGHT)[:, 0], X,
          -np.array(times) * np.exp(-X * np.array(times)), rtol=1e-6, atol=1e-9)
    check(lambda p: integrate.odeint(lambda y, t, a: -a * y, 1.0, times, args=(p,), **TIGHT)[-1, 0], X,
          -math.exp(-X), rtol=1e-6)
    check(lambda y0: integrate.odeint(lambda t, y: -0.5 * y, y0, times, tfirst=True, **TIGHT)[-1, 0], X,
          math.exp(-0.5), rtol=1e-6)
    check(lambda w: integrate.odeint(lambda y, t: [y[1], -w * w * y[0]], [1.0, 0.0], [0.0, 1.0],
                                     Dfun=lambda y, t: [[0.0, 1.0], [-w * w, 0.0]], **TIGHT)[-1, 0],
          1.3, -math.sin(1.3), rtol=1e-6)


def test_odeint_at_differentiated_output_times():
    """y' = -2 t y, y(t0) = 1: y(T) = exp(t0^2 - T^2).  The output times (first, last, a
    middle one) are differentiated, with tfirst and args; was NoRuleError."""
    def y_at(t0, T, **kw):
        return integrate.odeint(lambda y, t, c: -c * t * y, 1.0, [t0, 0.5 * (t0 + T), T], args=(2.0,), **TIGHT, **kw)

    check(lambda T: y_at(0.2, T)[-1, 0], X, -2.0 * X * math.exp(0.04 - X * X), rtol=1e-6)
    check(lambda t0: y_at(t0, 1.1)[-1, 0], X / 4, 2.0 * (X / 4) * math.exp((X / 4) ** 2 - 1.21), rtol=1e-6)
    mid = lambda T: integrate.odeint(lambda t, y: -2.0 * t * y, 1.0, np.array([0.0, T, 2.0]),  # noqa: E731
                                     tfirst=True, **TIGHT)[1, 0]
    check(mid, X, -2.0 * X * math.exp(-X * X), rtol=1e-6)
    H = capstan.hessian(lambda ts: y_at(ts[0], ts[1])[-1, 0], np.array([0.2, X]))
    # d2/dT2 exp(t0^2 - T^2) = (4 T^2 - 2) exp(..); d2/dt0 dT = -4 t0 T exp(..)
    e = math.exp(0.04 - X * X)
    np.testing.assert_allclose(H[1, 1], (4 * X * X - 2) * e, rtol=1e-5)
    np.testing.assert_allclose(H[0, 1], -4 * 0.2 * X * e, rtol=1e-5)


def test_solve_ivp_at_differentiated_output_times_and_start():
    """y' = -c t y, y(t0) = 1: y(t) = exp(c (t0^2 - t^2) / 2).  Differentiated t_eval
    (dy(t_i)/dt_i = f(t_i, y_i)) and t_span[0] (the start moved back along the flow), both
    modes, with args and every explicit method; was NoRuleError."""
    def y_at(t0, ts, method="RK45"):
        return integrate.solve_ivp(lambda t, y, c: -c * t * y, (t0, 2.0), [1.0], t_eval=ts, args=(2.0,),
                                   method=method, **TIGHT).y[0]

    for method in ("RK45", "DOP853", "Radau", "LSODA"):
        check(lambda T: y_at(0.2, np.array([0.5, T, 1.8]), method)[1], X, -2.0 * X * math.exp(0.04 - X * X),
              rtol=1e-6)
        check(lambda t0: y_at(t0, [1.1, 1.5], method)[0], 0.2, 2.0 * 0.2 * math.exp(0.04 - 1.21), rtol=1e-6)
    # the output time at the start itself: y(t0) = 1 whatever t0
    check(lambda t0: integrate.solve_ivp(lambda t, y: -2.0 * t * y, (t0, 2.0), [1.0], t_eval=[t0, 1.5],
                                         **TIGHT).y[0, 0], 0.2, 0.0)
    # the end of the span with t_eval given: no output depends on it
    end = lambda t1: integrate.solve_ivp(lambda t, y: -2.0 * t * y, (0.0, t1), [1.0],  # noqa: E731
                                         t_eval=[0.5, 1.5], **TIGHT).y[0, 1]
    assert capstan.D(end, 2.0) == 0.0 and capstan.gradient(end, 2.0)[0] in (None, 0.0)
    with pytest.raises(capstan.NoRuleError, match="second-order derivatives in a differentiated t_span"):
        capstan.hessian(lambda t0: y_at(t0, [1.1, 1.5])[0], 0.2)


@pytest.mark.parametrize("call, match", [
    (lambda p: integrate.odeint(lambda y, t: -y, 1.0, [0.0, p], full_output=True)[0], "full_output"),
    (lambda p: integrate.solve_ivp(lambda t, y: -y, (0.0, 1.0), [p], dense_output=True).sol(p),
     "plain number"),
    (lambda p: integrate.solve_ivp(lambda t, y: -y, (0.0, p), [1.0]).y, "time span"),
    (lambda p: integrate.solve_ivp(lambda t, y: -p * y, (0.0, 1.0), [1.0], events=lambda t, y: y[0] - 0.5).y,
     "events"),
    (lambda p: capstan.D(lambda q: capstan.D(lambda r: decay_ivp(p * q * r), 1.0), 1.0), "third or higher"),
])
def test_ode_refusals(call, match):
    with pytest.raises(capstan.NoRuleError, match=match):
        capstan.D(call, X)


@pytest.mark.parametrize("call, match", [
    (lambda p: integrate.solve_ivp(lambda t, y: -p * y, (0.0, 1.0), [1.0 + 0j]).y[0, -1].real, "complex ODE"),
    (lambda p: optimize.newton(lambda z: z * z + p, 1j).imag, "complex root"),
])
def test_complex_refusals(call, match):
    with pytest.raises(capstan.NoRuleError, match=match):
        capstan.D(call, X)


def test_kept_tape_is_refused():
    """A kept tape replays its steps for new inputs; the plain solve is none of them."""
    with pytest.raises(capstan.NoRuleError, match="kept tape"):
        capstan.record_tape(lambda p: optimize.brentq(lambda t: t * t - p, 0.0, 3.0), X)
    with pytest.raises(capstan.NoRuleError, match="kept tape"):
        capstan.record_tape(lambda p: integrate.quad(lambda t: p * t, 0.0, 1.0)[0], X)


# ----------------------------------------------------------------------------- minimisers
def test_minimize_argmin_and_minimum():
    c = np.array([0.5, -0.2])

    def argmin(p):
        return optimize.minimize(lambda t: np.sum((t - p * c) ** 2) + 0.1 * np.sum(t ** 4), np.zeros(2),
                                 method="BFGS", options={"gtol": 1e-11}).x

    check(argmin, X, central(argmin, X, 1e-4), rtol=1e-5, atol=1e-7)
    check(lambda p: optimize.minimize(lambda t: np.sum((t - p) ** 2) + p * p, np.zeros(2),
                                      method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-12}).fun,
          X, 2 * X, rtol=1e-6)
    xs = optimize.minimize_scalar(lambda t: (t - X) ** 2 + t ** 4, options={"xtol": 1e-12}).x
    check(lambda p: optimize.minimize_scalar(lambda t: (t - p) ** 2 + t ** 4, options={"xtol": 1e-12}).x,
          X, 2 / (2 + 12 * xs ** 2), rtol=1e-7)


def test_scalar_minimisers_fixed_point_and_least_squares():
    quartic = lambda p: (lambda t: (t - p) ** 2 + t ** 4)  # noqa: E731
    xs = optimize.golden(quartic(X), tol=1e-12)
    check(lambda p: optimize.golden(quartic(p), tol=1e-12), X, 2 / (2 + 12 * xs ** 2), rtol=1e-7)
    check(lambda p: optimize.brent(quartic(p), full_output=True)[1], X, -2 * (xs - X), rtol=1e-6)
    fixed = lambda p: optimize.fixed_point(lambda t: 0.5 * np.cos(t) + p, 0.5, xtol=1e-13)  # noqa: E731
    check(fixed, X, 1 / (1 + 0.5 * math.sin(fixed(X))), rtol=1e-9)
    c = np.array([0.5, -0.2, 0.8])
    check(lambda p: optimize.least_squares(lambda t: t - p * c, np.zeros(3)).x, X, c)

    def residuals(t, p):  # a nonlinear fit: one residual more than unknowns
        return np.array([t[0] ** 2 - p, t[0] * t[1] - 1.0, t[1] - 0.3 * p])

    def fit(p):
        out = optimize.least_squares(residuals, np.ones(2), args=(p,), xtol=1e-15, ftol=1e-15, gtol=1e-15)
        return np.concatenate([out.x, [out.cost], out.fun])

    def optimality(t, p):  # J^T r = 0, solved tightly for the reference
        return np.array([[2 * t[0], t[1], 0.0], [0.0, t[0], 1.0]]) @ residuals(t, p)

    x_of = lambda p: optimize.fsolve(optimality, [0.9, 0.6], args=(p,), xtol=1e-12)  # noqa: E731
    dx, x, r = central(x_of, X), x_of(X), residuals(x_of(X), X)
    jac = np.array([[2 * x[0], 0.0], [x[1], x[0]], [0.0, 1.0]])
    r_p = np.array([-1.0, 0.0, -0.3])
    check(fit, X, np.concatenate([dx, [r @ r_p], jac @ dx + r_p]), rtol=1e-6, atol=1e-8)


def test_curve_fit_in_ydata_and_closure():
    """popt and pcov of a straight-line fit in ydata against the least-squares closed forms
    (pcov = inv(A^T A) |r|^2 / dof); popt of a nonlinear fit in a closed-over scale."""
    xdata, ydata = np.arange(5.0), np.array([0.9, 2.2, 2.8, 4.1, 5.2])
    A = np.stack([xdata, np.ones(5)], axis=1)

    def fit(y):
        popt, pcov = optimize.curve_fit(lambda t, a, b: a * t + b, xdata, y)
        return np.concatenate([popt, pcov.ravel()])

    r = A @ np.linalg.lstsq(A, ydata, rcond=None)[0] - ydata
    dr = A @ np.linalg.pinv(A) - np.eye(5)
    want = np.concatenate([np.linalg.pinv(A), np.linalg.inv(A.T @ A).reshape(4, 1) * (2 * r @ dr / 3)])
    np.testing.assert_allclose(capstan.jacobian(fit, ydata), want, atol=1e-9)
    np.testing.assert_allclose(capstan.jacobian(fit, ydata, mode="reverse"), want, atol=1e-9)

    def rate(k):
        return optimize.curve_fit(lambda t, a: k * np.exp(-a * t), xdata, 2.0 * np.exp(-0.3 * xdata),
                                  p0=[0.2])[0][0]

    check(rate, 2.0, central(rate, 2.0, 1e-4), rtol=1e-5)


def test_bounds_clear_of_the_minimiser_and_on_it():
    """Bounds that are not active leave the derivative of the unconstrained minimiser; a
    minimiser on (or next to) a bound is refused, whatever the method."""
    def inside(p, upper):
        return optimize.minimize(lambda t: np.sum((t - p) ** 2), np.zeros(2), method="L-BFGS-B",
                                 bounds=[(0, upper), (None, upper)], options={"gtol": 1e-12}).x

    check(lambda p: inside(p, 1.0), X, [1.0, 1.0], rtol=1e-6)
    check(lambda p: optimize.minimize_scalar(lambda t: (t - p) ** 2 + t ** 4, bounds=(-2, 2),
                                             method="bounded", options={"xatol": 1e-10}).fun, X,
          -2 * (optimize.minimize_scalar(lambda t: (t - X) ** 2 + t ** 4).x - X), rtol=1e-6)
    on_bound = [lambda p: inside(p, 0.5)[0],
                lambda p: optimize.minimize_scalar(lambda t: (t - p) ** 2, bounds=(0, 0.5),
                                                   method="bounded").x,
                lambda p: optimize.least_squares(lambda t: t - p, [0.1], bounds=(0, 0.5)).x[0],
                lambda p: optimize.curve_fit(lambda t, a: a * t, np.arange(3.0), p * np.arange(3.0),
                                             bounds=(0, 0.5))[0][0]]
    for f in on_bound:
        with pytest.raises(capstan.NoRuleError, match="bound"):
            capstan.D(f, X)


def test_linear_least_squares():
    """lsq_linear and nnls in b (the pseudo-inverse) and in A; nnls with an active bound refused."""
    A, b = np.array([[1.0, 0.2], [0.3, 1.0], [0.5, 0.5]]), np.array([0.3, 0.7, 1.1])
    for f in (lambda v: optimize.lsq_linear(A, v).x, lambda v: optimize.nnls(A, v)[0]):
        np.testing.assert_allclose(capstan.jacobian(f, b), np.linalg.pinv(A), atol=1e-9)
        np.testing.assert_allclose(capstan.jacobian(f, b, mode="reverse"), np.linalg.pinv(A), atol=1e-9)
    in_A = lambda s: optimize.lsq_linear(A * s, b).x  # noqa: E731   x = pinv(A) b / s
    check(in_A, 1.3, -np.linalg.pinv(A) @ b / 1.3 ** 2, rtol=1e-8)
    norm = lambda v: optimize.nnls(A, v)[1]  # noqa: E731
    r = A @ np.linalg.pinv(A) @ b - b
    want = -(r - A @ np.linalg.pinv(A) @ r) / np.linalg.norm(r)
    np.testing.assert_allclose(capstan.gradient(norm, b)[0], want, atol=1e-9)
    with pytest.raises(capstan.NoRuleError, match="bound"):
        capstan.D(lambda p: optimize.nnls(A, b * np.array([1.0, -5.0, 1.0]) * p)[0][0], 1.0)


def test_minimiser_second_order_scalar_closed_form():
    """x(p) minimises (t - p)^2 + t^4: 2 (x - p) + 4 x^3 = 0, so x' = 2 / (2 + 12 x^2) and
    x'' = -48 x x' / (2 + 12 x^2)^2; the minimum m(p) has m' = -2 (x - p), m'' = -2 (x' - 1).
    Both nestings (D of D, the Hessian), minimize_scalar and golden."""
    quartic = lambda p: (lambda t: (t - p) ** 2 + t ** 4)  # noqa: E731
    xs = optimize.golden(quartic(X), tol=1e-12)
    xp = 2 / (2 + 12 * xs ** 2)
    xpp = -48 * xs * xp / (2 + 12 * xs ** 2) ** 2
    for argmin in (lambda p: optimize.minimize_scalar(quartic(p), options={"xtol": 1e-12}).x,
                   lambda p: optimize.golden(quartic(p), tol=1e-12)):
        assert np.isclose(capstan.D(lambda p: capstan.D(argmin, p), X), xpp, rtol=1e-6)
        assert np.isclose(capstan.hessian(lambda p: argmin(p[0]), np.array([X]))[0, 0], xpp, rtol=1e-6)
    minimum = lambda p: optimize.minimize_scalar(quartic(p), options={"xtol": 1e-12}).fun  # noqa: E731
    assert np.isclose(capstan.D(lambda p: capstan.D(minimum, p), X), -2 * (xp - 1), rtol=1e-6)


def test_minimiser_second_order_quadratic_closed_form():
    """min 0.5 t'At - t'b(p) with b = (p0^2, p0 p1): x = A^-1 b, exact to second order; the
    Hessians of w.x and of the minimum -0.5 b'A^-1 b in all four nestings."""
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    w = np.linalg.solve(A.T, np.array([1.0, -2.0]))  # (w.x = w'.b, w' = A^-T (1, -2))
    p0 = np.array([0.8, 1.3])

    def solve(p):
        b = np.stack([p[0] ** 2, p[0] * p[1]])
        return optimize.minimize(lambda t: 0.5 * t @ A @ t - t @ b, np.zeros(2), method="BFGS",
                                 options={"gtol": 1e-12})

    along = lambda p: np.sum(solve(p).x * np.array([1.0, -2.0]))  # noqa: E731
    want = np.array([[2 * w[0], w[1]], [w[1], 0.0]])
    assert_nestings(along, p0, want, rtol=1e-7, atol=1e-9)
    Ai = np.linalg.inv(A)
    db = np.array([[2 * p0[0], 0.0], [p0[1], p0[0]]])  # (db/dp)
    b = np.array([p0[0] ** 2, p0[0] * p0[1]])
    v = Ai @ b  # m = -0.5 b'A^-1 b: m'' = -(db' A^-1 db + sum_k v_k b_k'')
    want_m = -(db.T @ Ai @ db + v[0] * np.array([[2.0, 0.0], [0.0, 0.0]]) + v[1] * np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert_nestings(lambda p: solve(p).fun, p0, want_m, rtol=1e-7, atol=1e-9)


def assert_nestings(f, x, want, **tol):
    """The Hessian of ``f`` at ``x`` in the four nestings of forward and reverse mode."""
    np.testing.assert_allclose(capstan.hessian(f, x), want, **tol)
    for i, e in enumerate(np.eye(len(x))):
        fr = capstan.jvp(lambda p: capstan.gradient(f, p)[0], (x,), (e,))[1]
        rr = capstan.gradient(lambda p: capstan.gradient(f, p)[0][i], x)[0]
        ff = capstan.jacobian(lambda p: capstan.jvp(f, (p,), (e,))[1], x)
        for got in (fr, rr, ff):
            np.testing.assert_allclose(got, want[i], **tol)


def test_minimiser_second_order_against_differences_of_the_gradient():
    """A non-quadratic objective with parameters in args=: the Hessian of one coordinate of the
    minimiser against central differences of its (checked) gradient; and least_squares' linear
    fit, x = pinv(A) b(p), exact."""
    def objective(t, p):
        return np.sum(np.cosh(t - p[0])) + 0.5 * np.sum(t * t) + p[1] * t[0] * t[1]

    def stationary(t, p):  # (its gradient in t: for the plain solve's accuracy, and the reference)
        return np.sinh(t - p[0]) + t + p[1] * t[::-1]

    def coordinate(p):
        return optimize.minimize(objective, np.zeros(2), args=(p,), jac=stationary, method="BFGS",
                                 options={"gtol": 1e-13}).x[1]

    def reference(p):
        return optimize.fsolve(stationary, np.zeros(2), args=(p,), xtol=1e-14)[1]

    p0 = np.array([0.5, 0.3])
    gradient = lambda p: capstan.gradient(coordinate, p)[0]  # noqa: E731
    np.testing.assert_allclose(gradient(p0), [central(lambda v: reference(np.array([v, 0.3])), 0.5, 1e-3),
                                              central(lambda v: reference(np.array([0.5, v])), 0.3, 1e-3)],
                               rtol=1e-8)
    by_differences = np.array([central(lambda v: gradient(np.array([v, 0.3])), 0.5, 1e-3),
                               central(lambda v: gradient(np.array([0.5, v])), 0.3, 1e-3)])
    np.testing.assert_allclose(capstan.hessian(coordinate, p0), by_differences, rtol=1e-7, atol=1e-9)

    A = np.array([[1.0, 0.2], [0.3, 1.0], [0.5, 0.5]])
    P = np.linalg.pinv(A)

    def fitted(p):  # b(p) = (p0^2, p0 p1, p1^2)
        b = np.stack([p[0] ** 2, p[0] * p[1], p[1] ** 2])
        return optimize.least_squares(lambda t: A @ t - b, np.zeros(2), xtol=1e-15, ftol=1e-15, gtol=1e-15).x[0]

    q = P[0]
    want = np.array([[2 * q[0], q[1]], [q[1], 2 * q[2]]])
    np.testing.assert_allclose(capstan.hessian(fitted, np.array([0.4, 0.9])), want, rtol=1e-7, atol=1e-9)


def test_constraints_are_refused():
    with pytest.raises(capstan.NoRuleError, match="constraints"):
        capstan.D(lambda p: optimize.minimize(lambda t: np.sum((t - p) ** 2), np.zeros(2), constraints=[
            {"type": "eq", "fun": lambda t: t[0] - t[1]}]).x[0], X)
