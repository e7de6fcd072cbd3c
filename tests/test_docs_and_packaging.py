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


# ---- the repository documents itself: code cites docs/ pages, never a document it does not ship ----------

_CITING = ("layoutkit", "tests", "benchmarks", "tools", "examples", "notebooks", "docs")
_TEXT = {".py", ".md", ".toml", ".ipynb", ".txt", ".cfg"}


def _project_texts():
    """``(path, text)`` of every text file that may cite a document: the package, pyproject.toml, README and the
    folders around them."""
    for top in _CITING:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in _TEXT and "__pycache__" not in path.parts:
                yield path, path.read_text(encoding="utf-8")
    for name in ("pyproject.toml", "README.md", "Makefile"):
        yield ROOT / name, (ROOT / name).read_text(encoding="utf-8")


def _anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page: its headings as GitHub slugs (code fences skipped)."""
    import re

    out, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-"))
    return out


def test_no_citation_of_documents_the_repository_does_not_ship():
    """The design brief and the formula sheet the code once cited by section number are not in the repository:
    what the code relies on is in docs/design.md and docs/reference.md, cited by anchor."""
    import re

    absent = re.compile(r"\b(?:REFERENCE|DESIGN)(?:\.md)?\b|§")
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path, text in _project_texts()
            if path != Path(__file__).resolve()  # this test spells the pattern out
            for n, line in enumerate(text.splitlines(), 1) if absent.search(line)]
    assert not hits, "\n".join(hits)


def test_every_cited_docs_anchor_exists():
    """``docs/<page>.md#<anchor>`` cited anywhere (and ``<page>.md#<anchor>`` links between the docs pages)
    names a page of docs/ and one of its headings."""
    import re

    cited = re.compile(r"docs/([\w-]+)\.md#([\w-]+)")
    linked = re.compile(r"\]\(([\w-]+)\.md#([\w-]+)\)")
    missing, count = [], 0
    for path, text in _project_texts():
        pattern_hits = list(cited.finditer(text))
        if path.parent == ROOT / "docs":
            pattern_hits += list(linked.finditer(text))
        for hit in pattern_hits:
            count += 1
            page = ROOT / "docs" / f"{hit.group(1)}.md"
            if not page.exists() or hit.group(2) not in _anchors(page):
                missing.append(f"{path.relative_to(ROOT)}: {hit.group(0)}")
    assert not missing, "\n".join(missing)
    assert count >= 20  # the package cites the reference page throughout


def test_design_page_holds_the_recipes_and_is_linked():
    design = ROOT / "docs" / "design.md"
    assert {"layers", "packages", "data-flow", "registries-and-how-they-are-filled", "recipe-add-a-target",
            "recipe-add-a-cost-model", "recipe-add-a-tile-op"} <= _anchors(design)
    index = (ROOT / "docs" / "index.md").read_text()
    assert "(design.md)" in index and "(reference.md)" in index
    assert "docs/design.md" in (ROOT / "README.md").read_text()
    assert "docs/design.md" in (ROOT / "pyproject.toml").read_text()  # the layering contract says where it is explained
