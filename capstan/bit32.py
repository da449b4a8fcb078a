"""``bit32pass``: a pass that makes a function's float and int literals 32-bit NumPy
scalars (``np.float32`` / ``np.int32``), so code written with Python literals keeps
float32 arrays float32 -- Cassette's ``@pass`` example, for NumPy.

    ctx = Ctx(pass_=bit32pass)
    overdub.overdub(ctx, kernel, x32)     # 0.5, 2.0, 1 in kernel (and what it calls) are 32-bit

Left alone: ints outside the int32 range, floats that overflow float32 or would
underflow to zero, ``bool`` (``True`` is an int), complex numbers and everything that
is not a number.  Constant tuples (``for k in (1.0, 2.0)``) are converted element-wise.
Like every pass it rewrites every function body run inside the context (library code
too); wrap it to restrict it (see docs/tools.md).
"""
import math
from typing import Any

import numpy as np
from bytecode import Bytecode

import overdub

__all__ = ["bit32pass", "float32pass", "to32"]

_F32_MAX = float(np.finfo(np.float32).max)
_F32_MIN = float(np.finfo(np.float32).smallest_subnormal) / 2  # below this: rounds to 0
_I32 = np.iinfo(np.int32)


def _fits(c: Any) -> bool:
    """Whether ``c`` is a literal that becomes 32-bit (exact types: no bool, no subclasses)."""
    if type(c) is float:
        return not math.isfinite(c) or c == 0.0 or _F32_MIN < abs(c) <= _F32_MAX
    if type(c) is int:
        return int(_I32.min) <= c <= int(_I32.max)
    return type(c) is tuple and any(_fits(x) for x in c)


def to32(c: Any) -> Any:
    """The 32-bit version of a literal (tuples element-wise); others unchanged."""
    if type(c) is float and _fits(c):
        return np.float32(c)
    if type(c) is int and _fits(c):
        return np.int32(c)
    if type(c) is tuple:
        return tuple(to32(x) for x in c)
    return c


def bit32pass(ctx_type: type, code: Bytecode) -> Bytecode:
    """The pass: ``(ctx_type, bytecode.Bytecode) -> bytecode.Bytecode``.

    ``overdub.replace_match`` only looks at values (constants and names), never at
    operand counts such as ``CALL 2``, so one call converts every literal that fits."""
    _check_code("bit32pass", code)
    return overdub.replace_match(to32, _fits, code)


def _check_code(name: str, code: Any) -> None:
    """A TypeError naming the pass called with something other than a function body."""
    if not isinstance(code, Bytecode):
        raise TypeError("capstan.%s(ctx_type, code): code must be a bytecode.Bytecode, got %s; "
                        "a pass is given to a context, which calls it: Ctx(pass_=capstan.%s)"
                        % (name, type(code).__name__, name))


def float32pass(ctx_type: type, code: Bytecode) -> Bytecode:
    """Like ``bit32pass`` for float literals only.  NumPy promotes ``int32`` with
    ``float32`` to ``float64`` (``x32 ** np.int32(3)`` is float64, ``x32 ** 3`` is
    float32), so code that mixes int literals into float32 arrays wants this one."""
    _check_code("bit32.float32pass", code)
    return overdub.replace_match(np.float32, lambda c: type(c) is float and _fits(c), code)
