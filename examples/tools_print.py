"""capstan.PrintCtx: log every call of an unmodified function, indented by depth; then
the same run filtered to this module's functions, with results.

    python examples/tools_print.py
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402
from capstan.printing import PrintCtx  # noqa: E402


def square(v):
    return v * v


def hypot(x, y):
    return math.sqrt(square(x) + square(y))


if __name__ == "__main__":
    print("every call:")
    overdub.overdub(PrintCtx(stream=sys.stdout), hypot, 3.0, 4.0)
    print("only this module's functions, with results:")
    overdub.overdub(PrintCtx(stream=sys.stdout, modules=(__name__,), results=True), hypot, 3.0, 4.0)
