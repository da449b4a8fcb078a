"""What benchmarks/forward.py and benchmarks/reverse.py share: timing, checking, first calls in
fresh processes, and the markdown table.

A benchmark script describes its workloads as ``Workload`` objects whose cells are *factories*:
``factory()`` does every import and set-up and returns the zero-argument callable that is timed.
A factory raising ImportError makes the cell "not installed"; any other exception, in the
factory, the first call or the check against the hand-written derivative, is printed in the
cell as ``ErrorClass: message`` so that the table still prints.
"""
import gc
import json
import statistics
import subprocess
import sys
import time

import numpy as np

METHOD = """\
median: median time per call over 7 batches of ~80 ms of back-to-back calls after a warm-up, GC
enabled. first call: for plain and hand-written, their first call in this process; for capstan
and the peers, one call timed in a fresh interpreter started for that cell alone (imports and
set-up excluded, so it includes rewriting the code on first use, or tracing and compiling).
"""


class Workload:
    """``plain`` and ``hand`` are zero-argument callables; ``cells`` is a list of
    ``(name, factory, note)``; ``target`` is ``(text, "plain" or "hand", limit)`` and applies to
    the cells whose name is in ``targeted`` (the first cell when None)."""

    def __init__(self, name, plain, hand, cells, target=None, targeted=None, check=None):
        self.name, self.plain, self.hand, self.cells = name, plain, hand, cells
        self.target = target
        self.targeted = targeted if targeted is not None else cells[:1] and [cells[0][0]]
        self.check = check or assert_close


def assert_close(got, want, rtol=1e-7, atol=1e-10):
    """Nested numbers / arrays / lists / tuples / dicts ``got`` and ``want`` hold the same
    numbers (both flattened to one vector)."""
    g, w = _flat(got), _flat(want)
    if g.shape != w.shape:
        raise AssertionError("derivative has %d numbers, the hand-written one %d" % (g.size, w.size))
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _flat(x):
    parts = []

    def walk(x):
        if isinstance(x, dict):
            for k in sorted(x):
                walk(x[k])
        elif isinstance(x, (list, tuple)):
            for e in x:
                walk(e)
        else:
            parts.append(np.ravel(np.asarray(x)))
    walk(x)
    return np.concatenate(parts) if parts else np.zeros(0)


def median_time(fn, quick, batches=7, batch_s=0.08):
    """Median seconds per call over batches of back-to-back calls (GC enabled), after one
    warm-up call (the caller has already made the first call)."""
    if quick:
        batches, batch_s = 1, 0.01
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    reps = max(1, int(batch_s / once))
    if once > 0.5:  # slow peers: fewer batches, at least 3
        batches = min(batches, 3)
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times)


def error_text(exc):
    msg = str(exc).strip().splitlines()
    msg = msg[0] if msg else ""
    if len(msg) > 140:
        msg = msg[:137] + "..."
    return ("%s: %s" % (type(exc).__name__, msg)).replace("|", "\\|")


def first_call_in_subprocess(script, key, timeout=240):
    """Seconds of the first call of cell ``key`` in a fresh interpreter (imports and set-up
    excluded), or an error text."""
    return first_calls_in_subprocess(script, [key], timeout)[0]


def first_calls_in_subprocess(script, keys, timeout=240):
    """``(seconds, error)`` of the first call of each cell of ``keys``, one after the other in
    one fresh interpreter (``--quick``: one interpreter per script instead of one per cell)."""
    argv = [sys.executable, script]
    for key in keys:
        argv += ["--first-call", key]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout * len(keys))
    except subprocess.TimeoutExpired:
        return [(None, "first call: timed out")] * len(keys)
    lines = [line for line in out.stdout.splitlines() if line.startswith('{"seconds": ')]
    if out.returncode != 0 or len(lines) < len(keys):
        tail = (out.stderr.strip().splitlines() or ["exit status %d" % out.returncode])[-1]
        return [(None, "first call failed: " + tail[:140].replace("|", "\\|"))] * len(keys)
    return [(data.get("seconds"), data.get("error")) for data in map(json.loads, lines)]


def first_call_child(workloads, key):
    """Body of ``script --first-call KEY``: time one call of the cell, print JSON."""
    wname, cname = key.split("::", 1)
    w = next(w for w in workloads() if w.name == wname)
    factory = next(f for n, f, _ in w.cells if n == cname)
    try:
        fn = factory()
        gc.collect()
        t0 = time.perf_counter()
        fn()
        seconds = time.perf_counter() - t0
        print(json.dumps({"seconds": seconds}), flush=True)
    except ImportError:
        print(json.dumps({"seconds": None, "error": "not installed"}), flush=True)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        print(json.dumps({"seconds": None, "error": error_text(exc)}), flush=True)


def run(workloads, script, quick, progress=None):
    """Every row: dicts with workload, impl, median, x_plain, x_hand, first_call, target, met,
    error and note."""
    rows, deferred = [], []  # (quick: the first calls, all in one fresh interpreter at the end)
    for w in workloads():
        gc.collect()
        t0 = time.perf_counter()
        w.plain()
        plain_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        expected = w.hand()
        hand_first = time.perf_counter() - t0
        plain = median_time(w.plain, quick)
        hand = median_time(w.hand, quick)
        rows.append(_row(w.name, "plain", plain, plain, hand, plain_first, "in process"))
        rows.append(_row(w.name, "hand-written", hand, plain, hand, hand_first, "in process"))
        for cname, factory, note in w.cells:
            if progress:
                progress("%s / %s" % (w.name, cname))
            row = _row(w.name, cname, None, plain, hand, None, "fresh process", note=note)
            rows.append(row)
            try:
                fn = factory()
            except ImportError:
                row["error"] = "not installed"
                continue
            except Exception as exc:  # noqa: BLE001
                row["error"] = error_text(exc)
                continue
            try:
                w.check(fn(), expected)
                gc.collect()
                t = median_time(fn, quick)
            except Exception as exc:  # noqa: BLE001 - the table still prints
                row["error"] = error_text(exc)
            else:
                row.update(median=t, x_plain=t / plain, x_hand=t / hand)
            key = "%s::%s" % (w.name, cname)
            if quick:
                deferred.append((row, key))
            else:
                _first_call(row, first_call_in_subprocess(script, key))
            if w.target and cname in w.targeted:
                text, basis, limit = w.target
                ratio = row["x_" + basis]
                row["target"] = text
                row["met"] = ratio is not None and ratio <= limit
    if deferred:
        for (row, _), result in zip(deferred, first_calls_in_subprocess(script, [k for _, k in deferred])):
            _first_call(row, result)
    return rows


def _first_call(row, result):
    row["first_call"], err = result
    if err and not row["error"]:
        row["error"] = err


def _row(workload, impl, t, plain, hand, first, how, note=""):
    return {"workload": workload, "impl": impl, "median": t,
            "x_plain": None if t is None else t / plain, "x_hand": None if t is None else t / hand,
            "first_call": first, "first_call_how": how, "target": "", "met": None, "error": "",
            "note": note}


def fmt_time(t):
    if t is None:
        return "—"
    if t < 1e-3:
        return "%.2f µs" % (t * 1e6) if t < 1e-5 else "%.1f µs" % (t * 1e6)
    return "%.2f ms" % (t * 1e3) if t < 1 else "%.2f s" % t


def fmt_ratio(r):
    if r is None:
        return "—"
    return "{:,.0f}×".format(r) if r >= 100 else "%.2f×" % r


def table(rows):
    lines = ["| workload | implementation | median | × plain | × hand-written | first call | target "
             "| notes |", "|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        target = ""
        if r["target"]:
            target = "%s: %s" % (r["target"], "met" if r["met"] else "**missed**")
        if r["error"] == "not installed":
            median, x_plain, x_hand, first = "not installed", "—", "—", "—"
            note = r["note"]
        else:
            median, x_plain, x_hand = fmt_time(r["median"]), fmt_ratio(r["x_plain"]), fmt_ratio(r["x_hand"])
            first = fmt_time(r["first_call"])
            note = "; ".join(s for s in (("**" + r["error"] + "**") if r["error"] else "", r["note"]) if s)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["workload"], r["impl"], median, x_plain, x_hand, first, target, note))
    return "\n".join(lines)


def header(title, quick):
    import platform
    return "%s — CPython %s, numpy %s, %s%s" % (
        title, platform.python_version(), np.__version__, platform.machine(), " (quick)" if quick else "")


def main(title, workloads, script, argv, doc):
    """Command line shared by the scripts: ``[--quick] [--json PATH]``, and the internal
    ``--first-call WORKLOAD::CELL`` (repeatable) used for the fresh-process first calls."""
    if "--first-call" in argv:
        for i, arg in enumerate(argv):
            if arg == "--first-call":
                first_call_child(workloads, argv[i + 1])
        return
    quick = "--quick" in argv
    json_path = argv[argv.index("--json") + 1] if "--json" in argv else None
    rows = run(workloads, script, quick,
               progress=lambda s: print("…", s, file=sys.stderr, flush=True) if "-v" in argv else None)
    print(header(title, quick))
    print()
    print(table(rows))
    print()
    print(doc)
    if quick:
        print("(--quick: one batch of ~10 ms per cell instead of 7 of ~80 ms, and every first call in one "
              "fresh interpreter, one after the other; times are rough)")
    if json_path:
        import platform
        with open(json_path, "w") as fh:
            json.dump({"python": platform.python_version(), "numpy": np.__version__, "quick": quick,
                       "rows": rows}, fh, indent=1)
