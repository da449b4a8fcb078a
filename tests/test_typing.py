"""Type hints on the whole public API.

``mypy --strict`` (tests/typing/mypy.ini) runs on every module that defines a public
name of overdub and capstan, and on uses of the public API (tests/typing/public_api.py).
The machinery modules (dispatch, tapes, rule tables...) keep unannotated internal
helpers; their public functions are annotated and checked like the rest.  Every public
name also has complete annotations at run time (parameters and return)."""
import hashlib
import inspect
import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

import capstan
import overdub

ROOT = pathlib.Path(__file__).resolve().parent.parent

PUBLIC_MODULES = [
    "overdub/__init__.py", "overdub/context.py", "overdub/dispatch.py", "overdub/tagging.py",
    "overdub/passes.py", "overdub/lookaside.py", "overdub/plaincall.py",
    "capstan/__init__.py", "capstan/forward.py", "capstan/reverse.py", "capstan/derivatives.py",
    "capstan/markers.py", "capstan/transforms.py", "capstan/checks.py", "capstan/nesting.py",
    "capstan/printing.py", "capstan/counting.py", "capstan/trace.py", "capstan/gpu.py",
    "capstan/bit32.py", "capstan/tape.py", "capstan/losses.py", "capstan/rules/__init__.py",
    "capstan/rules/registry.py", "capstan/structure.py", "capstan/pool.py", "capstan/mixed.py",
    "capstan/sparse.py", "capstan/sparsity.py", "capstan/graph_coloring.py",
]


def _mypy_cache():
    """mypy's incremental cache, kept between sessions of this checkout (mypy rechecks what
    changed and every module that had errors, so a warm cache reports what a cold one does;
    the pure-Python run and repeated runs then skip re-reading the stubs)."""
    key = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    return pathlib.Path(tempfile.gettempdir()) / ("overdub-capstan-mypy-cache-" + key)


def test_mypy_strict_on_the_public_api():
    pytest.importorskip("mypy", reason="mypy comes with the test extras: pip install '.[test]'")
    files = PUBLIC_MODULES + ["tests/typing/public_api.py"]
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "tests/typing/mypy.ini",
                           "--cache-dir", str(_mypy_cache()), *files],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=600,
                          env={**os.environ, "MYPYPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found in %d source files" % len(files) in proc.stdout


def test_the_public_modules_are_those_that_define_public_names():
    defined = set()
    for package in (overdub, capstan):
        for name in package.__all__:
            obj = getattr(package, name)
            module = sys.modules[getattr(obj, "__module__", None) or package.__name__]
            defined.add(os.path.relpath(module.__file__, ROOT).replace(os.sep, "/"))
    assert defined <= set(PUBLIC_MODULES), sorted(defined - set(PUBLIC_MODULES))


def _unannotated(f, name):
    sig = inspect.signature(f)
    out = ["%s(%s)" % (name, p.name) for p in sig.parameters.values()
           if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty:
        out.append("%s -> ?" % name)
    return out


#: classes whose every public method is part of the API (the AD contexts' other methods
#: are the rule machinery's: only their constructors are checked)
FULL_CLASSES = {"Context", "Tagged", "PrintCtx", "CountCtx", "TraceCtx", "GPUCtx", "Tape"}


def test_every_public_name_is_annotated():
    missing = []
    for package in (overdub, capstan):
        for name in package.__all__:
            obj = getattr(package, name)
            where = "%s.%s" % (package.__name__, name)
            if not isinstance(obj, type):
                missing += _unannotated(obj, where)
                continue
            for attr, value in vars(obj).items():
                public = not attr.startswith("_") and name in FULL_CLASSES
                if isinstance(value, property) and public:
                    missing += _unannotated(value.fget, "%s.%s" % (where, attr))
                elif inspect.isfunction(value) and (public or attr in ("__init__", "__call__")):
                    missing += _unannotated(value, "%s.%s" % (where, attr))
    assert not missing, missing
