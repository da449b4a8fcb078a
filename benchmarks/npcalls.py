"""The overhead of a routed NumPy call (issue 13: ≤ 2 µs), forward and reverse, side by side.

    python benchmarks/npcalls.py            # full run (about a minute), markdown on stdout
    python benchmarks/npcalls.py --quick    # smoke run
    python benchmarks/npcalls.py --json out.json

Table 1, per routed call on tiny arrays (16 elements, 4×4 for ``@``): each case is a loop doing
one NumPy call (two for ``np.exp(a).sum()``) N times on arrays made from the input ``x``
(``a = x * A``), so that under ``capstan.D`` / ``capstan.gradient`` every call is routed and
differentiated. "plain" is the loop's time per iteration called on a float; the D and gradient
columns are the extra µs per iteration, ``(t(D(loop, x)) - t(loop(x))) / N`` (resp. gradient's,
which includes the backward sweep over the iteration's records).

Table 2, whole gradients against hand-written NumPy: the MLP (64→128→10, batch 256), logsumexp of
10^6 values and ``gradient(scipy.optimize.rosen)`` at n = 1000 against ``rosen_der``.

Timing: CPU time of this process (``time.process_time``), in interleaved rounds (the order
rotating), each a batch of back-to-back calls; the best (minimum) round of each is reported, and
the median of the per-round differences or ratios beside it (on a shared machine the minimum is
the least disturbed).
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
from _adbench import assert_close  # noqa: E402

import capstan  # noqa: E402

QUICK = "--quick" in sys.argv
N = 20 if QUICK else 400  # calls per loop
X = 0.7
A16 = np.linspace(0.5, 2.0, 16)
B16 = np.linspace(-1.0, 1.0, 16)
A44 = np.linspace(0.5, 2.0, 16).reshape(4, 4)
B44 = np.linspace(-1.0, 1.0, 16).reshape(4, 4)


def np_sin(x, n=N):
    a = x * A16
    for _ in range(n):
        y = np.sin(a)
    return y.sum()


def mul(x, n=N):
    a = x * A16
    b = x * B16
    for _ in range(n):
        y = a * b
    return y.sum()


def matmul(x, n=N):
    a = x * A44
    b = x * B44
    for _ in range(n):
        y = a @ b
    return y.sum()


def np_sum(x, n=N):
    a = x * A16
    for _ in range(n):
        y = np.sum(a)
    return y


def getitem(x, n=N):
    a = x * A16
    for _ in range(n):
        y = a[1:]
    return y.sum()


def exp_sum(x, n=N):
    a = x * A16
    for _ in range(n):
        y = np.exp(a).sum()
    return y


def _d(f, h=1e-6):
    return (f(X + h, 1) - f(X - h, 1)) / (2 * h)


CASES = [("np.sin(a)", np_sin), ("a * b", mul), ("a @ b (4×4)", matmul), ("np.sum(a)", np_sum),
         ("a[1:]", getitem), ("np.exp(a).sum()", exp_sum)]


def rounds(fns, n_rounds, batch_s):
    """Seconds per call of each fn, one list per fn, one entry per round (order rotating)."""
    reps = []
    for fn in fns:
        fn()
        t0 = time.perf_counter()
        fn()
        reps.append(max(1, int(batch_s / max(time.perf_counter() - t0, 1e-7))))
    clock = time.process_time
    times = [[] for _ in fns]
    for r in range(n_rounds):
        for k in range(len(fns)):
            i = (k + r) % len(fns)
            t0 = clock()
            for _ in range(reps[i]):
                fns[i]()
            times[i].append((clock() - t0) / reps[i])
    return times


def per_call(n_rounds, batch_s):
    rows = []
    for label, loop in CASES:
        slope = _d(loop)
        assert_close(capstan.D(loop, X), slope, rtol=1e-6)
        assert_close(capstan.gradient(loop, X), (slope,), rtol=1e-6)
        plain, fwd, rev = rounds([lambda: loop(X), lambda: capstan.D(loop, X),
                                  lambda: capstan.gradient(loop, X)], n_rounds, batch_s)
        us = 1e6 / N
        rows.append({"case": label, "plain_us": min(plain) * us,
                     "D_us": (min(fwd) - min(plain)) * us,
                     "gradient_us": (min(rev) - min(plain)) * us,
                     "D_us_median": statistics.median(f - p for f, p in zip(fwd, plain)) * us,
                     "gradient_us_median": statistics.median(r - p for r, p in zip(rev, plain)) * us})
    return rows


# ----------------------------------------------------------------------------- whole gradients
# (the workloads and hand-written gradients of hotpath.py's table (e))
from hotpath import MLP_PARAMS as MLP, XL, XR, logsumexp, logsumexp_grad, mlp_grad, mlp_loss  # noqa: E402


WHOLE = [
    ("MLP 64→128→10, batch 256", lambda: capstan.gradient(mlp_loss, *MLP), lambda: mlp_grad(*MLP)),
    ("logsumexp, 10^6", lambda: capstan.gradient(logsumexp, XL)[0], lambda: logsumexp_grad(XL)),
    ("rosen n=1000 vs rosen_der", lambda: capstan.gradient(scipy.optimize.rosen, XR)[0],
     lambda: scipy.optimize.rosen_der(XR)),
]


def whole(n_rounds, batch_s):
    rows = []
    for label, ours, hand in WHOLE:
        assert_close(ours(), hand())
        t_ours, t_hand = rounds([ours, hand], n_rounds, batch_s)
        rows.append({"workload": label, "ours_us": min(t_ours) * 1e6, "hand_us": min(t_hand) * 1e6,
                     "ratio": min(t_ours) / min(t_hand),
                     "ratio_median": statistics.median(o / h for o, h in zip(t_ours, t_hand))})
    return rows


def main(argv):
    n_rounds, batch_s = (2, 0.005) if QUICK else (9, 0.05)
    calls = per_call(n_rounds, batch_s)
    grads = whole(n_rounds, batch_s)
    print("Python %s, numpy %s, native=%s" % (sys.version.split()[0], np.__version__,
                                              os.environ.get("OVERDUB_PURE_PYTHON") != "1"))
    print()
    print("| routed call | plain µs | D extra µs (median) | gradient extra µs (median) |")
    print("| --- | ---: | ---: | ---: |")
    for r in calls:
        print("| `%s` | %.2f | %.2f (%.2f) | %.2f (%.2f) |" % (
            r["case"], r["plain_us"], r["D_us"], r["D_us_median"], r["gradient_us"], r["gradient_us_median"]))
    print()
    print("| gradient | ours µs | hand-written µs | ratio best (median) |")
    print("| --- | ---: | ---: | ---: |")
    for r in grads:
        print("| %s | %.0f | %.0f | %.2f× (%.2f×) |" % (r["workload"], r["ours_us"], r["hand_us"], r["ratio"],
                                                        r["ratio_median"]))
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as fh:
            json.dump({"calls": calls, "gradients": grads}, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
