"""capstan on unmodified code: float(), isinstance, math, NumPy, mutation, classes.

    python examples/ad_tour.py
"""
import math
import statistics

import numpy as np

import capstan


def legacy_pow(x, n):
    """The seeds' pow: keeps its state in a dict."""
    state = {"r": 1.0, "n": n}
    while state["n"] > 0:
        state["r"] *= x
        state["n"] -= 1
    return state["r"]


def typed_code(x):
    """Code written for floats: casts, type checks, the math module."""
    if not isinstance(x, float):
        raise TypeError("expected a float")
    y = float(x) ** 2
    return math.sin(y) + statistics.fmean([y, 2.0 * y])


class Vec2:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __add__(self, other):
        return Vec2(self.x + other.x, self.y + other.y)

    def __mul__(self, s):
        return Vec2(self.x * s, self.y * s)

    def norm(self):
        return math.hypot(self.x, self.y)


def cumprod(x):
    """The seeds' cumprod: writes into an array made like x."""
    y = np.empty_like(x)
    y[0] = x[0]
    for i in range(1, len(x)):
        y[i] = y[i - 1] * x[i]
    return y


def main():
    print("D(sin, 1.0)                   =", capstan.D(math.sin, 1.0))
    print("D(D(sin)) at 1.0              =", capstan.D(lambda x: capstan.D(math.sin, x), 1.0))
    print("x * D(y -> x*y, 3) at 5       =", capstan.D(lambda x: x * capstan.D(lambda y: x * y, 3.0), 5.0))
    print("gradient(legacy_pow(x, 3), 5) =", capstan.gradient(lambda x: legacy_pow(x, 3), 5.0))
    print("D(typed_code, 0.5)            =", round(capstan.D(typed_code, 0.5), 12))
    print("D(|(1,2) + (x,x)*x|, 2)       =",
          round(capstan.D(lambda x: (Vec2(1.0, 2.0) + Vec2(x, x) * x).norm(), 2.0), 12))
    print("jacobian(cumprod, [1,2,3,4]) =\n", capstan.jacobian(cumprod, np.array([1.0, 2.0, 3.0, 4.0])))
    z = 1.0 + 2.0j
    print("gradient(|z|^2) at 1+2j       =", capstan.gradient(lambda z: abs(z) ** 2, z))
    print("hessian(sum(x**3)) at [1, 2] =\n", capstan.hessian(lambda x: np.sum(x ** 3), np.array([1.0, 2.0])))


if __name__ == "__main__":
    main()
