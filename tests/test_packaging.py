"""The distribution's metadata: one version, a free name, the license and type markers
shipped (building the wheel itself is checked by README's install command in CI)."""
import pathlib
import re
import tomllib

import capstan
import overdub

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_one_version_for_both_packages():
    assert capstan.__version__ == overdub.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", overdub.__version__)
    assert PROJECT["dynamic"] == ["version"]
    assert "## " + overdub.__version__ in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_distribution_metadata():
    assert PROJECT["name"] == "overdub-capstan"  # "overdub" and "capstan" are other projects on PyPI
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    tested = {"3.11", "3.12", "3.13"}
    assert {c.rsplit(" ", 1)[1] for c in PROJECT["classifiers"]
            if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)} == tested
    assert PROJECT["requires-python"] == ">=3.11,<3.14"


def test_type_markers_are_shipped():
    for package in (overdub, capstan):
        assert (pathlib.Path(package.__file__).parent / "py.typed").exists()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert data["package-data"] == {"overdub": ["py.typed"], "capstan": ["py.typed"]}
