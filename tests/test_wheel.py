"""The wheel works on its own: installed into a fresh virtual environment, run from a folder outside the repository
(so nothing is imported from the checkout), it runs the ``layoutkit demo`` command, a proof, and a printed kernel
on each CPU harness (the harnesses' C++ headers ship in the wheel as package data).

Slow and needs PyPI (or a pip cache) for the dependencies: ``make test-wheel`` builds the wheel and runs this
with ``LAYOUTKIT_WHEEL=dist/<wheel>``; ``LAYOUTKIT_WHEEL=build`` builds one here.  Skipped otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHEEL = os.environ.get("LAYOUTKIT_WHEEL")
pytestmark = pytest.mark.skipif(not WHEEL, reason="`make test-wheel` (LAYOUTKIT_WHEEL=<wheel> or =build) runs this")

HEADERS = ["layoutkit/testing/cuda_cpu/lk_cuda_cpu.h", "layoutkit/testing/cuda_cpu/lk_cuda_cpu_sm90.h",
           "layoutkit/testing/cuda_cpu/lk_cuda_cpu_sm90_store.h", "layoutkit/testing/ascend_cpu/kernel_operator.h",
           "layoutkit/py.typed"]

# run by the fresh environment's interpreter, from a temporary folder
CHECKS = r'''
import sys
from pathlib import Path

import numpy as np

import layoutkit as lk
from layoutkit import codegen
from layoutkit.infer import infer_layouts, programs
from layoutkit.targets import nv
from layoutkit.testing.ascend_cpu import run_kernel
from layoutkit.testing.cuda_cpu import run_cuda

venv, repo = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
where = Path(lk.__file__).resolve()
assert venv in where.parents and repo not in where.parents, where
print("imported from", where)

swz = nv.make_full_bank_swizzled_layout([32, 64], "float16")
assert swz.prove_bijective().verdict and lk.Layout.from_linear(swz.to_linear()).is_equal(swz)
mixed = lk.Layout([6, 10], lambda i, j: (j % 5 * 12 + i * 2 + j // 5,))  # not F2-linear: islpy decides
proof = mixed.prove_bijective("isl")
assert proof.verdict and proof.method == "isl", proof
print("proof:", proof)

rng = np.random.default_rng(0)
M, N, K = 64, 64, 64
a = rng.standard_normal((M, K)).astype(np.float16)
b = rng.standard_normal((K, N)).astype(np.float16)
want = a.astype(np.float64) @ b.astype(np.float64)

p = programs.gemm(M=M, N=N, K=K, bM=64, bN=64, bK=32, threads=128)
source = codegen.emit_cuda(p, infer_layouts(p))
c = run_cuda(source, {"A": a.reshape(-1), "B": b.reshape(-1), "C": np.zeros(M * N, np.float16)}).arrays["C"]
err = np.abs(c.reshape(M, N).astype(np.float64) - want).max()
assert err < 0.05 * np.abs(want).max(), err
print("cuda_cpu: sm_80 GEMM, max error", err)

p = programs.ascend_gemm(M, N, K, 64, 64, 64, "float16")
out = run_kernel(codegen.lower(p, infer_layouts(p)), {"A": a, "B": b})
err = np.abs(out["C"].reshape(M, N).astype(np.float64) - want).max()
assert err < 1e-3 * np.abs(want).max(), err
print("ascend_cpu: Ascend GEMM, max error", err)
'''


def _wheel(tmp: Path) -> Path:
    if WHEEL != "build":
        return Path(WHEEL).resolve()
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp / "dist"), str(ROOT)], check=True,
                   capture_output=True)
    return next((tmp / "dist").glob("*.whl"))


def test_the_wheel_ships_the_harness_headers_and_runs_from_a_fresh_environment(tmp_path):
    wheel = _wheel(tmp_path)
    assert set(HEADERS) <= set(zipfile.ZipFile(wheel).namelist())
    # nothing of the checkout on the path (an egg-info there would even make pip think layoutkit installed)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel), "numpy", "sympy", "islpy",
                          "networkx"], capture_output=True, text=True, env=env)
    assert pip.returncode == 0, pip.stderr[-3000:]
    away = tmp_path / "elsewhere"  # not the repository: the checkout must not be importable
    away.mkdir()
    demo = subprocess.run([str(bindir / "layoutkit"), "demo"], cwd=away, env=env, capture_output=True, text=True,
                          timeout=600)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "== layoutkit demo ==" in demo.stdout and "proved by isl" in demo.stdout, demo.stdout[-2000:]
    checks = away / "checks.py"
    checks.write_text(CHECKS)
    run = subprocess.run([str(python), str(checks), str(venv), str(ROOT)], cwd=away, env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "cuda_cpu: sm_80 GEMM" in run.stdout and "ascend_cpu: Ascend GEMM" in run.stdout
