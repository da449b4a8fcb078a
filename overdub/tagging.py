"""Tagged values: a value plus per-context metadata that behaves like the value.

Inside its context a tagged value is handled by the dispatcher: operators and
calls without a primitive see the *untagged* value (``fallback`` strips the
context's own tags), while containers, attributes and fields store the tagged
object itself, so it comes back out with its metadata.

Outside the dispatcher -- in code the context does not route, or in C code that
calls the value's special methods -- every operation is handed back to the
owning context as ``overdub(owner, operator.add, a, b)`` and so on.  That is
also what makes nesting safe: a value tagged by an outer context that reaches
an inner context's primitive is dispatched to the outer context again.

``isinstance(t, float)`` holds for a tagged float even in plain code (the
value's class is reported as ``__class__``); ``type(t)`` answers ``float``
inside the context.
"""
import operator
from typing import TYPE_CHECKING, Any, Callable

from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
from ._native import TaggedBase, adopt_tagged, context_of, metadata_of, tag_of, value_of
from ._native import tag_each as _native_tag_each

if TYPE_CHECKING:
    from .context import Context

__all__ = ["Tagged", "tag", "retag", "untag", "metadata", "hasmetadata", "istagged",
           "value_of", "metadata_of", "tag_of", "context_of"]

# -- accessors for packages built on overdub ----------------------------------------------------
# ``untag(x, ctx)`` and friends answer for one context and check it.  A package that runs
# contexts of its own (capstan) reads a tagged value's parts whatever context made it:
#   value_of(t)     the value t wraps (itself possibly tagged by another context)
#   metadata_of(t)  its metadata
#   tag_of(t)       the tag identity it was made under: ``tag_of(t) is ctx._tagkey`` holds
#                   while ``ctx`` is the run that made it (a finished run's values fail it)
#   context_of(t)   the context that made it
# Each is one C call (the pure-Python reference checks alike) and refuses anything but a
# tagged value with a TypeError.  Called from code a context routes (an entry point of
# capstan's nested in another differentiation), they are machinery: they get the tagged
# value itself, never its value with the context's tag stripped.
ACCESSORS = frozenset({value_of, metadata_of, tag_of, context_of})


# -- what the rest of overdub registers here ----------------------------------------------------
# This module imports nothing of overdub's machinery, so that everything else may depend on
# it.  The dispatcher, when it is imported, registers how a tagged value hands an operation
# to its owning context and what a context's first tag turns on; the context module
# registers the context class that ``tag`` and friends check their ``ctx`` against.
def _no_dispatcher(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("overdub's dispatcher is not loaded: import overdub")


#: ``overdub(ctx, f, *args, **kwargs)``, set by the dispatcher: how a tagged value hands
#: an operation that code the context does not route performs on it to its owning context
owner_call: Callable[..., Any] = _no_dispatcher
#: called when a context makes its first tag (set by the dispatcher)
_first_tag: Callable[[], None] = lambda: None
#: the classes ``ctx`` must be an instance of (set by the context module)
_context_types: tuple[type, ...] = ()


def register_dispatcher(overdub: Callable[..., Any], first_tag: Callable[[], None]) -> None:
    """Hand this module the dispatcher's ``overdub`` and its first-tag callback."""
    global owner_call, _first_tag
    owner_call, _first_tag = overdub, first_tag


def register_context_type(cls: type) -> None:
    """Declare ``cls`` the base class of every context (``overdub.Context``)."""
    global _context_types
    _context_types = (cls,)


def _owner_dispatch(op: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: "Tagged", *args: Any) -> Any:
        return owner_call(self._ctx, op, self, *args)

    method.__name__ = "__%s__" % op.__name__.strip("_")
    return method


def _owner_reflected(op: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: "Tagged", other: Any) -> Any:
        return owner_call(self._ctx, op, other, self)

    return method


#: what each protocol does with a plain value (the default of ``Context.escape``)
PLAIN_PROTOCOLS: dict[str, Callable[..., Any]] = {
    "__float__": float, "__complex__": complex, "__int__": int, "__index__": operator.index,
    "__bool__": bool, "__hash__": hash, "__len__": len, "__str__": str, "__repr__": repr,
    "__format__": format, "__getattr__": getattr,
    "__reduce__": lambda value: value.__reduce__(),
    "__reduce_ex__": lambda value, protocol: value.__reduce_ex__(protocol),
}


def _escape(name: str) -> Callable[..., Any]:
    plain = PLAIN_PROTOCOLS[name]

    def method(self: "Tagged", *args: Any) -> Any:
        ctx = self._ctx
        if ctx._tagkey is not self._tagkey:  # left over from a finished run: a plain value
            return plain(self._value, *args)
        return _escape_hook(ctx)(name, self, *args)

    method.__name__ = name
    return method


def _escape_hook(ctx: Any) -> Any:
    """``ctx.escape``, routed through the outer context when ``ctx`` runs nested in
    another context's run (its runtime says so)."""
    rt = ctx._runtime
    if rt is not None and rt.outer_call is not None:
        return rt.bound("escape")
    return ctx.escape


def _strip_dead_all(args: Any) -> list[Any]:
    out = []
    for a in args:
        while type(a) is Tagged and a._ctx._tagkey is not a._tagkey:
            a = a._value
        out.append(a)
    return out


class Tagged(TaggedBase):  # type: ignore[misc]  # (a C type, or its Python reference: see _native)
    """A value tagged by one context: ``tag(value, ctx, metadata)``.

    ``Tagged(value, meta, ctx)`` stores the fields ``_value``, ``_meta``, ``_ctx`` and
    ``_tagkey`` (``ctx``'s tag identity at that moment) in :class:`TaggedBase`: a C struct,
    or its pure-Python reference (see ``_native.py``)."""

    __slots__ = ()

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(t, float) holds for a tagged float, even in plain code
        value = self._value
        while type(value) is Tagged:  # tagged by several (nested) contexts
            value = value._value
        return type(value)

    # -- protocols: the value leaves for code the context does not see -------------------------
    # C code (``math.fsum`` draining a generator, ``"%f" % x``, NumPy converting an object)
    # and Python code the context does not route call these.  Each is handed to the owning
    # context's ``escape`` hook, which decides what leaves (by default: the plain value's
    # answer); a value left over from a finished run answers as its plain value.
    __float__ = _escape("__float__")
    __complex__ = _escape("__complex__")
    __int__ = _escape("__int__")
    __index__ = _escape("__index__")
    __bool__ = _escape("__bool__")
    __hash__ = _escape("__hash__")
    __len__ = _escape("__len__")
    __str__ = _escape("__str__")
    __repr__ = _escape("__repr__")
    __format__ = _escape("__format__")
    __reduce__ = _escape("__reduce__")
    __reduce_ex__ = _escape("__reduce_ex__")

    def __getattr__(self, name: str) -> Any:
        try:
            ctx = object.__getattribute__(self, "_ctx")
        except AttributeError:  # (a half-built object: unpickling, copy)
            raise AttributeError(name) from None
        if ctx._tagkey is not self._tagkey:
            return getattr(self._value, name)
        return _escape_hook(ctx)("__getattr__", self, name)

    def __array_function__(self, func: Callable[..., Any], types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy functions called on a tagged value by code the context does not route
        are handed to the owner, as operators are."""
        ctx = self._ctx
        if ctx._tagkey is not self._tagkey:
            return func(*_strip_dead_all(args), **kwargs)
        return owner_call(ctx, func, *args, **kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__":
            return NotImplemented
        ctx = self._ctx
        if ctx._tagkey is not self._tagkey:
            return ufunc(*_strip_dead_all(inputs), **kwargs)
        return owner_call(ctx, ufunc, *inputs, **kwargs)

    __getitem__ = _owner_dispatch(operator.getitem)
    __iter__ = _owner_dispatch(iter)  # (for loops and unpacking: the owner decides what comes out)
    __contains__ = _owner_dispatch(operator.contains)
    __abs__ = _owner_dispatch(abs)
    __round__ = _owner_dispatch(round)
    __neg__ = _owner_dispatch(operator.neg)
    __pos__ = _owner_dispatch(operator.pos)
    __invert__ = _owner_dispatch(operator.invert)
    __lt__ = _owner_dispatch(operator.lt)
    __le__ = _owner_dispatch(operator.le)
    __eq__ = _owner_dispatch(operator.eq)
    __ne__ = _owner_dispatch(operator.ne)
    __gt__ = _owner_dispatch(operator.gt)
    __ge__ = _owner_dispatch(operator.ge)


for _name in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "lshift",
              "rshift", "and", "or", "xor"):
    _op = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(Tagged, "__%s__" % _name, _owner_dispatch(_op))
    setattr(Tagged, "__r%s__" % _name, _owner_reflected(_op))
del _name, _op
adopt_tagged(Tagged)  # (the C layer recycles tagged values' memory: see _native)


def _check_ctx(ctx: object, fname: str) -> None:
    if not isinstance(ctx, _context_types):
        raise TypeError("%s(x, ctx): ctx must be an overdub.Context instance, got %r"
                        % (fname, type(ctx).__name__))


def tag(value: Any, ctx: "Context", metadata: Any = None) -> Any:
    """Return ``value`` tagged by ``ctx`` with ``metadata`` (re-tagging replaces it)."""
    _check_ctx(ctx, "tag")
    if type(value) is Tagged and value._tagkey is ctx._tagkey:
        value = value._value
    if not ctx.__dict__.get("_has_tags"):
        ctx.__dict__["_has_tags"] = True
        _first_tag()
    return Tagged(value, metadata, ctx)


def tag_each(values: list[Any], metas: list[Any], ctx: "Context") -> list[Any]:
    """``[Tagged(v, m, ctx) for v, m in zip(values, metas)]`` for two lists of one length,
    in one C loop: the seeding of a point of many floats, by a context that has tagged
    before (``tag``'s first-tag step done), with values none of which it tags already."""
    if _native_tag_each is not None:
        made: list[Any] = _native_tag_each(values, metas, ctx)
        return made
    if len(values) != len(metas):
        raise TypeError("tag_each(values, metas, ctx): two lists of one length")
    return [Tagged(v, m, ctx) for v, m in zip(values, metas)]


def retag(x: Any, ctx: "Context", metadata: Any) -> Any:
    """Replace, in place, the metadata ``ctx`` attached to the tagged value ``x``:
    every reference to ``x`` sees the new metadata (for mutable values such as arrays
    written in place).  ``x`` must be tagged by ``ctx``."""
    _check_ctx(ctx, "retag")
    if type(x) is not Tagged or x._tagkey is not ctx._tagkey:
        raise TypeError("retag(x, ctx, metadata): x is not tagged by this context")
    x._meta = metadata
    return x


def untag(x: Any, ctx: "Context") -> Any:
    """The value under ``ctx``'s tag, or ``x`` itself when ``ctx`` did not tag it."""
    if type(x) is Tagged:
        try:
            if x._tagkey is ctx._tagkey:
                return x._value
        except AttributeError:  # (not a context: the check is here, off the plain path)
            _check_ctx(ctx, "untag")
            raise
    return x


def istagged(x: Any, ctx: "Context") -> bool:
    """Whether ``x`` carries a tag of ``ctx`` (or of a context ``similar`` to it)."""
    _check_ctx(ctx, "istagged")
    return type(x) is Tagged and x._tagkey is ctx._tagkey


def metadata(x: Any, ctx: "Context") -> Any:
    """The metadata ``ctx`` attached to ``x``; ``None`` when ``x`` has none."""
    _check_ctx(ctx, "metadata")
    if type(x) is Tagged and x._tagkey is ctx._tagkey:
        return x._meta
    return None


def hasmetadata(x: Any, ctx: "Context") -> bool:
    """Whether ``ctx`` tagged ``x`` with metadata other than ``None``."""
    _check_ctx(ctx, "hasmetadata")
    return type(x) is Tagged and x._tagkey is ctx._tagkey and x._meta is not None
