"""sparse_hessian(..., method="edge_pushing"): exact against dense capstan.hessian and
closed forms, the structural pattern equal to hessian_sparsity's, and clear refusals."""
import math
import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings

import capstan
from scalar_programs import straight_line

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
from sparse_problems import arwhead_hessian, rosen_loop  # noqa: E402

RNG = np.random.default_rng(5)


def arwhead_loop(x):
    """ARWHEAD as a Python loop (arrowhead Hessian)."""
    s = 0.0
    last = x[len(x) - 1]
    for i in range(len(x) - 1):
        s += (x[i] ** 2 + last ** 2) ** 2 - 4.0 * x[i] + 3.0
    return s


def many_ops(x):
    """Every operator and math function of the local table, plus some that are not in it
    (lgamma, hypot, atan2, abs, log with a base, a keyword argument) and reads of one
    element twice (x * x, x ** x)."""
    a, b, c, d = x[0], x[1], x[2], x[3]
    t = a * a + math.log(b) * math.sqrt(c) - d / b + c ** d + math.tanh(a * d) - (-a) + (+b)
    t += math.sin(a) * math.cos(b) + math.tan(c / 3.0) + math.exp(d) * math.expm1(a)
    t += math.log1p(c) * math.sinh(d) + math.cosh(a) * math.atan(b) + a ** a + pow(b, 3)
    t += math.lgamma(b + c) + math.hypot(a, d) + math.atan2(c, a) + abs(d - 2.0) * b
    t += math.log(c, 2.0) * a + np.sin(b) * np.exp(c) + float(np.power(d, 2.5)) / a
    return t * math.atan(b) + round(2.0 * a) * c


def close(H, reference):
    reference = reference.toarray() if sp.issparse(reference) else np.asarray(reference)
    scale = max(np.abs(reference).max(), 1.0)
    np.testing.assert_allclose(H.toarray(), reference, rtol=1e-11, atol=1e-12 * scale)


@pytest.mark.parametrize("f,n", [(rosen_loop, 40), (arwhead_loop, 30), (many_ops, 4)])
def test_exact_against_dense_and_pattern_is_the_detected_one(f, n):
    x = RNG.uniform(0.4, 1.6, n)
    H = capstan.sparse_hessian(f, x, method="edge_pushing")
    assert isinstance(H, sp.csr_array) and H.shape == (n, n)
    close(H, capstan.hessian(f, x))
    P = capstan.hessian_sparsity(f, x)
    assert (H.astype(bool) != P).nnz == 0  # structural: the same entries, zeros included
    close(H, capstan.sparse_hessian(f, x))  # the colouring method agrees


def test_arrowhead_matches_its_closed_form_at_1000():
    x = RNG.uniform(-1.0, 1.0, 1000)
    H = capstan.sparse_hessian(arwhead_loop, x, method="edge_pushing")
    close(H, arwhead_hessian(x))
    assert H.nnz == 3 * 1000 - 2


def test_symmetric_and_structural_zeros_kept():
    # x[1] * x[2] has second derivative 1 in (1, 2) even where x[1] * x[2] is 0
    f = lambda x: x[0] ** 2 + x[1] * x[2] * x[0]  # noqa: E731
    H = capstan.sparse_hessian(f, np.array([0.0, 0.0, 0.0]), method="edge_pushing")
    assert (H != H.T).nnz == 0
    assert H.nnz == capstan.hessian_sparsity(f, np.zeros(3)).nnz == 7
    np.testing.assert_array_equal(H.toarray(), [[2.0, 0, 0], [0, 0, 0], [0, 0, 0]])


@settings(max_examples=40, deadline=None)
@given(straight_line())
def test_random_programs_against_dense(case):
    prog, xs, src = case
    x = np.array(xs, dtype=float)
    f = lambda v: prog(*(v[i] for i in range(len(xs))))  # noqa: E731
    close(capstan.sparse_hessian(f, x, method="edge_pushing"), capstan.hessian(f, x))


def test_list_scalar_and_two_dimensional_inputs():
    x = [0.3, 1.2, 0.7]
    f = lambda v: v[0] * v[1] ** 2 + math.sin(v[2] * v[0])  # noqa: E731
    close(capstan.sparse_hessian(f, x, method="edge_pushing"), capstan.hessian(f, np.array(x)))
    H = capstan.sparse_hessian(lambda t: t ** 3 * math.exp(t), 0.5, method="edge_pushing")
    assert H.shape == (1, 1)
    assert math.isclose(H.toarray()[0, 0], (6 * 0.5 + 6 * 0.25 + 0.125) * math.exp(0.5), rel_tol=1e-13)
    X = RNG.uniform(0.5, 1.5, (3, 2))
    g = lambda m: m[0, 1] * m[2, 0] ** 2 + m[1, 1] / m[-1, -1]  # noqa: E731
    close(capstan.sparse_hessian(g, X, method="edge_pushing"), capstan.hessian(g, X).reshape(6, 6))


def test_constant_and_linear_functions_give_empty_hessians():
    x = np.ones(4)
    assert capstan.sparse_hessian(lambda v: 3.0, x, method="edge_pushing").nnz == 0
    assert capstan.sparse_hessian(lambda v: 2.0 * v[0] - v[3], x, method="edge_pushing").nnz == 0


def test_given_sparsity_is_the_result_pattern_and_is_checked():
    x = RNG.uniform(0.5, 1.5, 6)
    P = capstan.hessian_sparsity(rosen_loop, x)
    wider = (P + sp.eye_array(6, k=3, dtype=bool)).astype(bool)
    H = capstan.sparse_hessian(rosen_loop, x, sparsity=wider, method="edge_pushing")
    assert H.nnz == sp.csr_array(wider + wider.T).nnz  # the given structure, zeros kept
    close(H, capstan.hessian(rosen_loop, x))
    with pytest.raises(ValueError, match="sparse_hessian: the sparsity given misses a nonzero"):
        capstan.sparse_hessian(rosen_loop, x, sparsity=sp.eye_array(6, dtype=bool), method="edge_pushing")


def test_refusals_name_the_entry_point_and_the_fix():
    x = np.ones(5)
    with pytest.raises(ValueError, match=r"method='edge_pushing'\) needs a scalar tape.*calls pow on whole arrays.*method='coloring'"):
        capstan.sparse_hessian(lambda v: np.sum(v ** 2), x, method="edge_pushing")
    with pytest.raises(ValueError, match=r"needs a scalar tape.*calls dot with an array"):
        capstan.sparse_hessian(lambda v: v[0] * np.dot(v, v), x, method="edge_pushing")
    with pytest.raises(ValueError, match="sparse_hessian: method must be 'coloring' or 'edge_pushing'"):
        capstan.sparse_hessian(rosen_loop, x, method="edges")
    with pytest.raises(ValueError, match="sparse_hessian: f must return a real scalar"):
        capstan.sparse_hessian(lambda v: v, x, method="edge_pushing")
    with pytest.raises(TypeError, match=r"sparse_hessian\(f, x\): f must be callable"):
        capstan.sparse_hessian(3, x, method="edge_pushing")
    with pytest.raises(TypeError, match="sparse_hessian"):
        capstan.sparse_hessian(rosen_loop, "abc", method="edge_pushing")


def test_a_function_without_a_rule_is_a_no_rule_error():
    import ctypes

    libm = ctypes.CDLL(None)
    libm.cbrt.restype, libm.cbrt.argtypes = ctypes.c_double, [ctypes.c_double]
    with pytest.raises(capstan.NoRuleError):
        capstan.sparse_hessian(lambda v: libm.cbrt(v[0]) * v[1], np.ones(2), method="edge_pushing")
