"""capstan changes nothing global: other threads, plain calls and modules are untouched."""
import builtins
import math
import threading

import numpy as np
import scipy.ndimage

import capstan


def model(x, log):
    a = np.zeros(3)
    a[1] = math.sin(x) * x
    log.append(float(a[1]))
    return float(np.sum(a * a)) + x ** 3


def d_model(x):
    s = math.sin(x) * x
    return 2 * s * (math.cos(x) * x + math.sin(x)) + 3 * x ** 2


def test_threads_differentiate_and_run_plainly_at_once():
    errors = []
    barrier = threading.Barrier(3)

    def differentiate(mode, x0):
        barrier.wait()
        for i in range(40):
            x = x0 + 0.01 * i
            got = capstan.D(lambda v: model(v, []), x) if mode == "D" else \
                capstan.gradient(lambda v: model(v, []), x)[0]
            if abs(got - d_model(x)) > 1e-9 * max(1.0, abs(d_model(x))):
                errors.append((mode, x, got))

    def plain():
        barrier.wait()
        for i in range(200):
            log = []
            y = model(0.3 + 0.001 * i, log)
            if type(y) is not float or type(log[0]) is not float:
                errors.append(("plain", type(y), type(log[0])))

    threads = [threading.Thread(target=differentiate, args=("D", 0.4)),
               threading.Thread(target=differentiate, args=("gradient", -0.7)),
               threading.Thread(target=plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_nothing_patched():
    before = (math.sin, builtins.float, builtins.isinstance, np.ndarray.__setitem__, np.sum)
    capstan.gradient(lambda x: math.sin(float(x)) * np.sum(np.ones(2) * x), 0.5)
    capstan.D(lambda x: isinstance(x, float) and x * x, 0.5)
    assert (math.sin, builtins.float, builtins.isinstance, np.ndarray.__setitem__, np.sum) == before
    log = []
    assert model(0.5, log) == model(0.5, [])
    assert type(log[0]) is float


def test_c_functions_that_store_values_keep_derivatives():
    import bisect
    import collections
    import heapq

    def heap(x):
        h = []
        heapq.heappush(h, x * 2.0)
        heapq.heappush(h, 5.0)
        return heapq.heappop(h) * x

    queue = collections.deque()

    def deq(x):
        queue.clear()
        queue.append(x * x)
        queue.appendleft(1.0)
        return queue[1] + queue[0]

    def insort(x):
        xs = [1.0, 5.0]
        bisect.insort(xs, x * 3.0)
        return xs[1]

    for f, x, want in ((heap, 1.0, 4.0), (deq, 3.0, 6.0), (insort, 1.0, 3.0)):
        assert capstan.D(f, x) == want
        assert capstan.gradient(f, x) == (want,)
    assert type(queue[1]) is float  # state outside f is left plain


def test_exporting_a_float_exactly_is_refused():
    import struct

    with np.testing.assert_raises(capstan.NoRuleError):
        capstan.D(lambda x: struct.unpack("d", struct.pack("d", x))[0], 1.0)
    with np.testing.assert_raises(capstan.NoRuleError):
        capstan.gradient(lambda x: float.fromhex((x * 2.0).hex()), 1.0)


def test_numpy_functions_without_rules_are_differentiated_or_refused():
    # np.polyval has no rule: its Python implementation is differentiated
    assert capstan.D(lambda x: float(np.polyval([1.0, 2.0, 3.0], x)), 1.5) == 2 * 1.5 + 2.0
    assert capstan.gradient(lambda x: float(np.polyval([1.0, 2.0, 3.0], x)), 1.5) == (5.0,)
    # np.linspace's C helper would hold untagged copies of the inputs: it has a rule instead
    assert capstan.D(lambda x: float(np.sum(np.linspace(0.0, x, 5))), 1.3) == 2.5
    J = capstan.jacobian(lambda v: np.linspace(v[0], v[1], 3), np.array([1.0, 3.0]))
    np.testing.assert_array_equal(J, [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    # C functions without a rule are refused, never dropped
    with np.testing.assert_raises(capstan.NoRuleError):
        capstan.D(lambda x: float(scipy.ndimage.generic_filter(np.array([x, 1.0, 2.0]), np.mean, 3)[1]), 1.3)
    # np.vectorize applies its Python kernel elementwise (capstan.elementwise)
    vectorized = np.vectorize(lambda t: t * t)
    assert capstan.D(lambda x: float(np.sum(vectorized(np.array([x, 1.0])))), 1.3) == 2.6
    assert capstan.gradient(lambda x: float(np.sum(vectorized(np.array([x, 1.0])))), 1.3) == (2.6,)
    # an array of Python objects made from differentiated values is refused
    with np.testing.assert_raises_regex(TypeError, "dtype=object"):
        capstan.gradient(lambda x: float(np.sum(np.array([x, 1.0], dtype=object) * 2)), 1.3)


def test_ufunc_reductions_and_refused_reduction_arguments():
    A = np.arange(6.0).reshape(2, 3) + 1
    (g,) = capstan.gradient(lambda a: float(np.sum(np.add.reduce(a) ** 2)), A.copy())
    np.testing.assert_allclose(g, np.broadcast_to(2 * A.sum(axis=0), A.shape))
    J = capstan.jacobian(lambda a: np.multiply.accumulate(a), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(J, [[1, 0, 0], [2, 1, 0], [6, 3, 2]])
    assert capstan.D(lambda x: float(np.maximum.reduce(np.array([x, 2 * x, 0.5]))), 1.0) == 2.0
    (g,) = capstan.gradient(lambda v: float(np.sum(v, where=np.array([True, False]))), np.ones(2))
    np.testing.assert_array_equal(g, [1.0, 0.0])  # (a masked-out element counts as 0)
    with np.testing.assert_raises_regex(TypeError, "where="):
        capstan.gradient(lambda v: float(np.mean(v, where=np.array([True, False]))), np.ones(2))


def test_interp_rule():
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([1.0, 2.0, 8.0])

    def f(x):
        return float(np.interp(x, xp, fp))

    for x0, slope in ((0.5, 1.0), (2.0, 3.0), (-1.0, 0.0), (4.0, 0.0)):
        assert capstan.D(f, x0) == slope and capstan.gradient(f, x0) == (slope,)
    (g,) = capstan.gradient(lambda v: float(np.sum(np.interp(np.array([0.5, 2.0]), xp, v))), fp.copy())
    np.testing.assert_allclose(g, [0.5, 1.0, 0.5])
    np.testing.assert_allclose(capstan.jacobian(lambda v: np.interp(v, xp, fp), np.array([0.5, 2.0, 2.5])),
                               np.diag([1.0, 3.0, 3.0]))
    with np.testing.assert_raises_regex(TypeError, "not in xp"):
        capstan.D(lambda s: float(np.interp(0.5, xp * s, fp)), 1.0)
