"""Sphinx configuration of the API reference (built from the docstrings).

Build: ``python -m sphinx -W -b html docs/reference build/reference`` (tests/test_reference.py
does this with warnings as errors)."""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import overdub  # noqa: E402

project = "overdub + capstan"
author = "The overdub and capstan contributors"
release = version = overdub.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
exclude_patterns = []
html_theme = "alabaster"
