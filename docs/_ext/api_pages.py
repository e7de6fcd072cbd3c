"""The API reference, written at build time from the packages' ``__all__`` (so it names every public name and
is never out of date): one page per public package under ``api/``, each with the package's docstring, a table
of its names with their one-line summaries, and the full description (autodoc) of the names it owns.

A name re-exported by several packages (``layoutkit.Layout`` is ``layoutkit.algebra.Layout``) is described
once, on the page of the most specific package that exports it and defines it; the other pages link there.
Classes are documented with every member autodoc finds: methods, classmethods and staticmethods, properties
and dataclass fields.  Packages whose optional client (triton, jax, cutlass, tilelang) is absent import with
those clients mocked (``autodoc_mock_imports``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

from sphinx.ext.autodoc.mock import mock
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging

logger = logging.getLogger(__name__)

PACKAGES = [
    ("layoutkit", "the top-level names (``import layoutkit as lk``)"),
    ("layoutkit.algebra", "index expressions, ``Layout``, proofs, inverses, the F2 linear view"),
    ("layoutkit.algebra.parametric", "layouts over symbolic extents, proved for every admissible value"),
    ("layoutkit.fragment", "``Fragment``: thread map, register index, replication; containment proofs"),
    ("layoutkit.fragment.parametric", "fragments over symbolic extents"),
    ("layoutkit.tla", "CATLASS TLA layouts and the CuTe algebra"),
    ("layoutkit.tla.parametric", "TLA / CuTe ``shape:stride`` layouts over symbolic extents"),
    ("layoutkit.targets.nv", "NVIDIA hardware facts: swizzles, MMA fragments, warp partition, banks, copies"),
    ("layoutkit.targets.nv.parametric", "NVIDIA swizzles and MMA fragments over a symbolic row count"),
    ("layoutkit.targets.ascend", "Ascend hardware facts: C0, fractal layouts, CATLASS tags, data movement"),
    ("layoutkit.infer", "tile programs and layout inference"),
    ("layoutkit.infer.programs", "the reference tile programs (GEMMs, epilogues, elementwise, Ascend)"),
    ("layoutkit.cost", "cost models"),
    ("layoutkit.backends", "the backend registry (NVIDIA, Ascend)"),
    ("layoutkit.backends.nv", "the NVIDIA backend"),
    ("layoutkit.backends.ascend", "the Ascend backend"),
    ("layoutkit.codegen", "lower / emit / execute for any registered backend"),
    ("layoutkit.frontends.tilelang", "the TileLang adapter"),
    ("layoutkit.frontends.gluon", "the Triton Gluon adapter"),
    ("layoutkit.frontends.mosaic_gpu", "the JAX Mosaic GPU adapter"),
    ("layoutkit.plot", "figures and text views"),
    ("layoutkit.testing", "assertions and hypothesis strategies for your own layouts"),
    ("layoutkit.testing.cuda_cpu", "the CPU harness for printed CUDA"),
    ("layoutkit.testing.ascend_cpu", "the CPU model of the Ascend C API"),
    ("layoutkit.errors", "the typed errors"),
    ("layoutkit.scopes", "memory scope names"),
    ("layoutkit.dtypes", "element types"),
    ("layoutkit.cli", "the ``layoutkit`` command"),
]
"""``(package, blurb)``: the pages, in the order of the index; a package that is not in the checkout (a front
end not merged yet) is left out."""


def public_names(module) -> list[str]:
    """``__all__``, or (for a module without one) the public names it defines itself."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_") and not inspect.ismodule(v)
                 and getattr(v, "__module__", "") == module.__name__]
    return list(dict.fromkeys(names))


def owner(obj: object, exporters: list[str]) -> str:
    """The package whose page describes ``obj``: the most specific of ``exporters`` that defines it (its
    ``__module__`` lies inside it), else the most specific exporter."""
    home = getattr(obj, "__module__", None) if is_described(obj) else None
    inside = [p for p in exporters if home and (home == p or home.startswith(p + "."))]
    return max(inside or exporters, key=lambda p: (p.count("."), len(p)))


def attribute_doc(package: str, name: str, obj: object) -> list[str]:
    """The docstring written under a module-level constant (``NAME = ...`` then a string), found in the module
    of ``package`` that defines it."""
    for modname in sorted(m for m in sys.modules if m == package or m.startswith(package + ".")):
        module = sys.modules[modname]
        if module is None or getattr(module, name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:  # a compiled or mocked module: no source to read
            continue
        lines = docs.get(("", name))
        if lines:
            return [line.rstrip() for line in lines if line is not None]
    return []


def summary(text: str) -> str:
    """The first paragraph of a docstring, on one line (empty when it holds no prose)."""
    first = text.strip().split("\n\n")[0]
    if not first or ">>>" in first or first.lstrip().startswith(("*", "-", "|", "..", "+")):
        return ""
    return " ".join(line.strip() for line in first.splitlines())


def is_described(obj: object) -> bool:
    """Whether autodoc describes ``obj`` (a class or function); anything else is a constant."""
    return inspect.isclass(obj) or inspect.isroutine(obj)


def describe(package: str, name: str, obj: object) -> list[str]:
    """The autodoc directive (or, for a constant, the description) of ``package.name``."""
    full = f"{package}.{name}"
    if inspect.isclass(obj):
        kind = "autoexception" if issubclass(obj, BaseException) else "autoclass"
        return [f".. {kind}:: {full}", "   :members:", "   :undoc-members:", "   :show-inheritance:", ""]
    if inspect.isroutine(obj):
        return [f".. autofunction:: {full}", ""]
    # a constant: its value when short, and the docstring written under its assignment
    out = [f".. py:data:: {full}"]
    value = repr(obj)
    if isinstance(obj, (int, float, str, bool)) and len(value) <= 80 and "\n" not in value:
        out.append(f"   :value: {value}")
    out.append("")
    out += [f"   {line}" if line else "" for line in attribute_doc(package, name, obj)]
    return [*out, ""]


def page(package: str, blurb: str, owners: dict[tuple[str, int], str], objects: dict[str, object]) -> str:
    """The reST page of one package."""
    title = f"``{package}``"
    lines = [title, "=" * len(title), "", blurb[0].upper() + blurb[1:] + ".", "", f".. automodule:: {package}", "",
             ".. list-table::", "   :widths: 30 70", ""]
    own = []
    for name, obj in objects.items():
        home = owners[name, id(obj)]
        doc = inspect.getdoc(obj) if is_described(obj) else "\n".join(attribute_doc(home, name, obj))
        lines += [f"   * - :py:obj:`~{home}.{name}`", f"     - {summary(doc or '')}"]
        if home == package:
            own.append((name, obj))
    lines.append("")
    for name, obj in own:
        lines += describe(package, name, obj)
    return "\n".join(lines) + "\n"


def write_pages(out: Path, mock_imports: list[str]) -> list[str]:
    """Write ``out/<package>.rst`` for every package of :data:`PACKAGES` present and ``out/index.rst``;
    return the packages written."""
    present, modules = [], {}
    with mock(mock_imports):
        for package, _ in PACKAGES:
            if importlib.util.find_spec(package) is None:
                continue
            modules[package] = importlib.import_module(package)
            present.append(package)
        objects = {p: {n: getattr(modules[p], n) for n in public_names(modules[p])} for p in present}
    # a re-export keeps its name: (name, object) identifies a public name across packages
    exporters: dict[tuple[str, int], list[str]] = {}
    for p in present:
        for name, obj in objects[p].items():
            exporters.setdefault((name, id(obj)), []).append(p)
    owners = {key: owner(objects[ps[0]][key[0]], ps) for key, ps in exporters.items()}
    out.mkdir(parents=True, exist_ok=True)
    blurbs = dict(PACKAGES)
    for p in present:
        text = page(p, blurbs[p], owners, objects[p])
        _write(out / f"{p}.rst", text)
    index = ["API reference", "=============", "",
             "One page per public package, generated from its ``__all__``: the package's docstring, a table of its "
             "names, and the description of each name it defines (a name re-exported by several packages is "
             "described on the most specific one).", "", ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {p}" for p in present]
    _write(out / "index.rst", "\n".join(index) + "\n")
    for stale in set(out.glob("*.rst")) - {out / "index.rst", *(out / f"{p}.rst" for p in present)}:
        stale.unlink()  # a page of a package no longer there
    return present


def _write(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` holds it already (an unchanged page keeps its time stamp, so Sphinx does
    not read it again)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _generate(app) -> None:
    written = write_pages(Path(app.srcdir) / "api", list(app.config.autodoc_mock_imports))
    logger.info(f"api_pages: {len(written)} package pages")


def setup(app):
    app.connect("builder-inited", _generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
