"""Recorded tapes: replay, guards, re-recording and generated code (capstan.tape)."""
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import capstan
from capstan import TapeGuardError, record_tape


def branchy(x, y):
    r = 0.0
    for i in range(5):
        r = r * x + math.sin(y) * i
    if x > 0:
        return r
    return -r


def euler(k):
    y, t, h = 1.0, 0.0, 0.01
    for _ in range(100):
        y = y + h * (-k * y + math.sin(t))
        t = t + h
    return y


def euler_hand(k):
    y, dy, t, h = 1.0, 0.0, 0.0, 0.01
    for _ in range(100):
        dy = dy + h * (-y - k * dy)
        y = y + h * (-k * y + math.sin(t))
        t = t + h
    return dy


def cumulative(x):
    y = np.zeros(len(x))
    y[0] = x[0]
    for i in range(1, len(x)):
        y[i] = y[i - 1] * x[i]
    return y[-1] + np.sum(y)


@pytest.mark.parametrize("args", [(0.7, 0.2), (1.5, -0.4), (0.1, 3.0)])
def test_replay_matches_plain_and_gradient(args):
    tape = record_tape(branchy, 0.5, 0.3)
    assert tape(*args) == branchy(*args)
    assert tape.gradient(*args) == capstan.gradient(branchy, *args)


def test_guard_refuses_another_branch():
    tape = record_tape(branchy, 0.5, 0.3)
    with pytest.raises(TapeGuardError, match="another branch"):
        tape.gradient(-0.7, 0.2)
    with pytest.raises(TapeGuardError):
        tape(-0.7, 0.2)


def test_rerecord_on_mismatch():
    tape = record_tape(branchy, 0.5, 0.3, on_mismatch="rerecord")
    assert tape.gradient(-0.7, 0.2) == capstan.gradient(branchy, -0.7, 0.2)
    assert tape(-0.7, 0.2) == branchy(-0.7, 0.2)


def test_guard_on_int_conversion():
    def f(x):
        return x * int(x)

    tape = record_tape(f, 2.5)
    assert tape.gradient(2.7) == (2.0,)
    with pytest.raises(TapeGuardError):
        tape.gradient(3.5)


def test_guard_on_truth_of_a_value():
    """``if x:`` and ``x and y`` decide on the value without a comparison: guarded too,
    in the replay and in the generated code (once a tape replayed x = 0.0 as if true)."""
    def f(x):
        return x * x if x else 1.0

    def g(x, y):
        return x and y

    tape = record_tape(f, 0.5, on_mismatch="rerecord")
    with pytest.raises(capstan.NoRuleError, match="truth test"):
        tape(0.0)  # (recorded again at 0.0: a truth test that found x == 0, refused as x != 0 is)
    assert tape.gradient(3.0) == (6.0,)  # (recorded again: the branch of x != 0)
    strict = record_tape(f, 0.5)
    with pytest.raises(TapeGuardError):
        strict(0.0)
    with pytest.raises(TapeGuardError):
        strict.compile()(0.0)
    assert strict.compile()(2.0) == (4.0, (4.0,))
    with pytest.raises(TapeGuardError):
        record_tape(g, 0.5, 2.0)(0.0, 2.0)


def test_guard_on_a_caught_exception():
    """An exception the function catches is a decision on the value: the tape recorded
    at a value where math.sqrt raised must not replay the except branch elsewhere."""
    def f(x):
        try:
            return math.sqrt(x)
        except ValueError:
            return 0.0

    tape = record_tape(f, -1.0)
    assert tape(-2.0) == 0.0
    with pytest.raises(TapeGuardError):
        tape(4.0)
    with pytest.raises(TypeError, match="caught an exception"):
        tape.compile()
    assert record_tape(f, -1.0, on_mismatch="rerecord").gradient(4.0) == (0.25,)


def test_array_writes_replay():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    tape = record_tape(cumulative, x)
    for new in (np.array([2.0, 2.0, 2.0, 2.0]), np.array([0.5, -1.0, 3.0, 0.25])):
        np.testing.assert_allclose(tape(new), cumulative(new))
        np.testing.assert_allclose(tape.gradient(new)[0], capstan.gradient(cumulative, new)[0])


def test_shapes_and_constants_are_checked():
    tape = record_tape(cumulative, np.ones(4))
    with pytest.raises(ValueError, match="shape"):
        tape(np.ones(5))
    tape2 = record_tape(lambda x, n: x * n, 2.0, 3)
    assert tape2(5.0, 3) == 15.0
    with pytest.raises(ValueError, match="differs"):
        tape2(5.0, 4)


@pytest.mark.parametrize("k", [0.3, 0.7, 2.0])
def test_compiled_tape_matches_hand_derivative(k):
    compiled = record_tape(euler, 0.5).compile()
    value, (grad,) = compiled(k)
    assert value == pytest.approx(euler(k), rel=1e-12)
    assert grad == pytest.approx(euler_hand(k), rel=1e-9)
    assert "def compiled" in compiled.source


def test_compiled_tape_checks_guards_and_handles_math():
    compiled = record_tape(branchy, 0.5, 0.3).compile()
    value, grads = compiled(0.7, 0.2)
    assert value == pytest.approx(branchy(0.7, 0.2))
    assert grads == pytest.approx(capstan.gradient(branchy, 0.7, 0.2))
    with pytest.raises(TapeGuardError):
        compiled(-0.7, 0.2)


def test_compiled_tape_guards_infinite_partials():
    def f(x, y):
        return math.sqrt(x) * 0.0 + y * y  # d sqrt at 0 is infinite, but its cotangent is 0

    compiled = record_tape(f, 1.0, 2.0).compile()
    assert compiled(0.0, 3.0) == (9.0, (0.0, 6.0))


def test_compile_refuses_array_tapes_and_custom_steps():
    with pytest.raises(TypeError, match="tape.gradient"):
        record_tape(cumulative, np.ones(3)).compile()
    with pytest.raises(TypeError, match="checkpoint, hook"):
        record_tape(lambda x: capstan.checkpoint(math.sin, x), 1.0)


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        record_tape(3, 1.0)
    with pytest.raises(ValueError, match="on_mismatch"):
        record_tape(math.sin, 1.0, on_mismatch="ignore")
    with pytest.raises(TypeError, match="takes 1 arguments"):
        record_tape(math.sin, 1.0)(1.0, 2.0)


def test_inline_math_forms_agree_with_the_rule_table():
    from capstan import fastpaths
    from capstan.rules import PARTIALS

    for f, (value, partial) in fastpaths.MATH.items():
        for a in (0.3, 0.7, 1.9):
            r = f(a)
            env = {"math": math, "a": a, "r": r}
            assert eval(value, env) == r
            assert eval(partial, env) == pytest.approx(PARTIALS[f][0](r, a), rel=1e-14), f


def test_compiled_tape_with_numba_when_installed():
    def poly(x, y):
        r = 0.0
        for c in (1.0, -2.0, 0.5, 3.0):
            r = r * x + c * math.sin(y)
        return r if x > -5.0 else -r

    tape = record_tape(poly, 0.5, 0.3)
    try:
        import numba  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="numba"):
            tape.compile(numba=True)
        return
    fast = tape.compile(numba=True)
    assert fast.numba
    value, grads = fast(1.5, -0.2)
    assert value == pytest.approx(poly(1.5, -0.2), rel=1e-14)
    assert grads == pytest.approx(capstan.gradient(poly, 1.5, -0.2), rel=1e-12)
    with pytest.raises(TapeGuardError):
        fast(-6.0, 0.2)
    with pytest.raises(TypeError, match="numba"):
        record_tape(lambda x: math.erf(x) * x, 0.5).compile(numba=True)


@st.composite
def _programs_with_zero_cotangents(draw):
    """Straight-line programs over one input where some values are scaled by 0.0 (their
    cotangents are exactly zero, so the compiled backward pass skips their bodies) and
    others are used again later (aliased cotangents)."""
    names, lines = ["x"], []
    for k in range(draw(st.integers(2, 9))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        form = draw(st.sampled_from(["{a} + 1.0", "{a} * 0.0", "math.sin({a})", "{a} + {b}",
                                     "{a} * {b}", "math.exp(0.1 * {a})", "{a} - {b}"]))
        lines.append("t%d = %s" % (k, form.format(a=a, b=b)))
        names.append("t%d" % k)
    used = draw(st.lists(st.sampled_from(names[1:]), min_size=1, max_size=3))
    src = "def prog(x):\n    %s\n    return %s\n" % ("\n    ".join(lines), " + ".join(used))
    ns = {"math": math}
    exec(compile(src, "<prog>", "exec"), ns)  # noqa: S102
    return ns["prog"], src


def _aliased_then_zero(x):
    a = x + 1.0
    return math.sin(a) * 0.0 + a


@settings(max_examples=60, deadline=None)
@given(_programs_with_zero_cotangents(), st.floats(-1.0, 1.0))
@example((_aliased_then_zero, "a = x + 1.0; return sin(a) * 0.0 + a"), 0.5)
def test_compiled_tape_with_zero_cotangents_matches_gradient(case, x):
    # (an aliased cotangent was once given its own variable inside the ``if g:`` body of a
    # step whose cotangent was 0.0: UnboundLocalError)
    prog, src = case
    tape = capstan.record_tape(prog, x)
    assert tape.compile()(x)[1] == pytest.approx(capstan.gradient(prog, x), rel=1e-12, abs=1e-12), src
    assert tape.gradient(x) == pytest.approx(capstan.gradient(prog, x), rel=1e-12, abs=1e-12), src
