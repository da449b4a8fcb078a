"""Real standard-library programs, run plainly and inside contexts: identical output."""
import ast
import collections
import copy
import csv
import dataclasses
import difflib
import fractions
import functools
import heapq
import html.parser
import io
import itertools
import json
import pprint
import re
import shlex
import statistics
import string
import textwrap
import urllib.parse
from decimal import Decimal, localcontext

import pytest

import overdub

NESTED = {"name": "widget", "sizes": [1, 2.5, None, True], "meta": {"tags": ["a", "b"],
          "nested": {"deep": [{"k": i, "v": str(i) * i} for i in range(4)]}}}
TEXT = ("The quick brown fox jumps over the lazy dog. " * 6).strip()


def json_round_trip():
    s = json.dumps(NESTED, indent=2, sort_keys=True)
    compact = json.dumps(NESTED, separators=(",", ":"))
    return s, compact, json.loads(s) == NESTED, json.loads('{"a": [1, 2, {"b": null}]}')


def json_custom_encoder():
    class Enc(json.JSONEncoder):
        def default(self, o):
            if isinstance(o, set):
                return sorted(o)
            return super().default(o)
    return json.dumps({"s": {3, 1, 2}}, cls=Enc), json.loads("[1.5, 2]", parse_float=Decimal)


def re_with_callbacks():
    pattern = re.compile(r"(?P<word>\w+)@(?P<num>\d+)")
    text = "alpha@1 beta@22 gamma@333"
    return (pattern.sub(lambda m: "%s#%d" % (m["word"].upper(), int(m["num"]) * 2), text),
            [m.groupdict() for m in pattern.finditer(text)],
            re.split(r"[@ ]", text), re.findall(r"\d+", text), re.fullmatch(r"a.*3", text) is not None)


def textwrap_program():
    return (textwrap.fill(TEXT, width=30), textwrap.shorten(TEXT, 40),
            textwrap.dedent("    a\n      b\n"), textwrap.indent("x\ny", "> "))


def difflib_program():
    a = ["one", "two", "three", "four"]
    b = ["one", "2", "three", "four", "five"]
    return (list(difflib.unified_diff(a, b, lineterm="")),
            difflib.SequenceMatcher(None, "abcd", "bcde").ratio(),
            difflib.get_close_matches("appel", ["ape", "apple", "peach"]))


def fractions_program():
    total = sum(fractions.Fraction(1, n) for n in range(1, 8))
    return total, fractions.Fraction("3.1415").limit_denominator(100), float(total)


def statistics_program():
    data = [2.5, 3.1, 4.7, 1.2, 9.9, 3.3]
    return (statistics.mean(data), statistics.median(data), statistics.stdev(data),
            statistics.mode([1, 2, 2, 3]), statistics.quantiles(data, n=4))


def heapq_program():
    heap = []
    for v in [5, 1, 8, 3, 2]:
        heapq.heappush(heap, v)
    return ([heapq.heappop(heap) for _ in range(3)], heapq.nlargest(2, [4, 9, 1], key=lambda x: -x),
            list(heapq.merge([1, 4], [2, 3])))


def collections_program():
    c = collections.Counter(TEXT.split())
    dq = collections.deque(range(5), maxlen=4)
    dq.rotate(1)
    od = collections.OrderedDict(a=1, b=2)
    od.move_to_end("a")
    dd = collections.defaultdict(int)
    for w in TEXT.split():
        dd[len(w)] += 1
    chain = collections.ChainMap({"x": 1}, {"x": 2, "y": 3})
    return c.most_common(3), list(dq), list(od), dict(dd), chain["x"], chain["y"]


def string_program():
    t = string.Template("$who likes $what")
    return (t.substitute(who="tim", what="kung pao"), t.safe_substitute(who="x"),
            string.capwords("hello big world"), string.Formatter().format("{0}-{x}", 1, x=2))


def literal_eval_program():
    return ast.literal_eval("{'a': [1, 2.5, (3, 'x')], 'b': None, 'c': -4}"), ast.dump(ast.parse("x + 1"))


class TagCollector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.events = []

    def handle_starttag(self, tag, attrs):
        self.events.append(("start", tag, attrs))

    def handle_endtag(self, tag):
        self.events.append(("end", tag))

    def handle_data(self, data):
        if data.strip():
            self.events.append(("data", data.strip()))


def html_program():
    p = TagCollector()
    p.feed('<div class="x"><p>Hello <b>world</b></p><img src="a.png"/></div>')
    p.close()
    return p.events


def csv_program():
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerows([["a", "b"], [1, "x,y"], [2, 'q"uote']])
    rows = list(csv.reader(io.StringIO(buf.getvalue())))
    dict_rows = list(csv.DictReader(io.StringIO("k,v\n1,2\n3,4\n")))
    return buf.getvalue(), rows, dict_rows


@dataclasses.dataclass
class Node:
    name: str
    children: list = dataclasses.field(default_factory=list)


def deepcopy_program():
    tree = Node("root", [Node("a"), Node("b", [Node("c")])])
    clone = copy.deepcopy(tree)
    clone.children[1].children[0].name = "changed"
    return tree, clone, dataclasses.asdict(clone)


def pprint_program():
    return pprint.pformat(NESTED, width=40), pprint.pformat(list(range(30)), compact=True)


def shlex_program():
    return shlex.split('ls -l "my file" --opt=\'a b\''), shlex.quote("it's"), shlex.join(["a b", "c"])


def urllib_program():
    u = urllib.parse.urlparse("https://user@example.com:8080/p/a/t/h?q=1&r=two#frag")
    return (u, urllib.parse.parse_qs(u.query), urllib.parse.urlencode({"a": "b c", "d": 1}),
            urllib.parse.quote("a b/c"), urllib.parse.urljoin("http://x.org/a/b", "../c"))


def functools_itertools_program():
    @functools.lru_cache(maxsize=32)
    def ways(n):
        return 1 if n <= 1 else ways(n - 1) + ways(n - 2)

    @functools.singledispatch
    def describe(x):
        return "thing"

    @describe.register
    def _(x: int):
        return "int"

    return (ways(30), describe(1), describe("s"),
            list(itertools.permutations("abc", 2))[:4], list(itertools.combinations(range(4), 2)),
            functools.reduce(lambda a, b: a * b, range(1, 8)), list(itertools.pairwise("abcd")))


def decimal_program():
    with localcontext() as ctx:
        ctx.prec = 6
        return Decimal(1) / Decimal(7), Decimal("2").sqrt(), Decimal("1.005").quantize(Decimal("0.01"))


PROGRAMS = [json_round_trip, json_custom_encoder, re_with_callbacks, textwrap_program,
            difflib_program, fractions_program, statistics_program, heapq_program,
            collections_program, string_program, literal_eval_program, html_program, csv_program,
            deepcopy_program, pprint_program, shlex_program, urllib_program,
            functools_itertools_program, decimal_program]


class Hooked(overdub.Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata = (self.metadata or 0) + 1


class HookedPost(Hooked):
    def posthook(self, output, f, /, *args, **kwargs):
        pass


class Wild(overdub.Context):
    @overdub.primitive()
    def every(self, f, /, *args, **kwargs):
        return overdub.recurse(self, f, *args, **kwargs)


@pytest.mark.parametrize("ctx_type", [Hooked, HookedPost, Wild])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__ for p in PROGRAMS])
def test_program_output_identical(program, ctx_type):
    ctx = ctx_type()
    assert overdub.overdub(ctx, program) == program()
    if ctx_type is not Wild:
        assert ctx.metadata > 10  # the program really ran routed
