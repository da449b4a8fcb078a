"""Cassette's sin -> cos example: a contextual primitive replaces ``math.sin`` by
``math.cos`` everywhere inside the context -- in nested functions, under another name,
and in callbacks that ``map`` calls -- while the code outside is untouched.

    python examples/sin_to_cos.py
"""
import math
import os
import sys
from math import sin as s

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402


class SinToCos(overdub.Context):
    @overdub.primitive(math.sin)
    def sin(self, x):
        return math.cos(x)


def helper(t):
    return 2 * s(t)                             # math.sin under another name


def wave(t):
    return math.sin(t) + helper(t) + sum(map(math.sin, [t, t]))


if __name__ == "__main__":
    print("plain:      wave(0.0) =", wave(0.0))
    print("overdubbed: wave(0.0) =", overdub.overdub(SinToCos(), wave, 0.0))
    print("after:      wave(0.0) =", wave(0.0))
