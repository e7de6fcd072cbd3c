"""nvcc and cuobjdump for the sm_90a SASS tests: compile an emitted kernel to a cubin (``-Xptxas -v``
output kept for register and spill checks) and list its SASS opcodes.  Each skips the calling test
when its tool is missing, with the wheel that provides it; the tool lookup is the SASS report's."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.x]+)")
"""An instruction's full opcode, shape suffixes included (``QGMMA.64x64x32.F32.E4M3.E4M3``), its predicate
dropped."""


def sass_report():
    """``benchmarks/sass_report.py`` as a module (not a package: loaded from its path)."""
    if "sass_report" in sys.modules:
        return sys.modules["sass_report"]
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "sass_report.py"
    spec = importlib.util.spec_from_file_location("sass_report", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sass_report"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def compile_sm90a(source: str, d: Path) -> tuple[Path, str]:
    """(cubin, ptxas's ``-v`` report) of CUDA ``source`` compiled for sm_90a in folder ``d``."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    (d / "k.cu").write_text(source)
    res = subprocess.run([nvcc, "-arch=sm_90a", "-O3", "-cubin", "-Xptxas", "-v", str(d / "k.cu"), "-o",
                          str(d / "k.cubin")], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return d / "k.cubin", res.stderr


def cuobjdump() -> str:
    """cuobjdump's path, or the calling test skipped (call it first where compiling alone is not worth it)."""
    tool = sass_report().find_tool("cuobjdump")
    if tool is None:
        pytest.skip("no cuobjdump (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    return tool


def sass_opcodes(cubin: Path) -> list[str]:
    """The opcodes of ``cuobjdump -sass cubin``, in order."""
    tool = cuobjdump()
    env = dict(os.environ, PATH=str(Path(tool).parent) + os.pathsep + os.environ.get("PATH", ""))
    nvdisasm = sass_report().find_tool("nvdisasm")  # cuobjdump -sass runs it
    if nvdisasm:
        env["PATH"] = str(Path(nvdisasm).parent) + os.pathsep + env["PATH"]
    res = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True, env=env, timeout=600)
    if res.returncode != 0 and "nvdisasm" in res.stderr:
        pytest.skip("cuobjdump without nvdisasm (pip install nvidia-cuda-nvdisasm)")
    assert res.returncode == 0, res.stderr[-3000:]
    return OPCODE.findall(res.stdout)
