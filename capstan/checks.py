"""What every entry point checks about its inputs, with one rule and one wording.

The rule: a derivative is taken with respect to floating-point values -- ``float``,
``complex``, NumPy floating or complex scalars and arrays, and lists, tuples, dicts,
namedtuples and dataclasses of them.  Other leaves (ints, bools, strings...) are held
constant and get ``None`` where a gradient is returned for them.  When *no* leaf of
the inputs can carry a derivative, the call is almost certainly a mistake
(``gradient(f, 3)`` where ``3.0`` was meant), so it raises a :class:`TypeError` that
says why and what to pass instead, naming the entry point the user called.
"""
import inspect
import numbers
from typing import Any, Callable

import numpy as np

from overdub import Tagged
from overdub.tagging import value_of

from . import structure

# The untyped helpers this module relies on, with their types.
flatten: Callable[[Any], tuple[list[Any], Callable[[Any], Any]]] = structure.flatten
is_differentiable: Callable[[Any], bool] = structure.is_differentiable


def plain(x: Any) -> Any:
    """``x`` without the tags of enclosing differentiations."""
    while type(x) is Tagged:
        x = value_of(x)
    return x


def can_carry(leaf: Any) -> bool:
    """Whether ``leaf`` (possibly tagged by an enclosing differentiation) can carry a
    derivative."""
    return is_differentiable(plain(leaf))


def describe(leaf: Any) -> str:
    """A short description of a leaf for error messages, with its dtype."""
    x = plain(leaf)
    if isinstance(x, np.ndarray):
        return "a NumPy array of dtype %s" % x.dtype
    if isinstance(x, np.generic):
        return "a NumPy scalar of dtype %s (%r)" % (x.dtype, x)
    text = repr(x)
    if len(text) > 40:
        text = text[:37] + "..."
    return "%s %s" % (type(x).__name__, text)


def remedy(leaf: Any) -> str:
    """What to pass instead of ``leaf``, when there is an obvious float version."""
    x = plain(leaf)
    if isinstance(x, (bool, np.bool_)):
        return "booleans are never differentiable"
    if isinstance(x, int):
        return "pass %r instead of %r" % (float(x), x)
    if isinstance(x, np.integer):
        return "pass float(x) or np.float64(x)"
    if isinstance(x, np.ndarray) and x.dtype.kind in "iub":
        return "pass x.astype(float)"
    if isinstance(x, (str, bytes)):
        return "strings have no derivative; differentiate with respect to a number"
    return "differentiate with respect to a float, a complex number or a float array"


def require_differentiable(fname: str, args: tuple[Any, ...] | list[Any],
                           subject: str = "no argument can carry a derivative") -> None:
    """Raise ``TypeError`` when no leaf of ``args`` (a tuple of arguments) can carry a
    derivative.  ``fname`` is the public name (``"gradient"``, ``"D"``...); ``subject``
    is the clause that opens the message."""
    first, found = None, False
    for a in args:
        if type(a) is float:  # (the common case, answered without flattening)
            found = True
            continue
        leaves, _ = flatten(a)
        if structure.all_floats(leaves):  # (a list of floats, answered without a step per element)
            found = found or bool(leaves)
            continue
        for leaf in leaves:
            x = plain(leaf)
            if isinstance(x, np.ndarray) and type(x) is not np.ndarray and x.dtype.kind in "fc":
                raise TypeError(_subclass_message(fname, x))
            if can_carry(leaf):
                found = True
            elif first is None:
                first = leaf
    if found:
        return
    if first is None:
        raise TypeError("capstan.%s: %s (the inputs hold no numbers at all); pass a float, a complex "
                        "number or a float array" % (fname, subject))
    raise TypeError("capstan.%s: %s: got %s; %s (derivatives are taken with "
                    "respect to floating-point inputs: float, complex, NumPy float or complex scalars "
                    "and arrays, or lists/tuples/dicts/dataclasses of them)"
                    % (fname, subject, describe(first), remedy(first)))


def _subclass_message(fname: str, x: Any) -> str:
    """Why an ndarray subclass (``np.ma.MaskedArray``, ``np.matrix``...) is no input: its
    operations differ from the plain array's the derivative would be taken of (masked
    elements, matrix products) and run compiled code on its raw data."""
    tp = type(x)
    hint = (" with the mask applied as np.where(mask, x, fill) or x[~mask]"
            if isinstance(x, np.ma.MaskedArray) else "")
    return ("capstan.%s: an input is a %s.%s, an ndarray subclass, whose operations capstan does not "
            "differentiate (they run compiled code on its raw data); pass a plain array, "
            "np.asarray(x)%s" % (fname, tp.__module__, tp.__qualname__, hint))


def point_given(fname: str, args: tuple[Any, ...], kwargs: dict[str, Any], signature: str = "f, *args") -> None:
    """Raise the ``TypeError`` a user needs when an at-a-point entry point is called
    without a point (``gradient(f)``) or with the point as a keyword (``gradient(f, x=1.0)``)."""
    if args and not kwargs:
        return
    function_form = {"gradient": "capstan.grad(f)", "D": "capstan.grad(f)",
                     "jacobian": "capstan.jacfwd(f) or capstan.jacrev(f)",
                     "hessian": "capstan.jacfwd(capstan.grad(f))",
                     "pullback": "capstan.value_and_grad(f)"}.get(fname, "capstan.grad(f)")
    if kwargs:
        names = ", ".join("%s=" % k for k in kwargs)
        raise TypeError("capstan.%s(%s) takes the point positionally: write capstan.%s(f, 1.0), not "
                        "capstan.%s(f, %s...); to hold a keyword argument fixed, close over it: "
                        "capstan.%s(lambda x: f(x, k=2.0), 1.0)"
                        % (fname, signature, fname, fname, names, fname))
    if not args:
        raise TypeError("capstan.%s(%s) needs the point to differentiate at, e.g. capstan.%s(f, 1.0); "
                        "for the derivative as a function, use %s" % (fname, signature, fname, function_form))


def check_callable(fname: str, f: Any, signature: str = "f, *args") -> None:
    if not callable(f):
        raise TypeError("capstan.%s(%s): f must be callable, got %r" % (fname, signature, f))


class NestedOutput(TypeError):
    """``f`` returned a structure (list, dict, dataclass...): the single-array Jacobian
    paths hand over to the nested one (``capstan.jacobian`` catches this)."""


def no_object_arrays(leaves: list[Any], fname: str) -> None:
    """Refuse an output array of Python objects holding differentiated values (what
    ``np.asarray`` makes of one outside the differentiation): reading its derivative
    as zero would be silently wrong."""
    for leaf in leaves:
        if (type(leaf) is np.ndarray and leaf.dtype == object
                and any(type(e) is Tagged for e in leaf.flat)):
            raise TypeError("capstan.%s: f returned an array of Python objects (dtype=object) "
                            "holding values being differentiated; build it with a numeric dtype "
                            "inside f (np.asarray(values, dtype=float))" % fname)


def numeric_output(fname: str, leaves: list[Any], bools: bool = True) -> None:
    """Refuse an output leaf that is no number or array (a string, ``None``, an object),
    and with ``bools=False`` a boolean (or boolean array): it has no derivative, and
    answering ``None`` or zero for it would be silent."""
    for leaf in leaves:
        v = plain(leaf)
        if not bools and (isinstance(v, (bool, np.bool_)) or getattr(v, "dtype", None) == np.bool_):
            raise TypeError("capstan.%s: f returned %s: a truth value has no derivative (return a "
                            "float, or differentiate the quantity the comparison was made on)"
                            % (fname, describe(leaf)))
        if not isinstance(v, (int, float, complex, np.number, np.bool_, np.ndarray)):
            raise TypeError("capstan.%s: f must return numbers and arrays (or lists/tuples/dicts/"
                            "dataclasses of them), but its output holds %s" % (fname, describe(leaf)))


def cotangent_leaf(fname: str, d: Any) -> None:
    """Refuse a ``back(dy)`` cotangent leaf that is not a number or a numeric array (a
    string would be multiplied into the backward pass, or fail deep inside it)."""
    x = plain(d)
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype.kind in "biufc":
            return
    elif isinstance(x, numbers.Number):
        return
    raise TypeError("capstan.%s: dy must hold numbers or numeric arrays shaped like f's output, got %s"
                    % (fname, describe(d)))


def cotangent_target(fname: str, leaf: Any) -> None:
    """Refuse a ``back(dy)`` cotangent given for a part of f's output that is no number or
    array (a string, ``None``, an object): it has no derivative, and answering ``None``
    for it would be silent (``gradient`` refuses such an output too)."""
    if not isinstance(plain(leaf), (int, float, complex, np.number, np.bool_, np.ndarray)):
        raise TypeError("capstan.%s: back(dy) got a cotangent for %s in f's output, which is not a "
                        "number or an array and has no derivative (f must return numbers and arrays, "
                        "or lists/tuples/dicts/dataclasses of them; give None as that part of dy)"
                        % (fname, describe(leaf)))


def check_single_output(y: Any) -> None:
    """Raise :class:`NestedOutput` unless ``y`` is a single number or array."""
    leaves, _ = flatten(y)
    if len(leaves) != 1 or leaves[0] is not y:
        raise NestedOutput("capstan.jacobian: f returned %s, not a number or an array"
                           % type(plain(y)).__name__)


def match_dtype(g: Any, leaf: Any) -> Any:
    """Gradient ``g`` in the floating dtype of its input ``leaf`` (float32 in, float32
    out); other pairs are returned unchanged."""
    if g is None or type(g) is Tagged:
        return g
    x = plain(leaf)
    dt = getattr(x, "dtype", None)
    if dt is None or dt.kind not in "fc" or not isinstance(x, (np.ndarray, np.generic)):
        return g
    gd = getattr(g, "dtype", None)
    if gd is None or gd == dt or gd.kind not in "fc":
        return g
    if gd.kind == "c" and dt.kind == "f":  # a real input moves along the real axis alone:
        g = np.real(g)  # its cotangent's imaginary part is no derivative of anything
        if g.dtype == dt:
            return g
    if isinstance(x, np.ndarray):
        return np.asarray(g).astype(dt, copy=False)
    return dt.type(g)


def autograd_style_vjp(f: Any, rule: Callable[..., Any], nargs: int | None = None) -> bool:
    """Whether ``rule`` looks like an autograd-style VJP maker ``rule(ans, *args) ->
    (lambda g: ...)`` instead of capstan's ``rule(g, ans, *args)``: it accepts one
    positional argument fewer than capstan passes, or names its first parameter ``ans``."""
    try:
        params = list(inspect.signature(rule).parameters.values())
    except (TypeError, ValueError):
        return False
    if not params:
        return False
    if params[0].name in ("ans", "answer", "result") and params[0].kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        return True
    if nargs is None:
        nargs = _arity(f)
    if nargs is None or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return False
    required = [p for p in params if p.default is inspect.Parameter.empty and p.kind in (
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return len(required) == nargs + 1


def _arity(f: Any) -> int | None:
    nin = getattr(f, "nin", None)  # NumPy ufuncs
    if isinstance(nin, int):
        return nin
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) for p in params):
        return None
    return sum(1 for p in params if p.default is inspect.Parameter.empty
               and p.kind is not inspect.Parameter.KEYWORD_ONLY)


def vjp_rule_error(fname: str) -> TypeError:
    return TypeError(
        "capstan.defvjp(%s, rule): the rule looks autograd-style, rule(ans, *args) returning a "
        "function of the cotangent g. capstan calls the rule once with everything: write "
        "rule(g, ans, *args) returning the cotangent, e.g. autograd's "
        "defvjp(f, lambda ans, x: lambda g: g * ans) is capstan's "
        "defvjp(f, lambda g, ans, x: g * ans). (Several arguments: return a tuple of "
        "cotangents, or pass one such rule per argument.)" % fname)
