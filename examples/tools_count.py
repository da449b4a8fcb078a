"""capstan.CountCtx: Cassette's counting example -- how many calls inside
``list(map(str, range(1, 11)))`` get an int or str argument -- and every call of a
polynomial evaluation.

    python examples/tools_count.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402
from capstan.counting import CountCtx  # noqa: E402


def poly(x):
    return 3.0 * x ** 3 + 2.0 * x ** 2 + x + 1.0


if __name__ == "__main__":
    ctx = CountCtx((int, str))
    out = overdub.overdub(ctx, lambda: list(map(str, range(1, 11))))
    print("list(map(str, range(1, 11))) =", out)
    print("calls with an int or str argument: %d %s" % (ctx.count, dict(sorted(ctx.counts.items()))))

    every = CountCtx()
    y = overdub.overdub(every, poly, 2.0)
    print("poly(2.0) = %r in %d calls: %s" % (y, every.count, dict(sorted(every.counts.items()))))
