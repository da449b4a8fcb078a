"""Routed NumPy calls on arrays: the C layer's reverse-mode path (``reverse_call``: a rule twin
for functions with rules, the operator kernels' array branch), forward mode's direct ``apply``,
and a differentiated array's reduction methods bound to their NumPy functions.

Each is checked against what does not take the shortcut: central differences, and the whole
tape and gradient of the pure-Python path (``OVERDUB_PURE_PYTHON=1``, in a subprocess), which
must be the same record for record and bit for bit.
"""
import json
import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import capstan
import overdub
from capstan.reverse import ReverseCtx
from capstan.rules import registry
from overdub import _native
from overdub.tracebacks import is_own

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = np.linspace(0.5, 2.0, 6)
B = np.linspace(-1.0, 1.0, 6)
M = np.linspace(0.3, 1.7, 9).reshape(3, 3)


# (name, function of x, point): each reaches reverse_call's branches (taken or handed back)
def _sin_sum(x):
    return np.sum(np.sin(x * A))


def _products(x):
    a, b = x * A, x * B
    return np.sum(a * b + a / (b + 3.0) - a ** 2 + (-a)) + np.sum(a - 1.0)


def _matmul(x):
    m = x * M
    return np.sum(m @ m @ M) + np.sum(np.matmul(M, m))


def _scalars(x):
    a = x * A
    s = np.sum(a)  # a NumPy float64 result
    return s * np.max(a) + np.float64(2.0) * s + np.dot(a, a)  # (0-d results too)


def _views(x):
    a = x * A
    return np.sum(a[1:] * a[:-1]) + a[2] + np.sum(a[::2] ** 2) + np.sum(M[0] * a[:3])


def _methods(x):
    a = (x * M).copy()
    return (a.sum() + a.sum(0)[1] + a.mean(axis=1)[2] + a.max() * a.min() + a.prod()
            + a.var(ddof=1) + a.std() + a.cumsum()[-1] + a.sum(axis=0, keepdims=True)[0, 0])


def _returned(x):
    a = x * A
    b = np.asarray(a)  # the argument itself
    b[0] = 5.0 * x  # a write through either name is seen by both
    return np.sum(a * b) + np.sum(np.real(a))


def _shadowed(x):
    buf = np.ones(6)
    buf[2] = x  # a plain array now holding a derivative
    return np.sum(np.sin(buf) * A) + np.sum(np.exp(buf))


def _mixed_types(x):
    a = x * A
    ints = np.arange(6)
    c = a.astype(np.complex128) * (1 + 2j)
    return float(np.sum(a * ints) + np.sum(np.abs(c)) + np.sum(np.float32(2.0) * a))


def _three_operands(x):
    a = x * A
    return np.sum(np.where(a > 1.0, a, -a)) + np.sum(np.clip(a, 0.6, 1.5)) + np.sum(np.fmax(a, B))


PROGRAMS = [(f.__name__, f, 0.7) for f in (_sin_sum, _products, _matmul, _scalars, _views, _methods,
                                            _returned, _shadowed, _mixed_types, _three_operands)]


def _central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("name, f, x", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_both_modes_agree_with_central_differences(name, f, x):
    want = _central(f, x)
    np.testing.assert_allclose(capstan.gradient(f, x)[0], want, rtol=1e-6)
    np.testing.assert_allclose(capstan.D(f, x), want, rtol=1e-6)
    # (an array point: every call's operands are the run's arrays from the start)
    g = capstan.gradient(lambda v: f(v[0]) + np.sum(np.sin(v) * v), np.array([x, 1.3]))[0]
    np.testing.assert_allclose(g[0], want + np.sin(x) + x * np.cos(x), rtol=1e-6)


def _describe(value):
    if isinstance(value, np.ndarray):
        return ["array", str(value.dtype), list(value.shape), value.tobytes().hex()]
    if isinstance(value, (float, np.floating, int)):
        return ["scalar", type(value).__name__, float(value).hex()]
    if isinstance(value, (tuple, list)):
        return [_describe(v) for v in value]
    return [type(value).__name__]


def _record(rec):
    if isinstance(rec, tuple) or not hasattr(rec, "kind"):  # (inline float records)
        return ["float", list(map(str, rec))]
    f = getattr(rec.f, "__name__", None) if rec.f is not None else None
    return [rec.kind.name, f, _describe(rec.ans), [_describe(v) for v in rec.vals], repr(rec.parents)]


# forward mode where a product of a partial and a tangent is not finite (an exact zero wins,
# or not: registry.strong_mul and tangent_product), and sums of such products
def _flat_sqrt(x):
    a = x * A
    return np.sum(np.sqrt(a - a) + a * a)  # (an infinite partial times a zero tangent)


def _constant_infinity(x):
    a = x * A
    c = np.where(A > 1.0, np.inf, 2.0)
    return np.sum(c * (a - a) + np.maximum(a, 1.2) * np.hypot(a, 1e-300 * a))


def _overflowing(x):
    a = x * A
    return np.sum(np.exp(700.0 * a) * a) + np.sum(a / (a - a + 1e-310))


SINGULAR = [_flat_sqrt, _constant_infinity, _overflowing]


def _forward(f, x):
    try:
        with np.errstate(all="ignore"):
            return _describe(capstan.D(f, x))
    except Exception as exc:  # noqa: BLE001 -- compared as it is
        return [type(exc).__name__, str(exc)[:80]]


def _tapes():
    """For each program: its gradient, its derivative and its tape (records described), in
    this process; then forward mode's answers for the singular programs."""
    out = []
    for name, f, x in PROGRAMS:
        ctx = ReverseCtx()
        y = overdub.overdub(ctx, f, ctx.input(x))
        tape = [_record(r) for r in ctx.tape]
        out.append([name, _describe(capstan.gradient(f, x)[0]), _forward(f, x), tape,
                    _describe(overdub.untag(y, ctx))])
    out.extend([f.__name__, _forward(f, x)] for f in SINGULAR for x in (0.7, 1.0))
    return out


@pytest.mark.skipif(_native.PURE_PYTHON, reason="compares the C layer with the pure-Python path")
def test_the_c_path_records_what_the_python_path_records():
    here = json.loads(json.dumps(_tapes()))
    script = ("import json, sys\nsys.path.insert(0, %r)\nfrom test_array_calls import _tapes\n"
              "print(json.dumps(_tapes()))\n" % os.path.join(ROOT, "tests"))
    env = dict(os.environ, OVERDUB_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    there = json.loads(out.stdout)
    for a, b in zip(here, there):
        assert a == b, a[0]


def test_refusals_and_errors_are_the_same_on_every_path():
    def uncovered(x):  # (a constant second argument)
        return np.sum(np.ldexp(x * A, 2))

    def bad_axis(x):
        return np.sum(np.sin(x * A), axis=3)

    def bad_shapes(x):
        return np.sum((x * A) * np.ones(4))

    for mode in (capstan.D, lambda f, x: capstan.gradient(f, x)[0]):
        np.testing.assert_allclose(mode(uncovered, 0.7), np.sum(4.0 * A), rtol=1e-12)
        with pytest.raises(np.exceptions.AxisError):
            mode(bad_axis, 0.7)
        with pytest.raises(ValueError, match="could not be broadcast"):
            mode(bad_shapes, 0.7)


def _caught(x):
    try:
        return np.sin(x * A) @ np.ones(4)
    except ValueError as exc:  # (seen inside the run, before the run's end tidies tracebacks)
        return [tb.tb_frame.f_code for tb in _walk(exc.__traceback__)]


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_an_error_inside_a_rule_shows_no_frame_of_overdub():
    ctx = ReverseCtx()
    codes = overdub.overdub(ctx, _caught, ctx.input(0.7))
    assert codes[0].co_name == "_caught"
    assert not any(is_own(code) for code in codes)


def test_a_user_adjoint_registered_late_is_seen_by_the_c_path():
    def twice(a):
        return 2.0 * a

    def f(x):
        return np.sum(np.cbrt(x * A))

    before = capstan.gradient(f, 0.7)[0]
    saved = capstan.reverse.ADJOINTS.get(np.cbrt)
    try:
        @capstan.adjoint(np.cbrt)
        def cbrt_rule(a):
            return np.cbrt(a), lambda g: (twice(g),)

        assert capstan.gradient(f, 0.7)[0] == pytest.approx(2.0 * np.sum(A))
    finally:
        if saved is None:
            capstan.reverse.ADJOINTS.pop(np.cbrt, None)
        else:
            capstan.reverse.ADJOINTS[np.cbrt] = saved
    assert capstan.gradient(f, 0.7)[0] == before


@pytest.mark.parametrize("values", [
    [1.0, 2.0, 3.0] * 2000,
    [1e308, 1e308, -1e308] * 2000,  # (the sum overflows; every element is finite)
    [1.0, np.inf] + [0.0] * 5000,
    [np.nan] + [1.0] * 5000,
    [np.inf, -np.inf] + [1.0] * 5000,  # (inf - inf in the sum)
    [2.0, 3.0],
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_all_finite_is_numpys_answer(values, dtype):
    with np.errstate(over="ignore"):  # (1e308 is inf in float32)
        r = np.array(values).astype(dtype)
    with np.errstate(all="raise"):  # (and warns of nothing)
        assert registry._all_finite(r) == bool(np.isfinite(r).all())


def test_a_method_of_a_differentiated_array_is_its_numpy_function():
    def f(x):
        a = x * M
        m = a.sum
        return m() + m(axis=1)[0] + a.mean(0, None, None, True)[0, 1]

    np.testing.assert_allclose(capstan.gradient(f, 0.7)[0], _central(f, 0.7), rtol=1e-6)
    np.testing.assert_allclose(capstan.D(f, 0.7), _central(f, 0.7), rtol=1e-6)
