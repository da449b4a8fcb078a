"""Tracebacks without overdub's frames, as the routed program would see them plainly.

An exception raised in a routed program may pass through overdub's Python code on its
way out (an operator slot, a ``Steps`` step, the stand-in of a bound method or of a
callback-taking builtin).  Each of those frames adds an entry to the exception's
traceback, and a program that catches the exception and reads its traceback
(``traceback.extract_tb``, ``tb_next``, ``contextlib``'s own checks) would see them.

So every function of overdub's that user code (or a C function user code called) calls
directly ends in::

    except BaseException as exc:
        drop_own_frames(exc)
        raise

The bare ``raise`` re-raises without adding the current frame (CPython 3.11+), so the
exception leaves the machinery with the traceback plain Python would have given it.
This costs nothing until an exception passes.
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
import os

#: ``OVERDUB_KEEP_FRAMES=1`` in the environment (read once, here) keeps the machinery's
#: frames -- the dispatcher, the runtime, generated slots and dispatchers, shown with their
#: generated source -- in tracebacks: for debugging overdub itself, or a context's hooks
#: and primitives
KEEP_FRAMES = os.environ.get("OVERDUB_KEEP_FRAMES", "") not in ("", "0")

_OWN_DIR = os.path.realpath(os.path.dirname(os.path.abspath(__file__))) + os.sep
_own_files: dict[str, bool] = {}  # co_filename -> whether it is overdub's (generated code too)


def is_own(code) -> bool:
    """Whether ``code`` is overdub's own: one of its modules or code it generated
    (compiled under a file name in its directory, see ``codegen.generated_filename``)."""
    name = code.co_filename
    own = _own_files.get(name)
    if own is None:
        if len(_own_files) > 4096:
            _own_files.clear()
        # ("<string>", "<doctest ...>" name no file: never resolved against the working
        # directory; generated code's names are absolute)
        own = _own_files[name] = os.path.isabs(name) and os.path.realpath(name).startswith(_OWN_DIR)
    return own


def drop_own_frames(exc: BaseException) -> None:
    """Unlink overdub's frames from ``exc``'s traceback (the whole chain: frames of the
    machinery nested deeper, between user frames, go too)."""
    if KEEP_FRAMES:
        return
    tb = exc.__traceback__
    while tb is not None and is_own(tb.tb_frame.f_code):
        tb = tb.tb_next
    exc.__traceback__ = tb
    while tb is not None:
        nxt = tb.tb_next
        if nxt is not None and is_own(nxt.tb_frame.f_code):
            while nxt is not None and is_own(nxt.tb_frame.f_code):
                nxt = nxt.tb_next
            tb.tb_next = nxt
        tb = nxt
