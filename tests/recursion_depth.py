"""Recursion depth helpers shared by the tests: the deepest recursion a callable allows, and
an ordinary recursion budget inside hypothesis tests."""
import contextlib
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


@contextlib.contextmanager
def frames_to_spare(n=500):
    """Run the block with ``n`` frames of recursion left, as a program near the top of a plain
    interpreter has (hypothesis raises the limit by thousands inside ``@given``): what recurses
    without end then fails as soon as it would plainly, instead of thousands of frames later
    (which costs quadratically where every level handles the unwinding exception)."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + n)
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)
