"""``TraceCtx``: record the nested call tree of a run (Cassette's nested trace) and show
it as indented text, Graphviz DOT or SVG.

    ctx = TraceCtx()
    overdub.overdub(ctx, hypot2, 3, 4)
    print(ctx.render())            # hypot2(3, 4) -> 25 / square(3) -> 9 / mul(3, 3) -> 9 ...
    ctx.save("trace.dot")          # trace.dot, and trace.svg (Graphviz's, or a simple one)

Command line: ``python -m capstan.trace module:function ARG...`` prints the tree of
one call; each ARG is a Python literal (``ast.literal_eval``), else a string.

Recording is a wildcard primitive around ``overdub.recurse`` rather than a
prehook/posthook pair: overdub calls no posthook for a call that raised, and the
``try/finally`` keeps the tree right (and records the exception) when one does.
"""
import argparse
import ast
import html
import importlib
import json
import os
import shutil
import subprocess
import sys

import overdub
from overdub import Context, primitive

from .printing import _member, call_text, describe, name_of

__all__ = ["Call", "TraceCtx"]


class Call:
    """One recorded call: ``f``, ``args``, ``kwargs``, ``result`` (or ``error``, the
    exception it raised) and ``children``, the calls made inside it, in order.
    Arguments and results are the objects themselves (not copies)."""

    __slots__ = ("args", "children", "error", "f", "kwargs", "result")

    def __init__(self, f, args, kwargs):
        self.f, self.args, self.kwargs = f, args, kwargs
        self.result = self.error = None
        self.children = []

    @property
    def name(self):
        return name_of(self.f)

    def text(self, limit=60):
        """``name(args) -> result`` (``!! Error(...)`` when it raised)."""
        head = call_text(self.f, self.args, self.kwargs, limit)
        if self.error is not None:
            return head + " !! " + describe(self.error, limit)
        return head + " -> " + describe(self.result, limit)

    def walk(self, depth=0):
        """``(depth, call)`` for this call and every call below it, depth first."""
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)

    def __repr__(self):
        return "<Call %s, %d children>" % (self.text(40), len(self.children))


class TraceCtx(Context):
    """Record every call made inside the context as a tree of :class:`Call`.

    ``ctx.calls`` holds the top-level calls (one per ``overdub`` run, added up over
    runs).  Options (keyword-only; ``metadata`` stays free for the user): ``hide``,
    functions whose calls are not recorded (their inner calls go to the parent;
    e.g. ``hide=(getattr,)``), and ``limit``, the length at which argument texts
    are cut when rendering.
    """

    def __init__(self, metadata=None, pass_=None, *, hide=(), limit=60):
        super().__init__(metadata, pass_)
        self.calls = []
        self.hide = tuple(hide)
        self.limit = limit
        self._open = []

    @primitive()
    def _record(self, f, /, *args, **kwargs):
        if self.hide and _member(f, self.hide):
            return overdub.recurse(self, f, *args, **kwargs)
        node = Call(f, args, kwargs)
        (self._open[-1].children if self._open else self.calls).append(node)
        self._open.append(node)
        try:
            node.result = overdub.recurse(self, f, *args, **kwargs)
            return node.result
        except BaseException as exc:
            node.error = exc
            raise
        finally:
            self._open.pop()

    def walk(self):
        """``(depth, call)`` for every recorded call, depth first."""
        for call in self.calls:
            yield from call.walk()

    def render(self, max_depth=None, indent="  "):
        """The tree as indented text, one call per line (``max_depth``: deepest level shown)."""
        return "\n".join(indent * d + c.text(self.limit) for d, c in self.walk()
                         if max_depth is None or d <= max_depth)

    __str__ = render

    def to_dot(self, max_depth=None):
        """The tree as Graphviz DOT text: one box per call, edges from caller to callee."""
        lines = ["digraph trace {", '  node [shape=box, fontname="monospace"];']
        ids, n = {}, 0
        parents = []
        for d, c in self.walk():
            if max_depth is not None and d > max_depth:
                continue
            ids[id(c)] = "n%d" % n
            n += 1
            lines.append('  %s [label="%s"];' % (ids[id(c)], _dot_escape(c.text(self.limit))))
            del parents[d:]
            if parents:
                lines.append("  %s -> %s;" % (ids[id(parents[-1])], ids[id(c)]))
            parents.append(c)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_svg(self, max_depth=None):
        """A simple self-made SVG of the tree (an indented list of boxes joined by
        elbow lines), for when Graphviz is not installed."""
        rows = [(d, c.text(self.limit)) for d, c in self.walk() if max_depth is None or d <= max_depth]
        step, width_ch, h = 24, 7.2, 18
        width = int(max([d * 24 + len(t) * width_ch + 20 for d, t in rows] or [100]))
        out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" '
               'font-size="12">' % (width, step * len(rows) + 10)]
        last_at = {}
        for i, (d, text) in enumerate(rows):
            x, y = 5 + d * 24, 5 + i * step
            if d - 1 in last_at:
                px, py = last_at[d - 1]
                out.append('<path d="M%d %d V%d H%d" fill="none" stroke="#888"/>'
                           % (px + 8, py + h, y + h // 2, x))
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="#eef" stroke="#446"/>'
                       % (x, y, len(text) * width_ch + 8, h))
            out.append('<text x="%d" y="%d">%s</text>' % (x + 4, y + 13, html.escape(text)))
            last_at[d] = (x, y)
            for deeper in [k for k in last_at if k > d]:
                del last_at[deeper]
        out.append("</svg>")
        return "\n".join(out) + "\n"

    def save(self, path, max_depth=None):
        """Write the DOT text to ``path`` and an SVG beside it (``.svg``): Graphviz's
        when the ``dot`` executable exists, else :meth:`to_svg`'s.  Returns the two paths."""
        with open(path, "w") as fh:
            fh.write(self.to_dot(max_depth))
        svg = os.path.splitext(path)[0] + ".svg"
        dot = shutil.which("dot")
        if dot is not None:
            subprocess.run([dot, "-Tsvg", path, "-o", svg], check=True)
        else:
            with open(svg, "w") as fh:
                fh.write(self.to_svg(max_depth))
        return path, svg

    def clear(self):
        """Forget the recorded calls."""
        self.calls.clear()


def _dot_escape(text):
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _parse_arg(text):
    """A command-line argument as a Python literal (``3.0``, ``[1, 2]``, ``None``), else as
    JSON (``null``, ``true``, ``{"a": 1}``), else as the string itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        return json.loads(text)
    except ValueError:
        return text


def _load(target):
    """``package.module:function`` (or ``module:Class.method``) -> the callable."""
    modname, sep, attr = target.partition(":")
    if not sep or not attr:
        raise SystemExit("capstan.trace: expected module:function, got %r" % target)
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    obj = importlib.import_module(modname)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def main(argv=None):
    """``python -m capstan.trace [--depth N] [--dot FILE] module:function ARG...``"""
    parser = argparse.ArgumentParser(prog="python -m capstan.trace",
                                     description="Print the call tree of module:function(*ARGS).")
    parser.add_argument("--depth", type=int, default=None, help="deepest level shown")
    parser.add_argument("--dot", metavar="FILE", help="also write Graphviz DOT here (and an SVG beside it)")
    parser.add_argument("--hide-getattr", action="store_true", help="do not record attribute loads")
    parser.add_argument("target", help="module:function")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments, as Python literals")
    ns = parser.parse_args(argv)
    f = _load(ns.target)
    ctx = TraceCtx(hide=(getattr,) if ns.hide_getattr else ())
    try:
        overdub.overdub(ctx, f, *[_parse_arg(a) for a in ns.args])
    finally:
        print(ctx.render(ns.depth))
        if ns.dot:
            print("wrote %s and %s" % ctx.save(ns.dot, ns.depth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
