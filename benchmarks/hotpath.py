"""The hot path (issue 13): scalar AD against plain Python, per operation, per entry, nested, NumPy.

    python benchmarks/hotpath.py                 # full run, markdown on stdout (about a minute;
                                                 # minutes more with jax installed: eager jax
                                                 # takes seconds per call on Euler)
    python benchmarks/hotpath.py --quick         # smoke run: one short batch per cell, small loops
    python benchmarks/hotpath.py --json out.json # also write every row as JSON
    python benchmarks/hotpath.py -v              # progress on stderr
    python benchmarks/hotpath.py --no-peers      # leave the AD peers out even where installed

Five tables, each measured side by side in this one process (interleaved rounds, below):
  (a) scalar loops: Horner (degree 100), Euler (1000 steps, derivative w.r.t. k) and Rosenbrock
      over a Python list of 100 floats; methods plain, hand-written, a pure-Python ``__slots__``
      dual number by operator overloading (the baseline a rewriting design must beat),
      capstan.D / capstan.gradient / capstan.jvp, and the AD peers where installed;
  (b) extra nanoseconds per differentiated operation (``+ - * / **``, unary ``-``, ``math.sin``, a
      routed call of a user function), forward (D) and reverse (gradient);
  (c) the fixed cost of entering D / gradient / jvp;
  (d) nested forward mode, D(D(horner));
  (e) NumPy paths: an MLP gradient (64→128→10, batch 256), logsumexp of 10^6 values and
      gradient(scipy.optimize.rosen) at n = 1000 against hand-written NumPy gradients.
Each target column quotes issue 13's speed targets and says met or **missed**. Every derivative is
checked against a hand-written one (rtol 1e-7) before it is timed; a cell that raises shows its
error instead of a time. Only capstan's public API is used (capstan.D, capstan.gradient,
capstan.jvp), so the script measures whichever runtime is installed.
"""
import gc
import json
import math
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import _adbench  # noqa: E402
import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
from _adbench import assert_close, error_text, fmt_ratio, fmt_time  # noqa: E402
from forward import COEFFS, K0, X0, euler, euler_deriv, horner, horner_deriv  # noqa: E402
from forward import scalar_peers as jvp_peers  # noqa: E402
from reverse import XL, XR, XS, logsumexp, logsumexp_formula, logsumexp_grad  # noqa: E402
from reverse import rewritten_peers, rosen_formula, scalar_rosen, scalar_rosen_grad  # noqa: E402
from reverse import scalar_peers as grad_peers  # noqa: E402

import capstan  # noqa: E402

QUICK = "--quick" in sys.argv
N_OPS = 200 if QUICK else 10_000  # operations per loop in table (b)


# ----------------------------------------------------------------------------- (a) workloads
# horner, euler (forward.py) and scalar_rosen (reverse.py) are the workloads issue 13 names.
ONES = [1.0] * len(XS)  # the jvp direction


def scalar_rosen_jvp(xs, vs):
    """Hand-written directional derivative of scalar_rosen at ``xs`` along ``vs`` (one pass)."""
    ds = 0.0
    for i in range(len(xs) - 1):
        a, b, da, db = xs[i], xs[i + 1], vs[i], vs[i + 1]
        ds += 200.0 * (b - a * a) * (db - 2.0 * a * da) - 2.0 * (1.0 - a) * da
    return ds


class Dual:
    """A dual number ``v + d·ε`` in plain Python with ``__slots__``, by operator overloading.

    It is the baseline: the same unmodified workload functions run on it with no rewriting, so
    it measures what per-operation Python objects cost without any dispatch machinery. It knows
    just what the three workloads do (``math.sin`` in Euler only sees plain floats), and each
    operand is a Dual or a plain number.
    """
    __slots__ = ("v", "d")

    def __init__(self, v, d):
        self.v = v
        self.d = d

    def __add__(self, o):
        if type(o) is Dual:
            return Dual(self.v + o.v, self.d + o.d)
        return Dual(self.v + o, self.d)

    __radd__ = __add__

    def __sub__(self, o):
        if type(o) is Dual:
            return Dual(self.v - o.v, self.d - o.d)
        return Dual(self.v - o, self.d)

    def __rsub__(self, o):
        return Dual(o - self.v, -self.d)

    def __mul__(self, o):
        if type(o) is Dual:
            return Dual(self.v * o.v, self.d * o.v + self.v * o.d)
        return Dual(self.v * o, self.d * o)

    __rmul__ = __mul__

    def __truediv__(self, o):
        if type(o) is Dual:
            return Dual(self.v / o.v, (self.d * o.v - self.v * o.d) / (o.v * o.v))
        return Dual(self.v / o, self.d / o)

    def __rtruediv__(self, o):
        return Dual(o / self.v, -o * self.d / (self.v * self.v))

    def __pow__(self, p):  # a plain exponent: all the workloads need
        return Dual(self.v ** p, p * self.v ** (p - 1) * self.d)

    def __neg__(self):
        return Dual(-self.v, -self.d)


def dual_horner():
    return horner(Dual(X0, 1.0)).d


def dual_euler():
    return euler(Dual(K0, 1.0)).d


def dual_rosen_jvp():
    return scalar_rosen([Dual(x, v) for x, v in zip(XS, ONES)]).d


def list_jvp_peers(f, xs, vs):
    """jvp peers on ``f`` of one list argument, along the list ``vs``, the function unmodified."""
    def autograd_jvp():
        from autograd import make_jvp

        return lambda: make_jvp(f)(xs)(vs)[1]

    def jax_jvp(jit):
        def factory():
            import jax

            jax.config.update("jax_enable_x64", True)

            def tangent(p, t):
                return jax.jvp(f, (p,), (t,))[1]
            tangent = jax.jit(tangent) if jit else tangent
            return lambda: float(tangent(xs, vs))
        return factory

    def torch_jvp():
        import torch

        def tensors(values):
            return [torch.tensor(v, dtype=torch.float64) for v in values]
        pt, tt = tensors(xs), tensors(vs)
        return lambda: float(torch.func.jvp(f, (pt,), (tt,))[1])

    return [
        ("autograd make_jvp", autograd_jvp, "function unmodified"),
        ("jax.jvp (eager)", jax_jvp(False), "function unmodified; float64 (jax_enable_x64)"),
        ("jax.jvp (jit)", jax_jvp(True), "function unmodified; Python loop unrolled at trace time"),
        ("torch.func.jvp", torch_jvp, "a list of 0-d float64 tensors, function unmodified"),
    ]


class Cell:
    """One method of a workload: ``factory()`` does the imports and set-up and returns the
    zero-argument callable that is timed (ImportError: "not installed"); its result is checked
    against the hand-written reference named ``hand``; ``target`` is ``(text, limit)`` on the
    ratio to plain (``basis`` "plain") or to that hand-written reference (``basis`` "hand");
    ``peer`` marks another AD library's cell."""

    def __init__(self, name, factory, hand, target=None, note="", basis="plain", peer=False):
        self.name, self.factory, self.hand, self.target = name, factory, hand, target
        self.note, self.basis, self.peer = note, basis, peer


class Bench:
    """A workload: its plain evaluation, its hand-written derivatives ``[(name, fn)]`` (the
    first is the one the ratio column "× hand-written" uses unless a cell names another) and
    its cells."""

    def __init__(self, name, plain, hands, cells):
        self.name, self.plain, self.hands, self.cells = name, plain, hands, cells


def peer_cells(peers, hand):
    return [Cell(name, factory, hand, note=note, peer=True) for name, factory, note in peers]


def scalar_benches():
    d_target, grad_target, jvp_target = ("D ≤ 3× plain", 3.0), ("gradient ≤ 4× plain", 4.0), \
        ("jvp ≤ 3× plain", 3.0)
    small = "issue 13 allows up to 4× for functions of about 3 µs plain (entry cost)"
    dual_note = "pure-Python `__slots__` dual, operator overloading, no rewriting"
    hand = "hand-written derivative"
    return [
        Bench("Horner", lambda: horner(X0), [(hand, lambda: horner_deriv(X0))], [
            Cell("`__slots__` dual", lambda: dual_horner, hand, note=dual_note),
            Cell("capstan.D", lambda: lambda: capstan.D(horner, X0), hand, d_target, small),
            Cell("capstan.gradient", lambda: lambda: capstan.gradient(horner, X0), hand, grad_target),
        ] + peer_cells(jvp_peers(horner, X0) + grad_peers(horner, [X0]), hand)),
        Bench("Euler", lambda: euler(K0), [(hand, lambda: euler_deriv(K0))], [
            Cell("`__slots__` dual", lambda: dual_euler, hand, note=dual_note),
            Cell("capstan.D", lambda: lambda: capstan.D(euler, K0), hand, d_target),
            Cell("capstan.gradient", lambda: lambda: capstan.gradient(euler, K0), hand, grad_target),
        ] + peer_cells(jvp_peers(euler, K0) + grad_peers(euler, [K0]), hand)),
        Bench("Rosenbrock (list of 100)", lambda: scalar_rosen(XS),
              [("hand-written gradient", lambda: scalar_rosen_grad(XS)),
               ("hand-written jvp", lambda: scalar_rosen_jvp(XS, ONES))], [
            Cell("`__slots__` dual (jvp)", lambda: dual_rosen_jvp, "hand-written jvp",
                 note=dual_note + "; direction all ones"),
            Cell("capstan.gradient", lambda: lambda: capstan.gradient(scalar_rosen, XS)[0],
                 "hand-written gradient", grad_target, "gradient is a list"),
            Cell("capstan.jvp", lambda: lambda: capstan.jvp(scalar_rosen, (XS,), (ONES,))[1],
                 "hand-written jvp", jvp_target, "direction all ones"),
        ] + peer_cells(grad_peers(scalar_rosen, [XS]), "hand-written gradient")
          + peer_cells(list_jvp_peers(scalar_rosen, XS, ONES), "hand-written jvp")),
    ]


# ----------------------------------------------------------------------------- (b) per operation
# One loop per operation, each iteration one operation on the differentiated input x. Under
# capstan.D / capstan.gradient x is differentiated; run plainly it is a float. The difference
# of the two times, divided by the number of operations, is what differentiating one operation
# adds (the loop itself, the same in both, cancels).
def op_add(x, n=N_OPS):
    for _ in range(n):
        y = x + x
    return y


def op_add_float(x, n=N_OPS):
    for _ in range(n):
        y = x + 1.5
    return y


def op_sub(x, n=N_OPS):
    for _ in range(n):
        y = x - x
    return y


def op_sub_float(x, n=N_OPS):
    for _ in range(n):
        y = x - 1.5
    return y


def op_mul(x, n=N_OPS):
    for _ in range(n):
        y = x * x
    return y


def op_mul_float(x, n=N_OPS):
    for _ in range(n):
        y = x * 1.5
    return y


def op_div(x, n=N_OPS):
    for _ in range(n):
        y = x / x
    return y


def op_div_float(x, n=N_OPS):
    for _ in range(n):
        y = x / 1.5
    return y


def op_pow(x, n=N_OPS):
    for _ in range(n):
        y = x ** x
    return y


def op_pow_float(x, n=N_OPS):
    for _ in range(n):
        y = x ** 3.0
    return y


def op_neg(x, n=N_OPS):
    for _ in range(n):
        y = -x
    return y


def op_sin(x, n=N_OPS):
    for _ in range(n):
        y = math.sin(x)
    return y


def g(a):
    return a


def op_call(x, n=N_OPS):
    for _ in range(n):
        y = g(x)
    return y


XOP = 0.7
# (label, loop, hand-written derivative of the loop's result at XOP)
OPERATIONS = [
    ("`a + b`", op_add, 2.0),
    ("`a + 1.5`", op_add_float, 1.0),
    ("`a - b`", op_sub, 0.0),
    ("`a - 1.5`", op_sub_float, 1.0),
    ("`a * b`", op_mul, 2.0 * XOP),
    ("`a * 1.5`", op_mul_float, 1.5),
    ("`a / b`", op_div, 0.0),
    ("`a / 1.5`", op_div_float, 1.0 / 1.5),
    ("`a ** b`", op_pow, XOP ** XOP * (math.log(XOP) + 1.0)),
    ("`a ** 3.0`", op_pow_float, 3.0 * XOP ** 2),
    ("`-a`", op_neg, -1.0),
    ("`math.sin(a)`", op_sin, math.cos(XOP)),
    ("routed call `g(a)`", op_call, 1.0),
]
OP_TARGET_NS = 50.0

N_NP = 20 if QUICK else 1_000  # routed NumPy calls per loop in table (b)
A16 = np.linspace(0.5, 2.0, 16)


def np_sin(x, n=N_NP):
    v = x * A16
    for _ in range(n):
        y = np.sin(v)
    return float(y.sum())


def np_mul(x, n=N_NP):
    v = x * A16
    for _ in range(n):
        y = v * v
    return float(y.sum())


def np_sum(x, n=N_NP):
    v = x * A16
    for _ in range(n):
        y = np.sum(v)
    return float(y)


# (label, loop, hand-written derivative at XOP): one routed NumPy call per iteration
NUMPY_CALLS = [
    ("`np.sin(v)`, 16 elements", np_sin, float(np.sum(A16 * np.cos(XOP * A16)))),
    ("`v * v`, 16 elements", np_mul, float(2.0 * XOP * np.sum(A16 * A16))),
    ("`np.sum(v)`, 16 elements", np_sum, float(np.sum(A16))),
]
NP_TARGET_NS = 2000.0

PER_OP_METHOD = """\
Each operation is a function whose loop does that one operation N = {n:,} times on its input
(`for _ in range(n): y = a * b`, where `a` and `b` are both the input, `1.5` / `3.0` a float
constant, `g` is `def g(a): return a`). "plain loop" is its time called on a float, divided by N.
The D and gradient columns are (time of `capstan.D(loop, 0.7)`, resp. `capstan.gradient(loop,
0.7)`) − (time of `loop(0.7)`), divided by N: the extra nanoseconds each differentiated operation
costs, with the loop's own cost cancelled. The difference of each round (both timed in the same
round) is taken and the median over rounds reported. It includes the fixed entry cost of one
D / gradient call spread over N operations (table (c) divided by N, at most a few ns), and for
gradient the backward sweep over the operation's tape record. Target: ≤ {t:.0f} ns per operation.
The last rows do one routed NumPy call per iteration (N = {n_np:,}) on `v = a * A16`, a 16-element
array carrying the derivative, and return its sum; issue 13's target for the overhead of a
routed NumPy call is ≤ 2 µs.
"""


# ----------------------------------------------------------------------------- (d) nested
def horner_second(x):
    """Hand-written second derivative of horner (the recurrences of r, r' and r'')."""
    r, dr, ddr = 0.0, 0.0, 0.0
    for c in COEFFS:
        ddr = ddr * x + 2.0 * dr
        dr = dr * x + r
        r = r * x + c
    return ddr


def nested_benches():
    hand = "hand-written 2nd derivative"
    return [Bench("Horner, 2nd derivative", lambda: horner(X0), [(hand, lambda: horner_second(X0))], [
        Cell("capstan.D(D(horner))", lambda: lambda: capstan.D(lambda y: capstan.D(horner, y), X0),
             hand, ("D(D) ≤ 100× plain", 100.0), "`D(lambda y: D(horner, y), x)`"),
    ])]


# ----------------------------------------------------------------------------- (e) NumPy
_rng = np.random.default_rng(13)
MLP_BATCH, MLP_IN, MLP_HID, MLP_OUT = 256, 64, 128, 10
MX = _rng.standard_normal((MLP_BATCH, MLP_IN))
MY = _rng.standard_normal((MLP_BATCH, MLP_OUT))
MLP_PARAMS = (_rng.standard_normal((MLP_IN, MLP_HID)) / np.sqrt(MLP_IN),
              0.1 * _rng.standard_normal(MLP_HID),
              _rng.standard_normal((MLP_HID, MLP_OUT)) / np.sqrt(MLP_HID),
              0.1 * _rng.standard_normal(MLP_OUT))


def mlp_loss(W1, b1, W2, b2):
    """Mean squared error of a tanh MLP 64→128→10 on a batch of 256."""
    h = np.tanh(MX @ W1 + b1)
    d = h @ W2 + b2 - MY
    return np.mean(d * d)


def mlp_grad(W1, b1, W2, b2):
    """Hand-written gradient of mlp_loss w.r.t. (W1, b1, W2, b2)."""
    h = np.tanh(MX @ W1 + b1)
    d = h @ W2 + b2 - MY
    g_out = d * (2.0 / d.size)
    g_hid = (g_out @ W2.T) * (1.0 - h * h)
    return MX.T @ g_hid, g_hid.sum(axis=0), h.T @ g_out, g_out.sum(axis=0)


def mlp_formula(xp, W1, b1, W2, b2):
    X, Y = (xp.from_numpy(MX), xp.from_numpy(MY)) if hasattr(xp, "from_numpy") else (MX, MY)
    h = xp.tanh(X @ W1 + b1)
    d = h @ W2 + b2 - Y
    return xp.mean(d * d)


def numpy_benches():
    hand_target = ("≤ 1.3× hand-written", 1.3)
    hand = "hand-written NumPy gradient"
    return [
        Bench("MLP 64→128→10, batch 256", lambda: mlp_loss(*MLP_PARAMS),
              [(hand, lambda: mlp_grad(*MLP_PARAMS))], [
            Cell("capstan.gradient", lambda: lambda: capstan.gradient(mlp_loss, *MLP_PARAMS),
                 hand, hand_target, "squared loss, tanh hidden layer", basis="hand"),
        ] + peer_cells(rewritten_peers(mlp_formula, list(MLP_PARAMS)), hand)),
        Bench("logsumexp, 10^6", lambda: logsumexp(XL), [(hand, lambda: logsumexp_grad(XL))], [
            Cell("capstan.gradient", lambda: lambda: capstan.gradient(logsumexp, XL)[0],
                 hand, hand_target, "max-shifted, written with NumPy", basis="hand"),
        ] + peer_cells(rewritten_peers(logsumexp_formula, [XL]), hand)),
        Bench("scipy.optimize.rosen, n=1000", lambda: scipy.optimize.rosen(XR),
              [("scipy.optimize.rosen_der", lambda: scipy.optimize.rosen_der(XR))], [
            Cell("capstan.gradient", lambda: lambda: capstan.gradient(scipy.optimize.rosen, XR)[0],
                 "scipy.optimize.rosen_der", ("≤ 4× rosen_der", 4.0), "SciPy's function unmodified",
                 basis="hand"),
        ] + peer_cells(rewritten_peers(rosen_formula, [XR]), "scipy.optimize.rosen_der")),
    ]


# ----------------------------------------------------------------------------- timing
def interleaved(fns, quick, rounds=15, batch_s=0.04, slow_s=0.3, slow_rounds=3):
    """Seconds per call of each of ``fns``, one list per fn with one entry per round.

    Every round times each fn once, as a batch of back-to-back calls of about ``batch_s``
    (GC enabled), the order rotating from round to round: load on the machine then drifts
    over all of them alike, and ratios or differences taken within a round cancel it. One
    call sizes each batch (the callers have made a first call already). A fn slower than
    ``slow_s`` per call (a peer run eagerly) is timed in the first ``slow_rounds`` rounds
    only, one call each, so that it does not hold up the others.
    """
    if quick:
        rounds, batch_s = 1, 0.005
    reps = []
    for fn in fns:
        t0 = time.perf_counter()
        fn()
        once = max(time.perf_counter() - t0, 1e-7)
        reps.append(max(1, int(batch_s / once)) if once <= slow_s else 0)
    times = [[] for _ in fns]
    for r in range(rounds):
        for k in range(len(fns)):
            i = (k + r) % len(fns)
            fn, n = fns[i], reps[i] or (1 if r < slow_rounds else 0)
            if not n:
                continue
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            times[i].append((time.perf_counter() - t0) / n)
    return times


def median_ratio(times, base):
    """Median over rounds of the ratio of two fns' times in the same round."""
    return statistics.median(t / b for t, b in zip(times, base))


def _row(workload, method, note=""):
    return {"workload": workload, "impl": method, "median": None, "x_plain": None, "x_hand": None,
            "first_call": None, "target": "", "met": None, "error": "", "note": note}


def run_benches(benches, quick, progress=None, peers=True):
    """Rows (dicts) for every method of every workload: plain, the hand-written references and
    each cell (the peers' only if ``peers``), checked first and then timed in interleaved rounds."""
    rows = []
    for b in benches:
        if not peers:
            b.cells = [c for c in b.cells if not c.peer]
        if progress:
            progress(b.name)
        gc.collect()
        timed, timed_rows, targeted = [], [], []

        def first(fn):
            t0 = time.perf_counter()
            result = fn()
            return result, time.perf_counter() - t0

        row = _row(b.name, "plain")
        row["first_call"] = first(b.plain)[1]
        rows.append(row)
        timed.append(b.plain)
        timed_rows.append(row)
        expected = {}
        for name, fn in b.hands:
            row = _row(b.name, name)
            expected[name], row["first_call"] = first(fn)
            rows.append(row)
            timed.append(fn)
            timed_rows.append(row)
        for cell in b.cells:
            if progress:
                progress("%s / %s" % (b.name, cell.name))
            row = _row(b.name, cell.name, cell.note)
            row["hand"] = cell.hand
            rows.append(row)
            if cell.target:
                row["target"] = cell.target[0]
                targeted.append((cell, row))
            try:
                fn = cell.factory()
            except ImportError:
                row["error"] = "not installed"
                continue
            except Exception as exc:  # noqa: BLE001 - reported in the table
                row["error"] = error_text(exc)
                continue
            try:
                result, row["first_call"] = first(fn)
                assert_close(result, expected[cell.hand])
            except Exception as exc:  # noqa: BLE001 - the table still prints
                row["error"] = error_text(exc)
                continue
            timed.append(fn)
            timed_rows.append(row)
        times = interleaved(timed, quick)
        hand_times = {name: times[1 + i] for i, (name, _) in enumerate(b.hands)}
        for row, t in zip(timed_rows, times):
            hand = hand_times[row.get("hand", b.hands[0][0])]
            row.update(median=statistics.median(t), x_plain=median_ratio(t, times[0]),
                       x_hand=median_ratio(t, hand))
        for cell, row in targeted:
            if row["median"] is not None:
                ratio = row["x_hand"] if cell.basis == "hand" else row["x_plain"]
                row["met"] = ratio <= cell.target[1]
    return rows


def run_per_op(quick, progress=None):
    """Rows for table (b): plain ns per loop iteration, and the extra ns per operation of D
    and gradient, after checking both derivatives against the hand-written one."""
    rows = []
    for label, loop, slope, n, target in ([op + (N_OPS, OP_TARGET_NS) for op in OPERATIONS]
                                          + [op + (N_NP, NP_TARGET_NS) for op in NUMPY_CALLS]):
        if progress:
            progress("per operation " + label)
        row = {"operation": label, "plain_ns": None, "D_ns": None, "gradient_ns": None, "error": "",
               "n": n, "target_ns": target}
        rows.append(row)
        try:
            assert_close(capstan.D(loop, XOP), slope)
            assert_close(capstan.gradient(loop, XOP), (slope,))
        except Exception as exc:  # noqa: BLE001 - reported in the table
            row["error"] = error_text(exc)
            continue
        gc.collect()
        plain, fwd, rev = interleaved([lambda: loop(XOP), lambda: capstan.D(loop, XOP),
                                       lambda: capstan.gradient(loop, XOP)], quick)
        row["plain_ns"] = statistics.median(plain) / n * 1e9
        row["D_ns"] = statistics.median(f - p for f, p in zip(fwd, plain)) / n * 1e9
        row["gradient_ns"] = statistics.median(r - p for r, p in zip(rev, plain)) / n * 1e9
    return rows


ENTRY_TARGET_US = 2.0


def run_entry(quick):
    """Rows for table (c): one call of D / gradient / jvp on the identity, checked first."""
    ident = lambda x: x  # noqa: E731 - the issue's own wording: D(lambda x: x, 1.0)
    cells = [
        ("`capstan.D(lambda x: x, 1.0)`", lambda: capstan.D(ident, 1.0), 1.0, True),
        ("`capstan.gradient(lambda x: x, 1.0)`", lambda: capstan.gradient(ident, 1.0), (1.0,), True),
        ("`capstan.jvp(lambda x: x, (1.0,), (1.0,))`", lambda: capstan.jvp(ident, (1.0,), (1.0,)),
         (1.0, 1.0), False),
    ]
    rows = []
    ok = []
    for label, fn, want, targeted in cells:
        row = {"entry": label, "median_us": None, "target": targeted, "met": None, "error": ""}
        rows.append(row)
        try:
            assert_close(fn(), want)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            row["error"] = error_text(exc)
            continue
        ok.append((row, fn))
    gc.collect()
    times = interleaved([lambda: ident(1.0)] + [fn for _, fn in ok], quick)
    plain_us = statistics.median(times[0]) * 1e6
    rows.insert(0, {"entry": "plain call `(lambda x: x)(1.0)`", "median_us": plain_us, "target": False,
                    "met": None, "error": ""})
    for (row, _), t in zip(ok, times[1:]):
        row["median_us"] = statistics.median(t) * 1e6
        if row["target"]:
            row["met"] = row["median_us"] <= ENTRY_TARGET_US
    return rows


# ----------------------------------------------------------------------------- tables
def verdict(met):
    return "met" if met else "**missed**"


def ratio_table(rows):
    lines = ["| workload | method | median | × plain | × hand-written | first call | target | notes |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        target = "%s: %s" % (r["target"], verdict(r["met"])) if r["target"] and r["met"] is not None else ""
        if r["error"] == "not installed":
            cells = ("not installed", "—", "—", "—", r["note"])
        else:
            note = "; ".join(s for s in (("**" + r["error"] + "**") if r["error"] else "", r["note"]) if s)
            if r["target"] and r["met"] is None:
                target = "%s: **not measured**" % r["target"]
            cells = (fmt_time(r["median"]), fmt_ratio(r["x_plain"]), fmt_ratio(r["x_hand"]),
                     fmt_time(r["first_call"]), note)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["workload"], r["impl"], cells[0], cells[1], cells[2], cells[3], target, cells[4]))
    return "\n".join(lines)


def per_op_table(rows):
    lines = ["| operation | plain loop, ns per iteration | D: extra ns/op | gradient: extra ns/op "
             "| target |", "|---|---:|---:|---:|---|"]

    def ns(v):
        return "—" if v is None else "%.0f" % v

    for r in rows:
        if r["error"]:
            target = "**%s**" % r["error"]
        else:
            limit = r["target_ns"]
            target = "≤ %s: D %s, gradient %s" % ("%.0f ns" % limit if limit < 1000 else "%.0f µs" % (limit / 1000),
                                                 verdict(r["D_ns"] <= limit), verdict(r["gradient_ns"] <= limit))
        lines.append("| %s | %s | %s | %s | %s |" % (r["operation"], ns(r["plain_ns"]), ns(r["D_ns"]),
                                                     ns(r["gradient_ns"]), target))
    return "\n".join(lines)


def entry_table(rows):
    lines = ["| call | median | target |", "|---|---:|---|"]
    for r in rows:
        if r["error"]:
            shown, target = "—", "**%s**" % r["error"]
        else:
            shown = "%.2f µs" % r["median_us"]
            target = "≤ %.0f µs: %s" % (ENTRY_TARGET_US, verdict(r["met"])) if r["target"] else ""
        lines.append("| %s | %s | %s |" % (r["entry"], shown, target))
    return "\n".join(lines)


METHOD = """\
How it is measured: every method of a workload (plain, hand-written, each cell) is timed in the
same rounds (15 rounds; in each, a batch of ~40 ms of back-to-back calls per method, GC enabled,
the order rotating). "median" is the median time per call over the rounds; "× plain" and
"× hand-written" are the medians over rounds of the ratio taken within each round, so load on a
shared machine cancels (a method slower than 0.3 s per call, a peer run eagerly, is timed in the
first 3 rounds only, one call each). "first call" is the first call in this process, after the
set-up: for capstan it includes rewriting the code if no earlier cell rewrote it, for jax.jit
tracing and compiling. Peers are filled in where installed (autograd, jax, torch), "not
installed" otherwise.
"""


def main(argv):
    quick = "--quick" in argv
    json_path = argv[argv.index("--json") + 1] if "--json" in argv else None
    progress = (lambda s: print("…", s, file=sys.stderr, flush=True)) if "-v" in argv else None
    peers = "--no-peers" not in argv
    scalar = run_benches(scalar_benches(), quick, progress, peers)
    per_op = run_per_op(quick, progress)
    entry = run_entry(quick)
    nested = run_benches(nested_benches(), quick, progress, peers)
    arrays = run_benches(numpy_benches(), quick, progress, peers)

    print(_adbench.header("Hot path (issue 13)", quick))
    print()
    print("### (a) Scalar loops: ratio to plain")
    print()
    print(ratio_table(scalar))
    print()
    print("### (b) Per differentiated operation")
    print()
    print(per_op_table(per_op))
    print()
    print(PER_OP_METHOD.format(n=N_OPS, t=OP_TARGET_NS, n_np=N_NP))
    print("### (c) Fixed cost of entering D / gradient")
    print()
    print(entry_table(entry))
    print()
    print("### (d) Nested forward mode")
    print()
    print(ratio_table(nested))
    print()
    print("### (e) NumPy paths")
    print()
    print(ratio_table(arrays))
    print()
    print(METHOD)
    if quick:
        print("(--quick: one batch of ~5 ms per cell and loops of %d operations; times are rough)" % N_OPS)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump({"python": platform.python_version(), "numpy": np.__version__, "quick": quick,
                       "n_ops": N_OPS, "scalar": scalar, "per_op": per_op, "entry": entry,
                       "nested": nested, "numpy_paths": arrays}, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv)
