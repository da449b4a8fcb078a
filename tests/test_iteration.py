"""Iteration in routed code: ``for v in x``, ``a, b = x`` and ``f(*x)`` call a context's
primitives on ``iter`` for the values they admit (capstan's read a plain array that
holds differentiated values element by element: these were silently 0), and are
otherwise CPython's own -- results, errors and what hooks see are plain Python's."""
import collections
import functools
import itertools
import math
import operator

import numpy as np
import pytest

import capstan
import overdub


def written(x):
    a = np.zeros(3)
    a[0] = x
    a[2] = math.sin(x)
    return a


def loop(x):
    s = 0.0
    for v in written(x):
        s = s + v * v
    return s


def nested_loop(x):
    a = np.zeros((2, 2))
    a[0, 1] = x
    a[1, 0] = x * x
    r = 0.0
    for row in a:
        for v in row:
            r += v * 3.0
    return r


def comprehension(x):
    return sum([v * v for v in written(x)]) + max(v for v in written(x))


def unpacking(x):
    u, _, w = written(x)
    first, *rest = written(x)
    return u * w + first * rest[1]


def star_call(x):
    return math.hypot(*written(x))


def enumerated(x):
    return sum(i * v for i, v in enumerate(written(x)))


def looped_list(x):
    return [v * 2.0 for v in written(x)][2]


def starred(x):
    a = written(x)
    return [*a][0] * (*a, 1.0)[2] + max({*a}) + (lambda *v: v[2])(*a, 1.0)


def yielded(x):
    def elements():
        yield from written(x)
    return sum(v * v for v in elements())


def through_builtins(x):
    a = written(x)
    return (list(reversed(a))[0] + functools.reduce(operator.add, a) + list(itertools.accumulate(a))[2]
            + list(itertools.chain(a, [1.0]))[2] + list(dict.fromkeys(a))[2] + collections.deque(a)[0]
            + sum(u * v for u, v in itertools.pairwise(a)) + list(itertools.islice(a, 1, None))[1]
            + sum(u * v for u, v in itertools.product(a, a)) + max(itertools.compress(a, [1, 0, 1])))


def rows_written_as_lists(x):
    a = np.zeros((2, 3))
    a[0] = [x, x * x, 1.0]
    a[1, :2] = (math.sin(x), 2.0)
    return float(np.sum(a * a))


def elements_compared(x):
    a = list(written(x))
    a.remove(x)
    return a[a.index(0.0) - 1] * a.count(0.0) + x * [x, 2.0].index(2.0)


PROGRAMS = [loop, nested_loop, comprehension, unpacking, star_call, enumerated, looped_list, starred, yielded,
            through_builtins, rows_written_as_lists, elements_compared]


def _difference(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_elements_of_a_written_plain_array_keep_their_derivative(f):
    x = 0.7
    expected = _difference(f, x)
    assert capstan.D(f, x) == pytest.approx(expected, rel=1e-6)
    assert capstan.gradient(f, x)[0] == pytest.approx(expected, rel=1e-6)
    second = _difference(lambda z: capstan.D(f, z), x, 1e-4)
    assert capstan.D(lambda z: capstan.D(f, z), x) == pytest.approx(second, rel=1e-5)
    assert capstan.hessian(f, x) == pytest.approx(second, rel=1e-5)


def test_arrays_without_derivatives_iterate_as_plain_python():
    def plain(x):
        a = np.arange(3.0)
        out = [type(v).__name__ for v in a]
        u, v, w = a
        return x * (u + v + w), out

    assert capstan.D(lambda x: plain(x)[0], 2.0) == 3.0
    assert capstan.gradient(lambda x: plain(x)[0], 2.0) == (3.0,)


def _plain_error(f, *args):
    try:
        f(*args)
    except Exception as exc:
        return type(exc), str(exc)
    return None


ERRORS = [
    lambda x: [v for v in np.float64(x) * np.zeros(())],      # 0-d array
    lambda x: [v for v in 5],
    lambda x: (lambda a, b: a)(*written(x)),                  # too many positional arguments
]


def _unpack_two(x):
    a, b = written(x)
    return a


def _unpack_list(x):
    a, b = [x, x, x]
    return a


@pytest.mark.parametrize("f", ERRORS + [_unpack_two, _unpack_list])
def test_iteration_errors_are_plain_pythons(f):
    expected = _plain_error(f, 0.5)
    assert expected is not None
    for entry in (capstan.D, lambda g, x: capstan.gradient(g, x)):
        with pytest.raises(expected[0]) as info:
            entry(f, 0.5)
        assert str(info.value) == expected[1]


class Counting(overdub.Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata.append(getattr(f, "__name__", f))


class Elementwise(overdub.Context):
    """Iterates a list backwards, everything else as usual."""

    @overdub.primitive(iter, list)
    def backwards(self, x):
        self.metadata.append(len(x))
        return iter(x[::-1])


def program(seq):
    out = []
    for v in seq:
        out.append(v)
    a, b = seq[:2]
    return out, a, b, max(*seq), [v for v in (seq, 1)[0]]


def test_a_primitive_on_iter_sees_loops_unpackings_and_star_calls():
    seen = []
    got = overdub.overdub(Elementwise(seen), program, [1, 2, 3])
    assert got == ([3, 2, 1], 2, 1, 3, [3, 2, 1])
    assert seen == [3, 2, 3, 3]
    assert overdub.overdub(Elementwise([]), program, (1, 2, 3)) == program((1, 2, 3))  # (a tuple: not admitted)


def test_builtins_that_iterate_read_through_the_primitive():
    seen = []
    digits = lambda a, b: a * 10 + b  # noqa: E731
    got = overdub.overdub(Elementwise(seen), lambda s: (functools.reduce(digits, s), list(reversed(s)),
                                                       max(s), max(s, [0]), list(itertools.chain(s, s))), [1, 2, 3])
    assert got == (321, [1, 2, 3], 3, [1, 2, 3], [3, 2, 1, 3, 2, 1])
    assert seen == [3, 3, 3, 3, 3]


def test_hooks_do_not_see_iteration():
    events = []
    assert overdub.overdub(Counting(events), program, [1, 2, 3]) == program([1, 2, 3])
    assert "iter" not in events and events.count("max") == 1


def test_a_for_loop_error_keeps_plain_pythons_traceback():
    def bad():
        for v in 5:
            return v

    with pytest.raises(TypeError) as info:
        overdub.overdub(Elementwise([]), bad)
    assert str(info.value) == "'int' object is not iterable"
    frames = [tb.tb_frame.f_code.co_name for tb in _walk(info.value.__traceback__)]
    assert frames[-1] == "bad" and not any(n == "slot" for n in frames)


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next
