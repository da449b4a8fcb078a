"""User passes, and builtins that read the caller's frame."""
import sys

import bytecode
import pytest

import overdub
from overdub import Context, PassError, replace_match


class Hooked(Context):
    def prehook(self, f, /, *args, **kwargs):
        pass


def halve_floats(ctx_type, code):
    return replace_match(lambda c: c / 2, lambda c: type(c) is float, code)


def uses_literals(x):
    return helper_literal(x) + 4.0


def helper_literal(x):
    return x * 2.0


def test_pass_reaches_every_function_body():
    assert overdub.overdub(Context(pass_=halve_floats), uses_literals, 1.0) == 1.0 * 1.0 + 2.0
    assert uses_literals(1.0) == 6.0  # the original is untouched


def test_pass_sees_context_type_and_runs_once_per_body():
    seen = []

    def record(ctx_type, code):
        seen.append((ctx_type, code.name))
        return code

    class Rec(Context):
        pass

    for _ in range(3):
        assert overdub.overdub(Rec(pass_=record), uses_literals, 1.0) == 6.0
    assert seen == [(Rec, "uses_literals"), (Rec, "helper_literal")]


def test_pass_replacing_names():
    def swap_global(ctx_type, code):
        return replace_match(lambda n: "helper_alt", lambda a: a == "helper_literal", code)

    globals()["helper_alt"] = lambda x: -x
    try:
        assert overdub.overdub(Context(pass_=swap_global), uses_literals, 1.0) == 3.0
    finally:
        del globals()["helper_alt"]


def test_bad_passes_get_clear_errors():
    with pytest.raises(PassError, match=r"returned NoneType for function uses_literals"):
        overdub.overdub(Context(pass_=lambda t, c: None), uses_literals, 1.0)

    def broken(ctx_type, code):
        code.insert(0, bytecode.Instr("POP_TOP"))
        return code

    with pytest.raises(PassError, match=r"pass .*broken.* invalid bytecode for function uses_literals"):
        overdub.overdub(Context(pass_=broken), uses_literals, 1.0)

    def raises(ctx_type, code):
        raise RuntimeError("oops")

    with pytest.raises(PassError, match=r"failed on function uses_literals.*RuntimeError: oops"):
        overdub.overdub(Context(pass_=raises), uses_literals, 1.0)
    with pytest.raises(TypeError, match="must be a bytecode.Bytecode"):
        replace_match(str, bool, "not bytecode")


class Base:
    def who(self):
        return "base"

    @classmethod
    def make(cls):
        return cls.__name__


class Child(Base):
    def who(self):
        return "child>" + super().who()

    @classmethod
    def make(cls):
        return "made:" + super().make()

    def in_comprehension(self):
        return [super().who() for _ in range(2)]


def frame_readers(a, b=2):
    c = a + b
    loc = sorted(locals())
    names = dir()
    here = sys._getframe().f_code.co_name
    caller = sys._getframe(1).f_code.co_name
    value = eval("a * 10 + c")
    exec("d = c + 1")
    g = globals() is frame_readers.__globals__
    v = sorted(vars())
    return loc, names, here, caller, value, g, v


def call_frame_readers():
    return frame_readers(1)


@pytest.mark.parametrize("ctx_type", [Hooked, Context])
def test_frame_readers_see_the_user_frame(ctx_type):
    assert overdub.overdub(ctx_type(), call_frame_readers) == call_frame_readers()


def outcome(f):
    try:
        return ("ok", f())
    except Exception as exc:
        return ("raised", type(exc), str(exc))


@pytest.mark.parametrize("case", [
    lambda: Child().who(),
    lambda: Child.make(),
    lambda: Child().in_comprehension(),  # 3.11: TypeError (local 0 is ".0"); 3.12+: works
])
def test_super_forms_match_plain_python(case):
    assert outcome(lambda: overdub.overdub(Hooked(), case)) == outcome(case)


def test_eval_and_exec_code_runs_in_context():
    seen = []

    class Log(Context):
        def prehook(self, f, /, *args, **kwargs):
            seen.append(getattr(f, "__name__", None))

    def f(x):
        return eval("abs(x) + len('ab')")

    assert overdub.overdub(Log(), f, -3) == 5
    assert "abs" in seen and "len" in seen
