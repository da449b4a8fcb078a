"""Memoisation from outside: a primitive on ``fib`` that remembers results and
``recurse``s into the unmodified function for new ones (Cassette's example).

    python examples/memo_fib.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Memo(overdub.Context):
    """metadata: the memo table, n -> fib(n)."""

    @overdub.primitive(fib)
    def memo(self, n):
        if n not in self.metadata:
            self.metadata[n] = overdub.recurse(self, fib, n)
        return self.metadata[n]


if __name__ == "__main__":
    t0 = time.perf_counter()
    plain = fib(24)
    t1 = time.perf_counter()
    memo = overdub.overdub(Memo(metadata={}), fib, 24)
    t2 = time.perf_counter()
    print("fib(24) plain: %d in %.1f ms" % (plain, (t1 - t0) * 1e3))
    print("fib(24) memoised through a context: %d in %.1f ms" % (memo, (t2 - t1) * 1e3))
    print("fib(90) memoised:", overdub.overdub(Memo(metadata={}), fib, 90))
