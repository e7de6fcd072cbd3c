"""The preamble of every test module that needs TileLang: TileLang's kernel cache goes to a temporary
folder (not the home directory) before TileLang is first imported, then TileLang or a skip."""

import importlib.util
import os
import tempfile

import pytest


def require_tilelang():
    """The ``tilelang`` module, or skip the calling test module (TileLang 0.1.15 is optional)."""
    if "TILELANG_CACHE_DIR" not in os.environ and importlib.util.find_spec("tilelang") is not None:
        os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="layoutkit-tilelang-cache-")
    return pytest.importorskip("tilelang", reason="TileLang 0.1.15 is optional: `pip install .[tilelang]` or "
                                                  "`make test-tilelang`")
