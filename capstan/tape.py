"""A tape you can keep: record ``f`` once, replay it for new inputs (ReverseDiff's
compiled tapes, with Cassette-style "tunable dynamism").

``tape = record_tape(f, *args)`` runs ``f`` once under reverse mode and keeps its
records: for each primitive call, the function, which earlier nodes feed it and the
constants it used; and a *guard* for every decision the run made on a
differentiated value (``x > 0``, ``int(x)``, ``round(x)``...).  Then

* ``tape(*new_args)`` replays the forward pass on new values of the same shapes,
* ``tape.gradient(*new_args)`` replays it and runs the backward pass,
* ``tape.compile()`` turns a scalar tape into generated Python source (one line per
  record, no dispatch at all) that returns ``(value, gradients)``.

No overdub machinery runs during a replay.  If a guard's outcome changes -- the
control flow of ``f`` would differ for these inputs -- the replay raises
:class:`TapeGuardError` (``on_mismatch="error"``, the default) or records ``f`` anew
for the new inputs (``on_mismatch="rerecord"``): never a wrong gradient.
"""
import dataclasses
import math
import operator
import re
from typing import Any, Callable

import numpy as np

from overdub import Context, Tagged
from overdub.tagging import PLAIN_PROTOCOLS, metadata_of, tag_of, value_of

from . import fastpaths, losses, structure
from .reverse import (CUSTOM, GETITEM, GUARD, INPUT, RULE, SETITEM, Record, ReverseCtx, _has_nan, _Run, backward,
                      real_scalar)
from .rules import registry

_UNTRIED = object()
_DECISIONS = {"__bool__": bool, "__index__": operator.index, "__int__": int}
#: protocols whose result says something of the value without carrying its derivative:
#: decisions, and text (``f"{x:.2f}"``, ``"%s" % x``, ``hash(x)``)
_OUTCOMES = frozenset(_DECISIONS) | {"__str__", "__repr__", "__format__", "__hash__"}
_PLAIN_KINDS = frozenset("biuSUb")


class TapeGuardError(RuntimeError):
    """A replayed tape would take another path through ``f`` for these inputs."""


class Raised:
    """A guard's outcome when the call raised (an exception of type ``type``): a replay
    follows the same path only if the call raises it again."""

    __slots__ = ("type",)

    def __init__(self, type_):
        self.type = type_

    def __eq__(self, other):
        return type(other) is Raised and other.type is self.type

    def __hash__(self):
        return hash(self.type)

    def __repr__(self):
        return "Raised(%s)" % self.type.__name__


class TapeCtx(ReverseCtx):
    """Reverse mode that records replayable steps and guards (no inline shortcuts)."""

    keep_bases = True
    recording = True

    def apply(self, f, args, kwargs):
        try:
            if f in registry.NONDIFF:
                vals, parents, found, _ = self._split(args)
                if found:
                    return self._guard(f, vals, parents, kwargs, Context.fallback(self, f, *vals, **kwargs))
            size = len(self.tape)
            result = ReverseCtx.apply(self, f, args, kwargs)
        except Exception as exc:  # (math.sqrt(-1.0) in a try: the except branch depends on the value)
            vals, parents, found, _ = self._split(args)
            if found:
                self._guard(f, vals, parents, kwargs, Raised(type(exc)))
            raise
        last = self.tape[-1] if len(self.tape) > size else None
        if _plain_outcome(result) and not (type(last) is Record and last.kind is GUARD and last.ans is result):
            # a value without derivative made from differentiated ones (``x.astype(int)``,
            # ``"%.2f" % x``): later steps take it as a constant, so it is a decision too
            vals, parents, found, _ = self._split(args)
            if found:
                self._guard(f, vals, parents, kwargs, result)
        return result

    def fallback(self, f, /, *args, **kwargs):
        result = ReverseCtx.fallback(self, f, *args, **kwargs)
        if not self._carries(result):  # (np.trapezoid's Python body carries the derivative: its
            vals, parents, found, _ = self._split(args)  # steps are recorded, no decision)
            if found:
                self._guard(f, vals, parents, kwargs, result)
        return result

    def _carries(self, result):
        """Whether ``result`` holds a value of this run (which the replay recomputes)."""
        for leaf in structure.flatten(result)[0]:
            if (type(leaf) is Tagged and tag_of(leaf) is self._tagkey) or (
                    type(leaf) is np.ndarray and self.shadows and self.shadow(leaf) is not None):
                return True
        return False

    def escape(self, protocol, x, /, *args):
        """``if x:``, ``not x``, ``x and y`` ask a differentiated value for its truth (and
        ``operator.index`` for an integer) outside any routed call: a decision on the
        value, so a guard like a comparison's."""
        result = ReverseCtx.escape(self, protocol, x, *args)
        if protocol in _OUTCOMES and tag_of(x) is self._tagkey:  # (f"{x:.2f}", hash(x): text and
            # numbers made from the value, which later steps take as constants)
            f = _DECISIONS.get(protocol) or PLAIN_PROTOCOLS[protocol]
            self._guard(f, [value_of(x), *args], [metadata_of(x)] + [None] * len(args), {}, result)
        return result

    def _guard(self, f, vals, parents, kwargs, result):
        if self.recording:  # (not once the run is over: printing a kept value asks its repr)
            self.tape.append(Record(GUARD, f, result, tuple(vals), kwargs, parents))
        return result


for _name in [n for n in vars(ReverseCtx) if n.startswith("_fast_")]:
    setattr(TapeCtx, _name, None)  # every step must name its function to be replayable


class Tape:
    """A recorded run of ``f`` (see the module docstring)."""

    def __init__(self, f: Callable[..., Any], args: tuple[Any, ...], on_mismatch: str = "error") -> None:
        if on_mismatch not in ("error", "rerecord"):
            raise ValueError("on_mismatch must be 'error' or 'rerecord', got %r" % (on_mismatch,))
        self.f, self.on_mismatch = f, on_mismatch
        self._record(args)

    def _record(self, args):
        ctx = TapeCtx()
        try:
            run = _Run(self.f, args, "record_tape", ctx=ctx)
        finally:
            ctx.recording = False
        self.records = run.ctx.tape
        for rec in self.records:
            if type(rec) is Record and rec.kind is CUSTOM:
                raise TypeError("capstan.record_tape: %s uses checkpoint, hook or a custom adjoint, "
                                "which a tape cannot replay yet" % getattr(self.f, "__name__", self.f))
        self.run = run
        self.inputs = [(leaves, nodes) for leaves, nodes, _ in run.arg_structs]
        self.layouts = [_layout(a) for a in args]
        self.writes = any(type(rec) is Record and rec.kind is SETITEM for rec in self.records)
        self.sharing = _sharing(args) if self.writes else None
        self.out_nodes = [run.ctx.node(leaf) for leaf in run.out_leaves]
        self.out_consts = [None if n is not None else leaf for n, leaf in zip(self.out_nodes, run.out_leaves)]
        self.value = run.primal()
        self._fast = _UNTRIED  # generated code for scalar tapes, made on first replay

    # -- replay --------------------------------------------------------------------------------
    def _bind(self, args):
        """The new input values by node, once the arguments are known to be like the recorded
        ones: the same structure, leaf types, shapes and dtypes, constants equal (of the same
        type: ``True`` is no ``1``), and arrays sharing memory as they did, where ``f`` writes
        into arrays (a write through one would change another)."""
        if len(args) != len(self.inputs):
            raise TypeError("this tape takes %d arguments, got %d" % (len(self.inputs), len(args)))
        values = {}
        for a, (leaves, nodes), layout in zip(args, self.inputs, self.layouts):
            if type(a) is float and len(leaves) == 1 and type(leaves[0]) is float:  # (the commonest)
                values[nodes[0]] = a
                continue
            new, _ = structure.flatten(a)
            if len(new) != len(leaves) or _layout(a) != layout:
                raise ValueError("argument structure differs from the recorded one")
            for old, x, n in zip(leaves, new, nodes):
                if n is None:
                    if not _same(x, old):
                        raise ValueError("non-differentiable argument %r differs from the recorded %r"
                                         % (x, old))
                    continue
                if type(x) is not type(old):
                    raise TypeError("argument of type %s where the tape recorded %s; record a new tape "
                                    "for it" % (type(x).__name__, type(old).__name__))
                if type(x) is np.ndarray and x.dtype != old.dtype:
                    raise TypeError("argument of dtype %s where the tape recorded %s; record a new tape "
                                    "for it" % (x.dtype, old.dtype))
                if np.shape(x) != np.shape(old):
                    raise ValueError("argument shape %s differs from the recorded %s"
                                     % (np.shape(x), np.shape(old)))
                values[n] = x
        if self.writes and _sharing(args) != self.sharing:
            raise ValueError("arrays passed share memory differently from the recorded ones, and f "
                             "writes into arrays; record a new tape for them")
        return values

    def _replay(self, args):
        """Replayed records (fresh values) or ``None`` when a guard fails."""
        values = self._bind(args)
        out = []
        for n, rec in enumerate(self.records):
            kind = rec.kind
            if kind is INPUT:
                out.append(Record(INPUT, None, values[n], (), None, ()))
                continue
            args_ = _args(rec, out)
            if kind is RULE:
                ans = rec.f(*args_, **rec.kwargs)
            elif kind is GETITEM:
                ans = out[rec.parents[0]].ans[rec.kwargs[2]]  # (shape, dtype, index)
            elif kind is SETITEM:
                nc, nv = rec.parents
                const_v, base = rec.vals
                arr = np.array(out[nc].ans if nc is not None else base, copy=True)
                arr[rec.kwargs[1]] = out[nv].ans if nv is not None else const_v  # (shape, index, dtype)
                ans = arr
            elif kind is GUARD and type(rec.ans) is Raised:
                try:
                    rec.f(*args_, **rec.kwargs)
                except rec.ans.type:
                    ans = rec.ans
                except Exception:  # noqa: BLE001 -- another error: another path
                    return None
                else:
                    return None
            elif kind is GUARD:
                ans = rec.f(*args_, **rec.kwargs)
                if not _same(ans, rec.ans):
                    return None
            out.append(Record(kind, rec.f, ans, tuple(args_), rec.kwargs, rec.parents))
        return out

    def _checked(self, args):
        out = self._replay(args)
        if out is None:
            if self.on_mismatch == "rerecord":
                self._record(args)
                return self._replay(args)
            raise TapeGuardError("capstan tape: %s would take another branch for these inputs (a "
                                 "comparison on a differentiated value came out differently); record "
                                 "a new tape, or pass on_mismatch='rerecord'"
                                 % getattr(self.f, "__name__", self.f))
        return out

    def _output(self, out):
        leaves = [c if n is None else out[n].ans for n, c in zip(self.out_nodes, self.out_consts)]
        return self.run.out_rebuild(leaves)

    def __call__(self, *args: Any) -> Any:
        """``f(*args)`` by replaying the tape."""
        return self._output(self._checked(args))

    def gradient(self, *args: Any) -> tuple[Any, ...]:
        """``capstan.gradient(f, *args)`` by replaying the tape (through generated code,
        made once, when every argument is a number)."""
        fast = self._generated(args)
        if fast is not None:
            try:
                value, grads = fast(*args)
            except TapeGuardError:
                if self.on_mismatch != "rerecord":
                    raise
                self._record(args)
                return self.gradient(*args)
            except ArithmeticError:  # (an infinite partial, 0.5 / sqrt(0.0): the replay below
                pass                 # takes it as the rule table says, as capstan.gradient does)
            else:
                if type(value) is float and all(type(g) is float and g == g for g in grads):
                    return tuple(grads)
                # (a complex or NaN result: the replay below checks it as capstan.gradient does)
        out = self._checked(args)
        if len(self.out_nodes) != 1 or self.out_nodes[0] is None:
            raise ValueError("tape.gradient needs a scalar output that depends on the inputs")
        value = out[self.out_nodes[0]].ans
        if type(value) is not float:
            real_scalar("tape.gradient", value)
        cts = backward(out, {self.out_nodes[0]: 1.0})
        self.run.ctx.tape = out
        out_grads: tuple[Any, ...] = self.run.back_from(cts)
        if _has_nan(out_grads) and structure.all_finite((value, args)):
            raise losses.undefined_in_reverse("tape.gradient")
        return out_grads

    def _generated(self, args):
        if not all(type(a) is float for a in args):
            return None
        if self._fast is _UNTRIED:
            self._fast = None
            if all(nodes == [nodes[0]] and nodes[0] is not None for _, nodes in self.inputs):
                try:
                    self._fast = compile_tape(self)
                except TypeError:  # not a scalar tape: interpreted replay
                    pass
        if self._fast is not None:
            self._bind(args)  # (the same checks as the interpreted replay)
        return self._fast

    # -- generated code ------------------------------------------------------------------------
    def compile(self, numba: bool = False) -> Callable[..., Any]:
        """Generated code for a scalar tape: ``fn(*args) -> (value, gradients)``; it checks
        the guards too (raising :class:`TapeGuardError`); ``fn.source`` shows it.  With
        ``numba=True`` (numba installed) a tape of operators and common math functions is
        compiled to machine code by ``numba.njit``: much faster calls, but seconds of
        compilation for long tapes."""
        fn: Callable[..., Any] = compile_tape(self, numba)
        return fn


def _args(rec, out):
    args = []
    for i, p in enumerate(rec.parents):
        if p is None:
            args.append(rec.vals[i] if i < len(rec.vals) else None)
        elif type(p) is list:
            args.append(type(rec.vals[i])(out[q].ans if q is not None else v
                                          for q, v in zip(p, rec.vals[i])))
        else:
            args.append(out[p].ans)
    return args


def _same(a, b):
    """Whether ``a`` (a replay's) is the recorded ``b``: of the same type, arrays of the same
    shape and dtype (never equal by broadcasting), containers element by element, NaN equal
    to NaN."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is np.ndarray:
        return a.shape == b.shape and a.dtype == b.dtype and bool(
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if ta is tuple or ta is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        same = a == b
        if type(same) is not bool:
            same = bool(np.all(same))
    except (TypeError, ValueError):
        return False
    return same or (isinstance(a, (float, complex, np.inexact)) and a != a and b != b)


def _plain_outcome(x):
    """Whether ``x`` is a value without derivative -- a bool, int, text, an integer or text
    array, a tuple of them -- and so, made from differentiated values, a decision."""
    tx = type(x)
    if tx is bool or tx is int or tx is str or tx is bytes or isinstance(x, (np.integer, np.bool_, np.str_)):
        return True
    if tx is np.ndarray:
        return x.dtype.kind in _PLAIN_KINDS
    if tx is tuple:
        return len(x) > 0 and all(_plain_outcome(e) for e in x)
    return False


def _layout(x):
    """The containers of an argument, leaves left out: types, lengths and keys."""
    tx = type(x)
    if tx is float or tx is np.ndarray or tx is int:
        return None
    if tx is list or tx is tuple or (isinstance(x, tuple) and hasattr(tx, "_fields")):
        return (tx, tuple(_layout(e) for e in x))
    if isinstance(x, dict):
        return (tx, tuple((k, _layout(v)) for k, v in x.items()))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (tx, tuple((f.name, _layout(getattr(x, f.name))) for f in dataclasses.fields(x) if f.init))
    return None


def _sharing(args):
    """Which array leaves of the arguments may share memory: pairs of positions."""
    arrays = [leaf for a in args for leaf in structure.flatten(a)[0] if isinstance(leaf, np.ndarray)]
    return {(i, j) for i in range(len(arrays)) for j in range(i + 1, len(arrays))
            if np.may_share_memory(arrays[i], arrays[j])}


def record_tape(f: Callable[..., Any], *args: Any, on_mismatch: str = "error") -> Tape:
    """Record ``f(*args)`` once as a :class:`Tape` to replay for new inputs."""
    if not callable(f):
        raise TypeError("capstan.record_tape(f, *args): f must be callable, got %r" % (f,))
    return Tape(f, args, on_mismatch)


def compile_tape(tape, use_numba=None):
    """Generated Python source for a tape of scalar steps (see :meth:`Tape.compile`)."""
    env = {"TapeGuardError": TapeGuardError, "math": math}
    inputs = [n for _, nodes in tape.inputs for n in nodes]
    fwd, bwd = [], []
    checks = {}  # (numba: after a math function or a power, whether Python's would have raised)
    for n, rec in enumerate(tape.records):
        if rec.kind is INPUT:
            continue
        if rec.kind not in (RULE, GUARD) or any(type(p) is list for p in rec.parents):
            raise TypeError("tape.compile() handles scalar tapes (operators and math functions); "
                            "this one has %s steps: replay it with tape.gradient instead"
                            % {GETITEM: "indexing", SETITEM: "array-writing"}.get(rec.kind, "other"))
        args = []
        for i, p in enumerate(rec.parents):
            if p is not None:
                args.append("v%d" % p)
            elif type(rec.vals[i]) in (float, int) and math.isfinite(rec.vals[i]):
                args.append(repr(rec.vals[i]))
            else:
                env["c%d_%d" % (n, i)] = rec.vals[i]
                args.append("c%d_%d" % (n, i))
        if rec.kind is GUARD and type(rec.ans) is Raised:
            raise TypeError("tape.compile(): the recorded run caught an exception (%s) raised on a "
                            "differentiated value; replay it with tape.gradient instead"
                            % rec.ans.type.__name__)
        guard = fastpaths.COMPARE.get(rec.f) if rec.kind is GUARD and not rec.kwargs else None
        if guard is not None and len(args) == 2 and type(rec.ans) is bool:
            fwd.append("if (%s) is not %s: raise TapeGuardError('the tape would take another branch')"
                       % (_subst(guard, dict(zip("ab", args))), rec.ans))
            continue
        inline = _inline_forms(rec.f) if not rec.kwargs and rec.kind is RULE else None
        if (rec.f in (operator.pow, operator.ipow) and not rec.kwargs and len(rec.parents) == 2
                and rec.parents[1] is None and type(rec.vals[1]) in (int, float)):
            inline = fastpaths.POWER + (None,)
        if inline is not None and len(args) == len(inline) - 1:
            names = dict(zip("ab", args), r="v%d" % n)
            value, *partials = [None if e is None else _subst(e, names) for e in inline]
            fwd.append("v%d = %s" % (n, value))
            if use_numba and (rec.f in fastpaths.MATH or rec.f in (operator.pow, operator.ipow)):
                checks[len(fwd) - 1] = _domain_check("v%d" % n, args)
        else:
            env["f%d" % n] = rec.f
            env["k%d" % n] = rec.kwargs or {}
            call = "f%d(%s, **k%d)" % (n, ", ".join(args), n)
            if rec.kind is GUARD:
                env["e%d" % n] = rec.ans
                fwd.append("if %s != e%d: raise TapeGuardError('the tape would take another branch')"
                           % (call, n))
                continue
            fwd.append("v%d = %s" % (n, call))
            table = registry.PARTIALS.get(rec.f)
            if table is None:
                raise TypeError("tape.compile(): %s has no partial-derivative rule" % rec.f)
            partials = []
            for i, p in enumerate(table):
                env["p%d_%d" % (n, i)] = p
                partials.append(None if p is None
                                else "p%d_%d(v%d, %s, **k%d)" % (n, i, n, ", ".join(args), n))
        steps = [(p, partials[i]) for i, p in enumerate(rec.parents)
                 if p is not None and i < len(partials) and partials[i] is not None]
        bwd.append((n, steps, inline is not None and rec.f in _POLYNOMIAL))
    out = tape.out_nodes[0]
    if len(tape.out_nodes) != 1 or out is None:
        raise TypeError("tape.compile() needs a scalar output that depends on the inputs")
    back, names = _backward_lines(bwd, out)
    kinds = [leaf for leaves, _ in tape.inputs for leaf in leaves]
    env["checked_result"] = _checked_result
    for i, (n, leaf) in enumerate(zip(inputs, kinds)):  # (the argument types that were recorded)
        env["T%d" % n] = type(leaf)
    first = ["if %s: raise TypeError('capstan compiled tape: arguments of the types %s were recorded, got ' + "
             "', '.join(type(a).__name__ for a in (%s,)))"
             % (" or ".join("type(v%d) is not T%d" % (n, n) for n in inputs),
                ", ".join(type(leaf).__name__ for leaf in kinds), ", ".join("v%d" % n for n in inputs))]
    fn = _generated_function(tape, env, inputs, first + fwd, back, names, out, checked=True)
    if use_numba:
        checked = [line for i, line in enumerate(fwd) for line in (line, checks.get(i)) if line is not None]
        jit_source = _generated_function(tape, dict(env), inputs, checked, back, names, out).source
        fn = _with_numba(fn, jit_source, not any(name[0] in "fpck" and name[1:2].isdigit() for name in env))
    return fn


def _generated_function(tape, env, inputs, fwd, back, names, out, checked=False):
    """The function of the generated lines (``fn.source`` its source); ``checked``: its
    result is a real value and real gradients, or goes through :func:`_checked_result`."""
    lines = ["def compiled(%s):" % ", ".join("v%d" % n for n in inputs)]
    lines += ["    " + line for line in fwd]
    lines.append("    g%d = 1.0" % out)
    lines += ["    " + line for line in back]
    grads = [names.get(n, "0.0") for n in inputs]
    if checked:
        lines.append("    if type(v%d) is not float or %s: return checked_result(v%d, (%s,))"
                     % (out, " or ".join("type(%s) is not float" % g for g in grads), out, ", ".join(grads)))
    lines.append("    return v%d, (%s,)" % (out, ", ".join(grads)))
    source = "\n".join(lines[:1] + _reuse_names(lines[1:], {"v%d" % n for n in inputs}))
    exec(compile(source, "<capstan compiled tape of %s>" % getattr(tape.f, "__name__", "f"), "exec"), env)
    fn = env["compiled"]
    fn.source = source
    fn.numba = False
    return fn


def _checked_result(value, grads):
    """The generated code's result where the value or a gradient is no float: a complex
    value refused as ``capstan.gradient`` refuses it; gradients as floats (their real part,
    as ``capstan.gradient`` gives them for a real input)."""
    real_scalar("tape.compile()", value)
    return value, tuple(float(np.real(g)) for g in grads)


def _domain_check(result, operands):
    """A line for numba's code: raise ``FloatingPointError`` where a math function or a
    power made a NaN of numbers or an infinity of finite numbers -- where Python's raises
    (``math.sqrt(-1.0)``, ``math.exp(1000.0)``, ``0.0 ** -1``) or gives a complex number, and
    numba's returns NaN or infinity; the caller then runs the Python code, for Python's answer."""
    numbers = " and ".join("%s == %s" % (a, a) for a in operands)
    finite = " and ".join("abs(%s) != math.inf" % a for a in operands)
    return ("if (%s != %s and %s) or (abs(%s) == math.inf and %s): raise FloatingPointError"
            % (result, result, numbers, result, finite))


_LOCAL = re.compile(r"\b([vg]\d+)\b")
_ASSIGNMENT = re.compile(r"^(\s*)([vg]\d+) (\+?=) (.*)$")


def _reuse_names(lines, params):
    """The body of a generated function with its ``v``/``g`` locals renamed so that a
    name is used again once its value is dead: a frame of a few dozen locals instead of
    one per record (each call allocates, and on return clears, every local).  The body is
    straight-line code whose ``=`` assignments all run unconditionally (only ``+=`` may sit
    in an ``if g:`` body), so textual order is execution order and a value is dead after
    the last line that mentions it."""
    last = {}
    for i, line in enumerate(lines):
        for name in _LOCAL.findall(line):
            last[name] = i
    mapping = {p: p for p in params}
    free: list[str] = []
    fresh = 0
    out = []
    for i, line in enumerate(lines):
        m = _ASSIGNMENT.match(line)
        target = m.group(2) if m and m.group(3) == "=" and m.group(2) not in mapping else None
        rhs = m.group(4) if target is not None else line
        renamed = _LOCAL.sub(lambda t: mapping[t.group(1)], rhs)
        for name in set(_LOCAL.findall(rhs)):
            if last[name] == i and name not in params:
                free.append(mapping.pop(name))
        if target is None:
            out.append(renamed)
            continue
        if free:
            mapping[target] = free.pop()
        else:
            fresh += 1
            mapping[target] = "r%d" % fresh
        out.append("%s%s = %s" % (m.group(1), mapping[target], renamed))
        if last[target] == i:  # (a value nothing reads)
            free.append(mapping.pop(target))
    return out


def _with_numba(fn, source, pure):
    """``source`` (``fn``'s, with domain checks) compiled by numba's ``njit`` (the generated
    code must be pure arithmetic: operators and the math functions ``fastpaths.MATH`` spells
    out).  Where a check finds that Python's math would have raised, or made a complex
    number, ``fn`` runs instead: numba's NaN or infinity is never returned for them."""
    try:
        import numba
    except ImportError:
        raise ImportError("tape.compile(numba=True) needs numba installed") from None
    if not pure:
        raise TypeError("tape.compile(numba=True): this tape calls functions numba cannot compile "
                        "(only operators and common math functions are inlined); use numba=False")
    env = {"TapeGuardError": TapeGuardError, "math": math}
    exec(compile(source, "<capstan compiled tape for numba>", "exec"), env)
    jitted = numba.njit(cache=False)(env["compiled"])

    def compiled(*args):
        if not all(type(a) is float for a in args):
            return fn(*args)  # (its TypeError: the recorded argument types)
        floats = args
        try:
            return jitted(*floats)
        except ArithmeticError:  # (FloatingPointError from a check, or numba's own error)
            return fn(*floats)

    compiled.source, compiled.numba, compiled.py_func = source, True, fn
    return compiled


_POLYNOMIAL = {getattr(operator, name) for name in ("add", "sub", "mul", "neg", "iadd", "isub", "imul")}


def _term(g, partial):
    return {"1.0": g, "-1.0": "-" + g}.get(partial, "%s * (%s)" % (g, partial))


def _backward_lines(bwd, out):
    """The backward pass, last record first.  A node's cotangent variable is assigned
    by its first contribution (no zero initialisation) -- or is just another name for
    its child's when the partial is 1; records whose result got no cotangent are
    skipped; partials that may be infinite are guarded by ``if g:``."""
    name = {out: "g%d" % out}
    live = {out: True}  # node -> whether a contribution to its cotangent is not a constant's 0
    lines = []
    for n, steps, polynomial in reversed(bwd):
        if n not in name:
            continue
        g = name[n]
        body = []
        for p, partial in steps:
            live[p] = live.get(p, False) or (live.get(n, False) and not _LITERAL_ZERO.match(partial))
            term = _term(g, partial)
            if p in name:
                if name[p] != "g%d" % p:  # an alias about to be updated: give it its own variable
                    # (before any ``if g:``, so that it exists when g is 0.0 and the body is skipped)
                    lines.append("g%d = %s" % (p, name[p]))
                    name[p] = "g%d" % p
                body.append("g%d += %s" % (p, term))
            elif polynomial and partial == "1.0":
                name[p] = g
            elif polynomial:
                body.append("g%d = %s" % (p, term))
                name[p] = "g%d" % p
            else:
                lines.append("g%d = 0.0" % p)
                body.append("g%d += %s" % (p, term))
                name[p] = "g%d" % p
        if polynomial:
            lines += body
        elif body:
            lines.append("if %s:" % g)
            lines += ["    " + line for line in body]
            if live.get(n, False):
                # a zero cotangent against an infinite partial, where the zero may be a
                # value's (cos(sqrt(x)) at 0, undefined), not only a constant's (0.0 *
                # sqrt(x), which skips the body): handed to the replay, which tells them apart
                finite = " and ".join("abs(%s) < math.inf" % partial for _, partial in steps)
                lines.append("elif not (%s): raise FloatingPointError(%r)" % (finite, _ZERO_AGAINST_INFINITE))
    return lines, name


_LITERAL_ZERO = re.compile(r"^[(\s]*-?0(\.0*)?[)\s]*$")
_ZERO_AGAINST_INFINITE = ("capstan compiled tape: an exact zero cotangent meets an infinite partial "
                          "derivative; tape.gradient replays it (and refuses it where it is undefined)")


def _inline_forms(f):
    """``(result, partial wrt a[, partial wrt b])`` as expressions over a, b, r, for the
    operators whose forms ``capstan.fastpaths`` spells out (the rule table's partials)."""
    f = fastpaths.IN_PLACE.get(f, f)
    if f in fastpaths.BINARY:
        return fastpaths.BINARY[f]
    return fastpaths.UNARY.get(f) or fastpaths.MATH.get(f)


def _subst(expr, names):
    return re.sub(r"\b[abr]\b", lambda m: "(%s)" % names[m.group(0)], expr)
