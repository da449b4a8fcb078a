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
import collections
import html
import importlib
import json
import os
import shutil
import subprocess
import sys
from typing import Any, Callable, Iterator, Sequence

import overdub
from overdub import Context, primitive

from .printing import _member, call_text, describe, name_of

__all__ = ["Call", "TraceCtx"]

#: the deepest level ``to_dot`` draws unless told otherwise
DOT_DEPTH = 5

#: a box of :meth:`TraceCtx.summary`: its text lines, its caller's box, its depth
Box = tuple[list[str], int | None, int]


class Call:
    """One recorded call: ``f``, ``args``, ``kwargs``, ``result`` (or ``error``, the
    exception it raised) and ``children``, the calls made inside it, in order.
    Arguments and results are the objects themselves (not copies)."""

    __slots__ = ("args", "children", "error", "f", "kwargs", "result")

    def __init__(self, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.f, self.args, self.kwargs = f, args, kwargs
        self.result: Any = None
        self.error: BaseException | None = None
        self.children: list[Call] = []

    @property
    def name(self) -> str:
        return name_of(self.f)

    def text(self, limit: int = 60) -> str:
        """``name(args) -> result`` (``!! Error(...)`` when it raised)."""
        head = call_text(self.f, self.args, self.kwargs, limit)
        if self.error is not None:
            return head + " !! " + describe(self.error, limit)
        return head + " -> " + describe(self.result, limit)

    def walk(self, depth: int = 0) -> Iterator[tuple[int, "Call"]]:
        """``(depth, call)`` for this call and every call below it, depth first."""
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)

    def __repr__(self) -> str:
        return "<Call %s, %d children>" % (self.text(40), len(self.children))


class TraceCtx(Context):
    """Record every call made inside the context as a tree of :class:`Call`.

    ``ctx.calls`` holds the top-level calls (one per ``overdub`` run, added up over
    runs).  Options (keyword-only; ``metadata`` stays free for the user): ``hide``,
    functions whose calls are not recorded (their inner calls go to the parent;
    e.g. ``hide=(getattr,)``), and ``limit``, the length at which argument texts
    are cut when rendering.
    """

    def __init__(self, metadata: Any = None, pass_: Callable[..., Any] | None = None, *,
                 hide: Sequence[Any] = (), limit: int = 60) -> None:
        super().__init__(metadata, pass_)
        self.calls: list[Call] = []
        self.hide = tuple(hide)
        self.limit = limit
        self._open: list[Call] = []

    @primitive()
    def _record(self, f: Any, /, *args: Any, **kwargs: Any) -> Any:
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

    def walk(self) -> Iterator[tuple[int, Call]]:
        """``(depth, call)`` for every recorded call, depth first."""
        for call in self.calls:
            yield from call.walk()

    def render(self, max_depth: int | None = None, indent: str = "  ") -> str:
        """The tree as indented text, one call per line (``max_depth``: deepest level shown)."""
        return "\n".join(indent * d + c.text(self.limit) for d, c in self.walk()
                         if max_depth is None or d <= max_depth)

    __str__ = render

    def summary(self, max_depth: int | None = DOT_DEPTH, *, max_children: int = 8, collapse: int = 3,
                max_nodes: int = 30, label: int = 32) -> list[Box]:
        """The tree as a picture can show it: a list of boxes ``(lines, parent, depth)``
        (``parent``: the index of the caller's box, None at the top), callers first.

        A real call makes thousands of calls, so the picture is a summary: ``collapse``
        or more calls of one function among siblings become one box ``name ×N`` (whose
        callees are all of theirs, merged the same way); a caller shows at most
        ``max_children`` boxes (the rest become ``… N more calls``, N counting
        the calls below them too); boxes stop at depth
        ``max_depth`` (None: no limit) and at about ``max_nodes`` (a box whose callees
        are not drawn says ``+N calls below``); lines are cut at ``label`` characters.
        ``render()`` and ``walk()`` still give every call."""
        if max_children < 2 or collapse < 2 or max_nodes < 1 or label < 8:
            raise ValueError("TraceCtx.summary: max_children and collapse must be >= 2, "
                             "max_nodes >= 1 and label >= 8")
        boxes: list[Box] = []
        queue: collections.deque[tuple[int | None, list[Call], int]] = collections.deque([(None, self.calls, 0)])  # (caller's box, calls, depth)
        while queue:
            parent, calls, depth = queue.popleft()
            groups = _sibling_groups(calls, collapse)
            shown = groups if len(groups) <= max_children else groups[:max_children - 1]
            needed = len(shown) + (len(shown) < len(groups))
            if parent is not None and len(boxes) + needed > max_nodes:
                boxes[parent][0].append("+%d calls below" % _count(calls))
                continue
            for members in shown:
                first = members[0]
                text = first.text(self.limit) if len(members) == 1 else "%s ×%d" % (first.name, len(members))
                box = len(boxes)
                boxes.append(([_cut(text, label)], parent, depth))
                below = [c for m in members for c in m.children]
                if below and max_depth is not None and depth >= max_depth:
                    boxes[box][0].append("+%d calls below" % _count(below))
                elif below:
                    queue.append((box, below, depth + 1))
            if len(shown) < len(groups):
                rest = _count([c for members in groups[len(shown):] for c in members])
                boxes.append((["… %d more calls" % rest], parent, depth))
        return boxes

    def to_dot(self, max_depth: int | None = DOT_DEPTH, **layout: int) -> str:
        """The tree as Graphviz DOT text, laid out to fit a screen: callers left of
        callees (``rankdir=LR``: one column per depth, siblings stacked), one box per
        call or group of calls of :meth:`summary` (``layout``: its options)."""
        lines = ["digraph trace {", "  rankdir=LR;", "  ranksep=0.25;", "  nodesep=0.08;",
                 '  node [shape=box, fontname="monospace", fontsize=10, height=0.25, '
                 'margin="0.06,0.02"];']
        boxes = self.summary(max_depth, **layout)
        for i, (text, _, _) in enumerate(boxes):
            lines.append('  n%d [label="%s"];' % (i, "\\n".join(_dot_escape(t) for t in text)))
        lines += ["  n%d -> n%d;" % (parent, i) for i, (_, parent, _) in enumerate(boxes)
                  if parent is not None]
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_svg(self, max_depth: int | None = DOT_DEPTH, **layout: int) -> str:
        """A simple self-made SVG of :meth:`summary` (an indented list of boxes joined
        by elbow lines), for when Graphviz is not installed."""
        boxes = self.summary(max_depth, **layout)
        kids: collections.defaultdict[int | None, list[int]] = collections.defaultdict(list)
        for i, (_, parent, _) in enumerate(boxes):
            kids[parent].append(i)
        rows, stack = [], kids[None][::-1]
        while stack:  # depth first, callers above callees
            i = stack.pop()
            rows.append((boxes[i][2], "  ".join(boxes[i][0])))
            stack += kids[i][::-1]
        step, width_ch, h = 24, 7.2, 18
        width = int(max([d * 24 + len(t) * width_ch + 20 for d, t in rows] or [100]))
        out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" '
               'font-size="12">' % (width, step * len(rows) + 10)]
        last_at: dict[int, tuple[int, int]] = {}
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

    def save(self, path: str, max_depth: int | None = DOT_DEPTH, **layout: int) -> tuple[str, str]:
        """Write the DOT text to ``path`` and an SVG beside it (``.svg``): Graphviz's
        when the ``dot`` executable exists, else :meth:`to_svg`'s.  ``layout``: the
        options of :meth:`to_dot`.  Returns the two paths."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_dot(max_depth, **layout))
        svg = os.path.splitext(path)[0] + ".svg"
        dot = shutil.which("dot")
        if dot is not None:
            subprocess.run([dot, "-Tsvg", path, "-o", svg], check=True)
        else:
            with open(svg, "w", encoding="utf-8") as fh:
                fh.write(self.to_svg(max_depth, **layout))
        return path, svg

    def clear(self) -> None:
        """Forget the recorded calls."""
        self.calls.clear()


def _sibling_groups(calls: list[Call], collapse: int) -> list[list[Call]]:
    """``calls`` as a list of groups in order of first appearance: the calls of a
    function called ``collapse`` or more times among them form one group, every other
    call is a group of its own."""
    counts = collections.Counter(name_of(c.f) for c in calls)
    groups: list[list[Call]] = []
    by_name: dict[str, list[Call]] = {}
    for c in calls:
        name = name_of(c.f)
        if counts[name] < collapse:
            groups.append([c])
        elif name in by_name:
            by_name[name].append(c)
        else:
            by_name[name] = [c]
            groups.append(by_name[name])
    return groups


def _count(calls: list[Call]) -> int:
    """How many calls ``calls`` and the calls below them are."""
    return sum(1 for c in calls for _ in c.walk())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _parse_arg(text: str) -> Any:
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


def _load(target: str) -> Any:
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m capstan.trace [--depth N] [--dot FILE] module:function ARG...``"""
    parser = argparse.ArgumentParser(prog="python -m capstan.trace",
                                     description="Print the call tree of module:function(*ARGS).")
    parser.add_argument("--depth", type=int, default=None, help="deepest level shown")
    parser.add_argument("--dot", metavar="FILE", help="also write Graphviz DOT here (and an SVG beside it): "
                        "a summary that fits a screen, %d levels deep unless --depth says" % (DOT_DEPTH + 1))
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
            print("wrote %s and %s" % ctx.save(ns.dot, DOT_DEPTH if ns.depth is None else ns.depth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
