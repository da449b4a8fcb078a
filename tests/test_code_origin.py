"""Events do not depend on how a function was created.

CPython compiles ``math.sqrt(x)`` in two ways: as an attribute load plus a call when
``math`` was imported at module level in the same source (a file, or an ``exec`` whose
source has the ``import``), and as a method call otherwise (a function compiled from a
string that finds ``math`` in the globals it was given: notebooks, doctest, ``exec``).
Both must report the same calls to every context: the module attribute is loaded as
``getattr(math, 'sqrt')`` either way.  Code objects named ``<string>`` or
``<doctest ...>`` are user code, never overdub's machinery.
"""
import doctest
import io
import math
import os
import types

import pytest

import overdub
from capstan import CountCtx, PrintCtx
from capstan.trace import TraceCtx

SOURCE = "def f(x):\n    return math.sqrt(x) + 1.0\n"


def f(x):  # the same code in a file (math is imported above: an attribute load)
    return math.sqrt(x) + 1.0


def _from_exec():
    ns = {"math": math}
    exec(SOURCE, ns)
    return ns["f"]


def _from_exec_with_import():
    ns = {}
    exec("import math\n" + SOURCE, ns)
    return ns["f"]


def _from_compile():
    ns = {"math": math, "__name__": "__main__"}
    exec(compile(SOURCE, "<string>", "exec"), ns)
    return ns["f"]


def _from_code_object():
    code = next(c for c in compile(SOURCE, "<string>", "exec").co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(code, {"math": math, "__builtins__": __builtins__}, "f")


def _from_doctest():
    """``f`` defined by a doctest example, as doctest runs it."""
    globs = {"math": math}
    text = ">>> def f(x):\n...     return math.sqrt(x) + 1.0\n"
    test = doctest.DocTestParser().get_doctest(text, globs, "origin", "origin.txt", 0)
    runner = doctest.DocTestRunner()
    runner.run(test, out=lambda s: None, clear_globs=False)
    assert runner.failures == 0
    return test.globs["f"]


def _from_notebook_cell():
    ns = {"math": math, "__name__": "__main__"}
    exec(compile(SOURCE, "/tmp/ipykernel_1234/3141592653.py", "exec"), ns)
    return ns["f"]


MAKERS = [_from_exec, _from_exec_with_import, _from_compile, _from_code_object, _from_doctest,
          _from_notebook_cell]


class Seen(overdub.Context):
    """A user context with a prehook: the name of each function called."""

    def __init__(self):
        super().__init__()
        self.names = []

    def prehook(self, fn, /, *args, **kwargs):
        self.names.append(getattr(fn, "__name__", type(fn).__name__))


class Halve(overdub.Context):
    """A user context with a primitive on ``math.sqrt``."""

    @overdub.primitive(math.sqrt)
    def sqrt(self, x):
        return math.sqrt(x) / 2


def events(fn):
    """What each context reports for ``fn(4.0)``."""
    count = CountCtx()
    assert overdub.overdub(count, fn, 4.0) == 3.0
    trace = TraceCtx()
    overdub.overdub(trace, fn, 4.0)
    stream = io.StringIO()
    overdub.overdub(PrintCtx(stream=stream), fn, 4.0)
    seen = Seen()
    overdub.overdub(seen, fn, 4.0)
    return {"count": dict(count.counts), "trace": trace.render(), "print": stream.getvalue(),
            "prehook": seen.names, "primitive": overdub.overdub(Halve(), fn, 4.0)}


def test_file_code_reports_the_attribute_load():
    got = events(f)
    assert got["count"] == {"f": 1, "getattr": 1, "sqrt": 1, "add": 1}
    assert got["trace"].splitlines()[1].strip() == "getattr(<module math>, 'sqrt') -> <function sqrt>"
    assert got["prehook"] == ["f", "getattr", "sqrt", "add"]
    assert got["primitive"] == 2.0


@pytest.mark.parametrize("make", MAKERS, ids=lambda m: m.__name__[1:])
def test_code_from_a_string_reports_what_file_code_reports(make):
    assert events(make()) == events(f)


def test_a_module_passed_in_reports_the_attribute_load():
    def g(m, x):  # m.sqrt(x) is a method call in every compilation
        return m.sqrt(x)

    count = CountCtx()
    assert overdub.overdub(count, g, math, 9.0) == 3.0
    assert dict(count.counts) == {"g": 1, "getattr": 1, "sqrt": 1}


def test_pseudo_file_names_are_user_code_in_any_working_directory(monkeypatch):
    """A ``<string>`` code object is routed even when the working directory lies
    inside overdub's package (where the name would resolve to a machinery path)."""
    monkeypatch.chdir(os.path.dirname(overdub.__file__))
    ns = {"math": math}
    exec(compile(SOURCE, "<string compiled in overdub's folder>", "exec"), ns)  # (a name not seen yet)
    fn = ns["f"]
    assert not overdub.lookaside.is_internal(fn.__code__)
    assert events(fn) == events(f)
