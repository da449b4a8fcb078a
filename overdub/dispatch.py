"""The dispatcher's entry points: ``overdub``, ``recurse``, ``fallback``, ``canrecurse``.

Each finds (or makes) the context's :class:`~overdub.runtime.Runtime` and runs
the call through it.  Called from code that another context routes, they run
the context *nested* in that run (``_nested_*``).  ``default_canrecurse`` and
``default_fallback`` are what ``Context.canrecurse``/``Context.fallback`` do when
a context does not override them; the context module reaches them through the
``DEFAULTS`` table this module fills in, and tagged values reach ``overdub``
through the hook it registers in ``tagging``, so neither imports this module.
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
from functools import partial, update_wrapper
from typing import TYPE_CHECKING, Any, Callable
from types import FunctionType, MethodType

from . import _native, codegen, lookaside, semantics
from .context import DEFAULTS as CONTEXT_DEFAULTS, Context, spec_of
from .ops import NATIVE
from .plaincall import any_tagged, hashable, is_builtin, is_structural, plain_call
from .runtime import (CACHE_LIMIT, NESTING, Runtime, function_changed, function_renamed, leave, leave_trim,
                      note_tagging, runtime_of)
from .runtime import unroutable  # noqa: F401 (documented as overdub.dispatch.unroutable)
from .tagging import ACCESSORS, Tagged, register_dispatcher
from .tracebacks import KEEP_FRAMES, drop_own_frames  # (OVERDUB_KEEP_FRAMES, read from the environment there)

__all__ = ["overdub", "recurse", "fallback", "canrecurse"]


def _check_callable(f, fname):
    if not callable(f):
        raise TypeError("%s(ctx, f, ...): f must be callable, got %s" % (fname, type(f).__name__))


def _strip_internal_frames(exc):
    """Drop overdub's own frames from a traceback so it reads like plain Python's."""
    tb = exc.__traceback__
    while tb is not None and lookaside.is_internal(tb.tb_frame.f_code) and tb.tb_next is not None:
        tb = tb.tb_next
    head = tb
    while tb is not None:
        nxt = tb.tb_next
        while nxt is not None and lookaside.is_internal(nxt.tb_frame.f_code):
            nxt = nxt.tb_next
        tb.tb_next = nxt
        tb = nxt
    return head


def _check_overdub(ctx: Any, f: Any) -> None:
    if isinstance(ctx, type) and issubclass(ctx, Context):
        raise TypeError("overdub(ctx, f, ...): ctx is the context class %s itself; pass an instance: "
                        "overdub(%s(), f, ...)" % (ctx.__name__, ctx.__name__))
    if not isinstance(ctx, Context):
        raise TypeError("overdub(ctx, f, ...): ctx must be an overdub.Context instance, got %r"
                        % type(ctx).__name__)
    _check_callable(f, "overdub")


def overdub(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``f(*args, **kwargs)`` inside ``ctx``: prehook, then the matching
    primitive or ``recurse``, then posthook; return the result."""
    rt = run_of(ctx, f, *args, **kwargs)
    if rt is None:
        return f(*args, **kwargs)  # nothing to observe or change: plain Python
    rt.depth += 1
    try:
        if rt.plain_calls:
            g = rt.enter(f)
            if g is not None:
                return g(*args, **kwargs)
        return rt.call(f, *args, **kwargs)
    except BaseException as exc:
        if KEEP_FRAMES:
            raise
        raise exc.with_traceback(_strip_internal_frames(exc))
    finally:
        if rt.leave():  # (``runtime.leave``, inline: the run's end)
            leave_trim(rt)


def run_of(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """The runtime that ``overdub(ctx, f, *args, **kwargs)`` runs through (made on the
    context's first run), or None where ``f`` runs plainly: a context type that observes
    nothing, with no pass and no tagged value in sight.  Bad arguments raise here."""
    try:  # (the common case: a runtime made by an earlier run, still valid, proves ctx a context)
        rt = ctx._runtime
        ready = rt.ctx is ctx and type(ctx) is rt.ctx_type and not rt.spec.stale
    except AttributeError:
        ready = False
    if not ready or not callable(f):
        _check_overdub(ctx, f)
        spec = spec_of(type(ctx))
    else:
        spec = rt.spec
    if (spec.empty and ctx.pass_ is None and not ctx.__dict__.get("_has_tags")
            and not any_tagged(args, kwargs)):
        return None
    return rt if ready else runtime_of(ctx, "overdub")


def recurse(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``f``'s body with everything inside it routed through ``ctx`` (no hooks
    for ``f`` itself); ``fallback`` where ``f`` has no Python body."""
    rt = runtime_of(ctx, "recurse")
    if not rt.depth and not callable(f):  # (called by the user; in a run, as plain Python fails)
        _check_callable(f, "recurse")
    rt.depth += 1
    try:
        if rt.spec.canrecurse and not rt.canrecurse(f, *args, **kwargs):
            return rt.fallback(f, *args, **kwargs)
        return rt.target(f)(*args, **kwargs)
    except BaseException as exc:
        drop_own_frames(exc)  # (the wildcard calling recurse sees plain Python's traceback)
        raise
    finally:
        leave(rt)


def fallback(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call ``f`` plainly as ``ctx`` would (its ``fallback`` method)."""
    try:
        rt = runtime_of(ctx, "fallback")
        if not rt.depth and not callable(f):  # (called by the user; in a run, as plain Python fails)
            _check_callable(f, "fallback")
        if rt.spec.fallback:
            return rt.fallback(f, *args, **kwargs)
        return _default_fallback(rt, f, args, kwargs)
    except BaseException as exc:
        drop_own_frames(exc)
        raise


def canrecurse(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> bool:
    """Whether ``recurse(ctx, f, ...)`` would step into ``f``'s body."""
    try:
        rt = runtime_of(ctx, "canrecurse")
        if rt.spec.canrecurse:
            return bool(rt.canrecurse(f, *args, **kwargs))
        answer = bool(_default_canrecurse(rt, f, args))
        _remember_recursable(rt, f, answer)
        return answer
    except BaseException as exc:
        drop_own_frames(exc)
        raise


def _remember_recursable(rt, f, answer):
    """Keep the default canrecurse's answer for a builtin whose answer depends on it alone
    (not an operator, which depends on its operands' types): the C entry point reads it."""
    try:
        if (is_builtin(f) and f not in codegen.OP_BY_FN and f not in rt.recursable
                and len(rt.recursable) < CACHE_LIMIT):
            rt.recursable[f] = answer
    except Exception:  # unhashable (or its hash fails)
        pass


# ----------------------------------------------------------------------------- nested contexts
# ``overdub(inner, f, ...)`` called from code that an outer context routes runs ``inner``
# nested in the outer run: while it runs, ``inner`` uses a runtime whose hooks, primitives
# and plain calls go through the outer context (``Runtime.user``), as Cassette overdubs a
# nested ``overdub``.  Without it the inner context's primitives would compute plainly on
# values the outer context tagged, and an outer derivative, trace or count would be lost.
def _nested_runtime(ctx, outer, fname):
    """``ctx``'s runtime nested in the run of ``outer`` (made once per pair)."""
    rt = runtime_of(ctx, fname)
    if rt.outer is outer:
        return rt
    held = ctx.__dict__.get("_overdub_nested")
    if held is not None and held.ctx is ctx and held.outer is outer and held.spec is rt.spec:
        return held
    held = ctx.__dict__["_overdub_nested"] = Runtime(ctx, rt.spec, outer)
    return held


class _Nested:
    """``ctx`` uses its nested runtime ``rt`` while the block runs (its tagged values,
    handed back to it from plain code, find it there)."""

    __slots__ = ("ctx", "rt", "before")

    def __init__(self, ctx, rt):
        self.ctx, self.rt = ctx, rt

    def __enter__(self):
        self.before = self.ctx._runtime
        self.ctx._runtime = self.rt
        self.rt.depth += 1
        return self.rt

    def __exit__(self, *exc):
        self.ctx._runtime = self.before
        leave(self.rt)


def _nested_overdub(outer, ctx, f, /, *args, **kwargs):
    _check_overdub(ctx, f)
    if spec_of(type(ctx)).empty and ctx.pass_ is None and not ctx.__dict__.get("_has_tags"):
        return outer.call(f, *args, **kwargs)  # nothing to change: the outer context runs it
    with _Nested(ctx, _nested_runtime(ctx, outer, "overdub")) as rt:
        return rt.call(f, *args, **kwargs)


def _nested_recurse(outer, ctx, f, /, *args, **kwargs):
    with _Nested(ctx, _nested_runtime(ctx, outer, "recurse")) as rt:
        if rt.spec.canrecurse and not rt.canrecurse(f, *args, **kwargs):
            return rt.fallback(f, *args, **kwargs)
        return rt.target(f)(*args, **kwargs)


def _nested_fallback(outer, ctx, f, /, *args, **kwargs):
    with _Nested(ctx, _nested_runtime(ctx, outer, "fallback")) as rt:
        return rt.fallback(f, *args, **kwargs)


def _nested_canrecurse(outer, ctx, f, /, *args, **kwargs):
    with _Nested(ctx, _nested_runtime(ctx, outer, "canrecurse")) as rt:
        return rt.canrecurse(f, *args, **kwargs)


NESTING.update({overdub: _nested_overdub, recurse: _nested_recurse, fallback: _nested_fallback,
                canrecurse: _nested_canrecurse})


# ----------------------------------------------------------------------------- the defaults
# ``Context.canrecurse`` and ``Context.fallback`` when a context does not override them
def default_canrecurse(ctx: Context, f: Any, args: tuple[Any, ...]) -> bool:
    """The default ``Context.canrecurse``: ``recurse`` would run Python code for ``f``
    (its body, a stepped-into operator or class, or a lookaside) -- the same order of
    questions as ``Runtime._target``."""
    return bool(_default_canrecurse(runtime_of(ctx, "canrecurse"), f, args))


def _default_canrecurse(rt, f, args):
    tf = type(f)
    if tf is FunctionType:
        return not lookaside.is_internal(f.__code__)
    if tf is MethodType or tf is staticmethod:
        return _default_canrecurse(rt, f.__func__, args)
    operator_entry = codegen.OP_BY_FN.get(f) if hashable(f) else None
    if operator_entry is not None:  # operator.add(1, 2) runs no Python; on a user class it may
        native = NATIVE
        for a in args:
            if type(a) not in native:
                return bool(rt.steps.steps_into(operator_entry[1], operator_entry[2], args))
        return False
    if rt._builtin_step(f) is not None:
        return True
    if issubclass(tf, type):
        return rt.steps.instantiate(f) is not None
    if tf is partial:
        return _default_canrecurse(rt, f.func, args)
    return type(semantics.lookup(tf, "__call__")) is FunctionType


def default_fallback(ctx: Context, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The default ``Context.fallback``: a plain call with ``ctx``'s tags removed
    (builtins that read their caller's frame read the user's; structural builtins
    such as ``list.append`` get the tagged values themselves)."""
    return _default_fallback(runtime_of(ctx, "fallback"), f, args, kwargs)


# how the default fallback calls f (or the stand-in for a builtin that reads its caller's frame)
_PLAIN, _AS_IS, _STRUCTURAL, _ATTRIBUTE_WRITE = "plain", "as is", "structural", "attribute write"


def _fallback_kind(rt, f):
    """How the default fallback calls ``f`` (remembered per run for builtins)."""
    f_hashable = hashable(f)
    kind = rt.fallback_kinds.get(f) if f_hashable else None
    if kind is not None:
        return kind
    reader = rt.frame_reader(f)
    if reader is not None:
        kind = reader
    elif (type(f) is FunctionType and lookaside.is_internal(f.__code__)) or (f_hashable and (f in NESTING or f in ACCESSORS)):
        kind = _AS_IS  # machinery (overdub.metadata, the entry points...) takes tagged values as they are
    elif is_structural(f):
        kind = _ATTRIBUTE_WRITE if (f is setattr or f is delattr) else _STRUCTURAL
    else:
        kind = _PLAIN
    if f_hashable and is_builtin(f) and len(rt.fallback_kinds) < CACHE_LIMIT:
        rt.fallback_kinds[f] = kind
    return kind


def _default_fallback(rt, f, args, kwargs):
    args = lookaside.class_args(f, args)
    kind = _fallback_kind(rt, f)
    if kind is _PLAIN:
        return plain_call(f, rt.ctx._tagkey, args, kwargs, rt.outer_call)
    if kind is _AS_IS or kind is _STRUCTURAL:
        return f(*args, **kwargs)
    if kind is not _ATTRIBUTE_WRITE:
        f = kind  # (a builtin that reads its caller's frame, reading the user's)
    else:
        if len(args) >= 2:
            obj = args[0]
            if type(obj) is Tagged:
                # a tagged object's attributes are the object's own (the value stays tagged)
                args = (semantics.innermost(obj),) + args[1:]
            elif type(obj) is FunctionType and args[1] in semantics.FUNCTION_BODY:
                r = f(*args, **kwargs)
                function_changed()
                return r
            elif type(obj) is FunctionType and args[1] in semantics.FUNCTION_NAMES:
                r = f(*args, **kwargs)
                function_renamed(obj)
                return r
        return f(*args, **kwargs)
    return plain_call(f, rt.ctx._tagkey, args, kwargs, rt.outer_call)


def _stripped(exc):
    """``exc`` with overdub's own frames dropped from its traceback (``RuntimeBase.run``)."""
    return exc.with_traceback(_strip_internal_frames(exc))


_native.RUN_HOOKS.update(strip=None if KEEP_FRAMES else _stripped, trim=leave_trim)
if _native.entry_points is not None and not TYPE_CHECKING:
    _native.entry_points.configure_run(_native.NOT_RUN, _native.RUN_HOOKS["strip"], leave_trim)
CONTEXT_DEFAULTS.update(canrecurse=default_canrecurse, fallback=default_fallback)
register_dispatcher(overdub, note_tagging)


# ----------------------------------------------------------------------------- the C entry points
# With the C layer, ``recurse``, ``canrecurse`` and ``fallback`` are C functions that take
# their common cases themselves (no Python frame between a wildcard primitive and its
# callee) and hand every other case to the Python functions above, which stay the reference.
if _native.entry_points is not None and not TYPE_CHECKING:
    _native.entry_points.configure_entry_points(
        recurse, canrecurse, fallback, lookaside._machinery_files, lookaside._machinery_codes,
        codegen.OP_BY_FN, NATIVE, Tagged, _PLAIN, _AS_IS, _STRUCTURAL, _ATTRIBUTE_WRITE, lookaside.TYPE_NEW,
        (getattr, setattr, delattr), _fallback_kind)
    recurse, canrecurse, fallback = (update_wrapper(_native.entry_points.EntryPoint(i), reference)
                                     for i, reference in enumerate((recurse, canrecurse, fallback)))
    # overdub itself: a run entered from C, so that the program's routed frame is called by
    # the program's own (no frame of overdub's between them in its stack)
    _native.entry_points.configure_overdub(overdub, run_of)
    overdub = update_wrapper(_native.entry_points.EntryPoint(3), overdub)
    register_dispatcher(overdub, note_tagging)
    NESTING.update({recurse: _nested_recurse, fallback: _nested_fallback, canrecurse: _nested_canrecurse,
                    overdub: _nested_overdub})
