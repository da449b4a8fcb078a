"""Derivative rules as tables of data: one entry per primitive function.

Forward and reverse mode read the same tables.  Three kinds of entry:

``defderiv(f, *partials)``
    for scalar and elementwise functions: ``partials[i](ans, *args, **kwargs)`` is
    the partial derivative of ``f`` with respect to its ``i``-th positional argument
    (``None``: no derivative flows through that argument).  Forward mode sums
    ``partial * tangent``; reverse mode sends ``conj(partial) * cotangent`` back,
    summed over broadcast axes.  One line serves both modes.
``defjvp(f, rule)`` / ``defvjp(f, rule)``
    for everything else.  ``rule(tangents, ans, *args, **kwargs)`` returns the
    output tangent, where ``tangents[i]`` is the tangent of ``args[i]`` (``None``
    for a constant argument); ``rule(cotangent, ans, *args, **kwargs)`` returns one
    cotangent per positional argument (``None`` where none flows).
``defimpl(f, impl)``
    a Python equivalent differentiated in place of C function ``f``
    (``math.fsum``, which takes an iterable).
``nondifferentiable(*fs)``
    functions whose results carry no derivative (``np.floor``, ``math.floor``...).
``defkink(f, kinks)``
    where the partials of a ``defderiv`` entry are taken at a kink of ``f`` (``abs`` at 0,
    ``maximum`` at a tie): a second derivative there is refused, not 0 (see
    ``kink_rules``).
``defjump(f, jumps)``
    where the value of a step jumps (``np.sign`` at 0, ``np.floor`` at an integer): a
    derivative of that value in an enclosing differentiation is refused, not 0.
``defsolver(f, handler)``
    every call of ``f`` inside a differentiation is handed to
    ``handler(ctx, f, args, kwargs)``, differentiated arguments or not: for solvers whose
    callback may close over a differentiated value (``brentq``, ``quad``, ``solve_ivp``:
    see ``solver_rules``).

Rules run on plain values.  When a value is tagged by an enclosing
differentiation (nested ``D`` or ``hessian``), the rule body runs inside that
context, so it is differentiated in turn: rules may call any function that has a
rule of its own.
"""
from .registry import (
                       IMPLS,
                       JUMPS,
                       JVP,
                       KINKS,
                       NONDIFF,
                       PARTIALS,
                       SOLVERS,
                       PATTERN,
                       SECOND,
                       VJP,
                       defderiv,
                       defimpl,
                       defjump,
                       defjvp,
                       defkink,
                       defpattern,
                       deflinear,
                       defsolver,
                       defvjp,
                       nondifferentiable,
                       unbroadcast,
                       vjp_of,
)

__all__ = ["defderiv", "defjvp", "defvjp", "deflinear", "defimpl", "nondifferentiable",
           "unbroadcast", "vjp_of", "JVP", "VJP", "PARTIALS", "NONDIFF", "IMPLS",
           "defpattern", "PATTERN", "SECOND"]
__all__ += ["defsolver", "SOLVERS", "defkink", "KINKS", "defjump", "JUMPS"]
