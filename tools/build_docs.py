"""Build the documentation site (``make docs``): Markdown pages under ``build/docs/`` (or ``--out DIR``).

* ``index.md``: what layoutkit is, the pages, and every public name with its one-line summary;
* ``conventions.md`` and the other hand-written pages of ``docs/``, copied;
* ``api/<package>.md``: one page per folder of the package (algebra, fragment, tla, targets.nv, ...),
  generated from the docstrings: the module text, then each public name (its ``__all__``) with its
  signature, its docstring and the docstring's worked examples;
* ``tutorials/<notebook>.md``: the notebooks, their Markdown, code and stored text outputs.

Standard library only (no site generator needed to build or to check it); every page is plain Markdown
that any Markdown viewer, or mkdocs with ``docs_dir: build/docs``, renders.  Run ``python tools/build_docs.py``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    ("layoutkit", "the top-level names (`import layoutkit as lk`)"),
    ("layoutkit.algebra", "index expressions, `Layout`, proofs, inverses, the F2 linear view"),
    ("layoutkit.fragment", "`Fragment`: thread map, register index, replication; containment proofs"),
    ("layoutkit.tla", "CATLASS TLA layouts and the CuTe algebra"),
    ("layoutkit.targets.nv", "NVIDIA hardware facts: swizzles, MMA fragments, warp partition, banks, copies"),
    ("layoutkit.targets.ascend", "Ascend hardware facts: C0, fractal layouts, CATLASS tags, data movement"),
    ("layoutkit.infer", "tile programs and layout inference"),
    ("layoutkit.cost", "cost models"),
    ("layoutkit.backends", "the backend registry (NVIDIA, Ascend)"),
    ("layoutkit.codegen", "lower / emit / execute for any registered backend"),
    ("layoutkit.frontends.tilelang", "the TileLang adapter"),
    ("layoutkit.plot", "figures and text views"),
    ("layoutkit.testing", "assertions and hypothesis strategies for your own layouts"),
    ("layoutkit.errors", "the typed errors"),
    ("layoutkit.cli", "the `layoutkit` command"),
]


def _summary(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ") if doc else ""


def _signature(name: str, obj: object) -> str:
    try:
        return f"{name}{inspect.signature(obj)}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return name


def _doc_block(obj: object) -> str:
    """The docstring as Markdown: prose as is, doctest examples as Python code blocks."""
    doc = inspect.getdoc(obj) or "(no docstring)"
    out, code = [], False
    for line in doc.splitlines():
        is_code = line.startswith(">>>") or (code and line.startswith("..."))
        if is_code and not code:
            out.append("```python")
            code = True
        elif code and not line.strip():
            out.append("```")
            code = False
        out.append(line)
    if code:
        out.append("```")
    return "\n".join(out)


def _members(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_") and getattr(v, "__module__", "")
                 .startswith(module.__name__)]
    return list(dict.fromkeys(names))


def api_page(modname: str, blurb: str) -> tuple[str, list[tuple[str, str]]]:
    """The Markdown page of one package, and its ``(name, summary)`` list for the index."""
    module = importlib.import_module(modname)
    lines = [f"# `{modname}`", "", blurb, "", _doc_block(module), ""]
    index = []
    for name in _members(module):
        try:
            obj = getattr(module, name)
        except AttributeError:  # a lazily imported name whose dependency is missing
            continue
        kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "value"
        lines += [f"## `{name}`", "", f"*{kind}*" + (f" `{_signature(name, obj)}`" if kind != "value" else ""), ""]
        lines += [_doc_block(obj) if kind != "value" else f"`{obj!r}`"[:300], ""]
        if inspect.isclass(obj):
            own: dict[str, object] = {}
            for klass in reversed([k for k in obj.__mro__ if k.__module__.startswith("layoutkit")]):
                own.update(vars(klass))  # inherited names too (the TileLang accessors of Layout)
            for attr, member in sorted(own.items()):
                if attr.startswith("_") or not (callable(member) or isinstance(member, property)):
                    continue
                target = member.fget if isinstance(member, property) else member
                sig = attr if isinstance(member, property) else _signature(attr, getattr(obj, attr))
                lines += [f"### `{name}.{sig}`", "", _doc_block(target), ""]
        index.append((name, _summary(obj)))
    return "\n".join(lines), index


def tutorial_page(path: Path) -> str:
    """A notebook as Markdown: its text cells, code cells and their stored text outputs."""
    nb = json.loads(path.read_text())
    out = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            out += [src, ""]
            continue
        out += ["```python", src, "```", ""]
        for o in cell.get("outputs", []):
            text = "".join(o.get("text", "")) if o.get("output_type") == "stream" else ""
            if text:
                out += ["```text", text.rstrip(), "```", ""]
            elif "image/png" in o.get("data", {}):
                out += ["*(a figure: open the notebook to see it)*", ""]
    return "\n".join(out)


def build(out: Path) -> list[Path]:
    if out.exists():
        shutil.rmtree(out)
    (out / "api").mkdir(parents=True)
    (out / "tutorials").mkdir()
    written = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name != "index.md":
            shutil.copy(page, out / page.name)
            written.append(out / page.name)
    toc, names = [], []
    for modname, blurb in PACKAGES:
        text, index = api_page(modname, blurb)
        target = out / "api" / f"{modname}.md"
        target.write_text(text)
        written.append(target)
        toc.append(f"- [`{modname}`](api/{modname}.md): {blurb}")
        names += [f"| [`{modname}.{n}`](api/{modname}.md#{n.lower()}) | {s.replace('|', '/')[:160]} |"
                  for n, s in index]
    tutorials = []
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        target = out / "tutorials" / f"{nb.stem}.md"
        target.write_text(tutorial_page(nb))
        written.append(target)
        tutorials.append(f"- [{nb.stem}](tutorials/{nb.stem}.md)")
    head = (ROOT / "docs" / "index.md").read_text()
    index_text = "\n".join([head.rstrip(), "", "## API reference (one page per folder)", "", *toc, "",
                            "## Tutorials (the notebooks, with their outputs)", "", *tutorials, "",
                            "## Every public name", "", "| name | what |", "|---|---|", *names, ""])
    (out / "index.md").write_text(index_text)
    return [out / "index.md", *written]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "docs"), help="output folder (default build/docs)")
    args = parser.parse_args(argv)
    pages = build(Path(args.out))
    print(f"wrote {len(pages)} pages to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
