"""Implicit Euler steps of the 2-D Brusselator, each solved by Newton's method with the
sparse Jacobian capstan finds for the unmodified NumPy right-hand side.

    python examples/sparse_newton_brusselator.py

The right-hand side (a 5-point periodic Laplacian and the Brusselator reaction, two
species on an N x N grid) is plain NumPy.  capstan detects its Jacobian's pattern and
colours it once; each Newton iteration is then one forward run of the code with about
ten directions (one per colour) instead of 2 N^2, and a sparse solve
(scipy.sparse.linalg.spsolve).
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from scipy.sparse.linalg import spsolve  # noqa: E402

import capstan  # noqa: E402

N = 32  # grid points per side: 2 N^2 = 2048 unknowns


def brusselator(y, alpha=10.0):
    """dy/dt of the 2-D Brusselator, the two species interleaved (shape (N, N, 2) flattened)."""
    Y = y.reshape(N, N, 2)
    u, v = Y[..., 0], Y[..., 1]
    dx = 1.0 / (N - 1)
    grid = np.linspace(0.0, 1.0, N)
    gx, gy = np.meshgrid(grid, grid, indexing="ij")
    forcing = np.where((gx - 0.3) ** 2 + (gy - 0.6) ** 2 <= 0.01, 5.0, 0.0)

    def laplacian(a):
        neighbours = np.roll(a, 1, 0) + np.roll(a, -1, 0) + np.roll(a, 1, 1) + np.roll(a, -1, 1)
        return (neighbours - 4.0 * a) / dx ** 2

    du = alpha * laplacian(u) + 1.0 + u * u * v - 4.4 * u + forcing
    dv = alpha * laplacian(v) + 3.4 * u - u * u * v
    return np.stack([du, dv], axis=-1).ravel()


def initial():
    grid = np.linspace(0.0, 1.0, N)
    gx, gy = np.meshgrid(grid, grid, indexing="ij")
    u0 = 22.0 * (gy * (1.0 - gy)) ** 1.5
    v0 = 27.0 * (gx * (1.0 - gx)) ** 1.5
    return np.stack([u0, v0], axis=-1).ravel()


def main():
    y = initial()
    dt = 1e-4
    start = time.perf_counter()
    prep = capstan.prepare_sparse_jacobian(brusselator, y)
    print("Jacobian %d x %d: %d nonzeros, %d colours (pattern + colouring: %.1f ms)"
          % (*prep.pattern.shape, prep.pattern.nnz, prep.ncolors, 1e3 * (time.perf_counter() - start)))
    identity = sp.eye_array(y.size, format="csr")
    jac_time, newton_steps = 0.0, 0
    for step in range(5):
        y_old = y.copy()
        for _ in range(10):  # Newton on G(y) = y - y_old - dt f(y) = 0
            residual = y - y_old - dt * brusselator(y)
            norm = np.linalg.norm(residual)
            if norm < 1e-10 * max(1.0, np.linalg.norm(y)):
                break
            t = time.perf_counter()
            J = prep(y)  # sparse Jacobian of f at y: one forward run, one direction per colour
            jac_time += time.perf_counter() - t
            y = y - spsolve((identity - dt * J).tocsc(), residual)
            newton_steps += 1
        print("step %d: t = %.4f, Newton residual %.1e, u in [%.3f, %.3f]"
              % (step + 1, (step + 1) * dt, norm, y[0::2].min(), y[0::2].max()))
    print("%d sparse Jacobians, %.2f ms each" % (newton_steps, 1e3 * jac_time / newton_steps))
    print("check against the dense capstan.jacobian: max difference %.1e" % prep.check(y))
    if len(sys.argv) > 1:  # a folder to draw the pattern into (else a picture is drawn and dropped)
        print("pattern drawn to", prep.spy(os.path.join(sys.argv[1], "brusselator_pattern.svg")))
    else:
        with tempfile.TemporaryDirectory() as folder:
            picture = prep.spy(os.path.join(folder, "brusselator_pattern.svg"))
            print("pattern drawn (%d bytes of SVG); pass a folder to keep it" % os.path.getsize(picture))


if __name__ == "__main__":
    main()
