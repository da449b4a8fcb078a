"""A pytest plugin that runs only the test call under an overdub context (issue 16).

    python -m pytest -p harness.pytest_plugin --overdub-context=count \\
        --overdub-record=out.jsonl TESTS...

Fixtures, collection and reporting run plainly; the call of each test function (through
``pytest_pyfunc_call``) or unittest test method (through the item's ``obj``, which pytest
binds on the TestCase) runs as ``overdub.overdub(ctx, test, **fixtures)`` with a fresh
context per test.  ``--overdub-context=plain`` runs the same path without a context, for
the comparison.  Each test writes a start line and an outcome line to the record file (the
format of ``harness.report``); ``--overdub-skip`` deselects tests already recorded, so that
``harness.packages`` can restart a run after a crash or a hang.
"""
import functools
import inspect
import json
import signal
import time

import pytest

from harness import report
from harness.contexts import FACTORIES, call_under


class HarnessTimeout(BaseException):
    """Raised into a test call that ran past ``--overdub-test-timeout``."""


def pytest_addoption(parser):
    group = parser.getgroup("overdub", "run each test call under an overdub context")
    group.addoption("--overdub-context", default=None, choices=["plain", *FACTORIES],
                    help="the context for the test calls (plain: none)")
    group.addoption("--overdub-record", default=None, help="append JSON outcome lines here")
    group.addoption("--overdub-skip", default=None, help="file of node ids to deselect")
    group.addoption("--overdub-budget", type=float, default=None,
                    help="stop the session after this many seconds")
    group.addoption("--overdub-test-timeout", type=float, default=60.0,
                    help="seconds before a test call is interrupted as a hang")


class Recorder:
    """The plugin object of one session (registered when ``--overdub-context`` is given):
    routes the test calls, times them and writes their outcomes."""

    def __init__(self, config):
        self.run = config.getoption("overdub_context")
        self.sink = open(config.getoption("overdub_record"), "a")
        self.timeout = config.getoption("overdub_test_timeout")
        budget = config.getoption("overdub_budget")
        self.deadline = None if budget is None else time.monotonic() + budget
        self.session = None
        self.stopped = False
        self.skip = set()
        if config.getoption("overdub_skip"):
            with open(config.getoption("overdub_skip")) as f:
                self.skip = {line.strip() for line in f if line.strip()}
        self.current = {}
        self.timings = {}

    def write(self, record):
        self.sink.write(json.dumps(record) + "\n")
        self.sink.flush()

    def call(self, nodeid, test, /, **kwargs):
        """``test(**kwargs)`` under this run's context, timed, with a hang alarm."""
        previous = signal.signal(signal.SIGALRM, self._on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        start = time.perf_counter()
        try:
            return call_under(self.run, test, **kwargs)
        finally:
            self.timings[nodeid] = time.perf_counter() - start
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def _on_alarm(self, signum, frame):
        raise HarnessTimeout(f"test call ran longer than {self.timeout:.0f} s")

    # -- hooks ----------------------------------------------------------------------------
    def pytest_sessionstart(self, session):
        self.session = session

    def pytest_collection_modifyitems(self, session, config, items):
        if self.skip:
            config.hook.pytest_deselected(items=[i for i in items if i.nodeid in self.skip])
            items[:] = [i for i in items if i.nodeid not in self.skip]

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        """Call a test function under the context (pytest's own call, with the context)."""
        if inspect.iscoroutinefunction(pyfuncitem.obj):
            return None  # async tests: left to the plugin that runs them
        funcargs = pyfuncitem.funcargs
        kwargs = {name: funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        self.call(pyfuncitem.nodeid, pyfuncitem.obj, **kwargs)
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        """A unittest test method: pytest binds ``item.obj`` on the TestCase and lets
        unittest run setUp, the method and tearDown; the method alone is replaced by a
        routed call (carrying the method's skip and expected-failure markers)."""
        from _pytest.unittest import TestCaseFunction
        if not isinstance(item, TestCaseFunction) or inspect.iscoroutinefunction(item.obj):
            return
        method = item.obj

        def routed():
            return self.call(item.nodeid, method)

        item.obj = functools.update_wrapper(routed, method)

    def pytest_runtest_logstart(self, nodeid, location):
        self.write({"run": self.run, "id": nodeid, "start": True})
        self.current[nodeid] = {"run": self.run, "id": nodeid, "status": "pass", "exc": None,
                                "msg": "", "tb": ""}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """Keep the exception type, message, traceback and the test's source."""
        rep = yield
        if call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception):
            exc = call.excinfo.value
            rep.overdub_error = {
                "exc": type(exc).__name__, "msg": report.first_line(exc),
                "detail": str(exc)[:2000],
                "tb": report.format_tb(exc),
                "src": _source(item)}
        return rep

    def pytest_runtest_logreport(self, report):
        record = self.current.get(report.nodeid)
        if record is None:
            return
        if report.skipped:
            status = "xfail" if hasattr(report, "wasxfail") else "skip"
        elif report.failed:
            status = "fail" if report.when == "call" else "error"
        elif report.when == "call" and hasattr(report, "wasxfail"):
            status = "xpass"
        else:
            return
        if _rank(status) > _rank(record["status"]):
            record["status"] = status
            record.update(getattr(report, "overdub_error", {}))
            if status in ("fail", "error") and record["exc"] is None:
                record["exc"] = "Failed"

    def pytest_runtest_logfinish(self, nodeid, location):
        record = self.current.pop(nodeid, None)
        if record is None:
            return
        record["t"] = self.timings.pop(nodeid, None)
        self.write(record)
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.stopped = True
            self.session.shouldstop = "overdub budget spent"

    def pytest_sessionfinish(self, session, exitstatus):
        self.write({"run": self.run, "done": True, "stopped": self.stopped,
                    "exitstatus": int(exitstatus)})
        self.sink.close()


def pytest_configure(config):
    if config.getoption("overdub_context"):
        config.pluginmanager.register(Recorder(config), "overdub-recorder")


def _source(item):
    """The test function's source (what it exercises tells the cause of a divergence)."""
    try:
        return inspect.getsource(inspect.unwrap(getattr(item, "obj", None)))[:3000]
    except (TypeError, OSError, ValueError):
        return ""


def _rank(status):
    return report.RANK[status]
