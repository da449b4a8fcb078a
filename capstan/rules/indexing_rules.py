"""The reverse steps of reading and writing array elements (``a[k]``, ``a[k] = v``).

Forward mode handles subscripts in the contexts themselves; reverse mode's backward
pass calls these two functions.  They live here, outside the opaque engine modules,
so that an enclosing differentiation (``hessian`` = forward over reverse) sees and
differentiates their arithmetic."""
import operator

import numpy as np

from .registry import VJP, unbroadcast


def getitem_back(g, shape, dtype, k):
    """Cotangent of the array read by ``a[k]`` (shape and dtype of ``a``)."""
    rule = VJP.get(operator.getitem)
    if rule is not None:
        return rule(g, None, np.zeros(shape, dtype=dtype), k)[0]
    out = np.zeros(shape, dtype=np.result_type(dtype, g))
    np.add.at(out, k, g)
    return out


def setitem_back(g, vshape, k, vdtype=np.float64):
    """Cotangents of ``(old array, v)`` for ``a[k] = v`` (``v`` of shape ``vshape`` and
    dtype ``vdtype``: a complex ``v`` keeps the imaginary part of its cotangent).  Where
    an integer-array index names a position more than once, only the write that stays
    there (NumPy's last) gets its cotangent: the others were overwritten."""
    rest = np.array(g, copy=True)
    part = np.array(rest[k], copy=True)  # (a copy: rest[k] may be a view, zeroed next)
    if _may_repeat(k):
        part = np.where(_surviving(np.shape(g), k), part, 0)
    rest[k] = 0
    return rest, unbroadcast(part, np.zeros(vshape, dtype=vdtype))


def _may_repeat(k):
    """Whether index ``k`` holds an integer array (or list), which may name a position twice."""
    for part in (k if type(k) is tuple else (k,)):
        if isinstance(part, (list, np.ndarray)) and np.asarray(part).dtype.kind in "iu" and np.size(part) > 1:
            return True
    return False


def _surviving(shape, k):
    """For each element ``a[k] = v`` writes (in the shape of ``a[k]``), whether it is the
    one left at its position: the same assignment, made with the elements' numbers."""
    selected = np.shape(np.empty(shape, dtype=np.int8)[k])
    ids = np.arange(int(np.prod(selected)), dtype=np.intp).reshape(selected)
    owner = np.full(shape, -1, dtype=np.intp)
    owner[k] = ids
    return owner[k] == ids
