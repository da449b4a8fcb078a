"""The choice between the C layer and the pure-Python reference, made once, here.

overdub and capstan carry their hot path in two C modules built by ``pip install``
(``native/*.c``): the storage of tagged values (``_overdub_native``) and capstan's scalar
arithmetic (``_capstan_native``).  Each has a pure-Python reference that behaves the same;
``OVERDUB_PURE_PYTHON=1`` in the environment selects it (the test suite runs both ways).
Without that variable, a missing or stale build is an ``ImportError`` that says what to
do: the library never runs half in C and half in Python by accident.
"""
import os
from types import FunctionType
from typing import Any


__all__ = ["PURE_PYTHON", "TaggedBase", "RuntimeBase", "EntryPoint", "entry_points", "GuardedOperator", "Dispatcher", "LoadedAttribute", "GuardedAttribute", "GuardedSubscript",
           "GuardedContains", "GuardedSetattr", "call_site_entry", "capstan_native", "untrack_code", "code_cached", "adopt_tagged",
           "value_of", "metadata_of", "tag_of", "context_of", "tag_each"]

#: True when the pure-Python reference path runs instead of the C modules
PURE_PYTHON = os.environ.get("OVERDUB_PURE_PYTHON", "") not in ("", "0")

_ABI = 12  # native/tagged.h's OVERDUB_NATIVE_ABI


def _load(name: str) -> Any:
    try:
        module = __import__(name)
    except ImportError as exc:
        raise ImportError(
            "overdub: its C module %s is not built (%s). Install the package with a C compiler "
            "present (`pip install .`), or set OVERDUB_PURE_PYTHON=1 to run the pure-Python "
            "reference path." % (name, exc)) from exc
    if getattr(module, "ABI", None) != _ABI:
        raise ImportError("overdub: its C module %s (%s) is from another version of the package; "
                          "reinstall it (`pip install .`)" % (name, module.__file__))
    return module


class _PyTaggedBase:
    """The fields of a tagged value, in Python (the reference for the C TaggedBase)."""

    __slots__ = ("_value", "_meta", "_tagkey", "_ctx", "__weakref__")

    def __init__(self, value: Any, meta: Any, ctx: Any) -> None:
        self._value = value
        self._meta = meta
        self._tagkey = ctx._tagkey
        self._ctx = ctx


class _PyRuntimeBase:
    """The fields of a runtime that the entry points read on every call, in Python (the
    reference for the C RuntimeBase)."""

    __slots__ = ("ctx", "ctx_type", "spec", "outer", "targets", "fallback_kinds", "recursable", "op_answers",
                 "fcache", "kept", "instance_calls", "attr_info", "code_table", "code_twins", "depth",
                 "own_canrecurse", "own_fallback")

    def known_twin(self, f: Any) -> Any:
        """The routed twin this runtime made for the Python function ``f`` (its table
        ``code_twins``, kept across runs), while ``f`` holds the code, defaults and names it
        was made for and its code is not declared opaque since; else None.  What a miss of
        the call cache (``Runtime.resolve``), ``recurse`` and the entry of a run take
        without resolving ``f`` again."""
        if type(f) is not FunctionType:
            return None
        code = f.__code__
        entry = self.code_twins.get(id(code))  # (a lifetimes.CodeRef holding a TwinRef)
        if entry is None or entry() is not code:
            return None
        last = entry.value
        twin = last.value
        if (last() is f and twin.__defaults__ is f.__defaults__ and twin.__kwdefaults__ is f.__kwdefaults__
                and twin.__name__ is f.__name__ and twin.__qualname__ is f.__qualname__
                and id(code) not in _machinery_codes):
            return twin
        return None

    def leave(self) -> bool:
        """One run ends (runs nest).  At the outermost, forget what the run resolved: the
        callee cache goes back to its kept entries (builtins), the per-run tables are
        emptied.  True when the table of routed code has outgrown its limit."""
        self.depth -= 1
        if self.depth != 0:
            return False
        self.fcache.clear()
        self.fcache.update(self.kept)
        self.instance_calls.clear()
        self.targets.clear()
        self.op_answers.clear()
        self.attr_info.clear()
        return len(self.code_table) > _CODE_TABLE_LIMIT


    def run(self, f: Any, arg: Any) -> Any:
        """``overdub(self.ctx, f, arg)`` for the commonest run -- the entry of a run (none of
        this runtime in progress), nothing that sees calls (``plain_calls``), ``f`` a Python
        function that no primitive takes -- or ``NOT_RUN`` where that does not hold (the
        caller calls ``overdub``).  The fixed cost of a differentiation (``capstan.D``)."""
        ctx, spec = self.ctx, self.spec
        if (self.depth != 0 or type(f) is not FunctionType or type(ctx) is not self.ctx_type
                or self.plain_calls is not True or ctx.__dict__.get("_runtime") is not self  # type: ignore[attr-defined]
                or spec.stale is not False or spec.empty is not False or f in spec.totals or f in spec.primitives):
            return NOT_RUN
        g = self.enter(f)  # type: ignore[attr-defined]
        if g is None:
            return NOT_RUN
        self.depth = 1
        try:
            return g(arg)
        except BaseException as exc:
            strip = RUN_HOOKS["strip"]
            if strip is None:
                raise
            raise strip(exc)
        finally:
            if self.leave():
                RUN_HOOKS["trim"](self)


_CODE_TABLE_LIMIT = 4096  # overdub.runtime.CACHE_LIMIT
#: id(code) -> weak reference to a code object declared opaque (``overdub.lookaside``'s
#: table, defined here so that this module imports nothing of overdub's)
MACHINERY_CODES: dict[int, Any] = {}
_machinery_codes = MACHINERY_CODES
#: what ``RuntimeBase.run`` returns where it does not apply
NOT_RUN = type("NotRun", (), {"__repr__": lambda self: "NOT_RUN", "__slots__": ()})()
#: ``RuntimeBase.run``'s hooks (``overdub.dispatch`` sets them: strip, trim)
RUN_HOOKS: dict[str, Any] = {"strip": None, "trim": None}


def _py_call_site_entry(obj: Any) -> Any:
    """The C layer's ``call_site_entry`` (pure Python: the slot itself)."""
    return obj


def _py_untrack_code(code: Any, before: int = 0) -> None:
    """The C layer's ``untrack_code`` (pure Python cannot untrack: a no-op)."""


def _py_code_cached(code: Any) -> int:
    """The C layer's ``code_cached`` (pure Python: nothing to untrack, so 0)."""
    return 0


def _py_adopt_tagged(cls: type) -> None:
    """The C layer's ``adopt_tagged`` (pure Python: CPython's allocator is the reference)."""


class _PyLoadedAttribute:
    """An attribute a method-call site looked up before its arguments ran (``methload``),
    handed to ``meth`` in place of the object: see codegen.CALL_SRC."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


TaggedBase: type = _PyTaggedBase
RuntimeBase: type = _PyRuntimeBase
LoadedAttribute: Any
GuardedOperator: Any
Dispatcher: Any
GuardedAttribute: Any
GuardedSubscript: Any
GuardedContains: Any
GuardedSetattr: Any
capstan_native: Any
#: the C module's ``configure_entry_points``, or None (pure Python: overdub.dispatch's
#: own ``recurse``, ``canrecurse`` and ``fallback`` are the entry points)
entry_points: Any
#: the type of the C entry points (None: pure Python)
EntryPoint: Any
if PURE_PYTHON:
    TaggedBase = _PyTaggedBase
    RuntimeBase = _PyRuntimeBase
    entry_points = None
    EntryPoint = None
    LoadedAttribute = _PyLoadedAttribute
    #: (pure Python: rewritten code guards its operators inline instead; see rewrite.py)
    GuardedOperator = None
    #: (pure Python: codegen.CALL_SRC generates the dispatchers)
    Dispatcher = None
    #: (pure Python: the generated getattr slot does all of it)
    GuardedAttribute = None
    GuardedSubscript = None
    GuardedContains = None
    GuardedSetattr = None
    #: (pure Python: the slots rewritten code calls are Python functions, called as they are)
    call_site_entry = _py_call_site_entry
    capstan_native = None
    untrack_code = _py_untrack_code
    code_cached = _py_code_cached
    adopt_tagged = _py_adopt_tagged
    # (the slots' own getters: C, and a TypeError for anything but a tagged value)
    value_of, metadata_of = _PyTaggedBase._value.__get__, _PyTaggedBase._meta.__get__  # type: ignore[attr-defined]
    tag_of, context_of = _PyTaggedBase._tagkey.__get__, _PyTaggedBase._ctx.__get__  # type: ignore[attr-defined]
    #: (pure Python: overdub.tagging's list comprehension)
    tag_each = None
else:
    _overdub_native = _load("_overdub_native")
    TaggedBase = _overdub_native.TaggedBase
    RuntimeBase = _overdub_native.RuntimeBase
    entry_points = _overdub_native
    EntryPoint = _overdub_native.EntryPoint
    #: one binary or comparison operator of rewritten code: CPython's own operator for
    #: operands of guarded types, the context's slot otherwise (see rewrite._guarded)
    GuardedOperator = _overdub_native.GuardedOperator
    #: a call site's dispatcher, ``call(f, *args)`` or ``meth(obj, name, *args)``, or a
    #: method-call site's look-up before its arguments, ``methload(obj, name)``
    Dispatcher = _overdub_native.Dispatcher
    LoadedAttribute = _overdub_native.LoadedAttribute
    #: attribute loads on objects nothing in the context sees or takes, done in C
    GuardedAttribute = _overdub_native.GuardedAttribute
    #: subscripts of builtin containers nothing in the context sees or takes, done in C
    GuardedSubscript = _overdub_native.GuardedSubscript
    #: `x in c` and `x not in c` on builtin containers, done in C (between inline hooks)
    GuardedContains = _overdub_native.GuardedContains
    #: `o.name = v` on objects whose attribute stores run no Python, done in C (between hooks)
    GuardedSetattr = _overdub_native.GuardedSetattr
    #: call_site_entry(obj): what rewritten code calls for one of the C slot objects above, a
    #: builtin function bound to it (CPython calls a builtin function's C pointer directly,
    #: any other callable object through its generic call path); obj itself for the rest
    call_site_entry = _overdub_native.call_site_entry
    #: capstan's scalar kernels (its fastpaths module installs them)
    capstan_native = _load("_capstan_native")
    #: untrack_code(code, names_only=False): the tuples a code object made by overdub holds
    #: (constants, names) leave the collector's lists, as CPython's own code objects'
    #: tuples are untracked at the first collection: a routed ``gc.get_objects()`` shows
    #: none of them.  With a second argument, ``code_cached(code)`` before the rewriter read
    #: a program's code: just the cached tuples of names that reading made (3.12+)
    untrack_code = _overdub_native.untrack_code
    #: code_cached(code): which cached tuples of names (co_varnames 1, co_cellvars 2,
    #: co_freevars 4) a code object holds (3.12+; 0 before)
    code_cached = _overdub_native.code_cached
    #: adopt_tagged(cls): overdub.tagging.Tagged, once defined, recycles the memory of its
    #: instances through a free list (one is made and dropped per differentiated operation)
    adopt_tagged = _overdub_native.adopt_tagged
    #: a tagged value's fields (overdub.tagging's public accessors), one C call each
    value_of, metadata_of = _overdub_native.value_of, _overdub_native.metadata_of
    tag_of, context_of = _overdub_native.tag_of, _overdub_native.context_of
    #: tag_each(values, metas, ctx): a list of tagged values made in one C loop
    tag_each = _overdub_native.tag_each
