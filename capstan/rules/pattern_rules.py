"""What sparsity detection needs to know about each primitive (``capstan.sparsity``).

Two tables, filled here for the entries of the other rule tables and open to users
through :func:`~capstan.rules.registry.defpattern`:

``PATTERN[f]``
    how the index sets of ``f``'s result follow from its arguments' (which inputs
    each result element depends on).  Entries of ``PARTIALS`` (``defderiv``) need
    none: they are elementwise with broadcasting, and an argument whose partial is
    ``None`` contributes nothing.  The kinds:

    ``"moves"``   the result's elements are the arguments' elements moved, copied or
                  zeroed (``reshape``, ``concatenate``, ``roll``, ``triu``...): ``f`` is
                  run on arrays of element numbers to see where each one goes;
    ``"same"``    the first argument's elements, same order (``asarray``, ``copy``,
                  ``astype``, ``real`` of a real array);
    ``"reduce"``  each result element joins the elements reduced into it (``sum``,
                  ``max``, ``prod``, ``var``: an ``axis`` argument or keyword);
    ``"along"``   each result element depends on the whole line along ``axis``
                  (``sort``, ``cumsum``: conservative, never too sparse);
    ``"matmul"``  ``@``, ``dot``, ``inner`` (1-D and 2-D operands; higher ones dense);
    ``"elementwise"`` like a ``defderiv`` entry, every argument with a derivative
                  (``abs``, ``np.angle``: entries with forward and reverse rules).

    A function with a derivative rule but no pattern makes every result element depend
    on every input element of its arguments (a one-time warning says so when the result
    has more than one element: a single number depending on everything is no loss).
``SECOND[f]``
    for Hessian patterns: the pairs ``(i, j)`` of argument positions whose second
    derivative may be nonzero (``()``: ``f`` is linear; ``((0, 1),)``: only the cross
    term, as for ``*``).  A function not listed is taken to have all of them.
"""
import builtins
import math
import operator

import numpy as np

from .registry import JVP, PARTIALS, PATTERN, defpattern

_LINEAR = [operator.add, operator.sub, operator.neg, operator.pos, operator.iadd, operator.isub,
           np.add, np.subtract, np.negative, np.positive, np.real, np.imag, np.conj, np.conjugate,
           builtins.abs, np.abs, np.absolute, np.fabs, np.maximum, np.minimum, np.fmax, np.fmin,
           np.clip, np.where, np.copysign, math.fabs, math.copysign]
_BILINEAR = [operator.mul, operator.imul, np.multiply]
_QUOTIENT = [operator.truediv, operator.itruediv, np.divide, np.true_divide]

for _f in _LINEAR:
    if _f in PARTIALS or _f in JVP:
        defpattern(_f, None if _f in PARTIALS else "elementwise", second=())
for _f in _BILINEAR:
    defpattern(_f, None, second=((0, 1),))
for _f in _QUOTIENT:
    defpattern(_f, None, second=((0, 1), (1, 1)))

_BY_NAME = {
    "elementwise": {"abs", "absolute", "angle", "phase"},
    "moves": {"reshape", "ravel", "squeeze", "expand_dims", "transpose", "swapaxes", "moveaxis",
              "concatenate", "stack", "broadcast_to", "flip", "roll", "repeat", "tril", "triu",
              "diagonal", "diag", "take", "matrix_transpose", "_scatter"},
    "same": {"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "copy", "astype",
             "float64", "float32", "float16", "longdouble", "complex128", "complex64", "real",
             "conjugate", "conj"},
    "reduce": {"sum", "mean", "prod", "max", "min", "amax", "amin", "var", "std", "_l2norm", "_pnorm", "exact_sum"},
    "along": {"sort", "partition", "cumsum", "cumprod"},
    "matmul": {"dot", "inner", "matmul", "imatmul"},
}
_LINEAR_KINDS = {"moves", "same"}
_LINEAR_NAMES = {"sum", "mean", "max", "min", "amax", "amin", "exact_sum", "sort", "partition", "cumsum",
                 "real", "conjugate", "conj"}

for _f in list(JVP):
    if _f in PARTIALS:
        continue
    _name = getattr(_f, "__name__", None)
    for _kind, _names in _BY_NAME.items():
        if _name in _names:
            if _f in PATTERN:  # (set above, with its second-order pairs)
                break
            if _kind in _LINEAR_KINDS or _name in _LINEAR_NAMES or _name in ("abs", "absolute"):
                _second = ()
            elif _kind == "matmul":
                _second = ((0, 1),)
            else:
                _second = None
            defpattern(_f, _kind, second=_second)
            break
