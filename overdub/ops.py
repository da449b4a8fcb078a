"""The operator tables: which ``operator`` function, special methods and symbol each
routed operator stands for, and which builtin types CPython handles entirely in C.

One table for everything that needs them: the rewriter (``rewrite.py``) names the
operator a ``BINARY_OP``/``COMPARE_OP`` stands for, the recurse steps
(``semantics.py``) re-state CPython's dunder protocol from the method names, the
generated slots (``codegen.py``) inline CPython's own operator from the symbols,
and capstan reads them too.  This module imports nothing of overdub's, so each of
those can depend on it without depending on one another.
"""
import operator
from typing import Any, Callable

__all__ = ["TypeSet", "NATIVE", "SEQUENCES", "BINARY", "INPLACE", "COMPARE", "UNARY",
           "SYMBOLS", "UNARY_SYMBOLS", "OPERATOR_OF"]


class TypeSet(set):  # type: ignore[type-arg]
    """A set of types, hashable by identity (it sits in code objects' constants)."""

    __hash__ = object.__hash__  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return self is other


#: exact types whose special methods are all implemented in C (NumPy's scalar and array
#: types join once NumPy is imported: ``semantics.add_numpy_types``)
NATIVE = TypeSet({int, float, complex, bool, str, bytes, bytearray, list, tuple, dict, set,
                  frozenset, type(None), range, slice, memoryview})
#: C sequences whose ``+``/``*`` come from the sequence protocol, tried after the number slots
SEQUENCES = (list, tuple, str, bytes, bytearray)

#: bytecode BinaryOp name -> (operator function, method, reflected method, symbol in
#: CPython's "unsupported operand type(s) for ..." message)
BINARY: dict[str, tuple[Callable[..., Any], str, str, str]] = {
    "ADD": (operator.add, "__add__", "__radd__", "+"),
    "SUBTRACT": (operator.sub, "__sub__", "__rsub__", "-"),
    "MULTIPLY": (operator.mul, "__mul__", "__rmul__", "*"),
    "MATRIX_MULTIPLY": (operator.matmul, "__matmul__", "__rmatmul__", "@"),
    "TRUE_DIVIDE": (operator.truediv, "__truediv__", "__rtruediv__", "/"),
    "FLOOR_DIVIDE": (operator.floordiv, "__floordiv__", "__rfloordiv__", "//"),
    "REMAINDER": (operator.mod, "__mod__", "__rmod__", "%"),
    "POWER": (operator.pow, "__pow__", "__rpow__", "** or pow()"),
    "LSHIFT": (operator.lshift, "__lshift__", "__rlshift__", "<<"),
    "RSHIFT": (operator.rshift, "__rshift__", "__rrshift__", ">>"),
    "AND": (operator.and_, "__and__", "__rand__", "&"),
    "OR": (operator.or_, "__or__", "__ror__", "|"),
    "XOR": (operator.xor, "__xor__", "__rxor__", "^"),
}
#: INPLACE_X -> (operator function, in-place method)
INPLACE: dict[str, tuple[Callable[..., Any], str]] = {
    "INPLACE_" + k: (getattr(operator, "i" + v[0].__name__.rstrip("_")), "__i" + v[1][2:])
    for k, v in BINARY.items()
}
#: Compare name -> (operator function, method, swapped method, symbol)
COMPARE: dict[str, tuple[Callable[..., Any], str, str, str]] = {
    "LT": (operator.lt, "__lt__", "__gt__", "<"),
    "LE": (operator.le, "__le__", "__ge__", "<="),
    "EQ": (operator.eq, "__eq__", "__eq__", "=="),
    "NE": (operator.ne, "__ne__", "__ne__", "!="),
    "GT": (operator.gt, "__gt__", "__lt__", ">"),
    "GE": (operator.ge, "__ge__", "__le__", ">="),
}
#: unary op name -> (operator function, method)
UNARY: dict[str, tuple[Callable[..., Any], str]] = {
    "NEGATIVE": (operator.neg, "__neg__"), "POSITIVE": (operator.pos, "__pos__"),
    "INVERT": (operator.invert, "__invert__")}

#: op name -> the Python operator symbol, as generated code spells the operation
SYMBOLS = {"ADD": "+", "SUBTRACT": "-", "MULTIPLY": "*", "TRUE_DIVIDE": "/", "FLOOR_DIVIDE": "//",
           "REMAINDER": "%", "POWER": "**", "LT": "<", "LE": "<=", "EQ": "==", "NE": "!=",
           "GT": ">", "GE": ">=", "MATRIX_MULTIPLY": "@", "LSHIFT": "<<", "RSHIFT": ">>",
           "AND": "&", "OR": "|", "XOR": "^"}
UNARY_SYMBOLS = {"NEGATIVE": "-", "POSITIVE": "+", "INVERT": "~"}

#: template slot key -> the operator function each routed BINARY_OP / COMPARE_OP stands for
OPERATOR_OF: dict[tuple[str, str], Callable[..., Any]] = {
    ("binop", k): v[0] for k, v in {**BINARY, **INPLACE}.items()}
OPERATOR_OF.update({("compare", k): v[0] for k, v in COMPARE.items()})

