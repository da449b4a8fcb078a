"""``PrintCtx``: log every call made inside a context, with its arguments, indented by depth.

    >>> overdub.overdub(PrintCtx(), hypot, 3.0, 4.0)        # doctest: +SKIP
    hypot(3.0, 4.0)
      getattr(<module math>, 'sqrt')
      square(3.0)
        mul(3.0, 3.0)
      ...

It is a wildcard primitive (not a prehook/posthook pair) so that the depth is restored
by ``try/finally`` when a call raises: overdub calls no posthook for a call that raised.
The helpers ``name_of`` and ``describe`` are shared with ``CountCtx`` and ``TraceCtx``.
"""
import logging
import sys
import types
from typing import IO, Any, Callable, Iterable

import numpy as np

import overdub
from overdub import Context, primitive

__all__ = ["PrintCtx", "describe", "module_of", "name_of"]


def name_of(f: Any) -> str:
    """A short, stable name for a callable: its qualname without ``<locals>`` prefixes
    (``square``, ``str.upper``, ``Point.norm``), else its name, else its repr."""
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if not isinstance(name, str):
        return repr(f)
    return name.rpartition("<locals>.")[2]


def module_of(f: Any) -> str:
    """The name of the module a callable comes from ('' when unknown); method
    descriptors (``str.upper``) and bound methods answer for their class or function."""
    for obj in (f, getattr(f, "__func__", None), getattr(f, "__objclass__", None), type(f)):
        mod = getattr(obj, "__module__", None)
        if isinstance(mod, str):
            return mod
    return ""


def describe(value: Any, limit: int = 60) -> str:
    """One-line text for a value: modules and functions by name (no addresses, so
    logs are reproducible), big arrays by dtype and shape, the rest by repr, cut at
    ``limit`` characters."""
    if isinstance(value, types.ModuleType):
        text = "<module %s>" % value.__name__
    elif isinstance(value, (types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        text = "<function %s>" % name_of(value)
    elif isinstance(value, np.ndarray) and value.size > 8:
        text = "%s(%s, shape=%s)" % (type(value).__name__, value.dtype, value.shape)
    else:
        try:
            text = " ".join(repr(value).split())
        except Exception as exc:  # noqa: BLE001  (a broken __repr__ must not break the log)
            text = "<%s: repr failed: %s>" % (type(value).__name__, type(exc).__name__)
    if limit and len(text) > limit:
        text = text[:max(limit - 3, 1)] + "..."
    return text


def call_text(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], limit: int = 60) -> str:
    """``name(arg, ..., key=value)`` for a call."""
    parts = [describe(a, limit) for a in args]
    parts += ["%s=%s" % (k, describe(v, limit)) for k, v in kwargs.items()]
    return "%s(%s)" % (name_of(f), ", ".join(parts))


class PrintCtx(Context):
    """Print every call (operators as ``operator`` functions, attribute loads as
    ``getattr``) with its arguments, indented by nesting depth.

    Options (keyword-only; ``metadata`` stays free for the user):

    * ``stream``: a file object; default ``sys.stderr``, looked up at each call;
    * ``logger``: a ``logging.Logger`` or logger name; when given, lines go to
      ``logger.log(level, line)`` instead of a stream;
    * ``modules``: module names (or modules); only calls of functions defined in them
      or their submodules are shown;
    * ``functions``: only calls of these functions are shown (with ``modules``: either);
    * ``exclude``: functions never shown (e.g. ``(getattr,)``);
    * ``results``: also print ``-> result`` (or ``!! Error(...)``) after each shown call;
    * ``limit``: cut each argument's text at this many characters (0: never);
    * ``indent``: the text repeated once per level.

    Indentation counts shown calls only, so a filtered log is still a tree.
    """

    def __init__(self, metadata: Any = None, pass_: Callable[..., Any] | None = None, *,
                 stream: IO[str] | None = None, logger: logging.Logger | str | None = None,
                 level: int = logging.INFO, modules: str | types.ModuleType | Iterable[str | types.ModuleType] = (),
                 functions: Iterable[Any] = (), exclude: Iterable[Any] = (), results: bool = False,
                 limit: int = 60, indent: str = "  ") -> None:
        super().__init__(metadata, pass_)
        listed: Iterable[str | types.ModuleType] = (
            (modules,) if isinstance(modules, (str, types.ModuleType)) else modules)
        self.stream = stream
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level
        self.modules: tuple[str, ...] = tuple(m.__name__ if isinstance(m, types.ModuleType) else m
                                              for m in listed)
        self.functions = tuple(functions)
        self.exclude = tuple(exclude)
        self.results = results
        self.limit = limit
        self.indent = indent
        self.depth = 0

    def shows(self, f: Any) -> bool:
        """Whether a call of ``f`` is printed under the filters."""
        if _member(f, self.exclude):
            return False
        if not (self.modules or self.functions):
            return True
        if _member(f, self.functions):
            return True
        mod = module_of(f)
        return any(mod == m or mod.startswith(m + ".") for m in self.modules)

    def emit(self, line: str) -> None:
        """Write one line to the logger or the stream."""
        if self.logger is not None:
            self.logger.log(self.level, line)
        else:
            stream = self.stream if self.stream is not None else sys.stderr
            stream.write(line + "\n")

    @primitive()
    def _log_call(self, f: Any, /, *args: Any, **kwargs: Any) -> Any:
        if not self.shows(f):
            return overdub.recurse(self, f, *args, **kwargs)
        pad = self.indent * self.depth
        self.emit(pad + call_text(f, args, kwargs, self.limit))
        self.depth += 1
        try:
            out = overdub.recurse(self, f, *args, **kwargs)
        except BaseException as exc:
            if self.results:
                self.emit(pad + "!! %s" % describe(exc, self.limit))
            raise
        finally:
            self.depth -= 1
        if self.results:
            self.emit(pad + "-> " + describe(out, self.limit))
        return out


def _member(f: Any, fs: Iterable[Any]) -> bool:
    """Whether ``f`` (or the function of a bound method) is one of ``fs``, by identity."""
    inner = getattr(f, "__func__", None)
    return any(f is g or (inner is not None and inner is g) for g in fs)
