"""A transparency corpus: small functions, one construct each.

Every case is run plainly and under several contexts by test_transparency_corpus.py;
results, exception types and messages must be identical.  Register a case with
``@case(*args, **kwargs)``.
"""
import abc
import asyncio
import collections
import contextlib
import copy
import dataclasses
import enum
import functools
import itertools
import math
import operator
import re
import sys
import typing
from decimal import Decimal
from fractions import Fraction

CASES = []


def case(*args, **kwargs):
    def register(f):
        CASES.append((f.__name__, f, args, kwargs))
        return f
    return register


# ----------------------------------------------------------------------------- helpers
def kw(a, b=2, *args, c, d=4, **rest):
    return (a, b, args, c, d, sorted(rest.items()))


def posonly(a, b, /, c=3):
    return (a, b, c)


class Base:
    cls_attr = "base"

    def __init__(self, x=1):
        self.x = x

    def m(self, y):
        return ("Base.m", self.x, y)

    @classmethod
    def make(cls, x):
        return cls(x)

    @staticmethod
    def st(a):
        return a * 2

    @property
    def doubled(self):
        return self.x * 2

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.x)


class Child(Base):
    def m(self, y):
        return ("Child.m", super().m(y))

    @classmethod
    def make(cls, x):
        return ("Child.make", super().make(x))

    def two_arg_super(self):
        return super(Child, self).m(0)


class Vec:
    def __init__(self, *xs):
        self.xs = list(xs)

    def __add__(self, other):
        if isinstance(other, Vec):
            return Vec(*[a + b for a, b in zip(self.xs, other.xs)])
        if isinstance(other, (int, float)):
            return Vec(*[a + other for a in self.xs])
        return NotImplemented

    __radd__ = __add__

    def __mul__(self, k):
        return Vec(*[a * k for a in self.xs]) if isinstance(k, (int, float)) else NotImplemented

    def __rmul__(self, k):
        return self * k

    def __iadd__(self, other):
        self.xs = [a + other for a in self.xs]
        return self

    def __neg__(self):
        return Vec(*[-a for a in self.xs])

    def __eq__(self, other):
        return isinstance(other, Vec) and self.xs == other.xs

    def __lt__(self, other):
        return sum(self.xs) < sum(other.xs)

    def __len__(self):
        return len(self.xs)

    def __getitem__(self, i):
        return self.xs[i]

    def __setitem__(self, i, v):
        self.xs[i] = v

    def __delitem__(self, i):
        del self.xs[i]

    def __contains__(self, v):
        return v in self.xs

    def __iter__(self):
        return iter(self.xs)

    def __bool__(self):
        return any(self.xs)

    def __repr__(self):
        return "Vec%r" % (tuple(self.xs),)

    __hash__ = None


class SubVec(Vec):
    def __radd__(self, other):
        return ("SubVec.__radd__", other)


class Only:
    """Defines nothing: operators on it raise CPython's messages."""


class Weird:
    def __eq__(self, other):
        return "eq-result"

    def __lt__(self, other):
        return [1]

    def __bool__(self):
        return 1  # invalid: must return bool

    def __len__(self):
        return 3


class Desc:
    def __get__(self, obj, owner):
        return ("desc-get", obj is None)

    def __set__(self, obj, value):
        obj.__dict__["_desc"] = value * 10


class WithDesc:
    d = Desc()

    def __getattr__(self, name):
        return ("fallback", name)


class PropRaises:
    @property
    def p(self):
        raise AttributeError("inner")

    def __getattr__(self, name):
        return ("getattr-fallback", name)


class Slotted:
    __slots__ = ("a",)


class Callable:
    def __init__(self, k):
        self.k = k

    def __call__(self, x, *, scale=1):
        return (self.k + x) * scale


class InitReturns:
    def __init__(self):
        return 5


class NoArgs:
    pass


class Meta(type):
    def __call__(cls, *args, **kwargs):
        return ("Meta.__call__", cls.__name__, args)


class UsesMeta(metaclass=Meta):
    pass


class NewOther:
    def __new__(cls, flag):
        return 42 if flag else super().__new__(cls)

    def __init__(self, flag):
        self.init_ran = True


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0
    tags: list = dataclasses.field(default_factory=list)

    def norm(self):
        return math.hypot(self.x, self.y)


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: int


Pair = collections.namedtuple("Pair", "left right")


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self):
        ...


class Square(Shape):
    def __init__(self, s):
        self.s = s

    def area(self):
        return self.s ** 2


class Managed:
    def __init__(self, log, suppress=False):
        self.log, self.suppress = log, suppress

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, et, ev, tb):
        self.log.append(("exit", et.__name__ if et else None))
        return self.suppress


def deco(f):
    @functools.wraps(f)
    def wrapper(*a, **k):
        return ("wrapped", f(*a, **k))
    return wrapper


def counter_gen(n):
    total = 0
    for i in range(n):
        got = yield i
        if got:
            total += got
    return total


COUNTER = {"calls": 0}
GLOBAL_VALUE = 10


# ----------------------------------------------------------------------------- calls
@case(1, 2)
def call_positional(a, b):
    return kw(a, b, 3, c=4)


@case()
def call_keywords():
    return kw(1, c=2, e=5, b=7)


@case()
def call_star_args():
    args, kwargs = (1, 2, 3), {"c": 4, "z": 0}
    return kw(*args, **kwargs)


@case()
def call_mixed_star():
    return kw(0, *[1, 2], *(3,), c=1, **{"d": 2}, **{"e": 3})


@case()
def call_duplicate_kwargs():
    return kw(1, **{"c": 1}, **{"c": 2})


@case()
def call_star_not_iterable():
    return kw(*5)


@case()
def call_kwargs_not_mapping():
    return kw(1, **[1])


@case()
def call_missing_argument():
    return kw(1)


@case()
def call_too_many_positional():
    return posonly(1, 2, 3, 4)


@case()
def call_posonly_as_keyword():
    return posonly(1, b=2)


@case()
def call_unexpected_keyword():
    return posonly(1, 2, zz=3)


@case()
def call_non_callable():
    x = 5
    return x()


@case()
def call_none():
    f = None
    return f(1)


@case()
def call_lambda_immediately():
    return (lambda a, b=3: a * b)(4)


@case(0)
def call_method_conditional_argument(a):
    # 3.12+ duplicate a returned call's tail into both branches of the conditional
    return Base(a).m(a if a else -1)


@case(0)
def call_conditional_argument_then_attribute(a):
    return Vec(a, 1).__add__(a if a else 2).xs


@case(0)
def call_function_conditional_argument(a):
    return kw(a if a else 2, c=0 if a else 1)


@case(3)
def call_conditional_argument_taken(a):
    return Base(a).m(a if a else -1), max(a if a > 2 else 0, 1), Vec(a).xs


@case()
def call_nested_calls():
    return max(min(3, 9), abs(-7), len("ab"))


@case()
def call_builtin_kwargs():
    return sorted([3, 1, 2], reverse=True), int("ff", base=16), round(2.5678, ndigits=2)


@case()
def call_keyword_named_f():
    def g(f=1, ctx=2, args=3, kwargs=4, output=5, self=6):
        return f + ctx + args + kwargs + output + self
    return g(f=10, ctx=20, args=30, kwargs=40, output=50, self=60)


@case()
def call_method_bound():
    b = Base(3)
    m = b.m
    return m(4), Base.m(b, 5)


@case()
def call_classmethod_staticmethod():
    return Base.make(2).x, Base.st(4), Base(1).st(5), repr(Child.make(7))


@case()
def call_super_zero_arg():
    return Child(2).m(3)


@case()
def call_super_two_arg():
    return Child(5).two_arg_super()


@case()
def call_callable_object():
    c = Callable(3)
    return c(4), c(1, scale=10)


@case()
def call_partial():
    p = functools.partial(kw, 1, c=3)
    return p(2), p(d=9), functools.partial(p, 5)()


@case()
def call_instantiate():
    return repr(Base(4)), repr(Child()), Point(1.0).norm()


@case()
def call_init_returns_value():
    return InitReturns()


@case()
def call_class_takes_no_arguments():
    return NoArgs(1)


@case()
def call_metaclass_call():
    return UsesMeta(1, 2)


@case()
def call_new_returns_other():
    a = NewOther(True)
    b = NewOther(False)
    return a, b.init_ran


@case()
def call_abstract_class():
    return Shape()


@case()
def call_abc_subclass():
    return Square(3).area(), isinstance(Square(1), Shape)


@case()
def call_decorated():
    @deco
    def add(a, b):
        return a + b
    return add(1, b=2), add.__name__, add.__wrapped__(3, 4)


@case()
def call_stacked_decorators():
    def tag(t):
        def d(f):
            return lambda *a: (t, f(*a))
        return d

    @tag("outer")
    @tag("inner")
    def f(x):
        return x
    return f(1)


@case()
def call_recursion():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)
    return fact(20)


@case()
def call_mutual_recursion():
    def even(n):
        return True if n == 0 else odd(n - 1)

    def odd(n):
        return False if n == 0 else even(n - 1)
    return even(30), odd(7)


@case()
def call_type_one_arg():
    return type(1), type("s"), type(Base()).__name__


@case()
def call_type_three_args():
    T = type("T", (Base,), {"extra": 1})
    return T(2).m(3), T.extra


# ----------------------------------------------------------------------------- operators
@case(7, 3)
def op_arithmetic(a, b):
    return a + b, a - b, a * b, a / b, a // b, a % b, a ** b, -a, +a, ~a


@case(12, 10)
def op_bitwise(a, b):
    return a & b, a | b, a ^ b, a << 2, a >> 1


@case(2.5, 4)
def op_mixed_numeric(a, b):
    return a + b, b / a, divmod(b, a), pow(b, 2, 5), abs(-a)


@case()
def op_division_by_zero():
    return 1 / 0


@case()
def op_unsupported_operand():
    return Only() + 1


@case()
def op_unsupported_inplace():
    x = Only()
    x -= 1
    return x


@case()
def op_unsupported_unary():
    return -Only()


@case()
def op_str_int_concat():
    return "a" + 1


@case()
def op_sequence_repeat():
    return 3 * "ab", [0] * 3, (1,) * 2, "ab" * 2


@case()
def op_list_plus_tuple():
    return [1] + (2,)


@case()
def op_list_iadd_tuple():
    lst = [1]
    alias = lst
    lst += (2, 3)
    return lst, alias is lst


@case()
def op_tuple_item_iadd():
    t = ([1],)
    try:
        t[0] += [2]
    except TypeError as e:
        return ("raised", str(e), t)


@case()
def op_user_dunders():
    v = Vec(1, 2)
    return v + Vec(3, 4), v + 1, 1 + v, 2 * v, v * 3, -v


@case()
def op_reflected_subclass_priority():
    return Vec(1) + SubVec(2)


@case()
def op_user_inplace():
    v = Vec(1, 2)
    alias = v
    v += 10
    return v, alias is v


@case()
def op_inplace_falls_back_to_binary():
    p = Pair(1, 2)
    q = p
    p += (3,)
    return p, q


@case()
def op_counter_set_dict_inplace():
    c = collections.Counter("aab")
    c2 = c
    c += collections.Counter("b")
    s = {1}
    s2 = s
    s |= {2}
    d = {"a": 1}
    d2 = d
    d |= {"b": 2}
    return c, c is c2, s, s is s2, d, d is d2


@case()
def op_matmul_user():
    class M:
        def __matmul__(self, o):
            return "matmul"

        def __rmatmul__(self, o):
            return "rmatmul"
    return M() @ 1, 1 @ M()


@case(3, 5, 7)
def op_chained_comparison(a, b, c):
    return a < b < c, a < c < b, a == a != b, a < b > c


@case()
def op_chained_evaluates_once():
    calls = []

    def mid():
        calls.append(1)
        return 5
    return 1 < mid() < 10, len(calls)


@case()
def op_rich_compare_non_bool():
    w = Weird()
    return w == 1, w < 2


@case()
def op_compare_unorderable():
    return Only() < Only()


@case()
def op_eq_identity_fallback():
    a = Only()
    return a == a, a != a, a == Only()


@case()
def op_user_lt_sort():
    return sorted([Vec(3), Vec(1), Vec(2)])


@case()
def op_contains():
    return 2 in [1, 2], "x" not in "abc", 3 in Vec(1, 3), 4 not in Vec(1), 1 in {1: 2}


@case()
def op_is():
    a = []
    return a is a, a is not [], None is None


@case()
def op_truthiness():
    return bool(Vec(0, 1)), bool(Vec(0)), not Vec(1), bool([]), bool(""), (1 if Vec(2) else 0)


@case()
def op_bool_returns_int():
    if Weird():
        return "truthy"
    return "falsy"


@case()
def op_decimal_fraction_complex():
    return (Decimal("1.1") + Decimal("2.2"), Fraction(1, 3) + Fraction(1, 6),
            complex(1, 2) * complex(3, -1), (1 + 2j).conjugate(), abs(3 + 4j))


@case()
def op_decimal_context():
    import decimal
    with decimal.localcontext() as ctx:
        ctx.prec = 5
        return Decimal(1) / Decimal(7)


@case()
def op_float_special():
    inf, nan = float("inf"), float("nan")
    return repr(inf - inf), nan == nan, math.isnan(nan * 0), 1e308 * 10


@case()
def op_big_ints():
    return 2 ** 200 % 97, (10 ** 30) // 7, -(3 ** 50)


@case()
def op_power_negative():
    return 2 ** -1, (-8) ** (1 / 3) if False else pow(-8, 1 / 3)


# ----------------------------------------------------------------------------- subscripts and attributes
@case()
def sub_get_set_del():
    d = {"a": 1}
    d["b"] = 2
    del d["a"]
    lst = [1, 2, 3]
    lst[0] = 9
    del lst[1]
    return d, lst, lst[-1]


@case()
def sub_slices():
    s = list(range(10))
    s[2:4] = ["x"]
    del s[::3]
    return s, s[1:5], s[::-1], "hello"[1:-1], s[slice(2, None)]


@case()
def sub_augmented_evaluates_once():
    calls = []
    d = {"k": 1}

    def key():
        calls.append(1)
        return "k"
    d[key()] += 5
    return d, len(calls)


@case()
def sub_user_container():
    v = Vec(1, 2, 3)
    v[0] = 10
    del v[1]
    return v, v[0], v[-1], len(v), list(v)


@case()
def sub_missing_key():
    return {}["missing"]


@case()
def sub_index_error():
    return [1, 2][5]


@case()
def sub_bad_index_type():
    key = "a"
    return [1, 2][key]


@case()
def sub_defaultdict_and_counter():
    d = collections.defaultdict(list)
    d["a"].append(1)
    c = collections.Counter()
    c["x"] += 2
    return dict(d), c


@case()
def sub_class_getitem():
    return list[int], dict[str, int], typing.Optional[int]


@case()
def attr_get_set_del():
    b = Base(1)
    b.y = 2
    b.x += 5
    del b.y
    return b.x, hasattr(b, "y"), getattr(b, "zz", "default"), b.cls_attr


@case()
def attr_missing():
    return Base().nope


@case()
def attr_property():
    return Base(4).doubled, Child(2).doubled


@case()
def attr_property_set_fails():
    b = Base()
    b.doubled = 3
    return b


@case()
def attr_descriptor_and_getattr():
    w = WithDesc()
    w.d = 4
    return w.d, w._desc, w.missing, WithDesc.d


@case()
def attr_property_raises_falls_back_to_getattr():
    return PropRaises().p


@case()
def attr_slots_error():
    s = Slotted()
    s.a = 1
    s.b = 2
    return s


@case()
def attr_name_mangling():
    class Private:
        def __init__(self):
            self.__secret = 42

        def reveal(self):
            return self.__secret
    p = Private()
    return p.reveal(), p._Private__secret


@case()
def attr_frozen_dataclass():
    f = Frozen(1)
    f.a = 2
    return f


@case()
def attr_module_attributes():
    return math.pi, operator.add(1, 2), sys.maxsize > 0, re.IGNORECASE


@case()
def attr_setattr_builtin_fails():
    (1).real = 5


# ----------------------------------------------------------------------------- control flow
@case(5)
def flow_if_elif_else(n):
    if n < 0:
        return "neg"
    elif n == 0:
        return "zero"
    elif n < 3:
        return "small"
    else:
        return "big"


@case(10)
def flow_while_break_continue(n):
    out, i = [], 0
    while True:
        i += 1
        if i % 2:
            continue
        if i > n:
            break
        out.append(i)
    else:
        out.append("never")
    return out


@case()
def flow_for_else():
    for i in range(3):
        if i == 5:
            break
    else:
        return "no break", i


@case()
def flow_try_except_else_finally():
    log = []
    for v in (1, 0, "x"):
        try:
            r = 10 / v
        except ZeroDivisionError as e:
            log.append(("zde", str(e)))
        except TypeError:
            log.append("type")
        else:
            log.append(("ok", r))
        finally:
            log.append("finally")
    return log


@case()
def flow_finally_overrides_return():
    def f():
        try:
            return 1
        finally:
            return 2
    return f()


@case()
def flow_exception_chaining():
    try:
        try:
            raise KeyError("a")
        except KeyError as e:
            raise ValueError("b") from e
    except ValueError as err:
        return type(err.__cause__).__name__, str(err), err.__suppress_context__


@case()
def flow_implicit_context():
    try:
        try:
            {}["x"]
        except KeyError:
            raise RuntimeError("during")
    except RuntimeError as err:
        return type(err.__context__).__name__


@case()
def flow_custom_exception():
    class MyError(Exception):
        def __init__(self, code):
            super().__init__("code %d" % code)
            self.code = code
    try:
        raise MyError(7)
    except MyError as e:
        return e.code, str(e), e.args


@case()
def flow_raise_uncaught_custom_message():
    raise LookupError("custom message %d" % 3)


@case()
def flow_exception_groups():
    try:
        raise ExceptionGroup("eg", [ValueError(1), TypeError(2)])
    except* ValueError as vs:
        got = [type(e).__name__ for e in vs.exceptions]
    except* TypeError:
        got2 = "type"
    return got, got2


@case()
def flow_with_statement():
    log = []
    with Managed(log) as m:
        log.append(m is not None)
    return log


@case()
def flow_with_suppresses():
    log = []
    with Managed(log, suppress=True):
        raise ValueError("hidden")
    return log


@case()
def flow_with_propagates():
    log = []
    try:
        with Managed(log):
            raise KeyError("k")
    except KeyError:
        return log


@case()
def flow_contextlib():
    @contextlib.contextmanager
    def cm(log):
        log.append("in")
        yield "value"
        log.append("out")
    log = []
    with cm(log) as v, contextlib.suppress(ZeroDivisionError):
        log.append(v)
        1 / 0
    return log


@case()
def flow_match_literal_and_guard():
    out = []
    for v in (0, 1, 5, "s", None):
        match v:
            case 0:
                out.append("zero")
            case int(n) if n > 3:
                out.append("big")
            case int():
                out.append("int")
            case str() | None:
                out.append("str-or-none")
    return out


@case()
def flow_match_sequence_mapping_class():
    out = []
    for v in ([1, 2, 3], {"k": 1, "o": 2}, Point(1.0, 2.0), (1,)):
        match v:
            case [a, b, *rest]:
                out.append(("seq", a, b, rest))
            case {"k": k, **others}:
                out.append(("map", k, others))
            case Point(x=x, y=y):
                out.append(("point", x, y))
            case _:
                out.append("other")
    return out


@case()
def flow_walrus():
    data = [1, 5, 2, 8]
    if (n := len(data)) > 3:
        big = [y for x in data if (y := x * 2) > 4]
        return n, big, y


@case()
def flow_assert_fails():
    assert 1 + 1 == 3, "math is broken"


@case()
def flow_del_local():
    x = 1
    del x
    return x


@case()
def flow_unbound_local():
    def f():
        if False:
            y = 1
        return y
    return f()


@case()
def flow_name_error():
    return undefined_name_here  # noqa: F821


# ----------------------------------------------------------------------------- data
@case()
def data_fstrings():
    x, name = 3.14159, "pi"
    return f"{name!r}:{x:.2f}|{x:>10.3f}|{name:^8}|{x!s}|{{}}|{42:#x}|{1000000:,}"


@case()
def data_format_methods():
    return "{} {:>5} {k}".format(1, "a", k="v"), "%s=%05.1f" % ("x", 2.5), format(7, "08b")


@case()
def data_star_unpacking():
    a, *b, c = range(6)
    (d, e), f = (1, 2), 3
    first, *_ = "xyz"
    return a, b, c, d, e, f, first, [*b, *"ab"], {**{"a": 1}, "b": 2}


@case()
def data_unpack_errors():
    a, b = [1, 2, 3]


@case()
def data_comprehensions():
    return ([x * x for x in range(5) if x % 2], {x % 3 for x in range(10)},
            {k: v for k, v in zip("abc", range(3))}, [(i, j) for i in range(3) for j in range(i)])


@case()
def data_nested_comprehension_scope():
    k = 10
    return [[k + i + j for j in range(2)] for i in range(2)]


@case()
def data_generator_expressions():
    return sum(x * x for x in range(10)), any(x > 5 for x in [1, 7]), "".join(c.upper() for c in "ab")


@case()
def data_dict_methods():
    d = dict(a=1)
    d.update(b=2)
    d.setdefault("c", 3)
    return sorted(d.items()), d.pop("a"), d.get("zz", 0), list(d.keys())


@case()
def data_list_methods():
    lst = [3, 1, 2]
    lst.append(4)
    lst.extend([5])
    lst.insert(0, 0)
    lst.sort(reverse=True)
    lst.remove(0)
    return lst, lst.index(3), lst.count(1), lst.pop()


@case()
def data_set_ops():
    a, b = {1, 2, 3}, {3, 4}
    return a | b, a & b, a - b, a ^ b, a <= {1, 2, 3, 4}, frozenset(a) == a


@case()
def data_string_methods():
    s = "  Hello, World  "
    return s.strip().lower().split(", "), s.replace("l", "L").count("L"), "-".join(["a", "b"])


@case()
def data_bytes_bytearray():
    b = bytearray(b"abc")
    b[0] = 65
    return bytes(b), b"xy" + b"z", b"abc".hex(), memoryview(b"ab")[1]


@case()
def data_enum():
    return Color(1), Color["GREEN"], Color.RED.name, [c.value for c in Color], Color.RED in Color


@case()
def data_enum_bad_value():
    return Color(7)


@case()
def data_dataclass():
    p = Point(3.0, 4.0)
    q = dataclasses.replace(p, y=0.0)
    return p, q, p == Point(3.0, 4.0), dataclasses.asdict(p), p.norm()


@case()
def data_namedtuple():
    p = Pair(1, right=2)
    return p, p.left, p._replace(left=5), p._asdict(), Pair._make([3, 4])


@case()
def data_copy_deepcopy():
    nested = {"a": [1, {"b": 2}], "p": Point(1.0)}
    deep = copy.deepcopy(nested)
    deep["a"][1]["b"] = 99
    return nested, deep, copy.copy(Point(2.0))


# ----------------------------------------------------------------------------- functions and scopes
@case()
def scope_closure_nonlocal():
    def make():
        count = 0

        def inc():
            nonlocal count
            count += 1
            return count
        return inc
    inc = make()
    inc()
    return inc(), inc()


@case()
def scope_global_statement():
    def bump():
        global GLOBAL_VALUE
        GLOBAL_VALUE += 1
        return GLOBAL_VALUE
    before = GLOBAL_VALUE
    after = bump()
    globals()["GLOBAL_VALUE"] = before
    return after - before


@case()
def scope_default_arguments():
    def f(a, acc=[]):
        acc.append(a)
        return len(acc)
    f(1)
    return f(2) - 1, f.__defaults__[0] is not None


@case()
def scope_kwonly_defaults():
    def f(*, a=1, b):
        return a, b
    return f(b=2), f(a=3, b=4)


@case()
def scope_locals_and_vars():
    a, b = 1, "two"
    return sorted(locals().items()), sorted(vars())


@case()
def scope_dir_no_args():
    x = 1
    y = 2
    return dir()


@case()
def scope_globals_builtin():
    return globals() is scope_globals_builtin.__globals__, "CASES" in globals()


@case()
def scope_eval_exec():
    x = 5
    ns = {}
    exec("z = x * 2", {"x": x}, ns)
    return eval("x + 1"), ns["z"], eval("a * 2", {"a": 21})


@case()
def scope_exec_sees_locals():
    value = 3
    exec("result = value + 1")
    return "done"


@case()
def scope_getframe():
    return sys._getframe().f_code.co_name, sys._getframe(0).f_lineno > 0


@case()
def scope_lambda_closure_late_binding():
    fs = [lambda: i for i in range(3)]
    gs = [lambda i=i: i for i in range(3)]
    return [f() for f in fs], [g() for g in gs]


@case()
def scope_function_attributes():
    def f():
        return f.attr
    f.attr = "set"
    return f(), f.__name__, f.__qualname__.endswith("f")


@case()
def scope_annotations():
    def f(a: int, b: "str" = "x") -> list:
        return [a, b]
    return f(1), f.__annotations__


@case()
def scope_class_body_scope():
    factor = 3

    class K:
        vals = [1, 2]
        doubled = [v * 2 for v in vals]

        def get(self):
            return factor
    return K.doubled, K().get()


# ----------------------------------------------------------------------------- iterators and generators
@case()
def gen_send_and_return():
    g = counter_gen(4)
    out = [next(g), g.send(10), g.send(5), next(g)]
    try:
        next(g)
    except StopIteration as stop:
        return out, stop.value


@case()
def gen_throw_and_close():
    def g():
        try:
            yield 1
            yield 2
        except ValueError as e:
            yield ("caught", str(e))
        finally:
            log.append("closed")
    log = []
    it = g()
    first = next(it)
    caught = it.throw(ValueError("boom"))
    it.close()
    return first, caught, log


@case()
def gen_yield_from():
    def inner():
        x = yield "a"
        yield x
        return "inner-done"

    def outer():
        result = yield from inner()
        yield result
    g = outer()
    return next(g), g.send("sent"), next(g)


@case()
def gen_stopiteration_inside_becomes_runtimeerror():
    def g():
        yield 1
        raise StopIteration
    return list(g())


@case()
def gen_iterator_protocol():
    class Countdown:
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return self

        def __next__(self):
            if self.n <= 0:
                raise StopIteration
            self.n -= 1
            return self.n
    return list(Countdown(3)), [x for x in Countdown(2)], sum(Countdown(4))


@case()
def gen_itertools():
    return (list(itertools.islice(itertools.count(5), 3)), list(itertools.chain("ab", [1])),
            list(itertools.product([1, 2], "x")), list(itertools.accumulate([1, 2, 3], operator.mul)),
            [(k, list(g)) for k, g in itertools.groupby("aabbb")],
            list(itertools.takewhile(lambda x: x < 3, range(10))))


@case()
def gen_enumerate_zip_reversed():
    return list(enumerate("ab", 1)), list(zip([1, 2], "xy", strict=True)), list(reversed([1, 2]))


@case()
def gen_zip_strict_fails():
    return list(zip([1, 2], [1], strict=True))


@case()
def gen_iter_with_sentinel():
    data = iter([1, 2, 0, 3])
    return list(iter(lambda: next(data), 0))


@case()
def gen_map_filter_reduce():
    return (list(map(lambda x, y: x * y, [1, 2], [3, 4])), list(filter(None, [0, 1, 2])),
            functools.reduce(lambda a, b: a + b, range(5), 100))


@case()
def gen_sorted_min_max_keys():
    words = ["pear", "fig", "banana"]
    return sorted(words, key=len), min(words, key=lambda w: w[-1]), max(words, key=str.upper)


@case()
def gen_list_sort_key_raises():
    def key(x):
        raise KeyError(x)
    return sorted([1, 2], key=key)


@case()
def gen_re_sub_callback():
    return re.sub(r"\d+", lambda m: str(int(m.group()) * 2), "a1b22"), re.subn("a", "b", "aaa")


@case()
def gen_lru_cache():
    @functools.lru_cache(maxsize=None)
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    return fib(40), fib.cache_info().hits > 0


@case()
def gen_async_coroutine():
    async def double(x):
        await asyncio.sleep(0)
        return x * 2

    async def main():
        return await asyncio.gather(double(1), double(2))
    return asyncio.run(main())


@case()
def gen_async_generator():
    async def agen(n):
        for i in range(n):
            yield i
            await asyncio.sleep(0)

    async def main():
        return [x async for x in agen(3)]
    return asyncio.run(main())


@case()
def gen_coroutine_manual_send():
    async def coro():
        return 7
    c = coro()
    try:
        c.send(None)
    except StopIteration as stop:
        return stop.value


@case()
def gen_async_with_and_for():
    class AManager:
        async def __aenter__(self):
            return "entered"

        async def __aexit__(self, *a):
            return False

    async def main():
        async with AManager() as v:
            return v
    return asyncio.run(main())


@case()
def gen_recursive_generator():
    def walk(tree):
        if isinstance(tree, list):
            for t in tree:
                yield from walk(t)
        else:
            yield tree
    return list(walk([1, [2, [3, 4]], 5]))


# ----------------------------------------------------------------------------- misc builtins
@case()
def builtin_isinstance_issubclass():
    return (isinstance(Child(), Base), issubclass(Child, Base), isinstance(1, (str, int)),
            isinstance(True, int), callable(Callable(1)))


@case()
def builtin_hash_id_equality():
    a = (1, "x")
    return hash(a) == hash((1, "x")), id(a) == id(a), a == (1, "x")


@case()
def builtin_unhashable():
    return {[1]: 2}


@case()
def builtin_unhashable_callable_instance():
    @dataclasses.dataclass
    class Model:
        w: float

        def __call__(self, x):
            return self.w * x
    m = Model(2.0)
    return m(3.0)


@case()
def builtin_conversions():
    return int("42"), float("1.5"), str(3), bool(0), complex("1+2j"), list("ab"), tuple({1: 2})


@case()
def builtin_bad_conversion():
    return int("forty")


@case()
def builtin_repr_str_ascii():
    return repr([1, "a"]), str(b"x"), ascii("é"), repr(Base(2))


@case()
def builtin_print_to_buffer():
    import io
    buf = io.StringIO()
    print("a", 1, sep="-", end="!", file=buf)
    return buf.getvalue()


@case()
def builtin_math_functions():
    return (math.sqrt(16), math.floor(-2.5), math.fsum([0.1] * 10), math.gcd(12, 18),
            math.comb(5, 2), math.isclose(0.1 + 0.2, 0.3), math.copysign(1, -0.0))


@case()
def builtin_math_domain_error():
    return math.sqrt(-1)


@case()
def builtin_sum_start_and_types():
    return sum([[1], [2]], []), sum(range(5), 10), sum([0.1, 0.2])


@case()
def builtin_getattr_setattr_dynamic():
    b = Base()
    setattr(b, "dyn", 5)
    name = "dyn"
    return getattr(b, name), getattr(b, "missing", None), delattr(b, "dyn"), hasattr(b, "dyn")


@case()
def builtin_super_outside_method():
    return super()


@case()
def builtin_vars_of_object():
    return vars(Point(1.0, 2.0))


@case()
def builtin_object_new_init():
    o = object.__new__(Base)
    Base.__init__(o, 9)
    return o.x


@case()
def builtin_operator_module():
    return (operator.itemgetter(1)([1, 2]), operator.attrgetter("x")(Base(5)),
            operator.methodcaller("m", 1)(Base(2)), list(map(operator.neg, [1, 2])))


@case()
def builtin_globals_mutation_visible():
    COUNTER["calls"] += 1
    value = COUNTER["calls"]
    COUNTER["calls"] -= 1
    return value > 0


@case()
def builtin_recursion_error_message():
    def f(n):
        return f(n + 1)
    try:
        f(0)
    except RecursionError as e:
        return "maximum recursion depth exceeded" in str(e)
