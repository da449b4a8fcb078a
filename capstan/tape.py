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
import math
import operator
import re
from typing import Any, Callable

import numpy as np

from overdub import Context
from overdub.tagging import metadata_of, tag_of, value_of

from . import fastpaths, structure
from .reverse import CUSTOM, GETITEM, GUARD, INPUT, RULE, SETITEM, Record, ReverseCtx, _Run, backward
from .rules import registry

_UNTRIED = object()
_DECISIONS = {"__bool__": bool, "__index__": operator.index, "__int__": int}


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

    def apply(self, f, args, kwargs):
        try:
            if f in registry.NONDIFF:
                vals, parents, found, _ = self._split(args)
                if found:
                    return self._guard(f, vals, parents, kwargs, Context.fallback(self, f, *vals, **kwargs))
            return ReverseCtx.apply(self, f, args, kwargs)
        except Exception as exc:  # (math.sqrt(-1.0) in a try: the except branch depends on the value)
            vals, parents, found, _ = self._split(args)
            if found:
                self._guard(f, vals, parents, kwargs, Raised(type(exc)))
            raise

    def fallback(self, f, /, *args, **kwargs):
        result = ReverseCtx.fallback(self, f, *args, **kwargs)
        vals, parents, found, _ = self._split(args)
        if found:
            self._guard(f, vals, parents, kwargs, result)
        return result

    def escape(self, protocol, x, /, *args):
        """``if x:``, ``not x``, ``x and y`` ask a differentiated value for its truth (and
        ``operator.index`` for an integer) outside any routed call: a decision on the
        value, so a guard like a comparison's."""
        result = ReverseCtx.escape(self, protocol, x, *args)
        if protocol in _DECISIONS and tag_of(x) is self._tagkey:
            self._guard(_DECISIONS[protocol], [value_of(x)], [metadata_of(x)], {}, result)
        return result

    def _guard(self, f, vals, parents, kwargs, result):
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
        run = _Run(self.f, args, "record_tape", ctx=TapeCtx())
        self.records = run.ctx.tape
        for rec in self.records:
            if type(rec) is Record and rec.kind is CUSTOM:
                raise TypeError("capstan.record_tape: %s uses checkpoint, hook or a custom adjoint, "
                                "which a tape cannot replay yet" % getattr(self.f, "__name__", self.f))
        self.run = run
        self.inputs = [(leaves, nodes) for leaves, nodes, _ in run.arg_structs]
        self.out_nodes = [run.ctx.node(leaf) for leaf in run.out_leaves]
        self.out_consts = [None if n is not None else leaf for n, leaf in zip(self.out_nodes, run.out_leaves)]
        self.value = run.primal()
        self._fast = _UNTRIED  # generated code for scalar tapes, made on first replay

    # -- replay --------------------------------------------------------------------------------
    def _bind(self, args):
        if len(args) != len(self.inputs):
            raise TypeError("this tape takes %d arguments, got %d" % (len(self.inputs), len(args)))
        values = {}
        for a, (leaves, nodes) in zip(args, self.inputs):
            new, _ = structure.flatten(a)
            if len(new) != len(leaves):
                raise ValueError("argument structure differs from the recorded one")
            for old, x, n in zip(leaves, new, nodes):
                if n is None:
                    if x is not old and x != old:
                        raise ValueError("non-differentiable argument %r differs from the recorded %r"
                                         % (x, old))
                    continue
                if np.shape(x) != np.shape(old):
                    raise ValueError("argument shape %s differs from the recorded %s"
                                     % (np.shape(x), np.shape(old)))
                values[n] = x
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
                grads: tuple[Any, ...] = fast(*args)[1]
                return grads
            except TapeGuardError:
                if self.on_mismatch != "rerecord":
                    raise
                self._record(args)
                return self.gradient(*args)
        out = self._checked(args)
        if len(self.out_nodes) != 1 or self.out_nodes[0] is None:
            raise ValueError("tape.gradient needs a scalar output that depends on the inputs")
        cts = backward(out, {self.out_nodes[0]: 1.0})
        self.run.ctx.tape = out
        out_grads: tuple[Any, ...] = self.run.back_from(cts)
        return out_grads

    def _generated(self, args):
        if not all(type(a) is float or type(a) is int for a in args):
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
    try:
        return bool(np.all(a == b)) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else a == b
    except (TypeError, ValueError):
        return False


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
    lines = ["def compiled(%s):" % ", ".join("v%d" % n for n in inputs)]
    lines += ["    " + line for line in fwd]
    lines.append("    g%d = 1.0" % out)
    back, names = _backward_lines(bwd, out)
    lines += ["    " + line for line in back]
    lines.append("    return v%d, (%s,)" % (out, ", ".join(names.get(n, "0.0") for n in inputs)))
    source = "\n".join(lines[:1] + _reuse_names(lines[1:], {"v%d" % n for n in inputs}))
    exec(compile(source, "<capstan compiled tape of %s>" % getattr(tape.f, "__name__", "f"), "exec"), env)
    fn = env["compiled"]
    fn.source = source
    fn.numba = False
    if use_numba:
        fn = _with_numba(fn, source, not any(name[0] in "fpck" and name[1:2].isdigit() for name in env))
    return fn


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
    """``fn`` compiled by numba's ``njit`` (the generated code must be pure arithmetic:
    operators and the math functions ``fastpaths.MATH`` spells out)."""
    try:
        import numba
    except ImportError:
        raise ImportError("tape.compile(numba=True) needs numba installed") from None
    if not pure:
        raise TypeError("tape.compile(numba=True): this tape calls functions numba cannot compile "
                        "(only operators and common math functions are inlined); use numba=False")
    jitted = numba.njit(cache=False)(fn)

    def compiled(*args):
        return jitted(*(float(a) for a in args))

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
    lines = []
    for n, steps, polynomial in reversed(bwd):
        if n not in name:
            continue
        g = name[n]
        body = []
        for p, partial in steps:
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
    return lines, name


def _inline_forms(f):
    """``(result, partial wrt a[, partial wrt b])`` as expressions over a, b, r, for the
    operators whose forms ``capstan.fastpaths`` spells out (the rule table's partials)."""
    f = fastpaths.IN_PLACE.get(f, f)
    if f in fastpaths.BINARY:
        return fastpaths.BINARY[f]
    return fastpaths.UNARY.get(f) or fastpaths.MATH.get(f)


def _subst(expr, names):
    return re.sub(r"\b[abr]\b", lambda m: "(%s)" % names[m.group(0)], expr)
