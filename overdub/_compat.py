"""Every CPython-version difference that overdub has to know about, in one place.

The rewriter (``rewrite.py``) asks this module how call sites, method loads,
comparisons and slices look on the running interpreter, and which opcodes exist
only on some versions; the lookasides (``lookaside.py``) ask it how ``locals()``
behaves.  Nothing else in the package tests ``sys.version_info``.

Call-site layouts (bottom of stack first)::

    3.11   [NULL, f, args...]  PRECALL n; CALL n      method: [meth|NULL, self|attr, args...]
    3.12   [NULL, f, args...]  CALL n                 method: same, via LOAD_ATTR (True, name)
    3.13   [f, NULL, args...]  CALL n / CALL_KW n     method: [meth|attr, self|NULL, args...]

In every version a call consumes two "head" slots below its arguments.  The
rewriter fills those two slots with ``[dispatcher, callee]`` so that the
unchanged ``CALL n`` instruction ends up calling ``dispatcher(callee, *args)``.
"""
import builtins
import sys

from bytecode import Instr

#: overdub's own builtins: every machinery module makes this dict its ``__builtins__``, so
#: a program that patches ``builtins.len`` or ``__import__`` (tests do) never has the
#: patched function called by the machinery, nor breaks it half-way through a run
BUILTINS = dict(vars(builtins))
__builtins__ = BUILTINS

PY311 = sys.version_info[:2] == (3, 11)
PY313 = sys.version_info[:2] >= (3, 13)
if sys.version_info[:2] < (3, 11) or sys.version_info[:2] > (3, 13):  # pragma: no cover
    import warnings

    warnings.warn("overdub is tested on CPython 3.11-3.13 only", RuntimeWarning, stacklevel=2)

#: opcodes that push a NULL (or a method pair) into the head slots of a call
METHOD_LOADS = {"LOAD_METHOD"} if PY311 else set()
#: the opcodes that perform a call with ``n`` arguments
CALLS = {"PRECALL"} if PY311 else {"CALL", "CALL_KW"}
#: 3.11 splits a call in two, PRECALL n then CALL n (None: one instruction)
CALL_PRELUDE = "PRECALL" if PY311 else None
#: instructions that run no code of the program's and cannot fail in a way the order of a
#: method's look-up would show (a local's load: the compiler saw it assigned): a method call
#: whose arguments are made of these alone looks the method up at the call (rewrite.py)
RUNS_NO_CODE = frozenset({
    "LOAD_FAST", "LOAD_CONST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_GLOBAL", "LOAD_NAME", "COPY",
    "SWAP", "NOP", "EXTENDED_ARG", "CACHE", "BUILD_TUPLE", "BUILD_LIST", "BUILD_CONST_KEY_MAP",
} | ({"KW_NAMES"} if not PY313 else set())
  | ({"LOAD_FAST_CHECK"} if not PY311 else set())
  | ({"LOAD_FAST_LOAD_FAST"} if PY313 else set()))
#: LOAD_ATTR carries a (method_flag, name) pair from 3.12 on
ATTR_ARG_IS_PAIR = not PY311
#: 3.12+ compiles ``a[b:c]`` and ``a[b:c] = v`` to these opcodes (3.11: BUILD_SLICE, then
#: the subscript); None where they do not exist
SLICE_LOAD, SLICE_STORE = (None, None) if PY311 else ("BINARY_SLICE", "STORE_SLICE")
#: 3.12+ compiles ``super().name`` to this opcode (3.11: a call of ``super``, then LOAD_ATTR)
SUPER_ATTR = None if PY311 else "LOAD_SUPER_ATTR"
#: 3.13 lets ``eval``/``exec`` take ``globals`` and ``locals`` by keyword
NAMESPACES_BY_KEYWORD = PY313
#: 3.12+: ``sys._getframemodulename`` (namedtuple, typing and enum name a caller's module)
GETFRAMEMODULENAME = getattr(sys, "_getframemodulename", None)
#: ``warnings.warn`` takes ``skip_file_prefixes`` (3.12+)
WARN_SKIPS_PREFIXES = sys.version_info[:2] >= (3, 12)
#: the file and line ``warnings.warn`` names when ``stacklevel`` goes beyond the stack
WARN_BEYOND_STACK = ("<sys>", 0) if PY313 else ("sys", 1)


def head_index(instr, depth):
    """Stack index of the first head slot consumed by the call ``instr`` (depth before it)."""
    if instr.name == "CALL_KW":
        return depth - instr.arg - 3
    if instr.name == "CALL_FUNCTION_EX":
        return depth - 3 - (instr.arg & 1)
    return depth - instr.arg - 2


def is_keyword_call(instr, previous):
    """Whether the call instruction ``instr`` passes keyword arguments: 3.13 has its own
    opcode, CALL_KW; 3.11 and 3.12 put KW_NAMES (``previous``, the instruction emitted
    just before) in front of the call."""
    if PY313:
        return instr.name == "CALL_KW"
    return isinstance(previous, Instr) and previous.name == "KW_NAMES"


def push_null_head(depth):
    """Index of the first head slot that a PUSH_NULL at ``depth`` belongs to."""
    return depth - 1 if PY313 else depth


def replace_push_null(load_dispatcher, loc):
    """Instructions replacing PUSH_NULL so that the heads read ``[dispatcher, callee]``."""
    if PY313:  # NULL goes after the callee: [f] -> [D, f]
        return [load_dispatcher, Instr("SWAP", 2, location=loc)]
    return [load_dispatcher]  # NULL goes before the callee, which is pushed next


def call_instrs(n, loc):
    """The instructions of a plain positional call with ``n`` arguments."""
    if PY311:
        return [Instr("PRECALL", n, location=loc), Instr("CALL", n, location=loc)]
    return [Instr("CALL", n, location=loc)]


def call_ex_heads(producer, loc):
    """Fix the heads of an ``f(*args, **kwargs)`` site before it becomes ``call_ex(f, a, k)``.

    3.13 names the callable in the *first* head slot in DICT_MERGE errors
    ("f() got multiple values for keyword argument"), so there the heads stay
    ``[f, call_ex]`` until the arguments are complete and are swapped at the call.
    """
    if not PY313 or producer is None:
        return []
    first, second = producer
    if second.name == "SWAP":  # PUSH_NULL after f: [call_ex, SWAP 2] -> [call_ex] gives [f, call_ex]
        second.set("NOP")
    else:  # LOAD_GLOBAL with NULL: [call_ex, LOAD_GLOBAL f] -> [LOAD_GLOBAL f, call_ex]
        first_name, first_arg = first.name, first.arg
        first.set(second.name, second.arg)
        second.set(first_name, first_arg)
    return [Instr("SWAP", 3, location=loc), Instr("SWAP", 4, location=loc),
            Instr("SWAP", 3, location=loc)]


#: a forward conditional jump (3.11 names the direction)
POP_JUMP_FORWARD_IF_FALSE = "POP_JUMP_FORWARD_IF_FALSE" if PY311 else "POP_JUMP_IF_FALSE"


def to_bool(loc):
    """3.13's conditional jumps need an exact bool on the stack."""
    return [Instr("TO_BOOL", location=loc)] if PY313 else []


def call_type_of(depth_from_top, type_const, loc):
    """Push ``type(x)`` where ``x`` is the ``depth_from_top``-th stack item (1 = top)."""
    load = Instr("LOAD_CONST", type_const, location=loc)
    null = Instr("PUSH_NULL", location=loc)
    head = [load, null] if PY313 else [null, load]
    return head + [Instr("COPY", depth_from_top + 2, location=loc), *call_instrs(1, loc)]


def call_with_operands(load_callable, first_arg, loc):
    """Call ``callable(first_arg, a, b)`` where ``[a, b]`` are on top of the stack (kept)."""
    null = Instr("PUSH_NULL", location=loc)
    head = [load_callable, null] if PY313 else [null, load_callable]
    return head + [Instr("LOAD_CONST", first_arg, location=loc), Instr("COPY", 5, location=loc),
                   Instr("COPY", 5, location=loc), *call_instrs(3, loc)]


def bump_call(instr):
    """The same call instruction with one more positional argument."""
    return Instr(instr.name, instr.arg + 1, location=instr.location)


def is_method_load(instr):
    if instr.name in METHOD_LOADS:
        return True
    return instr.name == "LOAD_ATTR" and ATTR_ARG_IS_PAIR and instr.arg[0]


def attr_name(instr):
    arg = instr.arg
    return arg[1] if isinstance(arg, tuple) else arg


def compare_casts_to_bool(instr):
    """3.13 fuses ``bool()`` into COMPARE_OP when the result feeds a jump."""
    return PY313 and instr.arg.name.endswith("_CAST")


def compare_name(instr):
    name = instr.arg.name
    return name[:-5] if name.endswith("_CAST") else name


def global_null_pair(instr):
    """``(pushes_null, name)`` of a LOAD_GLOBAL."""
    arg = instr.arg
    if isinstance(arg, tuple):
        return arg
    return False, arg


def plain_load_global(name, loc):
    return Instr("LOAD_GLOBAL", (False, name), location=loc)


def frame_locals_snapshot(frame):
    """What ``locals()`` returns when called from ``frame``'s code.

    3.11/3.12 hand back the frame's own (synced) dict; 3.13 (PEP 667) a fresh
    snapshot of the write-through proxy.
    """
    if PY313 and frame.f_code.co_flags & 0x1:  # (CO_OPTIMIZED: a function's frame)
        return dict(frame.f_locals)
    return frame.f_locals  # (a module or class body, eval/exec: its own mapping)


def _cache_sizes():
    """Inline cache entries (2-byte units) after each opcode, as ``co_code`` shows them."""
    import dis
    if hasattr(dis, "_get_cache_size"):  # 3.13+: by name
        return [dis._get_cache_size(dis.opname[op]) if not dis.opname[op].startswith("<") else 0
                for op in range(256)]
    return [dis._inline_cache_entries[op] for op in range(256)]


_CACHE_SIZES = _cache_sizes()


def has_invalid_opcode(code):
    """Whether ``code`` holds an opcode CPython does not know: ``co_code`` shows it as a
    ``CACHE`` (0) where an instruction starts, and ``bytecode`` drops it, so a routed copy
    would run where CPython raises SystemError (``unknown opcode``)."""
    raw, sizes, i = code.co_code, _CACHE_SIZES, 0
    while i < len(raw):
        op = raw[i]
        if op == 0:
            return True
        i += 2 * (1 + sizes[op])
    return False
