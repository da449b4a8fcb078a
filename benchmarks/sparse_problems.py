"""The test problems of benchmarks/sparse.py and tests/test_sparse.py, written as a user
would write them (NumPy array code and plain Python loops), with hand-written derivatives
where a closed form is short."""
import math

import numpy as np


def bratu(u, lam=1.0):
    """1-D Bratu residual on a uniform grid, zero boundary values (tridiagonal Jacobian)."""
    h = 1.0 / (len(u) + 1)
    up = np.concatenate([[0.0], u, [0.0]])
    return (up[:-2] - 2.0 * up[1:-1] + up[2:]) / h ** 2 + lam * np.exp(u)


def bratu_jacobian(u, lam=1.0):
    import scipy.sparse as sp

    n = len(u)
    h2 = (1.0 / (n + 1)) ** 2
    return sp.diags_array([np.full(n - 1, 1 / h2), -2 / h2 + lam * np.exp(u), np.full(n - 1, 1 / h2)],
                          offsets=[-1, 0, 1], format="csr")


def bratu_loop(u):
    """The same residual as a Python loop over the elements (a list out)."""
    n = len(u)
    h2 = (1.0 / (n + 1)) ** 2
    out = []
    for i in range(n):
        left = u[i - 1] if i > 0 else 0.0
        right = u[i + 1] if i < n - 1 else 0.0
        out.append((left - 2.0 * u[i] + right) / h2 + math.exp(u[i]))
    return out


def brusselator(y, alpha=10.0):
    """2-D Brusselator right-hand side on an N x N periodic grid, two species interleaved:
    ``y`` of size 2 N^2 (as in the SparseDiffTools/SparseConnectivityTracer benchmark)."""
    N = math.isqrt(len(y) // 2)
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


def arwhead(x):
    """CUTE's ARWHEAD: sum of (x_i^2 + x_n^2)^2 - 4 x_i + 3 (arrowhead Hessian)."""
    return np.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2 - 4.0 * x[:-1] + 3.0)


def arwhead_grad(x):
    s = x[:-1] ** 2 + x[-1] ** 2
    g = np.zeros_like(x)
    g[:-1] = 4.0 * s * x[:-1] - 4.0
    g[-1] = np.sum(4.0 * s * x[-1])
    return g


def arwhead_hessian(x):
    import scipy.sparse as sp

    n = len(x)
    s = x[:-1] ** 2 + x[-1] ** 2
    H = sp.lil_array((n, n))
    H.setdiag(np.concatenate([4.0 * s + 8.0 * x[:-1] ** 2, [np.sum(4.0 * s + 8.0 * x[-1] ** 2)]]))
    H[-1, :-1] = 8.0 * x[:-1] * x[-1]
    H[:-1, -1] = 8.0 * x[:-1] * x[-1]
    return H.tocsr()


def rosen_loop(x):
    """Rosenbrock as a Python loop (tridiagonal Hessian)."""
    s = 0.0
    for i in range(len(x) - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def arwhead_loop(x):
    """ARWHEAD as a Python loop (arrowhead Hessian)."""
    n = len(x)
    s = 0.0
    for i in range(n - 1):
        s += (x[i] ** 2 + x[n - 1] ** 2) ** 2 - 4.0 * x[i] + 3.0
    return s
