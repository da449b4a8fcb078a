"""Reverse mode: capstan.gradient against plain evaluation, hand-written gradients and the AD peers.

    python benchmarks/reverse.py                 # full run (< 3 min), markdown table on stdout
    python benchmarks/reverse.py --quick         # smoke run: one short batch per cell
    python benchmarks/reverse.py --json out.json # also write every row as JSON
    python benchmarks/reverse.py -v              # progress on stderr

Workloads (one process, side by side; ratios to plain and to the hand-written gradient):
  scalar_poly   gradient of a degree-100 Horner loop (``r = r * x + c`` over 101 coefficients)
  euler_ode     gradient w.r.t. k of 1000 Euler steps of dy/dt = -k*y + sin(t) (math.sin)
  scalar_rosen  Rosenbrock as a Python loop over a list of 100 floats (gradient: a list)
  rosen_np      gradient(scipy.optimize.rosen, x), x of 1000 float64, against rosen_der
  mlp_loss      mean squared error of a 2-layer tanh MLP (100 in, 100 hidden, 10 out, batch
                64), gradient w.r.t. W1, b1, W2, b2
  logsumexp     max-shifted logsumexp of 10^6 values written with NumPy (and, as one more
                capstan row, scipy.special.logsumexp unmodified)
Peers (autograd grad, jax.grad eager and jit, torch autograd) run where installed and show
"not installed" otherwise; on the NumPy workloads they get the same formula written with their
own array module. Every gradient is checked against the hand-written one (rtol 1e-7) before it
is timed; a capstan cell that raises shows the error instead of a time. For the two scalar
loops (one input) the hand-written gradient is the one-pass derivative recurrence, the
cheapest exact form (no stored intermediates).

The table's columns are explained under it (see _adbench.METHOD).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import _adbench  # noqa: E402
import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.special  # noqa: E402
from forward import K0, X0, euler, euler_deriv, horner, horner_deriv  # noqa: E402

import capstan  # noqa: E402

QUICK = "--quick" in sys.argv


# ----------------------------------------------------------------------------- workloads
XS = [0.05 * i - 2.0 for i in range(100)]


def scalar_rosen(xs):
    s = 0.0
    for i in range(len(xs) - 1):
        s = s + 100.0 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1.0 - xs[i]) ** 2
    return s


def scalar_rosen_grad(xs):
    g = [0.0] * len(xs)
    for i in range(len(xs) - 1):
        a, b = xs[i], xs[i + 1]
        d = b - a * a
        g[i] += -400.0 * a * d - 2.0 * (1.0 - a)
        g[i + 1] += 200.0 * d
    return g


_rng = np.random.default_rng(0)
XR = _rng.uniform(-1.0, 1.5, 1000)

BATCH, N_IN, N_HID, N_OUT = 64, 100, 100, 10
XB = _rng.standard_normal((BATCH, N_IN))
YB = _rng.standard_normal((BATCH, N_OUT))
PARAMS = (_rng.standard_normal((N_IN, N_HID)) / np.sqrt(N_IN), np.zeros(N_HID),
          _rng.standard_normal((N_HID, N_OUT)) / np.sqrt(N_HID), np.zeros(N_OUT))


def mlp_loss(W1, b1, W2, b2):
    h = np.tanh(XB @ W1 + b1)
    d = h @ W2 + b2 - YB
    return np.mean(d * d)


def mlp_grad(W1, b1, W2, b2):
    h = np.tanh(XB @ W1 + b1)
    d = h @ W2 + b2 - YB
    g_out = d * (2.0 / d.size)
    ga = (g_out @ W2.T) * (1.0 - h * h)
    return XB.T @ ga, ga.sum(axis=0), h.T @ g_out, g_out.sum(axis=0)


XL = _rng.standard_normal(10**6)
XE = _rng.uniform(0.5, 1.5, 10**4)


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def logsumexp_grad(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


# ----------------------------------------------------------------------------- peers
def element_loop(x):
    """Reads every element of an array and appends a residual to a list (issue 8:
    each read and each append must cost O(1), not O(n))."""
    residuals = []
    for i in range(len(x)):
        residuals.append(x[i] * x[i] - 1.0)
    total = 0.0
    for r in residuals:
        total += r * r
    return total


def element_loop_grad(x):
    return 4.0 * x * (x * x - 1.0)


def _jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def autograd_grad(f, args):
    """autograd.grad w.r.t. every argument (through one tuple argument when there are several)."""
    def factory():
        import autograd

        if len(args) == 1:
            g = autograd.grad(f)
            return lambda: g(*args)
        g = autograd.grad(lambda p: f(*p))
        return lambda: g(tuple(args))
    return factory


def jax_grad(f, args, jit):
    def factory():
        jax = _jax()
        g = jax.grad(f, argnums=tuple(range(len(args))))
        g = jax.jit(g) if jit else g
        jargs = [jax.numpy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        return lambda: g(*jargs)
    return factory


def torch_grad(f, args):
    """torch autograd: fresh leaf tensors each call (0-d tensors for floats, a list of them
    for a list), then backward()."""
    def factory():
        import torch

        def leaf(a):
            if isinstance(a, list):
                return [leaf(e) for e in a]
            if isinstance(a, np.ndarray):
                return torch.from_numpy(a.copy()).requires_grad_()
            return torch.tensor(a, dtype=torch.float64).requires_grad_()

        def grads(t):
            return [grads(e) for e in t] if isinstance(t, list) else t.grad.numpy()

        def call():
            targs = [leaf(a) for a in args]
            f(*targs).backward()
            return tuple(grads(t) for t in targs)
        return call
    return factory


def scalar_peers(f, args):
    unrolled = "function unmodified; Python loop unrolled at trace time"
    return [
        ("autograd grad", autograd_grad(f, args), "function unmodified"),
        ("jax.grad (eager)", jax_grad(f, args, False), "function unmodified; float64 (jax_enable_x64)"),
        ("jax.grad (jit)", jax_grad(f, args, True), unrolled),
        ("torch autograd", torch_grad(f, args), "float64 tensors, function unmodified"),
    ]


def rewritten_peers(formula, args):
    """Peers on ``formula(xp, *args)`` written once for an array module ``xp``."""
    def anp():
        import autograd.numpy
        return autograd.numpy

    def jnp():
        return _jax().numpy

    def torch_ns():
        import torch
        return torch

    def lazy(wrapper, module, *extra):
        def factory():
            xp = module()
            return wrapper(lambda *a: formula(xp, *a), args, *extra)()
        return factory

    return [
        ("autograd grad", lazy(autograd_grad, anp), "autograd.numpy rewrite"),
        ("jax.grad (eager)", lazy(jax_grad, jnp, False), "jax.numpy rewrite"),
        ("jax.grad (jit)", lazy(jax_grad, jnp, True), "jax.numpy rewrite"),
        ("torch autograd", lazy(torch_grad, torch_ns), "torch rewrite, from_numpy"),
    ]


def rosen_formula(xp, x):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1.0 - x[:-1]) ** 2.0)


def mlp_formula(xp, W1, b1, W2, b2):
    X, Y = (xp.from_numpy(XB), xp.from_numpy(YB)) if hasattr(xp, "from_numpy") else (XB, YB)
    h = xp.tanh(X @ W1 + b1)
    d = h @ W2 + b2 - Y
    return xp.mean(d * d)


def logsumexp_formula(xp, x):
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def workloads():
    loop_target = ("≤ 15× plain", "plain", 15.0)
    array_target = ("≤ 1.3× hand-written", "hand", 1.3)
    return [
        _adbench.Workload(
            "scalar_poly", lambda: horner(X0), lambda: horner_deriv(X0),
            [("capstan.gradient", lambda: lambda: capstan.gradient(horner, X0), "")]
            + scalar_peers(horner, [X0]), target=loop_target),
        _adbench.Workload(
            "euler_ode", lambda: euler(K0), lambda: euler_deriv(K0),
            [("capstan.gradient", lambda: lambda: capstan.gradient(euler, K0), "")]
            + scalar_peers(euler, [K0]), target=loop_target),
        _adbench.Workload(
            "scalar_rosen", lambda: scalar_rosen(XS), lambda: scalar_rosen_grad(XS),
            [("capstan.gradient", lambda: lambda: capstan.gradient(scalar_rosen, XS), "gradient is a list")]
            + scalar_peers(scalar_rosen, [XS]), target=loop_target),
        _adbench.Workload(
            "rosen_np", lambda: scipy.optimize.rosen(XR), lambda: scipy.optimize.rosen_der(XR),
            [("capstan.gradient", lambda: lambda: capstan.gradient(scipy.optimize.rosen, XR),
              "scipy.optimize.rosen unmodified; hand-written = scipy.optimize.rosen_der")]
            + rewritten_peers(rosen_formula, [XR]),
            target=("rosen ≤ 4× (hand-written)", "hand", 4.0)),
        _adbench.Workload(
            "mlp_loss", lambda: mlp_loss(*PARAMS), lambda: mlp_grad(*PARAMS),
            [("capstan.gradient", lambda: lambda: capstan.gradient(mlp_loss, *PARAMS), "")]
            + rewritten_peers(mlp_formula, list(PARAMS)), target=array_target),
        _adbench.Workload(
            "logsumexp", lambda: logsumexp(XL), lambda: logsumexp_grad(XL),
            [("capstan.gradient", lambda: lambda: capstan.gradient(logsumexp, XL), ""),
             ("capstan.gradient(scipy.special.logsumexp)",
              lambda: lambda: capstan.gradient(scipy.special.logsumexp, XL),
              "scipy's function unmodified")]
            + rewritten_peers(logsumexp_formula, [XL]), target=array_target),
        _adbench.Workload(
            "element reads, n=10^4", lambda: element_loop(XE), lambda: element_loop_grad(XE),
            [("capstan.gradient", lambda: lambda: capstan.gradient(element_loop, XE),
              "x[i] of an ndarray and list.append in a Python loop: linear in n")]),
        _adbench.Workload(
            "scalar_poly, kept tape", lambda: horner(X0), lambda: horner_deriv(X0),
            [("capstan compiled tape", lambda: compiled_tape(horner, X0), TAPE_NOTE),
             ("capstan replayed tape", lambda: replayed_tape(horner, X0), "tape.gradient(x)")],
            target=tape_target),
        _adbench.Workload(
            "euler_ode, kept tape", lambda: euler(K0), lambda: euler_deriv(K0),
            [("capstan compiled tape", lambda: compiled_tape(euler, K0), TAPE_NOTE),
             ("capstan replayed tape", lambda: replayed_tape(euler, K0), "tape.gradient(x)")],
            target=tape_target),
    ]


TAPE_NOTE = "record_tape(f, x).compile() once (first call includes it), then (value, gradient)"
tape_target = ("replayed tape ≤ 2× hand-written", "hand", 2.0)


def compiled_tape(f, x):
    fn = capstan.record_tape(f, x).compile()
    return lambda: fn(x)[1]


def replayed_tape(f, x):
    tape = capstan.record_tape(f, x)
    return lambda: tape.gradient(x)


def rows(quick=QUICK):
    return _adbench.run(workloads, os.path.abspath(__file__), quick)


if __name__ == "__main__":
    _adbench.main("Reverse mode", workloads, os.path.abspath(__file__), sys.argv,
                  _adbench.METHOD)
