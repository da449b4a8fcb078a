"""Builtins that ``recurse`` must not call blindly.

Two kinds of C functions would escape the context if called plainly:

* **callback takers** (``map``, ``sorted(key=)``, ``functools.reduce``,
  ``re.Pattern.sub``...): the Python function they are handed would run
  outside the context.  The table below says which argument is the callback;
  it is wrapped so that each call of it goes through the context again.
* **heap readers** (``gc.get_objects``, ``gc.get_referrers``): answered without the
  objects overdub's caches are made of (``user_objects``), so that a program counting
  the collector's objects around a first routed call sees what plain Python shows.
* **caller-frame readers** (zero-argument ``super()``, ``locals()``, ``vars()``,
  ``dir()``, ``globals()``, ``eval``/``exec`` without namespaces,
  ``sys._getframe``, ``warnings.warn``'s ``stacklevel``; ``type(name, bases, ns)`` and
  ``type.__new__``, which name the caller's module): called from the dispatcher they
  would see its frame.
  They are answered for the nearest *user* frame instead, and code given to
  ``eval``/``exec`` runs inside the context too.

Adding a callback taker is one table entry:
``CALLBACKS[fn] = (positions, keywords, arity)``.
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
import builtins
import collections
import functools
import gc
import itertools
import linecache
import operator
import os
import re
import sys
from sys import _getframe
from types import BuiltinFunctionType, CodeType, FunctionType, MethodType, ModuleType
import _warnings
from weakref import ref as _weak_ref  # (bound once: a program may patch weakref.ref or sys._getframe)
from typing import Any, cast

from . import _compat
from ._native import MACHINERY_CODES, entry_points as _entry_points
from .lifetimes import MACHINERY_TYPES, machinery_type
from .origins import is_routed
from .tracebacks import drop_own_frames

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: this thread's frames that called overdub's C entry for the runs in progress (none on the
#: pure-Python path, whose entry is a frame of overdub's own)
_run_entries = _entry_points.run_entries if _entry_points is not None else tuple
if _entry_points is not None:
    MACHINERY_TYPES.add(_entry_points.CallbackTaker)

#: fn -> (positional indexes, keyword names, arity) of the callables it calls back; an
#: arity n means "only when called with exactly n positional arguments" (``iter(x)``
#: iterates ``x``, only ``iter(callable, sentinel)`` calls it).  Arguments that are None
#: or not callable are left alone (``filter(None, xs)``, ``pattern.sub("text", s)``).
CALLBACKS = {
    map: ((0,), (), None),
    filter: ((0,), (), None),
    sorted: ((), ("key",), None),
    min: ((), ("key",), None),
    max: ((), ("key",), None),
    list.sort: ((), ("key",), None),
    functools.reduce: ((0,), (), None),
    itertools.starmap: ((0,), (), None),
    itertools.takewhile: ((0,), (), None),
    itertools.dropwhile: ((0,), (), None),
    itertools.filterfalse: ((0,), (), None),
    itertools.groupby: ((1,), ("key",), None),
    itertools.accumulate: ((1,), ("func",), None),
    re.Pattern.sub: ((1,), ("repl",), None),
    re.Pattern.subn: ((1,), ("repl",), None),
    iter: ((0,), (), 2),
}


_ALL = slice(0, None)
#: builtins that iterate some of their positional arguments in C -> which ones (an index
#: tuple, or a slice); a context's primitive on ``iter`` reads those arguments first
#: (``functools.reduce(f, a)`` iterates what the primitive gives for ``a``)
ITERATED = {
    reversed: (0,), list: (0,), tuple: (0,), set: (0,), frozenset: (0,), dict.fromkeys: (0,),
    sorted: (0,), sum: (0,), any: (0,), all: (0,), enumerate: (0,), zip: _ALL, map: slice(1, None),
    filter: (1,), functools.reduce: (1,), list.extend: (1,), set.update: _ALL, collections.deque: (0,),
    itertools.accumulate: (0,), itertools.chain: _ALL, itertools.islice: (0,), itertools.pairwise: (0,),
    itertools.product: _ALL, itertools.permutations: (0,), itertools.combinations: (0,),
    itertools.combinations_with_replacement: (0,), itertools.zip_longest: _ALL, itertools.cycle: (0,),
    itertools.tee: (0,), itertools.compress: (0, 1), itertools.starmap: (1,), itertools.takewhile: (1,),
    itertools.dropwhile: (1,), itertools.filterfalse: (1,), itertools.groupby: (0,),
}
if hasattr(itertools, "batched"):  # (3.12+)
    ITERATED[itertools.batched] = (0,)
#: builtins that iterate their first argument only when it is their one positional argument
_ALONE = (max, min)


def iterated(f):
    """Which positional arguments builtin ``f`` iterates: an index tuple, a slice, ``None``
    (not such a builtin) or ``"alone"`` (the first, when it is the only one)."""
    try:
        return ITERATED.get(f) or ("alone" if f in _ALONE else None)
    except Exception:  # (an unhashable callable, or one whose hash fails)
        return None


def reading_elements(target, positions, iterable):
    """``target`` (what runs a builtin) with the arguments the builtin iterates passed
    through the context's ``iterable`` slot first; an argument the slot reads itself
    becomes the list of what it gives (``reversed`` needs a sequence)."""
    def step(*args, **kwargs):
        try:
            if type(positions) is slice:
                chosen = range(len(args))[positions]
            elif positions == "alone":
                chosen = (0,) if len(args) == 1 else ()
            else:
                chosen = positions
            new = None
            for i in chosen:
                if i < len(args):
                    a = args[i]
                    r = iterable(a)
                    if r is not a:
                        new = list(args) if new is None else new
                        new[i] = list(r)
            if new is not None:
                args = tuple(new)
        except BaseException as exc:
            drop_own_frames(exc)
            raise
        return target(*args, **kwargs)

    return step


_machinery: list[tuple[str, ...]] = [(os.path.realpath(_PACKAGE_DIR) + os.sep,)]  # file prefixes contexts never route
_machinery_codes: dict[int, Any] = MACHINERY_CODES  # id(code) -> weak reference to a code object declared opaque


def is_internal(code: CodeType) -> bool:
    """Whether a code object belongs to overdub's own machinery (or to code declared
    with :func:`opaque`)."""
    name = code.co_filename
    inside = _machinery_files.get(name)
    if inside is None:  # (file names may be spelled through symlinks or "..": compare real paths)
        # "<string>", "<doctest ...>", "<stdin>" name no file: never resolve them against
        # the working directory (which may lie inside the machinery)
        pseudo = name.startswith("<") and name.endswith(">")
        inside = _machinery_files[name] = not pseudo and os.path.realpath(name).startswith(_machinery[0])
    if inside:
        return True
    ref = _machinery_codes.get(id(code))
    return ref is not None and ref() is code


_machinery_files: dict[str, bool] = {}  # co_filename -> whether it lies in the machinery
#: called (no arguments) when a module is declared opaque: what runtimes made for its
#: functions before (routed twins, kept across runs) must go (``overdub.runtime`` registers)
MACHINERY_CHANGED: list[Any] = []


def _remember_opaque(code: CodeType) -> None:
    key = id(code)

    def forget(ref):
        if _machinery_codes.get(key) is ref:
            del _machinery_codes[key]

    _machinery_codes[key] = _weak_ref(code, forget)


def opaque(*objs: Any) -> Any:
    """Declare modules, packages or functions to be *machinery* that contexts call
    directly, with their arguments untouched (tagged values included), without
    routing their bodies -- as overdub's own functions are.  For libraries built on
    overdub, such as an AD system whose ``D`` may be called inside another context."""
    for obj in objs:
        if isinstance(obj, ModuleType):
            path = os.path.realpath(cast(str, obj.__file__))
            if getattr(obj, "__path__", None) is not None:
                path = os.path.dirname(path) + os.sep
            _machinery[0] = tuple(sorted(set(_machinery[0]) | {path}))
            _machinery_files.clear()
            for changed in MACHINERY_CHANGED:
                changed()
        elif hasattr(obj, "__code__"):
            _remember_opaque(obj.__code__)
        else:
            raise TypeError("opaque() takes modules and Python functions, got %r" % (obj,))
    return objs[0] if len(objs) == 1 else objs




def user_frame(skip=0):
    """The frame of the user code that called a routed builtin (the nearest frame
    running rewritten code, so that primitive and hook methods in between are
    skipped), then ``skip`` frames further out.  Inside the outermost call of
    overdub's machinery only routed frames count (not the context's hooks and
    primitives); beyond it, every frame outside the machinery (the code that called
    ``overdub``)."""
    frame = first = _getframe(1)
    while frame is not None and not is_routed(frame.f_code):
        frame = frame.f_back
    if frame is None:  # not called from routed code: the first frame outside overdub
        frame = first
        while frame is not None and is_internal(frame.f_code):
            frame = frame.f_back
    if not skip or frame is None:
        return frame
    outer = []
    f = frame.f_back
    while f is not None:
        outer.append(f)
        f = f.f_back
    # frames inside the outermost overdub call are routed code, machinery and context code
    entry = max((i for i, f in enumerate(outer) if is_internal(f.f_code)), default=-1)
    entries = _run_entries()  # (the C entry leaves no frame of its own: it notes its caller's)
    if entries:
        caller = entries[0]
        entry = max(entry, next((i for i, f in enumerate(outer) if f is caller), -1))
    for i, f in enumerate(outer):
        if is_routed(f.f_code) if i < entry else not is_internal(f.f_code):
            skip -= 1
            if not skip:
                return f
    return None


@machinery_type
class Callback(functools.partial[Any]):
    """What a callback-taking C function receives in place of the user's callable:
    each call of it runs routed, through the context's dispatcher ``call``.

    A ``functools.partial`` of ``call`` (C code), so no frame of overdub's lies between
    the C function and the callback (``f_back``, tracebacks).  It pickles and deep-copies
    as the callable it stands for (``map``, ``filter`` and the itertools iterators pickle
    their function), so an iterator made inside a context pickles like a plain one and
    unpickles to a plain one.
    """

    __slots__ = ()

    def __new__(cls, fn, call):
        return super().__new__(cls, call, fn)

    @property
    def fn(self):
        """The user's callable."""
        return self.args[0]

    def __reduce__(self):
        return _FIRST, ((self.args[0],),)  # unpickles as the original, needing no overdub

    def __repr__(self):
        return repr(self.args[0])


_FIRST = operator.itemgetter(0)


def wrap_callbacks(fn, call):
    """A stand-in for ``fn`` whose callback arguments run through ``call`` (with the C
    layer, a ``CallbackTaker``: no frame of overdub's between the program and ``fn``, nor
    under the Python code ``fn`` calls back plainly; else the Python ``step`` below)."""
    positions, keywords, arity = CALLBACKS[fn]

    def wrap(cb):
        if cb is None or not callable(cb):
            return cb
        return Callback(cb, call)

    if _entry_points is not None:
        return _entry_points.CallbackTaker(fn, tuple(positions), tuple(keywords), arity, wrap,
                                           drop_own_frames)

    def step(*args, **kwargs):
        try:
            if positions and args and (arity is None or len(args) == arity):
                args = list(args)
                for i in positions:
                    if i < len(args):
                        args[i] = wrap(args[i])
            for k in keywords:
                if k in kwargs:
                    kwargs[k] = wrap(kwargs[k])
            return fn(*args, **kwargs)
        except BaseException as exc:
            drop_own_frames(exc)
            raise

    return step


def _own_code(code: CodeType) -> bool:
    """Whether ``code`` is overdub's own (its files, generated code included; not code a
    program declared opaque)."""
    return is_internal(code) and _machinery_files.get(code.co_filename, False)


def _machinery_ids(heap: list[Any]) -> set[int]:
    """The ids of the objects in ``heap`` (a list from the collector) that overdub made for
    itself: objects of the ``MACHINERY_TYPES`` (cache entries and tables), the routed
    twins of functions, overdub's own functions and bound methods with their cells, and
    what those hold alone: the tuples kept in its tables, a stand-in's arguments, the
    namespace and registered source lines of generated code, the builtin functions rewritten
    code calls its C slots through.  (A table's values that are
    partials are what overdub resolved a call to: the program's own partials are never
    values there, only keys, and weakly.)"""
    hidden: set[int] = set()
    add = hidden.add
    for obj in heap:
        tp = type(obj)
        if tp in MACHINERY_TYPES:
            add(id(obj))
            if issubclass(tp, dict):
                for pair in dict.copy(obj).items():  # (a collection may change the table)
                    for item in pair:
                        if type(item) is tuple:
                            add(id(item))
                            for inner in item:
                                if type(inner) is tuple or type(inner) is frozenset and inner:
                                    add(id(inner))
                        elif type(item) is functools.partial:  # (what a call resolved to)
                            add(id(item))
                            add(id(item.args))
                            add(id(item.keywords))
                        elif type(item) is frozenset and item:  # (a guard's types; an empty
                            add(id(item))  # frozenset may be CPython's shared one)
            elif issubclass(tp, tuple):
                for item in obj:
                    if type(item) is tuple:
                        add(id(item))
            elif issubclass(tp, functools.partial):
                add(id(obj.args))
                add(id(obj.keywords))
        elif tp is FunctionType:
            code = obj.__code__
            if is_routed(code):
                add(id(obj))
            elif _own_code(code):
                add(id(obj))
                cells = obj.__closure__
                if cells is not None:
                    add(id(cells))
                    for cell in cells:
                        add(id(cell))
                if obj.__defaults__ is not None:
                    add(id(obj.__defaults__))
                if code.co_filename.startswith(_GENERATED_PREFIX):
                    add(id(obj.__globals__))
                    entry: Any = linecache.cache.get(code.co_filename)
                    if entry is not None:  # (size, mtime, lines, filename)
                        add(id(entry))
                        add(id(entry[2]))
        elif tp is MethodType and type(obj.__func__) is FunctionType and _own_code(obj.__func__.__code__):
            add(id(obj))
        elif tp is BuiltinFunctionType and type(obj.__self__) in MACHINERY_TYPES:
            add(id(obj))  # (a call site's entry: _native.call_site_entry)
    return hidden


def _without_machinery(heap_reader):
    def user_objects(*args, **kwargs):
        try:
            found = heap_reader(*args, **kwargs)
        except BaseException as exc:
            drop_own_frames(exc)
            raise
        hidden = _machinery_ids(found if heap_reader is gc.get_objects else gc.get_objects())
        return [obj for obj in found if id(obj) not in hidden]

    user_objects.__name__ = user_objects.__qualname__ = heap_reader.__name__
    user_objects.__doc__ = heap_reader.__doc__
    return user_objects


_GENERATED_PREFIX = os.path.join(_PACKAGE_DIR, "<overdub ")
#: ``gc.get_objects()`` and ``gc.get_referrers()`` as plain Python answers them: the first
#: routed use of a function makes its routed twin and the cache entries that hold it, and
#: a context's first use of an operator its slot, which a program counting the
#: collector's objects (a leak test) must not see
HEAP_READERS = {gc.get_objects: _without_machinery(gc.get_objects),
                gc.get_referrers: _without_machinery(gc.get_referrers)}


class FrameReaders:
    """Caller-frame builtins answered for the user's frame; ``run_code(code)``
    gives the routed version of a code object for ``eval``/``exec``."""

    def __init__(self, run_code):
        self.run_code = run_code

    def table(self):
        table = {eval: self.eval, exec: self.exec}
        for builtin, reader, most in ((super, self.super, 2), (locals, self.locals, 0),
                                      (vars, self.vars, 1), (dir, self.dir, 1),
                                      (globals, self.globals, 0), (_getframe, self.getframe, 1)):
            table[builtin] = _rejecting_misuse(builtin, reader, most)
        if _compat.GETFRAMEMODULENAME is not None:
            table[_compat.GETFRAMEMODULENAME] = self.getframemodulename
        table[_warnings.warn] = warn_at_user_frame
        table.update(HEAP_READERS)
        return table

    def reader_of(self, f, table):
        """The stand-in for ``f`` in ``table`` (from :meth:`table`), or for a ``warn`` of
        another ``_warnings`` module instance (a fresh import, as CPython's tests make);
        None when ``f`` reads no caller frame."""
        reader = table.get(f)
        if reader is None and type(f) is _BuiltinFunction and f.__name__ == "warn" and (
                getattr(f.__self__, "__name__", None) == "_warnings"):
            reader = functools.partial(warn_at_user_frame, _module=f.__self__)
        return reader

    @staticmethod
    def getframemodulename(depth=0):
        """``sys._getframemodulename`` (3.12+): the module of the function running in the
        user's frame ``depth`` levels out (read from the frame's globals)."""
        try:
            frame = user_frame(depth)
            return None if frame is None else frame.f_globals.get("__name__")
        except BaseException as exc:
            drop_own_frames(exc)
            raise

    @staticmethod
    def locals():
        return _compat.frame_locals_snapshot(user_frame())

    def vars(self, *args):
        return vars(*args) if args else self.locals()

    def dir(self, *args):
        if args:
            return dir(*args)
        names = list(self.locals().keys())  # (PyMapping_Keys: a mapping given to eval too)
        names.sort()
        return names

    @staticmethod
    def globals():
        return user_frame().f_globals

    @staticmethod
    def getframe(depth=0, /):
        frame = user_frame(depth)
        if frame is None:
            raise ValueError("call stack is not deep enough")
        return frame

    @staticmethod
    def super(*args):
        if args:
            return super(*args)
        frame = user_frame()
        code = frame.f_code
        if code.co_argcount == 0 and not code.co_flags & 0x04:
            raise RuntimeError("super(): no arguments")
        if "__class__" not in code.co_freevars:
            raise RuntimeError("super(): __class__ cell not found")
        f_locals = frame.f_locals
        if "__class__" not in f_locals:
            raise RuntimeError("super(): empty __class__ cell")
        first = code.co_varnames[0] if code.co_varnames else code.co_cellvars[0]
        if first not in f_locals:
            raise RuntimeError("super(): arg[0] deleted")
        return super(f_locals["__class__"], f_locals[first])

    def _namespaces(self, globals_, locals_):
        if globals_ is None:
            frame = user_frame()
            globals_ = frame.f_globals
            if locals_ is None:
                locals_ = _compat.frame_locals_snapshot(frame)
        elif type(globals_) is dict and "__builtins__" not in globals_:
            # CPython gives them the caller's builtins (not overdub's private copy)
            globals_["__builtins__"] = user_frame().f_builtins
        return globals_, locals_

    def _code(self, source, mode):
        if isinstance(source, str) or isinstance(source, (bytes, bytearray)):
            if mode == "eval" and isinstance(source, str):
                source = source.lstrip(" \t")
            # (a SyntaxError raised here is the builtin's own: compiling again would warn
            # twice about what the source's valid part holds, an invalid escape...)
            source = compile(source, "<string>", mode)
        if type(source).__name__ == "code":
            return self.run_code(source)
        return source

    def eval(self, source, /, *args, **kwargs):
        try:
            bound = _namespaces_of(args, kwargs, ())
            if bound is None:  # a call CPython rejects: let it say why
                return _EVAL(source, *args, **kwargs)
            globals_, locals_ = self._namespaces(*bound[:2])
            return _EVAL(self._code(source, "eval"), globals_, locals_)
        except BaseException as exc:
            drop_own_frames(exc)
            raise

    def exec(self, source, /, *args, **kwargs):
        try:
            bound = _namespaces_of(args, kwargs, ("closure",))
            if bound is None:
                return _EXEC(source, *args, **kwargs)
            globals_, locals_ = self._namespaces(*bound[:2])
            return _EXEC(self._code(source, "exec"), globals_, locals_, **bound[2])
        except BaseException as exc:
            drop_own_frames(exc)
            raise


_EVAL, _EXEC = builtins.eval, builtins.exec
TYPE_NEW = type.__new__


def class_args(f, args):
    """The arguments for ``type(name, bases, namespace)`` or ``type.__new__(meta, name,
    bases, namespace)`` called from the dispatcher: a namespace without ``__module__``
    gets the one CPython would give the class, the ``__name__`` of its caller's globals
    (the user's frame; CPython would read the dispatcher's).  Other calls: ``args``."""
    if f is type and len(args) == 3 and type(args[2]) is dict:
        # (a dict subclass may be meant for a metaclass's __new__, which type() calls)
        return args[:2] + (_with_module(args[2]),)
    if f is TYPE_NEW and len(args) == 4 and isinstance(args[3], dict):
        return args[:3] + (_with_module(args[3]),)
    return args


def _with_module(namespace):
    """``namespace`` with the ``__module__`` CPython's ``type.__new__`` would give the
    class: the ``__name__`` of its caller's globals (here the user's frame, where CPython
    would read the dispatcher's).  ``type.__new__`` copies the namespace anyway."""
    if "__module__" not in namespace:
        name = user_frame().f_globals.get("__name__")
        if name is not None:
            namespace = dict.copy(namespace)
            namespace["__module__"] = name
    return namespace


_index = operator.index
_BuiltinFunction = type(len)


def _importlib_internal(frame):
    """What CPython's ``warn`` skips when it counts ``stacklevel``: importlib's bootstrap."""
    filename = frame.f_code.co_filename
    return "importlib" in filename and "_bootstrap" in filename


_WARN_PARAMETERS = ("message", "category", "stacklevel", "source")


def _warn_arguments(args, kwargs):
    """``(message, category, stacklevel, source, skip_file_prefixes)`` of a ``warn`` call,
    or None when CPython rejects its shape."""
    if len(args) > len(_WARN_PARAMETERS):
        return None
    bound = dict(zip(_WARN_PARAMETERS, args))
    skip = ()
    for name, value in kwargs.items():
        if name in _WARN_PARAMETERS and name not in bound:
            bound[name] = value
        elif name == "skip_file_prefixes" and _compat.WARN_SKIPS_PREFIXES:
            skip = value
        else:
            return None
    if "message" not in bound:
        return None
    return (bound["message"], bound.get("category"), bound.get("stacklevel", 1), bound.get("source"),
            skip)


def warn_at_user_frame(*args, _module=_warnings, **kwargs):
    """``warnings.warn`` called from routed code: ``stacklevel`` counted over the user's
    frames, as plain Python counts them (never a frame of overdub's: a special method or a
    descriptor reached through ``semantics.Steps`` would otherwise name it), then
    ``warn_explicit`` of the same ``_warnings`` module with what its ``warn`` passes it."""
    try:
        bound = _warn_arguments(args, kwargs)
        if bound is None:
            return _module.warn(*args, **kwargs)  # (CPython's own error)
        message, category, stacklevel, source, skip = bound
        if isinstance(message, Warning):
            category = message.__class__
        if category is None:
            category = UserWarning
        if not (isinstance(category, type) and issubclass(category, Warning)):
            raise TypeError("category must be a Warning subclass, not '%s'" % type(category).__name__)
        if type(skip) is not tuple:
            raise TypeError("warn() argument 'skip_file_prefixes' must be tuple, not %s"
                            % type(skip).__name__)
        stacklevel = _index(stacklevel)
        if skip:
            stacklevel = max(2, stacklevel)
        frame = user_frame()
        if stacklevel > 1:
            counts_all = _importlib_internal(frame)
            out, level = 0, stacklevel - 1
            while level > 0 and frame is not None:
                out += 1
                frame = user_frame(out)
                if frame is not None and not counts_all and (
                        _importlib_internal(frame) or frame.f_code.co_filename.startswith(skip)):
                    continue
                level -= 1
        if frame is None:
            module_globals, (filename, lineno) = sys.__dict__, _compat.WARN_BEYOND_STACK
        else:
            module_globals, filename, lineno = frame.f_globals, frame.f_code.co_filename, frame.f_lineno
        module = module_globals.get("__name__", "<string>")
        registry = module_globals.setdefault("__warningregistry__", {})
        return _module.warn_explicit(message, category, filename, lineno, module, registry, None, source)
    except BaseException as exc:
        drop_own_frames(exc)
        raise


def _rejecting_misuse(builtin, reader, most):
    """``reader`` for calls of ``builtin`` with at most ``most`` positional arguments;
    any other call goes to ``builtin`` itself, which rejects it with CPython's message."""
    def read(*args, **kwargs):
        try:
            if kwargs or len(args) > most:
                return builtin(*args, **kwargs)
            return reader(*args)
        except BaseException as exc:
            drop_own_frames(exc)
            raise

    return read


def _namespaces_of(args, kwargs, keywords):
    """``(globals, locals, other keywords)`` of an ``eval``/``exec`` call, or None when
    CPython would reject its shape (``keywords``: the keyword-only parameters)."""
    if len(args) > 2:
        return None
    values = list(args) + [None] * (2 - len(args))
    rest = dict(kwargs)
    if _compat.NAMESPACES_BY_KEYWORD:
        for i, name in enumerate(("globals", "locals")):
            if name in rest:
                if i < len(args):
                    return None
                values[i] = rest.pop(name)
    if any(k not in keywords for k in rest):
        return None
    return values[0], values[1], rest
