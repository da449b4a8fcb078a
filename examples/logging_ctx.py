"""Cassette's logging example: a prehook/posthook pair prints every call made inside
the context, indented by depth, with its result.

    python examples/logging_ctx.py
"""
import math
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402


def show(v):
    """Short argument text: modules by name, everything else by repr."""
    return "<module %s>" % v.__name__ if isinstance(v, types.ModuleType) else repr(v)


class Log(overdub.Context):
    """metadata: the current depth."""

    def __init__(self):
        super().__init__(metadata=0)

    def prehook(self, f, /, *args, **kwargs):
        text = ", ".join([show(a) for a in args] + ["%s=%s" % (k, show(v)) for k, v in kwargs.items()])
        print("  " * self.metadata + "%s(%s)" % (getattr(f, "__name__", f), text))
        self.metadata += 1

    def posthook(self, output, f, /, *args, **kwargs):
        self.metadata -= 1
        print("  " * self.metadata + "-> %s" % show(output))


def square(v):
    return v * v


def hypot(x, y, *, scale=1.0):
    return scale * math.sqrt(square(x) + square(y))


if __name__ == "__main__":
    result = overdub.overdub(Log(), hypot, 3.0, 4.0, scale=2.0)
    print("result:", result)
