"""Every ```python block of README.md and docs/*.md runs, and the values its comments
state are the values it computes.

A block runs on its own (setup it needs is in the block), statement by statement in a
fresh namespace, compiled from a file holding exactly its text.  A top-level
expression statement with a trailing comment that starts with a Python literal --
``expr  # value``, ``expr  # value: why`` or ``expr  # value (why)`` -- is checked
(and ``expr  # TypeError: why`` must raise that exception):
numbers with a relative tolerance of 1e-9, ``12.34...`` as "begins 12.34", lists and
tuples element by element (NumPy arrays against lists too), dicts by key.  Comments
that do not start with a literal (``# 12 + cos(2)``) are prose and are not checked.

Blocks of one file run in one child interpreter, because documentation registers rules
(``capstan.defderiv(...)``) that must not leak into the rest of the test session.  A
block preceded by ``<!-- no-run -->`` is skipped: reserved for code that cannot run on
this machine (a GPU), and each such block is listed by ``test_skipped_blocks_are_few``.
"""
import json
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
NO_RUN = "<!-- no-run -->"


def blocks(path):
    """``(first line number, source, skipped)`` of each ```python block of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            skipped = j >= 0 and lines[j].strip() == NO_RUN
            k = i + 1
            while k < len(lines) and lines[k].strip() != "```":
                k += 1
            found.append((i + 2, textwrap.dedent("\n".join(lines[i + 1:k]) + "\n"), skipped))
            i = k
        i += 1
    return found


CASES = [(p, n, src) for p in DOC_FILES for n, src, skipped in blocks(p) if not skipped]
SKIPPED = [(p.name, n) for p in DOC_FILES for n, src, skipped in blocks(p) if skipped]

# The child: runs each block and prints one JSON line per block.
RUNNER = r'''
import ast, io, json, math, re, sys, tokenize, traceback

import numpy as np


class Begins:
    """``12.34...`` in a comment: a number whose decimal expansion begins 12.34 (truncated)."""

    def __init__(self, text):
        self.text = text

    def matches(self, got):
        x = float(self.text)
        digits = len(self.text.split(".")[1]) if "." in self.text else 0
        if not isinstance(got, (int, float, np.number)) or (float(got) < 0) != (x < 0):
            return False
        scale = 10 ** digits  # the shown digits are the value's, truncated
        return math.floor(abs(float(got)) * scale + 1e-9) == round(abs(x) * scale)

    def __repr__(self):
        return self.text + "..."


def literal(text):
    """The literal a comment starts with, or ``None`` (wrapped in a list) when it has none."""
    text = text.strip()
    candidates = [text]
    for sep in (": ", " (", "; ", " -- ", ", "):
        if sep in text:
            candidates.append(text[:text.index(sep)])
    for c in candidates:
        source = re.sub(r"(-?\d+\.\d+)\.\.\.", r'Begins("\1")', c.strip())
        try:
            tree = ast.parse(source, mode="eval")
        except SyntaxError:
            continue
        if not _is_literal(tree.body):
            continue
        return [eval(compile(tree, "<comment>", "eval"), {"Begins": Begins, "__builtins__": {}})]
    return None


def _is_literal(node):
    if isinstance(node, ast.Constant):
        return node.value is not Ellipsis
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k) for k in node.keys) and all(_is_literal(v) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_literal(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):  # complex: 1+2j
        return _is_literal(node.left) and _is_literal(node.right)
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "Begins"
    return False


def same(got, want):
    if isinstance(want, Begins):
        return want.matches(got)
    if isinstance(want, bool):
        return isinstance(got, (bool, np.bool_)) and bool(got) == want
    if want is None or isinstance(want, str):
        return got == want
    if isinstance(want, (int, float, complex)):
        if isinstance(got, np.ndarray) and got.shape == ():
            got = got[()]
        if not isinstance(got, (int, float, complex, np.number)) or isinstance(got, bool):
            return False
        if isinstance(want, int) and isinstance(got, (int, np.integer)):
            return got == want
        return abs(complex(got) - complex(want)) <= 1e-9 * max(1.0, abs(complex(want)))
    if isinstance(want, dict):
        return isinstance(got, dict) and set(got) == set(want) and all(same(got[k], want[k]) for k in want)
    if isinstance(want, (list, tuple)):
        if isinstance(got, np.ndarray):
            got = got.tolist()
        return (isinstance(got, type(want)) and len(got) == len(want)
                and all(same(g, w) for g, w in zip(got, want)))
    return got == want


def comments(source):
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string[1:]
    return out


def run(source, filename):
    tree = ast.parse(source, filename)
    notes = comments(source)
    namespace = {"__name__": "__main__"}
    checked = []
    for stmt in tree.body:
        note = notes.get(stmt.end_lineno)
        raises = re.match(r"\s*([A-Z]\w*(?:Error|Exception))\b", note or "")
        if raises and isinstance(stmt, ast.Expr):
            try:
                eval(compile(ast.Expression(stmt.value), filename, "eval"), namespace)
            except Exception as exc:
                if raises.group(1) not in [c.__name__ for c in type(exc).__mro__]:
                    raise
                checked.append(source.splitlines()[stmt.lineno - 1].strip())
                continue
            raise AssertionError("line %d: the comment says %s, but nothing was raised"
                                 % (stmt.lineno, raises.group(1)))
        want = literal(note) if isinstance(stmt, ast.Expr) and note is not None else None
        if want is None:
            exec(compile(ast.Module([stmt], []), filename, "exec"), namespace)
            continue
        got = eval(compile(ast.Expression(stmt.value), filename, "eval"), namespace)
        line = source.splitlines()[stmt.lineno - 1].strip()
        if not same(got, want[0]):
            raise AssertionError("line %d: %s\n  the comment says %r, the code gives %r"
                                 % (stmt.lineno, line, want[0], got))
        checked.append(line)
    return checked


for filename, source in (json.load(sys.stdin) if __name__ == "__main__" else ()):
    with open(filename, "w", encoding="utf-8") as f:
        f.write(source)
    try:
        checked = run(source, filename)
        result = {"ok": True, "checked": checked}
    except BaseException:
        result = {"ok": False, "error": traceback.format_exc(limit=6)}
    sys.stdout.flush()
    print("\n@@RESULT@@" + json.dumps(result), flush=True)
'''

_results = {}


def results_of(path, tmp_dir):
    """Run every block of ``path`` in one child interpreter (once per test session)."""
    if path not in _results:
        todo = [(str(tmp_dir / ("%s_line%d.py" % (path.stem.replace("-", "_"), n))), src)
                for p, n, src in CASES if p == path]
        proc = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(todo), capture_output=True,
                              text=True, cwd=str(tmp_dir), timeout=600,
                              env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
        found = [json.loads(part.splitlines()[0]) for part in proc.stdout.split("@@RESULT@@")[1:]]
        if len(found) != len(todo):
            raise AssertionError("the child running %s's blocks stopped early:\n%s\n%s"
                                 % (path.name, proc.stdout[-3000:], proc.stderr[-3000:]))
        _results[path] = dict(zip([n for p, n, src in CASES if p == path], found))
    return _results[path]


@pytest.fixture(scope="module")
def tmp_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("docblocks")


@pytest.mark.parametrize("path, line, source", CASES,
                         ids=["%s:%d" % (p.relative_to(ROOT), n) for p, n, _ in CASES])
def test_block_runs_and_its_comments_hold(path, line, source, tmp_dir):
    result = results_of(path, tmp_dir)[line]
    assert result["ok"], "%s, block at line %d:\n%s" % (path.name, line, result["error"])


def test_blocks_were_found_and_values_checked(tmp_dir):
    assert len(CASES) >= 20
    checked = sum(len(results_of(p, tmp_dir)[n]["checked"]) for p, n, _ in CASES
                  if results_of(p, tmp_dir)[n]["ok"])
    assert checked >= 30


def test_skipped_blocks_are_few():
    # Only code that cannot run on a machine without a GPU may be marked no-run.
    assert len(SKIPPED) <= 2, SKIPPED


def test_readme_links_stay_in_the_repository():
    for path in DOC_FILES:
        prose = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
        prose = re.sub(r"`[^`\n]*`", "", prose)
        for target in re.findall(r"\[[^\]\n]*\]\(([^)\s]+)\)", prose):
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            resolved = (path.parent / target.split("#")[0]).resolve()
            assert resolved.is_relative_to(ROOT) and resolved.exists(), (path.name, target)


def test_readme_first_commands_are_the_ones_ci_reads():
    fences = re.findall(r"```\n(.*?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert fences[:2] == ['python3 -m pip install . && python3 examples/demo.py',
                          'python3 -m pip install ".[test]" && python3 -m pytest -q -n auto']


def test_the_checker_catches_wrong_comments():
    runner = {"__name__": "docs_runner"}
    exec(RUNNER, runner)
    run = runner["run"]
    assert run("x = 2.0\nx * 3  # 6.0\nx  # not a literal\n", "<ok>") == ["x * 3  # 6.0"]
    assert run("[0.1 + 0.2, 1e-20]  # [0.3, 0.0]: approximately\n", "<ok>") != []
    assert run("2 / 3  # 0.6666...\n", "<ok>") != []
    assert run("int('x')  # ValueError: not a number\n", "<ok>") != []
    for wrong in ("2.0 * 3  # 6.5", "(1.0, 2.0)  # [1.0, 2.0]", "{'a': 1.0}  # {'a': 2.0}",
                  "2 / 3  # 0.67...", "True  # False", "1 + 1  # ValueError: no", "[1.0]  # [1.0, 2.0]"):
        with pytest.raises(AssertionError):
            run(wrong + "\n", "<wrong>")
