"""Twelfth hunt: kept and compiled tapes (``capstan.record_tape``) that replayed a wrong
value or gradient at new points, each checked against plain Python and ``capstan.gradient``
there (or a clear error where the recorded path may not hold)."""
import math

import numpy as np
import pytest

import capstan
from capstan import TapeGuardError, record_tape


def _text_length(x):
    return x * len("%.2f" % x)  # "0.30": 4 characters, "-1.20": 5


def _fstring_length(x):
    return x * len(f"{x:.2f}")


def _int_array(x):
    return np.sum(x.astype(int) * x)


def _array_text(x):
    return x[0] * len("%s" % (x,))


@pytest.mark.parametrize("f", [_text_length, _fstring_length])
def test_text_made_from_a_value_is_a_decision(f):
    """Text formatted from a differentiated value was a constant of the tape: its length
    (4 at 0.3) gave f(-1.2) = -4.8 and slope 4 where f's are -6.0 and 5.  The text is
    guarded: the tape replays where it comes out the same."""
    tape = record_tape(f, 0.3)
    assert tape(0.3) == f(0.3) and tape.gradient(0.3) == capstan.gradient(f, 0.3)
    for call in (tape, tape.gradient, tape.compile()):
        with pytest.raises(TapeGuardError):
            call(-1.2)
    assert record_tape(f, 0.3, on_mismatch="rerecord").gradient(-1.2) == capstan.gradient(f, -1.2) == (5.0,)


def test_integer_and_text_results_of_array_steps_are_decisions():
    """``x.astype(int)`` and ``"%s" % (x,)`` were taken as constants: the replay at other
    points multiplied by the recorded integers (value -6.2 where f's is 6.2), or by the
    recorded text's length."""
    x0 = np.array([0.3, -1.2, 2.5, 0.7])
    tape = record_tape(_int_array, x0)
    near = x0 + 0.01
    assert tape(near) == pytest.approx(_int_array(near))
    np.testing.assert_allclose(tape.gradient(near)[0], capstan.gradient(_int_array, near)[0])
    with pytest.raises(TapeGuardError):
        tape(np.array([-0.3, 1.2, -2.5, 0.7]))
    text = record_tape(_array_text, x0)
    assert text(x0.copy()) == _array_text(x0)
    with pytest.raises(TapeGuardError):
        text(np.array([3.0, 2.0, 1.0, 0.5]))


def test_replay_arguments_must_be_of_the_recorded_types():
    """A list where a float was recorded replayed as the float (``x * 3`` of ``[1.0]`` gave
    3.0); ``3.0`` where the int ``3`` was recorded (and ``1`` for ``True``) passed the
    equality check as a constant: no gradient for it, or the other branch of an
    ``isinstance``; an int array passed for a float one was differentiated."""
    tape = record_tape(lambda x: x * 3, 0.5)
    for bad in ([1.0], "a", 2, 1 + 2j, np.float32(0.5), np.array(0.5)):
        with pytest.raises((TypeError, ValueError)):
            tape(bad)
        with pytest.raises((TypeError, ValueError)):
            tape.gradient(bad)
    with pytest.raises(TypeError, match="recorded"):
        tape.compile()(2)
    scaled = record_tape(lambda x, n: x * n, 0.5, 3)
    with pytest.raises(ValueError, match="differs"):
        scaled.gradient(0.7, 3.0)
    assert scaled.gradient(0.7, 3) == capstan.gradient(lambda x, n: x * n, 0.7, 3)

    def by_type(x, flag):
        return x * 2.0 if isinstance(flag, bool) else x

    with pytest.raises(ValueError, match="differs"):
        record_tape(by_type, 0.5, True)(0.7, 1)
    arrays = record_tape(lambda a: np.sum(a * a), np.array([1.0, 2.0]))
    for bad in (np.array([1, 2]), np.array([1.0 + 1j, 2.0]), np.array([1.0, 2.0], dtype=np.float32)):
        with pytest.raises(TypeError, match="dtype"):
            arrays.gradient(bad)


def test_constant_arrays_compare_as_values():
    """An array constant equal to the recorded one raised NumPy's "truth value of an array
    is ambiguous"."""
    f = lambda x, a: x * np.sum(a)  # noqa: E731
    tape = record_tape(f, 0.5, np.array([1, 2]))
    assert tape(0.7, np.array([1, 2])) == f(0.7, np.array([1, 2]))
    with pytest.raises(ValueError, match="differs"):
        tape(0.7, np.array([1, 3]))
    g = lambda x, c: x * 2.0 if c is None else x  # noqa: E731
    assert record_tape(g, 0.5, None)(0.7, None) == 1.4


def _write_then_read(a, b):
    a[0] = a[0] * 2.0
    return np.sum(b * b)


def test_arrays_sharing_memory_differently_are_refused():
    """f writes into one array and reads another: replayed with one array passed twice it
    read the old contents (61.0 where f gives 136.0); recorded with one array twice, it
    replayed the write into the other (164.0 where f gives 113.0)."""
    tape = record_tape(_write_then_read, np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    x = np.array([5.0, 6.0])
    with pytest.raises(ValueError, match="share memory"):
        tape(x, x)
    base = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="share memory"):
        tape(base[:2], base[1:])
    assert tape(np.array([5.0, 6.0]), np.array([7.0, 8.0])) == 113.0
    same = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="share memory"):
        record_tape(_write_then_read, same, same)(np.array([5.0, 6.0]), np.array([7.0, 8.0]))


def test_replayed_gradient_checks_the_output_as_gradient_does():
    """The tape's gradient of a complex output (``x ** 0.5`` at -1.5) was a complex number,
    and the generated code's gradient of a real output through a complex step
    (``(-2.0) ** x`` at 2.0) kept the imaginary part (2.77+12.57j where gradient gives 2.77)."""
    root = record_tape(lambda x: x ** 0.5, 0.5)
    with pytest.raises(ValueError, match="complex"):
        root.gradient(-1.5)
    with pytest.raises(ValueError, match="complex"):
        root.compile()(-1.5)
    power = lambda x: (-2.0) ** x  # noqa: E731
    tape = record_tape(power, 2.0)
    assert tape.gradient(3.0) == capstan.gradient(power, 3.0)
    assert tape.compile()(3.0) == (-8.0, capstan.gradient(power, 3.0))


def test_infinite_partials_replay_as_gradient_does():
    """Where a partial derivative is infinite the generated code divides by zero: the
    tape's gradient raised ZeroDivisionError where capstan.gradient answers (sqrt at 0)
    or refuses the NaN (sqrt(x - x) + x)."""
    tape = record_tape(math.sqrt, 1.0)
    assert tape.gradient(0.0) == capstan.gradient(math.sqrt, 0.0)
    f = lambda x: math.sqrt(x - x) + x  # noqa: E731
    with pytest.raises(capstan.NoRuleError, match="NaN"):
        record_tape(f, 1.0).gradient(2.0)


def test_numba_gives_pythons_answer_outside_the_math_domain():
    """numba's math returns NaN or infinity where Python's raises: the compiled tape gave
    (nan, (nan,)) for sqrt(-1.5) and log's (nan, (-0.67,)) -- and a NaN decided a guard
    as False -- where f raises ValueError."""
    pytest.importorskip("numba")

    def f(x):
        y = math.log(x)
        return x if y > 5.0 else 2.0 * x

    fast = record_tape(f, 0.5).compile(numba=True)
    assert fast(0.7) == (1.4, (2.0,))
    for bad in (-1.0, 0.0):
        with pytest.raises(ValueError, match="math domain"):
            fast(bad)
    with pytest.raises(ValueError):
        record_tape(math.sqrt, 1.0).compile(numba=True)(-1.5)
    with pytest.raises(OverflowError):
        record_tape(math.exp, 1.0).compile(numba=True)(1000.0)
    with pytest.raises(ValueError):
        record_tape(math.sin, 1.0).compile(numba=True)(math.inf)


def test_a_printed_record_adds_no_guard():
    """A record holding a value of the run asked for its text once the run was over (the
    repr of a record) appended a guard to the kept tape, which then refused every other
    point; a Python body stepped into (np.trapezoid) was guarded on its differentiated result."""
    f = lambda x: np.trapezoid(x * x) if hasattr(np, "trapezoid") else np.trapz(x * x)  # noqa: E731
    tape = record_tape(f, np.array([0.3, -1.2, 2.5, 0.7]))
    size = len(tape.records)
    repr(tape.records)
    assert len(tape.records) == size
    new = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(tape.gradient(new)[0], capstan.gradient(f, new)[0])
