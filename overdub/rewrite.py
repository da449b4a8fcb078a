"""The overdub rewrite: route every call, operator, subscript and attribute access.

``rewrite_code(code)`` turns a function body into a *template*: the same code in
which each routed instruction loads a :class:`Slot` constant and calls it.  A
slot names what it stands for (``("call",)``, ``("binop", "ADD")``, ...); the
runtime (``runtime.py``) swaps the slots for one context instance's
callables with a cheap ``code.replace(co_consts=...)``.  Templates do not
depend on the context, so one rewrite serves every context type and instance.

Each rewrite is local and keeps the stack depth the original code had between
statements, so jump targets, exception-table entries and line numbers carry
over (inserted instructions inherit the location of the one they replace).

========================  ====================================================
original                  rewritten (stack shown bottom..top)
========================  ====================================================
call heads NULL/f         ``[call, f, args...]`` -> ``call(f, *args)``
``obj.m(args)``           ``[meth, obj, "m", args...]`` -> ``meth(obj, "m", *args)``
                          (``methload(obj, "m")`` first where ``args`` may run code)
``f(*a, **k)``            ``call_ex(f, a, k)``
``a + b``                 ``binop_ADD(a, b)``
``a < b``                 ``compare_LT(a, b)``
``x in c``                ``contains(x, c)``
``-a``                    ``unary_NEGATIVE(a)``
``c[k]``, ``c[k] = v``    ``getitem(c, k)``, ``setitem(c, k, v)``
``o.x``, ``o.x = v``      ``getattr(o, "x")``, ``setattr(o, "x", v)``
``for v in x``, ``*x``     ``iterable(x)``, then the instruction that iterates it
========================  ====================================================

``iterable`` is ``None`` -- the instruction runs as it is -- unless the context has
primitives on ``iter`` (capstan's, for a plain array holding differentiated values):
iteration is no event a hook sees.
"""
from ._compat import BUILTINS as __builtins__  # noqa: F401 (never the user's patched builtins)
from bytecode import Bytecode, CompilerFlags, Instr, Label, SetLineno, TryBegin

from . import _compat as C
from ._native import GuardedOperator
from .ops import OPERATOR_OF
from .lifetimes import MACHINERY_TYPES, Table, machinery_type

# (the bytecode library makes, and keeps, one flag object per combination of a code object's
# flags on its first rewrite: a routed gc.get_objects() leaves them out with overdub's own)
MACHINERY_TYPES.add(CompilerFlags)


@machinery_type
class Slot:
    """A placeholder constant in a template, replaced per context instance."""

    __slots__ = ("key",)
    _interned = Table()

    def __new__(cls, *key):
        try:
            return cls._interned[key]
        except KeyError:
            self = cls._interned[key] = object.__new__(cls)
            self.key = key
            return self

    def __repr__(self):
        return "<overdub slot %s>" % ":".join(map(str, self.key))


#: calls with up to this many positional arguments get a fixed-arity dispatcher
MAX_FIXED_ARITY = 3


class RewriteError(Exception):
    """The rewriter met code it cannot route; the function then runs plainly."""


_NO_FALLTHROUGH = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
                   "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
                   "JUMP", "JUMP_NO_INTERRUPT"}
_UNARY = {"UNARY_NEGATIVE": "NEGATIVE", "UNARY_POSITIVE": "POSITIVE", "UNARY_INVERT": "INVERT"}
#: instructions that iterate the value on top of the stack (``for``, ``yield from``,
#: unpacking, ``[*x]``, ``{*x}``, ``f(*x)``'s argument list)
_ITERATING = {"GET_ITER", "GET_YIELD_FROM_ITER", "UNPACK_SEQUENCE", "UNPACK_EX", "LIST_EXTEND", "SET_UPDATE"}


def _load(slot, loc):
    return Instr("LOAD_CONST", slot, location=loc)


class _Rewriter:
    def __init__(self, bc, inline_prehook=False):
        self.bc = bc
        self.inline_prehook = inline_prehook  # emit prehook calls before guarded operators
        self.out = []
        self.heads = {}        # stack index -> ("null", load_instr) | ("method",)
        self.label_depth = {}
        self.label_heads = {}  # label -> heads pending when a jump to it was seen
        self.depth = 0
        self.skip_call = False
        self.depths_known = True  # every exception-table depth was read from the original
        self.max_extra = 0

    # -- stack-depth bookkeeping ------------------------------------------------
    def _enter_label(self, label, falls_through):
        known = self.label_depth.get(label)
        if not falls_through:
            self.depth = known
            # the compiler may duplicate a call's tail into each branch of a
            # conditional inside its arguments: heads pending at the jump are again
            # pending here
            self.heads = dict(self.label_heads.get(label, {}))
        elif self.depth is None:
            self.depth = known

    def _advance(self, instr):
        if self.depth is None:
            return
        if instr.has_jump():
            self.label_depth.setdefault(instr.arg, self.depth + instr.stack_effect(jump=True))
            self.label_heads.setdefault(instr.arg, dict(self.heads))
        if instr.name == "RETURN_GENERATOR":  # resumes with the sent value on the stack
            self.depth += 1
        else:
            self.depth += instr.stack_effect(jump=False)

    def _pending_methods(self, below=None):
        """Method calls in flight (below stack index ``below``): each holds one extra slot."""
        return sum(1 for index, head in self.heads.items()
                   if head[0] == "method" and (below is None or index < below))

    # -- the rewrite ------------------------------------------------------------
    def run(self):
        falls_through = True
        for item in self.bc:
            if isinstance(item, Label):
                self._enter_label(item, falls_through)
                self.out.append(item)
                falls_through = True
                continue
            if isinstance(item, TryBegin):
                depth = item.stack_depth  # the original's (read with conserve_...stackdepth)
                if isinstance(depth, int):
                    self.label_depth.setdefault(item.target, depth + 1 + bool(item.push_lasti))
                    # method calls in flight hold one more slot than CPython's [meth, self]
                    item.stack_depth = depth + self._pending_methods(below=depth)
                else:
                    self.depths_known = False
                self.out.append(item)
                continue
            if not isinstance(item, Instr):  # SetLineno, TryEnd
                self.out.append(item)
                continue
            self.out.extend(self._instr(item))
            self._advance(item)
            self.max_extra = max(self.max_extra, self._pending_methods())
            falls_through = item.name not in _NO_FALLTHROUGH
        return self.out

    def _instr(self, ins):
        name, loc, d = ins.name, ins.location, self.depth
        if name == "PUSH_NULL":
            load = _load(Slot("call"), loc)
            out = C.replace_push_null(load, loc)
            if d is not None:
                self.heads[C.push_null_head(d)] = ("null", load, out)
            return out
        if name == "LOAD_GLOBAL":
            null, gname = C.global_null_pair(ins)
            if not null:
                return [ins]
            load = _load(Slot("call"), loc)
            out = [load, C.plain_load_global(gname, loc)]
            if d is not None:
                self.heads[d] = ("null", load, out)
            return out
        if C.is_method_load(ins):
            if d is None:
                raise RewriteError("method load at unknown stack depth")
            load = _load(Slot("meth"), loc)
            name = Instr("LOAD_CONST", C.attr_name(ins), location=loc)
            self.heads[d - 1] = ("method", load, name, [False])  # ([True]: methload emitted)
            return [load, Instr("SWAP", 2, location=loc), name]
        if name in C.CALLS or name == "CALL_FUNCTION_EX":
            return self._call(ins)
        if name == "CALL" and self.skip_call:
            self.skip_call = False
            return []  # emitted together with its PRECALL
        if name == "LOAD_ATTR":
            return [_load(Slot("getattr"), loc), Instr("SWAP", 2, location=loc),
                    Instr("LOAD_CONST", C.attr_name(ins), location=loc), *C.call_instrs(1, loc)]
        if name == "STORE_ATTR":  # [v, obj] -> setattr(obj, name, v)
            return [_load(Slot("setattr"), loc), Instr("SWAP", 3, location=loc),
                    Instr("LOAD_CONST", ins.arg, location=loc), Instr("SWAP", 2, location=loc),
                    *C.call_instrs(2, loc), Instr("POP_TOP", location=loc)]
        if name == "DELETE_ATTR":
            return [_load(Slot("delattr"), loc), Instr("SWAP", 2, location=loc),
                    Instr("LOAD_CONST", ins.arg, location=loc), *C.call_instrs(1, loc),
                    Instr("POP_TOP", location=loc)]
        if name == "BINARY_OP":
            return self._guarded(ins, Slot("binop", ins.arg.name), [])
        if name == "COMPARE_OP":
            cast = [Instr("TO_BOOL", location=loc)] if C.compare_casts_to_bool(ins) else []
            return self._guarded(ins, Slot("compare", C.compare_name(ins)), cast)
        if name == "CONTAINS_OP":  # [x, c] -> contains(x, c), i.e. operator.contains(c, x)
            return self._binary(Slot("notcontains" if ins.arg else "contains"), loc)
        if name in _UNARY:
            return [_load(Slot("unary", _UNARY[name]), loc), Instr("SWAP", 2, location=loc),
                    *C.call_instrs(0, loc)]
        if name == "BINARY_SUBSCR":  # [c, k] -> getitem(c, k)
            return self._binary(Slot("getitem"), loc)
        if name == C.SLICE_LOAD:
            return [Instr("BUILD_SLICE", 2, location=loc), *self._binary(Slot("getitem"), loc)]
        if name == "STORE_SUBSCR":  # [v, c, k] -> setitem(c, k, v)
            return self._store_subscr(loc)
        if name == C.SLICE_STORE:
            return [Instr("BUILD_SLICE", 2, location=loc), *self._store_subscr(loc)]
        if name == "DELETE_SUBSCR":  # [c, k] -> delitem(c, k)
            return [*self._binary(Slot("delitem"), loc), Instr("POP_TOP", location=loc)]
        if name == C.SUPER_ATTR:
            return self._super_attr(ins)
        if name in _ITERATING:  # [x] -> iterable(x), then the instruction that iterates x
            return self._iterating(ins)
        return [ins]

    @staticmethod
    def _iterating(ins):
        """``[..., x]`` -> ``[..., iterable(x)]`` before ``ins`` iterates ``x``, when the
        context has a primitive on ``iter`` (the slot is ``None`` otherwise, and ``ins``
        runs as it is)."""
        loc = ins.location
        plain = Label()
        slot = Slot("iterable")
        return [_load(slot, loc), *C.to_bool(loc), Instr(C.POP_JUMP_FORWARD_IF_FALSE, plain, location=loc),
                _load(slot, loc), Instr("SWAP", 2, location=loc), *C.call_instrs(0, loc), plain, ins]

    @staticmethod
    def _binary(slot, loc):
        """``[a, b]`` -> ``slot(a, b)``."""
        return [_load(slot, loc), Instr("SWAP", 3, location=loc), Instr("SWAP", 2, location=loc),
                *C.call_instrs(1, loc)]

    def _guarded(self, ins, slot, after_slot):
        """``[a, b]`` -> the original instruction when both operands' exact types are in
        the runtime's guard set for this operator (builtin types, when nothing in the
        context can observe or replace the operation), else ``slot(a, b)``.  The check
        is inline, so the common case costs no Python-level call.  With the C layer,
        all of it is one call of a C ``GuardedOperator`` (the ``guarded`` slot)."""
        loc = ins.location
        if GuardedOperator is not None:
            return self._binary(Slot("guarded", *slot.key), loc) + after_slot
        slow, end, nopre = Label(), Label(), Label()
        guard, pre = Slot("guard", *slot.key), Slot("pre", *slot.key)
        # an empty guard set (the context observes this operator) skips the type checks
        out = [_load(guard, loc), *C.to_bool(loc),
               Instr(C.POP_JUMP_FORWARD_IF_FALSE, slow, location=loc)]
        if self.inline_prehook:
            # a context whose only say is a prehook gets it called right here (``pre`` is
            # None otherwise): pre(operator.add, a, b), then the operator as if unobserved
            out += [_load(pre, loc), *C.to_bool(loc),
                    Instr(C.POP_JUMP_FORWARD_IF_FALSE, nopre, location=loc),
                    *C.call_with_operands(_load(pre, loc), OPERATOR_OF[slot.key], loc),
                    Instr("POP_TOP", location=loc), nopre]
        for depth in (2, 1):  # a, then b
            out += C.call_type_of(depth, type, loc)
            out += [_load(guard, loc), Instr("CONTAINS_OP", 0, location=loc),
                    Instr(C.POP_JUMP_FORWARD_IF_FALSE, slow, location=loc)]
        out += [ins, Instr("JUMP_FORWARD", end, location=loc), slow]
        out += self._binary(slot, loc) + after_slot + [end]
        return out

    @staticmethod
    def _store_subscr(loc):
        return [_load(Slot("setitem"), loc), Instr("SWAP", 4, location=loc),
                *C.call_instrs(2, loc), Instr("POP_TOP", location=loc)]

    def _super_attr(self, ins):
        """3.12+: ``[super, cls, self]`` -> ``super_attr(super, cls, self, flags, name)``."""
        loc = ins.location
        method, two_args, name = ins.arg
        out = [_load(Slot("super_attr"), loc), Instr("SWAP", 4, location=loc),
               Instr("SWAP", 3, location=loc), Instr("SWAP", 2, location=loc),
               Instr("LOAD_CONST", (two_args, name), location=loc), *C.call_instrs(3, loc)]
        if method:  # the call that follows expects two head slots: [call, attr]
            d = self.depth
            if d is None:
                raise RewriteError("super method load at unknown stack depth")
            load = _load(Slot("call"), loc)
            self.heads[d - 3] = ("null", load, None)
            out += [load, Instr("SWAP", 2, location=loc)]
        return out

    def _call(self, ins):
        """A call instruction (3.11: its PRECALL; the CALL after it is then skipped)."""
        loc, d = ins.location, self.depth
        head = self.heads.pop(C.head_index(ins, d), None) if d is not None else None
        self.skip_call = ins.name == C.CALL_PRELUDE
        if ins.name == "CALL_FUNCTION_EX":
            if head is None or head[0] == "method":  # CPython 3.11-3.13 never emit these
                raise RewriteError("f(*args) call with an unexpected callee slot")
            head[1].arg = Slot("call_ex")
            out = [] if ins.arg & 1 else [Instr("LOAD_CONST", None, location=loc)]
            return out + C.call_ex_heads(head[2], loc) + C.call_instrs(2, loc)
        if head is None:
            # The callee sits in the first head slot and its first argument in the
            # second (decorators, comprehension calls): [f, a0] -> [call, f, a0].
            if C.is_keyword_call(ins, self.out[-1] if self.out else None):
                raise RewriteError("keyword call without a NULL head")
            if ins.arg == 0:
                return [_load(Slot("call", 1), loc), Instr("SWAP", 3, location=loc),
                        Instr("SWAP", 2, location=loc), *C.call_instrs(1, loc)]
            # e.g. a with-statement's exit call [exit, None, None, None]: pack the
            # arguments, [f, (a0, ...)] -> call_ex(f, (a0, ...), None)
            return [Instr("BUILD_TUPLE", ins.arg + 1, location=loc),
                    _load(Slot("call_ex"), loc), Instr("SWAP", 3, location=loc),
                    Instr("SWAP", 2, location=loc), Instr("LOAD_CONST", None, location=loc),
                    *C.call_instrs(2, loc)]
        keywords = C.is_keyword_call(ins, self.out[-1] if self.out else None)
        if not keywords and ins.arg <= MAX_FIXED_ARITY:  # a dispatcher without *args
            head[1].arg = Slot(head[1].arg.key[0], ins.arg)
        if head[0] == "method":  # one more argument: the attribute name
            self._look_up_first(head)
            if C.PY311:
                return C.call_instrs(ins.arg + 1, loc)
            return [C.bump_call(ins)]
        if C.PY311:
            return C.call_instrs(ins.arg, loc)
        return [ins]


    def _look_up_first(self, head):
        """A method call whose arguments may run code looks its method up before them, as
        CPython does (a ``__getattr__``'s side effects, an AttributeError, come first):
        ``methload(obj, name)`` goes in right after the load of ``obj``.  ``meth`` looks
        the method up at the call otherwise, which no one can tell apart."""
        _, _, name, emitted = head
        if emitted[0]:
            return
        out = self.out
        at = len(out) - 1
        while out[at] is not name:
            at -= 1
        if all(_runs_no_code(item) for item in out[at + 1:]):
            return
        emitted[0] = True
        loc = name.location
        out[at:at] = [_load(Slot("methload"), loc), Instr("SWAP", 2, location=loc),
                      Instr("LOAD_CONST", name.arg, location=loc), *C.call_instrs(1, loc)]


def _runs_no_code(item):
    if isinstance(item, Instr):
        return item.name in C.RUNS_NO_CODE
    return isinstance(item, SetLineno)  # (a label: a conditional expression; try blocks)


#: stack slots a routed operation may add on top of what the original expression held
_OP_EXTRA = 5


def rewrite_bytecode(bc, inline_prehook=False):
    """Rewrite a ``bytecode.Bytecode`` in place; return the rewriter (its depth facts)."""
    rewriter = _Rewriter(bc, inline_prehook)
    new = rewriter.run()
    bc.clear()
    bc.extend(new)
    return rewriter


def _keep_local_order(bc, code):
    """Number ``bc``'s local variables as ``code`` does: ``bytecode`` numbers them by first
    use (on 3.13, the operands of two-name instructions such as ``LOAD_FAST_LOAD_FAST``
    first), and the order shows in ``frame.f_locals`` (3.13's proxy lists a variable
    written through it in its place: CPython's test_frame.TestFrameLocals).  Its
    ``argnames`` are only numbered first, so they carry every variable in order."""
    names = list(code.co_varnames)
    if names[:len(bc.argnames)] == list(bc.argnames):
        bc.argnames = names


def rewrite_code(code, pass_=None, ctx_type=None, inline_prehook=False):
    """Template code object for ``code`` (after running the user pass, if any); with
    ``inline_prehook``, operators call the context's prehook inline (see ``_guarded``).

    Without a pass, the exception-table depths were carried over exactly, so the
    slow control-flow analysis of ``bytecode`` is skipped: the stack size is the
    original one plus what routed operations and method calls in flight add.
    """
    if C.has_invalid_opcode(code):  # (run plainly: CPython raises its SystemError)
        raise ValueError("%s: an unknown opcode" % code.co_qualname)
    bc = Bytecode.from_code(code, conserve_exception_block_stackdepth=True)
    if pass_ is not None:
        from .passes import run_pass

        bc = run_pass(pass_, ctx_type, bc, code)
        rewrite_bytecode(bc, inline_prehook)
        _keep_local_order(bc, code)
        return bc.to_code()
    rewriter = rewrite_bytecode(bc, inline_prehook)
    _keep_local_order(bc, code)
    if not rewriter.depths_known:
        return bc.to_code()
    stacksize = code.co_stacksize + _OP_EXTRA + rewriter.max_extra
    return bc.to_code(stacksize=stacksize, compute_exception_stack_depths=False)
