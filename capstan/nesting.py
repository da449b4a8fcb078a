"""How many differentiations are active around the current call (per thread)."""
import threading

_state = threading.local()


def nestlevel():
    """How many differentiations (``D``, ``jvp``, ``gradient``...) are active around
    this call: 0 outside any, 2 inside a Hessian's inner gradient, and so on."""
    return getattr(_state, "level", 0)


class level:
    """``with level(): ...`` counts one more active differentiation."""

    __slots__ = ()

    def __enter__(self):
        _state.level = getattr(_state, "level", 0) + 1

    def __exit__(self, *exc):
        _state.level -= 1
