"""Decompositions and matrix functions (numpy.linalg, scipy.linalg) through the public
API: forward mode against finite differences (the derivative of what LAPACK computes:
one triangle for eigh/cholesky, NumPy's sign and normalization of vectors), reverse
against forward (dot-product identity), second order; repeated eigenvalues and
options without a derivative raise clear errors."""
import numpy as np
import pytest

sl = pytest.importorskip("scipy.linalg")

import capstan  # noqa: E402
from rule_checks import (C, Case, R, check_forward, check_reverse, check_second_order, close,  # noqa: E402
                         finite_difference, reseed)

reseed("decomposition")

la = np.linalg


def SYM(n, complex_=False, lead=()):
    m = C(*lead, n, n) if complex_ else R(*lead, n, n)
    return m + np.swapaxes(m.conj(), -1, -2) + np.diag(np.arange(n) * 1.5)


def SYMD(n, lead=()):
    """Symmetric, with well separated eigenvalues and eigenvectors near the axes (LAPACK's
    signs then stay put under the finite-difference steps)."""
    m = R(*lead, n, n)
    return np.diag(2.0 * np.arange(1, n + 1)) + 0.3 * (m + np.swapaxes(m, -1, -2))


def EIG(kind, n=3):
    """``V diag(w) V^-1`` with distinct eigenvalues and each eigenvector dominated by one
    component (so LAPACK's normalization, largest component real, cannot switch)."""
    if kind == "pair":  # real, with a complex-conjugate pair
        q = np.eye(3) + 0.2 * R(3, 3)
        b = np.array([[1.0, 2.0, 0.0], [-0.5, 1.0, 0.0], [0.0, 0.0, 3.0]])
        return q @ b @ np.linalg.inv(q)
    v = np.eye(n) + 0.2 * (C(n, n) if kind == "complex" else R(n, n))
    w = np.arange(1.0, n + 1) + (1j * R(n) if kind == "complex" else 0)
    return v @ np.diag(w) @ np.linalg.inv(v)


def SPD(n, complex_=False):
    m = C(n, n) if complex_ else R(n, n)
    return m @ m.conj().T + n * np.eye(n)


def WELL(*shape):  # well conditioned, near the identity
    return np.eye(shape[-1]) + 0.3 * R(*shape) if len(shape) == 2 or shape[-1] == shape[-2] else R(*shape)


def NEGATIVE(n):
    """Real, with real negative eigenvalues: sqrtm and logm are complex there, on their
    branch cut, where conj(f(conj z)) != f(z)."""
    q = np.eye(n) + 0.2 * R(n, n)
    return q @ np.diag(np.array([-2.0, -0.7, 1.5, 2.5][:n])) @ np.linalg.inv(q)


def phase_free_eigh(a, eigh=sl.eigh, **kw):
    """Eigenvalues and the squared moduli of the eigenvectors: free of the sign (phase)
    LAPACK picks, which for SciPy's driver may flip under small perturbations."""
    w, v = eigh(a, **kw)
    return w, np.abs(v) ** 2


def phase_free_svd(a):
    u, s, vh = la.svd(a, full_matrices=False)
    return np.abs(u) ** 2, s, np.abs(vh) ** 2, u @ (s[..., None] * vh)


def named(name, f):
    f.__name__ = name
    return f


NUMPY = [
    Case(la.eigh, SYMD(4)), Case(la.eigh, SYMD(3), "U"), Case(la.eigh, SYMD(3, lead=(2,))),
    Case(named("eigh-complex", lambda a: phase_free_eigh(a, la.eigh)), SYM(3, True)),
    Case(la.eigvalsh, SYM(4)), Case(la.eigvalsh, SYM(3, True)), Case(la.eigvalsh, SYM(3), UPLO="U"),
    Case(la.eig, EIG("real", 4)), Case(la.eig, EIG("pair")), Case(la.eig, EIG("complex")),
    Case(la.eig, np.stack([EIG("real"), EIG("real")])), Case(la.eigvals, R(4, 4)), Case(la.eigvals, C(3, 3)),
    Case(la.svd, R(4, 3), full_matrices=False), Case(la.svd, R(3, 5), full_matrices=False),
    Case(la.svd, R(3, 3)),
    Case(la.svd, R(2, 4, 3), full_matrices=False), Case(la.svd, R(4, 3), compute_uv=False),
    Case(named("svd-complex", phase_free_svd), C(4, 3)),
    Case(named("svd-complex-wide", phase_free_svd), C(2, 4)),
    Case(la.qr, R(5, 3)), Case(la.qr, R(3, 3)), Case(la.qr, R(3, 5)), Case(la.qr, R(4, 2), mode="r"),
    Case(la.qr, C(4, 3)), Case(la.qr, R(2, 4, 3)), Case(la.qr, C(2, 3)),
    Case(la.pinv, R(4, 3)), Case(la.pinv, R(2, 4)), Case(la.pinv, C(3, 2)),
    Case(named("lstsq", lambda a, b: tuple(la.lstsq(a, b)[i] for i in (0, 1, 3))), R(5, 3), R(5)),
    Case(named("lstsq-matrix", lambda a, b: tuple(la.lstsq(a, b)[i] for i in (0, 1, 3))), R(5, 3), R(5, 2)),
    Case(named("lstsq-wide", lambda a, b: la.lstsq(a, b)[0]), R(2, 4), R(2)),
    Case(la.matrix_power, WELL(3, 3), 3), Case(la.matrix_power, WELL(3, 3), -2),
    Case(la.cond, R(3, 3)), Case(la.cond, R(3, 3), "fro"), Case(la.cond, WELL(3, 3), 1),
    Case(named("multi_dot", lambda a, b, c: la.multi_dot([a, b, c])), R(2, 3), R(3, 4), R(4)),
    Case(la.tensorsolve, WELL(6, 6).reshape(2, 3, 6), R(2, 3)),
    Case(la.tensorinv, WELL(6, 6).reshape(2, 3, 6), 2),
]

SCIPY = [
    Case(sl.solve, WELL(3, 3), R(3)), Case(sl.solve, WELL(3, 3), R(3, 2), transposed=True),
    Case(sl.solve, SYM(3) + 5 * np.eye(3), R(3), assume_a="sym"),
    Case(sl.solve, SPD(3), R(3), assume_a="pos", lower=True),
    Case(sl.solve, SPD(3, True), C(3), assume_a="her"),
    Case(sl.solve, WELL(3, 3), R(3), assume_a="lower triangular"),
    Case(sl.inv, WELL(3, 3)), Case(sl.inv, SPD(3), assume_a="pos"), Case(sl.det, R(3, 3)),
    Case(sl.det, C(3, 3)),
    Case(sl.cholesky, SPD(3)), Case(sl.cholesky, SPD(3), lower=True), Case(sl.cholesky, SPD(3, True)),
    Case(named("cho_factor", lambda a: sl.cho_factor(a)[0]), SPD(3)),
    Case(named("cho_solve", lambda a, b: sl.cho_solve(sl.cho_factor(a), b)), SPD(3), R(3)),
    Case(named("cho_solve-lower", lambda a, b: sl.cho_solve(sl.cho_factor(a, lower=True), b)),
         SPD(3, True), C(3, 2)),
    Case(sl.solve_triangular, WELL(3, 3), R(3)), Case(sl.solve_triangular, WELL(3, 3), R(3, 2), lower=True),
    Case(sl.solve_triangular, WELL(3, 3), R(3), trans=1),
    Case(sl.solve_triangular, WELL(3, 3) + 0j * C(3, 3), C(3), trans="C"),
    Case(sl.solve_triangular, C(3, 3) + 3 * np.eye(3), C(3), trans="T", lower=True),
    Case(sl.solve_triangular, R(3, 3), R(3), unit_diagonal=True),
    Case(named("lu_factor", lambda a: sl.lu_factor(a)[0]), R(3, 3)),
    Case(named("lu_solve", lambda a, b: sl.lu_solve(sl.lu_factor(a), b)), R(3, 3), R(3)),
    Case(named("lu_solve-T", lambda a, b: sl.lu_solve(sl.lu_factor(a), b, trans=1)), R(3, 3), R(3)),
    Case(named("lu_solve-C", lambda a, b: sl.lu_solve(sl.lu_factor(a), b, trans=2)), C(3, 3), C(3)),
    Case(named("lu", lambda a: sl.lu(a)[1:]), R(4, 4)),
    Case(named("lu-permute_l", lambda a: sl.lu(a, permute_l=True)), R(3, 3)),
    Case(named("scipy-eigh", phase_free_eigh), SYM(3)),
    Case(named("scipy-eigh-upper", lambda a: phase_free_eigh(a, sl.eigh, lower=False)), SYM(3)),
    Case(sl.eigh, SYM(3), eigvals_only=True),
    Case(sl.eigvalsh, SYM(3, True)), Case(sl.eig, EIG("pair")), Case(sl.eigvals, R(3, 3)),
    Case(named("scipy-eig-pencil", lambda a, b: sl.eig(a, b)), SPD(3) @ EIG("real"), SPD(3)),
    Case(named("scipy-eig-symmetric-pencil", lambda a, b: sl.eig(a, b)), SYMD(3), SPD(3)),
    Case(sl.schur, EIG("real", 4)), Case(sl.schur, EIG("real", 3), output="r"), Case(sl.schur, SYMD(3)),
    Case(sl.svd, R(4, 3), full_matrices=False), Case(sl.svd, R(3, 4), compute_uv=False),
    Case(sl.svdvals, R(3, 2)),
    Case(sl.qr, R(4, 3), mode="economic"), Case(sl.qr, R(3, 3)), Case(sl.qr, R(4, 2), mode="r"),
    Case(named("scipy-lstsq", lambda a, b: tuple(sl.lstsq(a, b)[i] for i in (0, 1, 3))), R(5, 3), R(5)),
    Case(named("scipy-lstsq-wide", lambda a, b: sl.lstsq(a, b)[0]), R(2, 4), R(2, 3)),
    Case(sl.pinv, R(4, 3)),
    Case(named("scipy-pinv-rank", lambda a: sl.pinv(a, return_rank=True)[0]), R(2, 3)),
    Case(sl.norm, R(3, 4)), Case(sl.norm, np.asfortranarray(R(3, 3)), 1), Case(sl.norm, R(3, 2), axis=0),
    Case(sl.polar, WELL(3, 3)), Case(sl.polar, R(3, 2), "left"),
    Case(sl.expm, 0.5 * R(3, 3)), Case(sl.expm, 0.5 * C(2, 2)), Case(sl.expm, 3 * R(4, 4)),
    Case(sl.logm, WELL(2, 2)), Case(sl.sqrtm, WELL(3, 3)), Case(sl.logm, WELL(3, 3), hessian=False),
    Case(sl.sqrtm, NEGATIVE(3)), Case(sl.logm, NEGATIVE(3), hessian=False),
    Case(sl.fractional_matrix_power, WELL(3, 3), 0.7), Case(sl.fractional_matrix_power, WELL(3, 3), -1.5),
    Case(sl.fractional_matrix_power, NEGATIVE(3), 0.5, hessian=False), Case(sl.fractional_matrix_power, WELL(2, 2), 2.0),
    Case(sl.solve_sylvester, R(3, 3), R(3, 3), R(3, 3)), Case(sl.solve_sylvester, R(3, 3), R(2, 2), R(3, 2)),
    Case(sl.solve_sylvester, C(2, 2), C(2, 2), C(2, 2)),  # (not C, R, C: SciPy's own answer is wrong)
    Case(sl.solve_continuous_lyapunov, R(3, 3) - 3 * np.eye(3), R(3, 3)),
    Case(sl.sqrtm, NEGATIVE(2) + 0.3j * R(2, 2)),
]
CASES = NUMPY + SCIPY
SECOND_ORDER = [c for c in CASES if c.hessian and not any(np.iscomplexobj(c.args[i]) for i in c.diff)]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward_matches_finite_differences(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse_is_adjoint_of_forward(case):
    check_reverse(case)


@pytest.mark.parametrize("case", SECOND_ORDER, ids=repr)
def test_second_order(case):
    check_second_order(case)


def test_expm_forward_derivative_is_the_frechet_derivative():
    """Before its rule, the forward derivative of expm came back as the direction itself:
    SciPy copies the matrix into a scratch array that C code (``pick_pade_structure``,
    ``pade_UV_calc``) overwrites in place, so the scratch array kept the input's tangent."""
    a, e = R(4, 4), R(4, 4)
    _, t = capstan.jvp(sl.expm, (a,), (e,))
    np.testing.assert_allclose(t, sl.expm_frechet(a, e, compute_expm=False), rtol=1e-12)
    assert not np.allclose(t, e)


def test_eigh_symmetric_directions_give_the_textbook_gradient():
    """On symmetric matrices the gradient restricted to symmetric directions is
    ``V diag(g) V^T``; the rule's gradient is its image under the lower-triangle read."""
    a = SYM(4)
    g = R(4)
    grad = capstan.gradient(lambda m: np.sum(g * la.eigvalsh(m)), a)[0]
    w, v = la.eigh(a)
    full = v @ np.diag(g) @ v.T
    np.testing.assert_allclose((grad + grad.T) / 2, (np.tril(2 * full, -1) + np.tril(2 * full, -1).T) / 2
                               + np.diag(np.diag(full)), rtol=1e-10, atol=1e-12)
    s = R(4, 4)
    s = s + s.T
    np.testing.assert_allclose(np.sum(grad * s), np.sum(full * s), rtol=1e-10)


def test_repeated_eigenvalues():
    eye = np.eye(3)
    # functions that do not single out vectors of the repeated eigenvalue: a derivative exists
    grad = capstan.gradient(lambda m: np.sum(la.eigvalsh(m) ** 2), eye)[0]
    np.testing.assert_allclose(grad, 2 * eye, atol=1e-12)
    def spectral(g):  # V diag(g(w)) V^T
        return lambda m: (la.eigh(m)[1] * g(la.eigh(m)[0])) @ la.eigh(m)[1].T

    grad = capstan.gradient(lambda m: np.trace(spectral(lambda w: w)(m)), 2 * eye)[0]
    np.testing.assert_allclose(grad, eye, atol=1e-12)
    grad = capstan.gradient(lambda m: np.trace(spectral(np.square)(m)), 2 * eye)[0]
    np.testing.assert_allclose(grad, 4 * eye, atol=1e-12)  # trace(A^2): 2 A
    # ... and ones that do (a vector of the basis LAPACK picked; a divided difference's limit): refused
    with pytest.raises(ValueError, match="numpy.linalg.eigh.*repeated"):
        capstan.gradient(lambda m: np.sum(la.eigh(m)[1][:, 0]), eye)
    c = R(3, 3)
    with pytest.raises(ValueError, match="numpy.linalg.eigh.*repeated"):
        capstan.gradient(lambda m: np.sum(c * spectral(np.exp)(m)), eye)
    with pytest.raises(capstan.NoRuleError, match="came out NaN"):  # (forward mode: NaN tangents, refused)
        capstan.jvp(lambda m: la.eigh(m)[1], (eye,), (R(3, 3),))
    with pytest.raises(ValueError, match="numpy.linalg.eig: repeated"):
        capstan.gradient(lambda m: np.sum(np.real(la.eigvals(m))), eye)
    with pytest.raises(ValueError, match="numpy.linalg.svd.*repeated"):
        capstan.gradient(lambda m: np.sum(la.svd(m)[0][:, 0]), eye)


@pytest.mark.parametrize("f,match", [
    (lambda a: la.svd(a)[0], "full_matrices=True"),
    (lambda a: la.svd(a, hermitian=True)[1], "hermitian=True"),
    (lambda a: la.qr(a, mode="complete")[0], "mode='complete'"), (lambda a: sl.qr(a)[0], "mode='full'"),
    (lambda a: sl.eigh(a[:2, :2], np.eye(2))[0], "b="), (lambda a: sl.qr(a, pivoting=True)[0], "pivoting"),
], ids=["svd-full", "svd-hermitian", "qr-complete", "scipy-qr-full", "scipy-eigh-b", "scipy-qr-pivoting"])
def test_options_without_derivative_are_refused(f, match):
    with pytest.raises(TypeError, match=match):
        capstan.jvp(f, (R(4, 3),), (R(4, 3),))


def test_pencil_eigenvectors_without_a_derivative_are_refused():
    """eig(a, b): complex eigenvectors (ggev fixes their modulus, not their phase), complex
    matrices, and an infinite eigenvalue (b singular)."""
    b = SPD(3)
    with pytest.raises(TypeError, match="scipy.linalg.eig.*complex eigenvalues"):
        capstan.gradient(lambda a: np.sum(np.real(sl.eig(a, b)[1])), b @ EIG("pair"))
    with pytest.raises(TypeError, match="scipy.linalg.eig.*complex matrices"):
        capstan.jvp(lambda a: sl.eig(a, b + 0j)[1], (SYM(3) + 0j,), (R(3, 3) + 0j,))
    singular = np.diag([1.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="infinite eigenvalue"):
        capstan.gradient(lambda a: np.sum(sl.eig(a, singular)[1]), SYMD(3))


@pytest.mark.parametrize("f,error,match", [
    (lambda a: sl.schur(a)[0], TypeError, "complex eigenvalues"),
    (lambda a: sl.schur(a + 0j)[0], TypeError, "complex matrix"),
    (lambda a: sl.schur(a, output="complex")[0], TypeError, "output='complex'"),
    (lambda a: sl.schur(a, sort="lhp")[0], TypeError, "sort="),
    (lambda a: sl.schur(np.eye(3) + 0 * a)[1], ValueError, "repeated eigenvalue"),
    (lambda a: sl.schur(np.stack([a, a]))[0], TypeError, "stack"),
], ids=["complex-pair", "complex-matrix", "complex-output", "sort", "repeated", "stack"])
def test_schur_forms_without_a_derivative_are_refused(f, error, match):
    """The real Schur form has a derivative for real matrices with real, distinct
    eigenvalues; a 2x2 block, complex Schur vectors (their phases follow no normalization),
    a chosen order, and a repeated eigenvalue are refused."""
    with pytest.raises(error, match=match):
        capstan.jvp(f, (EIG("pair"),), (R(3, 3),))


def test_c_function_writing_into_a_differentiated_array_is_refused():
    """The cause of the old expm bug, in general: SciPy 1.17's expm copies the matrix into a
    scratch array that C code without a rule (``pick_pade_structure``) overwrites in place,
    so the scratch array kept the input's tangent.  Such a write now raises NoRuleError
    (shown with another C function that writes in place, present in every version)."""
    def f(x):
        scratch = np.zeros(4)
        scratch[:] = x
        np.random.default_rng(0).shuffle(scratch)
        return scratch

    x = np.arange(4.0)
    with pytest.raises(capstan.NoRuleError, match="shuffle"):
        capstan.jvp(f, (x,), (np.ones(4),))
    with pytest.raises(capstan.NoRuleError, match="shuffle"):
        capstan.gradient(lambda v: np.sum(f(v) * x), x)


@pytest.mark.parametrize("f", [sl.sqrtm, sl.logm], ids=lambda f: f.__name__)
def test_matrix_roots_and_logs_on_the_branch_cut_second_order(f):
    """A real matrix with negative eigenvalues has a complex sqrtm/logm.  The reverse rule
    used to be ``L_f(a^H, g)``, right only where ``f(conj z) == conj f(z)`` (false on the
    cut), and the block ``[[a, e], [0, a]]`` of a nested derivative let rounding split its
    repeated negative eigenvalues across the cut (huge numbers, or NaN in SciPy)."""
    a = NEGATIVE(3)
    w = C(3, 3)  # weights on the real and the imaginary parts

    def loss(x):
        return np.sum(np.real(w * f(x)))

    def grad(x):
        return capstan.gradient(loss, x)[0]

    for _ in range(2):
        v = R(3, 3)
        fd = finite_difference(grad, (a,), (v,), 1e-4)[0]
        close(capstan.jvp(grad, (a,), (v,))[1], fd, 1e-5, 1e-6)  # forward over reverse
        u = R(3, 3)
        # reverse over reverse: d/da <u, grad(a)>, against the same differences
        close(np.sum(capstan.gradient(lambda x: np.sum(u * grad(x)), a)[0] * v), np.sum(u * fd), 1e-5, 1e-6)
        fd1 = finite_difference(loss, (a,), (v,), 1e-4)[0]
        close(np.sum(grad(a) * v), fd1, 1e-6, 1e-7)


def test_an_integer_power_of_a_matrix_with_negative_eigenvalues_is_refused_in_the_power():
    """a^t is real at an integer t but complex next to it: its derivative in t is refused
    (in the matrix it is the real derivative of the polynomial)."""
    a = NEGATIVE(3)
    with pytest.raises(TypeError, match="fractional_matrix_power.*integer power"):
        capstan.D(lambda t: sl.fractional_matrix_power(a, t), 2.0)
    with pytest.raises(TypeError, match="fractional_matrix_power.*integer power"):
        capstan.gradient(lambda t: np.sum(sl.fractional_matrix_power(a, t)), 2.0)
    e = R(3, 3)
    _, t = capstan.jvp(lambda x: sl.fractional_matrix_power(x, 2.0), (a,), (e,))
    np.testing.assert_allclose(t, a @ e + e @ a, rtol=1e-6, atol=1e-8)

