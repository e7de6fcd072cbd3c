"""``make docs`` builds a Sphinx site whose API pages document ``Layout``'s classmethods and whose tutorials carry
their figures; the package ships its licence, changelog, ``py.typed`` and metadata; the README tells where
``make demo`` writes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml with the standard library")

ROOT = Path(__file__).resolve().parents[1]


def test_docs_site_builds_with_the_api_the_notebooks_and_the_program_format(tmp_path):
    """``make docs`` in miniature: Sphinx with warnings as errors (the notebooks from their stored outputs here;
    ``make docs`` executes them).  The API pages describe the classmethods, properties and dataclass fields the
    guides send readers to, the tutorials carry their figures, the program format page has the op table."""
    pytest.importorskip("sphinx", reason="the docs extra (pip install .[docs]) builds the site")
    pytest.importorskip("myst_nb", reason="the docs extra (pip install .[docs]) builds the site")
    out = tmp_path / "html"
    argv = ["-b", "html", "-W", "--keep-going", "-q", "-d", str(tmp_path / "doctrees"), "-D", "nb_execution_mode=off",
            str(ROOT / "docs"), str(out)]
    # in its own process: autodoc (autodoc_preserve_defaults) rewrites the defaults of the functions it documents,
    # which later tests in this worker would see (plot_layout's name default became the source text '"layout"')
    build = subprocess.run([sys.executable, "-m", "sphinx", *argv], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    assert (out / "index.html").exists()
    api = {page.stem: page.read_text(encoding="utf-8") for page in (out / "api").glob("*.html")}
    for anchor, page in [("layoutkit.algebra.Layout.from_linear", "layoutkit.algebra"),
                         ("layoutkit.algebra.Layout.from_exprs", "layoutkit.algebra"),
                         ("layoutkit.fragment.Fragment.from_linear", "layoutkit.fragment"),
                         ("layoutkit.infer.Program.from_json", "layoutkit.infer"),
                         ("layoutkit.algebra.F2Linear.from_bases", "layoutkit.algebra"),
                         ("layoutkit.algebra.Layout.input_shape", "layoutkit.algebra"),  # a property
                         ("layoutkit.algebra.Proof.verdict", "layoutkit.algebra"),  # a dataclass field
                         ("layoutkit.tla.make_layout", "layoutkit.tla"),
                         ("layoutkit.targets.nv.make_mma_store_layout", "layoutkit.targets.nv")]:
        assert f'id="{anchor}"' in api[page], anchor
    assert 'href="layoutkit.algebra.html#layoutkit.algebra.Layout"' in api["layoutkit"]  # lk.Layout links home
    for notebook, figures in [("01_algebra_and_proofs", 2), ("02_gemm_inference", 2), ("03_ascend_tiles", 1)]:
        html = (out / "tutorials" / f"{notebook}.html").read_text(encoding="utf-8")
        images = re.findall(r'<img [^>]*src="\.\./(_images/[^"]+\.png)"', html)
        assert len(images) == figures and all((out / image).stat().st_size > 1000 for image in images), notebook
    program_format = (out / "program_format.html").read_text(encoding="utf-8")
    assert "program-ops" in program_format and "gemm_sp" in program_format and "dual_copy" in program_format


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
