"""Code that overdub generates (operator slots, call dispatchers, primitive dispatch) can
be read back: each function is compiled under a file name of its own whose source is
registered with ``linecache``; ``OVERDUB_KEEP_FRAMES=1`` keeps those frames in tracebacks."""
import inspect
import linecache
import os
import subprocess
import sys
import textwrap
import traceback

import pytest

import overdub
from overdub import _native, codegen, lookaside

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.dirname(os.path.abspath(overdub.__file__))


class Seen(overdub.Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata.append(f)


class Refuses:
    def __add__(self, other):
        raise ValueError("Refuses + %r" % (other,))


def add(a, b):
    return a + b


def _generated(filename):
    return os.path.dirname(filename) == PACKAGE and os.path.basename(filename).startswith("<overdub ")


def test_a_slot_has_its_own_file_name_and_source():
    ctx = Seen([])
    overdub.overdub(ctx, add, 1.5, 2.5)
    slot = ctx._runtime.slot(("binop", "ADD"))
    filename = slot.__code__.co_filename
    assert os.path.basename(filename).startswith("<overdub slot binop ADD ") and filename.endswith(">")
    assert _generated(filename) and not os.path.exists(filename)
    assert "def slot(a, b):" in inspect.getsource(slot)
    assert linecache.getline(filename, slot.__code__.co_firstlineno).strip() == "def slot(a, b):"
    assert lookaside.is_internal(slot.__code__)
    call = ctx._runtime.call
    if not _native.PURE_PYTHON:  # (the C layer's dispatcher: C code, no Python source)
        assert type(call) is _native.Dispatcher
        call = codegen.dispatchers_factory(None, True, False)(*[None] * 7)[0]
    assert os.path.basename(call.__code__.co_filename).startswith("<overdub call dispatcher any arity ")
    assert "def call(f, /, *args, **kwargs):" in inspect.getsource(call)


def test_the_same_source_gets_the_same_file_name():
    first, second = Seen([]), Seen([])
    overdub.overdub(first, add, 1.5, 2.5)
    overdub.overdub(second, add, 1.5, 2.5)
    a, b = (c._runtime.slot(("binop", "ADD")) for c in (first, second))
    assert a is not b and a.__code__.co_filename == b.__code__.co_filename
    other = codegen.compile_function("def f(x):\n    return x + 1", "f", {}, "test other")
    assert other.__code__.co_filename != a.__code__.co_filename
    assert other(1) == 2


def test_generated_sources_are_bounded():
    names = []
    for i in range(codegen._COMPILED_LIMIT + 20):
        f = codegen.compile_function("def f(x):\n    return x + %d" % i, "f", {}, "test bound")
        assert f(0) == i
        names.append(f.__code__.co_filename)
    assert len(set(names)) == len(names)
    assert len(codegen._compiled) <= codegen._COMPILED_LIMIT
    assert names[0] not in linecache.cache and names[-1] in linecache.cache
    registered = [n for n in linecache.cache if _generated(n)]
    assert len(registered) <= codegen._COMPILED_LIMIT


def test_tracebacks_hide_the_machinery_by_default():
    with pytest.raises(ValueError, match="Refuses") as info:
        overdub.overdub(Seen([]), add, Refuses(), 1)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert [f.name for f in frames if f.filename == __file__][-2:] == ["add", "__add__"]
    machinery = [f for f in frames if f.filename.startswith(PACKAGE)]
    assert machinery == [] or _native.PURE_PYTHON and [f.name for f in machinery] == ["overdub"]
    assert not any(_generated(f.filename) for f in frames)


_KEPT = textwrap.dedent("""
    import traceback, overdub

    class Seen(overdub.Context):
        def prehook(self, f, /, *args, **kwargs):
            pass

    class Refuses:
        def __add__(self, other):
            raise ValueError("refused")

    def add(a, b):
        return a + b

    try:
        overdub.overdub(Seen(), add, Refuses(), 1)
    except ValueError:
        traceback.print_exc()
""")


@pytest.mark.parametrize("keep", [False, True])
def test_keep_frames_shows_generated_lines(keep):
    env = {k: v for k, v in os.environ.items() if k != "OVERDUB_KEEP_FRAMES"}
    if keep:
        env["OVERDUB_KEEP_FRAMES"] = "1"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", _KEPT], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    lines = proc.stderr.splitlines()
    assert lines[-1] == "ValueError: refused", proc.stderr
    slot = [i for i, line in enumerate(lines) if os.sep + '<overdub slot binop ADD ' in line]
    if not keep:
        assert not slot and "<overdub" not in proc.stderr, proc.stderr
        assert "semantics.py" not in proc.stderr
        return
    assert len(slot) == 1, proc.stderr
    assert lines[slot[0]].endswith(", in slot")
    assert lines[slot[0] + 1].strip() == "r = step(a, b)"  # the generated line itself
    # the pure-Python path's call dispatcher is generated code too (the C layer's is C)
    assert (os.sep + "<overdub call dispatcher " in proc.stderr) == _native.PURE_PYTHON
    assert "semantics.py" in proc.stderr
