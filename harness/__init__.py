"""Transparency harnesses: run other people's test suites plainly and under routed contexts,
and compare the outcomes test by test (issues 9 and 16).

* ``python -m harness.cpython_tests`` -- CPython's own ``test`` modules (unittest).
* ``python -m harness.packages`` -- installed packages' pytest suites, through the
  pytest plugin ``harness.pytest_plugin``.
* ``harness.contexts`` holds the contexts, ``harness.report`` the comparison, the
  classification of divergences by cause and the tables.
"""
