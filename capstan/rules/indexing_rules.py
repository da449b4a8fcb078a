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
    dtype ``vdtype``: a complex ``v`` keeps the imaginary part of its cotangent)."""
    rest = np.array(g, copy=True)
    part = np.array(rest[k], copy=True)  # (a copy: rest[k] may be a view, zeroed next)
    rest[k] = 0
    return rest, unbroadcast(part, np.zeros(vshape, dtype=vdtype))
