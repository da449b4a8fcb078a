"""Cassette's nested trace: a wildcard primitive, ``similar`` contexts and ``canrecurse``
build the call tree of a run (each call with its arguments, result and children).

    python examples/nested_trace.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402


class Trace(overdub.Context):
    """metadata: the list of calls made at this level, as (name, args, children, result)."""

    @overdub.primitive()
    def every(self, f, /, *args, **kwargs):
        sub = self.similar(metadata=[])
        if overdub.canrecurse(sub, f, *args, **kwargs):
            result = overdub.recurse(sub, f, *args, **kwargs)
        else:
            result = overdub.fallback(sub, f, *args, **kwargs)
        self.metadata.append((getattr(f, "__name__", repr(f)), args, sub.metadata, result))
        return result


def show(calls, depth=0):
    for name, args, children, result in calls:
        print("  " * depth + "%s%r = %r" % (name, args, result))
        show(children, depth + 1)


def square(x):
    return x * x


def hypot2(a, b):
    return square(a) + square(b)


if __name__ == "__main__":
    ctx = Trace(metadata=[])
    overdub.overdub(ctx, hypot2, 3, 4)
    show(ctx.metadata)
