"""Cassette's counting example: count the calls made inside a context, here by the
type of their arguments (metadata holds the types to look for and the counts).

    python examples/counting_ctx.py
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402


class CountByType(overdub.Context):
    """metadata = (types, Counter): counts, per function, the calls that get at least
    one positional or keyword argument of one of ``types``."""

    def prehook(self, f, /, *args, **kwargs):
        types, counts = self.metadata
        if any(isinstance(a, types) for a in args + tuple(kwargs.values())):
            counts[getattr(f, "__name__", repr(f))] += 1


class CountAll(overdub.Context):
    """metadata: a Counter of every call, operator and attribute access, by name."""

    def prehook(self, f, /, *args, **kwargs):
        self.metadata[getattr(f, "__name__", repr(f))] += 1


if __name__ == "__main__":
    ctx = CountByType(metadata=((int, str), collections.Counter()))
    result = overdub.overdub(ctx, lambda: list(map(str, range(1, 11))))
    print("list(map(str, range(1, 11))) =", result)
    print("calls with an int or str argument:", dict(sorted(ctx.metadata[1].items())))
    print("total:", sum(ctx.metadata[1].values()))

    everything = CountAll(metadata=collections.Counter())
    text = overdub.overdub(everything, json.dumps, {"a": [1, 2.5, None], "b": {"c": "d"}}, indent=1)
    print("json.dumps made %d routed calls; the most frequent:" % sum(everything.metadata.values()))
    for name, n in everything.metadata.most_common(5):
        print("  %-12s %d" % (name, n))
    assert text == json.dumps({"a": [1, 2.5, None], "b": {"c": "d"}}, indent=1)
