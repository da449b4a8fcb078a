"""User passes: transform a function body before it is routed.

A pass is any callable ``p(ctx_type, code)`` taking a ``bytecode.Bytecode``
and returning one (it may edit and return the same object).  It runs once per
function body and pass (the result is cached with the rewritten code), so it
should be a pure function of its input.  ``replace_match`` covers the common
case of rewriting constants and other instruction arguments.
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
from types import CodeType
from typing import Any, Callable

from bytecode import Bytecode, Instr

__all__ = ["replace_match", "PassError"]


class PassError(ValueError):
    """A user pass raised or returned something that is not valid bytecode."""


def replace_match(replacer: Callable[[Any], Any], predicate: Callable[[Any], object],
                  code: Bytecode) -> Bytecode:
    """Replace every instruction argument ``a`` (constants included) for which
    ``predicate(a)`` is true by ``replacer(a)``; returns ``code``.

    The arguments considered are *values*: constants (``LOAD_CONST``/``RETURN_CONST``)
    and names (globals, attributes, locals...).  Names are matched as plain strings on
    every Python version: the flag that 3.11+ packs beside a global's or attribute's
    name (``(True, "f")``) is kept.  Operand counts, flags and operator codes (``CALL 2``,
    ``RESUME 0``), labels, jump targets and argument-less instructions are left alone,
    so ``replace_match(np.int32, lambda a: type(a) is int, code)`` touches only literals.
    """
    if not isinstance(code, Bytecode):
        raise TypeError("replace_match(replacer, predicate, code): code must be a "
                        "bytecode.Bytecode, got %s" % type(code).__name__)
    for instr in code:
        if isinstance(instr, Instr) and instr.require_arg() and not instr.has_jump():
            arg = instr.arg
            if isinstance(arg, tuple) and arg and isinstance(arg[-1], str) and instr.name in _NAMED:
                if predicate(arg[-1]):
                    instr.arg = arg[:-1] + (replacer(arg[-1]),)
            elif (instr.name in _CONSTANT or isinstance(arg, str)) and predicate(arg):
                instr.arg = replacer(arg)
    return code


_NAMED = {"LOAD_GLOBAL", "LOAD_ATTR", "LOAD_SUPER_ATTR", "LOAD_METHOD"}
_CONSTANT = {"LOAD_CONST", "RETURN_CONST"}


def _describe(pass_: Any) -> str:
    return str(getattr(pass_, "__qualname__", None) or repr(pass_))


def run_pass(pass_: Callable[[type, Bytecode], Bytecode], ctx_type: type, bc: Bytecode,
             code: CodeType) -> Bytecode:
    """Run ``pass_`` on ``bc`` (the body of ``code``) and check what comes back."""
    where = "%s (%s, line %d)" % (code.co_qualname,
                                  code.co_filename, code.co_firstlineno)
    try:
        out = pass_(ctx_type, bc)
    except Exception as exc:
        raise PassError("pass %s failed on function %s: %s: %s"
                        % (_describe(pass_), where, type(exc).__name__, exc)) from exc
    if not isinstance(out, Bytecode):
        raise PassError("pass %s returned %s for function %s; a pass must return a "
                        "bytecode.Bytecode" % (_describe(pass_), type(out).__name__, where))
    try:
        out.to_code()  # validate before the dispatch rewrite touches it
    except Exception as exc:
        raise PassError("pass %s produced invalid bytecode for function %s: %s: %s"
                        % (_describe(pass_), where, type(exc).__name__, exc)) from exc
    return out
