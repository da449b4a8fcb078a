"""Forward mode: capstan against plain evaluation, hand-written derivatives and the AD peers.

    python benchmarks/forward.py                 # full run (< 3 min), markdown table on stdout
    python benchmarks/forward.py --quick         # smoke run: one short batch per cell
    python benchmarks/forward.py --json out.json # also write every row as JSON
    python benchmarks/forward.py -v              # progress on stderr

Workloads (one process, side by side; ratios to plain and to the hand-written derivative):
  scalar_poly  D of a degree-100 Horner loop (``r = r * x + c`` over 101 coefficients)
  euler_ode    D w.r.t. k of 1000 Euler steps of dy/dt = -k*y + sin(t) (math.sin)
  jacobian     Jacobian of x -> np.tanh(W @ x + b) * x, 100 -> 100 (capstan.jacobian)
Peers (autograd make_jvp, jax.jvp eager and jit, torch.func.jvp) run where installed and show
"not installed" otherwise; for the Jacobian they get the same map written with their own array
module. Every derivative is checked against the hand-written one (rtol 1e-7) before it is timed.

The table's columns are explained under it (see _adbench.METHOD).
"""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import _adbench  # noqa: E402
import numpy as np  # noqa: E402

import capstan  # noqa: E402

QUICK = "--quick" in sys.argv
PEER_JAX_X64 = "float64 (jax_enable_x64)"

# ----------------------------------------------------------------------------- workloads
COEFFS = [1.0 / (k + 1) for k in range(101)]  # degree 100
X0 = 0.7


def horner(x):
    r = 0.0
    for c in COEFFS:
        r = r * x + c
    return r


def horner_deriv(x):
    r, dr = 0.0, 0.0
    for c in COEFFS:
        dr = dr * x + r
        r = r * x + c
    return dr


STEPS, H, K0 = 1000, 0.001, 0.5


def euler(k):
    y, t = 1.0, 0.0
    for _ in range(STEPS):
        y = y + H * (-k * y + math.sin(t))
        t = t + H
    return y


def euler_deriv(k):
    y, dy, t = 1.0, 0.0, 0.0
    for _ in range(STEPS):
        dy = dy + H * (-y - k * dy)
        y = y + H * (-k * y + math.sin(t))
        t = t + H
    return dy


_rng = np.random.default_rng(0)
N = 100
W = _rng.standard_normal((N, N)) / np.sqrt(N)
B = _rng.standard_normal(N)
XV = _rng.standard_normal(N)


def layer(x):
    return np.tanh(W @ x + B) * x


def layer_jacobian(x):
    t = np.tanh(W @ x + B)
    J = ((1.0 - t * t) * x)[:, None] * W
    J[np.diag_indices(N)] += t
    return J


# ----------------------------------------------------------------------------- peers
def _jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def autograd_jvp(f, x):
    def factory():
        from autograd import make_jvp

        return lambda: make_jvp(f)(x)(1.0)[1]
    return factory


def jax_jvp(f, x, jit):
    def factory():
        jax = _jax()

        def d(v):
            return jax.jvp(f, (v,), (1.0,))[1]
        d = jax.jit(d) if jit else d
        return lambda: float(d(x))
    return factory


def torch_jvp(f, x):
    def factory():
        import torch

        xt, one = torch.tensor(x, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)
        return lambda: float(torch.func.jvp(f, (xt,), (one,))[1])
    return factory


def autograd_jacobian():
    import autograd
    import autograd.numpy as anp

    jac = autograd.jacobian(lambda x: anp.tanh(anp.dot(W, x) + B) * x)
    return lambda: jac(XV)


def jax_jacobian(jit):
    def factory():
        jax = _jax()
        jnp = jax.numpy
        Wj, Bj, Xj = jnp.asarray(W), jnp.asarray(B), jnp.asarray(XV)
        jac = jax.jacfwd(lambda x: jnp.tanh(Wj @ x + Bj) * x)
        jac = jax.jit(jac) if jit else jac
        return lambda: np.asarray(jac(Xj))
    return factory


def torch_jacobian():
    import torch

    Wt, Bt, Xt = (torch.from_numpy(a) for a in (W, B, XV))
    jac = torch.func.jacfwd(lambda x: torch.tanh(Wt @ x + Bt) * x)
    return lambda: jac(Xt).numpy()


def scalar_peers(f, x):
    return [
        ("autograd make_jvp", autograd_jvp(f, x), "function unmodified"),
        ("jax.jvp (eager)", jax_jvp(f, x, False), "function unmodified; " + PEER_JAX_X64),
        ("jax.jvp (jit)", jax_jvp(f, x, True), "function unmodified; Python loop unrolled at trace time"),
        ("torch.func.jvp", torch_jvp(f, x), "0-d float64 tensors, function unmodified"),
    ]


def workloads():
    scalar_target = ("D ≤ 8× plain", "plain", 8.0)
    return [
        _adbench.Workload(
            "scalar_poly", lambda: horner(X0), lambda: horner_deriv(X0),
            [("capstan.D", lambda: lambda: capstan.D(horner, X0), "")] + scalar_peers(horner, X0),
            target=scalar_target),
        _adbench.Workload(
            "euler_ode", lambda: euler(K0), lambda: euler_deriv(K0),
            [("capstan.D", lambda: lambda: capstan.D(euler, K0), "")] + scalar_peers(euler, K0),
            target=scalar_target),
        _adbench.Workload(
            "jacobian 100→100", lambda: layer(XV), lambda: layer_jacobian(XV),
            [("capstan.jacobian", lambda: lambda: capstan.jacobian(layer, XV),
              "forward mode, one run of f with 100 tangents (default chunk)"),
             ("capstan.jacobian chunk=10", lambda: lambda: capstan.jacobian(layer, XV, chunk=10),
              "10 runs of f"),
             ("capstan.jacobian mode='reverse'",
              lambda: lambda: capstan.jacobian(layer, XV, mode="reverse"),
              "one run of f, 100 backward passes"),
             ("autograd.jacobian", autograd_jacobian, "reverse mode; autograd.numpy rewrite"),
             ("jax.jacfwd (eager)", jax_jacobian(False), "jax.numpy rewrite"),
             ("jax.jacfwd (jit)", jax_jacobian(True), "jax.numpy rewrite"),
             ("torch.func.jacfwd", torch_jacobian, "torch rewrite, from_numpy")],
            target=("Jacobian ≤ 3× hand-written", "hand", 3.0)),
    ]


def rows(quick=QUICK):
    return _adbench.run(workloads, os.path.abspath(__file__), quick)


if __name__ == "__main__":
    _adbench.main("Forward mode", workloads, os.path.abspath(__file__), sys.argv,
                  _adbench.METHOD)
