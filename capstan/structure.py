"""Nested inputs and outputs: lists, tuples, namedtuples, dicts and dataclasses of
numbers and arrays, taken apart into leaves and put back together."""
import dataclasses
import numbers
from functools import partial
from itertools import islice
from typing import Any, Callable, Iterator

#: puts a leaf or a structure back together from an iterator over new leaves
Build = Callable[[Iterator[Any]], Any]

import numpy as np

from overdub import Tagged
from overdub.tagging import value_of


def flatten(x: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """``(leaves, rebuild)`` where ``rebuild(new_leaves)`` makes a structure like ``x``."""
    if type(x) is float or (type(x) is Tagged and type(value_of(x)) is float):
        return [x], single  # (the commonest leaves, taken without the walk)
    if type(x) is tuple or type(x) is list:  # (a tuple of points, a list of results)
        kinds = set(map(type, x))
        if kinds <= _NUMBER_SET or (kinds <= _NUMBER_SET_TAGGED and all(
                type(e) is not Tagged or type(value_of(e)) in _NUMBERS for e in x)):
            return list(x), partial(_sequence_of, type(x), len(x))
    leaves: list[Any] = []
    build = _flatten(x, leaves)
    return leaves, lambda new: build(iter(new))


_NUMBERS = (float, np.float64)
_NUMBER_SET = frozenset(_NUMBERS)
_NUMBER_SET_TAGGED = frozenset(_NUMBERS + (Tagged,))
_FLOAT_SET = frozenset((float,))
_PLAIN_LEAVES = frozenset((float, int, complex, np.float64))


def all_floats(xs: Any) -> bool:
    """Whether every element of the list or tuple ``xs`` is a plain float."""
    return set(map(type, xs)) <= _FLOAT_SET


def single(new: Any) -> Any:
    """``rebuild`` of a single leaf (a float, for one): the first new leaf."""
    return next(iter(new))


def is_flat(rebuild: Callable[[Any], Any]) -> bool:
    """Whether ``rebuild`` (from ``flatten``) is that of a flat list or tuple of numbers."""
    return type(rebuild) is partial and rebuild.func is _sequence_of


def _sequence_of(kind: type, n: int, new: Any) -> Any:
    """``rebuild`` of a tuple or list of ``n`` leaves."""
    return _next_n(kind, n, iter(new))


#: exact types that are always leaves (no container, namedtuple, dict or dataclass is one)
_LEAVES = frozenset((float, int, complex, bool, np.ndarray, np.float64, np.float32))


def _next_n(kind: type, n: int, it: Iterator[Any]) -> Any:
    """The build of a list or tuple of ``n`` leaves: the next ``n`` new leaves."""
    return kind(islice(it, n))


def _flatten(x: Any, leaves: list[Any]) -> Build:
    tx = type(x)
    if tx in _LEAVES:  # (the commonest leaves first: the rebuild of a leaf is next(it))
        leaves.append(x)
        return next
    if tx is list or tx is tuple:
        if set(map(type, x)) <= _LEAVES:  # (a list of numbers or arrays: one step)
            leaves.extend(x)
            return partial(_next_n, tx, len(x))
        parts = [_flatten(e, leaves) for e in x]
        return lambda it: tx(p(it) for p in parts)
    if isinstance(x, tuple) and hasattr(tx, "_fields"):  # namedtuple
        parts = [_flatten(e, leaves) for e in x]
        return lambda it: tx(*(p(it) for p in parts))
    if isinstance(x, dict):
        keys = list(x)
        parts = [_flatten(x[k], leaves) for k in keys]
        return lambda it: tx(zip(keys, [p(it) for p in parts]))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        names = [f.name for f in dataclasses.fields(x) if f.init]
        parts = [_flatten(getattr(x, n), leaves) for n in names]
        return lambda it: dataclasses.replace(x, **{n: p(it) for n, p in zip(names, parts)})
    leaves.append(x)
    return next


def all_finite(tree: Any) -> bool:
    """Whether every number of ``tree`` (a point, a direction, an output: numbers, arrays,
    structures of them, values of any differentiation) is finite; what is no number has
    nothing to say."""
    for leaf in flatten(tree)[0]:
        while type(leaf) is Tagged:
            leaf = value_of(leaf)
        if type(leaf) is float:
            if leaf - leaf != 0:
                return False
        elif isinstance(leaf, (complex, np.ndarray, np.generic)):
            try:
                if not np.all(np.isfinite(leaf)):
                    return False
            except TypeError:  # (not numeric)
                pass
    return True


def aligned(like: Any, x: Any, fname: str, what: str, of: str) -> Any:
    """The leaves of ``x`` (tangents, cotangents), nested in lists, in the order in which
    :func:`flatten` walks ``like`` (the points, the outputs) for the entry point ``fname``: a
    dict's entries taken by key, so that a dict in another key order pairs as named (leaves
    pair by position); a structure that differs, or a leaf that is no number, is refused
    naming ``what`` and ``of``."""
    tl = type(like)
    if isinstance(like, dict):
        if not isinstance(x, dict) or set(x) != set(like):
            raise ValueError("capstan.%s: %s must have the structure of %s: a dict with the keys %s, "
                             "got %s" % (fname, what, of, sorted(map(str, like)), _described(x)))
        return [aligned(like[k], x[k], fname, what, of) for k in like]  # (only the leaves' order counts)
    if tl is list or tl is tuple or (isinstance(like, tuple) and hasattr(tl, "_fields")):
        if not isinstance(x, (list, tuple)) or len(x) != len(like):
            raise ValueError("capstan.%s: %s must have the structure of %s: a sequence of %d, got %s"
                             % (fname, what, of, len(like), _described(x)))
        if set(map(type, x)) <= _PLAIN_LEAVES and set(map(type, like)) <= _PLAIN_LEAVES:
            return x  # (numbers against numbers: nothing to pair by key)
        return [aligned(a, b, fname, what, of) for a, b in zip(like, x)]
    if dataclasses.is_dataclass(like) and not isinstance(like, type):
        if type(x) is not tl:
            raise ValueError("capstan.%s: %s must have the structure of %s: a %s, got %s"
                             % (fname, what, of, tl.__name__, _described(x)))
        return x
    if x is None or isinstance(x, Tagged):
        return x
    if isinstance(x, (list, tuple, dict)) and not isinstance(like, np.ndarray):
        raise ValueError("capstan.%s: %s must have the structure of %s: a number, got %s"
                         % (fname, what, of, _described(x)))
    if isinstance(x, (str, bytes)) or not (isinstance(x, (numbers.Number, np.ndarray, list, tuple))):
        raise TypeError("capstan.%s: %s must be numbers or arrays of numbers, got %s" % (fname, what, _described(x)))
    if isinstance(x, np.ndarray) and x.dtype.kind not in "biufc":
        raise TypeError("capstan.%s: %s must be numbers or arrays of numbers, got an array of dtype %s"
                        % (fname, what, x.dtype))
    return x


def _described(x: Any) -> str:
    if isinstance(x, dict):
        return "a dict with the keys %s" % sorted(map(str, x))
    if isinstance(x, (list, tuple)):
        return "a %s of %d" % (type(x).__name__, len(x))
    return "%s %r" % (type(x).__name__, x) if isinstance(x, (str, bytes)) else type(x).__name__


def is_differentiable(x: Any) -> bool:
    """Whether a leaf can carry a derivative: a real or complex float or float array."""
    tx = type(x)
    if tx is np.ndarray:  # (the common cases first: an array, a float)
        return x.dtype.kind in "fc"
    if tx is float:
        return True
    if isinstance(x, bool):
        return False
    if isinstance(x, (float, complex, np.inexact)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def check_leaf(x: Any, fname: str, argname: str = "x") -> None:
    """Reject what cannot be differentiated with a clear ``TypeError``."""
    if isinstance(x, (str, bytes)) or not (is_differentiable(x) or isinstance(x, numbers.Number)
                                           or isinstance(x, np.ndarray)):
        raise TypeError("capstan.%s: cannot differentiate with respect to %s of type %s; "
                        "inputs must be real or complex numbers or NumPy float arrays "
                        "(or lists, tuples, dicts and dataclasses of them)"
                        % (fname, argname, type(x).__name__))


def zeros_like(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.zeros_like(x, dtype=x.dtype if x.dtype.kind in "fc" else float)
    if isinstance(x, complex):
        return 0j
    return 0.0
