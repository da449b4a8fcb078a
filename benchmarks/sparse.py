"""Sparse Jacobians and Hessians: capstan against plain evaluation, dense capstan, SciPy's
finite differences with the same pattern and CasADi (where installed), side by side.

    python benchmarks/sparse.py                 # full run, n = 10^4 (a few minutes: dense
                                                # capstan at n = 10^4 takes seconds per call)
    python benchmarks/sparse.py --quick         # smoke run: tiny sizes, one call per cell
    python benchmarks/sparse.py --json out.json # also write the numbers as JSON

Problems (benchmarks/sparse_problems.py): the 1-D Bratu residual (NumPy slicing), the 2-D
Brusselator (np.roll, np.stack; 12 colours), the Bratu residual as a Python loop, the
Hessians of unmodified scipy.optimize.rosen, of CUTE's ARWHEAD (arrowhead: 2 star colours)
and of Rosenbrock as a Python loop; edge pushing against colouring on Python loops
(Rosenbrock and ARWHEAD).  Every sparse result is checked against the dense one
(n <= 1000) or the closed form before it is timed.  Fastest of back-to-back calls;
"first call" is detection + colouring + one evaluation; ratios are to one capstan.jvp
(Jacobians) or one capstan.gradient (Hessians) of the same function at the same point.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from scipy.optimize._numdiff import approx_derivative  # noqa: E402

import capstan  # noqa: E402
import sparse_problems as problems  # noqa: E402

QUICK = "--quick" in sys.argv
N = 200 if QUICK else 10_000
N_LOOP = 100 if QUICK else 10_000
N_EDGE = 50 if QUICK else 1000  # (colouring evaluates a loop's HVPs through nested modes: seconds)
BUDGET = 0.0 if QUICK else 0.4  # seconds of calls per timed cell
LOOP_BUDGET = 0.0 if QUICK else 10.0  # (Python loops: the fastest of 3 calls, however long they take)


def timed(fn, budget=None, most=25):
    """Seconds of the fastest of back-to-back calls of ``fn`` (after one warm-up call): on a
    shared machine the minimum is the cost of the call, the rest is other people's load."""
    budget = BUDGET if budget is None else budget
    fn()
    times = []
    start = time.perf_counter()
    while True:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if time.perf_counter() - start >= budget or len(times) >= most:
            break
    return float(np.min(times))


def once(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def casadi_cell(kind, name, n):
    """CasADi's sparse derivative of the same formula: (pattern seconds, evaluation seconds),
    or a text saying why not."""
    try:
        import casadi as ca
    except ImportError:
        return "not installed"
    try:
        x = ca.SX.sym("x", n)
        if name == "bratu":
            h2 = (1.0 / (n + 1)) ** 2
            up = ca.vertcat(0, x, 0)
            expr = (up[:-2] - 2 * up[1:-1] + up[2:]) / h2 + ca.exp(x)
        elif name == "rosen":
            expr = ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        elif name == "arwhead":
            expr = ca.sum1((x[:-1] ** 2 + x[-1] ** 2) ** 2 - 4 * x[:-1] + 3)
        else:
            return "—"
        if kind == "J":
            pattern = timed(lambda: ca.jacobian_sparsity(expr, x))
            F = ca.Function("J", [x], [ca.jacobian(expr, x)])
        else:
            pattern = timed(lambda: ca.jacobian_sparsity(ca.gradient(expr, x), x))
            F = ca.Function("H", [x], [ca.hessian(expr, x)[0]])
        point = np.random.default_rng(0).random(n)
        return pattern, timed(lambda: F(point))
    except Exception as err:  # (a CasADi version without one of these calls)
        return "error: %s" % type(err).__name__


# ----------------------------------------------------------------------------- Jacobians
def jacobian_row(name, f, x, closed=None):
    row = {"problem": name, "n": x.size}
    row["plain"] = timed(lambda: f(x))
    row["jvp"] = timed(lambda: capstan.jvp(f, (x,), (x,)))
    row["detect"] = timed(lambda: capstan.jacobian_sparsity(f, x))
    P = capstan.jacobian_sparsity(f, x)
    row["color"] = timed(lambda: capstan.coloring(P, "column"))
    row["colors"] = int(capstan.coloring(P, "column").max() + 1)
    row["first"], _ = once(lambda: capstan.sparse_jacobian(f, x))
    prep = capstan.prepare_sparse_jacobian(f, x)
    J = prep(x)
    if x.size <= 1000:
        assert prep.check(x) < 1e-6 * max(1.0, abs(J).max())
    elif closed is not None:
        ref = closed(x)
        assert abs(J - ref).max() <= 1e-9 * abs(ref).max()
    for _ in range(3):
        prep(x)  # (lets the prepared object settle on its faster strategy)
    row["sparse"] = timed(lambda: prep(x))
    row["dense"] = once(lambda: capstan.jacobian(f, x))[0] if row["n"] <= 10_000 else None
    fd_time, fd = once(lambda: approx_derivative(f, x, method="3-point", sparsity=P, full_output=True))
    row["fd"] = timed(lambda: approx_derivative(f, x, method="3-point", sparsity=P))
    row["fd_nfev"] = int(fd[1]["nfev"])
    row["fd_error"] = float(abs(sp.csr_array(fd[0]) - J).max() / abs(J).max())
    row["casadi"] = casadi_cell("J", name.split()[0], x.size)
    return row


def loop_jacobian_row(name, f, x, closed):
    """A Python-loop residual: detection against one capstan.gradient of the same loop."""
    row = {"problem": name, "n": x.size}
    row["plain"] = timed(lambda: f(x), budget=0.0)
    row["jvp"] = timed(lambda: capstan.jvp(f, (x,), (x,)), LOOP_BUDGET, 3)
    row["gradient"] = timed(lambda: capstan.gradient(lambda z: sum(f(z)), x), LOOP_BUDGET, 3)
    row["detect"] = timed(lambda: capstan.jacobian_sparsity(f, x), LOOP_BUDGET, 3)
    P = capstan.jacobian_sparsity(f, x)
    row["color"] = timed(lambda: capstan.coloring(P, "column"))
    row["colors"] = int(capstan.coloring(P, "column").max() + 1)
    row["first"], J = once(lambda: capstan.sparse_jacobian(f, x))
    ref = closed(x)
    assert abs(J - ref).max() <= 1e-9 * abs(ref).max()
    prep = capstan.prepare_sparse_jacobian(f, x)
    for _ in range(3):
        prep(x)
    row["sparse"] = timed(lambda: prep(x), LOOP_BUDGET, 3)
    row["dense"] = None
    row["fd"] = row["fd_nfev"] = row["fd_error"] = None
    row["casadi"] = "—"
    return row


# ----------------------------------------------------------------------------- Hessians
def hessian_row(name, f, x, grad, closed):
    row = {"problem": name, "n": x.size}
    row["plain"] = timed(lambda: f(x))
    row["gradient"] = timed(lambda: capstan.gradient(f, x))
    row["detect"] = timed(lambda: capstan.hessian_sparsity(f, x))
    P = capstan.hessian_sparsity(f, x)
    row["color"] = timed(lambda: capstan.coloring(P, "star"))
    row["colors"] = int(capstan.coloring(P, "star").max() + 1)
    row["first"], _ = once(lambda: capstan.sparse_hessian(f, x))
    prep = capstan.prepare_sparse_hessian(f, x)
    H = prep(x)
    ref = closed(x)
    assert abs(H - ref).max() <= 1e-9 * abs(ref).max()
    for _ in range(4):
        prep(x)
    row["sparse"] = timed(lambda: prep(x))
    row["mode"] = prep.hvp_mode
    v = np.random.default_rng(1).standard_normal(x.size)
    row["hvp"] = timed(lambda: capstan.hvp(f, x, v))
    row["hvp_fwd"] = timed(lambda: capstan.hvp(f, x, v, mode="fwd_over_rev"))
    row["dense"] = once(lambda: capstan.hessian(f, x))[0] if grad is not None else None
    if grad is not None:
        fd_time, fd = once(lambda: approx_derivative(grad, x, method="3-point", sparsity=P, full_output=True))
        row["fd"] = timed(lambda: approx_derivative(grad, x, method="3-point", sparsity=P))
        row["fd_nfev"] = int(fd[1]["nfev"])
        row["fd_error"] = float(abs(sp.csr_array(fd[0]) - H).max() / abs(H).max())
    else:
        row["fd"] = row["fd_nfev"] = row["fd_error"] = None
    row["casadi"] = casadi_cell("H", name.split()[0], x.size)
    return row


def loop_hessian_row(name, f, x):
    """Hessian pattern of a Python loop against one capstan.gradient of it."""
    row = {"problem": name, "n": len(x)}
    row["gradient"] = timed(lambda: capstan.gradient(f, x), LOOP_BUDGET, 3)
    row["detect"] = timed(lambda: capstan.hessian_sparsity(f, x), LOOP_BUDGET, 3)
    P = capstan.hessian_sparsity(f, x)
    row["color"] = timed(lambda: capstan.coloring(P, "star"))
    row["colors"] = int(capstan.coloring(P, "star").max() + 1)
    return row


def edge_row(name, f, x):
    """A Python-loop objective's sparse Hessian by edge pushing against colouring (first
    calls: detection + colouring + evaluation, or recording + one sweep)."""
    row = {"problem": name, "n": len(x)}
    row["gradient"] = timed(lambda: capstan.gradient(f, x), 0.0, 3)
    row["edge"], H = once(lambda: capstan.sparse_hessian(f, x, method="edge_pushing"))
    row["coloring"], C = once(lambda: capstan.sparse_hessian(f, x))
    row["difference"] = float(abs(H - C).max() / abs(C).max())
    assert row["difference"] <= 1e-9, row  # (both exact)
    return row


# ----------------------------------------------------------------------------- the tables
def fmt(seconds):
    if seconds is None:
        return "—"
    if seconds >= 1.0:
        return "%.2f s" % seconds
    if seconds >= 1e-3:
        return "%.2f ms" % (seconds * 1e3)
    return "%.0f µs" % (seconds * 1e6)


def casadi_text(cell):
    if isinstance(cell, str):
        return cell
    return "%s / %s" % (fmt(cell[0]), fmt(cell[1]))


def rows():
    rng = np.random.default_rng(0)
    x = rng.random(N)
    side = max(4, int((N / 2) ** 0.5))
    y = rng.random(2 * side * side)
    u = rng.random(N_LOOP)
    jac = [jacobian_row("bratu (NumPy)", problems.bratu, x, problems.bratu_jacobian),
           jacobian_row("brusselator 2-D (NumPy)", problems.brusselator, y),
           loop_jacobian_row("bratu (Python loop)", problems.bratu_loop, u, problems.bratu_jacobian)]
    hes = [hessian_row("rosen (scipy.optimize.rosen)", scipy.optimize.rosen, x, scipy.optimize.rosen_der,
                       scipy.optimize.rosen_hess),
           hessian_row("arwhead (NumPy)", problems.arwhead, x, problems.arwhead_grad,
                       problems.arwhead_hessian),
           loop_hessian_row("rosen (Python loop)", problems.rosen_loop, list(rng.random(N_LOOP)))]
    edge = [edge_row("rosen (Python loop)", problems.rosen_loop, list(rng.random(N_EDGE))),
            edge_row("arwhead (Python loop)", problems.arwhead_loop, list(rng.random(N_EDGE)))]
    return jac, hes, edge


def edge_table(edge):
    lines = ["| Hessian of a Python loop | n | 1 gradient | edge pushing (× gradient) "
             "| colouring, first call (× gradient) | largest difference (relative) |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in edge:
        lines.append("| %s | %d | %s | %s (%.1f×) | %s (%.1f×) | %.0e |" % (
            r["problem"], r["n"], fmt(r["gradient"]), fmt(r["edge"]), r["edge"] / r["gradient"],
            fmt(r["coloring"]), r["coloring"] / r["gradient"], r["difference"]))
    return "\n".join(lines)


def tables(jac, hes):
    lines = ["| Jacobian | n | plain f | 1 jvp | detect | colour (colours) "
             "| prepared sparse_jacobian (× jvp) | first call | dense capstan.jacobian "
             "| SciPy FD, same pattern (nfev; rel. error) | CasADi pattern / eval |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in jac:
        fd = "—" if r["fd"] is None else "%s (%d; %.0e)" % (fmt(r["fd"]), r["fd_nfev"], r["fd_error"])
        lines.append("| %s | %d | %s | %s | %s | %s (%d) | %s (%.1f×) | %s | %s | %s | %s |" % (
            r["problem"], r["n"], fmt(r["plain"]), fmt(r["jvp"]), fmt(r["detect"]), fmt(r["color"]),
            r["colors"], fmt(r["sparse"]), r["sparse"] / r["jvp"], fmt(r["first"]), fmt(r["dense"]), fd,
            casadi_text(r["casadi"])))
    lines += ["", "| Hessian | n | plain f | 1 gradient | detect | star colour (colours) "
              "| prepared sparse_hessian (× gradient; HVP mode) | first call | dense capstan.hessian "
              "| SciPy FD of the gradient, same pattern (nfev; rel. error) "
              "| hvp rev∘fwd / fwd∘rev (× gradient) "
              "| CasADi pattern / eval |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in hes:
        if "sparse" not in r:  # (a Python loop: pattern only)
            lines.append("| %s | %d | — | %s | %s (%.2f× gradient) | %s (%d) |" % (
                r["problem"], r["n"], fmt(r["gradient"]), fmt(r["detect"]), r["detect"] / r["gradient"],
                fmt(r["color"]), r["colors"]))
            lines[-1] += " — |" * 6
            continue
        fd = "—" if r["fd"] is None else "%s (%d; %.0e)" % (fmt(r["fd"]), r["fd_nfev"], r["fd_error"])
        cells = "| %s | %d | %s | %s | %s | %s (%d) | %s (%.1f×; %s) | %s | %s | %s | %.1f× / %.1f× | %s |"
        lines.append(cells % (
            r["problem"], r["n"], fmt(r["plain"]), fmt(r["gradient"]), fmt(r["detect"]), fmt(r["color"]),
            r["colors"], fmt(r["sparse"]), r["sparse"] / r["gradient"], r["mode"], fmt(r["first"]),
            fmt(r["dense"]), fd, r["hvp"] / r["gradient"], r["hvp_fwd"] / r["gradient"],
            casadi_text(r["casadi"])))
    return "\n".join(lines)


def verdicts(jac, hes):
    """Each target of the issue with its measured value and verdict."""
    def v(ok):
        return "met" if ok else "missed"

    out = []
    bratu, bruss, loop = jac
    rosen, arw, rosen_loop = hes
    out.append("pattern of NumPy residuals <= 10 ms: Bratu %s, Brusselator %s: %s"
               % (fmt(bratu["detect"]), fmt(bruss["detect"]),
                  v(max(bratu["detect"], bruss["detect"]) <= 0.010)))
    out.append("Hessian pattern of scipy.optimize.rosen <= 20 ms: %s: %s" % (fmt(rosen["detect"]),
                                                                          v(rosen["detect"] <= 0.020)))
    ratio = max(loop["detect"] / loop["gradient"], rosen_loop["detect"] / rosen_loop["gradient"])
    out.append("pattern of Python-loop code <= 1× one capstan.gradient of it: %.2f× (Bratu loop), %.2f× "
               "(Rosenbrock loop): %s" % (loop["detect"] / loop["gradient"],
                                          rosen_loop["detect"] / rosen_loop["gradient"], v(ratio <= 1.0)))
    colours = [bratu["colors"] == 3, bruss["colors"] <= 12, rosen["colors"] == 3, arw["colors"] == 2]
    slowest = max(r["color"] for r in jac + hes)
    out.append("colouring <= 5 ms (slowest %s) with 3 / <= 12 / star 3 / star 2 colours "
               "(got %d / %d / %d / %d): %s"
               % (fmt(slowest), bratu["colors"], bruss["colors"], rosen["colors"], arw["colors"],
                  v(slowest <= 0.005 and all(colours))))
    worst = max(bratu["sparse"] / bratu["jvp"], bruss["sparse"] / bruss["jvp"])
    out.append("prepared sparse_jacobian <= 3× one jvp (NumPy residuals): %.1f×: %s"
               % (worst, v(worst <= 3)))
    worst = max(rosen["sparse"] / rosen["gradient"], arw["sparse"] / arw["gradient"])
    out.append("prepared sparse_hessian of rosen and ARWHEAD <= 5× one gradient (stretch 3×): %.1f×: %s"
               % (worst, v(worst <= 5)))
    out.append("first call of sparse_hessian(rosen, x) <= 50 ms: %s: %s" % (fmt(rosen["first"]),
                                                                          v(rosen["first"] <= 0.050)))
    worst = max(rosen["hvp"] / rosen["gradient"], arw["hvp"] / arw["gradient"])
    out.append("hvp <= 2.5× one gradient: %.1f×: %s" % (worst, v(worst <= 2.5)))
    faster = all(r["sparse"] < r["fd"] for r in [bratu, bruss, rosen, arw])
    out.append("faster and more accurate than SciPy's finite differences with the same pattern: %s "
               "(exact vs relative errors %s)" % (v(faster), ", ".join("%.0e" % r["fd_error"]
                                                                       for r in [bratu, bruss, rosen, arw])))
    return out


def main():
    jac, hes, edge = rows()
    print("n = %d (Python loops: %d)%s\n" % (N, N_LOOP, " -- quick mode" if QUICK else ""))
    print(tables(jac, hes))
    print()
    print(edge_table(edge))
    print()
    for line in verdicts(jac, hes):
        print("* " + line)
    if "--json" in sys.argv:
        path = sys.argv[sys.argv.index("--json") + 1]
        with open(path, "w") as out:
            json.dump({"jacobians": jac, "hessians": hes, "edge_pushing": edge}, out, indent=1, default=str)


if __name__ == "__main__":
    main()
