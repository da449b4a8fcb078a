"""Regression tests for the rule audit (issue 8, "never a silent wrong derivative"):
each pins one mistake found in the rule tables or in nesting, against central
differences or a closed form."""
import cmath
import math

import numpy as np
import pytest

import capstan
from capstan import D, NoRuleError, gradient, hessian, jacobian, jvp, pullback

C2 = np.array([1.0, 2.0])


def fd(f, x, h=1e-6):
    return (np.asarray(f(x + h)) - np.asarray(f(x - h))) / (2 * h)


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- constant partials
@pytest.mark.parametrize("f", [lambda x: x + C2, lambda x: C2 + x, lambda x: x - C2, lambda x: C2 - x,
                               lambda x: np.add(x, C2), lambda x: np.subtract(C2, x), lambda x: -(x - C2)],
                         ids=["x+c", "c+x", "x-c", "c-x", "np.add", "np.subtract", "neg"])
def test_constant_partial_is_broadcast_to_the_result(f):
    y, t = jvp(f, (2.0,), (1.0,))
    assert np.shape(t) == np.shape(y) == (2,)
    close(t, fd(f, 2.0))
    close(D(lambda x: np.sum(f(x)), 2.0), np.sum(fd(f, 2.0)))


def test_constant_partial_broadcast_in_chunked_jacobian():
    J = jacobian(lambda v: v[0] - C2 + 0.0 * v[1], np.array([0.3, 0.4]))
    close(J, [[1.0, 0.0], [1.0, 0.0]])


# ----------------------------------------------------------------------------- |x| at 0
@pytest.mark.parametrize("f", [abs, math.fabs, np.abs, np.absolute, np.fabs, lambda x: abs(x + 0j),
                               lambda x: math.copysign(x, -2.0), lambda x: np.copysign(x, -2.0)],
                         ids=["abs", "math.fabs", "np.abs", "np.absolute", "np.fabs", "complex-abs",
                              "math.copysign", "np.copysign"])
def test_absolute_value_has_derivative_zero_at_zero(f):
    assert D(f, 0.0) == 0.0
    assert gradient(f, 0.0) == (0.0,)
    for x in (-0.5, 0.5):
        close(D(f, x), fd(f, x))


@pytest.mark.parametrize("f", [abs, np.abs, np.fabs, lambda a: np.abs(a + 0j)],
                         ids=["abs", "np.abs", "np.fabs", "complex"])
def test_absolute_value_of_arrays_agrees_with_scalars(f):
    x = np.array([0.0, -0.5, 0.5])
    close(jvp(f, (x,), (np.ones(3),))[1], [0.0, -1.0, 1.0])
    close(gradient(lambda a: np.sum(f(a)), x)[0], [0.0, -1.0, 1.0])


# ----------------------------------------------------------------------------- mod at integer boundaries
def test_mod_divisor_partial_where_floor_division_rounds_wrong():
    a, b = 0.4000006104218249, -1.4900001044317974
    assert (a - a % b) // b == -2.0  # the quotient floor division recovers is one off here
    assert gradient(lambda y: a % y, b) == (1.0,)
    assert D(lambda y: a % y, b) == 1.0
    assert gradient(lambda y: np.mod(a, y), b) == (1.0,)
    close(gradient(lambda y: np.sum(np.array([a, 2 * a]) % y), b)[0], 1.0 + 1.0)


@pytest.mark.parametrize("x,y", [(5.3, 1.1), (-5.3, 1.1), (5.3, -1.1),
                                 (0.4000006104218249, -1.4900001044317974)])
def test_fmod_and_mod_match_finite_differences(x, y):
    for f in (math.fmod, lambda a, b: a % b, np.fmod, np.remainder):
        close(D(lambda b: f(x, b), y), fd(lambda b: f(x, b), y), 1e-5)
        close(D(lambda a: f(a, y), x), 1.0)


# ----------------------------------------------------------------------------- selecting, replacing
@pytest.mark.parametrize("kth,axis", [(1, -1), (2, 0), ((0, 2), -1), (1, None)])
def test_partition_permutes_tangents(kth, axis):
    x = np.array([[3.0, 1.0, 2.0, 0.5], [0.1, 4.0, -1.0, 2.5], [1.5, 0.2, 0.7, -3.0]])
    t = np.arange(12.0).reshape(3, 4)
    f = lambda a: np.partition(a, kth, axis=axis)  # noqa: E731
    close(jvp(f, (x,), (t,))[1], (f(x + 1e-6 * t) - f(x - 1e-6 * t)) / 2e-6)
    w = np.cos(np.arange(f(x).size)).reshape(f(x).shape)
    close(np.sum(gradient(lambda a: np.sum(f(a) * w), x)[0] * t), np.sum(jvp(f, (x,), (t,))[1] * w))


@pytest.mark.parametrize("method", ["sort", "partition"])
def test_in_place_sort_and_partition_follow_the_values(method):
    def f(a):
        b = a * 2.0
        b.sort() if method == "sort" else b.partition(1)
        return b * np.arange(1.0, 5.0)

    x = np.array([0.3, -1.0, 2.0, 0.1])
    t = np.array([1.0, 2.0, 3.0, 4.0])
    close(jvp(f, (x,), (t,))[1], (f(x + 1e-6 * t) - f(x - 1e-6 * t)) / 2e-6)
    close(gradient(lambda a: np.sum(f(a)), x)[0] @ t, np.sum(jvp(f, (x,), (t,))[1]))


def test_nan_to_num_blocks_the_entries_it_replaced():
    x = np.array([np.inf, 1.5, np.nan, -np.inf])
    expected = [0.0, 1.0, 0.0, 0.0]
    close(gradient(lambda a: np.sum(np.nan_to_num(a)), x)[0], expected)
    close(jvp(lambda a: np.nan_to_num(a, posinf=1.0), (x,), (np.ones(4),))[1], expected)


def test_an_identity_result_stays_its_argument():
    def f(a):
        b = np.asarray(a)  # the same array: a write through b changes a
        b[0] = 0.0
        return np.sum(a * a)

    x = np.array([1.0, 2.0, 3.0])
    close(gradient(lambda a: f(a * 1.0), x)[0], [0.0, 4.0, 6.0])
    close(jvp(lambda a: f(a * 1.0), (x,), (np.ones(3),))[1], 10.0)

    def g(a):
        r = np.real(a)  # a itself for a real array
        r[1] = 5.0
        return np.sum(a)

    close(gradient(lambda a: g(a * 1.0), x)[0], [1.0, 0.0, 1.0])


def test_cumprod_with_zeros_at_second_order():
    x = np.array([1.5, 0.0, 2.0, 0.0, 3.0])
    f = lambda a: np.sum(np.cumprod(a) * np.arange(1.0, 6.0))  # noqa: E731
    H = hessian(f, x)
    g = lambda a: gradient(f, a)[0]  # noqa: E731
    expected = np.stack([(g(x + 1e-6 * e) - g(x - 1e-6 * e)) / 2e-6 for e in np.eye(5)], axis=1)
    close(H, expected, 1e-5)
    close(hessian(lambda a: np.prod(a), np.array([0.0, 0.0, 2.0])), [[0, 2, 0], [2, 0, 0], [0, 0, 0]])


# ----------------------------------------------------------------------------- arguments
def test_norm_of_a_list():
    close(gradient(lambda x: np.linalg.norm([x, 2.0]), 1.0)[0], 1.0 / math.sqrt(5.0))
    close(D(lambda x: np.linalg.norm([x, 2.0, 2]), 1.0), 1.0 / 3.0)


def test_keyword_arguments_reach_the_rules():
    w = np.arange(6.0).reshape(3, 2)
    close(gradient(lambda a: np.sum(np.moveaxis(a, source=0, destination=1) * w), np.ones((2, 3)))[0], w.T)
    close(D(lambda x: pow(x, exp=3), 2.0), 12.0)
    close(gradient(lambda x: pow(base=2.0, exp=x), 3.0)[0], 8.0 * math.log(2.0))
    close(D(lambda x: complex(x, imag=2.0).real, 1.5), 1.0)
    close(gradient(lambda x: np.sum(np.real(val=x * 1.0)), np.ones(2))[0], [1.0, 1.0])


@pytest.mark.parametrize("f", [lambda x: np.r_[x], lambda x: np.r_[x, 2.0, x[:1]],
                               lambda x: np.c_[x, x].ravel()],
                         ids=["r_", "r_-mixed", "c_"])
def test_index_tricks_differentiate(f):
    x = np.array([3.0, 1.0, 2.0])
    t = np.array([1.0, 2.0, 3.0])
    expected = (f(x + 1e-6 * t) - f(x - 1e-6 * t)) / 2e-6
    close(jvp(f, (x,), (t,))[1], expected)
    close(jacobian(f, x, mode="reverse") @ t, expected)


def test_key_only_differentiated_uses_the_containers_lookup():
    """``table[x]`` looks up by ``x`` itself, as ``x in table`` does: a plain key equal to it is
    an equality that held, refused (the entry may be a memo of a function of ``x``, whose
    derivative a constant would silently drop); a key stored in the same run is ``x``."""
    table = {1.5: 10.0}
    with pytest.raises(capstan.NoRuleError, match="equality"):
        gradient(lambda x: table[x] * 1.0 + x, 1.5)
    assert gradient(lambda x: {x: 10.0 * x}[x] + x, 1.5) == (11.0,)


# ----------------------------------------------------------------------------- types
@pytest.mark.parametrize("f", [np.sin, np.exp, lambda a: a * 2.0 + 1.0, lambda a: np.sum(a), np.float32,
                               lambda a: np.maximum(a, 0.1)],
                         ids=["sin", "exp", "affine", "sum", "float32", "maximum"])
def test_float32_in_float32_out(f):
    x = np.array([0.5, 0.25], dtype=np.float32)
    y, t = jvp(f, (x,), (np.ones(2, dtype=np.float32),))
    assert np.result_type(t) == np.result_type(y) == np.float32
    assert gradient(lambda a: np.sum(f(a)), x)[0].dtype == np.float32


def test_scalar_casts_cast_the_tangent():
    y, t = jvp(np.float32, (0.5,), (1.0,))
    assert type(y) is type(t) is np.float32
    single = np.array([0.5], dtype=np.float32)
    assert gradient(lambda a: np.float64(a[0]) * 2.0, single)[0].dtype == np.float32


@pytest.mark.parametrize("f", [lambda x: x + 1j, lambda x: x * (1 + 1j), lambda x: np.array([x, 1j]),
                               lambda x: x + np.array([1j, 2.0])], ids=["x+1j", "x*c", "array", "array+c"])
def test_a_complex_output_gets_a_complex_tangent(f):
    y, t = jvp(f, (0.5,), (1.0,))
    assert np.iscomplexobj(y) and np.iscomplexobj(t)
    close(t, fd(f, 0.5))


# ----------------------------------------------------------------------------- nesting entry points
def nested(f, s=0.7):
    """``f`` differentiated by forward and reverse mode, against central differences."""
    expected = fd(f, s, 1e-5)
    close(D(f, s), expected, 1e-5)
    close(gradient(f, s)[0], expected, 1e-5)


X0 = np.array([0.3, -0.5])


@pytest.mark.parametrize("f", [
    lambda s: np.sum(jvp(np.sin, (X0,), (s * C2,))[1]),  # with respect to the tangent
    lambda s: np.sum(jvp(np.sin, (s * C2,), (C2,))[1]),  # ... the point
    lambda s: np.sum(jvp(lambda a, b: a * b, (s * C2, X0), (C2, s * X0))[1]),
    lambda s: np.sum(np.sin(jacobian(np.sin, s * C2))),
    lambda s: np.sum(np.sin(jacobian(np.sin, s * C2, mode="reverse"))),
    lambda s: np.sum(jacobian(lambda v: np.outer(v, v), s * C2, chunk=1)),
    lambda s: np.sum(pullback(np.sin, s * C2)[1](C2)[0]),  # ... the point of a pullback
    lambda s: np.sum(pullback(np.sin, X0)[1](s * C2)[0]),  # ... its cotangent
    lambda s: np.sum(hessian(lambda v: np.sum(v ** 3), s * C2)),
    lambda s: np.sum(gradient(lambda v: np.prod(v) * v[0], s * C2)[0]),
    lambda s: jvp(math.sin, (s,), (s * s,))[1],
], ids=["jvp-tangent", "jvp-point", "jvp-two", "jacobian-fwd", "jacobian-rev", "jacobian-chunk",
        "pullback-point", "pullback-dy", "hessian", "gradient", "jvp-scalar"])
def test_entry_points_nest(f):
    nested(f)


def test_a_shadowed_array_handed_to_an_entry_point_keeps_its_derivative():
    def f(s):
        x = np.zeros(2)
        x[0] = s  # a plain array holding a differentiated value
        x[1] = 2.0 * s
        return np.sum(jacobian(np.sin, x)) + np.sum(jvp(np.exp, (x,), (C2,))[1])

    nested(f)


@pytest.mark.parametrize("reduce", [np.sum, np.max, np.mean, lambda z: np.sum([z, 0.5])],
                         ids=["sum", "max", "mean", "sum-list"])
def test_reverse_over_reverse_keeps_the_imaginary_part(reduce):
    z, w = 0.3 + 0.4j, 0.5 - 0.2j

    def vjp(z, w):  # the vjp of a reduction of a complex scalar: w itself
        return pullback(reduce, z)[1](w)[0]

    _, back = pullback(vjp, z, w)
    assert back(1.0 + 2.0j)[1] == 1.0 + 2.0j
    assert jvp(lambda w: vjp(z, w), (w,), (1.0 + 2.0j,))[1] == 1.0 + 2.0j


def test_pullback_of_a_complex_output_nests():
    def f(s):
        y, back = pullback(lambda z: z * z, (1.0 + 2.0j) * s)
        return np.imag(back(1.0 + 0j)[0]) + np.real(y)

    nested(f)


def test_gamma_to_third_order():
    x = 1.7
    d2 = D(lambda a: D(math.gamma, a), x)
    close(d2, fd(lambda a: D(math.gamma, a), x), 1e-5)
    second = lambda a: D(lambda b: D(math.lgamma, b), a)  # noqa: E731
    close(D(second, x), fd(second, x), 1e-5)


def test_interp_at_second_order():
    xp, fp = np.arange(4.0), np.array([0.0, 1.0, 0.5, 2.0])
    f = lambda a: np.sum(np.interp(a, xp, fp * a[0]) ** 2)  # noqa: E731
    x = np.array([0.5, 1.7, 2.2])
    g = lambda a: gradient(f, a)[0]  # noqa: E731
    expected = np.stack([(g(x + 1e-6 * e) - g(x - 1e-6 * e)) / 2e-6 for e in np.eye(3)], axis=1)
    close(hessian(f, x), expected, 1e-5)


def test_cmath_phase_nested():
    nested(lambda s: cmath.phase(complex(s, 1.0 + s * s)))


def test_interp_refuses_what_its_rules_do_not_model():
    xp, fp = np.arange(4.0), np.array([0.0, 1.0, 0.5, 2.0])
    with pytest.raises(TypeError, match="not in xp"):
        gradient(lambda p: np.interp(1.5, p, fp), xp)
    with pytest.raises(TypeError, match="period"):
        D(lambda x: np.interp(x, xp, fp, period=3.0), 1.5)
    # outside the samples, a constant left/right value carries no derivative of fp
    g = gradient(lambda f: np.sum(np.interp(np.array([-1.0, 5.0]), xp, f, left=-3.0, right=3.0)), fp)[0]
    close(g, np.zeros(4))


def test_keyword_only_options_of_numpy_2():
    x = np.array([0.3, -1.2, 0.8, 2.0])
    close(D(lambda s: np.var(x * s, correction=1), 1.5), fd(lambda s: np.var(x * s, correction=1), 1.5))
    a, t = np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([[0.3, 0.7], [0.7, 0.5]])
    f = lambda m: np.linalg.cholesky(m, upper=True)  # noqa: E731
    close(jvp(f, (a,), (t,))[1], (f(a + 1e-6 * t) - f(a - 1e-6 * t)) / 2e-6)


def test_math_pow_has_no_exponent_derivative_for_a_negative_base():
    """(-2)^b has no real slope in b: refused in both modes, not a NaN."""
    for slope in (D, lambda f, b: gradient(f, b)[0], lambda f, b: jvp(f, (b,), (1.0,))[1]):
        for power in (math.pow, np.power):  # (float ** b is complex past a negative base: its own rule)
            with pytest.raises(capstan.NoRuleError, match="came out NaN"):
                slope(lambda b: power(-2.0, b), 3.0)
    with pytest.raises(capstan.NoRuleError, match="came out NaN"):
        jvp(lambda a, b: np.power(a, b), (np.array([-0.5, 1.5]), 3.0), (np.ones(2), 1.0))
    assert np.allclose(jvp(lambda a, b: np.power(a, b), (np.array([-0.5, 1.5]), 3.0), (np.ones(2), 0.0))[1],
                       3.0 * np.array([0.25, 2.25]))
    close(D(lambda b: math.pow(2.0, b), 3.0), 8.0 * math.log(2.0))
    assert D(lambda b: math.pow(0.0, b), 3.0) == 0.0


def test_tanh_slope_of_arrays_is_exact_at_every_scale():
    """``np.tanh``'s slope on float64 arrays is ``1 - tanh^2`` where that is exact, and
    ``1 / cosh^2`` where tanh is near +-1 (from |x| > 19 on 1 - tanh^2 is 0): within 1e-12
    of the closed form everywhere, in both modes and in a Hessian."""
    x = np.array([0.0, 0.3, -2.0, 4.0, 7.5, -12.0, 19.5, 25.0, 400.0, -800.0, 1e-300])
    exact = np.array([1.0 / math.cosh(v) / math.cosh(v) if abs(v) < 700 else 0.0 for v in x])
    second = np.array([-2.0 * math.tanh(v) * e for v, e in zip(x, exact)])
    assert np.allclose(gradient(lambda v: np.sum(np.tanh(v)), x)[0], exact, rtol=1e-12, atol=0)
    assert np.allclose(jvp(lambda v: np.tanh(v), (x,), (np.ones_like(x),))[1], exact, rtol=1e-12, atol=0)
    assert np.allclose(D(lambda t: np.tanh(x * t), 1.0), x * exact, rtol=1e-12, atol=0)
    h = hessian(lambda v: np.sum(np.tanh(v)), x[:6])
    assert np.allclose(np.diag(h), second[:6], rtol=1e-10, atol=1e-300)


def test_norm_second_derivative_at_zero_is_refused_as_abs_is():
    """At x = 0 the Euclidean norm's slope is 0 (the subgradient ``abs`` takes), a first
    derivative's convention; its second derivative there does not exist (it is infinite),
    so it is refused, as ``abs``'s is (it was the identity, then 0).  Away from 0 the
    Hessian is ``(I - u u^T) / |x|``."""
    norm = np.linalg.norm
    assert np.array_equal(gradient(lambda v: norm(v), np.zeros(2))[0], np.zeros(2))
    with pytest.raises(NoRuleError):
        hessian(lambda v: norm(v), np.zeros(2))
    for f in (lambda s: norm([s, 0.0]), abs):
        with pytest.raises(NoRuleError):
            D(lambda t: D(f, t), 0.0)
    u = np.array([0.6, 0.8])
    np.testing.assert_allclose(hessian(lambda v: norm(v), 5 * u), (np.eye(2) - np.outer(u, u)) / 5)
    np.testing.assert_allclose(jacobian(lambda v: gradient(lambda w: norm(w), v)[0], np.array([1e-8, 0.0])),
                               np.diag([0.0, 1e8]), atol=1e-6)
