"""Minimise an unmodified objective with scipy.optimize.minimize(method="trust-constr"),
giving it capstan's gradient and sparse Hessian.

    python examples/sparse_trust_constr.py

The objective is CUTE's ARWHEAD plus a chained Rosenbrock term, written as plain NumPy:
its Hessian is an arrowhead with a tridiagonal band (n = 500 variables, about 2,500
nonzeros).  capstan detects the pattern once, star-colours it with 4 colours (column
colouring would need n) and each Hessian is then 4 Hessian-vector products.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402

import capstan  # noqa: E402


def objective(x):
    """ARWHEAD (an arrowhead Hessian) plus a weak chained Rosenbrock coupling."""
    arrow = np.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2 - 4.0 * x[:-1] + 3.0)
    chain = 0.1 * np.sum((x[1:] - x[:-1] ** 2) ** 2)
    return arrow + chain


def main():
    n = 500
    x0 = np.full(n, 0.5)
    start = time.perf_counter()
    hessian = capstan.prepare_sparse_hessian(objective, x0)
    elapsed = time.perf_counter() - start
    print("Hessian %d x %d: %d nonzeros, %d star colours (pattern + colouring: %.1f ms)"
          % (*hessian.pattern.shape, hessian.pattern.nnz, hessian.ncolors, 1e3 * elapsed))
    gradient = capstan.grad(objective)
    calls = []

    def hess(x):
        calls.append(1)
        return hessian(x)  # a scipy.sparse.csr_array: trust-constr keeps it sparse

    start = time.perf_counter()
    res = scipy.optimize.minimize(objective, x0, method="trust-constr", jac=gradient, hess=hess,
                                  options={"gtol": 1e-10, "xtol": 1e-12, "maxiter": 200})
    print("trust-constr: %s after %d iterations, %d sparse Hessians, %.2f s"
          % (res.message, res.nit, len(calls), time.perf_counter() - start))
    print("f(x*) = %.6g, |grad| = %.1e" % (res.fun, np.linalg.norm(gradient(res.x))))
    print("check against the dense capstan.hessian at x*: max difference %.1e" % hessian.check(res.x))
    if len(sys.argv) > 1:  # a folder to draw the pattern into (else a picture is drawn and dropped)
        print("pattern drawn to", hessian.spy(os.path.join(sys.argv[1], "arrowhead_pattern.svg")))
    else:
        with tempfile.TemporaryDirectory() as folder:
            picture = hessian.spy(os.path.join(folder, "arrowhead_pattern.svg"))
            print("pattern drawn (%d bytes of SVG); pass a folder to keep it" % os.path.getsize(picture))


if __name__ == "__main__":
    main()
