"""CPython's own regression tests, run plainly and under routed contexts (issue 9).

    python -m harness.cpython_tests [MODULE ...] [--contexts count,wild,post]
                                    [--budget SECONDS] [--json FILE]

Each ``test`` module runs in a subprocess of its own (``--worker``), with a timeout.
Inside it the module's unittest suite is loaded afresh for every run: plainly, then once
per context, then plainly again.  Fixtures (``setUp``, ``setUpClass``, ``load_tests``)
run plainly; only the call of the test method itself goes through
``overdub.overdub(ctx, method)``.  Each test's outcome (pass, fail, error, skip,
expected failure, unexpected success, with the exception type) is compared with the plain
run's; a test whose two plain runs disagree is left out as unstable.  A routed run stops
after ``--budget`` seconds (big modules are then compared on the tests it reached).

Prints one table row per module (tests compared, divergences per context, median slowdown
of the test calls) and the divergences grouped by cause; ``--json`` keeps everything.
"""
import argparse
import functools
import inspect
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from harness import report

# Pure-Python-heavy modules of the ``test`` package, importable on 3.11-3.13.
# (test_datetime is left out: its load_tests imports fresh copies of datetime into
# sys.modules, and loading its suite five times in one process ran past the timeout.)
MODULES = """
test_abc test_argparse test_ast test_asyncgen test_augassign test_base64 test_baseexception
test_binop test_bisect test_bool test_builtin test_calendar test_class test_cmath test_code
test_collections test_colorsys test_compare test_complex test_configparser test_contains
test_context test_contextlib test_copy test_coroutines test_csv test_dataclasses test_decimal
test_decorators test_defaultdict test_deque test_descr test_descrtut test_dict test_dictviews
test_difflib test_enum test_enumerate test_except_star test_exception_group test_exceptions
test_finalization test_float test_fnmatch test_format test_fractions test_fstring
test_functools test_future_stmt test_generator_stop test_generators test_genericalias
test_genexps test_grammar test_graphlib test_heapq test_html test_htmlparser test_http_cookies
test_index test_inspect test_int test_int_literal test_ipaddress test_isinstance test_iter
test_iterlen test_itertools test_json test_keywordonlyarg test_list test_listcomps test_long
test_longexp test_marshal test_math test_memoryio test_memoryview test_mimetypes test_minidom
test_module test_named_expressions test_netrc test_ntpath test_opcodes test_operator
test_optparse test_ordered_dict test_patma test_posixpath test_pprint test_print test_property
test_pulldom test_pyclbr test_queue test_random test_range test_re test_richcmp
test_rlcompleter test_scope test_secrets test_set test_shlex test_slice test_sort test_stat
test_statistics test_string test_stringprep test_strptime test_strtod test_struct
test_structseq test_super test_symtable test_syntax test_textwrap test_threading_local
test_tokenize test_tomllib test_tuple test_types test_typing test_unpack test_unpack_ex
test_urlparse test_userdict test_userlist test_userstring test_uuid test_warnings test_weakref
test_weakset test_with test_xml_dom_minicompat test_yield_from
""".split()

# The CI subset: small, fast modules that exercise calls, operators, classes and
# generators (tests/test_cpython_transparency.py).
FAST = ["test_bisect", "test_heapq", "test_fnmatch", "test_colorsys", "test_shlex",
        "test_keywordonlyarg", "test_unpack", "test_contains"]

PER_TEST_TIMEOUT = 60.0  # seconds; a routed test that runs longer is reported as a hang


class HarnessTimeout(BaseException):
    """Raised into a test that ran past PER_TEST_TIMEOUT (BaseException: not swallowed by
    the test's own ``except Exception``)."""


def _on_alarm(signum, frame):
    raise HarnessTimeout(f"test ran longer than {PER_TEST_TIMEOUT:.0f} s")


class Recorder(unittest.TestResult):
    """Writes one outcome per test to ``sink`` as it finishes (sub-test failures count for
    their test), after a start line, so that a test that kills or hangs the process is
    known; stops the run once its time budget is spent."""

    def __init__(self, run, sink, timings, budget):
        super().__init__()
        self.run, self.sink, self.timings = run, sink, timings
        self.deadline = None if budget is None else time.monotonic() + budget
        self.current = None

    def _set(self, status, err=None):
        record = self.current
        if record is None or report.RANK[record["status"]] >= report.RANK[status]:
            return
        record.update(status=status, exc=None, msg="", tb="")
        if err is not None:
            etype, value, tb = err
            record["exc"] = etype.__name__
            record["msg"] = report.first_line(value)
            record["tb"] = report.format_tb(value)
            record["detail"] = str(value)[:2000]
            record["src"] = self.source

    def _write(self, record):
        self.sink.write(json.dumps(record) + "\n")
        self.sink.flush()

    def startTest(self, test):
        super().startTest(test)
        self._write({"run": self.run, "id": test.id(), "start": True})
        self.current = {"run": self.run, "id": test.id(), "status": "pass", "exc": None,
                        "msg": "", "tb": ""}
        self.test = test

    @property
    def source(self):
        """The test method's source (what it exercises tells the cause of a divergence)."""
        method = getattr(self.test, getattr(self.test, "_testMethodName", ""), None)
        try:
            return inspect.getsource(inspect.unwrap(method))[:3000]
        except (TypeError, OSError, ValueError):
            return ""

    def stopTest(self, test):
        super().stopTest(test)
        if self.current is not None:
            self.current["t"] = self.timings.get(test.id())
            self._write(self.current)
            self.current = None
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.stop()

    def addError(self, test, err):
        self._set("error", err)

    def addFailure(self, test, err):
        self._set("fail", err)

    def addSkip(self, test, reason):
        self._set("skip")
        if self.current is not None:
            self.current["msg"] = str(reason)[:200]

    def addExpectedFailure(self, test, err):
        self._set("xfail")

    def addUnexpectedSuccess(self, test):
        self._set("xpass")

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._set("fail" if issubclass(err[0], test.failureException) else "error", err)


def _cases(suite):
    """The TestCase instances of a (nested) suite."""
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _cases(item)
        else:
            yield item


def _route_method(test, run, timings):
    """Make ``test`` call its test method through ``run`` (plain or a context), timed.

    The wrapper is set on this instance only and carries the method's unittest markers
    (skip, expected failure), so unittest treats it as the method itself."""
    name = getattr(test, "_testMethodName", None)
    method = getattr(test, name, None) if name else None
    if method is None or not callable(method):
        return

    def call():
        # after the first alarm, one a second: a test whose subTest (or own handler)
        # swallowed the first is stopped all the same (test_tokenize's test_random_files)
        signal.setitimer(signal.ITIMER_REAL, PER_TEST_TIMEOUT, 1.0)
        # a test that lowers the recursion limit and fails to restore it (a routed
        # restore that itself hits the lowered limit: test_richcmp.test_recursion under
        # the wildcard) must not take the worker, and the later runs, down with it
        limit = sys.getrecursionlimit()
        start = time.perf_counter()
        try:
            from harness.contexts import call_under
            return call_under(run, method)
        finally:
            timings[test.id()] = time.perf_counter() - start
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.setrecursionlimit(limit)

    functools.update_wrapper(call, method)
    setattr(test, name, call)


def worker(module, runs, budget, out):
    """Run ``test.<module>`` once per entry of ``runs`` and append JSON lines to ``out``."""
    import warnings
    warnings.simplefilter("ignore")  # as regrtest's quiet mode; outcomes are compared, not output
    signal.signal(signal.SIGALRM, _on_alarm)
    loader = unittest.TestLoader()
    with open(out, "a") as sink:
        for run in runs:
            try:
                suite = loader.loadTestsFromName(f"test.{module}")
            except unittest.SkipTest as exc:
                sink.write(json.dumps({"run": run, "skipped_module": str(exc)}) + "\n")
                return
            if not run.startswith("plain"):
                # what a context needs imported (capstan, for "forward": seconds) is imported
                # before the budget's clock starts, not inside the first test's call
                from harness.contexts import make
                make(report.base_run(run))
            timings = {}
            for test in _cases(suite):
                _route_method(test, report.base_run(run), timings)
            result = Recorder(run, sink, timings, None if run.startswith("plain") else budget)
            started = time.perf_counter()
            suite.run(result)
            result._write({"run": run, "done": True, "stopped": result.shouldStop,
                           "seconds": time.perf_counter() - started})


def run_module(module, contexts, budget, timeout, python=sys.executable):
    """Run one module in a subprocess; its records, and how the subprocess ended."""
    runs = ["plain", *contexts, "plain-again"]
    with tempfile.NamedTemporaryFile("r", suffix=".jsonl", delete=False) as f:
        out = f.name
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [python, "-m", "harness.cpython_tests", "--worker", module,
           "--runs", ",".join(runs), "--budget", str(budget), "--out", out]
    try:
        proc = subprocess.run(cmd, cwd=root, timeout=timeout, capture_output=True, text=True)
        ending = "ok" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr[-300:]}"
    except subprocess.TimeoutExpired:
        ending = f"timeout after {timeout:.0f} s"
    with open(out) as f:
        records = [json.loads(line) for line in f if line.strip()]
    os.unlink(out)
    return records, ending


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="test modules (default: the full list)")
    parser.add_argument("--fast", action="store_true", help="the CI subset of modules")
    parser.add_argument("--contexts", default="count,wild,post")
    parser.add_argument("--budget", type=float, default=30.0,
                        help="seconds per routed run of a module (default 30)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per module subprocess (default: from the budget)")
    parser.add_argument("--json", help="write every record and divergence here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--runs", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.runs.split(","), args.budget, args.out)
        return 0
    modules = args.modules or (FAST if args.fast else MODULES)
    contexts = [c for c in args.contexts.split(",") if c]
    timeout = args.timeout or (len(contexts) * (args.budget + PER_TEST_TIMEOUT) + 120)
    title = f"CPython {sys.version.split()[0]}"
    results = {}
    for module in modules:
        records, ending = run_module(module, contexts, args.budget, timeout)
        results[module] = report.compare(records, contexts, ending)
        print(report.module_line(module, results[module], contexts), file=sys.stderr, flush=True)
        if args.json:  # after every module: a long run that is stopped keeps what it did
            report.dump(args.json, title, contexts, results)
    print(report.render(results, contexts, title))
    return 0 if all(r["divergences"] == [] and r["ending"] == "ok" for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
