"""Sparse Hessians of Python-loop objectives: edge pushing against colouring, side by side.

    python benchmarks/edge_pushing.py            # n = 1000 and 3000
    python benchmarks/edge_pushing.py --quick    # smoke run: n = 50

Both methods start from nothing (``capstan.sparse_hessian(f, x)`` with
``method="coloring"``: detection + star colouring + Hessian-vector products; and
``method="edge_pushing"``: one recorded tape and one backward sweep).  The objectives
read ``x`` element by element: Rosenbrock as a Python loop (tridiagonal Hessian) and
ARWHEAD as a Python loop (arrowhead Hessian).  Each result is checked against the other
and the dense Hessian (n <= 1000) before it is timed; ratios are to one
``capstan.gradient`` of the same function at the same point.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import capstan  # noqa: E402
from sparse_problems import rosen_loop  # noqa: E402

QUICK = "--quick" in sys.argv
SIZES = (50,) if QUICK else (1000, 3000)


def arwhead_loop(x):
    """CUTE's ARWHEAD as a Python loop (arrowhead Hessian)."""
    s = 0.0
    last = x[len(x) - 1]
    for i in range(len(x) - 1):
        s += (x[i] ** 2 + last ** 2) ** 2 - 4.0 * x[i] + 3.0
    return s


def once(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def rows():
    out = []
    rng = np.random.default_rng(0)
    for name, f in [("rosen (Python loop)", rosen_loop), ("arwhead (Python loop)", arwhead_loop)]:
        for n in SIZES:
            x = rng.uniform(0.5, 1.5, n)
            t_ep, H_ep = once(lambda: capstan.sparse_hessian(f, x, method="edge_pushing"))
            t_col, H_col = once(lambda: capstan.sparse_hessian(f, x))
            t_grad, _ = once(lambda: capstan.gradient(f, x))
            scale = max(abs(H_col).max(), 1.0)
            assert abs(H_ep - H_col).max() <= 1e-11 * scale, name
            if n <= 1000:
                assert np.abs(H_ep.toarray() - capstan.hessian(f, x)).max() <= 1e-11 * scale, name
            out.append({"problem": name, "n": n, "nnz": H_ep.nnz, "gradient": t_grad,
                        "edge_pushing": t_ep, "coloring": t_col})
    return out


def table(rs):
    lines = ["| Hessian, first call | n | nnz | one gradient | edge pushing | colouring | edge pushing / gradient | colouring / edge pushing |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rs:
        lines.append("| %s | %d | %d | %.1f ms | %.1f ms | %.1f ms | %.1f× | %.1f× |" % (
            r["problem"], r["n"], r["nnz"], 1e3 * r["gradient"], 1e3 * r["edge_pushing"],
            1e3 * r["coloring"], r["edge_pushing"] / r["gradient"], r["coloring"] / r["edge_pushing"]))
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(rows()))
