"""Triton Gluon as a client of layoutkit (the optional ``gluon`` extra, triton 3.9; see ``docs/gluon.md``).

* :func:`from_gluon` / :func:`to_gluon`: Gluon layout objects <-> Fragments and Layouts, exactly;
* :mod:`.encodings`: the same layouts as MLIR attribute text and triton-free values with Triton's maps;
* :func:`resolve`: GLIR text in, every ``#gluon.auto_encoding`` chosen by layoutkit, text out;
  :func:`explain`: which op decided each value;
* :func:`resolving_layouts` / :func:`autolayout`: Gluon compiles that go through :func:`resolve`.

Importing this package never imports triton.

>>> from layoutkit.frontends import gluon as lkgl
>>> lkgl.parse_encoding("#ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>")
Blocked(size_per_thread=(4,), threads_per_warp=(32,), warps_per_cta=(4,), order=(0,))
"""

from .encodings import parse_encoding
from .hook import autolayout, resolving_layouts
from .objects import from_gluon, to_gluon
from .resolver import GlirResolveError, explain, resolve

__all__ = ["GlirResolveError", "autolayout", "explain", "from_gluon", "parse_encoding", "resolve", "resolving_layouts",
           "to_gluon"]
