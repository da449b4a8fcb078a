"""The Graphviz picture of a trace fits a screen, whatever the size of the call.

Callers sit left of callees (``rankdir=LR``, one column per depth), repeated sibling
calls become one ``name ×N`` box, and depth, width, box count and label length are
bounded.  When Graphviz's ``dot`` is installed, the laid-out picture is measured;
otherwise its width is bounded from the DOT text: columns x widest label.
"""
import json
import re
import shutil
import subprocess

import pytest

import overdub
from capstan.trace import DOT_DEPTH, TraceCtx

SCREEN_PT = 1920 / 96 * 72  # a 1920-pixel-wide screen at 96 dpi, in points
CHAR_PT = 0.6 * 10  # a monospace character at fontsize 10
BOX_MARGIN_PT, RANKSEP_PT = 2 * 0.06 * 72 + 2, 0.25 * 72


def square(x):
    return x * x


def hypot2(a, b):
    return square(a) + square(b)


def squares(n):
    return sum([square(i) for i in range(n)])


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def traced(f, *args):
    ctx = TraceCtx()
    overdub.overdub(ctx, f, *args)
    return ctx


def parse(dot):
    """``{box: [label lines]}`` and ``[(caller, callee)]`` of DOT text."""
    labels = {int(n): re.sub(r'\\(.)', r'\1', text.replace("\\n", "\0")).split("\0")
              for n, text in re.findall(r'^  n(\d+) \[label="((?:[^"\\]|\\.)*)"\];$', dot, re.M)}
    edges = [(int(a), int(b)) for a, b in re.findall(r"^  n(\d+) -> n(\d+);$", dot, re.M)]
    return labels, edges


def columns(labels, edges):
    """Each box's column: its depth below a top box."""
    parent = {b: a for a, b in edges}
    depth = {}
    for box in labels:
        d, at = 0, box
        while at in parent:
            d, at = d + 1, parent[at]
        depth[box] = d
    return depth


def estimated_width(dot):
    labels, edges = parse(dot)
    depth = columns(labels, edges)
    widest = {}
    for box, lines in labels.items():
        widest[depth[box]] = max(widest.get(depth[box], 0), max(len(t) for t in lines))
    return sum(w * CHAR_PT + BOX_MARGIN_PT for w in widest.values()) + RANKSEP_PT * (len(widest) - 1)


def represented(labels):
    """How many calls the boxes stand for: 1 per plain box, N per ``×N`` box or
    ``… N more calls`` box, plus each ``+N calls below``."""
    total = 0
    for lines in labels.values():
        head = lines[0]
        more = re.fullmatch(r"… (\d+) more calls", head)
        group = re.search(r" ×(\d+)$", head)
        total += int(more.group(1)) if more else int(group.group(1)) if group else 1
        total += sum(int(m.group(1)) for t in lines[1:] for m in [re.fullmatch(r"\+(\d+) calls below", t)] if m)
    return total


@pytest.fixture(scope="module")
def real_calls():
    """A 21-call tree (``json.dumps`` of a small dict) and a tree of more than 500 calls."""
    small = traced(json.dumps, {"a": [1, 2.5, None], "b": "x"})
    large = traced(fib, 10)
    assert len(list(small.walk())) == 21 and len(list(large.walk())) > 500
    return small, large


def test_pictures_of_real_calls_fit_a_screen(real_calls):
    for ctx in real_calls:
        dot = ctx.to_dot()
        labels, edges = parse(dot)
        assert "  rankdir=LR;" in dot.splitlines()
        assert len(labels) <= 30 and len(edges) == len(labels) - 1  # one top call: a tree
        assert max(columns(labels, edges).values()) <= DOT_DEPTH
        assert all(len(t) <= 32 for lines in labels.values() for t in lines)
        assert represented(labels) == len(list(ctx.walk()))  # a summary that loses no call
        assert estimated_width(dot) <= SCREEN_PT


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graphviz_lays_them_out_within_a_screen_width(real_calls):
    for ctx in real_calls:
        plain = subprocess.run([shutil.which("dot"), "-Tplain"], input=ctx.to_dot(), capture_output=True,
                               text=True, check=True, timeout=60).stdout
        scale, width, height = (float(v) for v in plain.split()[1:4])
        assert width * scale * 96 <= 1920, plain.splitlines()[0]


def test_repeated_siblings_become_one_box_with_their_callees_merged():
    labels, edges = parse(traced(squares, 5).to_dot())
    names = {box: lines[0] for box, lines in labels.items()}
    box = next(b for b, t in names.items() if t == "square ×5")
    assert [names[b] for a, b in edges if a == box] == ["mul ×5"]
    two = parse(traced(hypot2, 3, 4).to_dot())[0]  # fewer than ``collapse``: each call shown
    assert [lines[0] for lines in two.values()] == ["hypot2(3, 4) -> 25", "square(3) -> 9", "square(4) -> 16",
                                                   "add(9, 16) -> 25", "mul(3, 3) -> 9", "mul(4, 4) -> 16"]


def test_depth_width_box_and_label_limits():
    ctx = traced(hypot2, 3, 4)
    assert ctx.summary(0) == [(["hypot2(3, 4) -> 25", "+5 calls below"], None, 0)]
    assert [b[0] for b in ctx.summary(max_children=2)] == [
        ["hypot2(3, 4) -> 25"], ["square(3) -> 9"], ["… 3 more calls"], ["mul(3, 3) -> 9"]]
    assert [b[0] for b in ctx.summary(max_nodes=3)] == [
        ["hypot2(3, 4) -> 25", "+5 calls below"]]
    assert ctx.summary(label=10)[0][0] == ["hypot2(3,…"]
    everything = ctx.summary(None, max_children=100, collapse=100, max_nodes=100, label=100)
    assert len(everything) == 6
    with pytest.raises(ValueError, match="max_children"):
        ctx.to_dot(max_children=1)


def test_save_writes_the_summary(tmp_path):
    ctx = traced(fib, 8)
    dot, svg = ctx.save(str(tmp_path / "fib.dot"))
    with open(dot, encoding="utf-8") as fh:
        assert fh.read() == ctx.to_dot()
    with open(svg, encoding="utf-8") as fh:
        picture = fh.read()
    if shutil.which("dot") is None:  # the self-made drawing: one row per box
        assert picture == ctx.to_svg() and picture.count("<rect") == len(ctx.summary())
        width = int(re.search(r'<svg [^>]*width="(\d+)"', picture).group(1))
        assert width <= 1920
