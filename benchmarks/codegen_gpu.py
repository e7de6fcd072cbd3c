"""Build and run the emitted CUDA GEMM on an NVIDIA GPU; report TFLOP/s beside ``torch.matmul``.

Runnable on its own: ``python benchmarks/codegen_gpu.py [--size 4096] [--tile 128] [--stages 2]``.
Needs ``nvcc``, ``torch`` with CUDA and a GPU; otherwise it prints ``no GPU: skipped`` and exits 0.
The kernel is compiled with a small host launcher into a shared library and called through ctypes on
torch's device pointers; its result is checked against ``torch.matmul`` before timing.
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

for _p in (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent):
    if str(_p) not in sys.path:  # measure this checkout's layoutkit, installed or not
        sys.path.insert(0, str(_p))

from layoutkit.backends.nv.cuda import print_module, smem_bytes  # noqa: E402
from layoutkit.codegen import lower  # noqa: E402
from layoutkit.infer import infer_layouts, programs  # noqa: E402

LAUNCHER = """
#include <cuda_runtime.h>
extern "C" int lk_run(const void* A, const void* B, void* C, int iters, float* ms) {{
  cudaFuncSetAttribute({name}, cudaFuncAttributeMaxDynamicSharedMemorySize, {smem});
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int i = 0; i < iters; ++i) {{
    {name}<<<dim3({gx}, {gy}), dim3({threads}), {smem}>>>((const half*)A, (const half*)B, (half*)C);
  }}
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  cudaEventElapsedTime(ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return (int)cudaGetLastError();
}}
"""


def _gpu():
    """``torch`` when a CUDA GPU and nvcc are usable, else ``None``."""
    if shutil.which("nvcc") is None:
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--tile", type=int, default=128)
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args(argv)
    torch = _gpu()
    if torch is None:
        print("no GPU: skipped (needs nvcc, torch with CUDA and an NVIDIA GPU)")
        return 0
    n, t = args.size, args.tile
    p = programs.gemm(M=n, N=n, K=n, bM=t, bN=t, bK=32, num_stages=args.stages)
    k = lower(p, infer_layouts(p))
    major, minor = torch.cuda.get_device_capability()
    src = print_module([k]) + LAUNCHER.format(name=k.name, smem=smem_bytes(k), gx=k.grid[0], gy=k.grid[1],
                                              threads=k.threads)
    with tempfile.TemporaryDirectory() as d:
        cu, so = Path(d) / "gemm.cu", Path(d) / "gemm.so"
        cu.write_text(src)
        subprocess.run(["nvcc", "-O3", f"-arch=sm_{major}{minor}", "--shared", "-Xcompiler", "-fPIC", str(cu),
                        "-o", str(so)], check=True)
        lib = ctypes.CDLL(str(so))
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        c = torch.zeros(n, n, device="cuda", dtype=torch.float16)
        ms = ctypes.c_float()
        args_ = (ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(c.data_ptr()))
        err = lib.lk_run(*args_, 1, ctypes.byref(ms))
        torch.cuda.synchronize()
        ref = torch.matmul(a, b)
        ok = err == 0 and torch.allclose(c.float(), ref.float(), rtol=1e-2, atol=1e-1)
        lib.lk_run(*args_, args.iters, ctypes.byref(ms))
        ours = 2 * n**3 * args.iters / (ms.value * 1e-3) / 1e12
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            torch.matmul(a, b)
        stop.record()
        torch.cuda.synchronize()
        theirs = 2 * n**3 * args.iters / (start.elapsed_time(stop) * 1e-3) / 1e12
    print(f"{k.name} on {torch.cuda.get_device_name()}: {ours:.1f} TFLOP/s (check {'ok' if ok else 'FAILED'}, "
          f"cuda error {err}); torch.matmul {theirs:.1f} TFLOP/s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
