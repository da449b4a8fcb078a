"""Record a tape once, replay it for new inputs; compile a scalar tape to Python.

    python examples/tape_replay.py
"""
import math
import timeit

import capstan


def euler(k):
    """1000 explicit Euler steps of dy/dt = -k*y + sin(t)."""
    y, t, h = 1.0, 0.0, 0.001
    for _ in range(1000):
        y = y + h * (-k * y + math.sin(t))
        t = t + h
    return y


def clipped(x):
    return x * x if x > 0 else -x


def main():
    tape = capstan.record_tape(euler, 0.5)
    compiled = tape.compile()
    for k in (0.5, 1.0, 2.0):
        assert math.isclose(compiled(k)[1][0], capstan.gradient(euler, k)[0], rel_tol=1e-9)
    n = 20
    t_grad = timeit.timeit(lambda: capstan.gradient(euler, 0.7), number=n) / n
    t_comp = timeit.timeit(lambda: compiled(0.7), number=n) / n
    print("gradient: %.0f us per call; compiled tape: %.0f us (%.0fx faster)"
          % (t_grad * 1e6, t_comp * 1e6, t_grad / t_comp))
    guarded = capstan.record_tape(clipped, 2.0)
    print("replayed gradient at 3.0:", guarded.gradient(3.0))
    try:
        guarded.gradient(-1.0)
    except capstan.TapeGuardError as exc:
        print("at -1.0 the guard says:", str(exc).split(";")[0])
    rerecording = capstan.record_tape(clipped, 2.0, on_mismatch="rerecord")
    print("re-recorded gradient at -1.0:", rerecording.gradient(-1.0))


if __name__ == "__main__":
    main()
