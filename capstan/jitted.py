"""Functions a JIT compiled from Python source (numba's ``@jit``/``@njit`` and
``@vectorize``): differentiated through the Python function they were compiled from.

Their machine code reads the numbers and cannot carry a derivative; the Python function
they keep (``py_func``) computes the same values, and capstan steps into it as into any
Python function -- as Cassette differentiates a Julia method by rewriting its code, not
its native output.  numba is never imported here: a callable is recognised by its class.
"""
import types

import numpy as np

from .losses import NoRuleError


def _numba_class(obj, name):
    tp = type(obj)
    return any(c.__name__ == name and (c.__module__ or "").startswith("numba.") for c in tp.__mro__)


def python_of(f):
    """The Python function a numba dispatcher (``@jit``, ``@njit``) runs compiled, or None."""
    if not _numba_class(f, "Dispatcher"):
        return None
    py_func = getattr(f, "py_func", None)
    return py_func if type(py_func) is types.FunctionType else None


def elementwise_of(ufunc):
    """For a numba ``@vectorize`` ufunc (``DUFunc``): a callable applying its Python kernel
    element by element with NumPy's broadcasting (``np.vectorize``), as the ufunc's
    ``__call__`` does; None for anything else."""
    if not _numba_class(ufunc, "DUFunc"):
        return None
    py_func = getattr(getattr(ufunc, "_dispatcher", None), "py_func", None)
    if type(py_func) is not types.FunctionType:
        return None
    name = getattr(ufunc, "__name__", py_func.__name__)

    def elementwise(*args, **kwargs):
        if kwargs:
            raise NoRuleError("capstan: the numba ufunc %s is differentiated as %s(*arrays) through its "
                              "Python kernel; its keywords (%s) are not: call it without them"
                              % (name, name, ", ".join(sorted(kwargs))))
        return np.vectorize(py_func)(*args)

    return elementwise
