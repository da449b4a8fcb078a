"""capstan.grad / value_and_grad / jacfwd / jacrev, checkpoint as a decorator, and
jacobian/hessian on nested and several arguments -- checked against closed forms and
central finite differences."""
import dataclasses
import math

import numpy as np
import pytest

import capstan


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def fd_jacobian(f, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float
    n: int = 2


def loss(p, x):
    return float(np.sum((p.w * x + p.b) ** 2)) * p.n


# ----------------------------------------------------------------------------- grad
def test_grad_is_a_function_of_the_point():
    dsin = capstan.grad(math.sin)
    for x in (0.0, 0.7, -2.0):
        assert dsin(x) == pytest.approx(math.cos(x), rel=1e-14)
    assert dsin.__name__ == "sin"


def test_grad_nests_for_higher_derivatives():
    d3 = capstan.grad(capstan.grad(capstan.grad(lambda x: x ** 5)))
    assert d3(2.0) == pytest.approx(60.0 * 2.0 ** 2, rel=1e-12)


def test_grad_argnums_int_and_tuple():
    f = lambda x, y, z: x * y * y + z  # noqa: E731
    assert capstan.grad(f, argnums=1)(2.0, 3.0, 1.0) == 12.0
    assert capstan.grad(f, argnums=(0, 2))(2.0, 3.0, 1.0) == (9.0, 1.0)
    assert capstan.grad(f, argnums=-1)(2.0, 3.0, 1.0) == 1.0
    # the unselected arguments may be anything, keyword arguments are constants
    assert capstan.grad(lambda x, n, s="ab": x ** n * len(s))(2.0, 3, s="abc") == 36.0


def test_grad_pytree_input_keeps_structure_and_dtype():
    p = Params(np.array([1.0, -2.0], dtype=np.float32), 0.5)
    x = np.array([3.0, 4.0], dtype=np.float32)
    g = capstan.grad(loss)(p, x)
    assert isinstance(g, Params) and g.n is None
    assert g.w.dtype == np.float32
    r = p.w.astype(float) * x + p.b
    np.testing.assert_allclose(g.w, 2 * 2 * r * x, rtol=1e-6)
    assert g.b == pytest.approx(float(np.sum(2 * 2 * r)), rel=1e-6)


def test_grad_unused_float_argument_is_zero_not_none():
    assert capstan.grad(lambda x, y: x * 2.0, argnums=1)(1.0, 5.0) == 0.0
    g = capstan.grad(lambda x: 3.0)(np.ones(3, dtype=np.float32))
    assert g.dtype == np.float32 and not g.any()
    # the at-a-point form keeps API.md's None
    assert capstan.gradient(lambda x: 3.0, 2.0) == (None,)


def test_value_and_grad_one_run():
    calls = []

    def f(x):
        calls.append(x)
        return x * math.exp(x)

    v, g = capstan.value_and_grad(f)(1.5)
    assert len(calls) == 1
    assert v == pytest.approx(1.5 * math.exp(1.5)) and type(v) is float
    assert g == pytest.approx(central(f, 1.5), rel=1e-8)


def test_has_aux():
    def f(x):
        y = x * x
        return y, {"y": y, "label": "square"}

    g, aux = capstan.grad(f, has_aux=True)(3.0)
    assert g == 6.0 and aux == {"y": 9.0, "label": "square"} and type(aux["y"]) is float
    (v, aux), g = capstan.value_and_grad(f, has_aux=True)(3.0)
    assert (v, g, aux["y"]) == (9.0, 6.0, 9.0)
    J, aux = capstan.jacrev(lambda x: (x * x, x.sum()), has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(J, np.diag([2.0, 4.0]))
    assert aux == 3.0
    J, aux = capstan.jacfwd(lambda x: (x * x, x.sum()), has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(J, np.diag([2.0, 4.0]))
    assert aux == 3.0
    with pytest.raises(TypeError, match=r"capstan.grad\(f, has_aux=True\): f must return a pair"):
        capstan.grad(lambda x: x * x, has_aux=True)(3.0)


def test_grad_nested_inside_other_modes():
    # forward over the grad transform, and reverse over it: no perturbation confusion
    assert capstan.D(lambda x: capstan.grad(lambda y: x * y * y)(x), 2.0) == pytest.approx(8.0)
    assert capstan.gradient(lambda x: capstan.grad(lambda y: x * y * y)(x), 2.0) == (8.0,)


@pytest.mark.parametrize("make", [capstan.grad, capstan.value_and_grad, capstan.jacfwd, capstan.jacrev])
def test_transform_errors_name_the_transform(make):
    name = make.__name__
    with pytest.raises(TypeError, match=r"capstan.%s: argument 0 \(selected by argnums\) cannot carry "
                                        r"a derivative: got int 3; pass 3.0 instead of 3" % name):
        make(lambda x: x * x)(3)
    with pytest.raises(TypeError, match="capstan.%s: argnums must be an int" % name):
        make(lambda x: x, argnums="x")
    with pytest.raises(ValueError, match="capstan.%s: argnums=2, but f was called with 1 positional" % name):
        make(lambda x: x, argnums=2)(1.0)
    with pytest.raises(TypeError, match="capstan.%s.*f must be callable" % name):
        make(3.0)


def test_grad_of_non_scalar_names_grad():
    with pytest.raises(ValueError, match=r"capstan.grad: f must return a real scalar, got an array of shape \(2,\)"):
        capstan.grad(lambda x: np.array([x, x]))(1.0)


# ----------------------------------------------------------------------------- Jacobians
def vector_map(x):
    return np.array([x[0] * x[1], np.sin(x[0]) + x[1] ** 3, np.exp(x[1])])


@pytest.mark.parametrize("transform", [capstan.jacfwd, capstan.jacrev])
def test_jacobian_transforms_match_finite_differences(transform):
    x = np.array([0.3, -1.2])
    J = transform(vector_map)(x)
    assert J.shape == (3, 2)
    np.testing.assert_allclose(J, fd_jacobian(vector_map, x), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(J, capstan.jacobian(vector_map, x), rtol=1e-14)


@pytest.mark.parametrize("transform", [capstan.jacfwd, capstan.jacrev])
def test_jacobian_transforms_nested_in_and_out(transform):
    def f(p, x):
        return {"y": p.w * x + p.b, "s": float(np.sum(p.w)) * p.b}

    p = Params(np.array([1.0, 2.0]), 3.0)
    x = np.array([0.5, -1.0])
    J = transform(f, argnums=(0, 1))(p, x)
    assert set(J) == {"y", "s"}
    jp, jx = J["y"]
    assert isinstance(jp, Params) and jp.n is None
    np.testing.assert_array_equal(jp.w, np.diag(x))
    np.testing.assert_array_equal(jp.b, np.ones(2))
    np.testing.assert_array_equal(jx, np.diag(p.w))
    js_p, js_x = J["s"]
    np.testing.assert_array_equal(js_p.w, [3.0, 3.0])
    assert js_p.b == 3.0 and js_p.b.shape == ()
    np.testing.assert_array_equal(js_x, [0.0, 0.0])
    # one argument selected: no tuple around it
    assert isinstance(transform(f)(p, x)["y"], Params)


def test_jacfwd_and_jacrev_agree_on_lists_and_scalars():
    f = lambda a, b: [a * b, (a + b) ** 2, math.atan2(a, b)]  # noqa: E731
    Jf = capstan.jacfwd(f, argnums=(0, 1))(0.4, 1.3)
    Jr = capstan.jacrev(f, argnums=(0, 1))(0.4, 1.3)
    for row_f, row_r, k in zip(Jf, Jr, range(3)):
        for i in range(2):
            assert float(row_f[i]) == pytest.approx(float(row_r[i]), rel=1e-13)
            point = [0.4, 1.3]
            g = lambda t: f(*[t if j == i else point[j] for j in range(2)])[k]  # noqa: E731
            assert float(row_f[i]) == pytest.approx(central(g, point[i]), rel=1e-7)


def test_jacobian_dtype_follows_input():
    x = np.array([1.0, 2.0], dtype=np.float32)
    assert capstan.jacfwd(lambda v: v * v)(x).dtype == np.float32
    assert capstan.jacrev(lambda v: v * v)(x).dtype == np.float32


# ----------------------------------------------------------------------------- the at-a-point forms
def test_jacobian_and_hessian_take_structures_and_several_arguments():
    J = capstan.jacobian(lambda a, b: a * b, 2.0, 3.0)
    assert tuple(map(float, J)) == (3.0, 2.0)
    J = capstan.jacobian(lambda a, b: a * b, 2.0, 3.0, argnums=1)
    assert float(J) == 2.0
    J = capstan.jacobian(lambda d: [d["u"] * d["v"], d["u"]], {"u": 2.0, "v": 5.0})
    assert [{k: float(v) for k, v in row.items()} for row in J] == [{"u": 5.0, "v": 2.0}, {"u": 1.0, "v": 0.0}]
    assert capstan.jacobian(lambda d: [d["u"] * d["v"]], {"u": 2.0, "v": 5.0}, mode="reverse")[0]["u"] == 5.0

    H = capstan.hessian(lambda d: d["x"] ** 2 * d["y"], {"x": 1.0, "y": 2.0})
    assert {k: {j: float(v) for j, v in row.items()} for k, row in H.items()} == {
        "x": {"x": 4.0, "y": 2.0}, "y": {"x": 2.0, "y": 0.0}}
    H = capstan.hessian(lambda a, b: a * a * b + b ** 3, 1.0, 2.0)
    assert [[float(v) for v in row] for row in H] == [[4.0, 2.0], [2.0, 12.0]]
    H = capstan.hessian(lambda a, b: a * a * b + b ** 3, 1.0, 2.0, argnums=1)
    assert float(H) == 12.0


def test_hessian_dtype_and_entry_point_name():
    x = np.array([1.0, 2.0], dtype=np.float32)
    H = capstan.hessian(lambda v: np.sum(v ** 3), x)
    assert H.dtype == np.float32
    np.testing.assert_array_equal(H, np.diag([6.0, 12.0]))
    with pytest.raises(ValueError, match=r"capstan.hessian: f must return a real scalar"):
        capstan.hessian(lambda v: v * v, np.array([1.0, 2.0]))


# ----------------------------------------------------------------------------- checkpoint
@capstan.checkpoint
def segment(x, scale=1.0):
    for _ in range(3):
        x = math.sin(x) * scale
    return x


def test_checkpoint_decorator_gradient_matches_plain():
    def plain_segment(x, scale=1.0):
        for _ in range(3):
            x = math.sin(x) * scale
        return x

    f = lambda x: segment(segment(x), scale=2.0) * x  # noqa: E731
    g = lambda x: plain_segment(plain_segment(x), scale=2.0) * x  # noqa: E731
    assert f(0.7) == g(0.7)
    assert capstan.gradient(f, 0.7)[0] == pytest.approx(capstan.gradient(g, 0.7)[0], rel=1e-14)
    assert capstan.gradient(f, 0.7)[0] == pytest.approx(central(g, 0.7), rel=1e-7)
    assert capstan.D(f, 0.7) == pytest.approx(central(g, 0.7), rel=1e-7)
    assert segment.__name__ == "segment"


def test_checkpoint_call_form_still_works():
    assert capstan.checkpoint(lambda a, b: a * b, 2.0, 3.0) == 6.0
    assert capstan.gradient(lambda x: capstan.checkpoint(lambda a, b: a * b, x, 3.0), 2.0) == (3.0,)


def test_checkpoint_decorator_rejects_unknown_keywords():
    with pytest.raises(TypeError):
        segment(1.0, bogus=2.0)


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
def test_jacobian_of_array_input_with_nested_output(mode):
    x = np.array([1.0, 2.0])

    @dataclasses.dataclass
    class Out:
        a: np.ndarray

    J = capstan.jacobian(lambda v: [v, v * v], x, mode=mode)
    assert isinstance(J, list) and len(J) == 2
    np.testing.assert_array_equal(J[0], np.eye(2))
    np.testing.assert_array_equal(J[1], np.diag([2.0, 4.0]))
    J = capstan.jacobian(lambda v: Out(v * 2.0), x, mode=mode)
    assert isinstance(J, Out)
    np.testing.assert_array_equal(J.a, 2.0 * np.eye(2))
    J = capstan.jacobian(lambda v: {"s": v.sum()}, x, mode=mode)
    np.testing.assert_array_equal(J["s"], [1.0, 1.0])
    J = capstan.jacobian(lambda t: (t, t * t), 2.0, mode=mode)
    assert isinstance(J, tuple) and [float(b) for b in J] == [1.0, 4.0]
