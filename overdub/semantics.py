"""How to step into the Python code behind operators, attributes and classes.

When ``a + b`` meets a class whose ``__add__`` is written in Python, ``recurse``
must run that ``__add__`` inside the context.  CPython would call it from C,
outside our reach, so this module re-states CPython's rules in Python and
routes each special method it calls back through the context:

* binary and in-place operators (``binary_op1`` and ``slot_nb_*``: reflected
  operand first when it is a proper subclass that overrides the method; no
  reflected call for equal types; ``NotImplemented`` chaining; the exact
  ``unsupported operand type(s)`` message);
* rich comparisons (``do_richcompare``; identity fallback for ``==``/``!=``);
* unary operators, ``in``, subscripts;
* attribute get/set/delete through properties, Python descriptors,
  ``__getattribute__``/``__getattr__``/``__setattr__``/``__delattr__``;
* instantiation (``type.__call__``: metaclass ``__call__``, ``__new__``, then
  ``__init__`` only for instances of the class, ``__init__`` must return None).

Whenever no Python-level method is involved, the builtin itself is called, so
C types keep CPython's behaviour and messages exactly.
"""
from ._compat import BUILTINS as __builtins__  # noqa: F401 (never the user's patched builtins)
import math
import operator
import functools
import warnings
import weakref
from types import FunctionType, GetSetDescriptorType, MethodDescriptorType, WrapperDescriptorType

from .ops import BINARY, COMPARE, INPLACE, NATIVE, SEQUENCES as _SEQUENCES, UNARY
from .tagging import Tagged
from .lifetimes import Table, forget_at_collection, is_transient_class
from .lookaside import user_frame
from .origins import CODE_ATTRIBUTES, shown_code
from .tracebacks import drop_own_frames
from ._native import entry_points as _native_module


_CALLABLE_SLOTS = (FunctionType, WrapperDescriptorType, MethodDescriptorType)


def is_generic_getattribute(attr):
    """Whether ``attr`` (a type's ``__getattribute__``) is CPython's generic lookup."""
    return attr in _GENERIC_GETATTRIBUTE


def lookup_slot(tp, name):
    """``lookup`` for a special method that CPython's slot would call: a name the class
    sets to something that cannot be called (``__iadd__ = None``) is still called by
    CPython, and fails; the stand-in returned fails the same way."""
    for klass in mro(tp):
        d = type_dict(klass)
        if name in d:
            value = d[name]
            if value is None or not (callable(value) or hasattr(type(value), "__get__")):
                return _not_callable(value)
            return value
    return None


def _not_callable(value):
    def method(*args):
        raise TypeError("'%s' object is not callable" % type(value).__name__)

    return method


def lookup(tp, name):
    """``_PyType_Lookup``: the attribute ``name`` in ``tp``'s MRO, without binding."""
    if _type_lookup is not None and type(name) is str:  # (the C layer: CPython's own, with its cache)
        return _type_lookup(tp, name)
    found = _STATIC_LOOKUPS.get((tp, name), _MISSING)
    if found is not _MISSING:
        return found
    if type(tp) is type:
        for klass in tp.__mro__:
            d = klass.__dict__
            if name in d:
                found = d[name]
                break
        else:
            found = None
        if not tp.__flags__ & 512 and len(_STATIC_LOOKUPS) < 8192:  # (512: Py_TPFLAGS_HEAPTYPE)
            _STATIC_LOOKUPS[tp, name] = found  # a C type's attributes never change
        return found
    for klass in mro(tp):  # (a metaclass may redefine __mro__ or __dict__ for its classes)
        d = type_dict(klass)
        if name in d:
            return d[name]
    return None


_STATIC_LOOKUPS = Table()  # (C type, name) -> what lookup found
_type_lookup = getattr(_native_module, "type_lookup", None)
_MISSING = object()
_TYPE_ATTRS = vars(type)
_type_mro = _TYPE_ATTRS["__mro__"].__get__
#: ``klass.__dict__`` as CPython sees it, whatever the metaclass says ``__dict__`` is
type_dict = _TYPE_ATTRS["__dict__"].__get__
type_flags = _TYPE_ATTRS["__flags__"].__get__
_real_subclasscheck = _TYPE_ATTRS["__subclasscheck__"]


def mro(tp):
    """``tp.__mro__`` as CPython sees it (a metaclass property cannot redefine it)."""
    return tp.__mro__ if type(tp) is type else _type_mro(tp)


def is_subtype(a, b):
    """``PyType_IsSubtype``: ``issubclass(a, b)`` without ``__subclasscheck__`` (ABCs'
    registered virtual subclasses do not count for CPython's operator rules)."""
    return a is b or _real_subclasscheck(b, a)


def in_instance_dict(obj, tp, name):
    """Whether ``name`` is in ``obj``'s own ``__dict__`` (False when it has none);
    None when ``tp`` redefines ``__dict__`` and only CPython can tell."""
    descr = lookup(tp, "__dict__")
    if descr is None:
        return False
    if type(descr) is not GetSetDescriptorType:
        return None
    d = descr.__get__(obj, tp)
    return type(d) is dict and name in d


_GENERIC_GETATTRIBUTE = {lookup(t, "__getattribute__") for t in (
    object, list, dict, tuple, set, frozenset, str, bytes, bytearray, int, float, complex, bool,
    range, slice, memoryview, BaseException)}


class _AllNames:
    """Contains every name: the attribute set of types whose every access is stepped into."""

    def __contains__(self, name):
        return True


ALL_NAMES = _AllNames()


def is_py(attr):
    return type(attr) is FunctionType


def innermost(x):
    """The plain value under every tag."""
    while type(x) is Tagged:
        x = x._value
    return x


def add_numpy_types():
    """Register NumPy's C types as native once NumPy has been imported."""
    import sys

    np = sys.modules.get("numpy")
    if np is not None and np.ndarray not in NATIVE:
        _GENERIC_GETATTRIBUTE.add(lookup(np.ndarray, "__getattribute__"))
        _GENERIC_GETATTRIBUTE.add(lookup(np.float64, "__getattribute__"))
        NATIVE.update({np.ndarray, np.float64, np.float32, np.int64, np.int32, np.bool_,
                       np.complex128, np.complex64, np.float16, np.int8, np.int16, np.uint8,
                       np.uint16, np.uint32, np.uint64})


_HEAPTYPE = 1 << 9
#: the attributes of a function that decide what calling it runs (see Runtime._rewritten)
FUNCTION_BODY = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
#: the names of a function, which its routed twin shows too (generators take their names)
FUNCTION_NAMES = frozenset({"__name__", "__qualname__"})
#: C type -> its _plain_attrs (kept across runs: C types do not change); the code a frame or
#: a generator runs is read through the step, which shows a routed copy's origin
_STATIC_ATTRS = {tp: frozenset({name}) for tp, name in CODE_ATTRIBUTES.items()}
#: a class's version tag (the C layer's; None in pure Python): it changes whenever the class
#: or a base changes, so an answer of _plain_attrs kept with the tags it was read under holds
#: for as long as they do
_type_version = getattr(_native_module, "type_version", None)
#: class -> (its tag, its _plain_attrs, ((weak reference to a class of its attributes, that
#: class's tag), ...)), kept across runs (weak keys: no class is kept alive by it)
_KEPT_ATTRS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_STATIC_DESCRIPTORS = Table()  # C type -> whether its instances are Python-level descriptors (as above)


def _python_descriptor(atp):
    """Whether a class attribute of type ``atp`` runs Python code when accessed on an
    instance (a property, or a descriptor class with a Python ``__get__``...); kept for
    C types, whose answer cannot change (a class's many plain attributes -- strings,
    slot wrappers, method descriptors -- are then one dictionary read each)."""
    found = _STATIC_DESCRIPTORS.get(atp)
    if found is not None:
        return found
    found = atp is property or any(is_py(lookup(atp, m)) for m in ("__get__", "__set__", "__delete__"))
    if not type_flags(atp) & _HEAPTYPE and len(_STATIC_DESCRIPTORS) < 4096:
        _STATIC_DESCRIPTORS[atp] = found
    return found


_STEPS_INTO = Table()  # (step, its arguments, operand C types...) -> whether it runs Python
_ATTRIBUTE_STEPS = frozenset({"getattr", "setattr", "delattr"})
_ARITY = {"unary": 1, "setitem": 3, "setattr": 3, "getattr": (2, 3)}
_DUNDERS = {"contains": "__contains__", "getitem": "__getitem__", "setitem": "__setitem__",
            "delitem": "__delitem__"}


#: builtins that call a special method of their first argument's type -> its name: a
#: Python-level one runs routed (``abs(v)`` runs ``type(v).__abs__``'s body in the context)
PROTOCOLS = {abs: "__abs__", operator.abs: "__abs__", round: "__round__", math.floor: "__floor__",
             math.ceil: "__ceil__", math.trunc: "__trunc__", next: "__next__", operator.index: "__index__",
             float: "__float__", complex: "__complex__"}


def protocol_step(fn, name, target, call):
    """What runs builtin ``fn``: ``type(x).name(x, ...)`` through the dispatcher ``call``
    when it is a Python function, as CPython would call it; ``target`` (the plain call)
    otherwise."""
    def step(*args, **kwargs):
        try:
            if args and not kwargs:
                c = args[0]
                tc = type(c)
                if tc not in NATIVE and tc is not Tagged and not (fn is operator.index and isinstance(c, int)):
                    m = lookup(tc, name)  # (operator.index takes an int subclass as it is)
                    if is_py(m):
                        rest = args[1:]
                        if fn is next and rest:  # next(it, default)
                            try:
                                return call(m, c)
                            except StopIteration:
                                return rest[0]
                        if fn is round and rest == (None,):  # round(x, None) is round(x)
                            rest = ()
                        if fn is operator.index:
                            return _index_result(call(m, c), tc)
                        if fn is float:
                            if rest:  # (float takes one argument: CPython's own error)
                                return target(*args)
                            return _float_result(call(m, c), tc, call)
                        if fn is complex:
                            if rest:  # (complex(a, b): the plain call)
                                return target(*args)
                            return _complex_result(call(m, c), tc, call)
                        return call(m, c, *rest)
                    if fn is complex and m is None and len(args) == 1:  # complex(q) of a Python
                        m = lookup(tc, "__float__")  # __float__ (no __complex__): CPython reads that
                        if is_py(m):
                            return call(complex, _float_result(call(m, c), tc, call))
        except BaseException as exc:
            drop_own_frames(exc)
            raise
        return target(*args, **kwargs)

    return step


def _deprecated_at_caller(message):
    """``warnings.warn(message, DeprecationWarning)`` as CPython's C code issues it: at the
    line of the routed code that called the builtin (not at a frame of overdub's)."""
    frame = user_frame()
    if frame is None:
        warnings.warn(message, DeprecationWarning, stacklevel=3)
        return
    g = frame.f_globals
    warnings.warn_explicit(message, DeprecationWarning, frame.f_code.co_filename, frame.f_lineno,
                           g.get("__name__"), g.setdefault("__warningregistry__", {}), g)


def _index_result(r, tc):
    """CPython's check on what ``__index__`` returned."""
    if type(r) is int:
        return r
    if isinstance(r, int):
        _deprecated_at_caller("__index__ returned non-int (type %s).  The ability to return an instance of "
                              "a strict subclass of int is deprecated, and may be removed in a future version "
                              "of Python." % type(r).__name__)
        return r
    raise TypeError("__index__ returned non-int (type %s)" % type(r).__name__)


def _number_result(kind, r, tc, call):
    """CPython's check on what ``__float__`` (``kind`` float) or ``__complex__`` (complex)
    returned; a tagged number is handed to the context's ``kind`` (capstan's keeps its
    derivative)."""
    if type(r) is kind:
        return r
    v = r
    while type(v) is Tagged:
        v = v._value
    name = kind.__name__
    owner = "%s." % tc.__name__ if kind is float else ""  # (CPython's two messages differ so)
    if not isinstance(v, kind):
        raise TypeError("%s__%s__ returned non-%s (type %s)" % (owner, name, name, type(v).__name__))
    if type(v) is not kind:
        _deprecated_at_caller("%s__%s__ returned non-%s (type %s).  The ability to return an instance "
                              "of a strict subclass of %s is deprecated, and may be removed in a future "
                              "version of Python." % (owner, name, name, type(v).__name__, name))
    return call(kind, r) if type(r) is Tagged else kind(r)


def _float_result(r, tc, call):
    return _number_result(float, r, tc, call)


def _complex_result(r, tc, call):
    return _number_result(complex, r, tc, call)


_CO_VARARGS = 0x04  # (inspect.CO_VARARGS: the function takes *args)


def called_as(fn, step):
    """``step`` as the callee of an explicit call of the builtin ``fn`` (``getattr(o, n,
    d)``, ``operator.add(a, b)``): arguments ``step`` cannot take -- too few, too many,
    keywords -- go to ``fn`` itself, which raises CPython's own TypeError for them
    (``getattr expected at least 2 arguments, got 0``), not one naming ``step``."""
    if type(step) is not FunctionType:
        return step
    code = step.__code__
    least = code.co_argcount - len(step.__defaults__ or ())
    most = None if code.co_flags & _CO_VARARGS else code.co_argcount

    def called(*args, **kwargs):
        try:
            if kwargs or len(args) < least or (most is not None and len(args) > most):
                return fn(*args, **kwargs)
            return step(*args)
        except BaseException as exc:
            drop_own_frames(exc)
            raise

    called.__name__ = called.__qualname__ = getattr(fn, "__name__", "called")
    return called


class Steps:
    """The ``recurse`` implementations of operators, attributes and classes for
    one runtime.  ``call(f, *args)`` is the runtime's hooked dispatcher;
    ``fallback(f, args, kwargs)`` the plain call with tags stripped."""

    def __init__(self, call, fallback):
        self.call = call
        self.fallback = fallback
        self.attr_info = Table()  # type -> names of Python-level descriptors (see _plain_attrs)
        self.function_changed = lambda: None  # the runtime's: forget resolved callees
        self.function_renamed = lambda f: None  # the runtime's: rename f's routed twins

    def apply(self, method, /, *args, **kwargs):
        if type(method) is FunctionType:
            return self.call(method, *args, **kwargs)
        return method(*args, **kwargs)

    # -- binary and in-place operators ---------------------------------------------
    def binary(self, opname):
        opfn, name, rname, sym = BINARY[opname]
        slow = self._binary_slow

        def step(a, b):
            try:
                if type(a) in NATIVE and type(b) in NATIVE:
                    return opfn(a, b)
                return slow(a, b, opfn, name, rname, sym)
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return step

    def _binary_slow(self, a, b, opfn, name, rname, sym):
        ta, tb = type(a), type(b)
        if ta is Tagged or tb is Tagged:
            return self.fallback(opfn, (a, b), {})
        ma = lookup_slot(ta, name)
        mb = lookup_slot(tb, rname) if tb is not ta else None
        if not (is_py(ma) or is_py(mb)) or (not is_py(ma) and issubclass(ta, _SEQUENCES)):
            return opfn(a, b)
        return self.binary_rules(a, b, ta, tb, ma, mb, rname, sym)

    def _first_answer(self, a, b, ma, mb, reflected_first):
        """CPython's order for a pair of special methods: the reflected one first when
        ``reflected_first``, then ``a``'s, then ``b``'s reflected one (if not tried yet);
        ``NotImplemented`` when every method declines."""
        NI = NotImplemented
        if reflected_first:
            r = self.apply(mb, b, a)
            if r is not NI:
                return r
        if ma is not None:
            r = self.apply(ma, a, b)
            if r is not NI:
                return r
        if mb is not None and not reflected_first:
            return self.apply(mb, b, a)
        return NI

    def binary_rules(self, a, b, ta, tb, ma, mb, rname, sym):
        if mb is not None and not isinstance(mb, _CALLABLE_SLOTS):
            mb = None
        if ma is not None and not isinstance(ma, _CALLABLE_SLOTS):
            ma = None
        # a proper subclass that overrides the reflected method goes first
        reflected_first = (mb is not None and ma is not None and is_subtype(tb, ta)
                           and mb is not lookup(ta, rname))
        r = self._first_answer(a, b, ma, mb, reflected_first)
        if r is NotImplemented:
            raise TypeError("unsupported operand type(s) for %s: '%s' and '%s'"
                            % (sym, ta.__name__, tb.__name__))
        return r

    def inplace(self, opname):
        opfn, iname = INPLACE[opname]
        _, name, rname, sym = BINARY[opname[len("INPLACE_"):]]
        isym = sym + "=" if sym != "** or pow()" else "**="

        def step(a, b):
            try:
                ta, tb = type(a), type(b)
                if ta in NATIVE and tb in NATIVE:
                    return opfn(a, b)
                if ta is Tagged or tb is Tagged:
                    return self.fallback(opfn, (a, b), {})
                mi = lookup_slot(ta, iname)
                ma = lookup_slot(ta, name)
                mb = lookup_slot(tb, rname) if tb is not ta else None
                if not (is_py(mi) or is_py(ma) or is_py(mb)) or (
                        not is_py(mi) and not is_py(ma) and issubclass(ta, _SEQUENCES)):
                    return opfn(a, b)
                if mi is not None and isinstance(mi, _CALLABLE_SLOTS):
                    r = self.apply(mi, a, b)
                    if r is not NotImplemented:
                        return r
                return self.binary_rules(a, b, ta, tb, ma, mb, rname, isym)
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return step

    # -- comparisons -------------------------------------------------------------------
    def compare(self, opname):
        opfn, name, swapped, sym = COMPARE[opname]

        def step(a, b):
            try:
                ta, tb = type(a), type(b)
                if ta in NATIVE and tb in NATIVE:
                    return opfn(a, b)
                if ta is Tagged or tb is Tagged:
                    return self.fallback(opfn, (a, b), {})
                ma = lookup_slot(ta, name)  # (``__eq__ = None``: called, and fails, as CPython's)
                mb = lookup_slot(tb, swapped)
                if not (is_py(ma) or is_py(mb)):
                    return opfn(a, b)
                # a subclass goes first (rich comparison does not ask whether it overrides)
                reflected_first = tb is not ta and is_subtype(tb, ta) and mb is not None
                r = self._first_answer(a, b, ma, mb, reflected_first)
                if r is not NotImplemented:
                    return r
                if opname == "EQ":
                    return a is b
                if opname == "NE":
                    return a is not b
                raise TypeError("'%s' not supported between instances of '%s' and '%s'"
                                % (sym, ta.__name__, tb.__name__))
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return step

    # -- unary, containment, subscripts ----------------------------------------------------
    def unary(self, opname):
        opfn, name = UNARY[opname]

        def step(a):
            try:
                ta = type(a)
                if ta in NATIVE:
                    return opfn(a)
                if ta is Tagged:
                    return self.fallback(opfn, (a,), {})
                m = lookup(ta, name)
                return self.call(m, a) if is_py(m) else opfn(a)
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return step

    def _dunder_step(self, opfn, name, convert=None):
        call, fallback = self.call, self.fallback

        def step(c, *args):
            try:
                tc = type(c)
                if tc in NATIVE:
                    return opfn(c, *args)
                if tc is Tagged:
                    return fallback(opfn, (c,) + args, {})
                m = lookup(tc, name)
                if is_py(m):
                    r = call(m, c, *args)
                    return convert(r) if convert is not None else r
                return opfn(c, *args)
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return step

    def contains(self):
        return self._dunder_step(operator.contains, "__contains__", bool)

    def getitem(self):
        return self._dunder_step(operator.getitem, "__getitem__")

    def setitem(self):
        return self._dunder_step(operator.setitem, "__setitem__")

    def delitem(self):
        return self._dunder_step(operator.delitem, "__delitem__")

    # -- attributes ----------------------------------------------------------------------
    def _plain_attrs(self, tp):
        """The attribute names whose access on instances of ``tp`` may run Python
        code (descriptors); ``ALL_NAMES`` when any access may (``__getattr__``...)."""
        try:
            return self.attr_info[tp]
        except KeyError:
            pass
        static = not type_flags(tp) & _HEAPTYPE  # a C type: its attributes never change
        if static and tp in _STATIC_ATTRS:
            info = self.attr_info[tp] = _STATIC_ATTRS[tp]
            return info
        kept = _KEPT_ATTRS.get(tp) if not static and _type_version is not None else None
        if kept is not None and kept[0] == _type_version(tp) and all(
                ref() is not None and _type_version(ref()) == tag for ref, tag in kept[2]):
            info = self.attr_info[tp] = kept[1]  # (the classes read are as they were then)
            if is_transient_class(tp):
                forget_at_collection(self.attr_info, tp)
            return info
        info = ALL_NAMES
        heap = set()  # the classes of attributes whose answer may change (Python classes)
        if (not is_py(lookup(tp, "__getattribute__")) and not is_py(lookup(tp, "__getattr__"))
                and not is_py(lookup(tp, "__setattr__")) and not is_py(lookup(tp, "__delattr__"))):
            info = set()
            for klass in mro(tp):
                for name, attr in type_dict(klass).items():
                    atp = type(attr)
                    if atp is FunctionType or atp in NATIVE:
                        continue
                    if _python_descriptor(atp):
                        info.add(name)
                    if type_flags(atp) & _HEAPTYPE:
                        heap.add(atp)
            info = frozenset(info)
        if tp is FunctionType:  # replacing these changes what calling the function runs
            info = FUNCTION_BODY | FUNCTION_NAMES
        self.attr_info[tp] = info
        if static:
            _STATIC_ATTRS[tp] = info
        else:
            if is_transient_class(tp):  # (the entry must not keep a local class alive)
                forget_at_collection(self.attr_info, tp)
            if _type_version is not None:
                self._keep_attrs(tp, info, heap)
        return info

    @staticmethod
    def _keep_attrs(tp, info, heap):
        """Keep ``tp``'s answer across runs with the version tags it was read under (none
        kept when a class has no tag, or cannot be referenced weakly)."""
        tags = []
        try:
            for atp in heap:
                tag = _type_version(atp)
                if not tag:
                    return
                tags.append((weakref.ref(atp), tag))
            tag = _type_version(tp)
            if tag:
                _KEPT_ATTRS[tp] = (tag, info, tuple(tags))
        except TypeError:
            pass

    def getattr(self):
        plain_attrs = self._plain_attrs

        def step(obj, name, *default):
            try:
                tp = type(obj)
                if tp in NATIVE or tp is Tagged or type(name) is not str:
                    return getattr(obj, name, *default)
                if name not in plain_attrs(tp):
                    return getattr(obj, name, *default)
                try:
                    return self._getattr(obj, tp, name)
                except AttributeError:
                    if default:
                        return default[0]
                    raise
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return step

    def _getattr(self, obj, tp, name):
        if CODE_ATTRIBUTES.get(tp) == name:
            return shown_code(getattr(obj, name))
        ga = lookup(tp, "__getattribute__")
        gf = lookup(tp, "__getattr__")
        if not is_py(gf):
            gf = None
        try:
            if is_py(ga):
                return self.call(ga, obj, name)
            attr = lookup(tp, name)
            if attr is not None and is_generic_getattribute(ga):
                atp = type(attr)
                if atp is property:
                    if is_py(attr.fget):
                        return self.call(attr.fget, obj)
                elif atp is not FunctionType and atp not in NATIVE:
                    get = lookup(atp, "__get__")
                    if is_py(get) and (lookup(atp, "__set__") is not None
                                       or lookup(atp, "__delete__") is not None
                                       or in_instance_dict(obj, tp, name) is False):
                        return self.call(get, attr, obj, tp)
            if gf is None:
                return getattr(obj, name)
            return ga(obj, name)
        except AttributeError:
            if gf is None:
                raise
            return self.call(gf, obj, name)

    def setattr(self):
        plain_attrs = self._plain_attrs

        def step(obj, name, value):
            try:
                tp = type(obj)
                if tp is Tagged:  # the attribute belongs to the object under the tags
                    obj = innermost(obj)
                    tp = type(obj)
                if tp in NATIVE:
                    return setattr(obj, name, value)
                if tp is FunctionType:
                    setattr(obj, name, value)
                    if name in FUNCTION_BODY:
                        self.function_changed()
                    elif name in FUNCTION_NAMES:
                        self.function_renamed(obj)
                    return None
                if name not in plain_attrs(tp):
                    return setattr(obj, name, value)
                sa = lookup(tp, "__setattr__")
                if is_py(sa):
                    return self.call(sa, obj, name, value)
                attr = lookup(tp, name) if type(name) is str else None
                if attr is not None:
                    atp = type(attr)
                    if atp is property and is_py(attr.fset):
                        return self.call(attr.fset, obj, value)
                    if atp is not property and atp is not FunctionType:
                        s = lookup(atp, "__set__")
                        if is_py(s):
                            return self.call(s, attr, obj, value)
                return setattr(obj, name, value)
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return step

    def delattr(self):
        def step(obj, name):
            try:
                tp = type(obj)
                if tp is Tagged:
                    obj = innermost(obj)
                    tp = type(obj)
                if tp in NATIVE:
                    return delattr(obj, name)
                if tp is FunctionType:
                    delattr(obj, name)
                    if name in FUNCTION_BODY:
                        self.function_changed()
                    return None
                da = lookup(tp, "__delattr__")
                if is_py(da):
                    return self.call(da, obj, name)
                attr = lookup(tp, name) if type(name) is str else None
                if attr is not None:
                    atp = type(attr)
                    if atp is property and is_py(attr.fdel):
                        return self.call(attr.fdel, obj)
                    if atp is not property and atp is not FunctionType:
                        d = lookup(atp, "__delete__")
                        if is_py(d):
                            return self.call(d, attr, obj)
                return delattr(obj, name)
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return step

    # -- whether stepping in runs Python code ------------------------------------------------
    def steps_into(self, kind, names, args):
        """Whether the ``recurse`` step ``kind`` (a ``Steps`` method name, with its
        arguments ``names``) would run a Python special method for the operands
        ``args`` -- the question ``canrecurse`` asks of an operator function."""
        if kind in _ATTRIBUTE_STEPS:
            return self._steps_into(kind, names, args)
        key = (kind, names, *[type(a) for a in args])
        found = _STEPS_INTO.get(key)
        if found is None:
            found = self._steps_into(kind, names, args)
            if all(not type_flags(t) & _HEAPTYPE for t in key[2:]) and len(_STEPS_INTO) < 4096:
                _STEPS_INTO[key] = found  # (C types' special methods never change)
        return found

    def _steps_into(self, kind, names, args):
        arity = _ARITY.get(kind, 2)
        if len(args) not in (arity if type(arity) is tuple else (arity,)):
            return False  # the builtin itself reports the wrong call
        types = [type(a) for a in args]
        if kind in ("getattr", "setattr", "delattr"):
            obj = innermost(args[0])  # (attribute steps look through tags)
            if type(args[1]) is not str or type(obj) in NATIVE or type(obj) is FunctionType:
                return False
            return args[1] in self._plain_attrs(type(obj))
        if Tagged in types[:2]:
            return False  # stepped past: the plain operator on untagged values
        if kind == "binary" or kind == "inplace":
            name = names[0] if kind == "binary" else names[0][len("INPLACE_"):]
            _, method, reflected, _ = BINARY[name]
            ta, tb = types
            ma, mb = lookup(ta, method), lookup(tb, reflected) if tb is not ta else None
            if kind == "inplace" and is_py(lookup(ta, INPLACE[names[0]][1])):
                return True
            return (is_py(ma) or is_py(mb)) and (is_py(ma) or not issubclass(ta, _SEQUENCES))
        if kind == "compare":
            _, method, swapped, _ = COMPARE[names[0]]
            return is_py(lookup(types[0], method)) or is_py(lookup(types[1], swapped))
        if kind == "unary":
            return is_py(lookup(types[0], UNARY[names[0]][1]))
        return is_py(lookup(types[0], _DUNDERS[kind]))

    # -- classes -------------------------------------------------------------------------
    def instantiate(self, cls):
        """A callable running ``cls(*args, **kwargs)`` with Python ``__new__``/``__init__``
        stepped into, or ``None`` when CPython's own ``type.__call__`` does the same."""
        meta_call = lookup(type(cls), "__call__")
        if is_py(meta_call):  # (a C partial: the metaclass's __call__ sees the program's frame)
            return functools.partial(self.call, meta_call, cls)
        if meta_call is not type.__call__:
            return None
        new = lookup(cls, "__new__")
        new_fn = new.__func__ if isinstance(new, staticmethod) else new
        init = lookup(cls, "__init__")
        if not (is_py(new_fn) or is_py(init)):
            return None
        if _native_module is not None:  # (the same steps in C: no frame of overdub's before __init__)
            return _native_module.Constructor(cls, new_fn, self.call)
        apply = self.apply

        def construct(*args, **kwargs):
            try:
                obj = apply(new_fn, cls, *args, **kwargs)
                tobj = type(obj)
                if not is_subtype(tobj, cls):
                    return obj
                init_fn = lookup(tobj, "__init__")
                r = apply(init_fn, obj, *args, **kwargs)
                if r is not None:
                    raise TypeError("__init__() should return None, not '%s'" % type(r).__name__)
                return obj
            except BaseException as exc:
                drop_own_frames(exc)
                raise

        return construct
