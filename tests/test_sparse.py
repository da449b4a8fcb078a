"""Sparse Jacobians and Hessians: detection (never too sparse), colouring, compressed
evaluation (exact against dense capstan and closed forms), guards, hvp, refusals."""
import doctest
import math
import os
import sys
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

import capstan
from capstan import graph_coloring as col

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
from sparse_problems import (arwhead, arwhead_hessian, arwhead_loop, bratu, bratu_jacobian,  # noqa: E402
                             bratu_loop, brusselator, rosen_loop)

RNG = np.random.default_rng(11)


def dense(P):
    return P.toarray() if sp.issparse(P) else np.asarray(P)


def close(sparse, reference):
    """Exact up to rounding: a relative difference of a few ulps of the largest entry."""
    reference = dense(reference)
    got = dense(sparse)
    scale = max(np.abs(reference).max(), 1.0)
    np.testing.assert_allclose(got, reference, rtol=1e-12, atol=1e-13 * scale)


# ----------------------------------------------------------------------------- exact at n = 1000
def test_bratu_sparse_jacobian_is_exact_at_1000():
    u = RNG.random(1000)
    prep = capstan.prepare_sparse_jacobian(bratu, u)
    assert prep.ncolors == 3 and prep.kind == "column"
    J = prep(u)
    assert isinstance(J, sp.csr_array) and J.shape == (1000, 1000) and J.nnz == 2998
    close(J, capstan.jacobian(bratu, u))
    close(J, bratu_jacobian(u))
    u2 = RNG.random(1000)
    close(prep(u2), bratu_jacobian(u2))


def test_brusselator_sparse_jacobian_is_exact_at_968():
    y = RNG.random(2 * 22 * 22)
    prep = capstan.prepare_sparse_jacobian(brusselator, y)
    assert prep.ncolors <= 12
    assert col.is_column_coloring(prep.pattern, prep.colors)
    close(prep(y), capstan.jacobian(brusselator, y))
    assert prep.pattern.nnz == 6 * y.size  # 5-point stencil of one species + the other at the point


def test_rosen_sparse_hessian_is_exact_at_1000():
    x = RNG.random(1000) * 2
    prep = capstan.prepare_sparse_hessian(scipy.optimize.rosen, x)
    assert prep.ncolors == 3
    H = prep(x)
    close(H, scipy.optimize.rosen_hess(x))
    close(H, capstan.hessian(scipy.optimize.rosen, x))
    for _ in range(3):  # each HVP mode at least once ("auto" tries both)
        x2 = RNG.random(1000)
        close(prep(x2), scipy.optimize.rosen_hess(x2))
    assert set(prep.timings) == {"fwd_over_rev", "rev_over_fwd"}


def test_arrowhead_sparse_hessian_is_exact_at_1000():
    x = RNG.random(1000)
    prep = capstan.prepare_sparse_hessian(arwhead, x)
    assert prep.ncolors == 2
    H = prep(x)
    close(H, arwhead_hessian(x))
    close(H, capstan.hessian(arwhead, x))


@pytest.mark.parametrize("hvp", ["rev_over_fwd", "fwd_over_rev"])
def test_every_hvp_mode_over_many_colours(hvp):
    """Column colouring of a banded Hessian with a broadcast scalar (more colours than
    one reverse-over-forward chunk holds): both HVP modes exact against dense."""
    def f(z):
        band = z[:-4] * z[1:-3] * z[2:-2] * z[3:-1] * z[4:]
        return np.sum(np.sin(band) + z[:-4] ** 2 * z[-1]) + z[0] ** 3

    x = RNG.random(40)
    prep = capstan.prepare_sparse_hessian(f, x, coloring="column", hvp=hvp)
    assert prep.ncolors > capstan.sparse.RO_CHUNK
    close(prep(x), capstan.hessian(f, x))


def test_python_loop_code_at_1000():
    u = RNG.random(1000)
    J = capstan.sparse_jacobian(bratu_loop, list(u))  # (a list in, a list out)
    close(J, bratu_jacobian(u))
    assert capstan.jacobian_sparsity(bratu_loop, u).nnz == 2998
    assert capstan.hessian_sparsity(rosen_loop, u).nnz == 2998
    x = RNG.random(300)  # (Hessian-vector products of scalar loops cost ~6 gradients each)
    H = capstan.sparse_hessian(rosen_loop, list(x))
    close(H, scipy.optimize.rosen_hess(x))


def test_python_loop_code_against_dense_capstan():
    u = RNG.random(60)
    prep = capstan.prepare_sparse_jacobian(bratu_loop, u)
    close(prep(u), np.array(capstan.jacobian(lambda z: np.array(bratu_loop(z)), u)))
    assert prep.check(u) < 1e-9
    x = list(RNG.random(40))
    hprep = capstan.prepare_sparse_hessian(rosen_loop, x)
    assert hprep.check() < 1e-9
    close(hprep(x), capstan.hessian(rosen_loop, np.array(x)))


def test_acyclic_and_column_hessian_colourings_are_exact():
    x = RNG.random(200)
    star = capstan.prepare_sparse_hessian(scipy.optimize.rosen, x)
    acyclic = capstan.prepare_sparse_hessian(scipy.optimize.rosen, x, coloring="acyclic")
    column = capstan.prepare_sparse_hessian(arwhead, x, coloring="column", hvp="fwd_over_rev")
    assert acyclic.ncolors == 2 and star.ncolors == 3 and column.ncolors == 200
    close(acyclic(x), scipy.optimize.rosen_hess(x))
    close(column(x), arwhead_hessian(x))
    for hvp in ("fwd_over_rev", "rev_over_fwd"):
        close(capstan.sparse_hessian(arwhead, x, hvp=hvp), arwhead_hessian(x))


def test_row_colouring_for_a_wide_jacobian():
    def blocks(x):  # 4 outputs, each the sum of squares of its own block of 50 inputs
        return np.sum(x.reshape(4, 50) ** 2, axis=1)

    x = RNG.random(200)
    prep = capstan.prepare_sparse_jacobian(blocks, x)
    assert prep.kind == "row" and prep.ncolors == 1
    J = prep(x)
    expected = np.zeros((4, 200))
    for k in range(4):
        expected[k, 50 * k:50 * (k + 1)] = 2 * x[50 * k:50 * (k + 1)]
    close(J, expected)
    assert capstan.prepare_sparse_jacobian(blocks, x, coloring="column").ncolors == 50
    close(capstan.sparse_jacobian(bratu, x, coloring="row"), bratu_jacobian(x))


def test_against_scipy_finite_differences_with_the_same_pattern():
    from scipy.optimize._numdiff import approx_derivative

    u = RNG.random(300)
    P = capstan.jacobian_sparsity(bratu, u)
    fd = approx_derivative(bratu, u, method="3-point", sparsity=P)
    J = capstan.sparse_jacobian(bratu, u, sparsity=P)
    np.testing.assert_allclose(J.toarray(), dense(fd), rtol=1e-5, atol=1e-3)
    exact = bratu_jacobian(u).toarray()
    assert np.abs(J.toarray() - exact).max() < np.abs(dense(fd) - exact).max()


# ----------------------------------------------------------------------------- colours
def tridiagonal(n):
    return sp.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)], offsets=[-1, 0, 1], format="csr")


def arrowhead(n):
    A = sp.lil_array((n, n))
    A.setdiag(1.0)
    A[-1, :] = 1.0
    A[:, -1] = 1.0
    return A.tocsr()


def test_colour_counts_of_the_research_notes():
    assert col.coloring(tridiagonal(1000), "column").max() + 1 == 3
    y = RNG.random(2 * 22 * 22)
    assert capstan.coloring(capstan.jacobian_sparsity(brusselator, y), "column").max() + 1 <= 12
    assert capstan.coloring(tridiagonal(1000), kind="star").max() + 1 == 3
    assert capstan.coloring(tridiagonal(1000), kind="acyclic").max() + 1 == 2
    assert capstan.coloring(arrowhead(1000), kind="star").max() + 1 == 2
    assert capstan.coloring(arrowhead(1000), kind="column").max() + 1 == 1000
    wide = sp.csr_array(np.kron(np.eye(3), np.ones((1, 5))))
    assert capstan.coloring(wide, kind="row").max() + 1 == 1


def bicoloured_p4(S, colors):
    """A path on four vertices using only two colours, by brute force, or None."""
    A = S.toarray()
    n = len(A)
    for a in range(n):
        for b in np.flatnonzero(A[a]):
            for c in np.flatnonzero(A[b]):
                if c == a:
                    continue
                for d in np.flatnonzero(A[c]):
                    if d not in (a, b) and len({colors[a], colors[b], colors[c], colors[d]}) < 3:
                        return a, b, c, d
    return None


@pytest.mark.parametrize("seed", range(6))
def test_colourings_of_random_patterns_are_valid(seed):
    rng = np.random.default_rng(seed)
    n = 40
    A = sp.random_array((n, n), density=0.08, rng=rng, format="csr") != 0
    J = sp.random_array((25, n), density=0.1, rng=rng, format="csr") != 0
    c = capstan.coloring(J, "column")
    assert col.is_column_coloring(J, c)
    r = capstan.coloring(J, "row")
    assert col.is_column_coloring(J.T.tocsr(), r)
    H = sp.csr_array(A + A.T)
    S = col.symmetric(H)
    star = capstan.coloring(H, "star")
    assert col.is_star_coloring(S, star) and bicoloured_p4(S, star) is None
    for order in (np.arange(n), rng.permutation(n)):
        greedy = col._greedy_star(S, order)
        assert bicoloured_p4(S, greedy) is None
    acyclic = capstan.coloring(H, "acyclic")
    assert col.is_acyclic(S, acyclic)
    x = rng.random(n)
    M = (H + sp.eye_array(n)).astype(float).tocsr()
    M.data = rng.random(M.nnz)
    M = (M + M.T).toarray()

    def quadratic(z):  # Hessian exactly M
        return 0.5 * z @ (M @ z)

    for kind in ("star", "acyclic"):
        got = capstan.sparse_hessian(quadratic, x, sparsity=M != 0, coloring=kind)
        close(got, M)


def test_a_colouring_that_is_not_star_is_recognised():
    S = col.symmetric(tridiagonal(6))
    assert not col.is_star_coloring(S, np.array([0, 1, 0, 1, 0, 1]))  # a bicoloured path
    assert col.is_acyclic(S, np.array([0, 1, 0, 1, 0, 1]))
    assert not col.is_column_coloring(tridiagonal(6), np.array([0, 1, 0, 1, 0, 1]))


# ----------------------------------------------------------------------------- never too sparse
def _with_setitem(x):
    out = np.zeros(len(x) + 2)
    out[1:-1] = x ** 2
    out[0] = x[-1] * x[0]
    return out


def _with_view_write(x):
    y = x.copy()
    v = y[2:]
    v[0] = y[0] * 3.0  # writes through the view into y
    return y * y


def _loop_list(x):
    acc = []
    total = 0.0
    for i in range(len(x)):
        total = total + math.sin(x[i])
        acc.append(total * x[(i + 3) % len(x)])
    return acc


CASES = {
    "elementwise": lambda x: np.exp(x) * x[::-1] + np.sin(x) / (1.0 + x ** 2),
    "broadcast": lambda x: (x.reshape(3, 4) * x[:4]).ravel() + np.sum(x[:2]),
    "reductions": lambda x: np.concatenate([np.sum(x.reshape(3, 4), axis=0), np.max(x.reshape(3, 4), axis=1),
                                            [np.prod(x[:3]), np.mean(x), np.std(x[5:])]]),
    "shape": lambda x: np.stack([np.roll(x, 2), np.flip(x), np.repeat(x[:6], 2)]).T.ravel(),
    "triangles": lambda x: np.concatenate([np.triu(x.reshape(3, 4), 1).ravel(), np.diag(x[:3]).ravel(),
                                           np.take(x, [3, 3, 0])]),
    "matmul const": lambda x: np.concatenate([np.arange(24.0).reshape(2, 12) @ x,
                                              np.tril(np.ones((12, 12))) @ x]),
    "matmul both": lambda x: (x.reshape(3, 4) @ x.reshape(4, 3)).ravel(),
    "dot/inner": lambda x: np.array([np.dot(x[:6], x[6:]), np.inner(x[:3], x[3:6])]),
    "sort/cumsum": lambda x: np.concatenate([np.sort(x.reshape(3, 4), axis=1).ravel(), np.cumsum(x)]),
    "where/clip": lambda x: np.where(x > 0.5, x ** 2, x[::-1]) + np.clip(x, 0.2, 0.7),
    "setitem": _with_setitem,
    "view write": _with_view_write,
    "inplace": lambda x: (lambda y: (y.__iadd__(x[::-1] ** 2), y)[1])(x * 1.0),
    "python loop": _loop_list,
    "scalars": lambda x: [x[0] * x[1], math.exp(x[2]) + x[3] ** 3, abs(x[4] - x[5]), x[6] / x[7]],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pattern_is_never_too_sparse(name):
    f = CASES[name]
    x = RNG.random(12) + 0.1
    P = dense(capstan.jacobian_sparsity(f, x))
    for _ in range(3):
        z = x + 0.01 * RNG.standard_normal(12)
        J = np.asarray(capstan.jacobian(lambda v: np.asarray(f(v), dtype=float).ravel(), z)).reshape(P.shape)
        missing = (J != 0) & ~P
        assert not missing.any(), np.argwhere(missing)[:5]
    assert P.sum() < P.size or name in ("reductions", "matmul both")  # never dense by accident


def test_patterns_are_the_exact_structure_where_known():
    x = RNG.random(12)
    P = dense(capstan.jacobian_sparsity(CASES["elementwise"], x))
    np.testing.assert_array_equal(P, np.eye(12, dtype=bool) | np.eye(12, dtype=bool)[::-1])
    P = dense(capstan.jacobian_sparsity(lambda z: z[1:] * 0.0 + z[:-1], x))  # structure, not values
    assert P.sum() == 22
    P = dense(capstan.jacobian_sparsity(lambda z: np.arange(24.0).reshape(2, 12) @ z, x))
    assert P.sum() == 23  # the constant's zero at (0, 0) is a structural zero


HESSIAN_CASES = {
    "rosen": scipy.optimize.rosen,
    "arwhead": arwhead,
    "products": lambda x: x[0] * x[1] + x[2] / x[3] + x[4] ** 2 + np.sum(x[5:8]) * 2.0 + x[8] * np.exp(x[9]),
    "quadratic form": lambda x: x[:6] @ (np.arange(36.0).reshape(6, 6) @ x[6:]),
    "reductions": lambda x: np.prod(x[:3]) + np.var(x[3:6]) + np.max(x[6:]) + np.sum(np.sort(x[8:]) * x[8:]),
    "loop": rosen_loop,
    "unknown function": lambda x: np.linalg.norm(x[:4]) + x[5] * x[6],
}


@pytest.mark.parametrize("name", sorted(HESSIAN_CASES))
def test_hessian_pattern_is_never_too_sparse(name):
    f = HESSIAN_CASES[name]
    x = RNG.random(12) + 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = dense(capstan.hessian_sparsity(f, x))
    np.testing.assert_array_equal(P, P.T)
    for _ in range(2):
        H = capstan.hessian(f, x + 0.01 * RNG.standard_normal(12))
        missing = (H != 0) & ~P
        assert not missing.any(), np.argwhere(missing)[:5]
    assert P.sum() < P.size


def test_linear_operations_add_no_hessian_pairs():
    x = RNG.random(6)
    P = dense(capstan.hessian_sparsity(lambda z: np.sum(3.0 * z - np.roll(z, 1)) + z[0] * z[1], x))
    expected = np.zeros((6, 6), bool)
    expected[0, 1] = expected[1, 0] = True
    np.testing.assert_array_equal(P, expected)


def test_bit_masks_become_the_same_index_sets():
    """Scalar code's index sets (bit masks) read out as rows: near ones (bits within 64
    positions) together, wide ones bit by bit, repeated objects once."""
    from capstan.sparsity import rows_from_masks

    rng = np.random.default_rng(5)
    for n in (1, 64, 65, 300, 10_000):
        masks = [0]
        for _ in range(40):
            picks = (rng.integers(0, n, 1) + rng.integers(0, 64, rng.integers(1, 5))) % n
            if rng.random() < 0.4:
                picks = rng.integers(0, n, rng.integers(1, 30))
            m = 0
            for p in picks.tolist():
                m |= 1 << p
            masks += [m, m] if rng.random() < 0.3 else [m]
        R = rows_from_masks(masks, n)
        assert R.m == len(masks)
        for i, m in enumerate(masks):
            want = [b for b in range(n) if m >> b & 1]
            assert R.indices[R.indptr[i]:R.indptr[i + 1]].tolist() == want


def test_a_function_without_a_pattern_rule_is_dense_with_one_warning():
    x = RNG.random(6)
    capstan.sparsity._warned.discard("numpy.linalg.inv")
    f = lambda z: np.linalg.inv(z[:4].reshape(2, 2)).ravel() * z[4]  # noqa: E731
    with pytest.warns(UserWarning, match="no sparsity rule"):
        P = dense(capstan.jacobian_sparsity(f, x))
    assert P[:, :5].all() and not P[:, 5].any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        capstan.jacobian_sparsity(f, x)  # once only
    close(capstan.sparse_jacobian(f, x), capstan.jacobian(f, x))


# ----------------------------------------------------------------------------- guards
def branchy(x):
    out = np.empty_like(x)
    for i in range(len(x)):
        if x[i] > 0.5:
            out[i] = x[i] * x[(i + 1) % len(x)]
        else:
            out[i] = math.exp(x[i])
    return out


def test_guards_hold_on_the_same_path_and_fail_on_another():
    x = np.array([0.1, 0.9, 0.2, 0.8, 0.3])
    prep = capstan.prepare_sparse_jacobian(branchy, x)
    assert prep.pattern.nnz == 7 and prep.guards
    same = x + 0.05
    close(prep(same), capstan.jacobian(branchy, same))
    other = 1.0 - x
    with pytest.raises(capstan.TapeGuardError, match="another branch"):
        prep(other)
    redetect = capstan.prepare_sparse_jacobian(branchy, x, on_mismatch="redetect")
    close(redetect(other), capstan.jacobian(branchy, other))
    assert redetect.pattern.nnz == 8


def test_hessian_guards():
    def f(x):
        s = 0.0
        for i in range(len(x) - 1):
            s += x[i] * x[i + 1] if x[i] > 0.5 else x[i] ** 2
        return s

    x = np.array([0.1, 0.9, 0.2, 0.8])
    prep = capstan.prepare_sparse_hessian(f, x)
    for _ in range(3):  # both HVP modes watch the branches
        close(prep(x + 0.01), capstan.hessian(f, x + 0.01))
        with pytest.raises(capstan.TapeGuardError):
            prep(1.0 - x)
    again = capstan.prepare_sparse_hessian(f, x, on_mismatch="redetect")
    close(again(1.0 - x), capstan.hessian(f, 1.0 - x))


def through_a_view(w):
    y = np.zeros(5)
    y[1:4] = w
    v = y[1:]
    v[-1] = v[1]  # a write through a view of y
    return np.sum(y * y)


@pytest.mark.parametrize("mode", ["rev_over_fwd", "fwd_over_rev"])
def test_hvp_through_writes_into_views(mode):
    x = np.array([0.3, 0.7, 1.1])
    for v in (np.ones(3), np.array([0.5, -1.0, 2.0])):
        close(capstan.hvp(through_a_view, x, v, mode=mode), np.diag([2.0, 4.0, 2.0]) @ v)
    pad = lambda w: np.sum(np.sin(np.pad(w, (1, 2), mode="reflect")))  # noqa: E731
    close(capstan.hvp(pad, x, np.ones(3), mode=mode), capstan.hessian(pad, x) @ np.ones(3))


def test_auto_hvp_mode_cross_checks_the_two_modes():
    calls = []

    def drifting(w):  # not the same function from one run to the next
        calls.append(1)
        return np.sum(w ** 3) * len(calls)

    x = np.array([0.3, 0.7, 1.1])
    prep = capstan.prepare_sparse_hessian(drifting, x)
    prep(x)
    with pytest.warns(RuntimeWarning, match="disagree"):
        prep(x)
    assert prep.hvp_mode == "fwd_over_rev"
    fine = capstan.prepare_sparse_hessian(through_a_view, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            close(fine(x), np.diag([2.0, 4.0, 2.0]))
    assert set(fine.timings) == {"fwd_over_rev", "rev_over_fwd"}


@pytest.mark.parametrize("mode", ["rev_over_fwd", "fwd_over_rev"])
def test_hvp_of_squares_and_of_a_differentiated_exponent_of_two(mode):
    """A square's partial is folded to ``2 * base`` only for a constant exponent: an
    exponent that is itself differentiated (and happens to be 2) keeps its full partial."""
    z = np.array([0.3, 1.7, 2.0])
    v = np.array([0.5, -1.0, 2.0])

    def f(w):
        return np.sum(w[:-1] ** w[-1]) + w[0] ** 2 * w[1] ** 2.0

    a, b, p = z
    log_a, log_b = math.log(a), math.log(b)
    H = np.array([  # closed form of the Hessian at (a, b, p = 2)
        [p * (p - 1) * a ** (p - 2) + 2 * b * b, 4 * a * b, a ** (p - 1) * (1 + p * log_a)],
        [4 * a * b, p * (p - 1) * b ** (p - 2) + 2 * a * a, b ** (p - 1) * (1 + p * log_b)],
        [a ** (p - 1) * (1 + p * log_a), b ** (p - 1) * (1 + p * log_b),
         a ** p * log_a ** 2 + b ** p * log_b ** 2]])
    np.testing.assert_allclose(capstan.hvp(f, z, v, mode=mode), H @ v, rtol=1e-13)


@pytest.mark.parametrize("mode", ["rev_over_fwd", "fwd_over_rev"])
def test_hvp_of_a_linear_or_constant_function_is_zeros(mode):
    """A Hessian of zeros times v: zeros shaped like x, as capstan.hessian gives (it was None)."""
    x, v = np.array([0.5, 2.0]), np.array([1.0, -3.0])
    for f in (lambda w: np.sum(2.0 * w), lambda w: 3.0, lambda w: w[0] - w[1]):
        hv = capstan.hvp(f, x, v, mode=mode)
        assert type(hv) is np.ndarray and hv.shape == x.shape and not hv.any()
        np.testing.assert_array_equal(hv, capstan.hessian(f, x) @ v)
    assert capstan.hvp(lambda t: 2.0 * t, 1.5, 1.0, mode=mode) == 0.0
    assert capstan.hvp(lambda t: t ** 3, 2.0, 1.0, mode=mode) == 12.0


@pytest.mark.parametrize("mode", ["rev_over_fwd", "fwd_over_rev"])
def test_hvp_through_sums_with_axes_and_masks(mode):
    """Nested sums (the sum rule's tangent folded to one routed np.sum where no mask is
    given) against the dense Hessian."""
    mask = np.array([[True, False, True], [True, True, False]])

    def f(w):
        a = w.reshape(2, 3)
        rows = np.sum(a * a, axis=1, keepdims=True)
        return (np.sum(rows * np.sum(a, axis=0, dtype=float)) + np.sum(np.sin(a), where=mask)
                + np.sum(a ** 3, axis=(0, 1)))

    x = RNG.random(6)
    v = RNG.standard_normal(6)
    close(capstan.hvp(f, x, v, mode=mode), capstan.hessian(f, x) @ v)


def test_check_compares_with_dense():
    x = RNG.random(30)
    assert capstan.prepare_sparse_jacobian(bratu, x).check() < 1e-6
    assert capstan.prepare_sparse_hessian(arwhead, x).check(RNG.random(30)) < 1e-9
    wrong = capstan.prepare_sparse_jacobian(bratu, x, sparsity=sp.eye_array(30))
    with pytest.raises(ValueError, match="outside the pattern"):
        wrong.check()


# ----------------------------------------------------------------------------- hvp
@pytest.mark.parametrize("mode", ["rev_over_fwd", "fwd_over_rev"])
def test_hvp_matches_the_dense_hessian(mode):
    x, v = RNG.random(50), RNG.standard_normal(50)
    close(capstan.hvp(scipy.optimize.rosen, x, v, mode=mode), scipy.optimize.rosen_hess(x) @ v)
    close(capstan.hvp(arwhead, x, v, mode=mode), arwhead_hessian(x) @ v)
    t = 1.2  # (t^3 sin t)'' = 6t sin t + 6t^2 cos t - t^3 sin t
    second = 6 * t * math.sin(t) + 6 * t ** 2 * math.cos(t) - t ** 3 * math.sin(t)
    assert np.isclose(capstan.hvp(lambda s: s ** 3 * math.sin(s), t, 2.0, mode=mode), 2.0 * second)
    g = capstan.hvp(rosen_loop, x[:10], v[:10], mode=mode)
    close(g, scipy.optimize.rosen_hess(x[:10]) @ v[:10])


# ----------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("fn", [capstan.jacobian_sparsity, capstan.hessian_sparsity, capstan.sparse_jacobian,
                                capstan.sparse_hessian, capstan.prepare_sparse_jacobian,
                                capstan.prepare_sparse_hessian])
def test_bad_input_names_the_entry_point(fn):
    name = fn.__name__
    with pytest.raises(TypeError, match=name):
        fn(3.0, np.ones(3))
    with pytest.raises(TypeError, match=name):
        fn(np.sum, "abc")
    with pytest.raises(TypeError, match=name):
        fn(np.sum, np.ones(3, dtype=complex))
    if "hessian" in name:
        with pytest.raises(ValueError, match=name):
            fn(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(TypeError, match=name):
        fn(lambda x: "text", np.ones(3))
    if name.startswith(("sparse", "prepare")):
        with pytest.raises(ValueError, match=name):
            fn(np.sum, np.ones(3), sparsity=np.ones((5, 5)))
        with pytest.raises(ValueError, match=name):
            fn(np.sum, np.ones(3), coloring="rainbow")


def test_other_refusals():
    prep = capstan.prepare_sparse_jacobian(bratu, np.ones(5))
    with pytest.raises(ValueError, match="shape"):
        prep(np.ones(6))
    with pytest.raises(ValueError, match="on_mismatch"):
        capstan.prepare_sparse_hessian(np.sum, np.ones(3), on_mismatch="ignore")
    with pytest.raises(ValueError, match="hvp"):
        capstan.prepare_sparse_hessian(np.sum, np.ones(3), hvp="sideways")
    with pytest.raises(ValueError, match="capstan.coloring"):
        capstan.coloring(np.eye(3), kind="rainbow")
    with pytest.raises(ValueError, match="square"):
        capstan.coloring(np.ones((2, 3)), kind="star")
    with pytest.raises(TypeError, match="capstan.coloring"):
        capstan.coloring("pattern")
    with pytest.raises(ValueError, match="capstan.hvp"):
        capstan.hvp(np.sum, np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="capstan.hvp"):
        capstan.hvp(np.sum, np.ones(3), np.ones(3), mode="sideways")
    with pytest.raises(TypeError, match="capstan.hvp"):
        capstan.hvp(None, np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="hvp"):
        capstan.hvp(lambda x: x * 2.0, np.ones(3), np.ones(3))
    # a ufunc made by np.frompyfunc inside is differentiated as an elementwise kernel (mixed
    # mode): its pattern is found, never too sparse
    pattern = capstan.jacobian_sparsity(lambda x: np.array([float(np.frompyfunc(float, 1, 1)(x[0]))]),
                                        np.ones(2))
    assert pattern.toarray().tolist() == [[True, False]]


# ----------------------------------------------------------------------------- pictures, docstrings
def test_spy_writes_a_picture(tmp_path):
    prep = capstan.prepare_sparse_hessian(arwhead, np.ones(30))
    svg = tmp_path / "arrow.svg"
    assert prep.spy(svg) == str(svg)
    text = svg.read_text()
    assert text.startswith("<svg") and "30 x 30, 88 nonzeros" in text
    try:
        import matplotlib  # noqa: F401
        has_matplotlib = True
    except ImportError:
        has_matplotlib = False
    png = tmp_path / "arrow.png"
    if has_matplotlib:
        capstan.sparse.spy(prep.pattern, png)
        assert png.read_bytes()[:4] == b"\x89PNG"
    else:
        with pytest.raises(ImportError, match="matplotlib"):
            capstan.sparse.spy(prep.pattern, png)
    with pytest.raises(ValueError, match="png or .svg"):
        capstan.sparse.spy(prep.pattern, tmp_path / "arrow.gif")


@pytest.mark.parametrize("fn", [capstan.jacobian_sparsity, capstan.hessian_sparsity, capstan.sparse_jacobian,
                                capstan.sparse_hessian, capstan.prepare_sparse_jacobian,
                                capstan.prepare_sparse_hessian, capstan.coloring, capstan.hvp],
                         ids=lambda f: f.__name__)
def test_docstring_examples_run(fn):
    doc = fn.__doc__ or ""
    assert "Raises:" in doc
    tests = doctest.DocTestFinder(recurse=False).find(fn, fn.__name__, globs={})
    assert [ex for t in tests for ex in t.examples]
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0


# ----------------------------------------------------------------------------- edge pushing
def _every_scalar_step(x):
    s = x[0] * x[0] + x[1] / x[2] + math.exp(x[3] * x[0]) + x[4] ** x[1] - x[5] ** 3
    s += math.sin(x[2]) * math.sqrt(x[3]) + math.tanh(x[1]) * math.log(x[4]) + math.atan(x[5] * x[5])
    s += (x[0] - x[1]) ** 2 / x[3] - math.cos(x[2] * x[5]) + math.log1p(x[0]) * math.expm1(x[1])
    if x[2] > 0.1:  # (a decision: a guard on the tape, no derivative)
        s += math.sinh(x[4]) * math.cosh(x[5]) + math.tan(0.3 * x[1]) * -x[3]
    return s


@pytest.mark.parametrize("f, n", [(rosen_loop, 40), (arwhead_loop, 40), (_every_scalar_step, 6)])
def test_edge_pushing_is_exact_against_dense(f, n):
    x = list(RNG.random(n) + 0.5)
    H = capstan.sparse_hessian(f, x, method="edge_pushing")
    dense_H = capstan.hessian(lambda z: f(z), np.array(x))
    close(H, dense_H)
    assert (H != H.T).nnz == 0
    assert ((dense_H != 0) & (dense(H) == 0)).sum() == 0  # (every nonzero is an entry)


def test_edge_pushing_structure_of_the_arrowhead():
    x = list(RNG.random(30) + 0.5)
    H = capstan.sparse_hessian(arwhead_loop, x, method="edge_pushing")
    expected = np.eye(30, dtype=bool)
    expected[-1, :] = expected[:, -1] = True
    np.testing.assert_array_equal(dense(H) != 0, expected)
    close(H, arwhead_hessian(np.array(x)))


def test_edge_pushing_refusals_and_what_is_not_refused():
    # (arrays read element by element and functions with a rule but no written-out second
    # derivative (erf: capstan's own Hessian of that one step) are not refused)
    close(capstan.sparse_hessian(rosen_loop, np.ones(4) * 0.7, method="edge_pushing"),
          capstan.hessian(rosen_loop, np.ones(4) * 0.7))
    erf = lambda z: math.erf(z[0] * z[1])  # noqa: E731
    close(capstan.sparse_hessian(erf, [1.0, 2.0], method="edge_pushing"), capstan.hessian(erf, np.array([1.0, 2.0])))
    with pytest.raises(ValueError, match="method='coloring'"):
        capstan.sparse_hessian(lambda z: float(np.sum(np.array(z) ** 2)) + z[0] * z[1],
                               [1.0, 2.0], method="edge_pushing")
    with pytest.raises(ValueError, match="method must be"):
        capstan.sparse_hessian(rosen_loop, [1.0, 2.0], method="tapes")

# ----------------------------------------------------------------------------- index-set kernels
def _random_rows(rng, m, n, width=None):
    from capstan import sparsity as S

    sets = [sorted(set(rng.integers(0, n, width if width is not None else rng.integers(0, 4)).tolist()))
            for _ in range(m)]
    if width is not None:
        sets = [sorted((n - 1 - rng.choice(min(n, 50), width, replace=False)).tolist()) for _ in range(m)]
    indptr = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
    return S.Rows(indptr, np.array([i for s in sets for i in s], dtype=np.int64), n), sets


@pytest.mark.parametrize("width", [None, 0, 1, 3])
def test_index_set_kernels_against_python_sets(width):
    # (gather's path for sets of one size, union and scatter's keys as row << 32 | column,
    # and the keys kept on a Rows object, checked against plain Python sets)
    from capstan import sparsity as S

    rng = np.random.default_rng(width or 7)
    for _ in range(20):
        m, n = int(rng.integers(1, 30)), int(rng.integers(3, 50))
        if width == 1:  # (columns up to the largest that detection handles: 2**32 - 1)
            n = 2 ** 32 - int(rng.integers(0, 3))
        A, a = _random_rows(rng, m, n, width)
        B, b = _random_rows(rng, m, A.n)
        idx = rng.integers(-1 if width is None else 0, m, int(rng.integers(0, 40)))

        def as_sets(R):
            return [R.indices[R.indptr[r]:R.indptr[r + 1]].tolist() for r in range(R.m)]

        assert as_sets(S.gather(A, idx)) == [a[i] if i >= 0 else [] for i in idx]
        assert as_sets(S.union([A, B])) == [sorted(set(x) | set(y)) for x, y in zip(a, b)]
        assert as_sets(S.union([A, B, A])) == [sorted(set(x) | set(y)) for x, y in zip(a, b)]
        dst = rng.integers(0, 5, m)
        expect = [sorted(set().union(*[a[k] for k in range(m) if dst[k] == r])) for r in range(5)]
        assert as_sets(S.scatter(A, np.arange(m), dst, 5)) == expect
