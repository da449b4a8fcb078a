"""Mixed mode: the gradient of a scalar Python kernel applied elementwise, against the plain loop.

    python benchmarks/mixed.py            # n = 10^4 (< 1 min), markdown table on stdout
    python benchmarks/mixed.py --quick    # smoke run: n = 200, one short batch per row
    python benchmarks/mixed.py -n 100000  # another size

The kernel (10 float operations, ``math.exp``, one data-dependent branch), over ``x`` drawn
from N(0, 1.2^2)::

    def kernel(t):
        s = 1.0 / (1.0 + math.exp(-t))
        y = t * s
        if t * t < 1.0:
            return 0.5 * y * y
        return y - 0.5

Rows, one process, side by side (ratios to the plain Python loop over the elements):
plain loop, ``np.vectorize`` plain, ``capstan.elementwise`` plain, a hand-written value and
derivative loop, ``capstan.gradient`` of ``np.sum(elementwise(kernel)(x))`` and of
``np.sum(np.vectorize(kernel)(x))`` (first call -- recording the paths and rewriting the
kernel, on a fresh copy of its code -- and later calls), ``capstan.gradient`` of the kernel
element by element and of the Python loop over a list, and autograd / JAX where installed
(the kernel rewritten with their NumPy and ``where``).  Every gradient is checked against
the per-element one before it is timed.  Targets (issue 11): the elementwise and
np.vectorize gradients <= 1x the plain loop after the first call; first call <= 10 ms.
"""
import math
import os
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import numpy as np  # noqa: E402

import capstan  # noqa: E402

QUICK = "--quick" in sys.argv
N = 200 if QUICK else 10_000
if "-n" in sys.argv:
    N = int(sys.argv[sys.argv.index("-n") + 1])


def kernel(t):
    s = 1.0 / (1.0 + math.exp(-t))
    y = t * s
    if t * t < 1.0:
        return 0.5 * y * y
    return y - 0.5


def kernel_deriv(t):
    """Value and derivative by hand."""
    e = math.exp(-t)
    s = 1.0 / (1.0 + e)
    ds = s * s * e
    y = t * s
    dy = s + t * ds
    if t * t < 1.0:
        return 0.5 * y * y, y * dy
    return y - 0.5, dy


def fresh(f):
    """A copy of ``f`` with its own code object: its first differentiated call pays the
    rewriting again, as in a new process."""
    return types.FunctionType(f.__code__.replace(), f.__globals__, f.__name__, f.__defaults__, f.__closure__)


# ----------------------------------------------------------------------------- timing
def median_time(fn, quick=QUICK):
    """Median seconds per call over 7 batches (one call in quick mode)."""
    fn()
    if quick:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    calls, elapsed = 1, 0.0
    while True:  # batches of >= 50 ms
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - t
        if elapsed >= 0.05:
            break
        calls *= 2
    times = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls)
    return sorted(times)[3]


def once(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


# ----------------------------------------------------------------------------- peers
def autograd_row(x, ref):
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None

    def kernel_ag(t):
        s = 1.0 / (1.0 + anp.exp(-t))
        y = t * s
        return anp.sum(anp.where(t * t < 1.0, 0.5 * y * y, y - 0.5))

    g = autograd.grad(kernel_ag)
    check(g(x), ref, "autograd")
    return median_time(lambda: g(x))


def jax_rows(x, ref):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None

    def kernel_jax(t):
        s = 1.0 / (1.0 + jnp.exp(-t))
        y = t * s
        return jnp.where(t * t < 1.0, 0.5 * y * y, y - 0.5)

    jax.config.update("jax_enable_x64", True)
    eager = jax.vmap(jax.grad(kernel_jax))
    jitted = jax.jit(eager)
    compile_s, _ = once(lambda: jitted(x).block_until_ready())
    check(np.asarray(jitted(x)), ref, "jax")
    return (median_time(lambda: eager(x).block_until_ready()),
            median_time(lambda: jitted(x).block_until_ready()), compile_s)


def check(got, ref, what):
    got = np.asarray(got[0] if type(got) is tuple else got, dtype=float)
    if not np.allclose(got, ref, rtol=1e-12, atol=1e-14):
        raise AssertionError("%s: wrong gradient (max error %.3g)" % (what, np.max(np.abs(got - ref))))


# ----------------------------------------------------------------------------- the table
def measure(n=N):
    """``[(row, seconds, note)]``; the first row is the plain loop (ratio 1)."""
    x = np.random.default_rng(0).normal(0.0, 1.2, n)
    xs = x.tolist()
    ref = np.array([kernel_deriv(t)[1] for t in xs])
    rows = []

    # first calls: the very first differentiation of this process (capstan's own code is
    # rewritten then too), then new kernels once capstan is warm (a fresh copy of the code:
    # rewriting the kernel and recording its paths included)
    k_cold = capstan.elementwise(fresh(kernel))
    cold, g = once(lambda: capstan.gradient(lambda z: np.sum(k_cold(z)), x))
    check(g, ref, "elementwise, first call in the process")
    k_first = capstan.elementwise(fresh(kernel))
    first_e, g = once(lambda: capstan.gradient(lambda z: np.sum(k_first(z)), x))
    check(g, ref, "elementwise first call")
    v_first = fresh(kernel)
    first_v, g = once(lambda: capstan.gradient(lambda z: np.sum(np.vectorize(v_first)(z)), x))
    check(g, ref, "np.vectorize first call")

    plain = median_time(lambda: sum(kernel(t) for t in xs))
    rows.append(("plain Python loop (value)", plain, ""))
    rows.append(("np.vectorize(kernel)(x).sum() (value)",
                 median_time(lambda: np.vectorize(kernel)(x).sum()), ""))
    k = capstan.elementwise(kernel)
    rows.append(("capstan.elementwise(kernel)(x).sum() (value)", median_time(lambda: k(x).sum()), ""))
    rows.append(("hand-written value and derivative loop",
                 median_time(lambda: [kernel_deriv(t) for t in xs]), ""))

    ge = lambda: capstan.gradient(lambda z: np.sum(k(z)), x)  # noqa: E731
    check(ge(), ref, "elementwise")
    rows.append(("gradient of np.sum(elementwise(kernel)(x)), first call in the process", cold,
                 "capstan's own code rewritten too"))
    rows.append(("gradient of np.sum(elementwise(kernel)(x)), first call of a new kernel", first_e,
                 "target <= 10 ms"))
    rows.append(("gradient of np.sum(elementwise(kernel)(x)), later calls", median_time(ge), "target <= 1x"))
    gv = lambda: capstan.gradient(lambda z: np.sum(np.vectorize(kernel)(z)), x)  # noqa: E731
    check(gv(), ref, "np.vectorize")
    rows.append(("gradient of np.sum(np.vectorize(kernel)(x)), first call of a new kernel", first_v,
                 "target <= 10 ms"))
    rows.append(("gradient of np.sum(np.vectorize(kernel)(x)), later calls", median_time(gv), "target <= 1x"))

    sub = xs[: max(1, n // 10)]  # (the slow rows run on a tenth and are scaled up)
    per = median_time(lambda: [capstan.gradient(kernel, t) for t in sub], quick=True) * n / len(sub)
    rows.append(("capstan.gradient(kernel, t) per element (loop)", per, "measured on n/10, scaled"))
    loop = lambda: capstan.gradient(lambda zs: sum(kernel(t) for t in zs), sub)  # noqa: E731
    rows.append(("capstan.gradient of sum(kernel(t) for t in list)",
                 median_time(loop, quick=True) * n / len(sub),
                 "measured on n/10, scaled"))

    ag = autograd_row(x, ref)
    rows.append(("autograd.grad, kernel with anp.where", ag, "" if ag is not None else "not installed"))
    jx = jax_rows(x, ref)
    if jx is None:
        rows.append(("jax vmap(grad), kernel with jnp.where", None, "not installed"))
    else:
        rows.append(("jax vmap(grad) eager", jx[0], ""))
        rows.append(("jax jit(vmap(grad))", jx[1], "compile %.0f ms" % (jx[2] * 1e3)))
    return rows


def fmt(s):
    if s is None:
        return "—"
    return "%.2f s" % s if s >= 1 else "%.2f ms" % (s * 1e3) if s >= 1e-3 else "%.1f µs" % (s * 1e6)


def table(rows, n=N):
    plain = rows[0][1]
    lines = ["n = %d, CPython %s" % (n, sys.version.split()[0]), "",
             "| way | time | × plain loop | note |", "|---|---:|---:|---|"]
    for name, s, note in rows:
        ratio = "—" if s is None else "%.2f×" % (s / plain)
        lines.append("| %s | %s | %s | %s |" % (name, fmt(s), ratio, note))
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(measure()))
