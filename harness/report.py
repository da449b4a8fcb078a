"""Comparing routed runs with the plain run, classifying divergences by cause, tables.

Both harnesses write the same records, one JSON object per line:
``{"run": "plain" | "plain-again" | CONTEXT, "id": TEST, "start": true}`` when a test
starts, then ``{"run", "id", "status", "exc", "msg", "tb", "t"}`` when it ends, and
``{"run", "done": true, "stopped": BOOL}`` when a run ends (stopped: its time budget ran
out before its last test).  A test that started and never ended
killed or hung its process.
"""
import re
import statistics

# How bad an outcome is: a test's outcome is the worst of its parts (sub-tests included).
RANK = {"pass": 0, "skip": 1, "xfail": 1, "xpass": 2, "fail": 3, "error": 4, "killed": 5}


def first_line(exc):
    """The first line of an exception's message, shortened."""
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def format_tb(exc):
    """An exception's traceback as text, its chained causes included: the start (where a
    chain begins with the exception that caused the rest) and the end are kept."""
    import traceback
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text if len(text) <= 7000 else text[:3000] + "\n[...]\n" + text[-4000:]


def base_run(run):
    """The context a run name stands for ("plain-again" is plain)."""
    return "plain" if run.startswith("plain") else run


def outcome(record):
    """What is compared: the status and, for failures and errors, the exception type."""
    if record is None:
        return "not run"
    if record["status"] in ("fail", "error", "killed"):
        return f"{record['status']} {record['exc']}"
    return record["status"]


def _by_run(records):
    """{run: {test: record}}, the runs that completed, and per run the tests that started
    without ending (each killed or hung its process; a restarted run can have several)."""
    runs, done, started = {}, set(), {}
    for rec in records:
        run = rec["run"]
        if rec.get("done"):
            if not rec.get("stopped"):
                done.add(run)
        elif rec.get("start"):
            started.setdefault(run, set()).add(rec["id"])
        elif "id" in rec:
            runs.setdefault(run, {})[rec["id"]] = rec
            started.get(run, set()).discard(rec["id"])
    return runs, done, started


def compare(records, contexts, ending):
    """Per-context comparison of one module's records with its plain run.

    A test whose two plain runs disagree is unstable and left out.  Returns a dict with
    the counts, the divergences (each classified by ``cause``) and the median slowdown of
    the test calls per context."""
    runs, done, started = _by_run(records)
    plain = runs.get("plain", {})
    again = runs.get("plain-again", {})
    unstable = sorted(t for t in plain if t in again and outcome(plain[t]) != outcome(again[t]))
    result = {"ending": ending, "tests": len(plain), "unstable": unstable,
              "skipped_module": next((r["skipped_module"] for r in records
                                      if "skipped_module" in r), None),
              "compared": {}, "slowdown": {}, "divergences": [], "complete": {}}
    for ctx in contexts:
        got = dict(runs.get(ctx, {}))
        for test in started.get(ctx, ()):  # in flight when the process died or was killed
            got[test] = {"status": "killed", "exc": "Killed", "msg": ending, "tb": "",
                         "id": test, "t": None}
        common = [t for t in plain if t in got and t not in unstable]
        result["compared"][ctx] = len(common)
        result["complete"][ctx] = ctx in done
        ratios = []
        for t in common:
            p, g = plain[t], got[t]
            if outcome(p) != outcome(g):
                result["divergences"].append({
                    "id": t, "context": ctx, "plain": outcome(p), "routed": outcome(g),
                    "msg": g.get("msg", ""), "detail": g.get("detail", ""), "tb": g.get("tb", ""),
                    "src": g.get("src", ""), "cause": classify(t, g)})
            elif p["status"] == "pass" and p.get("t") and g.get("t") and p["t"] > 2e-5:
                ratios.append(g["t"] / p["t"])
        result["slowdown"][ctx] = statistics.median(ratios) if ratios else None
    return result


# Causes, tried in order.  Each pattern is searched in the text of one field of the
# routed outcome: "what" is the exception type, its message (the doctest report included)
# and the traceback's last frame; "last" that frame alone; "tb" the whole traceback;
# "src" the source of the test method, which tells what the test observes (frames,
# tracing, weak references, code objects...).
FRAMES = "machinery frames visible: tracebacks, f_back, frames"
ROUTED_CODE = "routed code visible (gi_code, __code__, names)"
FIRST_USE = "first-use allocations (gc.get_objects)"
CAUSES = [
    ("hang, crash or per-test timeout", "what", r"^(Killed|HarnessTimeout):"),
    ("__code__ replaced during a run not seen (self-recursion)", "tb",
     r"__code__ = |_lazy_compile\("),
    ("recursion depth", "what", r"RecursionError|maximum recursion depth"),
    # the wildcard method (harness/contexts.py) is the frame a C callee reads as its
    # caller's: TypeVar() and namedtuple name its module, typing's protocol checks reject it
    (FRAMES, "what", r"harness[./]contexts|don't support issubclass\(\)"),
    ("keyword clashes", "what",
     r"multiple values for (keyword )?argument|unexpected keyword argument"),
    ("internal error in overdub", "last", r'/overdub/[^"]*", line \d+'),
    ("pickling of wrapped callbacks", "what", r"(?i)pickl|copyreg"),
    (ROUTED_CODE, "what",
     r"gi_code|cr_code|ag_code|__code__|\bco_\w+|code object|__name__|__qualname__"),
    ("machinery frames visible: settrace", "src",
     r"settrace|setprofile|f_trace|sys\.monitoring|gettrace"),
    ("machinery frames visible: warnings stacklevel", "src",
     r"assertWarns|catch_warnings|check_warnings|stacklevel"),
    (FRAMES, "src",
     r"f_back|_getframe|tb_next|tb_frame|tb_lineno|traceback|extract_stack|currentframe"
     r"|inspect\.stack|f_locals|f_lineno|__module__|getframeinfo"),
    (FRAMES, "what",
     r"dispatch\.py|/overdub/|_plain_call|default_fallback|'(call|meth|slot)'|__module__"),
    (FIRST_USE, "src", r"gc\.get_objects"),
    ("lifetimes (weakref, gc)", "src",
     r"weakref|gc\.collect|gc_collect|getrefcount|__del__|\bref\(|finaliz|gc\.get_referrers"),
    ("patched builtins", "src", r"\bbuiltins\b|__builtins__"),
    ("operator protocol (dunder set to None)", "src", r"__\w+__ = None"),
    (ROUTED_CODE, "src", r"gi_code|cr_code|ag_code|__code__|co_code|dis\.|gi_frame|cr_frame"),
]


def _last_frame(tb):
    """The traceback's last 'File ...' line and the source line after it."""
    frames = re.findall(r'  File "[^"]*", line \d+, in [^\n]*\n(?:    [^\n]*\n)?', tb)
    return frames[-1] if frames else ""


def classify(test, record):
    """The cause of one divergence, from the routed outcome and the test's source."""
    fields = {
        "what": f"{record.get('exc')}: {record.get('detail') or record.get('msg', '')}\n"
                f"{_last_frame(record.get('tb', ''))}",
        "last": _last_frame(record.get("tb", "")),
        "tb": record.get("tb", ""),
        "src": record.get("src", ""),
    }
    for name, field, pattern in CAUSES:
        if re.search(pattern, fields[field]):
            return name
    return "others"


def _fmt_slowdown(value):
    return "-" if value is None else f"{value:.1f}x"


def module_line(module, result, contexts):
    """One progress line for a module."""
    divs = {c: sum(d["context"] == c for d in result["divergences"]) for c in contexts}
    return (f"{module}: {result['tests']} tests, "
            + ", ".join(f"{c} {divs[c]}/{result['compared'][c]}" for c in contexts)
            + f" [{result['ending']}]")


def render(results, contexts, title):
    """A markdown table per module with totals, then the divergences grouped by cause."""
    slow = [c for c in contexts if c != "post"] or contexts
    head = (["module", "tests"] + [f"{c}: div/compared" for c in contexts]
            + [f"slowdown {c}" for c in slow] + ["notes"])
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    totals = {c: [0, 0] for c in contexts}
    total_tests = 0
    for module, r in results.items():
        divs = {c: sum(d["context"] == c for d in r["divergences"]) for c in contexts}
        notes = []
        if r["ending"] != "ok":
            notes.append(r["ending"].splitlines()[0][:60])
        if r["unstable"]:
            notes.append(f"{len(r['unstable'])} unstable")
        if r.get("skipped_module"):
            notes.append("module skipped")
        partial = [c for c in contexts if not r["complete"].get(c)]
        if partial and not r.get("skipped_module"):
            notes.append("budget: " + ",".join(partial))
        total_tests += r["tests"]
        for c in contexts:
            totals[c][0] += divs[c]
            totals[c][1] += r["compared"][c]
        lines.append("| " + " | ".join(
            [module, str(r["tests"])] + [f"{divs[c]}/{r['compared'][c]}" for c in contexts]
            + [_fmt_slowdown(r["slowdown"].get(c)) for c in slow] + ["; ".join(notes)]) + " |")
    medians = {}
    for c in slow:
        values = [r["slowdown"][c] for r in results.values() if r["slowdown"].get(c)]
        medians[c] = statistics.median(values) if values else None
    lines.append("| **total** | " + str(total_tests) + " | "
                 + " | ".join(f"**{totals[c][0]}**/{totals[c][1]}" for c in contexts) + " | "
                 + " | ".join(_fmt_slowdown(medians[c]) for c in slow) + " | |")
    lines += ["", "Divergences by cause:", ""]
    groups = {}
    for module, r in results.items():
        for d in r["divergences"]:
            groups.setdefault(d["cause"], []).append((module, d))
    for cause, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        tests = {(m, d["id"]) for m, d in items}
        per_ctx = {c: sum(d["context"] == c for _, d in items) for c in contexts}
        lines.append(f"* **{cause}**: {len(items)} divergences in {len(tests)} tests ("
                     + ", ".join(f"{c} {n}" for c, n in per_ctx.items() if n) + ")")
        for module, d in sorted(items, key=lambda md: (md[1]["id"], md[1]["context"])):
            lines.append(f"  * `{d['id']}` [{d['context']}]: {d['plain']} -> {d['routed']}: "
                         f"{d['msg'][:160]}")
    return "\n".join(lines)


def dump(path, title, contexts, results):
    """Write a harness run (re-rendered by ``python -m harness.report PATH``)."""
    import json
    import sys
    with open(path, "w") as f:
        json.dump({"title": title, "python": sys.version, "contexts": contexts,
                   "results": results}, f, indent=1)


def main(argv=None):
    """Re-render harness ``--json`` files as one table (e.g. the halves of a run made in
    two processes), classifying the divergences afresh."""
    import json
    import sys
    results, contexts, titles = {}, None, []
    for path in argv or sys.argv[1:]:
        with open(path) as f:
            data = json.load(f)
        contexts = contexts or data["contexts"]
        titles.append(data.get("title", path))
        results.update(data["results"])
    for result in results.values():
        for d in result["divergences"]:
            d["cause"] = classify(d["id"], {"exc": d["routed"].split(" ", 1)[-1], **d})
    print(render(results, contexts, " + ".join(dict.fromkeys(titles))))


if __name__ == "__main__":
    main()
