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
from weakref import ref as _weak_ref  # (bound once: a program may patch weakref.ref)

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
    _noted.append((cache, key))


def _drop_noted(phase, info):
    if phase == "start" and _noted:
        noted = _noted[:]
        _noted.clear()
        for cache, key in noted:
            cache.pop(key, None)


gc.callbacks.append(_drop_noted)


class CodeCache:
    """A mapping keyed by code objects that does not keep them alive (code objects
    compare by value, so equal code from two files must not share an entry).

    No lock: single dict operations are atomic under the GIL, and a lock would
    deadlock when garbage collection runs a removal callback while it is held.
    """

    def __init__(self):
        self._data = {}

    def get(self, code, default=None):
        entry = self._data.get(id(code))
        if entry is None or entry[0]() is not code:
            return default
        return entry[1]

    def __setitem__(self, code, value):
        key, data = id(code), self._data

        def forget(ref):
            entry = data.get(key)
            if entry is not None and entry[0] is ref:
                data.pop(key, None)

        data[key] = (_weak_ref(code, forget), value)

    def discard(self, code_id, value):
        """Drop the entry of the code with id ``code_id`` if it still holds ``value``."""
        entry = self._data.get(code_id)
        if entry is not None and entry[1] is value:
            self._data.pop(code_id, None)

    def __len__(self):
        return len(self._data)

    def clear(self):
        self._data.clear()
