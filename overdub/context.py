"""The context type: hooks, primitives, metadata and the tag identity.

A context is an ordinary class.  Overriding a method changes what happens to
every call inside ``overdub(ctx, f, ...)``:

* ``prehook(f, /, *args, **kwargs)`` runs before each call;
* ``posthook(output, f, /, *args, **kwargs)`` runs after it, with its result;
* ``@primitive(f, *argtypes)`` methods replace calls of ``f`` whose positional
  arguments match ``argtypes``; ``@primitive()`` replaces every call;
* ``canrecurse`` / ``fallback`` decide whether to step into a callee's body
  and how to call what is not stepped into.

Hooks are always *called* positionally, so declare ``f`` (and ``output``)
positional-only: user code may pass keyword arguments named ``f``.
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
from typing import Any, Callable, TypeVar

from bytecode import Bytecode

from .tagging import PLAIN_PROTOCOLS, register_context_type

__all__ = ["Context", "context", "primitive"]

#: a pass: ``(ctx_type, bytecode.Bytecode) -> bytecode.Bytecode``
Pass = Callable[[type, Bytecode], Bytecode]
_F = TypeVar("_F", bound=Callable[..., Any])
_Self = TypeVar("_Self", bound="Context")


#: the dispatcher's default ``canrecurse`` and ``fallback``; it fills this in when imported
#: (the context module imports nothing of the dispatcher's)
DEFAULTS: dict[str, Any] = {}


class _Wildcard:
    def __repr__(self) -> str:
        return "<any function>"


#: registry key of ``@primitive()`` methods, which apply to every call
ANY = _Wildcard()


class primitive:
    """Mark a context method as a contextual primitive for ``f``.

    ``@primitive(math.sin)`` replaces ``math.sin(x)`` inside the context by
    ``self.method(x)``; ``@primitive(operator.mul, Tagged)`` only when the
    first argument is a value tagged by this context (``isinstance`` checks on
    the positional arguments; missing types match anything).  Several
    registrations for one function are tried most specific first.
    ``@primitive()`` registers a wildcard ``(self, f, /, *args, **kwargs)`` (declare
    ``self, f`` positional-only: the program's keyword arguments arrive in ``kwargs``).

    ``total=True`` (for operators such as ``operator.mul``): the method is called for
    *every* use of the operator whose operands are not all builtin values its argument
    types leave to CPython -- whatever their types -- and handles the ones it does not
    care about itself.  It saves a dispatch step per operation in hot loops.
    """

    def __init__(self, *spec: Any, total: bool = False) -> None:
        self.total = bool(total)
        if spec:
            f, *argtypes = spec
            if not callable(f):
                raise TypeError("@primitive(f, *argtypes) needs a callable f, got %r" % (f,))
            for t in argtypes:
                if not isinstance(t, (type, tuple)):
                    raise TypeError("@primitive(%s, ...): argument types must be classes, got %r"
                                    % (getattr(f, "__name__", f), t))
            self.target: Any = f
            self.argtypes: tuple[Any, ...] = tuple(argtypes)
        else:
            self.target, self.argtypes = ANY, ()

    def __call__(self, method: _F) -> _F:
        if not callable(method):
            raise TypeError("@primitive must decorate a method, got %r" % (method,))
        marks = getattr(method, "__overdub_primitives__", ())
        try:
            setattr(method, "__overdub_primitives__", marks + ((self.target, self.argtypes, self.total),))
        except AttributeError:
            raise TypeError("@primitive cannot mark %r; decorate a plain function" % (method,))
        return method


class _ContextType(type):
    """Metaclass that notices when a context class changes after first use."""

    def __setattr__(cls, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        _forget_specs(cls)

    def __delattr__(cls, name: str) -> None:
        super().__delattr__(name)
        _forget_specs(cls)


def _forget_specs(cls: type) -> None:
    for klass in [cls, *_all_subclasses(cls)]:
        spec = klass.__dict__.get("_overdub_spec_")
        if spec is not None:
            spec.stale = True  # (runtimes made from it notice)
            type.__delattr__(klass, "_overdub_spec_")


def _all_subclasses(cls: type) -> list[type]:
    out: list[type] = []
    subs: list[type] = type.__subclasses__(cls)
    for sub in subs:
        out.append(sub)
        out.extend(_all_subclasses(sub))
    return out


def _slot_names(cls: type) -> list[str]:
    """The instance slots a context class and its bases declare (``__dict__`` aside)."""
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


def _check_pass(ctx_type: type, pass_: Any, call: str = "") -> None:
    """A TypeError naming the call (``Ctx(pass_=...)``) given a pass that is not callable."""
    if pass_ is not None and not callable(pass_):
        raise TypeError("%s(metadata=None, pass_=None): pass_ must be a callable (ctx_type, "
                        "bytecode.Bytecode) -> bytecode.Bytecode, got %r"
                        % (call or ctx_type.__name__, pass_))


class Context(metaclass=_ContextType):
    """Base class of every context.  ``Ctx(metadata=None, pass_=None)``.

    ``metadata`` is the user's state (a counter, a trace, a tape...).
    ``pass_`` is a callable ``(ctx_type, bytecode.Bytecode) -> bytecode.Bytecode``
    run on every function body before it is routed (see ``overdub.passes``).
    """

    # the tag identity in a slot of its own: the C kernels read it once per operation
    # (instances keep a ``__dict__`` for everything else, the user's attributes included)
    __slots__ = ("_tagkey", "__dict__", "__weakref__")

    def __init__(self, metadata: Any = None, pass_: Pass | None = None) -> None:
        _check_pass(type(self), pass_)
        self.metadata = metadata
        self.pass_ = pass_
        self._tagkey = object()  # tag identity: shared with similar() contexts only
        self._runtime: Any = None

    def similar(self: _Self, metadata: Any = None, pass_: Pass | None = None) -> _Self:
        """A new context of the same type sharing this one's tag identity
        (Cassette's ``similarcontext``); ``pass_`` defaults to this one's."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        for name in _slot_names(type(self)):
            try:
                setattr(new, name, getattr(self, name))
            except AttributeError:  # (a slot never set)
                pass
        new.__dict__.pop("_overdub_nested", None)  # (a runtime is made per instance)
        new.metadata = metadata
        _check_pass(type(self), pass_, "ctx.similar")
        new.pass_ = self.pass_ if pass_ is None else pass_
        new._runtime = None
        return new

    def renew_tags(self) -> None:
        """Give this context a fresh tag identity.  Values it tagged so far become plain
        values -- to it and to every other context -- while its compiled machinery is
        kept: a cheap way to reuse one context for many independent runs (an AD system
        differentiating many times) without values of one run being taken for the
        next one's.  Contexts made by ``similar()`` keep the identity they had."""
        self._tagkey = object()

    def prehook(self, f: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Called before every call inside the context.  Override to observe."""

    def posthook(self, output: Any, f: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Called after every call inside the context with its result."""

    def canrecurse(self, f: Any, /, *args: Any, **kwargs: Any) -> bool:
        """Whether ``recurse`` steps into ``f``'s body (default: it has one)."""
        return bool(DEFAULTS["canrecurse"](self, f, args))

    def fallback(self, f: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Call ``f`` plainly, with this context's tags removed from the arguments."""
        return DEFAULTS["fallback"](self, f, args, kwargs)

    def escape(self, protocol: str, x: Any, /, *args: Any) -> Any:
        """A value this context tagged is leaving for code the context does not see: C
        code, or Python code called from C, invoked one of its protocols on it
        (``"__float__"``, ``"__index__"``, ``"__bool__"``, ``"__str__"``, ``"__format__"``,
        ``"__getattr__"``, ``"__reduce_ex__"``... with their arguments).  Return what that
        protocol returns.  The default answers for the untagged value; a differentiation
        context refuses here the conversions that would drop a derivative."""
        return PLAIN_PROTOCOLS[protocol](x._value, *args)

    def __repr__(self) -> str:
        return "%s(metadata=%r)" % (type(self).__name__, self.metadata)


register_context_type(Context)


def context(cls: type) -> type[Context]:
    """Class decorator: turn a plain class into a :class:`Context` subclass."""
    if not isinstance(cls, type):
        raise TypeError("@context decorates a class, got %r" % (cls,))
    if issubclass(cls, Context):
        return cls
    body = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
    return type(cls.__name__, (cls.__bases__ if cls.__bases__ != (object,) else ()) + (Context,), body)


_HOOKS = ("prehook", "posthook", "canrecurse", "fallback")


class Spec:
    """What a context type overrides; recomputed when the class changes."""

    __slots__ = ("key", "prehook", "posthook", "canrecurse", "fallback", "primitives", "wildcard",
                 "empty", "totals", "stale")

    def __init__(self, cls: type, key: Any) -> None:
        self.key = key
        self.stale = False
        for name in _HOOKS:
            setattr(self, name, getattr(cls, name) is not getattr(Context, name))
        table: dict[Any, list[tuple[tuple[Any, ...], Any]]] = {}
        totals: dict[Any, Any] = {}
        seen: set[str] = set()
        for klass in cls.__mro__:
            for name, value in vars(klass).items():
                if name in seen:
                    continue
                seen.add(name)
                for target, argtypes, total in getattr(value, "__overdub_primitives__", ()):
                    table.setdefault(target, []).append((argtypes, value))
                    if total:
                        totals.setdefault(target, value)
        wild = table.pop(ANY, None)
        self.wildcard = wild[0][1] if wild else None
        for rules in table.values():  # most specific first: more types, then subclasses first
            rules.sort(key=_specificity)
        self.primitives = table
        self.totals = totals
        self.empty = not (any(getattr(self, n) for n in _HOOKS) or table or wild)


def _specificity(rule: tuple[tuple[Any, ...], Any]) -> tuple[int, int]:
    argtypes = rule[0]
    depth = 0
    for t in argtypes:
        ts = t if isinstance(t, tuple) else (t,)
        depth += min(len(x.__mro__) for x in ts) if ts else 0
    return (-len(argtypes), -depth)


def spec_of(cls: type) -> Spec:
    """The cached :class:`Spec` of a context class (dropped when the class changes)."""
    try:
        spec: Spec = cls.__dict__["_overdub_spec_"]
        return spec
    except KeyError:
        spec = Spec(cls, None)
        type.__setattr__(cls, "_overdub_spec_", spec)
        return spec
