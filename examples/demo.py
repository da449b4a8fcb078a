"""A tour of overdub: run unmodified code with every call routed through a context.

    python examples/demo.py
"""
import math
import operator
import os
import sys
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402
from overdub import Context, primitive  # noqa: E402


def section(title):
    print("\n== " + title)


# -- 1. logging: a prehook sees every call, operator and attribute access -----------------
class Log(Context):
    def __init__(self):
        super().__init__(metadata=0)

    def prehook(self, f, /, *args, **kwargs):
        print("  " * self.metadata + "call %s%r" % (getattr(f, "__name__", f), args))
        self.metadata += 1

    def posthook(self, output, f, /, *args, **kwargs):
        self.metadata -= 1


def hypot(x, y):
    return math.sqrt(x * x + y * y)


section("logging context")
print("result:", overdub.overdub(Log(), hypot, 3.0, 4.0))


# -- 2. counting calls by argument type (Cassette's example) --------------------------------
class CountByType(Context):
    """metadata = (types, counter): counts calls with an argument of one of the types."""

    def prehook(self, f, /, *args, **kwargs):
        types, counts = self.metadata
        if any(isinstance(a, types) for a in args):
            name = getattr(f, "__name__", repr(f))
            counts[name] = counts.get(name, 0) + 1


section("counting calls with int or str arguments in list(map(str, range(1, 11)))")
counter = CountByType(metadata=((int, str), {}))
overdub.overdub(counter, lambda: list(map(str, range(1, 11))))
print("counts:", counter.metadata[1])


# -- 3. a primitive: sin becomes cos, everywhere inside ---------------------------------------
class SinToCos(Context):
    @primitive(math.sin)
    def sin(self, x):
        return math.cos(x)


def wave(t):
    return math.sin(t) + helper(t)


def helper(t):
    return 2 * math.sin(t)


section("sin -> cos primitive")
print("plain:", wave(0.0), " overdubbed:", overdub.overdub(SinToCos(), wave, 0.0))


# -- 4. a pass: halve every float literal before the code runs --------------------------------
def halve_float_literals(ctx_type, code):
    return overdub.replace_match(lambda c: c / 2, lambda c: type(c) is float, code)


def price(n):
    return n * 10.0 + 2.0


section("float-literal pass")
print("plain:", price(3), " with the pass:", overdub.overdub(Context(pass_=halve_float_literals), price, 3))


# -- 5. tagging: a value carries metadata through containers and fields -------------------------
@dataclass
class Particle:
    mass: float
    speed: float


def kinetic(p, log):
    log.append(p.mass)                 # stored in a list
    e = log[0] * 0.5 * p.speed ** 2    # read back out of it
    return e, log[0], p.mass


class Provenance(Context):
    @primitive(operator.mul, overdub.Tagged)
    def mul(self, a, b):
        return overdub.tag(overdub.untag(a, self) * b, self,
                           "scaled " + overdub.metadata(a, self))


section("tagging")
ctx = Provenance()
m = overdub.tag(2.0, ctx, "measured mass")
energy, from_list, field = overdub.overdub(ctx, kinetic, Particle(m, 3.0), [])
for label, v in (("mass read back from the list", from_list), ("mass field", field)):
    print("%s: %r, metadata %r" % (label, overdub.untag(v, ctx), overdub.metadata(v, ctx)))
print("energy %r, metadata %r" % (overdub.untag(energy, ctx), overdub.metadata(energy, ctx)))
print("isinstance(mass, float) inside the context:",
      overdub.overdub(ctx, lambda x: isinstance(x, float), m))


# -- 6. capstan: derivatives of unmodified code, built from these pieces ---------------------------
import capstan  # noqa: E402
import numpy as np  # noqa: E402


def legacy(x):
    """Code written for floats: a cast, a type check, the math module, dict state."""
    state = {"r": 1.0}
    for _ in range(3):
        state["r"] *= float(x)
    return state["r"] + (math.sin(x) if isinstance(x, float) else 0.0)


section("capstan")
print("D(legacy, 2.0) =", round(capstan.D(legacy, 2.0), 12), " (3*x**2 + cos(x))")
print("nested, no perturbation confusion:",
      capstan.D(lambda x: x * capstan.D(lambda y: x * y, 3.0), 5.0))
print("gradient(legacy, 2.0) =", tuple(round(g, 12) for g in capstan.gradient(legacy, 2.0)))
print("hessian of sum(x**3) at [1, 2]:", capstan.hessian(lambda v: np.sum(v ** 3),
                                                        np.array([1.0, 2.0])).tolist())
counter = capstan.CountCtx((int, str))
overdub.overdub(counter, lambda: list(map(str, range(1, 11))))
print("CountCtx over map(str, range(1, 11)):", counter.count, "calls with an int or str argument")
