"""Regressions from CPython's own tests run under routed contexts (the fourth hunt).

Plain CPython is the oracle: each program observes the same under a context that really
routes (a typed ``@primitive``, capstan's forward context with nothing to carry) as
when called plainly.
"""
import inspect
import json
import sys

import pytest

import overdub


class Frozen(overdub.Context):
    """Typed primitives on attribute stores and loads: every store and load is matched
    against them, none ever matches a program's object."""

    @overdub.primitive(setattr, frozenset, object, object)
    def store(self, o, n, v):
        raise AssertionError("matched a store it names no type of")

    @overdub.primitive(getattr, frozenset, object)
    def load(self, o, n):
        raise AssertionError("matched a load it names no type of")


def _forward():
    import capstan
    return capstan.ForwardCtx()


CONTEXTS = [Frozen, _forward]


def _attribute_hooks():
    """What a program's attribute hooks see: CPython's test_descr.test_module_subclasses
    and test_inspect's getattr_static test_class_as_property (a ``__class__`` property)."""
    log = []
    MT = type(sys)

    class MM(MT):
        def __getattribute__(self, name):
            log.append(("getattr", name))
            return MT.__getattribute__(self, name)

        def __setattr__(self, name, value):
            log.append(("setattr", name, value))
            MT.__setattr__(self, name, value)

    class Base:
        foo = 3

    class Something(Base):
        @property
        def __class__(self):
            log.append("__class__ read")
            return object

    def program():
        a = MM("a")
        a.foo = 12
        x = a.foo
        s = Something()
        s.bar = 1
        inspect.getattr_static(s, "foo")
        return x, s.bar, list(log)

    return program


@pytest.mark.parametrize("make", CONTEXTS, ids=["typed-primitive", "forward"])
def test_typed_primitive_never_reads_class_attribute(make):
    """A primitive's argument types are matched against a value's own type: isinstance
    would read ``__class__``, running the program's property or ``__getattribute__``
    where plain CPython runs none."""
    expected = _attribute_hooks()()
    assert expected == (12, 1, [("setattr", "foo", 12), ("getattr", "foo")])
    assert overdub.overdub(make(), _attribute_hooks()) == expected


def test_typed_primitive_still_matches_subclasses():
    """The type match admits subclasses (an ``int`` subclass for ``int``), as before."""
    class Ints(overdub.Context):
        @overdub.primitive(getattr, int, object)
        def load(self, o, n):
            return "seen"

    class MyInt(int):
        pass

    assert overdub.overdub(Ints(), lambda: (MyInt(3).real, "a".upper())) == ("seen", "A")


def _json_then_compile():
    """CPython's json doctest: text json made from plain numbers, then source compiled."""
    text = json.dumps(2 + 1j, default=lambda z: [z.real, z.imag])
    shared = [1.5]
    cycle = []
    cycle.append(cycle)
    try:
        json.dumps(cycle)
    except ValueError as exc:
        circular = str(exc)
    seen = []
    json.dumps([shared, object()], default=lambda o: seen.append(o) or "x")
    return text, eval(compile(text, "<json>", "eval")), eval("[2.0, 1.0]"), circular, len(seen)


def test_forward_json_of_plain_values_is_plain_text():
    """json's C encoder under the forward context notes its text as made from
    differentiated values only when some were: plain text compiled later is no loss
    (was NoRuleError: compile turned text made from a value being differentiated...).
    Text of differentiated values stays refused (tests/test_losses.py, "json")."""
    expected = _json_then_compile()
    assert overdub.overdub(_forward(), _json_then_compile) == expected

