"""Routed copies of code objects, and the code a program is shown for them.

A routed function runs a rewritten copy of its code (``runtime.route_code``), so the
generator, coroutine or async generator it makes holds the copy, where plain Python shows
the function's own code (``gen.gi_code is f.__code__``).  Routed code reads those
attributes through overdub's attribute step (``semantics.Steps.getattr``), which answers
with :func:`shown_code`.  A frame's ``f_code`` stays the copy: it goes with the frame's
``f_lasti``, an offset into the copy's bytecode (``traceback`` reads the two together).
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
from types import AsyncGeneratorType, CodeType, CoroutineType, GeneratorType
from weakref import ref as _WeakRef  # (bound once: a program may patch weakref.ref)

from .lifetimes import CodeCache, machinery_type


@machinery_type
class OriginRef(_WeakRef):  # type: ignore[type-arg]
    """A weak reference from a routed copy to the code it was made from."""

    __slots__ = ()


#: routed code -> a weak reference to the code it was made from (keyed by identity, weakly);
#: its keys are the code objects produced by the rewriter (their frames are the user's frames)
_ORIGINS = CodeCache()
#: the attribute of each kind of object that holds the code of the function that made it
CODE_ATTRIBUTES = {GeneratorType: "gi_code", CoroutineType: "cr_code", AsyncGeneratorType: "ag_code"}


def note_routed(routed, code) -> None:
    """Record that ``routed`` is the rewritten copy of ``code``."""
    _ORIGINS[routed] = OriginRef(code)


def is_routed(code) -> bool:
    """Whether ``code`` is a routed copy made by the rewriter."""
    return _ORIGINS.get(code) is not None


def shown_code(code):
    """``code``, or the code a routed copy was made from (while that lives)."""
    if type(code) is CodeType:
        origin = _ORIGINS.get(code)
        if origin is not None:
            origin = origin()
            if origin is not None:
                return origin
    return code
