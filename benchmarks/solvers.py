"""Derivatives through SciPy's solvers (capstan/rules/solver_rules.py) against the plain solve.

Each workload is a plain SciPy call (an ODE solve, a root, an integral) and a capstan
derivative of it with respect to parameters passed by ``args=`` or captured by closure.  For
each: the plain call's time, the derivative's time and their ratio.  Every derivative is
checked against central finite differences of the plain call before anything is timed.

Target (issue 10): the ``solve_ivp`` sensitivity of a 3-state ODE with 4 parameters at most
3x the plain solve.

    python benchmarks/solvers.py [--quick]
"""
import math
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from scipy import integrate, optimize  # noqa: E402

import capstan  # noqa: E402
from _adbench import fmt_ratio, fmt_time, median_time  # noqa: E402

P = np.array([0.4, 3.0, 1.5, 0.2])  # the ODE's 4 parameters
Y0 = np.array([1.0, 0.2, 0.1])


def rhs(t, y, a, b, c, d):
    """A 3-state reaction network (mass action) with 4 rate constants."""
    return np.array([-a * y[0] + b * y[1] * y[2], a * y[0] - b * y[1] * y[2] - c * y[1] ** 2,
                     c * y[1] ** 2 - d * y[2]])


def rhs_scalar(t, y, a, b, c, d):
    """``rhs`` written for one state at a time (``math.pow`` takes no arrays): the rule
    then evaluates it once per collocation node instead of once for all of them."""
    square = math.pow(y[1], 2)
    return np.array([-a * y[0] + b * y[1] * y[2], a * y[0] - b * y[1] * y[2] - c * square,
                     c * square - d * y[2]])


def rhs_jac(t, y, a, b, c, d):
    """``rhs``'s Jacobian in the state, written by hand."""
    return np.array([[-a, b * y[2], b * y[1]], [a, -b * y[2] - 2 * c * y[1], -b * y[1]],
                     [0.0, 2 * c * y[1], -d]])


def ode_final(p, f=rhs, **kw):
    """The state at t = 10, by RK45 at rtol 1e-8."""
    return integrate.solve_ivp(f, (0.0, 10.0), Y0, t_eval=[10.0], args=tuple(p), rtol=1e-8, atol=1e-10,
                               **kw).y[:, -1]


def ode_loss(p, **kw):
    return np.sum(ode_final(p, **kw) ** 2)


def central(f, x, h=1e-6):
    """Central differences of ``f`` at ``x`` (a number, or a 1-d array: one column per input)."""
    if np.ndim(x) == 0:
        return (f(x + h) - f(x - h)) / (2 * h)
    x = np.asarray(x, dtype=float)
    cols = [(np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h) for e in np.eye(x.size) * h]
    return np.stack(cols, axis=-1)


# --------------------------------------------------------------------------- workloads
# (name, plain call, derivative call, check: () -> (derivative, finite differences, rtol), target)
def workloads():
    grad_loss = lambda: capstan.gradient(ode_loss, P)[0]  # noqa: E731
    grad_loss_jac = lambda: capstan.gradient(lambda p: ode_loss(p, jac=rhs_jac), P)[0]  # noqa: E731
    grad_scalar = lambda: capstan.gradient(lambda p: ode_loss(p, f=rhs_scalar), P)[0]  # noqa: E731
    jac_fwd = lambda: capstan.jacfwd(lambda p: ode_final(p, jac=rhs_jac))(P)  # noqa: E731
    root = lambda p: optimize.brentq(lambda t: t ** 3 + t - p, 0.0, 3.0)  # noqa: E731
    integral = lambda p: integrate.quad(lambda t: math.exp(-p * t * t), 0.0, 2.0)[0]  # noqa: E731
    odeint_final = lambda p: integrate.odeint(lambda y, t: -p * y, 1.0, [0.0, 1.0])[-1, 0]  # noqa: E731
    return [
        ("solve_ivp, 3 states, 4 args: gradient of sum(y(10)^2)", lambda: ode_loss(P), grad_loss,
         lambda: (grad_loss(), central(ode_loss, P), 1e-5), 3.0),
        ("solve_ivp, same, with jac=", lambda: ode_loss(P, jac=rhs_jac), grad_loss_jac,
         lambda: (grad_loss_jac(), central(ode_loss, P), 1e-5), 3.0),
        ("solve_ivp, same, callback for one state at a time", lambda: ode_loss(P, f=rhs_scalar), grad_scalar,
         lambda: (grad_scalar(), central(ode_loss, P), 1e-5), None),
        ("solve_ivp, same, with jac=: jacfwd of y(10)", lambda: ode_final(P, jac=rhs_jac), jac_fwd,
         lambda: (jac_fwd(), central(ode_final, P), 1e-5), None),
        ("odeint, decay, closure: gradient", lambda: odeint_final(0.7),
         lambda: capstan.gradient(odeint_final, 0.7),
         lambda: (capstan.gradient(odeint_final, 0.7)[0], central(odeint_final, 0.7), 1e-5), None),
        ("brentq, closure: gradient of the root", lambda: root(0.7), lambda: capstan.gradient(root, 0.7),
         lambda: (capstan.gradient(root, 0.7)[0], central(root, 0.7), 1e-7), None),
        ("brentq, closure: D of the root", lambda: root(0.7), lambda: capstan.D(root, 0.7),
         lambda: (capstan.D(root, 0.7), central(root, 0.7), 1e-7), None),
        ("quad, closure: gradient", lambda: integral(0.7), lambda: capstan.gradient(integral, 0.7),
         lambda: (capstan.gradient(integral, 0.7)[0], central(integral, 0.7), 1e-7), None),
    ]


def check(workload):
    """The capstan derivative of ``workload`` equals finite differences of the plain call."""
    name, plain, derivative, verify, target = workload
    got, want, rtol = verify()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-9)
    return workload


def main(argv):
    quick = "--quick" in argv
    warnings.filterwarnings("ignore", message="The following arguments have no effect")  # (jac= with RK45)
    print("# Derivatives through SciPy's solvers (%s)\n" % ("quick" if quick else "full"))
    print("median time per call over 7 batches of ~80 ms of back-to-back calls after a warm-up; each\n"
          "derivative is checked against central finite differences of the plain call first.\n")
    print("| workload | plain call | capstan derivative | ratio to plain |")
    print("| --- | --- | --- | --- |")
    for workload in workloads():
        name, plain, derivative, _, target = check(workload)
        t_plain = median_time(plain, quick)
        t_derivative = median_time(derivative, quick)
        ratio = t_derivative / t_plain
        met = "met" if target is not None and ratio <= target else "missed"
        note = "" if target is None else " (target ≤ %g×: %s)" % (target, met)
        print("| %s | %s | %s | %s%s |" % (name, fmt_time(t_plain), fmt_time(t_derivative), fmt_ratio(ratio),
                                          note))


if __name__ == "__main__":
    main(sys.argv[1:])
