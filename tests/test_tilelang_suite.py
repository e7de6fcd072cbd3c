"""TileLang's own kernels (its ``examples/`` and ``testing/python/``), built from a checkout at test
time and compared table for table with TileLang 0.1.15's LayoutInference by ``tools/tilelang_suite.py``.

Runs only where TileLang is installed and ``TILELANG_SRC`` names a checkout of its repository
(nothing of it is part of this project); ``TILELANG_SUITE_ONLY`` (space-separated path fragments)
limits the files, since the whole suite takes hours on a small machine.  The test fails on any
untyped exception from the adapter."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.oracle,
              pytest.mark.skipif(importlib.util.find_spec("tilelang") is None, reason="TileLang is not installed"),
              pytest.mark.skipif(not os.environ.get("TILELANG_SRC"), reason="TILELANG_SRC names no TileLang checkout")]

TOOL = Path(__file__).resolve().parent.parent / "tools" / "tilelang_suite.py"


def test_tilelangs_own_kernels_have_no_untyped_failure(tmp_path):
    only = os.environ.get("TILELANG_SUITE_ONLY", "examples/elementwise examples/gemm/example_gemm.py").split()
    out = tmp_path / "suite.json"
    done = subprocess.run([sys.executable, str(TOOL), "--src", os.environ["TILELANG_SRC"], "--out", str(out),
                           "--only", *only], capture_output=True, text=True, timeout=3600)
    results = json.loads(out.read_text())
    assert results, done.stdout[-2000:]
    crashes = [r for r in results if r["status"] == "crash"]
    assert not crashes, crashes
    assert any(r["status"] == "equal" for r in results), done.stdout[-2000:]
