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

__all__ = ["Tagged", "tag", "retag", "untag", "metadata", "hasmetadata", "istagged"]


def _owner_dispatch(op):
    def method(self, *args):
        from .dispatch import overdub

        return overdub(self._ctx, op, self, *args)

    method.__name__ = "__%s__" % op.__name__.strip("_")
    return method


def _owner_reflected(op):
    def method(self, other):
        from .dispatch import overdub

        return overdub(self._ctx, op, other, self)

    return method


class Tagged:
    """A value tagged by one context: ``tag(value, ctx, metadata)``."""

    __slots__ = ("_value", "_meta", "_tagkey", "_ctx", "__weakref__")

    def __init__(self, value, meta, ctx):
        self._value = value
        self._meta = meta
        self._tagkey = ctx._tagkey
        self._ctx = ctx

    @property
    def __class__(self):  # isinstance(t, float) holds for a tagged float, even in plain code
        value = self._value
        while type(value) is Tagged:  # tagged by several (nested) contexts
            value = value._value
        return type(value)

    def __repr__(self):
        return repr(self._value)

    def __str__(self):
        return str(self._value)

    def __format__(self, spec):
        return format(self._value, spec)

    def __hash__(self):
        return hash(self._value)

    def __bool__(self):
        return bool(self._value)

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __index__(self):
        return operator.index(self._value)

    def __complex__(self):
        return complex(self._value)

    def __len__(self):
        return len(self._value)


    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_value"), name)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .dispatch import overdub

        if method != "__call__":
            return NotImplemented
        return overdub(self._ctx, ufunc, *inputs, **kwargs)

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


def _check_ctx(ctx, fname):
    from .context import Context

    if not isinstance(ctx, Context):
        raise TypeError("%s(x, ctx): ctx must be an overdub.Context instance, got %r"
                        % (fname, type(ctx).__name__))


def tag(value, ctx, metadata=None):
    """Return ``value`` tagged by ``ctx`` with ``metadata`` (re-tagging replaces it)."""
    _check_ctx(ctx, "tag")
    if type(value) is Tagged and value._tagkey is ctx._tagkey:
        value = value._value
    if not ctx.__dict__.get("_has_tags"):
        from .dispatch import note_tagging

        ctx.__dict__["_has_tags"] = True
        note_tagging()
    return Tagged(value, metadata, ctx)


def retag(x, ctx, metadata):
    """Replace, in place, the metadata ``ctx`` attached to the tagged value ``x``:
    every reference to ``x`` sees the new metadata (for mutable values such as arrays
    written in place).  ``x`` must be tagged by ``ctx``."""
    _check_ctx(ctx, "retag")
    if type(x) is not Tagged or x._tagkey is not ctx._tagkey:
        raise TypeError("retag(x, ctx, metadata): x is not tagged by this context")
    x._meta = metadata
    return x


def untag(x, ctx):
    """The value under ``ctx``'s tag, or ``x`` itself when ``ctx`` did not tag it."""
    if type(x) is Tagged and x._tagkey is ctx._tagkey:
        return x._value
    return x


def istagged(x, ctx):
    """Whether ``x`` carries a tag of ``ctx`` (or of a context ``similar`` to it)."""
    _check_ctx(ctx, "istagged")
    return type(x) is Tagged and x._tagkey is ctx._tagkey


def metadata(x, ctx):
    """The metadata ``ctx`` attached to ``x``; ``None`` when ``x`` has none."""
    _check_ctx(ctx, "metadata")
    if type(x) is Tagged and x._tagkey is ctx._tagkey:
        return x._meta
    return None


def hasmetadata(x, ctx):
    """Whether ``ctx`` tagged ``x`` with metadata other than ``None``."""
    return metadata(x, ctx) is not None
