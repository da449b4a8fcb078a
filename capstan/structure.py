"""Nested inputs and outputs: lists, tuples, namedtuples, dicts and dataclasses of
numbers and arrays, taken apart into leaves and put back together."""
import dataclasses
import numbers
from functools import partial
from typing import Any, Callable, Iterator

#: puts a leaf or a structure back together from an iterator over new leaves
Build = Callable[[Iterator[Any]], Any]

import numpy as np

from overdub import Tagged


def flatten(x: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """``(leaves, rebuild)`` where ``rebuild(new_leaves)`` makes a structure like ``x``."""
    if type(x) is float or (type(x) is Tagged and type(x._value) is float):
        return [x], single  # (the commonest leaves, taken without the walk)
    if (type(x) is tuple or type(x) is list) and all(  # (a tuple of points, a list of results)
            type(e) in _NUMBERS or (type(e) is Tagged and type(e._value) in _NUMBERS) for e in x):
        return list(x), partial(_sequence_of, type(x), len(x))
    leaves: list[Any] = []
    build = _flatten(x, leaves)
    return leaves, lambda new: build(iter(new))


_NUMBERS = (float, np.float64)


def single(new: Any) -> Any:
    """``rebuild`` of a single leaf (a float, for one): the first new leaf."""
    return next(iter(new))


def _sequence_of(kind: type, n: int, new: Any) -> Any:
    """``rebuild`` of a tuple or list of ``n`` leaves."""
    it = iter(new)
    return kind(next(it) for _ in range(n))


def _flatten(x: Any, leaves: list[Any]) -> Build:
    tx = type(x)
    if tx is list or tx is tuple:
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
    return lambda it: next(it)


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
