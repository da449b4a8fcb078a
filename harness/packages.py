"""Installed packages' own test suites, plainly and under routed contexts (issue 16).

    python -m harness.packages [MODULE ...] [--contexts count,wild,forward]
                               [--budget SECONDS] [--json FILE] [--fast]

Each test module (a dotted name inside an installed package, e.g.
``mpmath.tests.test_basic_ops``) runs in pytest subprocesses with the plugin
``harness.pytest_plugin``: once plainly, then once per context, only the test calls
routed.  A subprocess that crashes or stops making progress is killed and restarted with
the tests already recorded deselected; the test in flight is recorded as killed.  Prints a
table (tests, divergences per context, median slowdown of the test calls per module) and
the divergences grouped by cause.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

from harness import report

# Six pure-Python packages and NumPy, a few modules each: widely used code with suites of
# its own, shipped inside the installed package.
SUITES = {
    "mpmath": ["mpmath.tests.test_basic_ops", "mpmath.tests.test_convert",
               "mpmath.tests.test_division", "mpmath.tests.test_str",
               "mpmath.tests.test_trig", "mpmath.tests.test_bitwise",
               "mpmath.tests.test_power", "mpmath.tests.test_interval"],
    "sympy": ["sympy.core.tests.test_sympify", "sympy.core.tests.test_symbol",
              "sympy.core.tests.test_containers", "sympy.core.tests.test_count_ops",
              "sympy.core.tests.test_sorting", "sympy.core.tests.test_singleton"],
    "networkx": ["networkx.classes.tests.test_graph", "networkx.algorithms.tests.test_cycles",
                 "networkx.algorithms.tests.test_dag", "networkx.algorithms.tests.test_euler"],
    "toolz": ["toolz.tests.test_itertoolz", "toolz.tests.test_functoolz",
              "toolz.tests.test_dicttoolz", "toolz.tests.test_recipes"],
    "pyflakes": ["pyflakes.test.test_imports", "pyflakes.test.test_other",
                 "pyflakes.test.test_match"],
    "jsonschema": ["jsonschema.tests.test_validators", "jsonschema.tests.test_exceptions",
                   "jsonschema.tests.test_types"],
    "numpy": ["numpy.lib.tests.test_twodim_base", "numpy.lib.tests.test_arraysetops",
              "numpy.lib.tests.test_index_tricks"],
}

# The CI subset (tests/test_package_transparency.py): mpmath ships with sympy, which the
# test extra installs.
FAST = ["mpmath.tests.test_division", "mpmath.tests.test_str"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STALL = 120.0  # seconds without a new record line: the run is hung below Python's reach


def _path(module):
    """The file of a test module given by dotted name (or a path to a .py file)."""
    if module.endswith(".py"):
        return os.path.abspath(module)
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{module} is not installed")
    return spec.origin


def _pytest(module, run, out, skip, budget, python):
    """Start one pytest subprocess for ``module`` under ``run``."""
    ini = os.path.join(os.path.dirname(out), "pytest.ini")
    with open(ini, "w") as f:
        f.write("[pytest]\n")  # the package's own conftest.py files still apply
    cmd = [python, "-m", "pytest", "-q", "-p", "harness.pytest_plugin", "-p", "no:cacheprovider",
           "-c", ini, "--rootdir", os.path.dirname(_path(module)), "-W", "ignore",
           f"--overdub-context={run}", f"--overdub-record={out}", f"--overdub-skip={skip}",
           _path(module)]
    if budget is not None:
        cmd.append(f"--overdub-budget={budget}")
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def run_module(module, contexts, budget, python=sys.executable, restarts=5):
    """Records of all runs of one module, restarting a run after a crash or a hang."""
    work = tempfile.mkdtemp(prefix="overdub-pkg-")
    out = os.path.join(work, "records.jsonl")
    skip = os.path.join(work, "skip.txt")
    open(out, "w").close()
    endings = []
    for run in ["plain", *contexts]:
        for attempt in range(restarts + 1):
            records = _read(out)
            seen = {r["id"] for r in records if r["run"] == run and "id" in r}
            with open(skip, "w") as f:
                f.write("\n".join(sorted(seen)))
            proc = _pytest(module, run, out, skip, None if run == "plain" else budget, python)
            ending = _watch(proc, out)
            finished = any(r.get("done") and r["run"] == run for r in _read(out))
            if finished or ending == "ok":
                break
            endings.append(f"{run}: {ending}, restarted")
        else:
            endings.append(f"{run}: gave up after {restarts} restarts")
    records = _read(out)
    for name in (out, skip, os.path.join(work, "pytest.ini")):
        if os.path.exists(name):
            os.unlink(name)
    os.rmdir(work)
    return records, "; ".join(endings) or "ok"


def _watch(proc, out):
    """Wait for a pytest subprocess; kill it when the record file stops growing."""
    size, last = -1, time.monotonic()
    while proc.poll() is None:
        time.sleep(0.5)
        now_size = os.path.getsize(out)
        if now_size != size:
            size, last = now_size, time.monotonic()
        elif time.monotonic() - last > STALL:
            proc.kill()
            proc.wait()
            return f"hung (no progress for {STALL:.0f} s)"
    output = proc.stdout.read()
    if proc.returncode in (0, 1, 5):  # passed, tests failed, nothing collected
        return "ok"
    return f"exit {proc.returncode}: {output.strip().splitlines()[-1:] or ''}"


def _read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="test modules (default: every suite)")
    parser.add_argument("--fast", action="store_true", help="the CI subset")
    parser.add_argument("--contexts", default="count,wild,forward")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds per routed run of a module (default 60)")
    parser.add_argument("--json", help="write every divergence here")
    args = parser.parse_args(argv)
    modules = args.modules or (FAST if args.fast else [m for ms in SUITES.values() for m in ms])
    contexts = [c for c in args.contexts.split(",") if c]
    title = f"packages on CPython {sys.version.split()[0]}"
    results = {}
    for module in modules:
        records, ending = run_module(module, contexts, args.budget)
        results[module] = report.compare(records, contexts, ending)
        print(report.module_line(module, results[module], contexts), file=sys.stderr, flush=True)
        if args.json:
            report.dump(args.json, title, contexts, results)
    print(report.render(results, contexts, title))
    return 0 if all(r["divergences"] == [] and r["ending"] == "ok" for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
