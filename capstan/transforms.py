"""Derivatives as functions: ``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev``.

These mirror JAX's function transforms: ``capstan.grad(f)`` is a function that
returns the gradient of ``f`` at whatever point it is called with, with respect to
the positional arguments selected by ``argnums`` (an int: that argument's gradient;
a tuple: a tuple of them).  With ``has_aux=True``, ``f`` returns a pair
``(value, aux)``; only ``value`` is differentiated and ``aux`` is passed through.

Inputs and outputs may be nested: lists, tuples, namedtuples, dicts and dataclasses
of numbers and arrays.  A Jacobian has the output's structure on the outside and the
input's inside, each block an array of shape ``out.shape + in.shape``.  Leaves that
cannot carry a derivative (ints, strings...) get ``None``; a floating-point argument
that the output does not depend on gets zeros, as in JAX.

The at-a-point forms (``gradient(f, x)``, ``jacobian(f, x)``...) remain the
primary API (see API.md); these are built on the same two modes.
"""
import functools
from typing import Any, Callable, Union

import numpy as np

from overdub.tagging import value_of

from . import checks, forward, losses, pool, reverse, structure

ArgNums = Union[int, tuple[int, ...]]
"""Which positional arguments to differentiate: one position, or a tuple of them."""

# The machinery below is untyped; these names give it the types this module relies on.
jvp: Callable[..., tuple[Any, Any]] = forward.jvp
borrowed: Callable[[type], Any] = pool.borrowed
ReverseCtx: type = reverse.ReverseCtx
_Run: Callable[..., Any] = reverse._Run
flatten: Callable[[Any], tuple[list[Any], Callable[[Any], Any]]] = structure.flatten
zeros_like: Callable[[Any], Any] = structure.zeros_like


# ----------------------------------------------------------------------------- argument selection
def _check_argnums(fname: str, argnums: Any) -> None:
    """Validate ``argnums`` when the transform is made (not when it is first called)."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if isinstance(argnums, bool) or not isinstance(nums, tuple) or not nums or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise TypeError("capstan.%s: argnums must be an int or a non-empty tuple of ints, got %r"
                        % (fname, argnums))


def _select(fname: str, argnums: ArgNums, args: tuple[Any, ...]) -> tuple[bool, tuple[int, ...]]:
    """``(single, positions)``: the positional arguments ``argnums`` selects."""
    if type(argnums) is int and 0 <= argnums < len(args):  # (the common case: one argument)
        return True, (argnums,)
    single = isinstance(argnums, int)
    nums: tuple[int, ...] = (argnums,) if isinstance(argnums, int) else argnums
    out: list[int] = []
    for i in nums:
        j = i + len(args) if i < 0 else i
        if not 0 <= j < len(args):
            raise ValueError("capstan.%s: argnums=%r, but f was called with %d positional argument%s"
                             % (fname, argnums, len(args), "" if len(args) == 1 else "s"))
        out.append(j)
    if len(set(out)) != len(out):
        raise ValueError("capstan.%s: argnums=%r selects an argument twice" % (fname, argnums))
    return single, tuple(out)


def _fix_others(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                positions: tuple[int, ...]) -> Callable[..., Any]:
    """``f`` as a function of the selected arguments only (the rest held as given)."""
    if positions == tuple(range(len(args))) and not kwargs:
        return f

    def of_selected(*chosen: Any) -> Any:
        full = list(args)
        for i, v in zip(positions, chosen):
            full[i] = v
        return f(*full, **kwargs)

    return of_selected


def _prepare(fname: str, f: Callable[..., Any], argnums: ArgNums, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> tuple[bool, tuple[Any, ...], Callable[..., Any]]:
    single, positions = _select(fname, argnums, args)
    chosen = tuple(args[i] for i in positions)
    for i, a in zip(positions, chosen):
        if type(a) is float:  # (a float always can)
            continue
        checks.require_differentiable(
            fname, (a,), "argument %d (selected by argnums) cannot carry a derivative" % i)
    return single, chosen, _fix_others(f, args, kwargs, positions)


def _split_aux(fname: str, y: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return y, None
    if not (isinstance(y, tuple) and len(y) == 2):
        raise TypeError("capstan.%s(f, has_aux=True): f must return a pair (output, aux), got %s"
                        % (fname, type(checks.plain(y)).__name__))
    return y


def _strip(ctx: Any, y: Any) -> Any:
    """``y`` with ``ctx``'s tags removed (values of enclosing differentiations stay tagged)."""
    leaves, rebuild = flatten(y)
    return rebuild([value_of(leaf) if ctx.owns(leaf) else leaf for leaf in leaves])


def _zeros_for(arg: Any) -> Any:
    """Zeros shaped like ``arg``'s floating leaves, ``None`` for the others."""
    leaves, rebuild = flatten(arg)
    return rebuild([checks.match_dtype(zeros_like(checks.plain(leaf)), leaf)
                    if checks.can_carry(leaf) else None for leaf in leaves])


# ----------------------------------------------------------------------------- grad
def value_and_grad(f: Callable[..., Any], argnums: ArgNums = 0,
                   has_aux: bool = False) -> Callable[..., tuple[Any, Any]]:
    """``f`` turned into a function returning ``(f(*args), gradient)`` from one run.

    The gradient is taken with respect to the positional arguments ``argnums`` selects
    (an int: that argument's gradient; a tuple of ints: a tuple of gradients), each
    shaped like its argument.  ``f`` must return a real scalar -- or, with
    ``has_aux=True``, a pair ``(scalar, aux)``; then the result is
    ``((value, aux), gradient)``.

    Example::

        >>> import capstan
        >>> capstan.value_and_grad(lambda x, y: x * y + y)(2.0, 3.0)
        (9.0, 3.0)
        >>> capstan.value_and_grad(lambda x, y: x * y + y, argnums=(0, 1))(2.0, 3.0)
        (9.0, (3.0, 3.0))

    Raises:
        TypeError: ``f`` is not callable; ``argnums`` is not an int or tuple of ints; a
            selected argument holds no floating-point value (``3`` instead of ``3.0``);
            with ``has_aux``, ``f`` does not return a pair.
        ValueError: ``f``'s output is not a real scalar; ``argnums`` is out of range.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    checks.check_callable("value_and_grad", f, "f, argnums=0, has_aux=False")
    _check_argnums("value_and_grad", argnums)

    @functools.wraps(f)
    def value_and_grad_f(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return _value_and_grad("value_and_grad", f, argnums, has_aux, args, kwargs)

    return value_and_grad_f


def grad(f: Callable[..., Any], argnums: ArgNums = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``f`` turned into a function returning its gradient (JAX's ``grad``).

    ``capstan.grad(f)(x)`` is ``capstan.gradient(f, x)[0]``, except that a
    floating-point argument the output does not depend on gets zeros rather than
    ``None``.  ``argnums`` selects the positional arguments to differentiate (an int,
    or a tuple for a tuple of gradients); the others, and keyword arguments, are held
    constant.  With ``has_aux=True``, ``f`` returns ``(scalar, aux)`` and the result is
    ``(gradient, aux)``.

    Example::

        >>> import math, capstan
        >>> dsin = capstan.grad(math.sin)
        >>> dsin(0.0)
        1.0
        >>> capstan.grad(capstan.grad(lambda x: x ** 3))(2.0)
        12.0
        >>> capstan.grad(lambda p: p["w"] * p["b"])({"w": 2.0, "b": 5.0})
        {'w': 5.0, 'b': 2.0}

    Raises:
        TypeError: as :func:`value_and_grad` (a selected argument that cannot carry a
            derivative, ``f`` not callable, bad ``argnums``).
        ValueError: ``f``'s output is not a real scalar.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    checks.check_callable("grad", f, "f, argnums=0, has_aux=False")
    _check_argnums("grad", argnums)

    @functools.wraps(f)
    def grad_f(*args: Any, **kwargs: Any) -> Any:
        value, g = _value_and_grad("grad", f, argnums, has_aux, args, kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


def _value_and_grad(fname: str, f: Callable[..., Any], argnums: ArgNums, has_aux: bool,
                    args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    single, chosen, fixed = _prepare(fname, f, argnums, args, kwargs)
    with borrowed(ReverseCtx) as ctx:
        run = _Run(fixed, chosen, fname, ctx)
        out, aux = _split_aux(fname, run.y, has_aux)
        if type(checks.plain(out)) is float:  # (a real scalar)
            value = value_of(out) if ctx.owns(out) else out
        elif flatten(out)[0] != [out] or np.ndim(checks.plain(out)) != 0:
            shape = np.shape(checks.plain(out)) if flatten(out)[0] == [out] else None
            raise ValueError("capstan.%s: f must return a real scalar%s, got %s; use capstan.jacrev or "
                             "capstan.jacfwd for other outputs"
                             % (fname, " as its first result" if has_aux else "",
                                "an array of shape %s" % (shape,) if shape else type(out).__name__))
        else:
            value = value_of(out) if ctx.owns(out) else out
            checks.numeric_output(fname, [value], bools=False)
            if np.iscomplexobj(checks.plain(value)):
                raise ValueError("capstan.%s: f returned a complex number; gradients are defined for "
                                 "real-valued functions (use capstan.pullback for complex outputs)" % fname)
        n = ctx.node(out)
        grads = run.back({n: 1.0}) if n is not None else (None,) * len(chosen)
        if n is not None and reverse._has_nan(grads) and reverse._finite_run(run):  # (as gradient)
            raise losses.undefined_in_reverse(fname)
        grads = tuple(_zeros_for(a) if g is None else g for g, a in zip(grads, chosen))
        if has_aux:
            value = (value, _strip(ctx, aux))
    return value, grads[0] if single else grads


# ----------------------------------------------------------------------------- Jacobians
def jacfwd(f: Callable[..., Any], argnums: ArgNums = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``f`` turned into a function returning its Jacobian, by forward mode.

    For an array ``x`` and array output the result is an array of shape
    ``out.shape + x.shape``.  Nested inputs and outputs give a nested result: the
    output's structure outside, the selected inputs' structure inside (a tuple of them
    when ``argnums`` is a tuple).  Forward mode runs ``f`` once per input element:
    best for few inputs and many outputs.  With ``has_aux=True`` the result is
    ``(jacobian, aux)``.

    Example::

        >>> import numpy as np, capstan
        >>> capstan.jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
        >>> capstan.jacfwd(lambda a, b: a * b, argnums=(0, 1))(2.0, 3.0)
        (array(3.), array(2.))

    Raises:
        TypeError: a selected argument holds no floating-point value; ``f`` returns
            something other than numbers and arrays (in its structure); bad
            ``argnums``; ``f`` not callable.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    return _jacobian_transform("jacfwd", forward_jacobian_tree, f, argnums, has_aux)


def jacrev(f: Callable[..., Any], argnums: ArgNums = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``f`` turned into a function returning its Jacobian, by reverse mode.

    The same result as :func:`jacfwd`; ``f`` is run once and the backward pass once
    per output element: best for many inputs and few outputs.

    Example::

        >>> import numpy as np, capstan
        >>> capstan.jacrev(lambda x: {"sum": x.sum(), "sq": x * x})(np.array([1.0, 2.0]))
        {'sum': array([1., 1.]), 'sq': array([[2., 0.],
               [0., 4.]])}

    Raises:
        TypeError: as :func:`jacfwd`.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    return _jacobian_transform("jacrev", reverse_jacobian_tree, f, argnums, has_aux)


def _jacobian_transform(fname: str, tree_jacobian: Callable[..., Any], f: Callable[..., Any],
                        argnums: ArgNums, has_aux: bool) -> Callable[..., Any]:
    """``jacfwd``/``jacrev``: ``f`` wrapped to return its Jacobian by ``tree_jacobian``."""
    checks.check_callable(fname, f, "f, argnums=0, has_aux=False")
    _check_argnums(fname, argnums)

    @functools.wraps(f)
    def jacobian_f(*args: Any, **kwargs: Any) -> Any:
        single, chosen, fixed = _prepare(fname, f, argnums, args, kwargs)
        J, aux = tree_jacobian(fname, fixed, chosen, has_aux, single)
        return (J, aux) if has_aux else J

    return jacobian_f


def _output_leaves(fname: str, y: Any) -> tuple[list[Any], Callable[[Any], Any]]:
    leaves, rebuild = flatten(y)
    checks.numeric_output(fname, leaves, bools=False)
    return leaves, rebuild


def _blocks(out_values: list[Any], in_structs: list[list[Any]]) -> list[list[list[Any]]]:
    """Zero Jacobian blocks: for each output leaf, per argument, per input leaf."""
    blocks = []
    for v in out_values:
        per_arg = []
        for leaves in in_structs:
            per_arg.append([np.zeros(np.shape(v) + np.shape(checks.plain(x)),
                                     dtype=np.result_type(_dtype(v), _dtype(x), np.float16))
                            if checks.can_carry(x) else None for x in leaves])
        blocks.append(per_arg)
    return blocks


def _dtype(v: Any) -> np.dtype[Any]:
    v = checks.plain(v)
    dt = getattr(v, "dtype", None)
    return np.result_type(v) if dt is None else dt


def _assemble(blocks: list[list[list[Any]]], out_rebuild: Callable[[Any], Any],
              in_rebuilds: list[Callable[[Any], Any]], single: bool) -> Any:
    """The output's structure outside; inside, the selected argument's structure (or a
    tuple of them)."""
    if single:
        return out_rebuild([in_rebuilds[0](per_arg[0]) for per_arg in blocks])
    return out_rebuild([tuple(rb(parts) for rb, parts in zip(in_rebuilds, per_arg)) for per_arg in blocks])


def forward_jacobian_tree(fname: str, f: Callable[..., Any], args: tuple[Any, ...], has_aux: bool,
                          single: bool) -> tuple[Any, Any]:
    """``(jacobian, aux)`` of ``f(*args)`` with nested inputs and outputs, by forward mode:
    one :func:`capstan.jvp` per input element."""
    flat = [flatten(a) for a in args]
    in_structs = [leaves for leaves, _ in flat]
    directions = [(i, k, e) for i, leaves in enumerate(in_structs) for k, x in enumerate(leaves)
                  if checks.can_carry(x) for e in range(np.size(checks.plain(x)))]
    blocks: list[list[list[Any]]] | None = None
    out_rebuild: Callable[[Any], Any] | None = None
    aux: Any = None

    def run(tangents: tuple[Any, ...]) -> tuple[Any, Any, Any]:
        y, t = forward.jvp_as(fname, f, args, tangents)
        out, aux_ = _split_aux(fname, y, has_aux)
        t_out = t[0] if has_aux else t
        return out, aux_, t_out

    if not directions:
        none = tuple(rb([None] * len(leaves)) for leaves, rb in flat)
        out, aux, _ = run(none)
        out_leaves, out_rebuild = _output_leaves(fname, out)
        blocks = _blocks(out_leaves, in_structs)
    for i, k, e in directions:
        tangents = []
        for j, (leaves, rb) in enumerate(flat):
            parts: list[Any] = [None] * len(leaves)
            if j == i:
                x = checks.plain(leaves[k])
                unit = np.zeros(np.shape(x), dtype=_dtype(x))
                unit.flat[e] = 1
                parts[k] = unit if isinstance(x, np.ndarray) else unit[()].item() if type(x) in (
                    float, complex) else unit[()]
            tangents.append(rb(parts))
        out, aux_, t = run(tuple(tangents))
        if blocks is None:
            aux = aux_
            out_leaves, out_rebuild = _output_leaves(fname, out)
            blocks = _blocks(out_leaves, in_structs)
        t_leaves = flatten(t)[0]
        for block, td in zip(blocks, t_leaves):
            b = block[i][k]
            b.reshape(b.shape[:b.ndim - np.ndim(checks.plain(in_structs[i][k]))] + (-1,))[..., e] = (
                0 if td is None else td)
    assert blocks is not None and out_rebuild is not None  # (f ran at least once)
    return _assemble(blocks, out_rebuild, [rb for _, rb in flat], single), aux


def reverse_jacobian_tree(fname: str, f: Callable[..., Any], args: tuple[Any, ...], has_aux: bool,
                          single: bool) -> tuple[Any, Any]:
    """``(jacobian, aux)`` of ``f(*args)`` with nested inputs and outputs, by reverse mode:
    one run of ``f``, then one backward pass per output element."""
    with borrowed(ReverseCtx) as ctx:
        run = _Run(f, args, fname, ctx)
        out, aux = _split_aux(fname, run.y, has_aux)
        aux = _strip(ctx, aux) if has_aux else None
        out_leaves, out_rebuild = _output_leaves(fname, out)
        in_structs = [leaves for leaves, _, _ in run.arg_structs]
        values = [value_of(leaf) if ctx.owns(leaf) else leaf for leaf in out_leaves]
        blocks = _blocks(values, in_structs)
        for leaf, v, block in zip(out_leaves, values, blocks):
            n = ctx.node(leaf)
            if n is None:
                continue  # the output does not depend on the inputs: zeros
            size = np.size(checks.plain(v))
            # a complex output of a real input: a backward pass from 1 gives the real part of
            # its Jacobian, one from 1j the imaginary part (the real input's cotangent is real)
            imaginary = np.iscomplexobj(checks.plain(v)) and any(
                not np.iscomplexobj(checks.plain(leaf)) for leaves in in_structs for leaf in leaves)
            for e in range(size):
                grads = _backward_from(fname, ctx, run, n, v, e, 1)
                grads_i = _backward_from(fname, ctx, run, n, v, e, 1j) if imaginary else None
                for i, g in enumerate(grads):
                    if g is None:
                        continue
                    parts_i = flatten(grads_i[i])[0] if grads_i is not None and grads_i[i] is not None else None
                    for k, gk in enumerate(flatten(g)[0]):
                        b = block[i][k]
                        if b is None or gk is None:
                            continue
                        if parts_i is not None and not np.iscomplexobj(checks.plain(in_structs[i][k])):
                            gk = gk + 1j * parts_i[k]  # (real input: its real cotangents)
                        else:
                            gk = np.conj(gk)
                        b.reshape((size,) + np.shape(gk))[e] = gk
        return _assemble(blocks, out_rebuild, [rb for _, _, rb in run.arg_structs], single), aux


def _backward_from(fname: str, ctx: Any, run: Any, n: int, v: Any, e: int, one: complex) -> Any:
    """The argument cotangents of a backward pass seeded with ``one`` at element ``e`` of
    the output ``v`` (node ``n``); a NaN where the run was finite is refused, as in
    ``gradient``."""
    seed = np.zeros(np.shape(checks.plain(v)), dtype=_dtype(v))
    seed.flat[e] = one
    grads = run.back_from(ctx.backward({n: seed if seed.ndim else seed[()]}))
    if reverse._has_nan(grads) and reverse._finite_run(run):  # (an infinite partial whose terms cancel)
        raise losses.undefined_in_reverse(fname)
    return grads


# ----------------------------------------------------------------------------- the at-a-point forms
def jacobian_at(fname: str, f: Callable[..., Any], args: tuple[Any, ...], argnums: ArgNums | None,
                mode: str) -> Any:
    """``capstan.jacobian(f, *args, argnums=...)`` for nested or several arguments."""
    if argnums is None:
        argnums = 0 if len(args) == 1 else tuple(range(len(args)))
    _check_argnums(fname, argnums)
    single, chosen, fixed = _prepare(fname, f, argnums, args, {})
    if mode == "reverse" or (mode == "auto" and sum(
            np.size(checks.plain(x)) for a in chosen for x in flatten(a)[0]) > 128):
        return reverse_jacobian_tree(fname, fixed, chosen, False, single)[0]
    return forward_jacobian_tree(fname, fixed, chosen, False, single)[0]


def hessian_at(fname: str, f: Callable[..., Any], args: tuple[Any, ...], argnums: ArgNums | None) -> Any:
    """``capstan.hessian(f, *args, argnums=...)`` for nested or several arguments:
    the forward-mode Jacobian of the reverse-mode gradient."""
    if argnums is None:
        argnums = 0 if len(args) == 1 else tuple(range(len(args)))
    _check_argnums(fname, argnums)

    def gradient_of(*a: Any) -> Any:
        return _value_and_grad(fname, f, argnums, False, a, {})[1]

    single, chosen, fixed = _prepare(fname, gradient_of, argnums, args, {})
    return forward_jacobian_tree(fname, fixed, chosen, False, single)[0]


__all__ = ["grad", "value_and_grad", "jacfwd", "jacrev"]
