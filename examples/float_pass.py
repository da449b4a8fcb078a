"""A pass (Cassette's ``@pass``): transform every function body before it runs routed.
Here float literals become exact ``fractions.Fraction`` values, so floating-point
rounding disappears from unmodified code -- in the function and everything it calls.

    python examples/float_pass.py
"""
import os
import sys
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402

SEEN = []


def exact_literals(ctx_type, code):
    """The pass: (context type, bytecode.Bytecode) -> bytecode.Bytecode.  It leaves
    other modules' code (here: the fractions module's own methods) as it is."""
    if code.filename != __file__:
        return code
    SEEN.append(code.name)
    return overdub.replace_match(lambda c: Fraction(repr(c)), lambda c: type(c) is float, code)


def tenth():
    return 0.1


def total(n):
    s = 0.0
    for _ in range(n):
        s += tenth()
    return s


def check():
    a = 0.1
    b = 0.2          # (0.1 + 0.2 written out would be folded by the compiler)
    return a + b == 0.3


class Exact(overdub.Context):
    pass


if __name__ == "__main__":
    print("plain:     total(10) = %r, 0.1 + 0.2 == 0.3: %r" % (total(10), check()))
    ctx = Exact(pass_=exact_literals)
    print("with pass: total(10) = %r, 0.1 + 0.2 == 0.3: %r"
          % (overdub.overdub(ctx, total, 10), overdub.overdub(ctx, check)))
    print("bodies the pass rewrote (once each, then cached):", sorted(SEEN))
    overdub.overdub(Exact(pass_=exact_literals), total, 10)
    print("after another run:", sorted(SEEN))
