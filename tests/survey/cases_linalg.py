"""Survey cases: scipy.linalg -- matrix functions, factorisations and solvers, special
matrices built from a differentiated vector."""
import numpy as np
from scipy import linalg as la

from . import Table

T = Table("scipy.linalg")
add = T.add
A = np.array([0.3, 0.7, 1.1])
M = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.2], [0.1, 0.4, 0.7]])   # small norm, for matrix functions
N = M + np.eye(3)                                                     # well conditioned
S = N @ N.T                                                           # positive definite
P = np.array([0.4, 1.3, 0.6])

add("expm", la.expm, M, ref=lambda x, v: la.expm_frechet(x, v, compute_expm=False))
add("expm scalar times matrix", lambda t: la.expm(t * M), 0.7, ref=lambda t, v: M @ la.expm(t * M) * v)
add("logm", lambda x: la.logm(x).real, N)
add("sqrtm", lambda x: la.sqrtm(x).real, S)
add("sinm", la.sinm, M)
add("cosm", la.cosm, M)
add("tanm", la.tanm, M)
add("sinhm", la.sinhm, M)
add("funm exp", lambda x: la.funm(x, np.exp).real, M, rtol=1e-5)
add("fractional_matrix_power", lambda x: la.fractional_matrix_power(x, 0.5).real, S)
add("inv", la.inv, N, ref=lambda x, v: -la.inv(x) @ v @ la.inv(x))
add("det", la.det, N, ref=lambda x, v: la.det(x) * np.trace(la.solve(x, v)))
add("solve", lambda x: la.solve(x, P), N)
add("solve rhs", lambda b: la.solve(N, b), A, ref=lambda b, v: la.solve(N, v))
add("solve assume_a=pos", lambda x: la.solve(x @ x.T, P, assume_a="pos"), N)
add("solve_triangular", lambda x: la.solve_triangular(np.triu(x), P), N)
add("solve_triangular rhs", lambda b: la.solve_triangular(np.triu(N), b), A)
add("cho_factor/cho_solve", lambda x: la.cho_solve(la.cho_factor(x @ x.T), P), N)
add("lu_factor/lu_solve", lambda x: la.lu_solve(la.lu_factor(x), P), N)
add("lu U", lambda x: la.lu(x)[2], N)
add("cholesky", lambda x: la.cholesky(x @ x.T), N)
add("qr R", lambda x: np.abs(la.qr(x)[1]), N)
add("svdvals", la.svdvals, N)
add("svd singular values", lambda x: la.svd(x)[1], N)
add("eigh values", lambda x: la.eigh(x + x.T)[0], N)
add("eigvalsh", lambda x: la.eigvalsh(x @ x.T), N)
add("eigvals sorted", lambda x: np.sort(la.eigvals(x).real), N)
add("eig(a, b) vectors", lambda x: la.eig(np.diag([1.0, 2.0, 3.0]) + 0.2 * x, np.eye(3) + 0.1 * S)[1], N)
add("eig(a, b) complex vectors' moduli",
    lambda x: np.abs(la.eig(np.array([[1.0, 2.0, 0.0], [-0.5, 1.0, 0.0], [0.0, 0.0, 3.0]]) + 0.1 * x,
                            np.eye(3) + 0.1 * S)[1]), N)
add("schur T", lambda x: la.schur(np.diag([1.0, 2.0, 3.0]) + 0.2 * x)[0], N)
add("schur Z", lambda x: la.schur(np.diag([1.0, 2.0, 3.0]) + 0.2 * x)[1], N)
add("schur of a rotation (complex pair)", lambda x: la.schur(np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0],
                                                                       [0.0, 0.0, 2.0]]) + 0.1 * x)[0], N)
add("norm", la.norm, N)
add("norm 2", lambda x: la.norm(x, 2), N)
add("pinv", la.pinv, N)
add("lstsq", lambda b: la.lstsq(np.vstack([A, P, np.ones(3)]).T[:, :2], b)[0], A)
add("polar unitary", lambda x: la.polar(x)[1], S)
add("solve_sylvester", lambda x: la.solve_sylvester(x, 2 * np.eye(3) + M, np.ones((3, 3))), N)
add("solve_continuous_lyapunov", lambda x: la.solve_continuous_lyapunov(x - 3 * np.eye(3), np.eye(3)), M)
add("solve_discrete_lyapunov", lambda x: la.solve_discrete_lyapunov(x, np.eye(3)), M / 2)
add("toeplitz", la.toeplitz, A)
add("toeplitz row and column", lambda x: la.toeplitz(x, np.array([x[0], 2.0, 3.0])), A)
add("circulant", la.circulant, A)
add("hankel", la.hankel, A)
add("companion", lambda c: la.companion(np.concatenate([[1.0], c])), A)
add("block_diag", lambda x: la.block_diag(x[:2, :2], np.eye(2)), N)
add("tri-free triu", lambda x: la.det(np.triu(x)), N)
add("expm_frechet", lambda e: la.expm_frechet(M, e, compute_expm=False), N)
add("orthogonal_procrustes scale", lambda x: la.orthogonal_procrustes(x, N)[1], S)
add("matrix_balance", lambda x: la.matrix_balance(x, permute=False, separate=True)[0] * 0 + x, N)
add("solve_banded", lambda b: la.solve_banded((1, 1), np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0],
                                                                 [1.0, 1.0, 0.0]]), b), A)
add("solveh_banded", lambda b: la.solveh_banded(np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0]]), b), A)
add("null_space-free orth", lambda x: np.abs(la.orth(x)).sum(), S)
add("logm of expm", lambda t: la.logm(la.expm(t * M)).real, 0.5)
