"""Build the two C modules of the hot path (everything else is in pyproject.toml).

``_overdub_native`` (the storage of tagged values) and ``_capstan_native`` (capstan's
scalar arithmetic) are top-level modules rather than package members, so that code run
from a source checkout (the test suite, the benchmarks) finds the ones ``pip install``
built.  Building needs only a C compiler; ``OVERDUB_PURE_PYTHON=1`` at run time selects
the pure-Python reference path instead of them.
"""
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# IEEE arithmetic exactly as Python's own floats do it: no fused multiply-add, no fast math
_FLAGS = [] if sys.platform == "win32" else ["-ffp-contract=off", "-fno-fast-math"]


class BuildNative(build_ext):
    """build_ext that says plainly what is missing when the C modules cannot be built."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # distutils' CompileError, CCompilerError, PlatformError...
            raise SystemExit(
                "overdub-capstan: building its C modules (_overdub_native, _capstan_native) "
                "failed: %s\nInstall a C compiler (e.g. gcc or clang, and the Python "
                "development headers) and run `pip install .` again." % (exc,)) from exc


setup(
    ext_modules=[
        Extension("_overdub_native", ["native/overdub_native.c"], depends=["native/tagged.h", "native/slotcache.h"],
                  include_dirs=["native"], extra_compile_args=_FLAGS),
        Extension("_capstan_native", ["native/capstan_native.c"], depends=["native/tagged.h", "native/slotcache.h"],
                  include_dirs=["native"], extra_compile_args=_FLAGS),
    ],
    cmdclass={"build_ext": BuildNative},
)
