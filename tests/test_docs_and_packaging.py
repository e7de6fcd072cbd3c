"""``make docs`` builds a site whose index documents ``Layout``; the package ships its licence, changelog,
``py.typed`` and metadata; the README tells where ``make demo`` writes."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml with the standard library")

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_documents_the_public_api(tmp_path):
    build = runpy.run_path(str(ROOT / "tools" / "build_docs.py"))["build"]
    pages = build(tmp_path / "site")
    index = (tmp_path / "site" / "index.md").read_text()
    assert "[`layoutkit.Layout`](api/layoutkit.md#layout)" in index
    assert "[`layoutkit.algebra`](api/layoutkit.algebra.md)" in index and "tutorials/02_gemm_inference.md" in index
    api = (tmp_path / "site" / "api" / "layoutkit.md").read_text()
    assert "## `Layout`" in api and "### `Layout.get_input_shape(self)" in api and "### `Fragment.to_linear(" in api
    assert "```python\n>>> import layoutkit as lk" in api  # the docstrings' worked examples
    conventions = (tmp_path / "site" / "conventions.md").read_text()
    assert "row-major" in conventions and "colexicographic" in conventions and "floor" in conventions
    tutorial = (tmp_path / "site" / "tutorials" / "02_gemm_inference.md").read_text()
    assert "figure: ['C_local.svg']" in tutorial
    assert len(pages) >= 15 + 3 + 1  # a page per folder, the tutorials, the index


def test_packaging_files_and_metadata():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0" and meta["license-files"] == ["LICENSE"]
    assert "Typing :: Typed" in meta["classifiers"]
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0, January 2004" in (
        ROOT / "LICENSE").read_text()
    assert (ROOT / "layoutkit" / "py.typed").exists()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert package_data["layoutkit"] == ["py.typed"]
    assert (ROOT / "CHANGELOG.md").read_text().startswith("# Changelog")


def test_readme_says_where_the_demo_writes():
    readme = (ROOT / "README.md").read_text()
    assert "`out/`" in readme and "make docs" in readme


def test_parametric_page_examples_run():
    import doctest

    result = doctest.testfile(str(ROOT / "docs" / "parametric.md"), module_relative=False)
    assert result.attempted >= 20 and result.failed == 0


def test_conventions_page_examples_run():
    import doctest

    result = doctest.testfile(str(ROOT / "docs" / "conventions.md"), module_relative=False)
    assert result.attempted >= 3 and result.failed == 0
