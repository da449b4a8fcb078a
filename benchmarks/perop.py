"""Extra nanoseconds per differentiated operation, for comparing two checkouts.

    python benchmarks/perop.py [TREE]

Imports capstan from TREE (default: this checkout) and prints one line: for ``a * b``,
``a + 1.5``, ``-a``, ``math.sin(a)`` and a routed call ``g(a)``, the extra ns per operation of
``capstan.D`` / ``capstan.gradient`` over the plain loop (20,000 operations, best of 7 runs),
and the Horner loop's ratio to plain.  Run it alternately against two checkouts (the C
modules built in each) and keep each cell's best: hotpath.py's table (b) measures the same
within one process, but cannot put two versions side by side.
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.abspath(sys.argv[1]) if len(sys.argv) > 1
                else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import capstan  # noqa: E402

N = 20000
COEF = [1.0 / (i + 1) for i in range(101)]


def mul(a):
    b = a
    for _ in range(N):
        y = a * b
    return y


def addc(a):
    for _ in range(N):
        y = a + 1.5
    return y


def neg(a):
    for _ in range(N):
        y = -a
    return y


def sin(a):
    for _ in range(N):
        y = math.sin(a)
    return y


def g(a):
    return a


def call(a):
    for _ in range(N):
        y = g(a)
    return y


def horner(x):
    s = 0.0
    for c in COEF:
        s = s * x + c
    return s


def best(fn, *args, reps=7):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    cells = []
    for f in (mul, addc, neg, sin, call):
        capstan.D(f, 0.7)
        capstan.gradient(f, 0.7)
        plain = best(f, 0.7)
        d, r = best(capstan.D, f, 0.7), best(capstan.gradient, f, 0.7)
        cells.append("%s=%.0f/%.0f" % (f.__name__, (d - plain) / N * 1e9, (r - plain) / N * 1e9))
    capstan.D(horner, 0.7)
    plain = best(horner, 0.7, reps=2000)
    cells.append("hornerD_x=%.1f/%.1f" % (best(capstan.D, horner, 0.7, reps=2000) / plain,
                                          best(capstan.gradient, horner, 0.7, reps=2000) / plain))
    print(" ".join(cells))


if __name__ == "__main__":
    main()
