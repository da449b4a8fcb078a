"""Sparsity detection's C layer against its pure-Python reference.

The pattern kernels (``_capstan_native.PatternKernel``, the native twins of
``capstan.sparsity``'s scalar fast paths) must give, bit for bit, what the Python method
they twin gives -- the same value, the same index set, the same pairs appended to
``ctx.scalar_pairs``, the same exception -- for every input, including those they hand
back; ``mask_table`` must read index sets out of bit masks as the Python reference does;
whole detections must give the same patterns with and without the C layer.
"""
import json
import math
import operator
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import capstan
from capstan import sparsity
from capstan.sparsity import PatternCtx
from overdub import Tagged, _native
from recursion_depth import frames_to_spare
from scalar_programs import straight_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
native = pytest.mark.skipif(_native.PURE_PYTHON, reason="the C layer is not in use (OVERDUB_PURE_PYTHON=1)")

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
          operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ipow]
#: neg, pos and every math function with a fast path (sin, exp, sqrt, log1p, erf...)
UNARY = [operator.neg, operator.pos] + [getattr(math, name[len("_fast_math_"):])
                                        for name in sorted(vars(PatternCtx)) if name.startswith("_fast_math_")]


def _method(f):
    if f in (operator.neg, operator.pos) or f in BINARY:
        return getattr(PatternCtx, "_fast_%s" % f.__name__)
    return getattr(PatternCtx, "_fast_math_%s" % f.__name__)


def _shape(r):
    """An outcome comparable bit for bit: floats as hex, masks as ints, types kept."""
    if type(r) is Tagged:
        return ("tagged", _shape(r._value), _shape(r._meta), r._tagkey is r._ctx._tagkey)
    if type(r) is float:
        return ("float", r.hex())
    if type(r) is tuple:
        return tuple(_shape(e) for e in r)
    if type(r) is sparsity.Pat:  # (an array's index sets, from the generic path)
        return ("Pat", r.shape, r.rows().indptr.tolist(), r.rows().indices.tolist())
    return (type(r).__name__, repr(r))


def _outcome(fn, *args):
    try:
        return _shape(fn(*args))
    except Exception as exc:  # noqa: BLE001 (the exception is the outcome)
        return ("raises", type(exc), str(exc))


masks = st.one_of(st.sampled_from([0, 1, 2, 6, 1 << 63, 1 << 64, (1 << 3000) | 5]),
                  st.integers(0, 2 ** 200), st.builds(lambda k: 1 << k, st.integers(0, 5000)))
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 1e308, -1e308, 5e-324, 700.0]))
constants = st.one_of(floats, st.integers(-3, 3), st.sampled_from(
    [True, np.float64(2.0), np.float64(0.0), np.float32(1.5), np.int64(3), 1j, "s", None, 2 ** 60]))


def _operand(draw, ctx, other):
    """A function making one operand: tagged by ``ctx`` (with a mask, or metadata no fast
    path takes; a float, int, NumPy or complex value), tagged by another context, stale,
    or a constant of any type."""
    kind = draw(st.sampled_from(["own", "own", "own", "constant", "foreign", "stale", "odd meta"]))
    value = draw(st.one_of(floats, floats.map(np.float64), st.integers(-3, 3), st.sampled_from(
        [np.float32(0.5), 2j, np.array([1.0]), np.complex128(1.0)])))
    mask = draw(masks)
    if kind == "own":
        return lambda c: Tagged(_fresh(value), mask, c)
    if kind == "constant":
        constant = draw(constants)
        return lambda c: _fresh(constant)
    if kind == "foreign":
        return lambda c: Tagged(_fresh(value), mask, other)
    if kind == "stale":
        def stale(c):
            old = Tagged(_fresh(value), mask, c)
            old._tagkey = object()
            return old
        return stale
    meta = draw(st.sampled_from([None, 1.0, True, np.int64(1)]))
    return lambda c: Tagged(_fresh(value), meta, c)


def _fresh(value):
    """Each run its own copy of a drawn array (in-place operators write into it)."""
    return value.copy() if type(value) is np.ndarray else value


@native
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's, on float64 operands)
@settings(max_examples=500, deadline=None)
@given(st.data())
def test_pattern_kernels_match_their_python_twins_bit_for_bit(data):
    f = data.draw(st.sampled_from(BINARY + UNARY))
    method = _method(f)
    kernel = method.__overdub_native__
    assert kernel.fallback is method
    makers = [_operand(data.draw, None, PatternCtx()) for _ in range(2 if f in BINARY else 1)]
    second = data.draw(st.booleans())
    outcomes = []
    for fn in (kernel, method):
        ctx = PatternCtx()
        ctx.n, ctx.second = 10_000, second
        args = [make(ctx) for make in makers]
        if f in (operator.pow, operator.ipow) and any(type(a) is int and abs(a) > 3 for a in args):
            return  # (3 ** 2 ** 60 never ends, in either)
        with frames_to_spare():  # (a stale tag recurses until RecursionError, in both)
            out = _outcome(fn, ctx, *args)
        outcomes.append((out, [tuple(p) for p in ctx.scalar_pairs]))
    assert outcomes[0] == outcomes[1], f


@native
def test_pattern_kernels_compute_the_common_case_and_hand_back_the_rest():
    """The kernel computes (it does not always defer), and defers where it must."""
    calls = []

    def spy(*args, **kwargs):
        calls.append(args)
        return "python"

    kernel = type(PatternCtx._fast_mul.__overdub_native__)(operator.mul, 2, _native.capstan_native.PAIR_01, spy)
    ctx = PatternCtx()
    ctx.second = True
    x, y = Tagged(3.0, 0b0110, ctx), Tagged(np.float64(4.0), 0b1100, ctx)
    r = kernel(ctx, x, y)
    assert (r._value, type(r._value), r._meta, ctx.scalar_pairs, calls) == (12.0, np.float64, 0b1110,
                                                                            [(0b0110, 0b1100)], [])
    assert kernel(ctx, x, 2.0)._meta == 0b0110 and len(ctx.scalar_pairs) == 1  # (a constant: no pair)
    assert kernel(ctx, x, np.float32(2.0)) == "python"
    assert kernel(ctx, x, Tagged(1.0, 1.0, ctx)) == "python"  # (not a mask)
    assert kernel(ctx, x, y, 1) == "python" and kernel(ctx, x, y=y) == "python"
    assert len(calls) == 4
    div = type(kernel)(operator.truediv, 2, 0, spy)
    assert div(ctx, x, 0.0) == "python"  # (ZeroDivisionError is the method's to raise)
    assert div(ctx, x, 2.0)._value == 1.5 and len(calls) == 5


@native
def test_pattern_kernel_reference_counts_balance():
    ctx = PatternCtx()
    ctx.second = True
    a, b = 1 << 100, (1 << 100) | 3
    x, y = Tagged(3.0, a, ctx), Tagged(np.float64(2.0), b, ctx)
    kernels = [type(PatternCtx._fast_mul.__overdub_native__)(f, arity, pairs, _method(f))
               for f, arity, pairs in ((operator.pow, 2, 7), (operator.mul, 2, 2), (math.exp, 1, 1),
                                       (operator.truediv, 2, 6))]
    pw, mul, exp, div = kernels
    watched = (ctx, x, y, a, b, ctx._tagkey) + tuple(kernels)
    before = [sys.getrefcount(o) for o in watched]
    for _ in range(1000):
        pw(ctx, x, y), pw(ctx, x, 2), mul(ctx, 2.0, y), exp(ctx, x), exp(ctx, 1.0), div(ctx, 1.0, 2.0)
        with pytest.raises(ZeroDivisionError):
            div(ctx, x, 0.0)
    ctx.scalar_pairs = []
    after = [sys.getrefcount(o) for o in watched]
    assert before == after


# ----------------------------------------------------------------------------- masks to rows
def _mask_lists(draw):
    pool = draw(st.lists(masks, min_size=1, max_size=12))
    picks = draw(st.lists(st.integers(0, len(pool) - 1), max_size=40))
    return [pool[i] for i in picks]  # (the same objects repeated, as detection hands them on)


@native
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mask_table_reads_masks_as_the_python_reference_does(data):
    masks = _mask_lists(data.draw)
    if data.draw(st.booleans()):
        masks = [tuple(masks[i:i + 2]) for i in range(0, len(masks) - 1, 2)]
    R, ids = sparsity.distinct_masks(masks, 10_000)
    P, pids = sparsity._distinct_masks(masks, 10_000)
    for a, b in ((R.indptr, P.indptr), (R.indices, P.indices), (ids, pids)):
        assert a.dtype == b.dtype == np.int64
        np.testing.assert_array_equal(a, b)
    flat = [m for ms in masks for m in ms] if masks and type(masks[0]) is tuple else masks
    for i, m in enumerate(flat):  # (and both are right)
        u = ids[i]
        want = [b for b, c in enumerate(reversed(bin(m)[2:])) if c == "1"]
        assert R.indices[R.indptr[u]:R.indptr[u + 1]].tolist() == want


@native
def test_mask_table_refuses_what_is_not_a_mask():
    table = _native.capstan_native.mask_table
    for bad in ([-1], [1.0], [True], [(1, -2)], [np.int64(3)]):
        with pytest.raises(ValueError, match="not a non-negative int"):
            table(bad)
    with pytest.raises(TypeError):
        table((1, 2))
    indptr, indices, ids = table([])
    assert (bytes(indptr), bytes(indices), bytes(ids)) == (bytes(8), b"", b"")


# ----------------------------------------------------------------------------- whole detections
def _loop_programs():
    """(source, x) pairs: scalar loops over lists and arrays, float64 elements included."""
    return [
        ("def f(x):\n    s = 0.0\n    for i in range(len(x) - 1):\n"
         "        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2\n    return s\n", 12, "list"),
        ("def f(x):\n    s = 0.0\n    for i in range(len(x) - 1):\n"
         "        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2\n    return s\n", 12, "array"),
        ("def f(x):\n    n = len(x)\n    out = []\n    for i in range(n):\n"
         "        left = x[i - 1] if i > 0 else 0.0\n        right = x[i + 1] if i < n - 1 else 0.0\n"
         "        out.append((left - 2.0 * x[i] + right) * 4.0 + math.exp(x[i]))\n    return out\n", 9, "array"),
        ("def f(x):\n    t = sum(x)\n    out = 0.0\n    for i in range(len(x)):\n"
         "        out += x[i] / t - math.sin(x[i]) * x[-1] + (-x[i]) ** 3 / 2\n    return out\n", 7, "list"),
        ("def f(x):\n    return [x[0] * x[1], math.sqrt(x[2]) + x[3] ** x[4], x[5] / x[6], +x[7] - 3]\n", 8, "array"),
    ]


def _detections(cases):
    out = []
    for source, n, kind in cases:
        ns = {"math": math}
        exec(compile(source, "<prog>", "exec"), ns)  # noqa: S102
        x = [0.3 + 0.1 * i for i in range(n)]
        x = np.array(x) if kind == "array" else x
        J = capstan.jacobian_sparsity(ns["f"], x)
        row = [J.shape, J.indptr.tolist(), J.indices.tolist()]
        try:
            H = capstan.hessian_sparsity(ns["f"], x)
            row += [H.indptr.tolist(), H.indices.tolist()]
        except ValueError:  # (not a scalar)
            row += [None]
        out.append(row)
    return json.loads(json.dumps(out))


_PROGRAMS = []


@settings(max_examples=40, deadline=None, database=None)
@given(straight_line())
def _collect(case):
    _, xs, source = case
    args = ", ".join("x[%d]" % i for i in range(len(xs)))
    _PROGRAMS.append((source.replace("def prog", "def g") + "def f(x):\n    return g(%s)\n" % args,
                      len(xs), "list"))


@native
def test_detection_gives_the_same_patterns_with_and_without_the_c_layer():
    _PROGRAMS.clear()
    _collect()
    cases = _loop_programs() + _PROGRAMS
    here = _detections(cases)
    script = ("import json, sys\nsys.path.insert(0, %r)\nfrom test_sparsity_native import _detections\n"
              "print(json.dumps(_detections(json.loads(sys.stdin.read()))))\n" % os.path.join(ROOT, "tests"))
    env = dict(os.environ, OVERDUB_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, input=json.dumps(cases),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    there = json.loads(out.stdout)
    assert len(here) == len(cases) >= 40
    for case, a, b in zip(cases, here, there):
        assert a == b, case[0]
    assert here[0][3:] == here[1][3:]  # (list and array loops: one pattern)
    assert here[0][4] == [j for i in range(12) for j in (i - 1, i, i + 1) if 0 <= j < 12]  # (tridiagonal)
