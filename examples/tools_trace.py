"""capstan.TraceCtx: record the call tree of a run, print it, and save it as Graphviz
DOT plus an SVG picture (Graphviz's when ``dot`` is installed, else a simple one).

    python examples/tools_trace.py [OUTPUT.dot]

Without ``OUTPUT.dot`` the two files are written to a temporary folder, shown, and
removed with it.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402
from capstan.trace import TraceCtx  # noqa: E402


def square(x):
    return x * x


def hypot2(a, b):
    return square(a) + square(b)


if __name__ == "__main__":
    ctx = TraceCtx()
    result = overdub.overdub(ctx, hypot2, 3, 4)
    print("hypot2(3, 4) =", result)
    print(ctx.render())
    if len(sys.argv) > 1:
        dot, svg = ctx.save(sys.argv[1])
        print("wrote", dot, "and", svg)
    else:
        with tempfile.TemporaryDirectory() as folder:
            dot, svg = ctx.save(os.path.join(folder, "trace.dot"))
            with open(dot, encoding="utf-8") as fh:
                print(fh.read(), end="")
            print("and an SVG picture of %d bytes (pass OUTPUT.dot to keep both)" % os.path.getsize(svg))
