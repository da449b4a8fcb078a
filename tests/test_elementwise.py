"""Mixed mode: capstan.elementwise, and np.vectorize / np.frompyfunc on differentiated
values (capstan/mixed.py).  References: np.vectorize for values, the per-element scalar
derivative (capstan.gradient / capstan.hessian of the kernel at each element) and central
finite differences."""
import math
import sys

import numpy as np
import pytest

import capstan
from capstan import mixed


# ----------------------------------------------------------------------------- kernels
def sigmoid_branch(t):
    s = 1.0 / (1.0 + math.exp(-t))
    y = t * s
    if t * t < 1.0:
        return 0.5 * y * y
    return y - 0.5


def kinks(t, u):
    return max(t, u) + abs(t) * u + min(t, 0.25) + math.fabs(u - t)


def halving(t):
    """A data-dependent loop: one control path per number of halvings."""
    n = 0
    while t > 1.0:
        t = t / 2.0
        n += 1
    return t * t + n


def math_calls(t, c):
    return (math.sin(t) * math.cos(c * t) + math.tan(t / 4.0) + math.exp(-t * t)
            + math.log(2.0 + t * t) + math.log(3.0 + t * t, 2) + math.sqrt(1.0 + t * t)
            + math.atan2(t, c) + math.hypot(t, c) + math.pow(c, t) + math.erf(t)
            + math.expm1(t / 3.0) + math.log1p(t * t) + math.tanh(t) + math.copysign(t, c)
            + math.atan(t) + math.asinh(t) + math.cosh(t / 3.0))


def truthy(t):
    # (a truth test that finds a differentiated value 0 is refused as x != 0 is: the test is
    # on t + 0.25, which no point makes 0)
    return t * t if t + 0.25 else 1.0


KERNELS_1 = [sigmoid_branch, halving, truthy, lambda t: math_calls(t, 1.5)]


def points(n=23, seed=0):
    x = np.random.default_rng(seed).normal(0.0, 1.5, n)
    x[:3] = [0.0, 1.0, -1.0]  # (branch edges: t * t < 1.0, truthiness, max/min ties)
    return x


def fd(f, x, h=1e-6):
    """Central differences (Richardson-extrapolated) of a scalar function of an array."""
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = 1.0
        d1 = (f(x + h * e) - f(x - h * e)) / (2 * h)
        d2 = (f(x + 2 * h * e) - f(x - 2 * h * e)) / (4 * h)
        g.flat[i] = (4 * d1 - d2) / 3
    return g


def scalar_gradients(kernel, *columns):
    """The per-element reference: capstan.gradient of the kernel at each element."""
    out = [[] for _ in columns]
    for elems in zip(*columns):
        for o, g in zip(out, capstan.gradient(kernel, *map(float, elems))):
            o.append(0.0 if g is None else g)
    return [np.array(o) for o in out]


# ----------------------------------------------------------------------------- plain values
@pytest.mark.parametrize("kernel", KERNELS_1)
def test_plain_values_match_np_vectorize(kernel):
    x = points()
    k = capstan.elementwise(kernel)
    got = k(x)
    assert got.dtype == np.float64 and got.shape == x.shape
    np.testing.assert_allclose(got, np.vectorize(kernel, otypes=[float])(x), rtol=1e-14, atol=1e-15)
    grid = x.reshape(1, -1)[:, :20].reshape(4, 5)
    np.testing.assert_allclose(k(grid), np.vectorize(kernel, otypes=[float])(grid), rtol=1e-14, atol=1e-15)


def test_plain_broadcasting_scalars_and_integers():
    k = capstan.elementwise(kinks)
    a, b = np.linspace(-2, 2, 3).reshape(3, 1), np.array([-1.0, 0.25, 2.0, 3.0])
    np.testing.assert_array_equal(k(a, b), np.vectorize(kinks)(a, b))
    np.testing.assert_array_equal(k(a, 2.0), np.vectorize(kinks)(a, 2.0))
    out = k(0.5, 2.0)
    assert out.shape == () and out == kinks(0.5, 2.0)
    ints = np.arange(-3, 4)
    res = k(ints, 2)
    assert res.dtype == np.float64
    np.testing.assert_array_equal(res, np.vectorize(kinks)(ints, 2).astype(float))


def test_integer_arguments_reach_the_kernel_as_ints_where_it_needs_them():
    def powers(t, n):
        return sum(t ** i for i in range(n))  # range(n) needs an int: runs element by element

    k = capstan.elementwise(powers)
    x, n = np.array([0.5, 2.0, -1.5]), np.array([1, 2, 3])
    np.testing.assert_allclose(k(x, n), [powers(*e) for e in zip(x.tolist(), n.tolist())])
    g = capstan.gradient(lambda x: np.sum(k(x, n)), x)[0]
    np.testing.assert_allclose(g, [0.0, 1.0, 1.0 + 2 * -1.5])


# ----------------------------------------------------------------------------- derivatives
@pytest.mark.parametrize("kernel", KERNELS_1)
def test_gradient_matches_per_element_gradients_and_finite_differences(kernel):
    x = points()
    k = capstan.elementwise(kernel)
    g = capstan.gradient(lambda v: np.sum(k(v)), x)[0]
    np.testing.assert_allclose(g, scalar_gradients(kernel, x)[0], rtol=1e-13, atol=1e-14)
    smooth = x[3:]  # (away from the branch edges)
    np.testing.assert_allclose(capstan.gradient(lambda v: np.sum(k(v)), smooth)[0],
                               fd(lambda v: np.sum(np.vectorize(kernel)(v)), smooth), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kernel", KERNELS_1)
def test_forward_mode_matches_per_element_gradients(kernel):
    x = points(9)
    k = capstan.elementwise(kernel)
    ref = scalar_gradients(kernel, x)[0]
    _, t = capstan.jvp(k, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(t, ref, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(capstan.jacobian(k, x), np.diag(ref), rtol=1e-13, atol=1e-14)
    at = scalar_gradients(kernel, [0.7])[0][0]
    assert capstan.D(lambda s: float(k(s)), 0.7) == pytest.approx(at, rel=1e-13)


def test_several_arguments_broadcasting_both_modes():
    a = np.linspace(-2.0, 2.0, 6).reshape(3, 2)[:, :1] + 0.1  # (3, 1)
    b = np.array([-1.0, 0.2, 1.7, 3.0])  # (4,)
    k = capstan.elementwise(kinks)
    ga, gb = capstan.gradient(lambda a, b: np.sum(k(a, b) * np.arange(12.0).reshape(3, 4)), a, b)
    A, B = np.broadcast_arrays(a, b)
    pa, pb = scalar_gradients(kinks, A.ravel(), B.ravel())
    w = np.arange(12.0)
    np.testing.assert_allclose(ga, (w * pa).reshape(3, 4).sum(axis=1, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(gb, (w * pb).reshape(3, 4).sum(axis=0), rtol=1e-13)
    gs = capstan.gradient(lambda c: np.sum(k(b, c)), 0.6)[0]
    assert type(gs) is float
    assert gs == pytest.approx(sum(scalar_gradients(kinks, b, [0.6] * 4)[1]), rel=1e-13)
    ta = np.ones_like(a)
    _, t = capstan.jvp(lambda a: k(a, b), (a,), (ta,))
    np.testing.assert_allclose(t, pa.reshape(3, 4), rtol=1e-13)


def test_many_paths_fall_back_to_element_by_element():
    x = np.concatenate([2.0 ** np.arange(0.5, 30.5), [0.3, -2.0]])  # 30 loop counts > MAX_PATHS
    k = capstan.elementwise(halving)
    np.testing.assert_allclose(k(x), np.vectorize(halving)(x), rtol=1e-15)
    g = capstan.gradient(lambda v: np.sum(k(v)), x)[0]
    np.testing.assert_allclose(g, scalar_gradients(halving, x)[0], rtol=1e-13)
    assert sum(len(p) for p in k.paths.values()) == mixed.MAX_PATHS
    plan = mixed._plan(k, {}, (x,))
    assert any(path is None for path, _ in plan.groups)


def test_paths_are_recorded_once_and_replayed():
    k = capstan.elementwise(sigmoid_branch)
    x = points(200)
    for _ in range(3):
        capstan.gradient(lambda v: np.sum(k(v)), x)
    (paths,) = k.paths.values()
    assert len(paths) == 2  # t * t < 1.0 true and false: every element replayed, none alone
    assert all(path is not None for path, _ in mixed._plan(k, {}, (x,)).groups)


def test_non_finite_elements_run_the_kernel_itself():
    k = capstan.elementwise(lambda t: math.sqrt(t) if t >= 0.0 else 0.0)
    x = np.array([4.0, 0.0, -1.0, np.inf])
    np.testing.assert_array_equal(k(x), [2.0, 0.0, 0.0, np.inf])
    g = capstan.gradient(lambda v: np.sum(k(v)), x)[0]
    np.testing.assert_array_equal(g, [0.25, np.inf, 0.0, 0.0])
    with pytest.raises(ValueError, match="math domain error"):
        capstan.elementwise(math.sqrt)(np.array([1.0, -1.0]))  # as np.vectorize(math.sqrt) raises
    with pytest.raises(OverflowError):
        capstan.gradient(lambda v: np.sum(capstan.elementwise(math.exp)(v)), np.array([1.0, 1e3]))


# ----------------------------------------------------------------------------- nesting
def test_hessian_through_a_kernel():
    x = points(8)
    k = capstan.elementwise(sigmoid_branch)
    H = capstan.hessian(lambda v: np.sum(k(v)), x)
    np.testing.assert_allclose(H, np.diag([capstan.hessian(sigmoid_branch, float(t)) for t in x]),
                               rtol=1e-12, atol=1e-14)


def test_hessian_with_cross_terms_and_fallback_elements():
    def mix(t, u):
        return t * math.sin(u) + t * t * u + halving(abs(t) * 40.0)

    k = capstan.elementwise(mix)

    def f(v):
        return np.sum(k(v[:4], v[4:]) ** 2)

    def f_loop(v):
        return sum(mix(v[i], v[4 + i]) ** 2 for i in range(4))

    v = np.array([0.3, -1.1, 0.7, 2.2, 0.5, 1.3, -0.4, 0.9])
    H = capstan.hessian(f, v)
    np.testing.assert_allclose(H, capstan.hessian(f_loop, v), rtol=1e-12, atol=1e-12)
    rows = np.array([fd(lambda w, i=i: capstan.gradient(f, w)[0][i], v) for i in range(8)])
    np.testing.assert_allclose(H, rows, rtol=1e-5, atol=1e-6)
    tv = np.linspace(-1, 1, 8)
    _, hv = capstan.jvp(lambda w: capstan.gradient(f, w)[0], (v,), (tv,))
    np.testing.assert_allclose(hv, H @ tv, rtol=1e-12, atol=1e-12)


def test_gradient_of_forward_mode_through_a_kernel():
    x = points(6)
    k = capstan.elementwise(sigmoid_branch)
    t = np.linspace(0.5, 1.5, 6)
    g = capstan.gradient(lambda v: np.sum(capstan.jvp(lambda w: k(w), (v,), (t,))[1]), x)[0]
    second = np.array([capstan.hessian(sigmoid_branch, float(e)) for e in x])
    np.testing.assert_allclose(g, second * t, rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------- purity
SCALE = 2.0


def test_closure_over_a_differentiated_value_is_refused():
    def f(x):
        s = np.sum(x)
        return np.sum(capstan.elementwise(lambda t: t * s)(x))

    with pytest.raises(TypeError, match=r"kernel .*<lambda>.* reads the closure variable 's'"):
        capstan.gradient(f, np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="closure variable 's'"):
        capstan.jvp(f, (np.array([1.0, 2.0]),), (np.ones(2),))

    def g(x):
        s = np.sum(x)
        return np.sum(capstan.elementwise(lambda t, s=s: t * s)(x))

    with pytest.raises(TypeError, match="default argument"):
        capstan.gradient(g, np.array([1.0, 2.0]))

    def h(x):
        s = np.sum(x)
        return np.sum(np.vectorize(lambda t: t * s)(x))

    with pytest.raises(TypeError, match="closure variable 's'"):
        capstan.gradient(h, np.array([1.0, 2.0]))


def test_global_holding_a_differentiated_value_is_refused():
    def kernel(t):
        return t * SCALE

    def f(x):
        global SCALE
        SCALE = x[0]
        try:
            return np.sum(capstan.elementwise(kernel)(x))
        finally:
            SCALE = 2.0

    with pytest.raises(TypeError, match="kernel .*kernel reads the global 'SCALE'"):
        capstan.gradient(f, np.array([1.0, 2.0]))
    # plain closures, defaults and globals are constants: fine
    c = 3.0
    np.testing.assert_array_equal(
        capstan.gradient(lambda x: np.sum(capstan.elementwise(lambda t: t * c * SCALE)(x)), np.ones(2))[0],
        [6.0, 6.0])


def test_passing_the_value_as_an_argument_differentiates_it():
    def f(x):
        s = np.sum(x)
        return np.sum(capstan.elementwise(lambda t, s: t * s)(x, s))

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(capstan.gradient(f, x)[0], fd(f, x), rtol=1e-8)


# ----------------------------------------------------------------------------- np.vectorize, np.frompyfunc
def test_np_vectorize_under_differentiation():
    x = points(12)
    vk = np.vectorize(sigmoid_branch)
    ref = scalar_gradients(sigmoid_branch, x)[0]
    np.testing.assert_allclose(capstan.gradient(lambda v: np.sum(vk(v)), x)[0], ref, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(capstan.jvp(vk, (x,), (np.ones_like(x),))[1], ref, rtol=1e-13, atol=1e-14)
    H = capstan.hessian(lambda v: np.sum(np.vectorize(sigmoid_branch)(v)), x[:5])
    np.testing.assert_allclose(np.diag(H), [capstan.hessian(sigmoid_branch, float(t)) for t in x[:5]],
                               rtol=1e-12, atol=1e-14)
    plain = vk(np.array([1.0, 2.0]))  # (outside differentiation: NumPy's own)
    np.testing.assert_array_equal(plain, np.array([sigmoid_branch(1.0), sigmoid_branch(2.0)]))


def test_np_vectorize_options():
    x = np.array([0.5, -1.5, 2.0])
    powk = np.vectorize(lambda t, n: t ** n, excluded={1})
    np.testing.assert_allclose(capstan.gradient(lambda v: np.sum(powk(v, 3)), x)[0], 3 * x ** 2)
    f32 = np.vectorize(lambda t: t * t, otypes=[np.float32])
    y, t = capstan.jvp(f32, (x,), (np.ones(3),))
    assert y.dtype == np.float32
    np.testing.assert_allclose(t, 2 * x)
    np.testing.assert_allclose(  # (signature=: NumPy's own loop, routed)
        capstan.gradient(lambda v: np.sum(np.vectorize(lambda t: t * t, signature="()->()")(v)), x)[0], 2 * x)
    with pytest.raises(TypeError, match="otypes"):
        capstan.gradient(lambda v: np.sum(np.vectorize(lambda t: t, otypes=[int])(v)), x)
    with pytest.raises(TypeError, match="positionally"):
        capstan.gradient(lambda v: np.sum(np.vectorize(lambda t, c: t * c)(v, c=np.ones(3))), x)
    np.testing.assert_allclose(  # (several results: the kernel run element by element, routed)
        capstan.gradient(lambda v: np.sum(np.vectorize(lambda t: (t, t * t))(v)[1]), x)[0], 2 * x)
    scaled = np.vectorize(lambda t, c=1.0: t * c)
    np.testing.assert_allclose(capstan.gradient(lambda v: np.sum(scaled(v, c=2.0)), x)[0], [2.0] * 3)


def test_np_frompyfunc_under_differentiation():
    x = points(7)
    f = lambda v: np.frompyfunc(sigmoid_branch, 1, 1)(v).astype(float)  # noqa: E731
    ref = scalar_gradients(sigmoid_branch, x)[0]
    np.testing.assert_allclose(capstan.gradient(lambda v: np.sum(f(v)), x)[0], ref, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(capstan.jvp(f, (x,), (np.ones_like(x),))[1], ref, rtol=1e-13, atol=1e-14)
    made_outside = np.frompyfunc(sigmoid_branch, 1, 1)
    with pytest.raises(capstan.NoRuleError, match="np.frompyfunc outside"):
        capstan.gradient(lambda v: np.sum(made_outside(v).astype(float)), x)
    assert made_outside(np.array([1.0])).dtype == object  # (unchanged outside)


# ----------------------------------------------------------------------------- errors and forms
def test_decorator_and_excluded_forms():
    @capstan.elementwise
    def soft(t, beta):
        return math.log1p(math.exp(beta * t)) / beta if beta * t < 30.0 else t

    assert repr(soft).startswith("capstan.elementwise(") and soft.__name__ == "soft"
    g = capstan.gradient(lambda x: np.sum(soft(x, 2.0)), np.array([0.0, 20.0]))[0]
    np.testing.assert_allclose(g, [0.5, 1.0])

    @capstan.elementwise(excluded={1})
    def table(t, coefs):
        return sum(c * t ** i for i, c in enumerate(coefs))

    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(table(x, [1.0, 2.0, 3.0]), 1 + 2 * x + 3 * x ** 2)
    np.testing.assert_allclose(capstan.gradient(lambda v: np.sum(table(v, [1.0, 2.0, 3.0])), x)[0], 2 + 6 * x)
    with pytest.raises(TypeError, match="excluded"):
        capstan.gradient(lambda v: np.sum(table(v[:1], [v[1], 1.0])), x)


def test_bad_kernels_and_arguments():
    with pytest.raises(TypeError, match="callable"):
        capstan.elementwise(3.0)
    with pytest.raises(TypeError, match="one real number"):
        capstan.elementwise(lambda t: (t, t))(np.ones(2))
    with pytest.raises(TypeError, match="real numbers"):
        capstan.elementwise(lambda t: t)(np.array(["a"]))
    with pytest.raises(TypeError, match="real numbers"):
        capstan.elementwise(lambda t: t)(np.array([1j]))
    with pytest.raises(ValueError):
        capstan.elementwise(lambda a, b: a + b)(np.ones(2), np.ones(3))


@pytest.mark.skipif(sys.version_info < (3, 11), reason="math.cbrt is new in 3.11")
def test_recent_math_functions_replay():
    k = capstan.elementwise(lambda t: math.cbrt(t) + math.exp2(t))
    x = np.array([0.5, 2.0, 8.0])
    np.testing.assert_allclose(capstan.gradient(lambda v: np.sum(k(v)), x)[0],
                               scalar_gradients(lambda t: math.cbrt(t) + math.exp2(t), x)[0], rtol=1e-13)
    assert all(path is not None for path, _ in mixed._plan(k, {}, (x,)).groups)


def test_numpy_functions_on_scalars_and_other_arities():
    def with_numpy(t):
        return np.exp(-t * t) + np.maximum(t, 0.0) + np.abs(t) + math.hypot(t, 1.0, 2.0)

    k = capstan.elementwise(with_numpy)
    x = points(9)
    np.testing.assert_allclose(k(x), np.vectorize(with_numpy)(x), rtol=1e-14)
    np.testing.assert_allclose(capstan.gradient(lambda v: np.sum(k(v)), x)[0],
                               scalar_gradients(with_numpy, x)[0], rtol=1e-13, atol=1e-14)
    replayed = capstan.elementwise(lambda t: np.exp(-t * t) + np.maximum(t, 0.0) + np.abs(t))
    assert all(path is not None for path, _ in mixed._plan(replayed, {}, (x,)).groups)

    def rounded(t):
        return t * round(t, 1) + t * round(t)

    x = np.array([0.14, 0.15, 0.25, 2.5, 3.5, -1.45])
    np.testing.assert_allclose(capstan.elementwise(rounded)(x), np.vectorize(rounded)(x), rtol=1e-15)
    np.testing.assert_allclose(capstan.gradient(lambda v: np.sum(capstan.elementwise(rounded)(v)), x)[0],
                               scalar_gradients(rounded, x)[0], rtol=1e-15)


def test_kernel_must_return_one_real_number():
    with pytest.raises(TypeError, match="one real number"):
        capstan.elementwise(lambda t: t > 0)(np.array([1.0, -1.0]))
    with pytest.raises(TypeError, match="one real number"):
        capstan.elementwise(lambda t: t ** 0.5)(np.array([1.0, -1.0]))  # (complex for -1.0)


def test_paths_follow_what_the_kernel_reads_besides_its_arguments():
    """A recorded path holds the kernel's globals and closure values as constants: when
    they change, the paths are recorded again (never stale values)."""
    global SCALE
    k = capstan.elementwise(lambda t: t * SCALE if t > 0 else -t)
    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(k(x), [2.0, 2.0, 6.0])
    try:
        SCALE = 5.0
        np.testing.assert_array_equal(k(x), [5.0, 2.0, 15.0])
        np.testing.assert_array_equal(capstan.gradient(lambda v: np.sum(k(v)), x)[0], [5.0, -1.0, 5.0])
    finally:
        SCALE = 2.0
    table = [1.0, 2.0]
    k = capstan.elementwise(lambda t: t * table[0] + table[1])
    np.testing.assert_array_equal(k(x), x + 2.0)
    table[1] = 7.0  # (a list changed in place)
    np.testing.assert_array_equal(k(x), x + 7.0)
    arr = np.array([1.0])
    k = capstan.elementwise(lambda t: t * arr[0])
    np.testing.assert_array_equal(k(x), x)
    arr[0] = 3.0
    np.testing.assert_array_equal(k(x), 3 * x)


def test_np_vectorize_of_a_lambda_made_on_each_call_reuses_its_paths():
    def f(v, c):
        return np.sum(np.vectorize(lambda t: t * c if t > 0 else t * t)(v))

    x = np.array([1.0, -2.0, 3.0])
    for c in (2.0, 2.0, 3.0):
        np.testing.assert_array_equal(capstan.gradient(lambda v: f(v, c), x)[0], [c, -4.0, c])
    ops = [op for table in mixed._BY_CODE.values() for op in table.values()
           if getattr(op.kernel, "__qualname__", "").startswith("test_np_vectorize_of_a_lambda")]
    assert len(ops) == 2  # one per closure value of c, shared by the calls


def test_augmented_assignments_in_the_kernel():
    """``y += t`` on a float records an in-place operator: replayed over arrays it must not
    overwrite a value the sweep still reads (once a silently wrong gradient)."""
    def k(t, u):
        y = t * 1.0
        y += u
        y *= t
        y -= u / 2.0
        y /= 1.0 + t * t
        y **= 2
        return y

    x, u = points(9), np.linspace(-1.0, 1.0, 9)
    e = capstan.elementwise(k)
    x0 = x.copy()
    np.testing.assert_allclose(e(x, u), np.vectorize(k)(x, u), rtol=1e-14)
    gx, gu = capstan.gradient(lambda a, b: np.sum(e(a, b)), x, u)
    rx, ru = scalar_gradients(k, x, u)
    np.testing.assert_allclose(gx, rx, rtol=1e-13)
    np.testing.assert_allclose(gu, ru, rtol=1e-13)
    np.testing.assert_array_equal(x, x0)  # (the arguments are left alone)


def test_kernels_that_catch_exceptions():
    def safe_sqrt(t):
        try:
            return math.sqrt(t)
        except ValueError:
            return 0.0

    def safe_inverse(t):
        try:
            return 1.0 / t
        except ZeroDivisionError:
            return 0.0

    for kernel, x in ((safe_sqrt, np.array([-1.0, 4.0, 9.0, -3.0])),  # (recorded first where
                      (safe_inverse, np.array([0.0, 4.0, -2.0, 0.0]))):  # the call raises)
        k = capstan.elementwise(kernel)
        np.testing.assert_array_equal(k(x), [kernel(t) for t in x.tolist()])
        np.testing.assert_array_equal(capstan.gradient(lambda v: np.sum(k(v)), x)[0],
                                      scalar_gradients(kernel, x)[0])


def test_nesting_through_elements_run_one_by_one():
    """math.gamma has no array form here: every element runs the kernel itself (its
    derivative by capstan.pullback), inside the enclosing forward mode of hessian."""
    def kernel(t, u):
        return math.gamma(t) * u + t * u * u

    k = capstan.elementwise(kernel)
    assert all(path is None for path, _ in mixed._plan(k, {}, (np.array([1.5]), 2.0)).groups)

    def f(v):
        return np.sum(k(v[:3], v[3:]))

    def f_loop(v):
        return sum(kernel(v[i], v[3 + i]) for i in range(3))

    v = np.array([1.5, 2.5, 3.2, 0.5, -1.0, 2.0])
    np.testing.assert_allclose(capstan.gradient(f, v)[0], capstan.gradient(f_loop, v)[0], rtol=1e-13)
    np.testing.assert_allclose(capstan.hessian(f, v), capstan.hessian(f_loop, v), rtol=1e-12, atol=1e-12)
    _, t = capstan.jvp(f, (v,), (np.ones(6),))
    assert t == pytest.approx(float(np.sum(capstan.gradient(f_loop, v)[0])), rel=1e-13)


def test_a_kernel_applied_to_empty_arrays():
    """SciPy's generic distribution methods apply their np.vectorize'd kernels to the
    empty selection of points a branch does not take."""
    k = capstan.elementwise(lambda t: t * t)
    assert capstan.gradient(lambda x: np.sum(k(x)), np.zeros(0))[0].shape == (0,)
    value, tangent = capstan.jvp(lambda x: k(x), (np.zeros(0),), (np.zeros(0),))
    assert value.shape == tangent.shape == (0,)


def test_a_kernel_returning_a_0d_array_is_one_number():
    """``np.vectorize(k, otypes=[np.float64])`` takes a 0-d array from ``k`` as its element
    (SciPy's ``irwinhall`` evaluates a B-spline per element): it was refused."""
    def spline_like(t):
        return np.asarray(t * t * math.sin(t))

    def f(v):
        return np.sum(np.vectorize(spline_like, otypes=[np.float64])(v) * np.arange(1.0, 4.0))

    v = np.array([0.3, -0.8, 1.4])
    want = np.arange(1.0, 4.0) * (2 * v * np.sin(v) + v * v * np.cos(v))
    np.testing.assert_allclose(capstan.gradient(f, v)[0], want, rtol=1e-12)
    np.testing.assert_allclose(capstan.jvp(f, (v,), (np.ones(3),))[1], want.sum(), rtol=1e-12)
    with pytest.raises(TypeError, match="one real number per element"):
        capstan.gradient(lambda v: np.sum(np.vectorize(lambda t: np.array([t, t]), otypes=[np.float64])(v)), v)


def test_vectorize_kernels_that_return_bools_or_ints_run_element_by_element():
    """``np.vectorize`` of a Python kernel whose results carry no derivative (a bool or an int,
    by their first value or ``otypes``) runs the kernel on each element inside the
    differentiation, as NumPy does: the result is plain, a test the kernel makes of a
    differentiated zero is refused as anywhere else.  It was refused as not one real number."""
    cases = [
        (lambda x: np.sum(np.vectorize(lambda t: t > 0.6)(np.array([x, 0.5])) * x), 0.7, 1.0),
        (lambda x: np.sum(np.vectorize(lambda t: bool(t))(np.array([x, 0.5])) * x), 0.7, 2.0),
        (lambda x: np.sum(np.vectorize(lambda t: int(t * 10), otypes=[int])(np.array([x, 0.5])) * x), 0.7, 12.0),
        (lambda x: np.sum(np.vectorize(lambda a, b: a > b)(np.array([[x], [0.1]]), np.array([0.5, 0.6])) * x),
         0.7, 2.0),
    ]
    for f, x, slope in cases:
        assert capstan.D(f, x) == pytest.approx(slope)
        assert capstan.gradient(f, x)[0] == pytest.approx(slope)
    at_zero = lambda x: np.sum(np.vectorize(lambda t: bool(t))(np.array([x, 0.5])) * x)
    for entry in (capstan.D, capstan.gradient):
        with pytest.raises(capstan.NoRuleError):
            entry(at_zero, 0.0)
    mask = np.vectorize(lambda t: t > 0.6)(np.array([0.7, 0.5]))
    assert mask.dtype == bool and mask.tolist() == [True, False]  # (plainly, as NumPy gives it)


B = np.array([[0.3, 1.2, 2.0], [0.5, -0.4, 1.1]])
SIGNATURE_CASES = {
    "(n)->()": lambda x: np.vectorize(lambda v: v @ v, signature="(n)->()")(x * B).sum(),
    "(n),(n)->(n,n)": lambda x: np.vectorize(lambda a, b: np.outer(a, b), signature="(n),(n)->(n,n)")(
        x * B, B * x * x).sum(),
    "(n)->(n)": lambda x: (np.vectorize(lambda v: np.cumsum(v * v), signature="(n)->(n)")(x * B) ** 2).sum(),
    "(n)->(),()": lambda x: sum(o.sum() for o in np.vectorize(lambda v: (v.sum(), v.max()),
                                                              signature="(n)->(),()")(x * B)),
    "(n),()->() broadcast": lambda x: np.vectorize(lambda v, s: (v * s).sum(), signature="(n),()->()")(
        B, np.array([x, 2 * x])).sum(),
}


@pytest.mark.parametrize("name", list(SIGNATURE_CASES))
def test_np_vectorize_with_a_signature_runs_numpys_loop(name):
    """``np.vectorize(f, signature=...)`` (a generalized ufunc) was refused; NumPy's own loop
    over the core dimensions now runs routed, so every route differentiates it."""
    f, x0, h = SIGNATURE_CASES[name], 1.1, 1e-4
    first = (f(x0 + h) - f(x0 - h)) / (2 * h)
    second = (f(x0 + h) - 2 * f(x0) + f(x0 - h)) / h ** 2
    assert capstan.D(f, x0) == pytest.approx(first, rel=1e-6)
    assert capstan.gradient(f, x0)[0] == pytest.approx(first, rel=1e-6)
    assert capstan.hessian(f, x0) == pytest.approx(second, rel=1e-4, abs=1e-5)
