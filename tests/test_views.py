"""Writes through NumPy views: derivatives follow the shared memory, in both modes."""
import numpy as np
import pytest

import capstan


def fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def read_old_view_after_write(x):
    a = np.ones(3)
    v = a[:2]
    a[0] = 2 * x
    return v.sum()


def write_view_of_untracked(x):
    a = np.zeros(3)
    v = a[:2]
    v[0] = x * 2.0
    return np.sum(a)


def inplace_on_view(x):
    a = np.ones(3) * x
    v = a[1:]
    v += x
    return np.sum(a)


def chained_subscripts(x):
    a = np.zeros((2, 2))
    a[0][1] = x * x
    return a[0, 1] + np.sum(a)


def write_through_reshape(x):
    a = np.array([1.0, 2.0, 3.0]) * x
    b = a.reshape(3, 1)
    b[2, 0] = x * x
    return np.sum(a) + np.sum(b)


def overwrite_under_live_view(x):
    a = np.array([1.0, 2.0, 3.0]) * x
    v = a[1:]
    a[2] = 5.0
    return np.sum(v * v)


def transposed_rows(x):
    m = np.arange(6.0).reshape(2, 3) * x
    t = m.T
    t[1] = np.sin(t[1]) * x
    return np.sum(m ** 2)


def fancy_then_basic(x):
    a = np.linspace(0.0, 1.0, 5) * x
    a[[0, 3]] = x ** 3
    row = a[1:4]
    row *= 2.0
    return np.sum(a * a)


CASES = [read_old_view_after_write, write_view_of_untracked, inplace_on_view, chained_subscripts,
         write_through_reshape, overwrite_under_live_view, transposed_rows, fancy_then_basic]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("x", [0.7, -1.3])
def test_views_forward_and_reverse(f, x):
    want = fd(f, x)
    assert capstan.D(f, x) == pytest.approx(want, rel=1e-6, abs=1e-8)
    assert capstan.gradient(f, x)[0] == pytest.approx(want, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_views_second_derivative(f):
    want = fd(lambda s: capstan.D(f, s), 0.7, 1e-5)
    assert capstan.D(lambda s: capstan.gradient(f, s)[0], 0.7) == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_views_replayed_from_a_tape():
    tape = capstan.record_tape(fancy_then_basic, 0.5)
    for x in (0.7, -1.3):
        assert tape(x) == pytest.approx(fancy_then_basic(x))
        assert tape.gradient(x)[0] == pytest.approx(fd(fancy_then_basic, x), rel=1e-6)


def test_input_array_written_through_a_view():
    def f(a):
        v = a[::2]
        v *= 3.0
        return np.sum(a * a)

    x = np.array([1.0, 2.0, 3.0, 4.0])
    (g,) = capstan.gradient(f, x.copy())
    np.testing.assert_allclose(g, [18.0, 4.0, 54.0, 8.0])


def test_dtype_changing_view_is_refused():
    def f(x):
        a = np.zeros(4)
        v = a.view(np.int64)
        a[0] = x
        v[1] = 7
        return np.sum(a)

    with pytest.raises(TypeError, match="view"):
        capstan.gradient(f, 1.0)


def test_differentiated_functions_are_not_kept_alive():
    import gc
    import weakref

    def make():
        scale = np.ones(3)

        def f(x):
            a = np.zeros(3)
            a[1] = x * 2.0
            return np.sum(a * scale) + x * x

        return f

    f = make()
    ref = weakref.ref(f)
    assert capstan.D(f, 1.5) == 5.0
    assert capstan.gradient(f, 1.5) == (5.0,)
    assert capstan.jacobian(lambda v, fn=f: fn(v[0]) * v, np.ones(2)).shape == (2, 2)
    del f
    gc.collect()
    assert ref() is None


def test_iteration_over_differentiated_arrays():
    import math

    def loop(x):
        out = []
        for v in x:  # elements of a differentiated array stay differentiated
            out.append(math.sin(v) if v > 0.3 else v * v)
        a, b = x[:2]
        return sum(out) + a * b + sum(list(x)) + max(x)

    x = np.array([0.2, 0.9, 0.5])
    want = np.array([0.4 + 0.9 + 1.0, math.cos(0.9) + 0.2 + 1.0 + 1.0, math.cos(0.5) + 1.0])
    np.testing.assert_allclose(capstan.gradient(loop, x.copy())[0], want, rtol=1e-12)
    np.testing.assert_allclose(capstan.jacobian(loop, x.copy()), want, rtol=1e-12)
    y, t = capstan.jvp(lambda v: [w * 2.0 for w in v], (x,), (np.ones(3),))
    assert y == [0.4, 1.8, 1.0] and t == [2.0, 2.0, 2.0]
    for f in (lambda s: list(np.asarray(s) * 1.0), lambda s: list(np.full((), s))):
        with pytest.raises(TypeError) as plain:
            f(1.0)
        with pytest.raises(TypeError) as routed:
            capstan.D(f, 1.0)
        assert str(routed.value) == str(plain.value)  # the same error as plain Python
