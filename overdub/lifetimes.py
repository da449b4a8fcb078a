"""Caches that must not keep a class, or a code object, alive past the point where plain
Python frees it.

``CodeCache`` keys entries by code objects weakly (and by identity).

A run caches what it resolved per callee and per type (``fcache[cls]``, the method cache
``fcache[type, name]``, ``Steps.attr_info[type]``) until ``overdub`` returns.  A class made
inside a function (``class Foo`` in a test, ``namedtuple`` called locally) is garbage
for plain Python once nothing refers to it -- freed by the next collection, since a
class always sits in a reference cycle with its own ``__mro__`` -- and a program may watch
that happen (``weakref.ref(Foo)`` is ``None`` after ``del Foo; gc.collect()``).

So each such entry is noted (``forget_at_collection``) and dropped when the garbage
collector starts a collection: the class is then collected exactly when it would be
plainly.  Dropping an entry only costs its callee being resolved again on its next use.
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
import gc
import sys
from types import ModuleType
from weakref import ref as _WeakRef  # (bound once: a program may patch weakref.ref)

_HEAPTYPE = 1 << 9
_type_attr = type.__dict__
_flags = _type_attr["__flags__"].__get__
_qualname = _type_attr["__qualname__"].__get__
_module = _type_attr["__module__"].__get__
_class_dict = _type_attr["__dict__"].__get__

#: (cache, key) pairs whose key is a class plain Python may free, dropped at each collection
_noted: list = []


def is_transient_class(cls) -> bool:
    """Whether ``cls`` is a class plain Python may free: a class defined at run time
    (heap type) that its module does not hold under its qualified name (one made inside
    a function, or by ``type()`` there).  Read without running any user code."""
    if not _flags(cls) & _HEAPTYPE:
        return False
    try:
        qualname, module = _qualname(cls), _module(cls)
    except (AttributeError, TypeError):
        return True
    if type(qualname) is not str or "<locals>" in qualname or type(module) is not str:
        return True
    holder = sys.modules.get(module)
    for part in qualname.split("."):
        if issubclass(type(holder), type):
            namespace = _class_dict(holder)
        elif type(holder) is ModuleType:
            namespace = holder.__dict__
        else:
            return True
        holder = namespace.get(part)
    return holder is not cls


def forget_at_collection(cache, key) -> None:
    """Drop ``cache[key]`` when the next garbage collection starts."""
    _noted.append(_Noted((cache, key)))


def _drop_noted(phase, info):
    if phase == "start" and _noted:
        noted = _noted[:]
        _noted.clear()
        for cache, key in noted:
            cache.pop(key, None)


gc.callbacks.append(_drop_noted)


#: the types of the objects overdub's caches are made of (their entries, the weak references
#: they hold): a routed ``gc.get_objects()`` leaves them out (``lookaside.user_objects``)
MACHINERY_TYPES: set = set()


def machinery_type(cls):
    """Class decorator: instances of ``cls`` are the machinery's own (``MACHINERY_TYPES``)."""
    MACHINERY_TYPES.add(cls)
    return cls


@machinery_type
class _Noted(tuple):
    """``(cache, key)``: an entry ``forget_at_collection`` drops."""

    __slots__ = ()


@machinery_type
class Table(dict):
    """A dict of overdub's own (a cache, a table of a runtime).  Left out of a routed
    ``gc.get_objects()`` with the tuples it holds; and, unlike an exact dict, the collector
    tracks it whatever it holds (an exact dict is untracked while it holds only atoms, and
    tracked again -- "new" to a program counting the collector's objects -- when a first
    entry arrives)."""

    __slots__ = ()


class KeyedRef(_WeakRef):  # type: ignore[type-arg]
    """A weak reference that also holds a key and a value: one object where a cache entry
    would otherwise be a tuple, a weak reference and a callback closure with its cells."""

    __slots__ = ("key", "value")

    def __init__(self, obj, callback, key, value):
        super().__init__(obj, callback)
        self.key, self.value = key, value

    def __new__(cls, obj, callback, key, value):
        return super().__new__(cls, obj, callback)


@machinery_type
class CodeRef(KeyedRef):
    """A ``CodeCache`` entry: a weak reference to the entry's code object, holding the
    entry's key (the code's id) and value."""

    __slots__ = ()


@machinery_type
class TwinRef(KeyedRef):
    """A weak reference to a function holding (as ``value``) the routed twin made for it:
    the value of the function's code in a ``CodeCache`` (``key``: the code's id).  Give it
    the cache's ``forget_value`` as callback: the twin shares the function's defaults and
    cells, so it must not outlive it."""

    __slots__ = ()


class CodeCache:
    """A mapping keyed by code objects that does not keep them alive (code objects
    compare by value, so equal code from two files must not share an entry).

    No lock: single dict operations are atomic under the GIL, and a lock would
    deadlock when garbage collection runs a removal callback while it is held.
    """

    def __init__(self):
        data = self._data = Table()

        def forget(ref):  # (one per cache: the entries share it)
            if data.get(ref.key) is ref:
                data.pop(ref.key, None)

        def forget_value(ref):  # (for values that are weak references: ``TwinRef``)
            entry = data.get(ref.key)
            if entry is not None and entry.value is ref:
                data.pop(ref.key, None)

        self._forget, self.forget_value = forget, forget_value

    def get(self, code, default=None):
        entry = self._data.get(id(code))
        if entry is None or entry() is not code:
            return default
        return entry.value

    def __setitem__(self, code, value):
        key = id(code)
        self._data[key] = CodeRef(code, self._forget, key, value)

    def discard(self, code_id, value):
        """Drop the entry of the code with id ``code_id`` if it still holds ``value``."""
        entry = self._data.get(code_id)
        if entry is not None and entry.value is value:
            self._data.pop(code_id, None)

    def values(self):
        """The values of the entries whose code lives (a snapshot)."""
        return [e.value for e in list(self._data.values()) if e() is not None]

    def __len__(self):
        return len(self._data)

    def clear(self):
        self._data.clear()
