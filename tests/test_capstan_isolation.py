"""capstan changes nothing global: other threads, plain calls and modules are untouched."""
import builtins
import math
import threading

import numpy as np

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
