"""The per-context runtime: the callables that rewritten code calls, and the template cache.

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

The templates (rewritten code with placeholder slots) are cached per code object
here too, shared by every runtime.
"""
from ._compat import BUILTINS as __builtins__  # type: ignore[no-redef]  # noqa: F401 (never the user's patched builtins)
import gc
import operator
import weakref
from functools import partial
from typing import Any
from types import (CodeType, BuiltinFunctionType, FunctionType, GetSetDescriptorType, MethodDescriptorType,
                   MethodType, MethodWrapperType, ModuleType)

from . import codegen, lookaside, origins, rewrite, semantics
from ._native import (Dispatcher, EntryPoint, GuardedAttribute, GuardedContains, GuardedOperator, GuardedSetattr,
                      GuardedSubscript, RuntimeBase, call_site_entry, code_cached, untrack_code)
from .context import Context, spec_of
from .ops import NATIVE, TypeSet
from .passes import PassError
from .plaincall import _CO_NESTED, WeakKey, funcstr, hashable, is_builtin, is_structural, module_level, plain_call, transient
from .tagging import ACCESSORS, Tagged
from .lifetimes import MACHINERY_TYPES, CodeCache, Table, TwinRef, forget_at_collection, is_transient_class, machinery_type
from .tracebacks import drop_own_frames

#: how many entries a runtime's caches hold before they are cleared
CACHE_LIMIT = 4096
_runtimes: "weakref.WeakSet[Runtime]" = weakref.WeakSet()
_tagging_seen = [False]


def function_renamed(f):
    """A function's ``__name__`` or ``__qualname__`` was replaced by routed code: its
    routed twins take the new names (the generators they make are named after them), and
    every runtime forgets what it resolved, since a run's own caches may hold a twin that
    a collection has dropped from the table of twins kept across runs."""
    for rt in list(_runtimes):
        entry = rt.funcs.get(f.__code__)
        if entry is not None and entry() is f:
            entry.value.__name__, entry.value.__qualname__ = f.__name__, f.__qualname__
        rt.forget_callees()


def function_changed():
    """A function's ``__code__``, ``__defaults__`` or ``__kwdefaults__`` was replaced by
    routed code: every runtime forgets the callables it resolved, so the next call runs
    what the function holds now (the lazy-compilation idiom assigns ``f.__code__`` and
    calls ``f`` again within the same run).  Changes made by code running plainly take
    effect from the next run."""
    for rt in list(_runtimes):
        rt.forget_callees()


def machinery_changed():
    """A module was declared opaque: every runtime forgets the routed twins it made (kept
    across runs: ``known_twin``) and what it resolved, so that the module's functions are
    called as machinery from now on."""
    for rt in list(_runtimes):
        rt.funcs.clear()
        rt.forget_callees()


lookaside.MACHINERY_CHANGED.append(machinery_changed)


#: the containers of values a ``%`` format reads (see ``Runtime._compute_guard_set``)
_FORMAT_ARGUMENTS = frozenset((tuple, dict))


def _weakly(table, f, g, drop):
    """``table[f] = g`` under ``f``'s weak key, for a callee plain Python may free during
    the run.  A routed twin holds its function's globals: where they are not an imported
    module's (a method of a class defined by ``exec`` in a fresh namespace), ``f`` is
    usually reachable from them, and the entry would keep ``f`` alive through its own
    value; such an entry is also dropped when the next collection starts
    (``forget_at_collection``), and ``f`` dies in that collection, as it plainly would."""
    key = WeakKey(f, drop)
    table[key] = g
    if type(f) is FunctionType and not module_level(f):
        forget_at_collection(table, key)


def _forget_twins(phase, info):
    """A garbage collection starts: every runtime forgets its routed twins.  A twin holds its
    function's globals, closure and defaults -- and a function is often reachable from them
    (a module's function from the module's namespace, a recursive closure from its own
    cell) -- so a twin kept across runs would keep a function that the program dropped, and
    its module, alive; dropped here, they are collected exactly when plain Python collects
    them.  (A run in progress holds the twins it uses in its call cache; a function met again
    is given a new twin.)

    A full collection also empties each runtime's routed code (``codes``).  Routed code
    holds the runtime's slots, and they hold the runtime and its context; code objects are
    invisible to the collector, so a cycle through one is never collected: a context the
    program dropped -- or one pooled by a thread that ended -- would live forever.  The
    next run binds its code again (microseconds per function, after a full collection)."""
    if phase == "start":
        full = info.get("generation") == 2
        # (the WeakSet's own weak references: iterating the WeakSet would call the builtins
        # module's len, which a program collected in the middle of may have patched)
        for ref in list(_runtimes.data):
            rt = ref()
            if rt is not None:
                if rt.code_twins:
                    rt.code_twins.clear()
                if full and rt.code_table:
                    rt.codes.clear()


gc.callbacks.append(_forget_twins)


#: the dispatcher's entry points -> their nested forms ``(outer runtime, ctx, f, ...)``,
#: which ``recurse`` runs when routed code calls them (filled in by ``dispatch.py``)
NESTING: dict[Any, Any] = {}


# ----------------------------------------------------------------------------- templates
_templates = CodeCache()  # code -> {(pass_, ctx_type) or None: template code or None}
unroutable: "weakref.WeakValueDictionary[str, CodeType]" = weakref.WeakValueDictionary()  # qualname -> code that had to run plainly (debugging)
_MISSING = object()


@machinery_type
class _Variants(Table):
    """A code object's templates: ``_VariantKey`` -> template code (or None)."""

    __slots__ = ()


@machinery_type
class _VariantKey(tuple):
    """``((pass_, ctx_type) or None, inline_prehook)``, as kept in ``_Variants``."""

    __slots__ = ()


def _template(code, pass_, ctx_type, inline_prehook):
    variants = _templates.get(code)
    if variants is None:
        variants = _Variants()
        _templates[code] = variants
    vkey = ((pass_, ctx_type) if pass_ is not None else None, inline_prehook)
    template = variants.get(vkey, _MISSING)
    if template is not _MISSING:
        return template
    vkey = _VariantKey(vkey if pass_ is None else (_VariantKey(vkey[0]), inline_prehook))
    cached = code_cached(code)
    try:
        template = rewrite.rewrite_code(code, pass_, ctx_type, inline_prehook)
    except PassError:
        raise
    except Exception:  # the bytecode library or the rewriter cannot route it: run plainly
        template = None
        try:
            unroutable[code.co_qualname] = code
        except Exception:  # (a debugging record: a program's patched weakref.ref must not break it)
            pass
    if template is not None:
        untrack_code(template)
    untrack_code(code, cached)  # (only what reading it made: 3.12+ caches co_varnames)
    variants[vkey] = template
    return template


#: what rewritten code calls and its guards are overdub's own objects (``lookaside.user_objects``)
MACHINERY_TYPES.update(t for t in (TypeSet, GuardedOperator, Dispatcher, GuardedAttribute, GuardedSubscript,
                                   GuardedContains, GuardedSetattr)
                       if t is not None)


# ----------------------------------------------------------------------------- the runtime
class Runtime(RuntimeBase):
    """The callables that one context instance's rewritten code calls.  The fields that
    ``recurse``, ``canrecurse`` and ``fallback`` read on every call live in
    :class:`RuntimeBase` (C, or its pure-Python reference)."""

    #: the call cache's key for a transient callee (the C dispatcher enters the routed twin
    #: of a function made anew from code routed before under one: ``fresh_twin``)
    weak_key = WeakKey

    def __init__(self, ctx, spec, outer=None):
        self.ctx = ctx
        self.ctx_type = type(ctx)
        self.spec = spec
        # nested inside another context's run (``overdub`` called from code that context
        # routes): the context's own methods run routed through the outer run
        self.outer = outer
        self.outer_call = outer.call if outer is not None else None
        self.prehook, self.posthook = self.bound("prehook"), self.bound("posthook")
        # nothing sees a call itself (no hook, wildcard or canrecurse): the entry function of
        # a run is resolved straight to what runs it (``enter``)
        self.plain_calls = not (spec.prehook or spec.posthook or spec.wildcard or spec.canrecurse
                                or outer is not None)
        self.canrecurse, self.fallback = self.bound("canrecurse"), self.bound("fallback")
        self.fcache = Table()
        self.kept = Table()  # the entries of fcache for builtins, which survive a run's end
        self.fallback_kinds = Table()  # builtin -> how the default fallback calls it
        self.recursable = Table()  # builtin -> the default canrecurse's answer for it
        self.op_answers = Table()  # (C) operators on Python classes' instances -> canrecurse's answer
        self.own_canrecurse, self.own_fallback = spec.canrecurse, spec.fallback
        self.codes = CodeCache()
        self.funcs = CodeCache()  # code -> TwinRef (a weak reference to the user function, with its routed twin)
        self.code_twins = self.funcs._data  # (read by known_twin, kept across runs)
        self.depth = 0
        self.checking = _tagging_seen[0]
        # what resolve makes for a transient callee holds no reference to it (a wildcard's
        # or canrecurse's closure does), so it can be cached under a weak key
        self.weak_keys = not (spec.wildcard or spec.canrecurse)
        fcache = self.fcache
        self._drop = lambda key: fcache.pop(key, None)  # a transient callee died
        # a Python class -> (its __call__, what runs it) for its callable instances, which are
        # not cached themselves (this run; only where resolve ends in _target for them)
        self.instance_calls = Table()
        self.plain_resolve = not (spec.wildcard or spec.canrecurse or spec.totals or spec.primitives)
        # a callee's answer may be its routed twin, kept across runs (known_callee)
        self.twins_first = spec.wildcard is None and not spec.canrecurse
        self.targets = targets = Table()  # f -> what recurse runs for it (this run)
        self._drop_target = lambda key: targets.pop(key, None)
        semantics.add_numpy_types()
        self.steps = semantics.Steps(None, self.fallback_call)
        self.readers = lookaside.FrameReaders(self.route_code)
        self.table = self.readers.table()
        self.ops = Table()
        # (built before the dispatchers, which load a module's attributes through it)
        self._getattr_slot = self.slot(("getattr",))
        self.call, self.meth, self.methload = self._dispatchers(None)
        self.steps.call = self.call
        self.attr_info = self.steps.attr_info  # (emptied by leave at the end of each run)
        self.code_table = self.codes._data  # (leave says when it outgrows CACHE_LIMIT)
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

    def _primitive(self, fn):
        """How this runtime calls the primitive ``fn`` (context first): its native twin
        (``__overdub_native__``, see ``bound_total``) outside a nested run, else ``user(fn)``."""
        native = getattr(fn, "__overdub_native__", None)
        return native if native is not None and self.outer_call is None else self.user(fn)

    def bound_total(self, fn):
        """The total primitive ``fn`` bound to the context.  A primitive may carry a native
        twin, ``fn.__overdub_native__``: a C callable with the same signature that behaves
        exactly as ``fn`` does (capstan's scalar arithmetic).  The runtime calls the twin
        unless the context runs nested in another context's run, which must see what
        ``fn``'s Python body computes."""
        native = getattr(fn, "__overdub_native__", None)
        if native is not None and self.outer_call is None:
            return MethodType(native, self.ctx)
        return MethodType(self.user(fn), self.ctx)

    def enter(self, f):
        """What ``call(f, ...)`` runs for the entry function ``f`` of a run when nothing sees
        calls (``plain_calls``): a Python function without a primitive is stepped into
        (``_target``: its routed twin) without a trip through the call cache, which the
        previous run's end emptied; inside an enclosing run (a rule of a nested
        differentiation entering the outer one), through that run's ``target`` cache.
        None: ask ``call``."""
        spec = self.spec
        if type(f) is not FunctionType or f in spec.totals or f in spec.primitives:
            return None
        if self.depth > 1:
            return self.target(f)
        twin = self.known_twin(f)  # (the commonest case, f run before: _target's answer)
        return twin if twin is not None else self._target(f)

    def forget_callees(self):
        """Drop what was resolved during this run (builtins excepted): a callee is resolved
        again on its next call.  Routed twins made for functions stay valid as long as
        the function holds the same code and defaults (``_rewritten`` checks)."""
        self.fcache.clear()
        self.fcache.update(self.kept)
        self.instance_calls.clear()
        self.targets.clear()
        self.op_answers.clear()

    def target(self, f):
        """``_target(f)`` (what ``recurse`` runs), remembered for the run like ``resolve``'s
        answers: a wildcard that recurses asks it on every call.  A Python function's is
        its routed twin, kept across runs (``known_twin``)."""
        if not hashable(f):
            return self._target(f)
        try:
            return self.targets[f]
        except Exception:  # (KeyError; or unhashable, or a hash that fails)
            pass
        g = self.known_twin(f)
        if g is not None:  # (the C recurse takes the same step)
            if not transient(f) and len(self.targets) < CACHE_LIMIT:
                self.targets[f] = g
            return g
        g = self._target(f)
        try:
            if not transient(f):
                if len(self.targets) >= CACHE_LIMIT:
                    self.targets.clear()
                self.targets[f] = g
                if issubclass(type(f), type) and is_transient_class(f):
                    forget_at_collection(self.targets, f)
            elif type(f) is FunctionType and g is not f:  # (a routed twin holds no f)
                _weakly(self.targets, f, g, self._drop_target)
        except Exception:  # unhashable (or its hash fails)
            pass
        return g

    # -- slots: what rewritten code calls --------------------------------------------------------
    def _build_ops(self):
        ops = self.ops
        ops[("call",)] = self.call
        ops[("meth",)] = self.meth
        ops[("methload",)] = self.methload
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

    def _inline_hooks(self, key):
        """Whether the hooks are all the context has to say about operator ``key`` (no
        wildcard, custom canrecurse/fallback or primitive for it)."""
        spec = self.spec
        return (not (spec.wildcard or spec.canrecurse or spec.fallback)
                and codegen.OP_SLOTS[key][0] not in spec.primitives)

    def _inline_prehook(self, key):
        """Whether rewritten code calls the prehook itself before operator ``key``, running
        the operator natively on builtin operands: when the hooks are all the context has
        to say about it, and -- on the pure-Python path, whose inline guard calls no
        posthook -- there is no posthook."""
        spec = self.spec
        return bool(spec.prehook and (GuardedOperator is not None or not spec.posthook)
                    and self._inline_hooks(key))

    def _inline_posthook(self, key):
        """Whether the C layer's guarded operator calls the posthook itself after running
        operator ``key`` natively on builtin operands (the slot calls it otherwise)."""
        return bool(self.spec.posthook and GuardedOperator is not None and self._inline_hooks(key))

    def _guard_set(self, key):
        if self.outer is not None:  # builtin operands run natively only if neither context looks
            outer = self.outer
            if outer._inline_prehook(key) or outer._inline_posthook(key):  # (its hooks are called
                # by its own code only)
                return _NO_TYPES
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
        if self._inline_prehook(key) or self._inline_posthook(key):
            return NATIVE
        if spec.prehook or spec.posthook or spec.wildcard or spec.canrecurse:
            return _NO_TYPES  # (a fallback never sees operators on builtin operands)
        guard = NATIVE
        operands = 2 if key[0] in ("binop", "compare") else 1
        for argtypes, _ in spec.primitives.get(fn, ()):
            matched = [_natives_matching(argtypes, i) for i in range(operands)]
            if not all(matched):
                continue  # this primitive never sees builtin operands
            narrowed = [m for m in matched if m is not NATIVE and len(m) < len(NATIVE)]
            if not narrowed:
                return _NO_TYPES
            # excluding one position's types is enough: the smallest exclusion keeps the most
            guard = TypeSet(guard - min(narrowed, key=len))
        if key == ("binop", "REMAINDER"):
            # ``"%.3f %s" % (x, y)``: the values formatted are inside the tuple or dict, which
            # CPython's formatting reads in C; the context's slot sees them (and a tagged one
            # is formatted as its value, where C formatting would convert it with __float__)
            guard = TypeSet(guard - _FORMAT_ARGUMENTS)
        return guard

    def _dispatchers(self, arity):
        """``(call, meth, methload)`` for calls with ``arity`` positional arguments (None:
        any; methload takes none)."""
        spec = self.spec
        getattr_ = self._getattr_slot
        if Dispatcher is not None:  # the C layer: one dispatcher serves every arity
            hooks = (self.prehook if spec.prehook else None, self.posthook if spec.posthook else None)
            twins = (self, spec.totals, spec.primitives) if self.twins_first else None
            return tuple(Dispatcher(method, self.fcache, self.resolve, *hooks, self.method_of,
                                    getattr_, ModuleType, twins) for method in (0, 1, 2))
        make = codegen.dispatchers_factory(arity, spec.prehook, spec.posthook)
        return make(self.fcache, self.resolve, self.prehook, self.posthook, self.method_of,
                    getattr_, ModuleType)

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
            return MethodType(self._primitive(rules[0][1]), ctx)  # the primitive itself: no frame between
        if spec.wildcard is not None and params == args and not spec.prehook and not spec.posthook:
            return partial(self.user(spec.wildcard), ctx, fn)  # the wildcard itself: no frame between
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
                env["m%d" % i] = self._primitive(rules[i][1])
                chain.append("%s %s:\n{i}    r = m%d(ctx, %s)"
                             % ("if" if i == 0 else "elif", cond, i, args))
            plain = "\n{i}".join(chain) + "\n{i}else:\n{i}    " + plain.replace("{i}", "{i}    ")
        lines = ["def slot(%s):" % params, "    try:"]
        if spec.prehook and with_prehook:
            lines.append("        prehook(fn, %s)" % args)
        lines.append("        " + plain.format(i="        "))
        if spec.posthook:
            lines.append("        posthook(r, fn, %s)" % args)
        # (the user's code sees its exceptions with plain Python's traceback)
        lines += ["    except BaseException as exc:", "        drop_own_frames(exc)", "        raise",
                  "    return r"]
        env["drop_own_frames"] = drop_own_frames
        return codegen.compile_function("\n".join(lines), "slot", env, "slot " + " ".join(map(str, key)))

    def slot(self, key):
        """The callable standing for template slot ``key`` (built on first use)."""
        try:
            return self.ops[key]
        except KeyError:
            pass
        if key[0] in ("call", "meth"):
            call, meth, _ = self._dispatchers(key[1])
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
        if key[0] == "guarded":  # the C layer's form of an inline guard (rewrite._guarded)
            op = key[1:]
            fn = self.ops[key] = GuardedOperator(op[1], self.slot(("guard",) + op), self.slot(op),
                                                 self.slot(("pre",) + op), codegen.OP_SLOTS[op][0],
                                                 self.posthook if self._inline_posthook(op) else None)
            return fn
        if key == ("iterable",):
            fn = self.ops[key] = self._iterable()
            return fn
        if key == ("notcontains",):
            contains = self.slot(("contains",))
            if type(contains) is GuardedContains:  # (C: `not in` as `in`, negated)
                fn = GuardedContains(*self.ops[("contains", "C")], True)
            else:
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
                fn = self.ops[key] = self.bound_total(total)
                return fn
            inline = key[0] in ("binop", "compare") and self._inline_prehook(key)
            if self.outer is not None:
                fast = None  # (the step hands builtin operands to the outer run)
            fn = self._op_slot(key, op, self.step_for(op), params, args, fast, with_prehook=not inline)
            if key == ("getattr",) and GuardedAttribute is not None:
                hooks = self._c_hooks(key)
                plain, names = self._untaken_types(getattr, {ModuleType, type, FunctionType,
                                                             BuiltinFunctionType, MethodType}
                                                   | set(NATIVE), hooks is not None)
                if plain and str in names:  # the C layer loads their attributes itself
                    fn = GuardedAttribute(plain, NATIVE, self.steps.attr_info, semantics.ALL_NAMES, fn,
                                          op, *(hooks or (None, None)))
            elif key == ("setattr",) and GuardedSetattr is not None:
                hooks = self._c_hooks(key)
                spec = self.spec
                if (hooks is not None and setattr not in spec.primitives and setattr not in spec.totals
                        and not (spec.wildcard or spec.canrecurse)):  # (the slot's last branch)
                    fn = GuardedSetattr(NATIVE, self.steps.attr_info, semantics.ALL_NAMES, fn, op, *hooks)
            elif key == ("contains",) and GuardedContains is not None:
                hooks = self._c_hooks(key)
                plain, _ = self._untaken_types(operator.contains, set(NATIVE), hooks is not None)
                if plain and operator.contains not in self.spec.primitives:  # (the slot's fast branch)
                    self.ops[("contains", "C")] = arguments = (plain, fn, op, *(hooks or (None, None)))
                    fn = GuardedContains(*arguments, False)
            elif key == ("getitem",) and GuardedSubscript is not None:
                hooks = self._c_hooks(key)
                plain, keys = self._untaken_types(operator.getitem, set(NATIVE), hooks is not None)
                if plain and keys:  # the C layer subscripts them itself (the slot's last branch)
                    fn = GuardedSubscript(plain, keys, fn, op, *(hooks or (None, None)))
        self.ops[key] = fn
        return fn

    def _iterable(self):
        """The ``iterable`` slot, run on a value before code or a builtin iterates it: the
        context's primitive on ``iter`` for the types it admits (its iterator is iterated
        instead), the value itself otherwise.  ``None`` when no primitive is on ``iter``."""
        rules = self.spec.primitives.get(iter, ())
        if not rules:
            return None if self.outer is None else self.outer.slot(("iterable",))
        conds, env = codegen.rule_conditions(rules, ["x"])
        env.update(ctx=self.ctx, drop_own_frames=drop_own_frames)
        lines = ["def slot(x):", "    try:"]
        for i, cond in enumerate(conds):
            env["m%d" % i] = self.user(rules[i][1])
            lines += ["        if %s:" % cond, "            return m%d(ctx, x)" % i]
        lines += ["        return x", "    except BaseException as exc:", "        drop_own_frames(exc)",
                  "        raise"]
        return codegen.compile_function("\n".join(lines), "slot", env, "slot iterable")

    def _c_hooks(self, key):
        """``(prehook or None, posthook or None)`` for the C layer to call around operator
        ``key``'s plain branch when the context has hooks and they are all it has to say
        about the operator (as the slot would call them); None when it has no hooks."""
        spec = self.spec
        if not (spec.prehook or spec.posthook):
            return None
        if self.outer is not None or not self._inline_hooks(key):
            return None  # (the caller finds no plain types: the slot does it all)
        return (self.prehook if spec.prehook else None, self.posthook if spec.posthook else None)

    def _untaken_types(self, fn, candidates, hooks_called=False):
        """``(firsts, seconds)``: exact types such that a call ``fn(a, b)`` (``getattr``,
        ``operator.getitem``) with ``type(a)`` among ``firsts`` (taken from ``candidates``)
        and ``type(b)`` among ``seconds`` (builtin types) is something nothing in the
        context takes: no wildcard or ``canrecurse``, no primitive for ``fn`` admitting
        both operands, and no hook -- or, with ``hooks_called``, hooks the caller calls
        around it (``_c_hooks``)."""
        spec = self.spec
        none = (_NO_TYPES, _NO_TYPES)
        if (self.outer is not None or (spec.prehook or spec.posthook) and not hooks_called
                or spec.wildcard or spec.canrecurse or fn in spec.totals):
            return none
        rules = spec.primitives.get(fn, ())
        if any(not argtypes for argtypes, _ in rules):
            return none  # a rule taking every call

        def admits(pattern, tp):
            ts = pattern if isinstance(pattern, tuple) else (pattern,)
            return any(t is not Tagged and issubclass(tp, t) for t in ts)

        # second operands no two-pattern rule admits; those rules then never match
        seconds = frozenset(tp for tp in NATIVE
                            if not any(len(a) > 1 and admits(a[1], tp) for a, _ in rules))
        firsts = frozenset(tp for tp in candidates
                           if not any(len(a) == 1 and admits(a[0], tp) for a, _ in rules))
        return firsts, seconds

    def call_ex(self, f, args, kwargs):
        """``f(*args, **kwargs)`` with CPython's own checks on ``args`` and ``kwargs``."""
        try:
            if type(args) is not tuple:
                tp = type(args)
                lookup = semantics.lookup  # (the type's slots, not its metaclass's attributes)
                if not (lookup(tp, "__iter__") is not None or (lookup(tp, "__getitem__") is not None
                                                               and not issubclass(tp, dict))):
                    raise TypeError("%s argument after * must be an iterable, not %s"
                                    % (funcstr(f), tp.__name__))
                iterable = self.slot(("iterable",))
                args = tuple(args if iterable is None else iterable(args))
            if kwargs is None:
                return self.call(f, *args)
            for key in kwargs:
                if type(key) is not str and not isinstance(key, str):
                    raise TypeError("keywords must be strings")  # (CPython names no function)
            return self.call(f, *args, **kwargs)
        except BaseException as exc:
            drop_own_frames(exc)
            raise
        finally:  # this frame is the callee's f_back (a traceback no longer shows it): kept
            # past the call, it holds none of the arguments, as plain Python's caller would not
            f = args = kwargs = key = None  # noqa: F841

    def super_attr(self, global_super, cls, obj, flags):
        try:
            two_args, name = flags
            if two_args or global_super is super:
                s = self.call(global_super, cls, obj)
            else:
                s = self.call(global_super)
            return self._getattr_slot(s, name)
        except BaseException as exc:
            drop_own_frames(exc)
            raise

    # -- resolving a callee ---------------------------------------------------------------------
    def resolve(self, f, cache=True, lasting=False):
        """The callable that runs ``f`` inside the context, hooks excluded; cached for
        the run, under a weak key when ``f`` is transient (``lasting``: ``f`` is a class
        attribute, which lives as long as its class)."""
        if self.twins_first and cache:
            g = self.known_callee(f, lasting)
            if g is not None:
                return g
        if type(f) is partial and self.weak_keys and not lasting:  # (made per call: a bound
            spec = self.spec                                           # method of a tagged value)
            if not (spec.totals and f in spec.totals) and not (spec.primitives and f in spec.primitives):
                return partial(self.call, f.func, *f.args, **f.keywords)  # (_stepped's answer, uncached)
        calls = self.instance_calls.get(type(f)) if self.plain_resolve else None
        if calls is not None and not lasting and type(f).__call__ is calls[0]:  # (still its __call__)
            return partial(calls[1], f)
        g = self._resolve(f, cache)
        if cache and not lasting and transient(f):
            # cached under f's weak key unless g keeps f alive (a bound C method's fallback, a
            # plain call's closure): that entry would live as long as the run
            if self.weak_keys and type(f) is not BuiltinFunctionType and not _holds(g, f):
                try:
                    _weakly(self.fcache, f, g, self._drop)
                except TypeError:  # (not weakly referenceable, or unhashable: not cached)
                    pass
            return g
        if cache:
            if len(self.fcache) >= CACHE_LIMIT:
                self.fcache.clear()
            self.fcache[f] = g
            if issubclass(type(f), type) and is_transient_class(f):
                forget_at_collection(self.fcache, f)  # (so that a local class dies as plainly)
            if (is_builtin(f) or self._taken(f)) and len(self.kept) < CACHE_LIMIT:
                self.kept[f] = g  # builtins are no user code: kept across runs
        return g

    def known_callee(self, f, lasting=False):
        """``resolve(f)`` where its answer is known without resolving: a Python function that
        no primitive takes (the context has no wildcard or canrecurse of its own) runs as
        its routed twin, which ``known_twin`` gives across runs while ``f`` is unchanged; a
        bound method of one as ``partial(what runs the function, obj)``.  Entered in the
        call cache as ``resolve`` enters it (a function defined inside another, which plain
        Python may free during the run, under a weak key; a bound method not at all).  None:
        resolve.  The C dispatchers take the same steps (``known_callee`` in
        native/overdub_native.c), leaving functions defined inside others to this one."""
        spec = self.spec
        obj = None
        if type(f) is MethodType:
            if f in spec.totals or f in spec.primitives:
                return None
            func, obj = f.__func__, f.__self__
            inner = self.fcache.get(func)
            if inner is not None:
                return partial(inner, obj)
            f, lasting = func, False
        if type(f) is not FunctionType or f in spec.totals or f in spec.primitives:
            return None
        twin = self.known_twin(f)
        if twin is None:
            return None
        if len(self.fcache) < CACHE_LIMIT:
            if lasting or not transient(f):
                self.fcache[f] = twin
            else:  # (a function plain Python may free during the run: under a weak key)
                _weakly(self.fcache, f, twin, self._drop)
        return twin if obj is None else partial(twin, obj)

    def _taken(self, f):
        """Whether a primitive without conditions takes every call of ``f``: its answer
        depends on the context's class alone (``f`` is never stepped into), and the class
        holds ``f`` already, so it is kept across runs like a builtin's."""
        rules = self.spec.primitives.get(f) if self.spec.primitives else None
        return bool(rules) and any(not argtypes for argtypes, _ in rules)

    def _resolve(self, f, hashable=True):
        spec = self.spec
        if hashable and spec.totals:
            total = spec.totals.get(f)
            if total is not None:
                return self.bound_total(total)  # it takes every call of f itself
        if hashable and spec.primitives:
            rules = spec.primitives.get(f)
            if rules:  # (a rule without conditions takes every call: f's body is never
                # stepped into, so it is not rewritten either)
                always = any(not argtypes for argtypes, _ in rules)
                return self._primitive_dispatch(rules, None if always else self._target(f))
        if spec.wildcard is not None:
            return partial(self.user(spec.wildcard), self.ctx, f)  # (C: no frame of its own)
        if spec.canrecurse:
            can, target, fall = self.canrecurse, self._target(f), self._fallback_for(f)

            def decide(*a, **k):
                return target(*a, **k) if can(f, *a, **k) else fall(*a, **k)

            return decide
        return self._target(f)

    def _primitive_dispatch(self, rules, target):
        """``f(*args, **kwargs)`` trying each ``@primitive`` registration in turn.  A primitive
        with a native twin (``__overdub_native__``, see ``bound_total``) is called as its twin
        outside a nested run; a lone one without conditions is the answer itself, bound to the
        context (no frame of the dispatcher's: the twin drops overdub's frames from an error's
        traceback as the dispatcher does)."""
        natives = [self._primitive(fn) for _, fn in rules]
        if (len(rules) == 1 and not rules[0][0] and self.outer_call is None
                and getattr(rules[0][1], "__overdub_native__", None) is not None):
            return MethodType(natives[0], self.ctx)
        names = ["args[%d]" % i for i in range(codegen.max_arity(rules))]
        conds, env = codegen.rule_conditions(rules, names)
        lines = ["def dispatch(*args, **kwargs):", "    try:", "        n = len(args)"]
        for i, cond in enumerate(conds):
            need = len(rules[i][0])
            lines.append("        if n >= %d and %s:" % (need, cond) if need else "        if True:")
            lines.append("            return m%d(ctx, *args, **kwargs)" % i)
        lines += ["        return target(*args, **kwargs)",
                  "    except BaseException as exc:", "        drop_own_frames(exc)", "        raise"]
        env.update(ctx=self.ctx, target=target, drop_own_frames=drop_own_frames)
        env.update(("m%d" % i, natives[i]) for i in range(len(rules)))
        return codegen.compile_function("\n".join(lines), "dispatch", env, "primitive dispatch")

    def _target(self, f):
        """``recurse``: step into ``f``'s Python body, else the fallback; a builtin that
        iterates its arguments reads them through the ``iterable`` slot first."""
        target = self._stepped(f)
        if not hashable(f):  # (no table holds it)
            return target
        special = semantics.PROTOCOLS.get(f)
        if special is not None:
            target = semantics.protocol_step(f, special, target, self.call)
        positions = lookaside.iterated(f)
        if positions is not None:
            iterable = self.slot(("iterable",))
            if iterable is not None:
                return lookaside.reading_elements(target, positions, iterable)
        return target

    def _stepped(self, f):
        tf = type(f)
        if tf is FunctionType:
            if lookaside.is_internal(f.__code__):
                nested = NESTING.get(f)
                return f if nested is None else partial(nested, self)
            return self._rewritten(f)
        if tf is EntryPoint:  # (the C layer's recurse, canrecurse, fallback; overdub runs as it is)
            nested = NESTING.get(f)
            return f if nested is None else partial(nested, self)
        if (tf is BuiltinFunctionType or tf is MethodWrapperType) and f in ACCESSORS:  # (tagging's readers)
            return f
        if tf is MethodType:
            func, obj = f.__func__, f.__self__
            try:
                inner = self.fcache[func]
            except (KeyError, TypeError):
                inner = self.resolve(func)
            return partial(inner, obj)
        if f is type or f is lookaside.TYPE_NEW:  # (they name the caller's module)
            plain = self._fallback_for(f)

            def make_class(*a, **k):
                try:
                    return plain(*lookaside.class_args(f, a), **k)
                except BaseException as exc:
                    drop_own_frames(exc)
                    raise

            return make_class
        step = self._builtin_step(f)
        if step is not None:
            return step
        if issubclass(tf, type):  # (not isinstance: a __class__ property may claim anything)
            construct = self.steps.instantiate(f)
            return construct if construct is not None else self._fallback_for(f)
        if tf is partial:
            return partial(self.call, f.func, *f.args, **f.keywords)  # (C: no frame between)
        if tf is staticmethod:
            return self._resolve(f.__func__)
        dunder = semantics.lookup(tf, "__call__")
        if type(dunder) is FunctionType and tf is not Tagged:
            try:  # (a callable instance is not cached itself: its class's __call__ is)
                inner = self.fcache[dunder]
            except (KeyError, TypeError):
                inner = self.resolve(dunder, True, True)
            if self.plain_resolve and type(tf) is type and len(self.instance_calls) < CACHE_LIMIT:
                self.instance_calls[tf] = (dunder, inner)
                if is_transient_class(tf):
                    forget_at_collection(self.instance_calls, tf)
            return partial(inner, f)
        return self._fallback_for(f)

    def _builtin_step(self, f):
        if not hashable(f):  # (no table holds it)
            return None
        try:
            step = self.step_for(f)
            if step is not None:
                return semantics.called_as(f, step)
            step = self.readers.reader_of(f, self.table)
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
                return partial(lookaside.wrap_callbacks(unbound, self.call), owner)
        return None

    def _rewritten(self, f):
        code = f.__code__
        last = self.funcs.get(code)  # the routed twin made for f last time, if f is the same
        if (last is not None and last() is f and last.value.__defaults__ is f.__defaults__
                and last.value.__kwdefaults__ is f.__kwdefaults__):
            twin = last.value
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
        self.funcs[code] = TwinRef(f, self.funcs.forget_value, id(code), g)
        return g

    def route_code(self, code):
        """``code`` rewritten and bound to this runtime (``code`` itself if it cannot be)."""
        spec = self.spec
        inline = bool(spec.prehook and not (spec.posthook or spec.wildcard or spec.canrecurse
                                            or spec.fallback))
        template = _template(code, self.ctx.pass_, type(self.ctx), inline)
        if template is None:
            return code
        entry = self.call_site
        consts = tuple(entry(c.key) if type(c) is rewrite.Slot else c for c in template.co_consts)
        routed = template.replace(co_consts=consts)
        untrack_code(template)  # (3.12+: replace() made the template's cached co_varnames)
        untrack_code(routed)
        origins.note_routed(routed, code)
        return routed

    def call_site(self, key):
        """What rewritten code loads for template slot ``key``: the slot, or for a C slot
        object the builtin function bound to it that CPython's call sites call directly."""
        try:
            return self.ops[("site",) + key]
        except KeyError:
            pass
        fn = self.ops[("site",) + key] = call_site_entry(self.slot(key))
        return fn

    def method_of(self, tp, name):
        """``_method_of(tp, name)``, which the call dispatchers cache under ``(tp, name)``
        in ``fcache`` (an entry dropped at the next collection when ``tp`` is a class plain
        Python may free)."""
        if is_transient_class(tp):
            forget_at_collection(self.fcache, (tp, name))
        return self._method_of(tp, name)

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
        reader = self.frame_reader(f)
        if reader is not None:  # called plainly they would read the dispatcher's frame
            return reader
        if self.spec.fallback:
            return partial(self.fallback, f)
        call = self.outer_call
        if call is not None:  # nested: what this context calls plainly, the outer one routes
            ctx = self.ctx
            if is_structural(f):
                return partial(call, f)

            def nested_plain(*a, **k):
                try:
                    return plain_call(f, ctx._tagkey, a, k, call)
                except BaseException as exc:
                    drop_own_frames(exc)
                    raise

            return nested_plain
        if not self.checking or is_structural(f):
            return f
        ctx = self.ctx

        def checked_plain(*a, **k):
            try:
                return plain_call(f, ctx._tagkey, a, k)
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return checked_plain

    def frame_reader(self, f):
        """The stand-in for ``f`` when it is a builtin that reads its caller's frame."""
        if not hashable(f):
            return None
        return self.readers.reader_of(f, self.table)

    def fallback_call(self, f, args, kwargs):
        if self.spec.fallback:
            return self.fallback(f, *args, **kwargs)
        return plain_call(f, self.ctx._tagkey, args, kwargs, self.outer_call)


def _holds(g, f):
    """Whether ``g``, what ``resolve`` made for ``f``, refers to ``f`` itself (as a partial's
    argument or a closure's cell)."""
    if g is f:
        return True
    if type(g) is partial:
        return g.func is f or any(a is f for a in g.args)
    if type(g) is FunctionType and g.__closure__:
        for cell in g.__closure__:
            try:
                if cell.cell_contents is f:
                    return True
            except ValueError:  # (an empty cell)
                pass
    return False


_guards: dict[Any, Any] = Table()  # (id(spec), slot key, number of native types) -> (spec, guard set)
_NO_TYPES: frozenset = frozenset()  # (one object, made at import: a guard set of no types)


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


def runtime_of(ctx, fname):
    """``ctx``'s runtime, made (again) when it has none or its class changed since;
    ``fname`` names the entry point in the error for a ``ctx`` that is no context."""
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


def leave(rt):
    """One run of ``rt`` ends (runs nest): at the outermost, forget what was resolved
    (``RuntimeBase.leave``, in C) and trim the routed code when it outgrew its limit."""
    if rt.leave():
        leave_trim(rt)


def leave_trim(rt):
    """The routed code of ``rt`` outgrew its limit (``rt.leave()`` said so): forget it."""
    rt.codes.clear()
    rt.funcs.clear()
