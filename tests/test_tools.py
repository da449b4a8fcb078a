"""capstan's tool contexts: PrintCtx, CountCtx, TraceCtx, GPUCtx (against a fake device
module that records what reached it) and bit32pass -- plus the examples/ scripts and
``python -m capstan.trace``.  No test uses a GPU."""
import importlib.util
import io
import logging
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import overdub
from capstan.bit32 import bit32pass, float32pass, to32
from capstan.counting import CountCtx
from capstan.gpu import GPUCtx
from capstan.printing import PrintCtx, describe, name_of
from capstan.trace import TraceCtx

from example_runs import run_example

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_example(name):
    path = os.path.join(ROOT, "examples", name + ".py")
    spec = importlib.util.spec_from_file_location("example_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


hmlstm = _load_example("hmlstm_gpu")


def square(v):
    return v * v


def hypot(x, y):
    return math.sqrt(square(x) + square(y))


def hypot2(a, b):
    return square(a) + square(b)


def poly(x):
    return 3.0 * x ** 3 + 2.0 * x ** 2 + x + 1.0


def swallow(x):
    try:
        int("nope")
    except ValueError:
        pass
    return square(x)


# ------------------------------------------------------------------------------ PrintCtx
HYPOT_LOG = """\
hypot(3.0, 4.0)
  getattr(<module math>, 'sqrt')
  square(3.0)
    mul(3.0, 3.0)
  square(4.0)
    mul(4.0, 4.0)
  add(9.0, 16.0)
  sqrt(25.0)
"""


def test_print_defaults_to_stderr_at_call_time(capsys):
    ctx = PrintCtx()  # no stream given: sys.stderr is looked up when a line is written
    assert overdub.overdub(ctx, hypot, 3.0, 4.0) == 5.0
    out, err = capsys.readouterr()
    assert out == "" and err == HYPOT_LOG


def test_print_to_stream_keywords_and_results():
    buf = io.StringIO()

    def scaled(x, *, k=1):
        return k * x

    overdub.overdub(PrintCtx(stream=buf, results=True), scaled, 2, k=3)
    assert buf.getvalue() == "scaled(2, k=3)\n  mul(3, 2)\n  -> 6\n-> 6\n"


def test_print_filters_by_module_and_function():
    buf = io.StringIO()
    overdub.overdub(PrintCtx(stream=buf, modules=(__name__,)), hypot, 3.0, 4.0)
    assert buf.getvalue() == "hypot(3.0, 4.0)\n  square(3.0)\n  square(4.0)\n"

    buf = io.StringIO()
    overdub.overdub(PrintCtx(stream=buf, modules="math"), hypot, 3.0, 4.0)
    assert buf.getvalue() == "sqrt(25.0)\n"

    buf = io.StringIO()
    overdub.overdub(PrintCtx(stream=buf, functions=(square,)), hypot, 3.0, 4.0)
    assert buf.getvalue() == "square(3.0)\nsquare(4.0)\n"

    buf = io.StringIO()  # either filter shows a call; indentation counts shown calls only
    overdub.overdub(PrintCtx(stream=buf, functions=(square,), modules=("_operator",)), hypot, 3.0, 4.0)
    assert buf.getvalue() == "square(3.0)\n  mul(3.0, 3.0)\nsquare(4.0)\n  mul(4.0, 4.0)\nadd(9.0, 16.0)\n"

    buf = io.StringIO()
    overdub.overdub(PrintCtx(stream=buf, exclude=(getattr, math.sqrt)), hypot, 3.0, 4.0)
    assert buf.getvalue() == HYPOT_LOG.replace("  getattr(<module math>, 'sqrt')\n", "").replace(
        "  sqrt(25.0)\n", "")


def test_print_depth_survives_exceptions():
    buf = io.StringIO()
    overdub.overdub(PrintCtx(stream=buf, results=True), swallow, 3)
    assert buf.getvalue() == (
        "swallow(3)\n"
        "  int('nope')\n"
        "  !! ValueError(\"invalid literal for int() with base 10: 'nope'\")\n"
        "  square(3)\n"
        "    mul(3, 3)\n"
        "    -> 9\n"
        "  -> 9\n"
        "-> 9\n")


def test_print_to_logging(caplog):
    with caplog.at_level(logging.DEBUG, logger="capstan.test"):
        overdub.overdub(PrintCtx(logger="capstan.test", level=logging.DEBUG, modules=(__name__,)),
                        hypot2, 1, 2)
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("capstan.test", logging.DEBUG, "hypot2(1, 2)"),
        ("capstan.test", logging.DEBUG, "  square(1)"),
        ("capstan.test", logging.DEBUG, "  square(2)"),
    ]


def test_print_keeps_metadata_free_and_similar_keeps_options():
    buf = io.StringIO()
    ctx = PrintCtx({"user": 1}, stream=buf, modules=(__name__,))
    assert ctx.metadata == {"user": 1}
    twin = ctx.similar(metadata=[])
    assert twin.stream is buf and twin.modules == (__name__,)


def test_describe_is_short_and_address_free():
    assert describe(math) == "<module math>"
    assert describe(square) == "<function square>"
    assert describe(np.zeros(100)) == "ndarray(float64, shape=(100,))"
    assert describe(np.array([1.0, 2.0])) == "array([1., 2.])"
    assert describe("x" * 100, limit=10) == "'xxxxxx..."
    assert name_of(str.upper) == "str.upper" and name_of(np.exp) == "exp"


# ------------------------------------------------------------------------------ CountCtx
def test_count_cassette_example():
    ctx = CountCtx((int, str))
    out = overdub.overdub(ctx, lambda: list(map(str, range(1, 11))))
    assert out == [str(i) for i in range(1, 11)]
    assert ctx.count == 11
    assert dict(ctx.counts) == {"range": 1, "str": 10}
    assert ctx.calls[str] == 10 and ctx.calls[range] == 1

    only_str = CountCtx(str)
    overdub.overdub(only_str, lambda: list(map(str, range(1, 11))))
    assert only_str.count == 0 and dict(only_str.counts) == {}


def test_count_all_calls_of_poly():
    ctx = CountCtx()
    assert overdub.overdub(ctx, poly, 1.0) == poly(1.0) == 7.0
    assert dict(ctx.counts) == {"poly": 1, "pow": 2, "mul": 2, "add": 3}
    assert ctx.count == 8
    overdub.overdub(ctx, poly, 2.0)  # counts add up over runs
    assert ctx.count == 16
    ctx.reset()
    assert ctx.count == 0


def test_count_keyword_arguments_and_types():
    ctx = CountCtx([float])
    assert ctx.metadata == (float,)
    overdub.overdub(ctx, lambda: dict(a=1.5, b=2))  # noqa: C408  (a call with keywords)
    assert dict(ctx.counts) == {"dict": 1}
    ints = CountCtx(int)
    overdub.overdub(ints, hypot2, 3, 4)
    assert dict(ints.counts) == {"hypot2": 1, "square": 2, "mul": 2, "add": 1}
    with pytest.raises(TypeError):
        CountCtx("int")


def test_count_is_prehook_only():
    assert "prehook" in vars(CountCtx) and "posthook" not in vars(CountCtx)
    assert not any(hasattr(v, "__overdub_primitives__") for v in vars(CountCtx).values())


# ------------------------------------------------------------------------------ TraceCtx
HYPOT2_TREE = """\
hypot2(3, 4) -> 25
  square(3) -> 9
    mul(3, 3) -> 9
  square(4) -> 16
    mul(4, 4) -> 16
  add(9, 16) -> 25"""


def test_trace_tree_shape_args_results():
    ctx = TraceCtx()
    assert overdub.overdub(ctx, hypot2, 3, 4) == 25
    [top] = ctx.calls
    assert (top.f, top.args, top.kwargs, top.result) == (hypot2, (3, 4), {}, 25)
    assert [(c.f, c.args, c.result) for c in top.children] == [
        (square, (3,), 9), (square, (4,), 16), (__import__("operator").add, (9, 16), 25)]
    assert [(c.name, c.args, c.result, c.children) for c in top.children[0].children] == [
        ("mul", (3, 3), 9, [])]
    assert [(d, c.name) for d, c in ctx.walk()] == [
        (0, "hypot2"), (1, "square"), (2, "mul"), (1, "square"), (2, "mul"), (1, "add")]
    assert ctx.render() == str(ctx) == HYPOT2_TREE
    assert ctx.render(max_depth=0) == "hypot2(3, 4) -> 25"


def test_trace_poly_and_hide():
    ctx = TraceCtx(hide=(getattr,))
    assert overdub.overdub(ctx, poly, 1.0) == poly(1.0)
    assert [c.name for c in ctx.calls[0].children] == ["pow", "mul", "pow", "mul", "add", "add", "add"]
    hidden = TraceCtx(hide=(getattr,))
    overdub.overdub(hidden, hypot, 3.0, 4.0)
    assert [c.name for c in hidden.calls[0].children] == ["square", "square", "add", "sqrt"]


def test_trace_records_exceptions():
    ctx = TraceCtx()
    assert overdub.overdub(ctx, swallow, 2) == 4
    conv, sq = ctx.calls[0].children
    assert conv.f is int and isinstance(conv.error, ValueError) and conv.result is None
    assert sq.name == "square" and sq.result == 4 and [c.name for c in sq.children] == ["mul"]
    with pytest.raises(ValueError):
        overdub.overdub(ctx, math.sqrt, -1.0)
    assert ctx.calls[1].text() == "sqrt(-1.0) !! ValueError('math domain error')"


def test_trace_dot_and_svg(tmp_path):
    ctx = TraceCtx()
    overdub.overdub(ctx, hypot2, 3, 4)
    assert ctx.to_dot() == (
        "digraph trace {\n"
        "  rankdir=LR;\n"
        "  ranksep=0.25;\n"
        "  nodesep=0.08;\n"
        '  node [shape=box, fontname="monospace", fontsize=10, height=0.25, margin="0.06,0.02"];\n'
        '  n0 [label="hypot2(3, 4) -> 25"];\n'
        '  n1 [label="square(3) -> 9"];\n'
        '  n2 [label="square(4) -> 16"];\n'
        '  n3 [label="add(9, 16) -> 25"];\n'
        '  n4 [label="mul(3, 3) -> 9"];\n'
        '  n5 [label="mul(4, 4) -> 16"];\n'
        "  n0 -> n1;\n"
        "  n0 -> n2;\n"
        "  n0 -> n3;\n"
        "  n1 -> n4;\n"
        "  n2 -> n5;\n"
        "}\n")
    dot, svg = ctx.save(str(tmp_path / "t.dot"))
    with open(dot) as fh:
        assert fh.read() == ctx.to_dot()
    with open(svg) as fh:
        picture = fh.read()
    assert "<svg" in picture and "square(3)" in picture
    if shutil.which("dot") is None:
        assert picture == ctx.to_svg() and picture.count("<rect") == 6 and picture.count("<path") == 5


def test_trace_dot_escapes_quotes():
    ctx = TraceCtx()
    overdub.overdub(ctx, str.upper, 'say "hi"\\')
    assert '[label="str.upper(\'say \\"hi\\"\\\\\\\\\') -> ' in ctx.to_dot()


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "capstan.trace", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    return proc


def test_trace_cli(tmp_path):
    proc = run_cli("examples.tools_trace:hypot2", "3", "4")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == HYPOT2_TREE + "\n"
    proc = run_cli("operator:add", "abc", "[1]")  # not a literal -> str; a literal -> its value
    assert proc.returncode != 0 and "TypeError" in proc.stderr
    assert proc.stdout == "add('abc', [1]) !! TypeError('can only concatenate str (not \"list\") to str')\n"
    proc = run_cli("--depth", "0", "--dot", str(tmp_path / "c.dot"), "operator:add", "ab", "cd")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "add('ab', 'cd') -> 'abcd'"
    assert (tmp_path / "c.dot").read_text().count("->") == 1 and (tmp_path / "c.svg").exists()


# ------------------------------------------------------------------------------ GPUCtx
class FakeArray(np.ndarray):
    """A 'device' array: NumPy underneath, another type on top."""


class FakeDevice:
    """A stand-in for CuPy: NumPy's functions under NumPy's names, that record every call
    that reaches them, return FakeArrays, and note any host array they were given.
    ``missing`` names are absent (as if the device library lacked them)."""

    __name__ = "fakedevice"
    ndarray = FakeArray

    def __init__(self, missing=(), prefix="", source=np, root=None):
        self._missing, self._prefix, self._source = set(missing), prefix, source
        root = root or self
        self._root = root
        if root is self:
            self.calls, self.host_args, self.moved_in, self.moved_out = [], [], 0, 0
            self.linalg = FakeDevice(missing, "linalg.", np.linalg, self)

    def asarray(self, x):
        self._root.moved_in += 1
        return np.array(x).view(FakeArray)

    def asnumpy(self, x):
        self._root.moved_out += 1
        return np.array(x).view(np.ndarray)

    def __getattr__(self, name):
        if name.startswith("_") or self._prefix + name in self._missing:
            raise AttributeError(name)
        fn, root, full = getattr(self._source, name), self._root, self._prefix + name

        def on_device(*args, **kwargs):
            root.calls.append(full)
            for a in list(args) + list(kwargs.values()):
                if isinstance(a, np.ndarray) and not isinstance(a, FakeArray):
                    root.host_args.append(full)
            out = fn(*args, **kwargs)
            return out.view(FakeArray) if isinstance(out, np.ndarray) else out
        return on_device


W = np.arange(3.0)


def uses_host_global(x):
    return np.linalg.norm(x + W) + W.sum()


def test_gpu_hmlstm_runs_substituted_on_the_device():
    args = hmlstm.inputs(1000)
    dev = FakeDevice()
    ctx = GPUCtx(xp=dev)
    c, h = overdub.overdub(ctx, hmlstm.hmlstm_kernel, *args)
    c_ref, h_ref = hmlstm.hmlstm_kernel(*args)
    assert type(c) is np.ndarray and type(h) is np.ndarray  # brought back
    np.testing.assert_array_equal(c, c_ref)
    np.testing.assert_array_equal(h, h_ref)
    # every NumPy call of the kernel (and of sigmoid inside it) reached the device module
    assert sorted(dev.calls) == ["exp"] * 3 + ["tanh"] * 2 + ["where"] * 3
    assert dict(ctx.substituted) == {"exp": 3, "tanh": 2, "where": 3}
    assert dev.host_args == []           # no host array ever reached a device function
    assert dev.moved_in == ctx.moved == 8 and dev.moved_out == 2


def test_gpu_keep_on_device_and_branch_coverage():
    args = hmlstm.inputs(300)
    z, zb = args[4], args[5]
    assert (z == 1).any() and ((z == 0) & (zb == 1)).any() and ((z == 0) & (zb == 0)).any()
    dev = FakeDevice()
    c, h = overdub.overdub(GPUCtx(xp=dev, to_host=False), hmlstm.hmlstm_kernel, *args)
    assert type(c) is FakeArray and type(h) is FakeArray  # operators ran on device arrays too
    assert dev.moved_out == 0
    copy = (z == 0) & (zb == 0)
    np.testing.assert_array_equal(np.asarray(c)[copy], args[6][copy])  # COPY keeps c and h
    np.testing.assert_array_equal(np.asarray(h)[copy], args[7][copy])


def test_gpu_moves_host_globals_submodules_and_methods():
    dev = FakeDevice()
    ctx = GPUCtx(xp=dev)
    x = np.array([3.0, 4.0, 12.0])
    out = overdub.overdub(ctx, uses_host_global, x)
    assert out == uses_host_global(x) and type(out) is np.float64
    assert dev.calls == ["linalg.norm"] and dev.host_args == []
    assert dict(ctx.substituted) == {"linalg.norm": 1, "ndarray.sum": 1}
    assert ctx.moved == 3  # x on entry, W at the addition, W again for W.sum()


def test_gpu_missing_function_runs_on_host():
    args = hmlstm.inputs(50)
    dev = FakeDevice(missing={"tanh"})
    ctx = GPUCtx(xp=dev)
    c, h = overdub.overdub(ctx, hmlstm.hmlstm_kernel, *args)
    c_ref, h_ref = hmlstm.hmlstm_kernel(*args)
    np.testing.assert_array_equal(c, c_ref)
    np.testing.assert_array_equal(h, h_ref)
    assert dict(ctx.host_calls) == {"tanh": 2} and "tanh" not in dev.calls
    assert dev.host_args == []


def test_gpu_array_creation_and_plain_values():
    dev = FakeDevice()

    def make(n):
        return np.zeros(n) + np.ones((n,), dtype=np.float32), [np.arange(n)], {"k": n * 2}

    a, [b], d = overdub.overdub(GPUCtx(xp=dev), make, 3)
    assert dev.calls == ["zeros", "ones", "arange"]
    assert type(a) is np.ndarray and a.tolist() == [1.0] * 3 and type(b) is np.ndarray and d == {"k": 6}


def test_gpu_default_module_without_cupy():
    ctx = GPUCtx()
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001  (no CuPy, or a broken CUDA install)
        assert ctx.xp is np and ctx.on_gpu is False
    args = hmlstm.inputs(20)
    c, h = overdub.overdub(ctx, hmlstm.hmlstm_kernel, *args)
    np.testing.assert_allclose(c, hmlstm.hmlstm_kernel(*args)[0], atol=1e-6)
    np.testing.assert_allclose(h, hmlstm.hmlstm_kernel(*args)[1], atol=1e-6)


# ------------------------------------------------------------------------------ bit32pass
class Plain(overdub.Context):
    pass


def literals():
    return 1.5, 7, -2, 2 ** 40, 1e300, True, "s", None, 3j, (1, 2.5, "t")


def test_bit32_literal_types():
    out = overdub.overdub(Plain(pass_=bit32pass), literals)
    assert out == literals()
    assert [type(v) for v in out[:9]] == [np.float32, np.int32, np.int32, int, float, bool, str,
                                          type(None), complex]
    assert [type(v) for v in out[9]] == [np.int32, np.float32, str]
    assert to32(1e-320) == 1e-320 and type(to32(1e-320)) is float
    assert type(to32(True)) is bool and type(to32(2 ** 31)) is int and type(to32(-2 ** 31)) is np.int32


def test_bit32_leaves_operand_counts_alone():
    def shapes(x):
        a, b = x, [x, 1, 2]
        return (a, b, {"k": 3}, f"{x}{2}", sum(range(4)))

    assert overdub.overdub(Plain(pass_=bit32pass), shapes, 0.5) == shapes(0.5)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def test_bit32_hmlstm_stays_float32():
    args = hmlstm.inputs(64)
    ctx = Plain(pass_=bit32pass)
    outs = overdub.overdub(ctx, hmlstm.hmlstm_kernel, *args)
    assert [o.dtype for o in outs] == [np.float32, np.float32]
    # honestly: NumPy >= 2 treats Python float literals as weak, so plain NumPy keeps
    # these float32 too; the pass changes nothing here but the literal types
    assert [o.dtype for o in hmlstm.hmlstm_kernel(*args)] == [o.dtype for o in outs]
    np.testing.assert_allclose(outs[0], hmlstm.hmlstm_kernel(*args)[0], rtol=1e-6)


def test_bit32_where_literals_meet_numpy_alone():
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    plain = gelu(x)
    if int(np.__version__.split(".")[0]) >= 2:  # np.sqrt(2.0 / np.pi) is a strong float64 scalar
        assert plain.dtype == np.float64
    with_floats = overdub.overdub(Plain(pass_=float32pass), gelu, x)
    assert with_floats.dtype == np.float32
    np.testing.assert_allclose(with_floats, plain, rtol=1e-5)
    assert overdub.overdub(Plain(pass_=float32pass), gelu, x).dtype == np.float32  # cached pass
    # bit32pass also makes the 3 in x ** 3 an int32, and NumPy promotes float32 with
    # int32 to float64: documented, and the reason float32pass exists
    assert overdub.overdub(Plain(pass_=bit32pass), gelu, x).dtype == np.float64
    assert overdub.overdub(Plain(pass_=bit32pass), lambda v: v * 0.5 + 1.0, x).dtype == np.float32


# ------------------------------------------------------------------------------ examples
def test_example_tools_print():
    out = run_example("tools_print.py")
    assert out.startswith("every call:\n" + HYPOT_LOG + "only this module's functions, with results:\n")
    assert out.endswith("hypot(3.0, 4.0)\n  square(3.0)\n  -> 9.0\n  square(4.0)\n  -> 16.0\n-> 5.0\n")


def test_example_tools_count():
    out = run_example("tools_count.py")
    assert "calls with an int or str argument: 11 {'range': 1, 'str': 10}" in out
    assert "poly(2.0) = 35.0 in 8 calls: {'add': 3, 'mul': 2, 'poly': 1, 'pow': 2}" in out


def test_example_tools_trace(tmp_path):
    out = run_example("tools_trace.py", str(tmp_path / "x.dot"))
    assert "hypot2(3, 4) = 25\n" + HYPOT2_TREE + "\n" in out
    assert (tmp_path / "x.dot").exists() and (tmp_path / "x.svg").exists()


def test_example_hmlstm_gpu():
    out = run_example("hmlstm_gpu.py", "5000")
    assert "GPUCtx runs on: " in out
    assert "substituted calls: {'exp': 3, 'tanh': 2, 'where': 3}" in out
    assert "max |difference| from plain NumPy: c 0, h 0" in out or "CuPy" in out
