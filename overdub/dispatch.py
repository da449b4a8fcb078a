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
import sys
import threading
import weakref
from functools import partial
from types import BuiltinFunctionType, FunctionType, MethodDescriptorType, MethodType, ModuleType

from . import lookaside, rewrite, semantics
from .context import Context, spec_of
from .passes import PassError
from .tagging import Tagged

__all__ = ["overdub", "recurse", "fallback", "canrecurse"]

_CACHE_LIMIT = 4096
_runtimes = weakref.WeakSet()
_tagging_seen = [False]


# ----------------------------------------------------------------------------- templates
_templates = {}  # id(code) -> (weakref to code, {(pass_, ctx_type): template or None})
_templates_lock = threading.Lock()
unroutable = weakref.WeakValueDictionary()  # qualname -> code that had to run plainly (debugging)


def _template(code, pass_, ctx_type):
    key = id(code)
    entry = _templates.get(key)
    if entry is None or entry[0]() is not code:
        def forget(_, key=key):
            with _templates_lock:
                current = _templates.get(key)
                if current is not None and current[0]() is None:
                    del _templates[key]

        entry = (weakref.ref(code, forget), {})
        with _templates_lock:
            _templates[key] = entry
    variants = entry[1]
    vkey = (pass_, ctx_type) if pass_ is not None else None
    try:
        return variants[vkey]
    except KeyError:
        pass
    try:
        template = rewrite.rewrite_code(code, pass_, ctx_type)
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


# ----------------------------------------------------------------------------- generated code
_CALL_SRC = '''
def make(fcache, resolve, prehook, posthook, method_of, getattr_, ModuleType):
    def call(f, /, *args, **kwargs):
        {pre}
        try:
            g = fcache[f]
        except KeyError:
            g = resolve(f)
        except TypeError:
            g = resolve(f, False)
        {ret}

    def meth(obj, name, /, *args, **kwargs):
        tp = type(obj)
        if tp is ModuleType:
            d = obj.__dict__
            if name in d:
                return call(d[name], *args, **kwargs)
        else:
            try:
                f, hasdict = fcache[tp, name]
            except KeyError:
                f, hasdict = fcache[tp, name] = method_of(tp, name)
            if f is not None and not (hasdict and name in obj.__dict__):
                args = (obj,) + args
                {pre}
                try:
                    g = fcache[f]
                except KeyError:
                    g = resolve(f)
                {ret}
        return call(getattr_(obj, name), *args, **kwargs)

    return call, meth
'''
_PRE = "prehook(f, *args, **kwargs)"
_RET_PLAIN = "return g(*args, **kwargs)"
_RET_POST = "r = g(*args, **kwargs)\n        posthook(r, f, *args, **kwargs)\n        return r"

_BINOP_SRC = '''
def make(NATIVE, slow):
    def binop(b, a):
        if type(a) in NATIVE and type(b) in NATIVE:
            return a {sym} b
        return slow(a, b)
    return binop
'''
_SYMBOLS = {"ADD": "+", "SUBTRACT": "-", "MULTIPLY": "*", "TRUE_DIVIDE": "/", "FLOOR_DIVIDE": "//",
            "REMAINDER": "%", "POWER": "**", "LT": "<", "LE": "<=", "EQ": "==", "NE": "!=",
            "GT": ">", "GE": ">="}
_generated = {}


def _generate(src, name, **fmt):
    key = (src, tuple(sorted(fmt.items())))
    code = _generated.get(key)
    if code is None:
        text = src.format(**fmt)
        code = _generated[key] = compile(text, __file__, "exec")  # internal frames: see lookaside
    ns = {"FunctionType": FunctionType}
    exec(code, ns)
    return ns["make"]


# ----------------------------------------------------------------------------- the runtime
class Runtime:
    """The callables that one context instance's rewritten code calls."""

    def __init__(self, ctx, spec):
        self.ctx = ctx
        self.spec = spec
        self.fcache = {}
        self.codes = {}
        self.depth = 0
        self.checking = _tagging_seen[0]
        semantics.add_numpy_types()
        self.steps = semantics.Steps(None, self.fallback_call)
        readers = lookaside.FrameReaders(self.route_code)
        self.table = readers.table()
        self.ops = {}
        pre = _PRE if spec.prehook else "pass"
        ret = _RET_POST if spec.posthook else _RET_PLAIN
        make = _generate(_CALL_SRC, "call", pre=pre, ret=ret)
        self.call, self.meth = make(self.fcache, self.resolve, ctx.prehook, ctx.posthook,
                                    self._method_of, lambda o, n: self._getattr_slot(o, n),
                                    ModuleType)
        self.steps.call = self.call
        self._build_ops()
        _runtimes.add(self)

    # -- slots: what rewritten code calls --------------------------------------------------------
    def _fast(self, fn):
        """True when calling ``fn`` inside this context is just its ``recurse`` step."""
        s = self.spec
        return not (s.prehook or s.posthook or s.wildcard or s.canrecurse or s.fallback
                    or fn in s.primitives)

    def _build_ops(self):
        import operator

        steps, call, ops = self.steps, self.call, self.ops
        for name, (fn, *_) in semantics.BINARY.items():
            ops[fn] = steps.binary(name)
            ops[("binop", name)] = self._binary_slot(fn, ops[fn], _SYMBOLS.get(name))
        for name, (fn, _) in semantics.INPLACE.items():
            ops[fn] = steps.inplace(name)
            ops[("binop", name)] = self._binary_slot(fn, ops[fn], None)
        for name, (fn, *_) in semantics.COMPARE.items():
            ops[fn] = steps.compare(name)
            ops[("compare", name)] = self._binary_slot(fn, ops[fn], _SYMBOLS[name])
        for name, (fn, _) in semantics.UNARY.items():
            ops[fn] = step = steps.unary(name)
            ops[("unary", name)] = step if self._fast(fn) else partial(call, fn)
        for fn, step in ((operator.contains, steps.contains()), (operator.getitem, steps.getitem()),
                         (operator.setitem, steps.setitem()), (operator.delitem, steps.delitem()),
                         (getattr, steps.getattr()), (setattr, steps.setattr()),
                         (delattr, steps.delattr())):
            ops[fn] = step
        fast = self._fast
        contains = ops[operator.contains] if fast(operator.contains) else partial(call, operator.contains)
        ops[("contains",)] = contains
        ops[("notcontains",)] = lambda c, x: not contains(c, x)
        getitem = ops[operator.getitem]
        if not fast(operator.getitem):
            getitem = partial(call, operator.getitem)
        ops[("getitem",)] = lambda k, c: getitem(c, k)
        ops[("setitem",)] = ops[operator.setitem] if fast(operator.setitem) else partial(call, operator.setitem)
        delitem = ops[operator.delitem] if fast(operator.delitem) else partial(call, operator.delitem)
        ops[("delitem",)] = lambda k, c: delitem(c, k)
        for fn in (getattr, setattr, delattr):
            ops[(fn.__name__,)] = ops[fn] if fast(fn) else partial(call, fn)
        self._getattr_slot = ops[("getattr",)]
        ops[("call",)] = self.call
        ops[("meth",)] = self.meth
        ops[("call_ex",)] = self.call_ex
        ops[("super_attr",)] = self.super_attr

    def _binary_slot(self, fn, step, sym):
        if not self._fast(fn):
            call = self.call
            return lambda b, a: call(fn, a, b)
        if sym is None:
            return lambda b, a: step(a, b)
        return _generate(_BINOP_SRC, "binop", sym=sym)(semantics.NATIVE, step)

    def slot(self, key):
        return self.ops[key]

    def call_ex(self, f, args, kwargs):
        """``f(*args, **kwargs)`` with CPython's own checks on ``args`` and ``kwargs``."""
        if type(args) is not tuple:
            tp = type(args)
            if not (hasattr(tp, "__iter__") or (hasattr(tp, "__getitem__")
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
    def resolve(self, f, cache=True):
        """The callable that runs ``f`` inside the context, hooks excluded."""
        g = self._resolve(f, cache)
        if cache:
            if len(self.fcache) >= _CACHE_LIMIT:
                self.fcache.clear()
            self.fcache[f] = g
        return g

    def _resolve(self, f, hashable=True):
        spec = self.spec
        if hashable and spec.primitives:
            rules = spec.primitives.get(f)
            if rules:
                return self._primitive_dispatch(rules, self._target(f))
        if spec.wildcard is not None:
            wildcard, ctx = spec.wildcard, self.ctx
            return lambda *a, **k: wildcard(ctx, f, *a, **k)
        if spec.canrecurse:
            ctx, target, fall = self.ctx, self._target(f), self._fallback_for(f)

            def decide(*a, **k):
                return target(*a, **k) if ctx.canrecurse(f, *a, **k) else fall(*a, **k)

            return decide
        return self._target(f)

    def _primitive_dispatch(self, rules, target):
        ctx, key = self.ctx, self.ctx._tagkey
        checks = [(_matcher(argtypes, key), method) for argtypes, method in rules]

        def dispatch(*args, **kwargs):
            for matches, method in checks:
                if matches(args):
                    return method(ctx, *args, **kwargs)
            return target(*args, **kwargs)

        return dispatch

    def _target(self, f):
        """``recurse``: step into ``f``'s Python body, else the fallback."""
        tf = type(f)
        if tf is FunctionType:
            if lookaside.is_internal(f.__code__):
                return f
            return self._rewritten(f)
        if tf is MethodType:
            inner, obj = self._resolve(f.__func__), f.__self__
            return lambda *a, **k: inner(obj, *a, **k)
        step = self._builtin_step(f)
        if step is not None:
            return step
        if isinstance(f, type):
            construct = self.steps.instantiate(f)
            return construct if construct is not None else self._fallback_for(f)
        if tf is partial:
            call, fn, pargs, pkw = self.call, f.func, f.args, f.keywords
            return lambda *a, **k: call(fn, *pargs, *a, **{**pkw, **k})
        if tf is staticmethod:
            return self._resolve(f.__func__)
        dunder = semantics.lookup(tf, "__call__")
        if type(dunder) is FunctionType and not tf is Tagged:
            inner = self._resolve(dunder)
            return lambda *a, **k: inner(f, *a, **k)
        return self._fallback_for(f)

    def _builtin_step(self, f):
        try:
            step = self.ops.get(f) or self.table.get(f)
        except TypeError:
            return None
        if step is not None:
            return step
        if f in lookaside.CALLBACKS:
            return lookaside.wrap_callbacks(f, self.call)
        owner = getattr(f, "__self__", None)
        if owner is not None and not isinstance(owner, (ModuleType, type)):
            unbound = semantics.lookup(type(owner), f.__name__)
            if unbound in lookaside.CALLBACKS:
                step = lookaside.wrap_callbacks(unbound, self.call)
                return lambda *a, **k: step(owner, *a, **k)
        return None

    def _rewritten(self, f):
        code = f.__code__
        try:
            new = self.codes[code]
        except KeyError:
            new = self.codes[code] = self.route_code(code)
        if new is code:
            return f
        g = FunctionType(new, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
        g.__kwdefaults__ = f.__kwdefaults__
        g.__qualname__ = f.__qualname__
        g.__module__ = f.__module__
        return g

    def route_code(self, code):
        """``code`` rewritten and bound to this runtime (``code`` itself if it cannot be)."""
        template = _template(code, self.ctx.pass_, type(self.ctx))
        if template is None:
            return code
        slot = self.slot
        consts = tuple(slot(c.key) if type(c) is rewrite.Slot else c for c in template.co_consts)
        return template.replace(co_consts=consts)

    @staticmethod
    def _method_of(tp, name):
        """``(function, instances_have_dict)`` for ``obj.name(...)`` when CPython's
        method-call shortcut applies to instances of ``tp``, else ``(None, False)``."""
        if tp is Tagged or semantics.lookup(tp, "__getattribute__") is not object.__getattribute__:
            return None, False
        attr = semantics.lookup(tp, name)
        if type(attr) is FunctionType or type(attr) is MethodDescriptorType:
            return attr, tp.__dictoffset__ != 0
        return None, False

    # -- fallback ---------------------------------------------------------------------------
    def _fallback_for(self, f):
        if self.spec.fallback:
            ctx = self.ctx
            return lambda *a, **k: ctx.fallback(f, *a, **k)
        if not self.checking or f in _PASSTHROUGH:
            return f
        key = self.ctx._tagkey
        return lambda *a, **k: _plain_call(f, key, a, k)

    def fallback_call(self, f, args, kwargs):
        if self.spec.fallback:
            return self.ctx.fallback(f, *args, **kwargs)
        return _plain_call(f, self.ctx._tagkey, args, kwargs)

    def note_tagging(self):
        """A tag was made: fallbacks must start untagging (caches built before do not)."""
        if not _tagging_seen[0]:
            _tagging_seen[0] = True
            for rt in list(_runtimes):
                rt.checking = True
                rt.fcache.clear()
        if not self.checking:
            self.checking = True
            self.fcache.clear()


def _matcher(argtypes, key):
    """A predicate on positional arguments for one ``@primitive`` registration."""
    checks = []
    for t in argtypes:
        ts = t if isinstance(t, tuple) else (t,)
        want_tag = Tagged in ts
        plain = tuple(x for x in ts if x is not Tagged)
        checks.append((want_tag, plain))
    n = len(checks)

    def matches(args):
        if len(args) < n:
            return False
        for a, (want_tag, plain) in zip(args, checks):
            if type(a) is Tagged:
                if not (want_tag and a._tagkey is key):
                    return False
            elif not (plain and issubclass(type(a), plain)):
                return False
        return True

    return matches


def _strip(x, key):
    while type(x) is Tagged and x._tagkey is key:
        x = x._value
    return x


def _plain_call(f, key, args, kwargs):
    """Call ``f`` with this context's tags removed; a value still tagged by another
    context hands the call to that context (nested contexts)."""
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
                foreign = v._ctx
        elif type(a) is tuple and any(type(e) is Tagged for e in a):
            v = tuple(_strip(e, key) for e in a)
            if new is None:
                new = list(args)
            new[i] = v
    if kwargs:
        for k, a in kwargs.items():
            if type(a) is Tagged:
                v = _strip(a, key)
                if v is not a:
                    kwargs = dict(kwargs)
                    kwargs[k] = v
                if type(v) is Tagged:
                    foreign = v._ctx
    if new is not None:
        args = new
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


# structural builtins: tagged values pass through them untouched
_PASSTHROUGH = {list.append, list.extend, list.insert, list.pop, list.copy, list.__setitem__,
                dict.get, dict.setdefault, dict.pop, dict.update, dict.__setitem__, dict.values,
                dict.items, set.add, tuple, list, dict, set, frozenset, zip, enumerate, reversed,
                iter, next, len, id, repr, str, print, sorted, min, max, sum, getattr, setattr,
                delattr, object.__setattr__, object.__getattribute__, hasattr, format}


# ----------------------------------------------------------------------------- public API
def _runtime(ctx, fname):
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
        rt.fcache.clear()
        if len(rt.codes) > _CACHE_LIMIT:
            rt.codes.clear()


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


def overdub(ctx, f, /, *args, **kwargs):
    """Run ``f(*args, **kwargs)`` inside ``ctx``: prehook, then the matching
    primitive or ``recurse``, then posthook; return the result."""
    rt = _runtime(ctx, "overdub")
    _check_callable(f, "overdub")
    if rt.spec.empty and ctx.pass_ is None and not ctx.__dict__.get("_has_tags"):
        return f(*args, **kwargs)  # nothing to observe or change: plain Python
    rt.depth += 1
    try:
        return rt.call(f, *args, **kwargs)
    except BaseException as exc:
        raise exc.with_traceback(_strip_internal_frames(exc))
    finally:
        _leave(rt)


def recurse(ctx, f, /, *args, **kwargs):
    """Run ``f``'s body with everything inside it routed through ``ctx`` (no hooks
    for ``f`` itself); ``fallback`` where ``f`` has no Python body."""
    rt = _runtime(ctx, "recurse")
    _check_callable(f, "recurse")
    rt.depth += 1
    try:
        if rt.spec.canrecurse and not ctx.canrecurse(f, *args, **kwargs):
            return ctx.fallback(f, *args, **kwargs)
        return rt._target(f)(*args, **kwargs)
    finally:
        _leave(rt)


def fallback(ctx, f, /, *args, **kwargs):
    """Call ``f`` plainly as ``ctx`` would (its ``fallback`` method)."""
    _runtime(ctx, "fallback")
    return ctx.fallback(f, *args, **kwargs)


def canrecurse(ctx, f, /, *args, **kwargs):
    """Whether ``recurse(ctx, f, ...)`` would step into ``f``'s body."""
    _runtime(ctx, "canrecurse")
    return ctx.canrecurse(f, *args, **kwargs)


def default_canrecurse(ctx, f, args):
    """The default ``Context.canrecurse``: ``f`` has a Python body we can route."""
    tf = type(f)
    if tf is MethodType:
        return default_canrecurse(ctx, f.__func__, args)
    if tf is FunctionType:
        return not lookaside.is_internal(f.__code__)
    if tf is partial:
        return default_canrecurse(ctx, f.func, args)
    if isinstance(f, type):
        rt = _runtime(ctx, "canrecurse")
        return rt.steps.instantiate(f) is not None
    if tf is BuiltinFunctionType or tf is MethodDescriptorType:
        rt = _runtime(ctx, "canrecurse")
        return rt._builtin_step(f) is not None
    return type(semantics.lookup(tf, "__call__")) is FunctionType


def default_fallback(ctx, f, args, kwargs):
    """The default ``Context.fallback``: a plain call with ``ctx``'s tags removed."""
    return _plain_call(f, ctx._tagkey, args, kwargs)
