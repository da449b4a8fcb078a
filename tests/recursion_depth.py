"""The deepest recursion a callable allows: shared by the tests that compare depths."""
import sys


def deepest(run, lo=10):
    """The largest ``n`` (at least ``lo``) for which ``run(n)`` raises no RecursionError."""
    hi = sys.getrecursionlimit()
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            run(mid)
            lo = mid
        except RecursionError:
            hi = mid - 1
    return lo
