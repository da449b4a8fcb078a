"""Jacobians and Hessians, composed from forward and reverse mode."""
from typing import Any, Callable

import numpy as np

from . import checks, structure
from .forward import forward_jacobian
from .reverse import ReverseCtx, _gradient, _Run, pullback, pullback_named, reverse_jacobian
from .pool import borrowed


def _one_leaf(args: tuple[Any, ...], argnums: int | tuple[int, ...] | None) -> bool:
    """Whether the call is the original single-array form ``f, x``."""
    return len(args) == 1 and argnums in (None, 0, -1) and structure.flatten(args[0])[0] == [args[0]]


def jacobian(f: Callable[..., Any], /, *args: Any, argnums: int | tuple[int, ...] | None = None,
             mode: str = "auto", chunk: int | None = None, **kwargs: Any) -> Any:
    """Jacobian of ``f`` at ``x``: an array of shape ``out.shape + x.shape``.

    ``mode="forward"`` pushes ``chunk`` input directions through each run of ``f`` (all
    of them at once up to 128 inputs); ``mode="reverse"`` runs ``f`` once and the
    backward pass once per output element, better for many inputs and few outputs (a
    wide Jacobian).  ``mode="auto"`` (default) takes forward mode up to 128 inputs and
    otherwise records ``f`` once, then finishes in reverse mode when the output has
    fewer elements than forward mode would need runs of ``f``.

    Nested inputs and outputs (lists, tuples, dicts, dataclasses), or several
    arguments, give the same nested result as :func:`capstan.jacfwd`: the output's
    structure outside, the input's inside (a tuple over the arguments when there are
    several, or when ``argnums`` is a tuple).

    Example::

        >>> import numpy as np, capstan
        >>> capstan.jacobian(lambda x: x ** 2, np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
        >>> capstan.jacobian(lambda a, b: a * b, 2.0, 3.0)
        (array(3.), array(2.))

    Raises:
        TypeError: no point or a keyword point; ``f`` not callable; no input can carry
            a derivative (ints, strings: pass floats); ``f`` returns something other
            than numbers and arrays.
        ValueError: an unknown ``mode``; ``chunk`` not a positive int.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    checks.point_given("jacobian", args, kwargs, "f, x")
    if not callable(f):
        raise TypeError("capstan.jacobian(f, x): f must be callable, got %r" % (f,))
    if mode not in ("auto", "forward", "reverse"):
        raise ValueError("capstan.jacobian: mode must be 'auto', 'forward' or 'reverse', got %r"
                         % (mode,))
    checks.require_differentiable("jacobian", args)
    if not _one_leaf(args, argnums):
        from .transforms import jacobian_at
        return jacobian_at("jacobian", f, args, argnums, mode)
    try:
        return _single_array_jacobian(f, args[0], mode, chunk)
    except checks.NestedOutput:  # f returned a structure: the nested form
        from .transforms import jacobian_at
        return jacobian_at("jacobian", f, args, argnums, mode)


def _single_array_jacobian(f: Callable[..., Any], x: Any, mode: str, chunk: int | None) -> Any:
    n = np.size(x)
    if mode == "forward" or (mode == "auto" and (n <= 128 or chunk is not None)):
        return forward_jacobian(f, x, chunk)
    if mode == "reverse":
        return reverse_jacobian(f, x)
    recorded = pullback_named("jacobian", f, (x,), {})
    if np.size(recorded[0]) < -(-n // 64):
        return reverse_jacobian(f, x, recorded)
    return forward_jacobian(f, x, chunk)


def hessian(f: Callable[..., Any], /, *args: Any, argnums: int | tuple[int, ...] | None = None,
            chunk: int | None = None, **kwargs: Any) -> Any:
    """Hessian of the real scalar function ``f`` at ``x`` (forward over reverse), in
    ``x``'s floating dtype.

    Nested or several arguments give a nested result, as
    ``capstan.jacfwd(capstan.grad(f, argnums), argnums)`` would.

    Example::

        >>> import numpy as np, capstan
        >>> capstan.hessian(lambda x: x[0] ** 2 * x[1], np.array([1.0, 2.0]))
        array([[4., 2.],
               [2., 0.]])

    Raises:
        TypeError: no point or a keyword point; ``f`` not callable; no input can carry
            a derivative.
        ValueError: ``f`` does not return a real scalar.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    checks.point_given("hessian", args, kwargs, "f, x")
    if not callable(f):
        raise TypeError("capstan.hessian(f, x): f must be callable, got %r" % (f,))
    checks.require_differentiable("hessian", args)
    if not _one_leaf(args, argnums):
        from .transforms import hessian_at
        return hessian_at("hessian", f, args, argnums)
    x, = args
    H = np.asarray(forward_jacobian(lambda v: _grad0(f, v), x, chunk, "hessian"))
    return checks.match_dtype(H, np.asarray(checks.plain(x)))


def _grad0(f: Callable[..., Any], v: Any) -> Any:
    with borrowed(ReverseCtx) as ctx:
        g = _gradient(_Run(f, (v,), "hessian", ctx), (v,), "hessian")[0]
    if g is None:
        return np.zeros_like(np.asarray(v, dtype=float)) if np.ndim(v) else 0.0
    return g
