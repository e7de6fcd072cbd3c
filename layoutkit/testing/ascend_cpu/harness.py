"""Compile printed Ascend C with the host C++ compiler against the CPU model and run it.

:func:`run_ascend_c` writes a small driver around the kernel text (one ``GM_ADDR`` per GM tensor, in order),
compiles it once per distinct text (cached by hash in a per-user temporary directory, so a test session
compiles each kernel once), writes the GM arrays, runs AI cores ``0 .. block_num - 1`` one after another on one
global memory and reads the arrays back.  A race, an out-of-bounds or uninitialised access, a deadlock or a
build error raises :class:`AscendCpuError` with the model's message.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from importlib.resources import files
from pathlib import Path

import numpy as np

from ...errors import LayoutError

HEADER_DIR = files("layoutkit.testing.ascend_cpu")
"""The package folder holding the model's ``kernel_operator.h``, as a package resource (``importlib.resources``):
an installed wheel, zipped or not, finds it there; each build copies it beside the kernel."""

STORAGE = {"float16": np.float16, "bfloat16": np.uint16, "float32": np.float32, "int32": np.int32,
           "int8": np.int8, "uint8": np.uint8}
FLAGS = ["-std=c++17", "-O2", "-ffp-contract=off", "-pthread", "-Wall", "-Werror", "-Wno-unused-variable",
         "-Wno-unused-but-set-variable"]


class AscendCpuError(LayoutError, RuntimeError):
    """The kernel failed on the CPU model (a race, out of bounds, uninitialised data, a deadlock) or did not
    build."""


def compiler() -> str | None:
    """The C++ compiler the runner uses (``$CXX`` or ``g++``), or None when there is none."""
    return shutil.which(os.environ.get("CXX", "g++"))


def _cache_dir() -> Path:
    d = Path(tempfile.gettempdir()) / f"layoutkit-ascend-cpu-{os.getuid() if hasattr(os, 'getuid') else 0}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _driver(kernel: str, params: Sequence[tuple[str, str, tuple[int, ...]]]) -> str:
    """``main``: read each GM tensor from its file, run every AI core, write the tensors back."""
    lines = ['#include "kernel_operator.h"', '#include "kernel.cpp"', "#include <fstream>", "",
             "int main(int argc, char** argv) {",
             "    if (argc != 3) { std::fprintf(stderr, \"usage: run BLOCKS DIR\\n\"); return 2; }",
             "    int blocks = std::atoi(argv[1]);",
             "    std::string dir = argv[2];",
             f"    static lkm::Buf gm[{max(len(params), 1)}];"]
    for i, (name, dtype, shape) in enumerate(params):
        count = int(np.prod(shape)) if shape else 1
        size = np.dtype(STORAGE[dtype]).itemsize
        lines += [f"    gm[{i}].name = \"{name}\"; gm[{i}].elem = {size}; gm[{i}].bytes = {count * size};",
                  f"    gm[{i}].own.resize({count * size}); gm[{i}].data = gm[{i}].own.data();",
                  f"    gm[{i}].sh.assign({count}, lkm::Shadow{{}});",
                  f"    for (auto& s : gm[{i}].sh) s.init = 1;",
                  f"    {{ std::ifstream f(dir + \"/{i}.bin\", std::ios::binary); "
                  f"f.read(reinterpret_cast<char*>(gm[{i}].data), {count * size}); }}",
                  f"    lkm::M().gm.push_back(&gm[{i}]);"]
    args = ", ".join(f"gm[{i}].data" for i in range(len(params)))
    lines += ["    for (int b = 0; b < blocks; ++b)",
              f"        lkm::run_block(b, blocks, [&] {{ {kernel}({args}); }});"]
    for i, (_, dtype, shape) in enumerate(params):
        nbytes = (int(np.prod(shape)) if shape else 1) * np.dtype(STORAGE[dtype]).itemsize
        lines.append(f"    {{ std::ofstream f(dir + \"/{i}.bin\", std::ios::binary); "
                     f"f.write(reinterpret_cast<char*>(gm[{i}].data), {nbytes}); }}")
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def build(source: str, kernel: str, params: Sequence[tuple[str, str, tuple[int, ...]]]) -> Path:
    """The executable of ``source`` (one kernel named ``kernel``) with its driver, built once per text."""
    cxx = compiler()
    if cxx is None:
        raise AscendCpuError("run_ascend_c: no C++ compiler (set $CXX or install g++)")
    header = HEADER_DIR.joinpath("kernel_operator.h").read_text()
    driver = _driver(kernel, params)
    key = hashlib.sha256("\0".join([source, driver, header, cxx, *FLAGS]).encode()).hexdigest()[:24]
    exe = _cache_dir() / f"asc{key}"
    if exe.exists():
        return exe
    work = Path(tempfile.mkdtemp(dir=_cache_dir()))
    (work / "kernel.cpp").write_text(source)
    (work / "kernel_operator.h").write_text(header)
    (work / "main.cpp").write_text(driver)
    tmp = work / "a.out"
    done = subprocess.run([cxx, *FLAGS, f"-I{work}", str(work / "main.cpp"), "-o", str(tmp)],
                          capture_output=True, text=True)
    try:
        if done.returncode != 0:
            raise AscendCpuError(f"run_ascend_c: the kernel does not build against the CPU model:\n"
                                 f"{done.stderr[-4000:]}")
        os.replace(tmp, exe)  # atomic: parallel test workers may build the same kernel
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return exe


def run_ascend_c(source: str, kernel: str, params: Sequence[tuple[str, str, tuple[int, ...]]],
                 arrays: Mapping[str, np.ndarray], block_num: int) -> dict[str, np.ndarray]:
    """Run the printed kernel ``kernel`` of ``source`` on AI cores ``0 .. block_num - 1``.  ``params`` are the GM
    tensors in argument order as ``(name, dtype, shape)``; ``arrays`` gives values for some of them (bfloat16 as
    values; the others start at zero).  Returns every tensor (bfloat16 decoded to float32)."""
    exe = build(source, kernel, params)
    with tempfile.TemporaryDirectory(dir=_cache_dir()) as d:
        for i, (name, dtype, shape) in enumerate(params):
            arr = np.asarray(arrays[name], np.float32) if name in arrays else np.zeros(shape, np.float32)
            if arr.shape != tuple(shape):
                raise AscendCpuError(f"run_ascend_c: {name} has shape {arr.shape}; expected {tuple(shape)}")
            Path(d, f"{i}.bin").write_bytes(_encode(arr, dtype).tobytes())
        done = subprocess.run([str(exe), str(int(block_num)), d], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise AscendCpuError(f"run_ascend_c: {kernel} failed on the CPU model: "
                                 f"{(done.stderr or done.stdout).strip()[-2000:]}")
        out = {}
        for i, (name, dtype, shape) in enumerate(params):
            raw = np.frombuffer(Path(d, f"{i}.bin").read_bytes(), STORAGE[dtype]).reshape(shape)
            out[name] = _decode(raw, dtype)
    return out


def _encode(arr: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":  # round to nearest even, as a host conversion would
        bits = np.ascontiguousarray(arr, np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.ascontiguousarray(arr).astype(STORAGE[dtype])


def _decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return raw.copy()


def run_kernel(kernel, arrays: Mapping[str, np.ndarray], block_num: int | None = None,
               source: str | None = None) -> dict[str, np.ndarray]:
    """:func:`run_ascend_c` for a lowered :class:`~layoutkit.backends.ascend.ir.Kernel` (printed unless
    ``source`` is given), on ``kernel.block_dim`` AI cores by default."""
    from ...backends.ascend.ascend_c import ident, print_kernel

    text = print_kernel(kernel) if source is None else source
    params = [(g.name, g.dtype, tuple(g.shape)) for g in kernel.params]
    return run_ascend_c(text, ident(kernel.name), params, arrays, kernel.block_dim if block_num is None else block_num)
