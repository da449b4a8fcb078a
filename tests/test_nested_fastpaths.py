"""Forward mode's nested fast path (capstan/fastpaths_nested.py) against the generic path.

Inside ``D(D(f))``, a Hessian's reverse-over-forward products and the like, an inner
forward differentiation's floats are tagged by an enclosing one.  The nested fast path
computes the rule formulas with the enclosing context's fast paths; the generic path
(``apply``, one routed step at a time) is the oracle: with the fast-path table emptied
(``FAST``), every nested step goes the generic way.  Both must agree on every program,
and the fast path must really be taken (no ``apply`` in ``D(D(horner))``).
"""
import math
import operator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import capstan
from capstan import fastpaths
from capstan.forward import ForwardCtx
from capstan.reverse import ReverseCtx


def generic(thunk):
    """``thunk()`` with the nested fast path and the enclosing context's fast paths
    switched off (the generic rule path)."""
    saved = {cls: fastpaths.FAST[cls] for cls in (ForwardCtx, ReverseCtx)}
    try:
        for cls in saved:
            fastpaths.FAST[cls] = {}
        return thunk()
    finally:
        fastpaths.FAST.update(saved)


_UNARY = ["sin", "cos", "exp", "tanh", "atan", "sqrt", "log1p", "neg", "sq", "cube", "pow15", "log"]
_BINARY = ["+", "-", "*", "/", "+c", "c*", "c-", "/c", "**x"]


@st.composite
def programs(draw, max_steps=8):
    """``(f, source)``: a one-input straight-line program over the operators and math
    functions with fast paths, constants of both int and float type included."""
    names = ["x"]
    lines = []
    for k in range(draw(st.integers(1, max_steps))):
        op = draw(st.sampled_from(_UNARY + _BINARY))
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        c = draw(st.sampled_from(["2", "3.5", "-1.25", "1"]))
        expr = {
            "sin": f"math.sin({a})", "cos": f"math.cos({a})", "exp": f"math.exp(math.tanh({a}))",
            "tanh": f"math.tanh({a})", "atan": f"math.atan({a})", "sqrt": f"math.sqrt(1.0 + {a} * {a})",
            "log1p": f"math.log1p({a} * {a})", "log": f"math.log(2.0 + math.sin({a}))", "neg": f"-{a}",
            "sq": f"{a} ** 2", "cube": f"{a} ** 3", "pow15": f"(1.0 + {a} * {a}) ** 1.5",
            "+": f"{a} + {b}", "-": f"{a} - {b}", "*": f"{a} * {b}", "/": f"{a} / (1.5 + math.sin({b}))",
            "+c": f"{a} + {c}", "c*": f"{c} * {a}", "c-": f"{c} - {a}", "/c": f"{a} / {c}",
            "**x": f"(1.5 + math.sin({a})) ** {b}",
        }[op]
        names.append("t%d" % k)
        lines.append("t%d = %s" % (k, expr))
        if draw(st.booleans()):  # an in-place form now and then
            lines.append("t%d %s= %s" % (k, draw(st.sampled_from("+-*")), draw(st.sampled_from(names))))
    src = "def f(x):\n    " + "\n    ".join(lines) + "\n    return %s\n" % " + ".join(
        draw(st.lists(st.sampled_from(names[1:]), min_size=1, max_size=3)))
    ns = {"math": math}
    exec(compile(src, "<program>", "exec"), ns)  # noqa: S102
    return ns["f"], src


def _same(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    assert np.allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True), (a, b)


@settings(max_examples=30, deadline=None)
@given(programs(), st.floats(-1.2, 1.2))
def test_second_and_third_order_agree_with_the_generic_path(prog, x):
    f, src = prog
    cases = {
        "D(D)": lambda: capstan.D(lambda y: capstan.D(f, y), x),
        "D(D(D))": lambda: capstan.D(lambda y: capstan.D(lambda z: capstan.D(f, z), y), x),
        "hessian": lambda: capstan.hessian(f, x),
        "hvp rev over fwd": lambda: capstan.hvp(lambda v: f(v[0]), np.array([x]), np.array([1.0])),
        "hvp fwd over rev": lambda: capstan.hvp(lambda v: f(v[0]), np.array([x]), np.array([1.0]),
                                                mode="fwd_over_rev"),
        "gradient of D": lambda: capstan.gradient(lambda y: capstan.D(f, y), x)[0],
    }
    for name, thunk in cases.items():
        try:
            want = generic(thunk)
        except (ValueError, ZeroDivisionError, OverflowError) as exc:  # (outside the domain)
            with pytest.raises(type(exc)):
                thunk()
            continue
        _same(thunk(), want)


def horner(x):
    acc = 0.0
    for c in [0.5, -1.0, 2.0, 0.25, -3.0, 1.5, 0.75]:
        acc = acc * x + c
    return acc


def test_D_of_D_of_horner_takes_the_nested_path_and_is_exact(monkeypatch):
    calls = []
    apply = ForwardCtx.apply
    monkeypatch.setattr(ForwardCtx, "apply", lambda self, f, args, kwargs: calls.append(f) or apply(
        self, f, args, kwargs))
    x = 0.7
    d2 = capstan.D(lambda y: capstan.D(horner, y), x)
    cs = [0.5, -1.0, 2.0, 0.25, -3.0, 1.5, 0.75][::-1]  # ascending powers
    assert d2 == pytest.approx(sum(k * (k - 1) * c * x ** (k - 2) for k, c in enumerate(cs) if k >= 2), rel=1e-13)
    assert calls == []


def test_perturbations_stay_apart():
    # d/dx [x * d/dy (x + y)] = d/dx [x] = 1: the inner derivative must not see x's tangent
    assert capstan.D(lambda x: x * capstan.D(lambda y: x + y, 1.0), 1.0) == 1.0
    # d/dx [d/dy (x * y)] = d/dx [x] = 1
    assert capstan.D(lambda x: capstan.D(lambda y: x * y, 2.0), 3.0) == 1.0
    # d/dx [x * d/dy (x * y ** 2)] at y = 1: d/dx [2 x ** 2] = 4 x
    assert capstan.D(lambda x: x * capstan.D(lambda y: x * y ** 2, 1.0), 1.5) == pytest.approx(6.0, rel=1e-15)


def test_a_finished_outer_value_is_a_constant():
    kept = []

    def inner(x):
        kept.append(x)
        return x * x

    capstan.D(inner, 2.0)  # kept[0] is a value of a finished differentiation
    assert capstan.D(lambda y: capstan.D(lambda z: z * kept[0] * z, y), 3.0) == pytest.approx(4.0)


def test_nested_fast_paths_have_their_source_registered():
    import linecache
    source = "".join(linecache.getlines("<capstan nested fast path for mul>"))
    assert "def nested(self, x, y)" in source and "K0(o, a, b)" in source


@pytest.mark.parametrize("f, x", [(operator.truediv, 0.0), (math.sqrt, -1.0), (math.log1p, -2.0)])
def test_errors_are_pythons_own(f, x):
    run = (lambda y: capstan.D(lambda z: f(1.0, z), y)) if f is operator.truediv else (
        lambda y: capstan.D(f, y))
    with pytest.raises((ZeroDivisionError, ValueError)):
        capstan.D(run, x)


# -- the C kernels' nested path (native/capstan_native.c) against the Python one ----------------
from overdub import Tagged, _native  # noqa: E402
from capstan.forward import _seeded  # noqa: E402
from capstan.pool import differentiating  # noqa: E402

_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.neg,
        operator.iadd, operator.isub, operator.imul, operator.itruediv]
_numbers = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([0.0, -0.0, 1.0, 2, -3, 0, 10 ** 20]),
                     st.floats(allow_nan=True, allow_infinity=True))


def _flat(v, outer, inner):
    """What a nested result carries, as plain numbers: (value, its outer tangent, inner
    tangent, the inner tangent's outer tangent); repr keeps -0.0 and nan apart."""
    def split(u, ctx):
        return (u._value, u._meta) if type(u) is Tagged and u._ctx is ctx else (u, None)
    value, t = split(v, inner)
    (vv, vt), (tv, tt) = split(value, outer), split(t, outer)
    return repr((type(v).__name__, vv, vt, tv, tt))


@pytest.mark.skipif(_native.PURE_PYTHON, reason="the C layer is not in use (OVERDUB_PURE_PYTHON=1)")
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_OPS), st.lists(_numbers, min_size=8, max_size=8),
       st.lists(st.sampled_from(["inner(outer, outer)", "inner(outer, plain)", "inner(plain, outer)",
                                 "outer", "plain", "inner(plain, plain)"]), min_size=2, max_size=2))
def test_the_native_nested_path_is_the_python_one_bit_for_bit(op, numbers, shapes):
    with differentiating(ForwardCtx) as outer, differentiating(ForwardCtx) as inner:
        def make(shape, n):
            o1 = Tagged(float(n[0]), float(n[1]), outer)
            o2 = Tagged(float(n[2]), float(n[3]), outer)
            return {"inner(outer, outer)": lambda: Tagged(o1, o2, inner),
                    "inner(outer, plain)": lambda: Tagged(o1, n[2], inner),
                    "inner(plain, outer)": lambda: Tagged(float(n[0]), o2, inner),
                    "outer": lambda: o1, "plain": lambda: n[0],
                    "inner(plain, plain)": lambda: Tagged(float(n[0]), float(n[1]), inner)}[shape]()
        args = [make(shapes[0], numbers[:4]), make(shapes[1], numbers[4:])]
        if op is operator.neg:
            args = args[:1]
        kernel = fastpaths.FAST[ForwardCtx][op]
        python = kernel.fallback
        results = []
        for fn in (kernel, python):
            try:
                results.append(_flat(fn(inner, *args), outer, inner))
            except Exception as exc:  # noqa: BLE001 (the same error either way)
                results.append(type(exc).__name__)
        assert results[0] == results[1]
