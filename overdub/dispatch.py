"""The dispatcher: ``overdub``, ``recurse``, ``fallback`` and the per-context runtime.

Every context instance gets a :class:`Runtime` the first time it runs code.
The runtime owns the callables that rewritten code calls (``call``, ``meth``,
``binop_ADD``...), specialised for what the context type overrides: a context
without a prehook never pays for calling one, an operator without a primitive
goes straight to its fast path.  Rewritten code finds its runtime through its
own constants (``rewrite.Slot`` placeholders swapped per instance), so
generators and closures resumed later -- from C, another thread, after
``overdub`` returned -- still run inside their context.

Per call: ``prehook`` -> ``g = cache[f]`` (``resolve`` on a miss) -> ``g(*args)``
-> ``posthook``.  ``resolve`` decides once per callee what "run f in this
context" means: a matching primitive, the rewritten body, a lookaside, a
stepped-into class or operator, or a plain (fallback) call.
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
import os as _os
import weakref
from functools import partial
from sys import modules as _sys_modules
from typing import Any, Callable
from types import (CodeType, BuiltinFunctionType, FunctionType, GetSetDescriptorType, MethodDescriptorType,
                   MethodType, ModuleType, WrapperDescriptorType)

from . import codegen, lookaside, rewrite, semantics
from .ops import NATIVE, TypeSet
from .context import DEFAULTS as CONTEXT_DEFAULTS, Context, spec_of
from .passes import PassError
from .tagging import Tagged, register_dispatcher

__all__ = ["overdub", "recurse", "fallback", "canrecurse"]

_CACHE_LIMIT = 4096
_runtimes: "weakref.WeakSet[Runtime]" = weakref.WeakSet()
_tagging_seen = [False]


def function_renamed(f):
    """A function's ``__name__`` or ``__qualname__`` was replaced by routed code: its
    routed twins take the new names (the generators they make are named after them)."""
    for rt in list(_runtimes):
        entry = rt.funcs.get(f.__code__)
        if entry is not None and entry[0]() is f:
            entry[1].__name__, entry[1].__qualname__ = f.__name__, f.__qualname__


def function_changed():
    """A function's ``__code__``, ``__defaults__`` or ``__kwdefaults__`` was replaced by
    routed code: every runtime forgets the callables it resolved, so the next call runs
    what the function holds now (the lazy-compilation idiom assigns ``f.__code__`` and
    calls ``f`` again within the same run).  Changes made by code running plainly take
    effect from the next run."""
    for rt in list(_runtimes):
        rt.forget_callees()


# ----------------------------------------------------------------------------- templates
class CodeCache:
    """A mapping keyed by code objects that does not keep them alive (code objects
    compare by value, so equal code from two files must not share an entry).

    No lock: single dict operations are atomic under the GIL, and a lock would
    deadlock when garbage collection runs a removal callback while it is held.
    """

    def __init__(self):
        self._data = {}

    def get(self, code, default=None):
        entry = self._data.get(id(code))
        if entry is None or entry[0]() is not code:
            return default
        return entry[1]

    def __setitem__(self, code, value):
        key, data = id(code), self._data

        def forget(ref):
            entry = data.get(key)
            if entry is not None and entry[0] is ref:
                data.pop(key, None)

        data[key] = (weakref.ref(code, forget), value)

    def discard(self, code_id, value):
        """Drop the entry of the code with id ``code_id`` if it still holds ``value``."""
        entry = self._data.get(code_id)
        if entry is not None and entry[1] is value:
            self._data.pop(code_id, None)

    def __len__(self):
        return len(self._data)

    def clear(self):
        self._data.clear()


_templates = CodeCache()  # code -> {(pass_, ctx_type) or None: template code or None}
unroutable: "weakref.WeakValueDictionary[str, CodeType]" = weakref.WeakValueDictionary()  # qualname -> code that had to run plainly (debugging)
_MISSING = object()


def _template(code, pass_, ctx_type, inline_prehook):
    variants = _templates.get(code)
    if variants is None:
        variants = {}
        _templates[code] = variants
    vkey = ((pass_, ctx_type) if pass_ is not None else None, inline_prehook)
    template = variants.get(vkey, _MISSING)
    if template is not _MISSING:
        return template
    try:
        template = rewrite.rewrite_code(code, pass_, ctx_type, inline_prehook)
    except PassError:
        raise
    except Exception:  # the bytecode library or the rewriter cannot route it: run plainly
        template = None
        try:
            unroutable[getattr(code, "co_qualname", code.co_name)] = code
        except TypeError:
            pass
    variants[vkey] = template
    return template


# ----------------------------------------------------------------------------- the runtime
class Runtime:
    """The callables that one context instance's rewritten code calls."""

    def __init__(self, ctx, spec, outer=None):
        self.ctx = ctx
        self.ctx_type = type(ctx)
        self.spec = spec
        # nested inside another context's run (``overdub`` called from code that context
        # routes): the context's own methods run routed through the outer run
        self.outer = outer
        self.outer_call = outer.call if outer is not None else None
        self.prehook, self.posthook = self.bound("prehook"), self.bound("posthook")
        self.canrecurse, self.fallback = self.bound("canrecurse"), self.bound("fallback")
        self.fcache = {}
        self.kept = {}  # the entries of fcache for builtins, which survive a run's end
        self.fallback_kinds = {}  # builtin -> how the default fallback calls it
        self.codes = CodeCache()
        self.funcs = CodeCache()  # code -> (weakref to the user function, its routed twin)
        self.depth = 0
        self.checking = _tagging_seen[0]
        # what resolve makes for a transient callee holds no reference to it (a wildcard's
        # or canrecurse's closure does), so it can be cached under a weak key
        self.weak_keys = not (spec.wildcard or spec.canrecurse)
        fcache = self.fcache
        self._drop = lambda key: fcache.pop(key, None)  # a transient callee died
        self.targets = targets = {}  # f -> what recurse runs for it (this run)
        self._drop_target = lambda key: targets.pop(key, None)
        semantics.add_numpy_types()
        self.steps = semantics.Steps(None, self.fallback_call)
        self.table = lookaside.FrameReaders(self.route_code).table()
        self.ops = {}
        self.call, self.meth = self._dispatchers(None)
        self.steps.call = self.call
        self._build_ops()
        self.steps.function_changed = function_changed
        self.steps.function_renamed = function_renamed
        _runtimes.add(self)

    def user(self, fn):
        """How this runtime calls ``fn``, a function of the context's class that takes
        the context first (a hook, a primitive): directly, or -- when the context runs
        nested inside another context's run -- routed through that run.  As Cassette
        overdubs a nested ``overdub`` call, the outer context then sees, and for instance
        differentiates, what the inner context's hooks and primitives compute."""
        call = self.outer_call
        if call is None or type(fn) is not FunctionType or lookaside.is_internal(fn.__code__):
            return fn

        def routed(*args, **kwargs):
            return call(fn, *args, **kwargs)

        routed.__name__ = fn.__name__
        routed.__qualname__ = fn.__qualname__
        return routed

    def bound(self, name):
        """The context's method ``name``, bound to it, as this runtime calls it."""
        method = getattr(self.ctx, name)
        fn = getattr(method, "__func__", None)
        if self.outer_call is None or fn is None or method.__self__ is not self.ctx:
            return method
        routed = self.user(fn)
        return method if routed is fn else MethodType(routed, self.ctx)

    def forget_callees(self):
        """Drop what was resolved during this run (builtins excepted): a callee is resolved
        again on its next call.  Routed twins made for functions stay valid as long as
        the function holds the same code and defaults (``_rewritten`` checks)."""
        self.fcache.clear()
        self.fcache.update(self.kept)
        self.targets.clear()

    def target(self, f):
        """``_target(f)`` (what ``recurse`` runs), remembered for the run like ``resolve``'s
        answers: a wildcard that recurses asks it on every call."""
        try:
            return self.targets[f]
        except (KeyError, TypeError):
            pass
        g = self._target(f)
        try:
            if not _transient(f):
                if len(self.targets) >= _CACHE_LIMIT:
                    self.targets.clear()
                self.targets[f] = g
            elif type(f) is FunctionType and g is not f:  # (a routed twin holds no f)
                self.targets[_WeakKey(f, self._drop_target)] = g
        except TypeError:  # unhashable
            pass
        return g

    # -- slots: what rewritten code calls --------------------------------------------------------
    def _build_ops(self):
        ops = self.ops
        self._getattr_slot = self.slot(("getattr",))
        ops[("call",)] = self.call
        ops[("meth",)] = self.meth
        ops[("call_ex",)] = self.call_ex
        ops[("super_attr",)] = self.super_attr

    def step_for(self, fn):
        """The ``recurse`` step of an operator function (``operator.add``, ``getattr``...)."""
        try:
            return self.ops[fn]
        except KeyError:
            pass
        entry = codegen.OP_BY_FN.get(fn)
        if entry is None:
            return None
        step = getattr(self.steps, entry[1])(*entry[2])
        if self.outer_call is not None:
            step = _outer_computes_natives(step, fn, self.outer_call)
        self.ops[fn] = step
        return step

    def _inline_prehook(self, key):
        """Whether rewritten code calls the prehook itself before operator ``key``: when
        the prehook is all the context has to say about it (no posthook, wildcard,
        custom canrecurse/fallback or primitive for it)."""
        spec = self.spec
        return (spec.prehook and not (spec.posthook or spec.wildcard or spec.canrecurse
                                      or spec.fallback)
                and codegen.OP_SLOTS[key][0] not in spec.primitives)

    def _guard_set(self, key):
        if self.outer is not None:  # builtin operands run natively only if neither context looks
            outer = self.outer
            if outer._inline_prehook(key):  # (its prehook is called by its own code only)
                return frozenset()
            return TypeSet(self._compute_guard_set(key) & outer._guard_set(key))
        memo = (id(self.spec), key, len(NATIVE))
        hit = _guards.get(memo)
        if hit is None or hit[0] is not self.spec:
            hit = _guards[memo] = (self.spec, self._compute_guard_set(key))
        return hit[1]

    def _compute_guard_set(self, key):
        """The exact operand types for which rewritten code may run an operator natively:
        the builtin types no primitive admits, and none at all when a hook, a wildcard
        or a custom canrecurse is there to see every operation (a prehook
        called inline has seen it already)."""
        fn = codegen.OP_SLOTS[key][0]
        spec = self.spec
        if self._inline_prehook(key):
            return NATIVE
        if spec.prehook or spec.posthook or spec.wildcard or spec.canrecurse:
            return frozenset()  # (a fallback never sees operators on builtin operands)
        guard = NATIVE
        operands = 2 if key[0] in ("binop", "compare") else 1
        for argtypes, _ in spec.primitives.get(fn, ()):
            matched = [_natives_matching(argtypes, i) for i in range(operands)]
            if not all(matched):
                continue  # this primitive never sees builtin operands
            narrowed = [m for m in matched if m is not NATIVE and len(m) < len(NATIVE)]
            if not narrowed:
                return frozenset()
            # excluding one position's types is enough: the smallest exclusion keeps the most
            guard = TypeSet(guard - min(narrowed, key=len))
        return guard

    def _dispatchers(self, arity):
        """``(call, meth)`` for calls with ``arity`` positional arguments (None: any)."""
        spec, ctx = self.spec, self.ctx
        make = codegen.dispatchers_factory(arity, spec.prehook, spec.posthook)
        return make(self.fcache, self.resolve, self.prehook, self.posthook, self._method_of,
                    lambda o, n: self._getattr_slot(o, n), ModuleType)

    def _op_slot(self, key, fn, step, params, args, fast, with_prehook=True):
        """The function rewritten code calls for one operator: hooks and primitive
        dispatch inlined, and CPython's own operator inline for builtin operands."""
        spec, ctx = self.spec, self.ctx
        names = args.split(", ")
        env = {"fn": fn, "step": step, "NATIVE": NATIVE, "ctx": ctx,
               "prehook": self.prehook, "posthook": self.posthook,
               "ATTRS": self.steps.attr_info, "ALL": semantics.ALL_NAMES}
        if fast is not None:
            guard, stmt = fast
            plain = "if %s:\n{i}    %s\n{i}else:\n{i}    r = step(%s)" % (guard, stmt, args)
        else:
            plain = "r = step(%s)" % args
        rules = spec.primitives.get(fn, ())
        if (len(rules) == 1 and not rules[0][0] and params == args and not spec.prehook
                and not spec.posthook and spec.wildcard is None):
            return MethodType(self.user(rules[0][1]), ctx)  # the primitive itself: no frame between
        if spec.wildcard is not None:
            env["w"] = self.user(spec.wildcard)
            plain = "r = w(ctx, fn, %s)" % args
        elif spec.canrecurse:
            env["g"] = self._resolve(fn)
            plain = "r = g(%s)" % args
        elif rules:
            conds, cenv = codegen.rule_conditions(rules, names)
            env.update(cenv)
            chain = []
            for i, cond in enumerate(conds):
                env["m%d" % i] = self.user(rules[i][1])
                chain.append("%s %s:\n{i}    r = m%d(ctx, %s)"
                             % ("if" if i == 0 else "elif", cond, i, args))
            plain = "\n{i}".join(chain) + "\n{i}else:\n{i}    " + plain.replace("{i}", "{i}    ")
        lines = ["def slot(%s):" % params]
        if spec.prehook and with_prehook:
            lines.append("    prehook(fn, %s)" % args)
        lines.append("    " + plain.format(i="    "))
        if spec.posthook:
            lines.append("    posthook(r, fn, %s)" % args)
        lines.append("    return r")
        return codegen.compile_function("\n".join(lines), "slot", env, "slot " + " ".join(map(str, key)))

    def slot(self, key):
        """The callable standing for template slot ``key`` (built on first use)."""
        try:
            return self.ops[key]
        except KeyError:
            pass
        if key[0] in ("call", "meth"):
            call, meth = self._dispatchers(key[1])
            self.ops[("call", key[1])] = call
            self.ops[("meth", key[1])] = meth
            return self.ops[key]
        if key[0] == "guard":
            fn = self._guard_set(key[1:])
            self.ops[key] = fn
            return fn
        if key[0] == "pre":
            fn = self.prehook if self._inline_prehook(key[1:]) else None
            self.ops[key] = fn
            return fn
        if key == ("notcontains",):
            contains = self.slot(("contains",))

            def fn(x, c):
                return not contains(x, c)
        else:
            op, _, _, params, args, fast = codegen.OP_SLOTS[key]
            spec = self.spec
            total = spec.totals.get(op) if key[0] in ("binop", "compare", "unary") else None
            if total is not None and not (spec.prehook or spec.posthook or spec.wildcard
                                          or spec.canrecurse):
                # the rewritten code has run builtin operands natively already: the total
                # primitive takes everything else, with no dispatch step in between
                fn = self.ops[key] = MethodType(self.user(total), self.ctx)
                return fn
            inline = key[0] in ("binop", "compare") and self._inline_prehook(key)
            if self.outer is not None:
                fast = None  # (the step hands builtin operands to the outer run)
            fn = self._op_slot(key, op, self.step_for(op), params, args, fast, with_prehook=not inline)
        self.ops[key] = fn
        return fn

    def call_ex(self, f, args, kwargs):
        """``f(*args, **kwargs)`` with CPython's own checks on ``args`` and ``kwargs``."""
        if type(args) is not tuple:
            tp = type(args)
            lookup = semantics.lookup  # (the type's slots, not its metaclass's attributes)
            if not (lookup(tp, "__iter__") is not None or (lookup(tp, "__getitem__") is not None
                                                           and not issubclass(tp, dict))):
                raise TypeError("%s argument after * must be an iterable, not %s"
                                % (_funcstr(f), tp.__name__))
            args = tuple(args)
        if kwargs is None:
            return self.call(f, *args)
        for key in kwargs:
            if type(key) is not str and not isinstance(key, str):
                raise TypeError("%s keywords must be strings" % _funcstr(f))
        return self.call(f, *args, **kwargs)

    def super_attr(self, global_super, cls, obj, flags):
        two_args, name = flags
        if two_args or global_super is super:
            s = self.call(global_super, cls, obj)
        else:
            s = self.call(global_super)
        return self._getattr_slot(s, name)

    # -- resolving a callee ---------------------------------------------------------------------
    def resolve(self, f, cache=True, lasting=False):
        """The callable that runs ``f`` inside the context, hooks excluded; cached for
        the run, under a weak key when ``f`` is transient (``lasting``: ``f`` is a class
        attribute, which lives as long as its class)."""
        g = self._resolve(f, cache)
        if cache and not lasting and _transient(f):
            # g holds no reference to f (a bound C method's fallback may: not cached)
            if self.weak_keys and g is not f and type(f) is not BuiltinFunctionType:
                self.fcache[_WeakKey(f, self._drop)] = g
            return g
        if cache:
            if len(self.fcache) >= _CACHE_LIMIT:
                self.fcache.clear()
            self.fcache[f] = g
            if _is_builtin(f) and len(self.kept) < _CACHE_LIMIT:
                self.kept[f] = g  # builtins are no user code: kept across runs
        return g

    def _resolve(self, f, hashable=True):
        spec = self.spec
        if hashable and spec.totals:
            total = spec.totals.get(f)
            if total is not None:
                return MethodType(self.user(total), self.ctx)  # it takes every call of f itself
        if hashable and spec.primitives:
            rules = spec.primitives.get(f)
            if rules:  # (a rule without conditions takes every call: f's body is never
                # stepped into, so it is not rewritten either)
                always = any(not argtypes for argtypes, _ in rules)
                return self._primitive_dispatch(rules, None if always else self._target(f))
        if spec.wildcard is not None:
            wildcard, ctx = self.user(spec.wildcard), self.ctx
            return lambda *a, **k: wildcard(ctx, f, *a, **k)
        if spec.canrecurse:
            can, target, fall = self.canrecurse, self._target(f), self._fallback_for(f)

            def decide(*a, **k):
                return target(*a, **k) if can(f, *a, **k) else fall(*a, **k)

            return decide
        return self._target(f)

    def _primitive_dispatch(self, rules, target):
        """``f(*args, **kwargs)`` trying each ``@primitive`` registration in turn."""
        names = ["args[%d]" % i for i in range(codegen.max_arity(rules))]
        conds, env = codegen.rule_conditions(rules, names)
        lines = ["def dispatch(*args, **kwargs):", "    n = len(args)"]
        for i, cond in enumerate(conds):
            need = len(rules[i][0])
            lines.append("    if n >= %d and %s:" % (need, cond) if need else "    if True:")
            lines.append("        return m%d(ctx, *args, **kwargs)" % i)
        lines.append("    return target(*args, **kwargs)")
        env.update(ctx=self.ctx, target=target)
        env.update(("m%d" % i, self.user(r[1])) for i, r in enumerate(rules))
        return codegen.compile_function("\n".join(lines), "dispatch", env, "primitive dispatch")

    def _target(self, f):
        """``recurse``: step into ``f``'s Python body, else the fallback."""
        tf = type(f)
        if tf is FunctionType:
            if lookaside.is_internal(f.__code__):
                nested = _NESTING.get(f)
                return f if nested is None else partial(nested, self)
            return self._rewritten(f)
        if tf is MethodType:
            func, obj = f.__func__, f.__self__
            try:
                inner = self.fcache[func]
            except (KeyError, TypeError):
                inner = self.resolve(func)
            return lambda *a, **k: inner(obj, *a, **k)
        if f is type or f is lookaside.TYPE_NEW:  # (they name the caller's module)
            plain = self._fallback_for(f)
            return lambda *a, **k: plain(*lookaside.class_args(f, a), **k)
        step = self._builtin_step(f)
        if step is not None:
            return step
        if issubclass(tf, type):  # (not isinstance: a __class__ property may claim anything)
            construct = self.steps.instantiate(f)
            return construct if construct is not None else self._fallback_for(f)
        if tf is partial:
            call, fn, pargs, pkw = self.call, f.func, f.args, f.keywords
            return lambda *a, **k: call(fn, *pargs, *a, **{**pkw, **k})
        if tf is staticmethod:
            return self._resolve(f.__func__)
        dunder = semantics.lookup(tf, "__call__")
        if type(dunder) is FunctionType and tf is not Tagged:
            inner = self._resolve(dunder)
            return lambda *a, **k: inner(f, *a, **k)
        return self._fallback_for(f)

    def _builtin_step(self, f):
        try:
            step = self.step_for(f) or self.table.get(f)
        except TypeError:
            return None
        if step is not None:
            return step
        if f in lookaside.CALLBACKS:
            return lookaside.wrap_callbacks(f, self.call)
        if type(f) is not BuiltinFunctionType:  # (a partialmethod's partial has __self__ too)
            return None
        owner = f.__self__
        if owner is not None and not isinstance(owner, (ModuleType, type)):
            unbound = semantics.lookup(type(owner), f.__name__)
            if unbound in lookaside.CALLBACKS:
                step = lookaside.wrap_callbacks(unbound, self.call)
                return lambda *a, **k: step(owner, *a, **k)
        return None

    def _rewritten(self, f):
        code = f.__code__
        last = self.funcs.get(code)  # the routed twin made for f last time, if f is the same
        if (last is not None and last[0]() is f and last[1].__defaults__ is f.__defaults__
                and last[1].__kwdefaults__ is f.__kwdefaults__):
            twin = last[1]
            if twin.__name__ is not f.__name__ or twin.__qualname__ is not f.__qualname__:
                twin.__name__, twin.__qualname__ = f.__name__, f.__qualname__  # (renamed since)
            return twin
        new = self.codes.get(code)
        if new is None:
            new = self.route_code(code)
            self.codes[code] = _MISSING if new is code else new  # never a strong ref to the key
        if new is code or new is _MISSING:
            return f
        g = FunctionType(new, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
        g.__kwdefaults__ = f.__kwdefaults__
        g.__qualname__ = f.__qualname__
        g.__module__ = f.__module__
        funcs, code_id = self.funcs, id(code)

        def forget(ref):  # the twin shares f's defaults and cells: it must not outlive f
            funcs.discard(code_id, entry)

        entry = (weakref.ref(f, forget), g)
        funcs[code] = entry
        return g

    def route_code(self, code):
        """``code`` rewritten and bound to this runtime (``code`` itself if it cannot be)."""
        spec = self.spec
        inline = bool(spec.prehook and not (spec.posthook or spec.wildcard or spec.canrecurse
                                            or spec.fallback))
        template = _template(code, self.ctx.pass_, type(self.ctx), inline)
        if template is None:
            return code
        slot = self.slot
        consts = tuple(slot(c.key) if type(c) is rewrite.Slot else c for c in template.co_consts)
        routed = template.replace(co_consts=consts)
        lookaside.ROUTED.add(routed)
        return routed

    @staticmethod
    def _method_of(tp, name):
        """``(function, instances_have_dict)`` for ``obj.name(...)`` when CPython's
        method-call shortcut applies to instances of ``tp``, else ``(None, False)``."""
        if tp is Tagged or not semantics.is_generic_getattribute(semantics.lookup(tp, "__getattribute__")):
            return None, False
        attr = semantics.lookup(tp, name)
        if type(attr) is FunctionType or type(attr) is MethodDescriptorType:
            instance_dict = semantics.lookup(tp, "__dict__")
            if instance_dict is None:
                return attr, False
            if type(instance_dict) is GetSetDescriptorType:
                return attr, True
        return None, False  # (a class redefining __dict__: CPython's own lookup decides)

    # -- fallback ---------------------------------------------------------------------------
    def _fallback_for(self, f):
        reader = _frame_reader(self, f)
        if reader is not None:  # called plainly they would read the dispatcher's frame
            return reader
        if self.spec.fallback:
            fall = self.fallback
            return lambda *a, **k: fall(f, *a, **k)
        call = self.outer_call
        if call is not None:  # nested: what this context calls plainly, the outer one routes
            ctx = self.ctx
            if is_structural(f):
                return lambda *a, **k: call(f, *a, **k)
            return lambda *a, **k: _plain_call(f, ctx._tagkey, a, k, call)
        if not self.checking or is_structural(f):
            return f
        ctx = self.ctx
        return lambda *a, **k: _plain_call(f, ctx._tagkey, a, k)

    def fallback_call(self, f, args, kwargs):
        if self.spec.fallback:
            return self.fallback(f, *args, **kwargs)
        return _plain_call(f, self.ctx._tagkey, args, kwargs, self.outer_call)



_guards: dict[Any, Any] = {}  # (id(spec), slot key, number of native types) -> (spec, guard set)


def _outer_computes_natives(step, fn, call):
    """A nested runtime's step for operator ``fn``: what it would compute natively
    (every operand of a builtin type) is a call of ``fn`` the outer run routes."""
    native = NATIVE

    def nested_step(*args):
        for a in args:
            if type(a) not in native:
                return step(*args)
        return call(fn, *args)

    return nested_step


def _natives_matching(argtypes, i):
    """The builtin types a primitive's ``i``-th argument type admits (all of them when
    it names none)."""
    if i >= len(argtypes):
        return NATIVE
    ts = argtypes[i] if isinstance(argtypes[i], tuple) else (argtypes[i],)
    plain = tuple(t for t in ts if t is not Tagged)
    return {t for t in NATIVE if plain and issubclass(t, plain)}


def note_tagging() -> None:
    """A context made its first tag: from now on fallbacks must untag (and hand values
    tagged by other contexts over to them), so plain-call shortcuts are dropped."""
    if not _tagging_seen[0]:
        _tagging_seen[0] = True
        for rt in list(_runtimes):
            rt.checking = True
            rt.fcache.clear()
            rt.kept.clear()
            rt.targets.clear()


def _strip(x, key):
    while type(x) is Tagged and x._tagkey is key:
        x = x._value
    return x


def _strip_dead(x):
    """``x`` without tags whose context has renewed its tag identity since (values left
    over from a finished run: plain values now)."""
    while type(x) is Tagged and x._ctx._tagkey is not x._tagkey:
        x = x._value
    return x


def _any_tagged(args, kwargs):
    for a in args:
        if type(a) is Tagged:
            return True
    return bool(kwargs) and any(type(a) is Tagged for a in kwargs.values())


def _unbound(f):
    """``list.append`` for ``[].append``: the method a bound builtin came from."""
    if type(f) is not BuiltinFunctionType:
        return None
    owner = f.__self__
    if owner is None or isinstance(owner, ModuleType):
        return None
    return semantics.lookup(type(owner), f.__name__)


def _plain_call(f, key, args, kwargs, call=None):
    """Call ``f`` with this context's tags removed; a value still tagged by another
    context hands the call to that context (nested contexts).  ``call``: the run this
    context is nested in, which routes the call instead."""
    if not kwargs and call is None:
        for a in args:
            if type(a) is Tagged or type(a) is tuple:
                break
        else:
            return f(*args)  # (nothing to strip: the common case)
    new = None
    foreign = None
    for i, a in enumerate(args):
        if type(a) is Tagged:
            v = _strip(a, key)
            if v is not a:
                if new is None:
                    new = list(args)
                new[i] = v
            if type(v) is Tagged:
                v = _strip_dead(v)
                if v is not a:
                    if new is None:
                        new = list(args)
                    new[i] = v
                if type(v) is Tagged:
                    foreign = v._ctx
        elif type(a) is tuple and any(type(e) is Tagged for e in a):
            v = tuple(_strip(e, key) for e in a)
            if new is None:
                new = list(args)
            new[i] = v
    if kwargs:
        copied = False
        for k, a in list(kwargs.items()):
            if type(a) is Tagged:
                v = _strip_dead(_strip(a, key))
                if v is not a:
                    if not copied:
                        kwargs, copied = dict(kwargs), True
                    kwargs[k] = v
                if type(v) is Tagged:
                    foreign = v._ctx
    if new is not None:
        args = new
    if call is not None:
        return call(f, *args, **kwargs)
    if foreign is not None:
        return overdub(foreign, f, *args, **kwargs)
    return f(*args, **kwargs)


def _funcstr(f):
    """How CPython names a callable in call errors (``_PyObject_FunctionStr``)."""
    qualname = getattr(f, "__qualname__", None)
    if not isinstance(qualname, str):
        return "%s object" % type(f).__name__
    module = getattr(f, "__module__", None)
    if isinstance(module, str) and module != "builtins":
        return "%s.%s()" % (module, qualname)
    return "%s()" % qualname


_HEAPTYPE = 1 << 9
_CO_NESTED = 0x10


class _WeakKey(weakref.ref):  # type: ignore[type-arg]
    """A cache key standing for a transient callee without keeping it alive: it hashes
    as the callee and equals it, so ``fcache[f]`` finds it; its callback removes the
    entry when the callee dies."""

    __slots__ = ()
    __hash__ = weakref.ref.__hash__

    def __eq__(self, other):
        return self() is other


def _transient(f):
    """Whether ``f`` is a callable that plain Python makes per use and frees right after:
    a bound method (of a Python function, or of a C method bound to an object such as
    ``gen.send``), or a function defined inside another function (a closure, a lambda).
    Holding it as a cache key would keep it -- and what it references -- alive until
    ``overdub`` returns, so it is cached under a :class:`_WeakKey` (or not at all when
    what it resolves to refers to it)."""
    tf = type(f)
    if tf is BuiltinFunctionType:  # (of a module: transient when the module is a private copy)
        owner = f.__self__
        if owner is None or isinstance(owner, type):
            return False
        return not isinstance(owner, ModuleType) or not _imported(owner)
    return tf is MethodType or (tf is FunctionType and f.__code__.co_flags & _CO_NESTED)


def _imported(module):
    """Whether ``module`` is the one ``sys.modules`` holds (not a fresh private copy,
    which must be free to die)."""
    try:
        return _sys_modules.get(module.__name__) is module
    except (AttributeError, TypeError):
        return False


def _is_builtin(f):
    """A callable implemented in C that holds no user object (kept across runs)."""
    tf = type(f)
    if tf is BuiltinFunctionType:
        owner = f.__self__
        return owner is None or (isinstance(owner, ModuleType) and _imported(owner))
    if tf is MethodDescriptorType or tf is WrapperDescriptorType:
        return True
    if tf is type:
        return not f.__flags__ & _HEAPTYPE
    return tf in _library_function_types()


def _library_function_types():
    """C types of library functions that hold no user object: NumPy's ufuncs and its
    array-function dispatchers (``np.sum``...), once NumPy is imported."""
    if not _LIBRARY_TYPES:
        import sys

        np = sys.modules.get("numpy")
        if np is None:
            return ()
        _LIBRARY_TYPES.update({np.ufunc, type(np.sum)} - {FunctionType})
    return _LIBRARY_TYPES


_LIBRARY_TYPES: set[type] = set()

# structural builtins: tagged values pass through them untouched
_PASSTHROUGH = {list.append, list.extend, list.insert, list.pop, list.copy, list.__setitem__,
                dict.get, dict.setdefault, dict.pop, dict.update, dict.__setitem__, dict.values,
                dict.items, set.add, tuple, list, dict, set, frozenset, zip, enumerate, reversed,
                iter, next, len, id, repr, str, print, sorted, min, max, sum, getattr, setattr,
                delattr, object.__setattr__, object.__getattribute__, hasattr, format,
                tuple.__new__, object.__new__, list.__init__, dict.__init__, set.__init__}


# ----------------------------------------------------------------------------- public API
def _runtime(ctx, fname):
    try:  # (the common case: the runtime made last time is still valid)
        rt = ctx._runtime
        if rt.ctx is ctx and type(ctx) is rt.ctx_type and not rt.spec.stale:
            return rt
    except AttributeError:
        pass
    if not isinstance(ctx, Context):
        raise TypeError("%s(ctx, f, ...): ctx must be an overdub.Context instance, got %r"
                        % (fname, type(ctx).__name__))
    spec = spec_of(type(ctx))
    rt = ctx._runtime
    if rt is None or rt.spec is not spec:
        rt = ctx._runtime = Runtime(ctx, spec)
    return rt


def _check_callable(f, fname):
    if not callable(f):
        raise TypeError("%s(ctx, f, ...): f must be callable, got %s" % (fname, type(f).__name__))


def _leave(rt):
    rt.depth -= 1
    if rt.depth == 0:
        rt.forget_callees()
        rt.steps.attr_info.clear()
        if len(rt.codes) > _CACHE_LIMIT:
            rt.codes.clear()
            rt.funcs.clear()


#: ``OVERDUB_KEEP_FRAMES=1`` in the environment (read once, here) keeps the machinery's
#: frames -- the dispatcher, the runtime, generated slots and dispatchers, shown with their
#: generated source -- in the tracebacks of exceptions leaving ``overdub``: for debugging
#: overdub itself, or a context's hooks and primitives
KEEP_FRAMES = _os.environ.get("OVERDUB_KEEP_FRAMES", "") not in ("", "0")


def _strip_internal_frames(exc):
    """Drop overdub's own frames from a traceback so it reads like plain Python's."""
    tb = exc.__traceback__
    while tb is not None and lookaside.is_internal(tb.tb_frame.f_code) and tb.tb_next is not None:
        tb = tb.tb_next
    head = tb
    while tb is not None:
        nxt = tb.tb_next
        while nxt is not None and lookaside.is_internal(nxt.tb_frame.f_code):
            nxt = nxt.tb_next
        tb.tb_next = nxt
        tb = nxt
    return head


def _check_overdub(ctx: Any, f: Any) -> None:
    if isinstance(ctx, type) and issubclass(ctx, Context):
        raise TypeError("overdub(ctx, f, ...): ctx is the context class %s itself; pass an instance: "
                        "overdub(%s(), f, ...)" % (ctx.__name__, ctx.__name__))
    if not isinstance(ctx, Context):
        raise TypeError("overdub(ctx, f, ...): ctx must be an overdub.Context instance, got %r"
                        % type(ctx).__name__)
    _check_callable(f, "overdub")


def overdub(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``f(*args, **kwargs)`` inside ``ctx``: prehook, then the matching
    primitive or ``recurse``, then posthook; return the result."""
    _check_overdub(ctx, f)
    if (spec_of(type(ctx)).empty and ctx.pass_ is None and not ctx.__dict__.get("_has_tags")
            and not _any_tagged(args, kwargs)):
        return f(*args, **kwargs)  # nothing to observe or change: plain Python
    rt = _runtime(ctx, "overdub")
    rt.depth += 1
    try:
        return rt.call(f, *args, **kwargs)
    except BaseException as exc:
        if KEEP_FRAMES:
            raise
        raise exc.with_traceback(_strip_internal_frames(exc))
    finally:
        _leave(rt)


def recurse(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``f``'s body with everything inside it routed through ``ctx`` (no hooks
    for ``f`` itself); ``fallback`` where ``f`` has no Python body."""
    rt = _runtime(ctx, "recurse")
    rt.depth += 1
    try:
        if rt.spec.canrecurse and not rt.canrecurse(f, *args, **kwargs):
            return rt.fallback(f, *args, **kwargs)
        return rt.target(f)(*args, **kwargs)
    finally:
        _leave(rt)


def fallback(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call ``f`` plainly as ``ctx`` would (its ``fallback`` method)."""
    rt = _runtime(ctx, "fallback")
    if rt.spec.fallback:
        return rt.fallback(f, *args, **kwargs)
    return _default_fallback(rt, f, args, kwargs)


def canrecurse(ctx: Context, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> bool:
    """Whether ``recurse(ctx, f, ...)`` would step into ``f``'s body."""
    rt = _runtime(ctx, "canrecurse")
    if rt.spec.canrecurse:
        return bool(rt.canrecurse(f, *args, **kwargs))
    return bool(_default_canrecurse(rt, f, args))


# ----------------------------------------------------------------------------- nested contexts
# ``overdub(inner, f, ...)`` called from code that an outer context routes runs ``inner``
# nested in the outer run: while it runs, ``inner`` uses a runtime whose hooks, primitives
# and plain calls go through the outer context (``Runtime.user``), as Cassette overdubs a
# nested ``overdub``.  Without it the inner context's primitives would compute plainly on
# values the outer context tagged, and an outer derivative, trace or count would be lost.
def _nested_runtime(ctx, outer, fname):
    """``ctx``'s runtime nested in the run of ``outer`` (made once per pair)."""
    rt = _runtime(ctx, fname)
    if rt.outer is outer:
        return rt
    held = ctx.__dict__.get("_overdub_nested")
    if held is not None and held.ctx is ctx and held.outer is outer and held.spec is rt.spec:
        return held
    held = ctx.__dict__["_overdub_nested"] = Runtime(ctx, rt.spec, outer)
    return held


class _Nested:
    """``ctx`` uses its nested runtime ``rt`` while the block runs (its tagged values,
    handed back to it from plain code, find it there)."""

    __slots__ = ("ctx", "rt", "before")

    def __init__(self, ctx, rt):
        self.ctx, self.rt = ctx, rt

    def __enter__(self):
        self.before = self.ctx._runtime
        self.ctx._runtime = self.rt
        self.rt.depth += 1
        return self.rt

    def __exit__(self, *exc):
        self.ctx._runtime = self.before
        _leave(self.rt)


def _nested_overdub(outer, ctx, f, /, *args, **kwargs):
    _check_overdub(ctx, f)
    if spec_of(type(ctx)).empty and ctx.pass_ is None and not ctx.__dict__.get("_has_tags"):
        return outer.call(f, *args, **kwargs)  # nothing to change: the outer context runs it
    with _Nested(ctx, _nested_runtime(ctx, outer, "overdub")) as rt:
        return rt.call(f, *args, **kwargs)


def _nested_recurse(outer, ctx, f, /, *args, **kwargs):
    with _Nested(ctx, _nested_runtime(ctx, outer, "recurse")) as rt:
        if rt.spec.canrecurse and not rt.canrecurse(f, *args, **kwargs):
            return rt.fallback(f, *args, **kwargs)
        return rt.target(f)(*args, **kwargs)


def _nested_fallback(outer, ctx, f, /, *args, **kwargs):
    with _Nested(ctx, _nested_runtime(ctx, outer, "fallback")) as rt:
        return rt.fallback(f, *args, **kwargs)


def _nested_canrecurse(outer, ctx, f, /, *args, **kwargs):
    with _Nested(ctx, _nested_runtime(ctx, outer, "canrecurse")) as rt:
        return rt.canrecurse(f, *args, **kwargs)


_NESTING = {overdub: _nested_overdub, recurse: _nested_recurse, fallback: _nested_fallback,
            canrecurse: _nested_canrecurse}


def default_canrecurse(ctx: Context, f: Any, args: tuple[Any, ...]) -> bool:
    """The default ``Context.canrecurse``: ``recurse`` would run Python code for ``f``
    (its body, a stepped-into operator or class, or a lookaside) -- the same order of
    questions as ``Runtime._target``."""
    return bool(_default_canrecurse(_runtime(ctx, "canrecurse"), f, args))


def _default_canrecurse(rt, f, args):
    tf = type(f)
    if tf is FunctionType:
        return not lookaside.is_internal(f.__code__)
    if tf is MethodType or tf is staticmethod:
        return _default_canrecurse(rt, f.__func__, args)
    try:
        operator_entry = codegen.OP_BY_FN.get(f)
    except TypeError:  # unhashable
        operator_entry = None
    if operator_entry is not None:  # operator.add(1, 2) runs no Python; on a user class it may
        native = NATIVE
        for a in args:
            if type(a) not in native:
                return bool(rt.steps.steps_into(operator_entry[1], operator_entry[2], args))
        return False
    if rt._builtin_step(f) is not None:
        return True
    if issubclass(tf, type):
        return rt.steps.instantiate(f) is not None
    if tf is partial:
        return _default_canrecurse(rt, f.func, args)
    return type(semantics.lookup(tf, "__call__")) is FunctionType


def default_fallback(ctx: Context, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The default ``Context.fallback``: a plain call with ``ctx``'s tags removed
    (builtins that read their caller's frame read the user's; structural builtins
    such as ``list.append`` get the tagged values themselves)."""
    return _default_fallback(_runtime(ctx, "fallback"), f, args, kwargs)


# how the default fallback calls f (or the stand-in for a builtin that reads its caller's frame)
_PLAIN, _AS_IS, _STRUCTURAL, _ATTRIBUTE_WRITE = "plain", "as is", "structural", "attribute write"


def _fallback_kind(rt, f):
    """How the default fallback calls ``f`` (remembered per run for builtins)."""
    try:
        kind = rt.fallback_kinds.get(f)
    except TypeError:  # unhashable
        kind, f_hashable = None, False
    else:
        f_hashable = True
        if kind is not None:
            return kind
    reader = _frame_reader(rt, f)
    if reader is not None:
        kind = reader
    elif type(f) is FunctionType and lookaside.is_internal(f.__code__):
        kind = _AS_IS  # machinery (overdub.metadata...) takes tagged values as they are
    elif is_structural(f):
        kind = _ATTRIBUTE_WRITE if (f is setattr or f is delattr) else _STRUCTURAL
    else:
        kind = _PLAIN
    if f_hashable and _is_builtin(f) and len(rt.fallback_kinds) < _CACHE_LIMIT:
        rt.fallback_kinds[f] = kind
    return kind


def _default_fallback(rt, f, args, kwargs):
    args = lookaside.class_args(f, args)
    kind = _fallback_kind(rt, f)
    if kind is _PLAIN:
        return _plain_call(f, rt.ctx._tagkey, args, kwargs, rt.outer_call)
    if kind is _AS_IS or kind is _STRUCTURAL:
        return f(*args, **kwargs)
    if kind is not _ATTRIBUTE_WRITE:
        f = kind  # (a builtin that reads its caller's frame, reading the user's)
    else:
        if len(args) >= 2:
            obj = args[0]
            if type(obj) is Tagged:
                # a tagged object's attributes are the object's own (the value stays tagged)
                args = (semantics.innermost(obj),) + args[1:]
            elif type(obj) is FunctionType and args[1] in semantics.FUNCTION_BODY:
                r = f(*args, **kwargs)
                function_changed()
                return r
            elif type(obj) is FunctionType and args[1] in semantics.FUNCTION_NAMES:
                r = f(*args, **kwargs)
                function_renamed(obj)
                return r
        return f(*args, **kwargs)
    return _plain_call(f, rt.ctx._tagkey, args, kwargs, rt.outer_call)


def is_structural(f: object) -> bool:
    """Whether ``f`` is a builtin that stores, moves or compares its arguments without
    computing on them (containers, iteration, ``min``/``max``, ``getattr``...): tagged
    values pass through it untouched."""
    try:
        return f in _PASSTHROUGH or _unbound(f) in _PASSTHROUGH
    except TypeError:
        return False


def _frame_reader(rt, f):
    try:
        return rt.table.get(f)
    except TypeError:
        return None


CONTEXT_DEFAULTS.update(canrecurse=default_canrecurse, fallback=default_fallback)
register_dispatcher(overdub, note_tagging)
