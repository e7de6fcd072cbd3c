"""Compile printed CUDA with the host C++ compiler and run a kernel on numpy arrays.

:func:`run_cuda` translates the text (:mod:`.translate`), compiles it once per distinct text and options
(cached by hash in a per-user directory, so a test session compiles each kernel once), writes the
arrays, runs every block of the grid and reads the arrays back.  A bounds, alignment or race error of the
kernel raises :class:`HarnessError` with the harness's message and the offending source line.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import numpy as np

from ...errors import LayoutError
from .translate import driver, translate

# package resources (importlib.resources), so that an installed wheel, zipped or not, finds them
HEADER = files("layoutkit.testing.cuda_cpu").joinpath("lk_cuda_cpu.h")
"""The header implementing the CUDA built-ins and the PTX instructions."""
HEADER_SM90 = files("layoutkit.testing.cuda_cpu").joinpath("lk_cuda_cpu_sm90.h")
"""Its sm_90 part (tensor maps, TMA, mbarriers, wgmma), appended to it in the header the harness builds."""
HEADER_SM90_STORE = files("layoutkit.testing.cuda_cpu").joinpath("lk_cuda_cpu_sm90_store.h")
"""Its sm_90 epilogue part (stmatrix, named barriers, the async proxy fence, TMA stores, bulk async-groups)."""


def header_text() -> str:
    """The harness's header: :data:`HEADER`, :data:`HEADER_SM90` then :data:`HEADER_SM90_STORE`."""
    return "\n".join(h.read_text() for h in (HEADER, HEADER_SM90, HEADER_SM90_STORE))


class HarnessError(LayoutError, RuntimeError):
    """The kernel failed on the CPU harness (out of bounds, misaligned, a race, a deadlock) or did not build."""


@dataclass(frozen=True)
class CudaRun:
    """The arrays after the kernel ran (parameter name -> array, shaped as given) and, when counted, the
    shared-memory traffic per source line: ``line -> (requests, wavefronts)``."""

    arrays: dict
    banks: dict


def compiler() -> str | None:
    """The C++ compiler the harness uses (``$CXX`` or ``g++``), or None when there is none."""
    return shutil.which(os.environ.get("CXX", "g++"))


def _cache_dir() -> Path:
    d = Path(tempfile.gettempdir()) / f"layoutkit-cuda-cpu-{os.getuid() if hasattr(os, 'getuid') else 0}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _header(cxx: str, flags: list[str]) -> Path:
    """A copy of the header in the cache with its precompiled form beside it (built once per header text and
    flags; the compiler falls back to the text when the precompiled form is missing or stale)."""
    text = header_text()
    key = hashlib.sha256("\0".join([text, cxx, *flags]).encode()).hexdigest()[:24]
    h = _cache_dir() / f"lkc-{key}.h"
    gch = h.with_name(h.name + ".gch")
    if not h.exists():
        tmp = h.with_name(h.name + f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, h)
    if not gch.exists():
        tmp = gch.with_name(gch.name + f".{os.getpid()}.tmp")
        res = subprocess.run([cxx, *flags, "-x", "c++-header", str(h), "-o", str(tmp)], capture_output=True,
                             timeout=600)
        if res.returncode == 0:
            os.replace(tmp, gch)
    return h


def build(source: str, *, sanitize: bool = False, opt: str = "-O1") -> Path:
    """The executable of ``source`` (compiled on first use; later calls with the same text and options reuse
    it).  ``sanitize`` adds AddressSanitizer."""
    cxx = compiler()
    if cxx is None:
        raise HarnessError("no C++ compiler: set CXX or install g++")
    t = translate(source)
    flags = ["-std=c++20", opt, "-w", "-fno-strict-aliasing"] + (["-fsanitize=address", "-g"] if sanitize else [])
    text = driver(t, str(_header(cxx, flags)))
    key = hashlib.sha256("\0".join([text, header_text(), cxx, *flags]).encode()).hexdigest()[:24]
    exe = _cache_dir() / f"k{key}"
    if exe.exists():
        return exe
    cpp = exe.with_suffix(".cpp")
    cpp.write_text(text)
    tmp = exe.with_name(exe.name + f".{os.getpid()}.tmp")
    res = subprocess.run([cxx, *flags, str(cpp), "-o", str(tmp)], capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise HarnessError(f"the translated kernel does not compile:\n{res.stderr[-4000:]}")
    os.replace(tmp, exe)
    return exe


def _line(source: str, msg: str) -> str:
    import re

    m = re.search(r"kernel\.cu:(\d+)", msg)
    if not m:
        return msg
    lines = source.splitlines()
    n = int(m.group(1))
    return msg + (f"\n  line {n}: {lines[n - 1].strip()[:300]}" if 0 < n <= len(lines) else "")


def run_cuda(source: str, arrays: dict, kernel: str | None = None, *, sanitize: bool = False,
             count_banks: bool = False, timeout: float = 300) -> CudaRun:
    """Run ``kernel`` (the only one when None) of the printed ``source`` on ``arrays`` (every parameter by
    name, in its storage dtype: fp16 as ``float16``, bf16 as ``uint16`` bits); returns copies after the run.

    >>> src = '''// launch k: grid (2, 1), block 32, dynamic shared memory 0 bytes
    ... extern "C" __global__ void __launch_bounds__(32) k(const float* __restrict__ x, float* __restrict__ y) {
    ...   y[blockIdx.x * 32 + threadIdx.x] = 2.0f * x[blockIdx.x * 32 + threadIdx.x];
    ... }
    ... '''
    >>> x = np.arange(64, dtype=np.float32)
    >>> out = run_cuda(src, {"x": x, "y": np.zeros(64, np.float32)})
    >>> float(out.arrays["y"][63])
    126.0
    """
    t = translate(source)
    names = [k.name for k in t.kernels]
    if kernel is None and len(names) != 1:
        raise HarnessError(f"run_cuda: the source has kernels {names}; name one")
    k = next((k for k in t.kernels if k.name == (kernel or names[0])), None)
    if k is None:
        raise HarnessError(f"run_cuda: no kernel {kernel!r}; the source has {names}")
    missing = [n for n, _, _ in k.buffers if n not in arrays]
    if missing:
        raise HarnessError(f"run_cuda: no array for parameter(s) {missing} of {k.name}")
    exe = build(source, sanitize=sanitize)
    with tempfile.TemporaryDirectory() as d:
        fin, fout, frep = Path(d, "in"), Path(d, "out"), Path(d, "report")
        with open(fin, "wb") as f:
            for n, _, _ in k.buffers:
                b = np.ascontiguousarray(arrays[n]).tobytes()
                f.write(struct.pack("<Q", len(b)) + b)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:detect_stack_use_after_return=0")
        res = subprocess.run([str(exe), k.name, str(fin), str(fout), str(frep)] + (["banks"] if count_banks else []),
                             capture_output=True, text=True, timeout=timeout, env=env)
        if res.returncode != 0:
            raise HarnessError(_line(source, (res.stderr or res.stdout).strip()[-4000:]
                                     or f"the kernel exited with status {res.returncode}"))
        data = fout.read_bytes()
        out, pos = {}, 0
        for n, _, _ in k.buffers:
            (nb,) = struct.unpack_from("<Q", data, pos)
            a = np.asarray(arrays[n])
            out[n] = np.frombuffer(data[pos + 8:pos + 8 + nb], dtype=a.dtype).reshape(a.shape).copy()
            pos += 8 + nb
        banks = {}
        for row in frep.read_text().split("\n"):
            if row.strip():
                line, req, wf = map(int, row.split())
                banks[line] = (req, wf)
    return CudaRun(out, banks)
