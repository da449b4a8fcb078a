"""capstan's state in each thread, in one object: ``thread_state()``.

``pools``: the idle contexts of each context class (``capstan.pool``); ``contexts``: the
contexts of the active differentiations, outermost first (``capstan.nesting``); ``level``:
how many differentiations are active.  Every entry point reads and writes these, so one
lookup finds them all: the C layer keeps the object in CPython's per-thread dictionary
(``_capstan_native.thread_state``), and this module's ``threading.local`` is its reference,
used on the pure-Python path.
"""
import threading
from typing import Any

from overdub._native import capstan_native

__all__ = ["thread_state"]


class _ThreadState(threading.local):
    """The pure-Python reference: a ``threading.local`` with the three fields."""

    def __init__(self) -> None:
        self.pools: dict[type, list[Any]] = {}
        self.contexts: list[Any] = []
        self.level = 0


_local = _ThreadState()


def _thread_state() -> _ThreadState:
    """This thread's state."""
    return _local


thread_state: Any = _thread_state if capstan_native is None else capstan_native.thread_state
