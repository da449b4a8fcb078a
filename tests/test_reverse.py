"""Reverse mode (``gradient``, ``pullback``, ``jacobian(mode="reverse")``, ``hessian``,
``adjoint``, ``checkpoint``, ``hook``, ``nestlevel``) on unmodified code.

Oracles: closed forms, scipy's Rosenbrock derivatives, sympy, central finite
differences, and forward mode.
"""
import cmath
import collections
import dataclasses
import gc
import importlib
import importlib.util
import math
import operator
import tracemalloc

import numpy as np
import pytest
import scalar_programs
import sympy
from hypothesis import given, settings
from scipy.optimize import rosen, rosen_der, rosen_hess

import capstan
from capstan import D, gradient, hessian, jacobian, jvp, pullback

[importlib.import_module(m) for m in ("capstan.rules.numpy_rules", "capstan.rules.linalg_rules")
 if importlib.util.find_spec(m)]
capstan.adcontext.register_all()


def fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def fd_grad(f, x, h=1e-6):
    """Central-difference gradient of scalar ``f`` at float array ``x``."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# ------------------------------------------------------------------------------ shapes of gradients
def test_gradient_float_is_float_tuple():
    g = gradient(lambda x, y: x * y + math.sin(x), 2.0, 3.0)
    assert type(g) is tuple and len(g) == 2
    assert type(g[0]) is float and type(g[1]) is float
    assert g == (3.0 + math.cos(2.0), 2.0)


def test_gradient_pow_with_dict_state():
    def pow_(x, n):
        d = {"r": 1.0, "n": n}
        while d["n"] > 0:
            d["r"] *= x
            d["n"] -= 1
        return d["r"]

    assert gradient(lambda x: pow_(x, 3), 5.0) == (75.0,)
    assert gradient(pow_, 2.0, 4) == (32.0, None)


def test_dict_state_ends_as_plain_python_leaves_it():
    seen = {}

    def f(x):
        d = {"r": 1.0, "n": 3}
        while d["n"] > 0:
            d["r"] *= x
            d["n"] -= 1
        seen.update(d)
        return d["r"]

    assert gradient(f, 5.0) == (75.0,)
    assert seen == {"r": 125.0, "n": 0}
    assert type(seen["r"]) is float and type(seen["n"]) is int


def test_gradient_ndarray_shape_and_dtype():
    x = np.arange(6.0).reshape(2, 3)
    (g,) = gradient(lambda a: np.sum(a * a), x)
    assert isinstance(g, np.ndarray) and g.shape == (2, 3) and g.dtype == np.float64
    np.testing.assert_array_equal(g, 2 * x)


def test_gradient_ndarray_indexing_and_broadcasting():
    x = np.array([1.0, 2.0, 3.0])
    (g,) = gradient(lambda a: a[0] * a[2] + float(np.sum(a[1:] ** 2)), x)
    np.testing.assert_array_equal(g, [3.0, 4.0, 1.0 + 6.0])
    (g,) = gradient(lambda a: np.sum(a[:, None] * a[None, :]), x)
    np.testing.assert_allclose(g, 2 * np.sum(x) * np.ones(3), rtol=1e-15)


Pt = collections.namedtuple("Pt", "a b")


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float
    name: str = "layer"
    n: int = 2


def test_gradient_containers_keep_their_types():
    def f(lst, tup, dct, pt, prm):
        return (lst[0] * lst[1] + tup[0] * 3 + dct["k"] ** 2 + pt.a * pt.b
                + prm.b * np.sum(prm.w) * prm.n)

    g = gradient(f, [1.0, 2.0], (3.0, 4.0), {"k": 5.0, "u": 1.0}, Pt(2.0, 3.0),
                 Params(np.array([1.0, 2.0]), 2.0))
    gl, gt, gd, gp, gprm = g
    assert type(gl) is list and gl == [2.0, 1.0]
    assert type(gt) is tuple and gt == (3.0, 0.0)
    assert type(gd) is dict and gd == {"k": 10.0, "u": 0.0}
    assert type(gp) is Pt and gp == Pt(3.0, 2.0)
    assert type(gprm) is Params
    np.testing.assert_array_equal(gprm.w, [4.0, 4.0])
    assert gprm.b == 6.0 and gprm.name is None and gprm.n is None


def test_gradient_none_for_ints_strings_and_unused():
    assert gradient(lambda x, n, s, u: x * n * len(s), 2.0, 3, "ab", 9.0) == (6.0, None, None, None)
    with pytest.raises(TypeError, match="capstan.gradient: no argument can carry a derivative: got str"):
        gradient(lambda s: 1.0, "ab")
    with pytest.raises(TypeError, match="capstan.gradient: no argument can carry a derivative: got int 3; "
                                        "pass 3.0 instead of 3"):
        gradient(lambda n: n * 2.0, 3)
    assert gradient(lambda x: 3.0, 2.0) == (None,)
    got = gradient(lambda nest: nest[0][0] * nest[1]["a"], [[2.0, 1], {"a": 3.0}])
    assert got == ([[3.0, None], {"a": 2.0}],)


def test_gradient_numpy_scalar_inputs():
    g = gradient(lambda x: x * x, np.float64(3.0))
    assert g == (6.0,)
    (g,) = gradient(lambda x: x * x, np.array(3.0))
    assert np.shape(g) == () and float(g) == 6.0


# ------------------------------------------------------------------------------ complex convention
@pytest.mark.parametrize("f, grad", [
    (lambda z: abs(z) ** 2, lambda z: 2 * z),
    (lambda z: (z * z).real, lambda z: 2 * z.conjugate()),
    (lambda z: (z * z).imag, lambda z: 2j * z.conjugate()),
    (lambda z: abs(z), lambda z: z / abs(z)),
    (lambda z: z.real ** 2 + 3 * z.imag, lambda z: 2 * z.real + 3j),
    (lambda z: cmath.phase(z), lambda z: 1j * z / abs(z) ** 2),
    (lambda z: abs(cmath.exp(z)), lambda z: complex(math.exp(z.real), 0.0)),
])
def test_gradient_complex_convention(f, grad):
    z = 1.0 + 2.0j
    (g,) = gradient(f, z)
    assert type(g) is complex
    assert abs(g - grad(z)) < 1e-12 * max(1.0, abs(grad(z)))
    h = 1e-6  # df/dx + i df/dy
    want = (f(z + h) - f(z - h)) / (2 * h) + 1j * (f(z + 1j * h) - f(z - 1j * h)) / (2 * h)
    assert abs(g - want) < 1e-6 * max(1.0, abs(want))


def test_gradient_complex_via_conjugate_method():
    (g,) = gradient(lambda z: (z * z.conjugate()).real, 1.0 + 2.0j)
    assert g == 2.0 + 4.0j


def test_gradient_descends_with_complex_convention():
    f = lambda z: abs(z - (3 - 1j)) ** 2
    z = 0j
    for _ in range(50):
        z = z - 0.25 * gradient(f, z)[0]
    assert abs(z - (3 - 1j)) < 1e-12


@pytest.mark.parametrize("f, df", [
    (lambda z: z * z, lambda z: 2 * z),
    (cmath.exp, cmath.exp),
    (lambda z: z ** 3 + 1j * z, lambda z: 3 * z * z + 1j),
    (cmath.sin, cmath.cos),
    (lambda z: 1 / z, lambda z: -1 / (z * z)),
])
def test_pullback_holomorphic(f, df):
    z = 0.5 - 1.5j
    y, back = pullback(f, z)
    assert y == f(z)
    for dy in (1.0, 1j, 2.0 - 0.5j):
        (dz,) = back(dy)
        want = df(z).conjugate() * dy
        assert abs(dz - want) < 1e-12 * max(1.0, abs(want))
    assert abs(D(f, z) - df(z)) < 1e-12 * abs(df(z))


def test_gradient_rejects_complex_output():
    with pytest.raises(ValueError, match="complex"):
        gradient(lambda z: z * z, 1 + 1j)


# ------------------------------------------------------------------------------ pullback
def test_pullback_called_several_times():
    def f(x, y):
        return np.array([x * y, np.sin(x), y ** 2])

    (y, back) = pullback(f, 2.0, 3.0)
    np.testing.assert_array_equal(y, [6.0, math.sin(2.0), 9.0])
    J = np.array([[3.0, 2.0], [math.cos(2.0), 0.0], [0.0, 6.0]])
    dys = [np.array([1.0, 0.0, 0.0]), np.array([0.0, 2.0, 0.0]), np.array([1.0, -1.0, 0.5])]
    first = [back(dy) for dy in dys]
    for dy, (gx, gy) in zip(dys, first):
        assert gx == pytest.approx(dy @ J[:, 0], rel=1e-15)
        assert gy == pytest.approx(dy @ J[:, 1], rel=1e-15)
    assert [back(dy) for dy in dys] == first  # backward passes leave the tape intact


def test_pullback_structured_output_and_mutating_program():
    def f(a):
        y = a * 2.0
        a[0] = 0.0
        return {"u": y * a, "v": float(np.sum(a))}

    x = np.array([1.0, 2.0, 3.0])
    y, back = pullback(f, x.copy())
    np.testing.assert_array_equal(y["u"], [0.0, 8.0, 18.0])
    (g1,) = back({"u": np.ones(3), "v": 0.0})
    (g2,) = back({"u": np.zeros(3), "v": 1.0})
    (g3,) = back({"u": np.ones(3), "v": 0.0})
    np.testing.assert_array_equal(g1, [0.0, 8.0, 12.0])
    np.testing.assert_array_equal(g2, [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(g3, g1)


def test_pullback_rejects_wrong_cotangent_shape():
    _, back = pullback(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError):
        back(np.ones(2))


# ------------------------------------------------------------------------------ jacobian, hessian
def test_reverse_jacobian_wide_output():
    def f(x):
        return np.outer(x, x).ravel() * np.sum(np.sin(x))

    x = np.array([0.3, 1.1, -0.7])
    Jr = jacobian(f, x, mode="reverse")
    assert Jr.shape == (9, 3)
    np.testing.assert_allclose(Jr, jacobian(f, x, mode="forward"), rtol=1e-13)
    fdJ = np.stack([(f(x + 1e-6 * e) - f(x - 1e-6 * e)) / 2e-6 for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(Jr, fdJ, rtol=1e-6, atol=1e-8)


def test_reverse_jacobian_scalar_input():
    J = jacobian(lambda x: np.array([x, x * x, math.exp(x)]), 1.5, mode="reverse")
    np.testing.assert_allclose(J, [1.0, 3.0, math.exp(1.5)], rtol=1e-15)


@pytest.mark.parametrize("n", [10, 1000])
def test_gradient_rosen(n):
    x = np.linspace(-1.2, 1.7, n)
    (g,) = gradient(rosen, x)
    np.testing.assert_allclose(g, rosen_der(x), rtol=1e-12, atol=1e-10)


def test_hessian_rosen():
    x = np.linspace(-1.2, 1.7, 6)
    H = hessian(rosen, x)
    np.testing.assert_allclose(H, rosen_hess(x), rtol=1e-12, atol=1e-10)
    np.testing.assert_array_equal(H, H.T)


def test_hessian_indexing_program():
    H = hessian(lambda x: x[0] ** 2 * x[1], np.array([1.0, 2.0]))
    np.testing.assert_array_equal(H, [[4.0, 2.0], [2.0, 0.0]])


def test_hessian_quadratic_form_and_elementwise():
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(hessian(lambda x: x @ A @ x, np.array([1.0, 2.0])), A + A.T)
    x = np.array([0.4, 1.3])
    H = hessian(lambda v: np.sum(v ** 2 * np.sin(v)), x)
    want = np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x))
    np.testing.assert_allclose(H, want, rtol=1e-14, atol=1e-15)
    assert hessian(lambda v: v ** 3, 2.0) == 12.0


def test_hessian_against_sympy():
    a, b = sympy.symbols("a b")
    expr = sympy.sin(a * b) + a ** 3 * sympy.exp(b) / (1 + b ** 2)
    f2 = sympy.lambdify((a, b), expr, "math")
    pt = {a: 0.7, b: -0.4}
    want = np.array(sympy.hessian(expr, (a, b)).subs(pt), dtype=float)
    gsym = np.array([float(sympy.diff(expr, v).subs(pt)) for v in (a, b)])
    got_g = gradient(f2, 0.7, -0.4)
    np.testing.assert_allclose(got_g, gsym, rtol=1e-13)
    H = np.array([[D(lambda u: gradient(f2, u, -0.4)[0], 0.7), D(lambda v: gradient(f2, 0.7, v)[0], -0.4)],
                  [D(lambda u: gradient(f2, u, -0.4)[1], 0.7), D(lambda v: gradient(f2, 0.7, v)[1], -0.4)]])
    np.testing.assert_allclose(H, want, rtol=1e-12)
    H2 = hessian(lambda v: f2(v[0], v[1]), np.array([0.7, -0.4]))
    np.testing.assert_allclose(H2, want, rtol=1e-12)


# ------------------------------------------------------------------------------ nesting
def test_gradient_of_gradient_and_mixed_nesting():
    f = lambda x: x ** 3 * math.sin(x)
    d1 = lambda x: 3 * x ** 2 * math.sin(x) + x ** 3 * math.cos(x)
    d2 = lambda x: 6 * x * math.sin(x) + 6 * x ** 2 * math.cos(x) - x ** 3 * math.sin(x)
    x = 1.1
    assert gradient(f, x)[0] == pytest.approx(d1(x), rel=1e-14)
    assert gradient(lambda v: gradient(f, v)[0], x)[0] == pytest.approx(d2(x), rel=1e-13)
    assert D(lambda v: gradient(f, v)[0], x) == pytest.approx(d2(x), rel=1e-13)
    assert gradient(lambda v: D(f, v), x)[0] == pytest.approx(d2(x), rel=1e-13)


def test_perturbation_confusion_reverse():
    assert gradient(lambda x: x * gradient(lambda y: x * y, 3.0)[0], 5.0) == (10.0,)
    assert gradient(lambda x: gradient(lambda y: x * y, x)[0], 2.0) == (1.0,)


def test_third_order_mixed():
    f = lambda x: x ** 4
    assert gradient(lambda a: gradient(lambda b: gradient(f, b)[0], a)[0], 2.0) == (48.0,)
    assert D(lambda a: gradient(lambda b: D(f, b), a)[0], 2.0) == 48.0


def test_nestlevel_values():
    levels = {}

    def probe(key):
        def f(x):
            levels.setdefault(key, []).append(capstan.nestlevel())
            return np.sum(x * x) if isinstance(x, np.ndarray) else x * x
        return f

    assert capstan.nestlevel() == 0
    gradient(probe("gradient"), 1.0)
    hessian(probe("hessian"), np.array([1.0, 2.0]))
    gradient(lambda x: gradient(probe("grad-grad"), x)[0], 1.0)
    assert levels["gradient"] == [1]
    assert set(levels["hessian"]) == {2}
    assert levels["grad-grad"] == [2]
    with pytest.raises(ZeroDivisionError):
        gradient(lambda x: x / 0.0, 1.0)
    assert capstan.nestlevel() == 0


def test_nestlevel_three_deep():
    levels = []

    def f(z):
        levels.append(capstan.nestlevel())
        return z * z * z

    assert D(lambda x: gradient(lambda y: D(f, y), x)[0], 1.0) == 6.0
    assert levels == [3]


# ------------------------------------------------------------------------------ mutation
def test_setitem_into_zeros_array():
    def f(x):
        a = np.zeros(3)
        a[0] = x
        a[1] = x * x
        a[2] = 3.0
        return float(np.sum(a * a))

    assert gradient(f, 2.0) == (2 * 2.0 + 4 * 2.0 ** 3,)


def test_inplace_add_on_arrays_and_lists():
    def f(x):
        a = np.ones(3)
        a += x
        a *= x
        b = [x[0]]
        b += [x[1] * x[2]]
        b.append(np.sum(a))
        return b[0] + b[1] + b[2]

    x = np.array([1.0, 2.0, 3.0])
    (g,) = gradient(f, x)
    np.testing.assert_allclose(g, fd_grad(f, x), rtol=1e-7)
    np.testing.assert_array_equal(g, [1.0 + 2 * 1.0 + 1, 3.0 + 2 * 2.0 + 1, 2.0 + 2 * 3.0 + 1])


def test_inplace_on_input_array_mutates_it_like_python():
    def f(x):
        x *= 2.0
        return np.sum(x * x)

    x = np.array([1.0, 2.0])
    (g,) = gradient(f, x)
    np.testing.assert_array_equal(g, 8.0 * np.array([1.0, 2.0]))
    np.testing.assert_array_equal(x, [2.0, 4.0])  # the side effect happened
    assert type(x) is np.ndarray


def test_read_then_overwrite_uses_old_values():
    def f(a):
        y = a * 2.0
        z = np.sin(a)
        a[0] = 0.0
        a[1:] = a[1:] * a[0] + 5.0 * a[2]
        return float(np.sum(y * z)) + float(np.sum(a * y))

    x = np.array([0.5, 1.5, -0.7])
    (g,) = gradient(f, x.copy())
    np.testing.assert_allclose(g, fd_grad(lambda v: f(v.copy()), x), rtol=1e-7, atol=1e-9)


def test_overwrite_chain_of_setitems():
    def f(x):
        a = np.zeros(2)
        for i in range(4):
            a[i % 2] = a[(i + 1) % 2] * x + 1.0
        return a[0] + 2 * a[1]

    assert gradient(f, 1.5)[0] == pytest.approx(fd(f, 1.5), rel=1e-8)
    assert gradient(f, 1.5)[0] == D(f, 1.5)


def test_dict_and_list_state():
    log = []
    cache = {}

    def f(x):
        cache["sq"] = x * x
        log.append(cache["sq"])
        return cache["sq"] * x + log[-1]

    assert gradient(f, 2.0) == (3 * 4.0 + 4.0,)
    assert log == [4.0] and type(log[0]) is float and type(cache["sq"]) is float


# ------------------------------------------------------------------------------ unmodified code
def test_class_operator_overloads_with_differentiated_operand():
    def f(x):
        v = scalar_programs.Vec2(x, 1.0) * x + 2.0 * scalar_programs.Vec2(x, x)
        return v.a * v.b

    # v = (x^2 + 2x, x + 2x) -> f = 3x^3 + 6x^2 -> 9x^2 + 12x
    assert gradient(f, 2.0) == (9 * 4.0 + 24.0,)


def test_control_flow_recursion_generators_try():
    def fact(x, n):
        return 1.0 if n == 0 else x * fact(x, n - 1)

    def g(x):
        total = 0.0
        for v in (x ** i for i in range(4)):
            total += v
        try:
            total += 1.0 / (x - x)
        except ZeroDivisionError:
            total += fact(x, 3)
        while total < 100.0:
            total = total * 2.0
        return total

    x = 1.3
    assert gradient(g, x)[0] == pytest.approx(fd(g, x), rel=1e-7)
    assert gradient(g, x)[0] == pytest.approx(D(g, x), rel=1e-15)


# ------------------------------------------------------------------------------ adjoint, hook, checkpoint
def clipped_identity(x):
    return x


@capstan.adjoint(clipped_identity)
def _clipped_identity_adjoint(x):
    return x, lambda g: (max(-1.0, min(1.0, g)),)


def test_user_adjoint_is_used():
    assert gradient(lambda x: clipped_identity(x) * 5.0, 2.0) == (1.0,)
    assert gradient(lambda x: clipped_identity(x) * 0.5, 2.0) == (0.5,)
    assert clipped_identity(3.0) == 3.0


def scale_and_shift(x, k, s):
    return x * k + s


@capstan.adjoint(scale_and_shift)
def _scale_and_shift_adjoint(x, k, s):
    y = x * k + s

    def back(g):
        return (g * k, g * x, None)

    return y, back


def test_user_adjoint_multiple_arguments_and_none():
    assert gradient(lambda a, b, c: scale_and_shift(a, b, c) ** 2, 2.0, 3.0, 1.0) == (42.0, 28.0, None)
    x = np.array([1.0, 2.0])
    (g,) = gradient(lambda v: np.sum(scale_and_shift(v, 3.0, 1.0)), x)
    np.testing.assert_array_equal(g, [3.0, 3.0])


def test_hook():
    assert gradient(lambda x: capstan.hook(operator.neg, x) * 3.0, 2.0) == (-3.0,)
    assert gradient(lambda x: capstan.hook(lambda g: 2 * g, x * x), 2.0) == (8.0,)

    def f(x):
        y = x * x
        return capstan.hook(lambda g: 2 * g, y) + y  # only the hooked branch is doubled

    assert gradient(f, 2.0) == (2 * 4.0 + 4.0,)
    assert capstan.hook(operator.neg, 5.0) == 5.0
    assert D(lambda x: capstan.hook(operator.neg, x) * 3.0, 2.0) == 3.0  # forward: identity


def test_hook_sees_the_gradient():
    seen = []

    def f(x):
        return np.sum(capstan.hook(lambda g: (seen.append(np.copy(g)), g)[1], x) * np.array([1.0, 2.0]))

    (g,) = gradient(f, np.array([5.0, 6.0]))
    np.testing.assert_array_equal(g, [1.0, 2.0])
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], [1.0, 2.0])


def segment(x):
    for _ in range(20):
        x = np.sin(x) * 1.01 + 0.1
    return x


def run_segments(x, nseg, ckpt):
    for _ in range(nseg):
        x = capstan.checkpoint(segment, x) if ckpt else segment(x)
    return np.sum(x * x)


def test_checkpoint_same_gradient():
    x = np.linspace(0.0, 1.0, 7)
    g1 = gradient(lambda v: run_segments(v, 3, False), x)[0]
    g2 = gradient(lambda v: run_segments(v, 3, True), x)[0]
    np.testing.assert_allclose(g1, g2, rtol=1e-14)
    assert capstan.checkpoint(lambda a, b: a * b, 2.0, 3.0) == 6.0


def test_checkpoint_scalars_multiple_args_and_nested():
    def inner(a, b):
        return math.sin(a) * b + a * a

    def outer(a, b):
        return capstan.checkpoint(inner, a * 2.0, b) * b

    def f(x, y):
        return capstan.checkpoint(outer, x, y) + x

    def plain(x, y):
        return (math.sin(2 * x) * y + 4 * x * x) * y + x

    g = gradient(f, 0.3, 1.7)
    want = gradient(plain, 0.3, 1.7)
    assert g[0] == pytest.approx(want[0], rel=1e-14) and g[1] == pytest.approx(want[1], rel=1e-14)
    assert g[0] == pytest.approx(fd(lambda v: plain(v, 1.7), 0.3), rel=1e-7)


def peak_bytes(fn):
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_checkpoint_lowers_peak_memory():
    x = np.linspace(0.0, 1.0, 20000)
    gradient(lambda v: run_segments(v, 2, True), x[:4])  # warm caches
    plain = peak_bytes(lambda: gradient(lambda v: run_segments(v, 10, False), x))
    ckpt = peak_bytes(lambda: gradient(lambda v: run_segments(v, 10, True), x))
    assert ckpt < plain


def test_checkpoint_peak_memory_does_not_grow_with_segments():
    # with checkpointing, the backward pass holds one segment's tape at a time: the peak
    # for 10 segments should be about that for 2 (each segment tape ~ 60 arrays of 160 kB)
    x = np.linspace(0.0, 1.0, 20000)
    gradient(lambda v: run_segments(v, 2, True), x[:4])
    two = peak_bytes(lambda: gradient(lambda v: run_segments(v, 2, True), x))
    ten = peak_bytes(lambda: gradient(lambda v: run_segments(v, 10, True), x))
    plain = peak_bytes(lambda: gradient(lambda v: run_segments(v, 10, False), x))
    assert ten < 1.5 * two, (two, ten, plain)
    assert ten < 0.35 * plain, (two, ten, plain)


# ------------------------------------------------------------------------------ errors
def test_gradient_of_non_scalar_output():
    with pytest.raises(ValueError) as ei:
        gradient(lambda x: x * 2.0, np.ones(3))
    assert "jacobian" in str(ei.value) and "pullback" in str(ei.value)
    with pytest.raises(ValueError) as ei:
        gradient(lambda x: [x, x], 1.0)
    assert "jacobian" in str(ei.value) and "pullback" in str(ei.value)


def test_gradient_no_rule_error():
    with pytest.raises(capstan.NoRuleError) as ei:
        gradient(lambda x: math.frexp(x)[0] * 2.0, 3.0)
    assert isinstance(ei.value, TypeError)
    assert "frexp" in str(ei.value) and "capstan.def" in str(ei.value)
    with pytest.raises(capstan.NoRuleError):
        gradient(lambda x: np.sum(x) + math.frexp(x[0])[0], np.ones(2))


def test_gradient_not_callable():
    with pytest.raises(TypeError):
        gradient(3.0, 1.0)


# ------------------------------------------------------------------------------ random programs
@settings(max_examples=80, deadline=None)
@given(scalar_programs.straight_line())
def test_random_programs_gradient_D_fd(case):
    prog, xs, src = case
    grads = gradient(prog, *xs)
    assert len(grads) == len(xs)
    for i, gi in enumerate(grads):
        def fi(v, i=i):
            args = list(xs)
            args[i] = v
            return prog(*args)

        d = D(fi, xs[i])
        if gi is None:  # the input is unused
            assert d == 0.0, src
            continue
        assert gi == pytest.approx(d, rel=1e-12, abs=1e-12), src
        want = fd(fi, xs[i])
        assert abs(gi - want) <= 1e-6 * max(1.0, abs(want)), src


def test_jacobian_auto_mode_picks_reverse_for_wide_jacobians(monkeypatch):
    import capstan.derivatives as derivatives

    calls = []
    monkeypatch.setattr(derivatives, "reverse_jacobian",
                        lambda f, x, rec=None: calls.append("reverse") or rev(f, x, rec))
    rev = capstan.reverse.reverse_jacobian
    x = np.linspace(0.0, 1.0, 500)

    def wide(v):
        return np.array([np.sum(v ** 2), np.sum(np.sin(v))])

    J = jacobian(wide, x)
    np.testing.assert_allclose(J, np.stack([2 * x, np.cos(x)]))
    assert calls == ["reverse"]
    J_tall = jacobian(lambda v: v[:200] * 3.0, x)  # many outputs: forward mode
    np.testing.assert_allclose(J_tall[:, :200], 3.0 * np.eye(200))
    assert calls == ["reverse"]
    np.testing.assert_allclose(jacobian(wide, x, mode="forward"), J)
    with pytest.raises(ValueError, match="mode"):
        jacobian(wide, x, mode="sideways")


def test_deflinear_registers_both_modes():
    def flip(x):  # a function capstan is told is linear (its body is not stepped into)
        return np.ascontiguousarray(x[::-1])

    capstan.deflinear(flip, transpose=lambda g, ans, x: flip(g))
    x = np.array([1.0, 2.0, 3.0])
    y, t = jvp(lambda v: flip(v) * v, (x,), (np.ones(3),))
    np.testing.assert_allclose(y, [3.0, 4.0, 3.0])
    np.testing.assert_allclose(t, [4.0, 4.0, 4.0])
    (g,) = gradient(lambda v: np.sum(flip(v) * np.array([1.0, 10.0, 100.0])), x)
    np.testing.assert_allclose(g, [100.0, 10.0, 1.0])


def test_no_rule_error_names_the_function_and_the_mode():
    with pytest.raises(capstan.NoRuleError, match=r"math.frexp has no derivative rule \(for reverse"):
        gradient(lambda x: math.frexp(x)[0], 1.0)
    forward_error = r"(?s)\(for forward mode\).*capstan.defjvp\(math.frexp"
    with pytest.raises(capstan.NoRuleError, match=forward_error):
        D(lambda x: math.frexp(x)[0], 1.0)


def test_hook_function_is_differentiated_inside_an_enclosing_derivative():
    def f(x):
        return capstan.hook(lambda g: g * math.cos(g), x) * x * x

    def G(x):
        return gradient(f, x)[0]

    assert G(0.5) == pytest.approx(0.25 * math.cos(0.25) + 0.5, rel=1e-14)
    assert D(G, 0.5) == pytest.approx((G(0.5 + 1e-6) - G(0.5 - 1e-6)) / 2e-6, rel=1e-6)


def test_scalar_parameter_of_an_array_formula_by_one_dot():
    """A scalar's cotangent from an elementwise step over arrays is summed as one dot
    product; where a product is not finite (an infinite partial where the cotangent is an
    exact zero, here at an infinite point masked out by np.where) the exact zero still
    wins, and the result is the same number, of the same type, as the plain sum."""
    x = np.array([1.0, np.inf, 2.0, -0.5])

    def f(s):
        return np.sum(np.where(np.isfinite(x), x / s, 0.0))

    s = 1.3
    (got,) = capstan.gradient(f, s)
    assert got == pytest.approx(-(1.0 + 2.0 - 0.5) / s ** 2, rel=1e-14)
    assert type(got) is float
    y = np.linspace(0.1, 2.0, 50)
    for point in (1.3, np.float64(1.3), np.array(1.3)):
        (got,) = capstan.gradient(lambda p: np.sum(np.log(y * p) * y / p), point)
        want = np.sum(y * (1.0 - np.log(y * 1.3))) / 1.3 ** 2
        assert np.shape(got) == np.shape(point) and np.isclose(got, want, rtol=1e-13)


def test_array_operators_by_the_short_path_and_the_general_one():
    """``+ - * / **`` and unary ``-`` on float64 arrays and numbers (this run's or constant)
    take a short path to the same tape record as the general one; float32 and complex
    arrays, 0-d arrays (NumPy scalars out), plain arrays holding differentiated values and
    user objects take the general path: every gradient is the hand-written one."""
    v = np.array([0.5, 1.5, 2.0])

    def f(s, t):
        a = v * s  # array * float
        b = (a - t) / s ** 2 + 2 * a - np.float64(0.5) * a  # array op float, int op array
        c = -(b ** 2) / (a + 1.0)  # array op array
        return np.sum(c) + np.sum(a ** t)  # array ** float

    def hand(s, t):
        e = 1e-6
        return ((f_plain(s + e, t) - f_plain(s - e, t)) / (2 * e), (f_plain(s, t + e) - f_plain(s, t - e)) / (2 * e))

    f_plain = f
    got = capstan.gradient(f, 1.3, 0.7)
    np.testing.assert_allclose(got, hand(1.3, 0.7), rtol=1e-7)
    s, t = 1.3, 0.7
    for g, want in (
            (lambda s: np.sum(v.astype(np.float32) * np.float32(s) / 2), np.sum(v) / 2),  # float32
            (lambda s: np.real(np.sum((v + 1j) * s - 1j * s)), np.sum(v)),  # complex
            (lambda s: float(np.array(2.0) * s + np.array(s) * np.array(3.0)), 5.0),  # 0-d arrays
    ):
        assert np.isclose(capstan.gradient(g, s)[0], want, rtol=1e-6)

    def shadowed(s):
        plain = np.zeros(3)
        plain[1] = s  # (a plain array now holding a differentiated value)
        return np.sum((v * s) * plain - plain / (v * s))

    e = 1e-6
    assert np.isclose(capstan.gradient(shadowed, s)[0], (shadowed(s + e) - shadowed(s - e)) / (2 * e), rtol=1e-7)


from capstan.adcontext import ADContext  # noqa: E402
from capstan.reverse import ReverseCtx  # noqa: E402

V = np.linspace(0.2, 2.0, 40)


class _GeneralPath(ReverseCtx):
    """Reverse mode with every call of a function with a rule through ``ADContext.apply``
    (no short path for array operators and plain calls)."""

    def apply(self, f, args, kwargs):
        return ADContext.apply(self, f, args, kwargs)

    def arrays(self, f, args):
        return ADContext.apply(self, f, args, {})


def _recorded(ctx_type, f, *args):
    from capstan.reverse import _Run

    run = _Run(f, args, "gradient", ctx_type())
    steps = [tuple(r) if isinstance(r, tuple) or type(r).__name__ == "ScalarRecord"  # (an inline float record)
             else (r.kind, r.f, [p for p in r.parents], [type(v).__name__ for v in r.vals]) for r in run.ctx.tape]
    return steps, capstan.reverse._gradient(run, args)


@pytest.mark.parametrize("program", [
    lambda s, t: np.sum(np.log(np.exp(V * s) + t) * V / s),
    lambda s, t: np.sum(np.subtract(V, s) ** 2 / (2 * t ** 2)) + np.log(t) * V.size,
    lambda s, t: np.sum(np.maximum(V * s, t) - np.minimum(np.float64(0.5), V / t)),
    lambda s, t: np.sum(np.where(V > 1.0, V * s, -V * t)) + np.sum(np.asarray(V * s)),
], ids=["exp-log", "normal", "extremes", "where-asarray"])
def test_the_short_paths_record_what_the_general_path_records(program):
    """The same tape (functions, parents, argument types) and the same gradient, to the bit,
    with and without the short paths."""
    short = _recorded(ReverseCtx, program, 1.3, 0.7)
    general = _recorded(_GeneralPath, program, 1.3, 0.7)
    assert short[0] == general[0]
    assert short[1] == general[1]
