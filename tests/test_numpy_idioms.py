"""Idioms of unmodified code that once went wrong, in both modes and at second order: an
array combined with a Python list or tuple (NumPy makes the sequence an array), writes
through an integer-array index that names a position twice (the last write stays, so
only it gets a derivative), a NumPy scalar's ``item()`` and a value sent into a
generator.  Each is checked against central differences."""

import numpy as np
import pytest

import capstan

X = np.array([0.7, -1.3, 2.1])


def fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def _in_place_with_lists(x):
    y = x * 1.0
    y += [1.0, x[0], 2.0]
    y *= (2.0, x[1], 1.0)
    return np.sum(y ** 2)


def _repeated_write(x):
    y = x * 1.0
    y[[0, 0, 2]] += 1.0  # row 0 gets + 1 once: NumPy reads, adds, then writes twice
    y[[1, 1]] = x[[2, 0]]  # the second write stays: y[1] = x[0]
    return y[0] ** 3 + 10.0 * y[1] + np.sum(y ** 2)


def _repeated_write_2d(x):
    y = np.outer(x, x)
    y[[0, 0], [1, 1]] = x[[1, 2]] ** 2
    y[([2, 2], slice(None))] = np.stack([x, 2 * x])
    return np.sum(y * np.arange(9.0).reshape(3, 3))


def _repeated_write_into_plain(x):
    y = np.zeros(4)
    y[[3, 0, 3]] = x * x[0]
    return y[3] * 5.0 + y[0]


PROGRAMS = {
    "array * list": lambda x: np.sum(x * [1, 2, 3.0]),
    "list * array": lambda x: np.sum([1, 2, 3.0] * x),
    "array + tuple": lambda x: np.sum(np.sin(x) + (1, 2, 3.0)),
    "array ** list": lambda x: np.sum(np.abs(x) ** [1, 2, 3]),
    "list / array": lambda x: np.sum([1, 2, 3.0] / x),
    "array @ list": lambda x: x @ [1, 2, 3.0],
    "array * list of differentiated": lambda x: np.sum(x * [x[0], 2.0, x[1]]),
    "array - nested list": lambda x: np.sum((x - [[1.0], [2.0]]) ** 2),
    "list of differentiated ** array": lambda x: np.sum(np.abs([x[0], 1.5]) ** x[1:]),
    "tuple * array": lambda x: np.sum((x[0], x[1]) * x[:2]),
    "scalar + list": lambda x: np.sum(x[0] + [1.0, x[2]]),
    "in-place with lists": _in_place_with_lists,
    "repeated write": _repeated_write,
    "repeated write 2-d": _repeated_write_2d,
    "repeated write into a plain array": _repeated_write_into_plain,
    "reflected special methods": lambda x: np.sum(x.__rsub__(1.0) * x.__rtruediv__(2.0)) + x[0].__rpow__(1.5),
    "max with initial": lambda x: np.max(x, initial=0.5) + np.min(x ** 2, initial=0.1) + np.sum(x.max(axis=0, initial=9.0)),
    "view": lambda x: (lambda y: (y.__setitem__(0, 5 * x[1]), np.sum(x * x))[1])(x.view()),
    "correlate": lambda x: np.sum(np.correlate(x, x[:2], "full") ** 2) + np.sum(np.correlate(x[:2], x) ** 2),
    "correlate same, complex": lambda x: np.sum(np.abs(np.correlate(x * 1j + 1, x[::-1], "same")) ** 2),
    "matrix_rank as a factor": lambda x: np.linalg.matrix_rank(np.outer(x, x)) * np.sum(x ** 3),
    "unique rows": lambda x: np.sum(np.unique(np.stack([x, x, x ** 2]), axis=0) ** 2 * np.arange(3.0)),
    "unique columns with counts": lambda x: (lambda u, i, c: np.sum(u * c) + np.sum(i))(
        *np.unique(np.stack([x, x]), axis=1, return_inverse=True, return_counts=True)),
    "nan functions of a list": lambda x: np.nansum([x[0], np.nan, x[1] ** 2]) + np.nanmax([x[2], np.nan])
    + np.sum(np.isnan([x[0], 1.0])),
    "repeat of a scalar": lambda x: np.sum(np.repeat(x[0], 3) * x) + np.repeat(x[1] ** 2, 2)[1],
    "linear algebra of nested lists": lambda x: np.linalg.eigvalsh([[x[0], 0.1], [0.1, x[1] ** 2 + 3.0]])[0]
    + np.linalg.svd([[x[0], x[2]], [0.3, 2.0]])[1][0] + __import__("scipy.linalg").linalg.expm(
        [[x[0], 0.1], [x[1], 0.5]])[0, 1],
    "isclose at the point": lambda x: x[0] * 2.0 if np.isclose(x[0], 0.7) and np.allclose(x, X) else x[1],
}


def check(f, second_order=True):
    """``f``'s gradient (reverse) and Jacobian (forward) against central differences, and
    its Hessian against central differences of the gradient."""
    want = fd(f, X)
    assert np.allclose(capstan.gradient(f, X)[0], want, rtol=1e-6, atol=1e-7)
    assert np.allclose(capstan.jacobian(f, X, mode="forward"), want, rtol=1e-6, atol=1e-7)
    if second_order:
        hess = np.array([fd(lambda z: capstan.gradient(f, z)[0][i], X, 1e-5) for i in range(X.size)])
        assert np.allclose(capstan.hessian(f, X), hess, rtol=1e-5, atol=1e-5)


_SECOND_ORDER = {"array * list of differentiated", "repeated write", "in-place with lists", "repeated write 2-d",
                 "repeat of a scalar", "linear algebra of nested lists"}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_central_differences_in_both_modes(name):
    check(PROGRAMS[name], second_order=name in _SECOND_ORDER)


@pytest.mark.parametrize("f", [lambda x: [1, 2] * x, lambda x: x * [1.0], lambda x: x[0] * [x[1], 2.0],
                               lambda x: np.float64(2.0) * x[0] * [1.0]])
def test_a_sequence_times_a_float_is_pythons_type_error(f):
    with pytest.raises(TypeError) as plain:
        f(X if f.__code__.co_names else 2.0)
    with pytest.raises(TypeError) as ours:
        capstan.gradient(f, X if f.__code__.co_names else 2.0)
    assert str(ours.value) == str(plain.value)
    assert "Tagged" not in str(ours.value)


def test_setitem_back_keeps_only_the_surviving_write():
    from capstan.rules.indexing_rules import setitem_back
    g = np.array([1.0, 2.0, 3.0])
    rest, part = setitem_back(g, (4,), [0, 2, 0, 2])
    assert rest.tolist() == [0.0, 2.0, 0.0]
    assert part.tolist() == [0.0, 0.0, 1.0, 3.0]
    rest, part = setitem_back(g, (), [1, 1])  # a broadcast scalar: one write stays
    assert part == 2.0 and rest.tolist() == [1.0, 0.0, 3.0]
    rest, part = setitem_back(np.arange(6.0).reshape(2, 3), (2, 2), (slice(None), [1, 1]))
    assert part.tolist() == [[0.0, 1.0], [0.0, 4.0]] and rest.tolist() == [[0.0, 0.0, 2.0], [3.0, 0.0, 5.0]]


def _sent_into_a_generator(x):
    def squares():
        y = x[0]
        while True:
            y = yield y * y
    it = squares()
    v = next(it)
    return it.send(v + x[1])


SCALAR_PROGRAMS = {
    "generic.item": lambda x: np.sum(x).item() * x[0] + np.float64(x[1]).item() ** 2,
    "ndarray.item": lambda x: np.array([[x[0], 1.0]]).item(0, 0) * x[1] + np.array(x[2]).item(),
    "generator.send": _sent_into_a_generator,
}


@pytest.mark.parametrize("name", sorted(SCALAR_PROGRAMS))
def test_scalar_idioms_in_both_modes_and_at_second_order(name):
    check(SCALAR_PROGRAMS[name])


def test_item_gives_a_python_number_as_numpy_does():
    seen = []

    def f(x):
        seen.append((type(np.sum(x).item()), type(x[0].item()), type((x[0] * 1j).item())))
        return x[0]

    capstan.gradient(f, X)
    assert seen == [(float, float, complex)]


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n, m", [(5, 3), (3, 5), (4, 4), (1, 3)])
def test_correlate_values_are_numpys(mode, n, m):
    rng = np.random.default_rng(n * 10 + m)
    a, v = rng.normal(size=n) + 1j * rng.normal(size=n), rng.normal(size=m) - 0.5j * rng.normal(size=m)
    seen = []

    def f(x):
        seen.append(np.correlate(a * x[0], v, mode))
        return x[0]

    capstan.gradient(f, X)
    assert np.allclose(np.asarray(seen[0]), np.correlate(a * X[0], v, mode))


def test_a_view_as_another_dtype_is_refused():
    with pytest.raises(capstan.NoRuleError, match="view"):
        capstan.gradient(lambda x: np.sum(x.view(np.int64)) * x[0], X)


def _written(x):
    a = np.zeros(3)
    a[0], a[2] = x[0], x[1] * x[2]
    return a


ITERATED = {  # a plain array holding differentiated values (np.full, written into), iterated in C
    "sum": lambda x: sum(np.full(2, x[0])) + sum(_written(x)),
    "max, min": lambda x: max(_written(x) ** 2) + min(np.full(3, x[1]) + [0.0, 1.0, 2.0]),
    "sorted, list, tuple": lambda x: sorted(_written(x))[2] + list(np.full(2, x[2]))[1] * tuple(_written(x))[0],
    "zip, enumerate, map": lambda x: sum(a * b for a, b in zip([1.0, 2.0, 3.0], _written(x)))
    + sum(i * v for i, v in enumerate(np.full(3, x[0]))) + sum(map(float, _written(x))),
    "iter, next": lambda x: next(iter(_written(x))) * 3.0 + sum(v * v for v in iter(_written(x))),
    "nested": lambda x: np.sum(sum(np.full((2, 2), x[1] ** 2))),
}


@pytest.mark.parametrize("name", sorted(ITERATED))
def test_a_plain_array_holding_derivatives_iterated_by_builtins(name):
    check(ITERATED[name])
