"""Sphinx configuration of the documentation site (``make docs`` writes it to ``build/docs/``).

The guides are the Markdown pages of this folder (MyST); the API reference is generated from the packages'
``__all__`` by ``_ext/api_pages.py`` (autodoc, napoleon); the notebooks of ``notebooks/`` are copied into
``tutorials/`` and executed by myst-nb, so their figures are drawn at build time; the op table of the JSON
program format comes from the tile-op registry (``_ext/program_ops.py``).  CI builds with warnings as errors.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "_ext"))

import layoutkit  # noqa: E402  (after the extension folder joins the path)

project = "layoutkit"
author = "the layoutkit authors"
copyright = "the layoutkit authors (Apache-2.0)"
release = version = layoutkit.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_nb",
    "api_pages",
    "program_ops",
]

root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store", "**/.ipynb_checkpoints"]
html_theme = "alabaster"
html_title = f"layoutkit {release}"
html_theme_options = {"description": "tensor-compiler layouts", "fixed_sidebar": False}

# the optional clients of the front ends and bridges: the API pages import with them mocked when absent
autodoc_mock_imports = ["triton", "jax", "jaxlib", "cutlass", "tilelang", "tvm", "torch"]
autodoc_member_order = "bysource"
# a type name in a signature (``bytes``) also names dataclass fields (``GlobalTraffic.bytes``): Sphinx would call
# the reference ambiguous; it is the builtin, so that one warning class is off
suppress_warnings = ["ref.python"]
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# MyST: GitHub-style anchors, so the guides' `page.md#heading` links resolve as they do on GitHub
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath"]

# notebooks: executed at build (CPU only, offline), results cached between builds under build/
nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "build" / ".jupyter_cache")
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True


def _copy_notebooks(app) -> None:
    """The notebooks live in ``notebooks/`` (where readers open them); Sphinx reads them from ``tutorials/``."""
    target = Path(app.srcdir) / "tutorials"
    target.mkdir(exist_ok=True)
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        copy = target / nb.name
        if not copy.exists() or copy.read_bytes() != nb.read_bytes():
            shutil.copyfile(nb, copy)


def setup(app):
    app.connect("builder-inited", _copy_notebooks)
