"""What routing costs: overdub contexts against plain Python and the interpreter's own hooks.

    python benchmarks/overhead.py            # full run, markdown table on stdout
    python benchmarks/overhead.py --quick    # smoke run (tiny sizes, 1 batch)

Workloads (one process, side by side, ratios to plain on this interpreter):
  (a) call-heavy: recursive fib(20) + 12,000 method calls on a small class
  (b) operator-heavy: a Horner polynomial loop over floats
  (c) NumPy-heavy: few calls on 10^6-element arrays
  (d) first call of json.dumps on a nested structure (rewrite cost) vs later calls
Columns: an empty context, a counting prehook, a wildcard primitive (canrecurse ->
recurse, else fallback: the Cassette idiom), a primitive on operator.mul (b), and
counters built on sys.setprofile / sys.settrace / sys.monitoring (a).
"""
import gc
import json
import operator
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import _adbench  # noqa: E402
import overdub  # noqa: E402
from _adbench import fmt_time  # noqa: E402

QUICK = "--quick" in sys.argv


# ----------------------------------------------------------------------------- workloads
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Counter:
    def __init__(self):
        self.total = 0

    def bump(self, k):
        self.total += k
        return self.total


def call_heavy(n_fib=20, n_calls=12000):
    fib(n_fib)
    c = Counter()
    for i in range(n_calls):
        c.bump(i)
    return c.total


class _Hook:
    def __init__(self):
        self.metadata = 0

    def prehook(self, f, /, *args, **kwargs):
        self.metadata += 1


def call_heavy_hand_hooked(n_fib=20, n_calls=12000):
    """call_heavy with the counting prehook called by hand at every event a context
    reports (calls, operators, attribute access): the cost of the hook calls alone."""
    pre = _Hook().prehook
    add, sub, lt, iadd = operator.add, operator.sub, operator.lt, operator.iadd

    def fib_h(n):
        pre(lt, n, 2)
        if n < 2:
            return n
        pre(sub, n, 1)
        pre(fib_h, n - 1)
        a = fib_h(n - 1)
        pre(sub, n, 2)
        pre(fib_h, n - 2)
        b = fib_h(n - 2)
        pre(add, a, b)
        return a + b

    class CounterH:
        def __init__(self):
            pre(setattr, self, "total", 0)
            self.total = 0

        def bump(self, k):
            pre(getattr, self, "total")
            pre(iadd, self.total, k)
            pre(setattr, self, "total", self.total + k)
            self.total += k
            pre(getattr, self, "total")
            return self.total

    pre(fib_h, n_fib)
    fib_h(n_fib)
    pre(CounterH)
    c = CounterH()
    pre(range, n_calls)
    for i in range(n_calls):
        pre(CounterH.bump, c, i)
        c.bump(i)
    return c.total


def operator_heavy(n=2000, x=0.999):
    s = 0.0
    for k in range(n):
        s = s * x + k
    return s


ARR = np.linspace(0.0, 1.0, 10**6)


def numpy_heavy(a=ARR, steps=20):
    y = a.copy()
    for _ in range(steps):
        y = np.sin(y) * 0.5 + a * a
    return float(y.sum())


DATA = {"users": [{"id": i, "name": "user%d" % i, "tags": ["a", "b"], "score": i * 0.5,
                   "nested": {"k": [1, 2, {"deep": None}]}} for i in range(20)]}


def json_dumps():
    return json.dumps(DATA, indent=2, sort_keys=True)


if QUICK:
    call_heavy.__defaults__ = (10, 200)
    call_heavy_hand_hooked.__defaults__ = (10, 200)
    operator_heavy.__defaults__ = (100, 0.999)
    numpy_heavy.__defaults__ = (ARR[:1000], 2)


# ----------------------------------------------------------------------------- contexts
class Empty(overdub.Context):
    pass


class Count(overdub.Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata += 1


class Wildcard(overdub.Context):
    @overdub.primitive()
    def every_call(self, f, /, *args, **kwargs):
        if overdub.canrecurse(self, f, *args, **kwargs):
            return overdub.recurse(self, f, *args, **kwargs)
        return overdub.fallback(self, f, *args, **kwargs)


class MulPrimitive(overdub.Context):
    @overdub.primitive(operator.mul)
    def mul(self, a, b):
        return a * b


def with_profile_counter(fn):
    events = [0]

    def prof(frame, event, arg):
        events[0] += 1

    def run():
        sys.setprofile(prof)
        try:
            return fn()
        finally:
            sys.setprofile(None)
    return run


def with_trace_counter(fn):
    events = [0]

    def tracer(frame, event, arg):
        events[0] += 1
        return None  # calls only

    def run():
        sys.settrace(tracer)
        try:
            return fn()
        finally:
            sys.settrace(None)
    return run


def with_monitoring_counter(fn):
    mon = sys.monitoring
    tool = mon.PROFILER_ID
    events = [0]

    def on_start(code, offset):
        events[0] += 1

    def run():
        mon.use_tool_id(tool, "overhead-bench")
        mon.register_callback(tool, mon.events.PY_START, on_start)
        mon.set_events(tool, mon.events.PY_START)
        try:
            return fn()
        finally:
            mon.set_events(tool, 0)
            mon.register_callback(tool, mon.events.PY_START, None)
            mon.free_tool_id(tool)
    return run


# ----------------------------------------------------------------------------- timing
def median_time(fn):
    """Median per-call time over batches of back-to-back calls (GC enabled)."""
    fn()  # warm up
    return _adbench.median_time(fn, QUICK)


def rows():
    """(workload, column, seconds, ratio to plain, result equal to plain) for every cell."""
    out = []

    def bench(label, plain_fn, columns):
        expected = plain_fn()
        base = median_time(plain_fn)
        out.append((label, "plain", base, 1.0, True))
        for name, fn in columns:
            result = fn()
            t = median_time(fn)
            out.append((label, name, t, t / base, result == expected))

    empty, count, mul = Empty(), Count(metadata=0), MulPrimitive()  # contexts are reused
    wild = Wildcard()
    columns_a = [
        ("empty context", lambda: overdub.overdub(empty, call_heavy)),
        ("counting prehook", lambda: overdub.overdub(count, call_heavy)),
        ("wildcard primitive", lambda: overdub.overdub(wild, call_heavy)),
        ("the same prehook calls inlined by hand (floor)", call_heavy_hand_hooked),
        ("sys.setprofile counter", with_profile_counter(call_heavy)),
        ("sys.settrace counter", with_trace_counter(call_heavy)),
    ]
    if sys.version_info >= (3, 12):
        columns_a.append(("sys.monitoring counter", with_monitoring_counter(call_heavy)))
    bench("(a) call-heavy", call_heavy, columns_a)
    bench("(b) operator-heavy", operator_heavy, [
        ("empty context", lambda: overdub.overdub(empty, operator_heavy)),
        ("counting prehook", lambda: overdub.overdub(count, operator_heavy)),
        ("wildcard primitive", lambda: overdub.overdub(wild, operator_heavy)),
        ("primitive on operator.mul", lambda: overdub.overdub(mul, operator_heavy)),
        ("primitive on operator.mul, new context each call",
         lambda: overdub.overdub(MulPrimitive(), operator_heavy)),
    ])
    bench("(c) NumPy-heavy", numpy_heavy, [
        ("empty context", lambda: overdub.overdub(empty, numpy_heavy)),
        ("counting prehook", lambda: overdub.overdub(count, numpy_heavy)),
        ("wildcard primitive", lambda: overdub.overdub(wild, numpy_heavy)),
        ("primitive on operator.mul", lambda: overdub.overdub(mul, numpy_heavy)),
    ])

    # (d) first call: a fresh context class and fresh code caches, versus later calls
    class FirstCount(overdub.Context):
        def prehook(self, f, /, *args, **kwargs):
            pass

    overdub.runtime._templates.clear()
    gc.collect()
    t0 = time.perf_counter()
    first_result = overdub.overdub(FirstCount(), json_dumps)
    first = time.perf_counter() - t0
    later = median_time(lambda: overdub.overdub(FirstCount(), json_dumps))
    plain = median_time(json_dumps)
    out.append(("(d) json.dumps", "plain", plain, 1.0, True))
    out.append(("(d) json.dumps", "first call, hooked", first, first / plain, first_result == json_dumps()))
    later_result = overdub.overdub(FirstCount(), json_dumps)
    out.append(("(d) json.dumps", "later calls, hooked", later, later / plain, later_result == json_dumps()))
    return out


TARGETS = {
    ("(a) call-heavy", "empty context"): ("≤ 1.1×", lambda r, t: r <= 1.1),
    ("(b) operator-heavy", "empty context"): ("≤ 1.1×", lambda r, t: r <= 1.1),
    ("(c) NumPy-heavy", "empty context"): ("≤ 1.1×", lambda r, t: r <= 1.1),
    ("(a) call-heavy", "counting prehook"): ("≤ 3×", lambda r, t: r <= 3.0),
    ("(b) operator-heavy", "primitive on operator.mul"): ("≤ 3×", lambda r, t: r <= 3.0),
}


def table(cells):
    plain_json = next(t for (w, c, t, r, ok) in cells if w == "(d) json.dumps" and c == "plain")
    lines = ["| workload | column | time | × plain | same result | target |",
             "|---|---|---:|---:|:-:|---|"]
    for w, c, t, r, ok in cells:
        target = ""
        if (w, c) in TARGETS:
            text, check = TARGETS[(w, c)]
            target = "%s: %s" % (text, "met" if check(r, t) else "**missed**")
        if w == "(d) json.dumps" and c.startswith("first"):
            extra = t - plain_json
            target = "≤ 50 ms over plain: %s (+%.1f ms)" % ("met" if extra <= 0.05 else "**missed**",
                                                           extra * 1e3)
        lines.append("| %s | %s | %s | %.2f× | %s | %s |" % (w, c, fmt_time(t), r, "yes" if ok else "NO",
                                                          target))
    return "\n".join(lines)


def main():
    cells = rows()
    if "--json" in sys.argv:
        import json as _json
        print(_json.dumps({"python": sys.version.split()[0], "numpy": np.__version__,
                           "cells": [[w, c, t, r, ok] for w, c, t, r, ok in cells]}))
        return
    print("CPython %s, numpy %s%s" % (sys.version.split()[0], np.__version__, " (quick)" if QUICK else ""))
    print()
    print(table(cells))


if __name__ == "__main__":
    main()
