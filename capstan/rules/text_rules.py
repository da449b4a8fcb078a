"""Rules for functions that write numbers as text: ``json.dumps`` and ``json.dump``.

Text carries no derivative: JSON's C encoder would reject a differentiated number
(it is not a ``float`` to C), so these functions run on the plain values of the
dicts, lists and tuples they are given (``defimpl``).  Reading the text back gives
plain numbers.
"""
import json

from ..adcontext import raw
from .registry import defimpl


def _plain(tree):
    """``tree`` with its differentiated numbers replaced by their plain values."""
    if isinstance(tree, dict):
        return {_plain(k): _plain(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_plain(v) for v in tree]
    return raw(tree)


defimpl(json.dumps, lambda obj, *args, **kwargs: json.dumps(_plain(obj), *args, **kwargs))
defimpl(json.dump, lambda obj, fp, *args, **kwargs: json.dump(_plain(obj), fp, *args, **kwargs))
