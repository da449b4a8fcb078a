"""Derivative arithmetic runs with NumPy's floating-point errors ignored: ``quiet()``.

A partial or a product of a tangent or cotangent may divide by zero, overflow or make a
NaN where the derivative is then settled on purpose: an exact zero wins over an infinite
slope (``0.0 * np.sqrt(x)`` at 0), or the loss checks refuse the result (NoRuleError).
Those steps are the machinery's, not the program's, so they must not print NumPy's
``RuntimeWarning``, nor raise ``FloatingPointError`` under the user's
``np.seterr(all="raise")`` or a RuntimeWarning under ``-W error`` (a test suite's
``filterwarnings = error``), where the plain program runs silently.  The program's own
arithmetic -- every value the differentiated function computes -- keeps the user's
settings: only the tangent and cotangent computations run inside ``quiet()``.

NumPy keeps its error state in a context variable (per thread and per task, never
global); ``quiet()`` sets it for the block and restores it after, as ``np.errstate``
does, in a fraction of its time (a NumPy too old to have that variable gets
``np.errstate`` itself).
"""
import numpy as np

__all__ = ["quiet"]

try:
    from numpy._core.umath import _extobj_contextvar as _STATE  # NumPy 2
except ImportError:  # pragma: no cover - NumPy 1.x
    _STATE = None

if _STATE is not None:
    with np.errstate(all="ignore"):
        _IGNORE = _STATE.get()

    class quiet:
        """``with quiet():`` NumPy's floating-point errors ignored in the block."""

        __slots__ = ("_token",)

        def __enter__(self):
            self._token = _STATE.set(_IGNORE)
            return self

        def __exit__(self, *exc):
            _STATE.reset(self._token)
            return False
else:  # pragma: no cover - NumPy 1.x
    def quiet():
        """``with quiet():`` NumPy's floating-point errors ignored in the block."""
        return np.errstate(all="ignore")
