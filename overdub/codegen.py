"""Generated code: the dispatchers and operator slots that rewritten code calls.

The runtime (``runtime.py``) specialises them per context type: each is Python
source assembled from the pieces a context needs (a prehook call or not, the
conditions of its primitives, CPython's own operator for builtin operands),
compiled once per distinct source and instantiated per context with its names
as closure variables.  ``OP_SLOTS`` is the table of routed operators: one row
each, saying which ``operator`` function it stands for, how ``Steps`` steps into
it, the order its operands arrive in, and its native fast path.
"""
import hashlib
import linecache
import os
from weakref import ReferenceType

from ._compat import BUILTINS
from ._compat import BUILTINS as __builtins__  # noqa: F401 (never the user's patched builtins)
from .ops import BINARY, COMPARE, INPLACE, SYMBOLS, UNARY, UNARY_SYMBOLS
from .tagging import Tagged
from .tracebacks import drop_own_frames
from .lifetimes import Table
from ._native import LoadedAttribute, untrack_code

CALL_SRC = '''
def make(fcache, resolve, prehook, posthook, method_of, getattr_, ModuleType):
    def call(f, /, {params}):
        try:
            {pre}
            if isinstance(f, WeakRef):  # (never hashed: plaincall.hashable)
                g = resolve(f, False)
            else:
                try:
                    g = fcache[f]
                except KeyError:
                    g = resolve(f)
                except Exception:  # (unhashable, or a hash that fails)
                    g = resolve(f, False)
            {ret}
        except BaseException as exc:  # (plain Python's traceback: no frame of ours)
            drop_own_frames(exc)
            raise
        finally:  # (a callee's frame kept past the call has this one as f_back: it holds none
            f = g = {cleared} = None  # of the arguments, as plain Python's caller would not)

    def meth(obj, name, /, {params}):
        try:
            tp = type(obj)
            if tp is LoadedAttribute:  # (methload looked the attribute up)
                return call(obj.value, {args})
            if tp is ModuleType:
                # a module's attribute is no method: load it as ``mod.f`` is loaded (CPython
                # compiles ``math.sqrt(x)`` either way, depending on how math came in)
                return call(getattr_(obj, name), {args})
            else:
                f = class_function(obj, tp, name)
                if f is not None:
                    {pre_self}
                    try:
                        g = fcache[f]
                    except KeyError:
                        g = resolve(f, True, True)
                    {ret_self}
            return call(getattr_(obj, name), {args})
        except BaseException as exc:
            drop_own_frames(exc)
            raise
        finally:
            obj = f = g = {cleared} = None

    def class_function(obj, tp, name):
        # the class's function for obj.name(...) when CPython's method-call shortcut applies
        try:
            f, hasdict = fcache[tp, name]
        except KeyError:
            f, hasdict = fcache[tp, name] = method_of(tp, name)
        if f is not None and not (hasdict and name in obj.__dict__):
            return f
        return None

    def methload(obj, name, /):
        # the look-up before the arguments run, as CPython's: deferred to meth when it can
        # neither fail nor run code (the class's function, a name in a module's __dict__)
        try:
            tp = type(obj)
            if tp is ModuleType:
                if type(name) is str and name in obj.__dict__:
                    return obj
            elif class_function(obj, tp, name) is not None:
                return obj
            return LoadedAttribute(getattr_(obj, name))
        except BaseException as exc:
            drop_own_frames(exc)
            raise

    return call, meth, methload
'''


def call_source(arity, prehook, posthook):
    """Source of the call/method dispatchers for one arity (``None``: any) and spec."""
    if arity is None:
        params, args = "*args, **kwargs", "*args, **kwargs"
    else:
        params = args = ", ".join("a%d" % i for i in range(arity))
    sep = ", " if args else ""
    fmt = {"params": params, "args": args,
           "cleared": " = ".join(p.strip("* ") for p in params.split(",") if p.strip()) or "f"}
    fmt["pre"] = "prehook(f%s%s)" % (sep, args) if prehook else "pass"
    fmt["pre_self"] = "prehook(f, obj%s%s)" % (sep, args) if prehook else "pass"
    if posthook:
        fmt["ret"] = "r = g(%s)\n            posthook(r, f%s%s)\n            return r" % (args, sep, args)
        fmt["ret_self"] = ("r = g(obj%s%s)\n                    posthook(r, f, obj%s%s)\n"
                           "                    return r" % (sep, args, sep, args))
    else:
        fmt["ret"] = "return g(%s)" % args
        fmt["ret_self"] = "return g(obj%s%s)" % (sep, args)
    return CALL_SRC.format(**fmt).replace("(f, /, )", "(f, /)").replace("(obj, name, /, )", "(obj, name, /)")




def max_arity(rules):
    return max((len(r[0]) for r in rules), default=0)


def rule_conditions(rules, names):
    """Python source of one condition per ``@primitive`` rule over argument expressions
    (they read the tag identity as ``ctx._tagkey``, which ``renew_tags`` may change)."""
    memo = (id(rules), tuple(names))
    hit = _conditions.get(memo)
    if hit is not None and hit[0] is rules:
        return hit[1], dict(hit[2])
    conds, env = _rule_conditions(rules, names)
    _conditions[memo] = (rules, conds, env)
    return conds, dict(env)


_conditions = {}  # (id(rules), names) -> (rules, conditions, env)


def _rule_conditions(rules, names):
    env = {"Tagged": Tagged}
    conds = []
    for i, (argtypes, _) in enumerate(rules):
        parts = []
        for j, t in enumerate(argtypes):
            ts = t if isinstance(t, tuple) else (t,)
            x = names[j]
            alts = []
            if Tagged in ts:
                alts.append("(type(%s) is Tagged and %s._tagkey is ctx._tagkey)" % (x, x))
            plain = tuple(c for c in ts if c is not Tagged)
            if plain:
                env["T%d_%d" % (i, j)] = plain
                # a value's own type decides (never its ``__class__``, which isinstance
                # would read: a property or ``__getattribute__`` of the program's would run
                # where plain CPython runs none); another context's tagged value is seen as
                # the value it carries
                alts.append("(issubclass(type(%s), T%d_%d) if type(%s) is not Tagged else"
                            " (%s._tagkey is not ctx._tagkey and isinstance(%s, T%d_%d)))"
                            % (x, i, j, x, x, x, i, j))
            parts.append("(%s)" % " or ".join(alts) if alts else "False")
        conds.append(" and ".join(parts) if parts else "True")
    return conds, env


def _op_table():
    """slot key -> (operator function, Steps factory, factory args, stack params, call args,
    native fast path).  The fast path is ``(guard, statement)``: when ``guard`` holds, the
    statement computes ``r`` with CPython's own operator and nothing else can run."""
    import operator

    both = "type(a) in NATIVE and type(b) in NATIVE"
    table = {}
    for name, (fn, *_) in BINARY.items():
        sym = SYMBOLS.get(name)
        fast = (both, "r = a %s b" % sym) if sym else None
        table[("binop", name)] = (fn, "binary", (name,), "a, b", "a, b", fast)
    for name, (fn, _) in INPLACE.items():
        sym = SYMBOLS.get(name[len("INPLACE_"):])
        fast = (both, "r = a\n{i}    r %s= b" % sym) if sym else None  # (a stays the operand the hooks see)
        table[("binop", name)] = (fn, "inplace", (name,), "a, b", "a, b", fast)
    for name, (fn, *_) in COMPARE.items():
        table[("compare", name)] = (fn, "compare", (name,), "a, b", "a, b",
                                    (both, "r = a %s b" % SYMBOLS[name]))
    for name, (fn, _) in UNARY.items():
        sym = UNARY_SYMBOLS[name]
        table[("unary", name)] = (fn, "unary", (name,), "a", "a",
                                  ("type(a) in NATIVE", "r = %sa" % sym))
    plain_attrs = "type(o) in NATIVE or n not in ATTRS.get(type(o), ALL)"
    for key, fn, params, args, fast in (
            ("contains", operator.contains, "x, c", "c, x", ("type(c) in NATIVE", "r = x in c")),
            ("getitem", operator.getitem, "c, k", "c, k", ("type(c) in NATIVE", "r = c[k]")),
            ("setitem", operator.setitem, "c, k, v", "c, k, v",
             ("type(c) in NATIVE", "c[k] = v\n{i}    r = None")),
            ("delitem", operator.delitem, "c, k", "c, k", ("type(c) in NATIVE", "del c[k]\n{i}    r = None")),
            ("getattr", getattr, "o, n", "o, n", (plain_attrs, "r = getattr(o, n)")),
            ("setattr", setattr, "o, n, v", "o, n, v", (plain_attrs, "setattr(o, n, v)\n{i}    r = None")),
            ("delattr", delattr, "o, n", "o, n", None)):
        table[(key,)] = (fn, key, (), params, args, fast)
    return table


OP_SLOTS = _op_table()
OP_BY_FN = {entry[0]: entry for entry in OP_SLOTS.values()}
_compiled = Table()  # (source, closure names, label) -> the factory defining the function
#: distinct generated sources kept (and registered with ``linecache``) at once
_COMPILED_LIMIT = 1024


def compile_function(src, name, env, label):
    """Define the generated function ``name`` from ``src``; the names in ``env`` (and
    ``type``) become closure variables, which are faster to read than globals.

    The code is compiled under a file name of its own, ``<overdub LABEL HASH>`` in
    overdub's directory (the hash is the source's: the same source always gets the same
    name), and its source is registered with ``linecache``, so tracebacks
    (``OVERDUB_KEEP_FRAMES=1``), ``inspect.getsource`` and debuggers show the generated
    lines."""
    names = sorted(set(env) | {"type"})
    key = (src, tuple(names), label)
    factory = _compiled.get(key)
    if factory is None:
        body = "\n".join("    " + line for line in src.splitlines())
        source = "def _factory(%s):\n%s\n    return %s\n" % (", ".join(names), body, name)
        filename = generated_filename(label, source)
        if len(_compiled) >= _COMPILED_LIMIT:  # forget the oldest source (and its lines)
            _forget_source(_compiled.pop(next(iter(_compiled))))
        ns = {"__builtins__": BUILTINS}
        exec(compile(source, filename, "exec"), ns)
        factory = _compiled[key] = ns["_factory"]
        _untrack_all(factory.__code__)
        _register_source(filename, source)
    return factory(**{"type": type, **env})


def generated_filename(label, source):
    """``.../overdub/<overdub LABEL HASH>``: the file name generated code is compiled under.
    It lies in overdub's directory (as no file), so generated code counts as overdub's
    own code wherever code is told apart by where it lives (``lookaside.is_internal``)."""
    digest = hashlib.sha1(source.encode("utf-8")).hexdigest()[:10]
    return os.path.join(_GENERATED_DIR, "<overdub %s %s>" % (label, digest))


_GENERATED_DIR = os.path.dirname(os.path.abspath(__file__))


def _untrack_all(code):
    """``untrack_code`` for ``code`` and the code objects nested in it."""
    untrack_code(code)
    for const in code.co_consts:
        if type(const) is type(code):
            _untrack_all(const)


def _register_source(filename, source):
    # (an mtime of None marks the entry as not backed by a file: linecache.checkcache keeps it)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def _forget_source(factory):
    linecache.cache.pop(factory.__code__.co_filename, None)


def dispatchers_factory(arity, prehook, posthook):
    """The ``make`` function building ``(call, meth, methload)`` for one arity and hook set."""
    label = "call dispatcher %s" % ("any arity" if arity is None else "arity %d" % arity)
    return compile_function(call_source(arity, prehook, posthook), "make",
                            {"drop_own_frames": drop_own_frames, "LoadedAttribute": LoadedAttribute,
                             "WeakRef": ReferenceType, "isinstance": isinstance},
                            label)
