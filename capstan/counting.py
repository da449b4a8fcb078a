"""``CountCtx``: count the calls made inside a context, optionally only those that get
an argument of given types (Cassette's counting example).

    >>> ctx = CountCtx((int, str))
    >>> overdub.overdub(ctx, lambda: list(map(str, range(1, 11))))   # doctest: +SKIP
    >>> ctx.count, ctx.counts
    (11, Counter({'str': 10, 'range': 1}))

It only overrides ``prehook``: overdub inlines a prehook-only context into its
dispatchers (no posthook, no primitive lookup), which is the cheapest way to observe
every call, operator and attribute access.
"""
from collections import Counter
from typing import Any, Callable

from overdub import Context

from .printing import name_of

__all__ = ["CountCtx"]


class CountCtx(Context):
    """Count calls (operators and attribute loads included) that have at least one
    positional or keyword argument of the types in ``metadata``.

    ``metadata``: a type or a tuple of types; ``None`` (the default) counts every call.
    ``ctx.calls`` is a Counter by function object, ``ctx.counts`` one by name,
    ``ctx.count`` the total; ``ctx.reset()`` starts again.  Counts add up over runs.
    """

    def __init__(self, metadata: type | tuple[Any, ...] | list[Any] | None = None,
                 pass_: Callable[..., Any] | None = None) -> None:
        if isinstance(metadata, list):
            metadata = tuple(metadata)
        if metadata is not None and not _is_types(metadata):
            raise TypeError("CountCtx(metadata): a type, a tuple of types or None, got %r" % (metadata,))
        super().__init__(metadata, pass_)
        self.calls: Counter[Any] = Counter()

    def prehook(self, f: Any, /, *args: Any, **kwargs: Any) -> None:
        types = self.metadata
        if types is not None and not (any(isinstance(a, types) for a in args)
                                      or (kwargs and any(isinstance(v, types) for v in kwargs.values()))):
            return
        try:
            self.calls[f] += 1
        except TypeError:  # an unhashable callable: count it under its name
            self.calls[name_of(f)] += 1

    @property
    def count(self) -> int:
        """How many calls were counted."""
        return sum(self.calls.values())

    @property
    def counts(self) -> Counter[str]:
        """Counts by function name (functions of the same name add up)."""
        out: Counter[str] = Counter()
        for f, n in self.calls.items():
            out[f if isinstance(f, str) else name_of(f)] += n
        return out

    def reset(self) -> None:
        """Forget every count."""
        self.calls.clear()

    def __repr__(self) -> str:
        return "CountCtx(%r, count=%d)" % (self.metadata, self.count)


def _is_types(t: Any) -> bool:
    return isinstance(t, type) or (isinstance(t, tuple) and all(_is_types(x) for x in t))
