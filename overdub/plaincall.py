"""Plain calls: what the default ``fallback`` does with a callable it does not step into.

* ``plain_call`` calls it with the running context's tags removed from the
  arguments; a value still tagged by another context hands the call to that
  context (nested contexts), through the hook the dispatcher registered in
  ``tagging``.
* The builtin classification the runtime caches by: ``is_structural`` builtins
  (containers, iteration, ``getattr``...) take tagged values as they are;
  ``is_builtin`` callables hold no user object and are kept across runs;
  ``transient`` callables (bound methods, closures) are cached under a
  :class:`WeakKey` that does not keep them alive.

This module knows nothing of runtimes: it is the layer below ``runtime.py``.
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
import collections
import itertools
import operator
import weakref
from functools import _lru_cache_wrapper as _LRU_WRAPPER, partial
from sys import modules as _sys_modules
from types import (BuiltinFunctionType, CoroutineType, FunctionType, GeneratorType, MethodDescriptorType, MethodType,
                   MethodWrapperType,
                   ModuleType, WrapperDescriptorType)

from . import semantics, tagging
from .tagging import Tagged
from .lifetimes import machinery_type

WeakRef = weakref.ReferenceType  # (and its subclasses: WeakMethod, KeyedRef)

_module_dict = vars(ModuleType)["__dict__"].__get__  # (a module subclass may redefine __dict__)

__all__ = ["is_structural"]


def _strip(x, key):
    while type(x) is Tagged and x._tagkey is key:
        x = x._value
    return x


def _strip_dead(x):
    """``x`` without tags whose context has renewed its tag identity since (values left
    over from a finished run: plain values now)."""
    while type(x) is Tagged and x._ctx._tagkey is not x._tagkey:
        x = x._value
    return x


def any_tagged(args, kwargs):
    for a in args:
        if type(a) is Tagged:
            return True
    return bool(kwargs) and any(type(a) is Tagged for a in kwargs.values())


def _unbound(f):
    """``list.append`` for ``[].append``: the method a bound builtin came from."""
    if type(f) is not BuiltinFunctionType:
        return None
    owner = f.__self__
    if owner is None or isinstance(owner, ModuleType):
        return None
    return semantics.lookup(type(owner), f.__name__)


def plain_call(f, key, args, kwargs, call=None):
    """Call ``f`` with this context's tags removed; a value still tagged by another
    context hands the call to that context (nested contexts).  ``call``: the run this
    context is nested in, which routes the call instead."""
    if not kwargs and call is None:
        for a in args:
            if type(a) is Tagged or type(a) is tuple:
                break
        else:
            return f(*args)  # (nothing to strip: the common case)
    new = None
    foreign = None
    for i, a in enumerate(args):
        if type(a) is Tagged:
            v = _strip(a, key)
            if v is not a:
                if new is None:
                    new = list(args)
                new[i] = v
            if type(v) is Tagged:
                v = _strip_dead(v)
                if v is not a:
                    if new is None:
                        new = list(args)
                    new[i] = v
                if type(v) is Tagged:
                    foreign = v._ctx
        elif type(a) is tuple and any(type(e) is Tagged for e in a):
            v = tuple(_strip(e, key) for e in a)
            if new is None:
                new = list(args)
            new[i] = v
    if kwargs:
        copied = False
        for k, a in list(kwargs.items()):
            if type(a) is Tagged:
                v = _strip_dead(_strip(a, key))
                if v is not a:
                    if not copied:
                        kwargs, copied = dict(kwargs), True
                    kwargs[k] = v
                if type(v) is Tagged:
                    foreign = v._ctx
    if new is not None:
        args = new
    if call is not None:
        return call(f, *args, **kwargs)
    if foreign is not None:
        return tagging.owner_call(foreign, f, *args, **kwargs)
    return f(*args, **kwargs)


def funcstr(f):
    """How CPython names a callable in call errors (``_PyObject_FunctionStr``): ``str(f)``
    when it has no ``__qualname__`` (``None argument after *``), else its qualified name,
    after its module unless that is None or builtins."""
    try:
        qualname = f.__qualname__
    except AttributeError:
        return str(f)
    module = getattr(f, "__module__", None)
    if module is not None and module != "builtins":
        return "%s.%s()" % (module, qualname)
    return "%s()" % qualname


_HEAPTYPE = 1 << 9
_CO_NESTED = 0x10


@machinery_type
class WeakKey(weakref.ref):  # type: ignore[type-arg]
    """A cache key standing for a transient callee without keeping it alive: it hashes
    as the callee and equals it, so ``fcache[f]`` finds it; its callback removes the
    entry when the callee dies."""

    __slots__ = ()
    __hash__ = weakref.ref.__hash__

    def __eq__(self, other):
        return self() is other


#: C callables made per use that hold objects: a slot wrapper bound to one (``gen.__next__``,
#: ``agen.__anext__``), and operator's callables holding names and arguments
_BOUND_C_CALLABLES = frozenset({MethodWrapperType, operator.methodcaller, operator.attrgetter,
                                operator.itemgetter})


def transient(f):
    """Whether ``f`` is a callable that plain Python makes per use and frees right after:
    a bound method (of a Python function, or of a C method or slot wrapper bound to an
    object such as ``gen.send`` or ``agen.__anext__``; ``operator.methodcaller(...)``), a function defined inside another function (a closure, a lambda), a
    ``functools.partial``, a callable instance of a Python class, or a function's
    ``functools.lru_cache`` wrapper made inside another function.  Holding it as a
    cache key would keep it -- and what it references -- alive until ``overdub``
    returns, so it is cached under a :class:`WeakKey` (or not at all when what it
    resolves to refers to it)."""
    tf = type(f)
    if tf is BuiltinFunctionType:  # (of a module: transient when the module is a private copy)
        owner = f.__self__
        if owner is None or isinstance(owner, type):
            return False
        return not isinstance(owner, ModuleType) or not _imported(owner)
    if tf is FunctionType:
        return bool(f.__code__.co_flags & _CO_NESTED) or not module_level(f)
    if tf is MethodType or tf is partial or tf in _BOUND_C_CALLABLES:
        return True
    if tf is _LRU_WRAPPER:  # (functools.lru_cache, functools.cache: made once per function
        wrapped = f.__dict__.get("__wrapped__")  # they wrap, and as lasting as that is)
        return type(wrapped) is not FunctionType or bool(wrapped.__code__.co_flags & _CO_NESTED)
    # an instance of a Python class (not a class: a __class__ property may claim anything)
    return bool(tf.__flags__ & _HEAPTYPE) and not issubclass(tf, type)


def module_level(f):
    """Whether the Python function ``f`` lives in an imported module's namespace (as long
    as ``sys.modules`` holds the module), not in one that plain Python frees when done with
    it: code given to ``exec`` with a fresh dict or a fresh ``ModuleType``'s, a private
    copy of a module."""
    namespace = f.__globals__
    name = namespace.get("__name__")
    module = _sys_modules.get(name) if type(name) is str else None
    return isinstance(module, ModuleType) and _module_dict(module) is namespace


def _imported(module):
    """Whether ``module`` is the one ``sys.modules`` holds (not a fresh private copy,
    which must be free to die)."""
    try:
        return _sys_modules.get(module.__name__) is module
    except (AttributeError, TypeError):
        return False


def hashable(f):
    """Whether the machinery may look ``f`` up in its tables, as plain CPython never hashes a
    callee: not a weak reference (its hash is its referent's -- a writable memoryview's
    raises ValueError -- and the reference keeps it: a dead one would hash, not raise
    TypeError), and its hash raises nothing."""
    if isinstance(f, WeakRef):
        return False
    try:
        hash(f)
    except Exception:
        return False
    return True


def is_builtin(f):
    """A callable implemented in C that holds no user object (kept across runs)."""
    tf = type(f)
    if tf is BuiltinFunctionType:
        owner = f.__self__
        return owner is None or (isinstance(owner, ModuleType) and _imported(owner))
    if tf is MethodDescriptorType or tf is WrapperDescriptorType:
        return True
    if tf is type:
        return not f.__flags__ & _HEAPTYPE
    return tf in _library_function_types()


def _library_function_types():
    """C types of library functions that hold no user object: NumPy's ufuncs and its
    array-function dispatchers (``np.sum``...), once NumPy is imported."""
    if not _LIBRARY_TYPES:
        import sys

        np = sys.modules.get("numpy")
        if np is None:
            return ()
        _LIBRARY_TYPES.update({np.ufunc, type(np.sum)} - {FunctionType})
    return _LIBRARY_TYPES


_LIBRARY_TYPES: set[type] = set()

# structural builtins: tagged values pass through them untouched
_PASSTHROUGH = {list.append, list.extend, list.insert, list.pop, list.copy, list.__setitem__,
                dict.get, dict.setdefault, dict.pop, dict.update, dict.__setitem__, dict.values,
                dict.items, set.add, tuple, list, dict, set, frozenset, zip, enumerate, reversed,
                iter, next, len, id, repr, str, print, sorted, min, max, sum, getattr, setattr,
                delattr, object.__setattr__, object.__getattribute__, hasattr, format,
                tuple.__new__, object.__new__, list.__init__, dict.__init__, set.__init__,
                GeneratorType.send, CoroutineType.send}  # (a value sent in: the frame's own)
_PASSTHROUGH |= {itertools.chain, itertools.chain.from_iterable, itertools.islice, itertools.pairwise,
                 itertools.product, itertools.permutations, itertools.combinations,
                 itertools.combinations_with_replacement, itertools.zip_longest, itertools.cycle,
                 itertools.tee, itertools.compress, itertools.repeat, collections.deque, dict.fromkeys,
                 list.count, list.index, list.remove, tuple.count, tuple.index}


def is_structural(f: object) -> bool:
    """Whether ``f`` is a builtin that stores, moves or compares its arguments without
    computing on them (containers, iteration, ``min``/``max``, ``getattr``...): tagged
    values pass through it untouched."""
    if not hashable(f):
        return False
    try:
        if f in _PASSTHROUGH or _unbound(f) in _PASSTHROUGH:
            return True
    except Exception:  # (unhashable, or its hash fails)
        return False
    return type(f) is type and bool(f.__flags__ & _HEAPTYPE) and _builds_like_builtin(f)


_BUILDERS = {dict.__new__, list.__new__, set.__new__, frozenset.__new__, tuple.__new__, object.__new__,
             vars(dict)["__init__"], vars(list)["__init__"], vars(set)["__init__"], vars(object)["__init__"]}


def _builds_like_builtin(cls):
    """Whether ``cls`` is a Python subclass of a builtin container whose construction is the
    builtin's (no ``__new__`` or ``__init__`` of its own: ``class Result(dict)`` with
    attribute access, as SciPy's ``OptimizeResult``): it stores its arguments as they are."""
    if not issubclass(cls, (dict, list, set, frozenset, tuple)):
        return False
    for name in ("__new__", "__init__"):
        for klass in cls.__mro__:
            if name in vars(klass):
                if vars(klass)[name] not in _BUILDERS:
                    return False
                break
    return True
