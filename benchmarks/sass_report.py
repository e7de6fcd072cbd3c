#!/usr/bin/env python
"""SASS report of layoutkit's sm_80 GEMM kernels beside TileLang's for the same configurations.

Each kernel is compiled with ``nvcc -O3 -cubin -arch=sm_80 -Xptxas -v`` (registers, spills, shared memory as
ptxas reports them; the dynamic shared memory of the launch beside it) and disassembled with ``cuobjdump
-sass``: the kernel's HMMA / IMMA / LDSM / LDGSTS / LDS / STS / BAR / PRMT / STG counts (``STG.128``: its 16-byte
global stores) and its k loop (the backward branch
whose body holds the mma instructions).  A loop that covers several k tiles per iteration (layoutkit unrolls
its pipeline by the stage count) is reported per k tile: loop instructions / (loop mmas / mmas per tile);
``int`` counts the integer ALU instructions among them.

    python benchmarks/sass_report.py [--tilelang-python PYTHON] [--keep DIR] [config ...]

TileLang's kernels come from ``tilelang.lower`` run by ``--tilelang-python`` (an interpreter with TileLang
0.1.15; by default the current one when it imports tilelang), with ``PYTHONPATH`` removed, and are compiled
with the same nvcc against the TileLang headers of that installation.  Without nvcc or cuobjdump (on ``PATH``,
under ``$CUDA_HOME/bin``, or from NVIDIA's ``nvidia-cuda-cuobjdump`` wheel) the report prints why it skipped and
exits 0; without TileLang it prints layoutkit's rows alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CONFIGS = {  # name -> (M, N, K, bM, bN, bK, stages, threads, dtype)
    "f16_128x128x32_s2_t128": (1024, 1024, 1024, 128, 128, 32, 2, 128, "float16"),
    "f16_128x128x32_s3_t128": (1024, 1024, 1024, 128, 128, 32, 3, 128, "float16"),
    "f16_128x128x32_s2_t256": (1024, 1024, 1024, 128, 128, 32, 2, 256, "float16"),
    "f16_64x64x32_s2_t128": (1024, 1024, 1024, 64, 64, 32, 2, 128, "float16"),
    "bf16_128x128x32_s2_t128": (1024, 1024, 1024, 128, 128, 32, 2, 128, "bfloat16"),
    "s8_128x128x64_s2_t128": (1024, 1024, 1024, 128, 128, 64, 2, 128, "int8"),
    "s8_64x64x64_s2_t128": (1024, 1024, 1024, 64, 64, 64, 2, 128, "int8"),
    "tf32_64x64x32_s2_t128": (1024, 1024, 1024, 64, 64, 32, 2, 128, "float32"),
}
MAIN = "f16_128x128x32_s2_t128"
"""The configuration of the acceptance target: k-loop instructions per k tile <= 1.05x TileLang's, no spills."""

COUNTED = ("HMMA", "IMMA", "LDSM", "LDGSTS", "LDS", "STS", "BAR", "PRMT", "STG", "STG.128")
"""Opcodes counted (``STG.128``: the 16-byte global stores, ``STG.E.128``; the others count every width)."""
INTEGER = ("IMAD", "IADD3", "LOP3", "LEA", "SHF", "ISETP", "SEL", "IABS", "IMNMX", "PRMT", "SGXT", "BMSK")
_ATOM_K = {"float16": 16, "bfloat16": 16, "int8": 32, "float32": 8}


# ---- TileLang's kernel (runs in TileLang's interpreter: imports tilelang only) -------------------------------

def tilelang_source(cfg, arch: str = "sm_80", transpose_B: bool = False, out_dtype: str | None = None,
                    staged: bool = False):
    """TileLang's CUDA source for ``arch`` of the GEMM ``cfg`` (A [M, K] x B [K, N], the docs kernel; B [N, K]
    with ``transpose_B``; C of ``out_dtype``, default the operands'; ``staged``: C stored through a shared tile,
    ``C_local -> C_shared -> C``) and its host module's text (which holds the
    launch's dynamic shared memory size)."""
    import tilelang
    import tilelang.language as T
    from tilelang import tvm

    M, N, K, bM, bN, bK, stages, threads, dtype = cfg
    accum = "int32" if dtype.startswith("int") else "float32"
    # the annotations see the closure: ``io`` is read in the body too
    io = {"B": (N, K) if transpose_B else (K, N), "B_s": (bN, bK) if transpose_B else (bK, bN),
          "C": out_dtype or dtype}

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(io["B"], dtype), C: T.Tensor((M, N), io["C"])):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared(io["B_s"], dtype)
            C_l = T.alloc_fragment((bM, bN), accum)
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A[by * bM, ko * bK], A_s)
                if transpose_B:
                    T.copy(B[bx * bN, ko * bK], B_s)
                else:
                    T.copy(B[ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=transpose_B)
            if staged:
                C_s = T.alloc_shared((bM, bN), io["C"])
                T.copy(C_l, C_s)
                T.copy(C_s, C[by * bM, bx * bN])
            else:
                T.copy(C_l, C[by * bM, bx * bN])

    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    with target:
        art = tilelang.lower(main, target=target)
    source = art.kernel_source if hasattr(art, "kernel_source") else art.get_kernel_source()
    host = getattr(art, "host_mod", None)
    return source, str(host.script() if hasattr(host, "script") else host)


def _tilelang_main(cfg_json: str, out: str) -> int:
    import tilelang

    source, host = tilelang_source(tuple(json.loads(cfg_json)))
    Path(out).write_text(source)
    Path(out).with_suffix(".host.txt").write_text(host)
    print(Path(tilelang.__file__).resolve().parent)
    return 0


# ---- tools ------------------------------------------------------------------------------------------------

def find_tool(name: str) -> str | None:
    """``name`` on ``PATH``, under ``$CUDA_HOME/bin`` or the usual CUDA prefix, or in NVIDIA's PyPI wheels."""
    hit = shutil.which(name)
    if hit:
        return hit
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / name).is_file():
            return str(Path(home) / "bin" / name)
    try:
        import nvidia  # the namespace package of NVIDIA's wheels (nvidia-cuda-cuobjdump and friends)
    except ImportError:
        return None
    for base in getattr(nvidia, "__path__", []):
        for cand in sorted(Path(base).glob(f"*/bin/{name}")):
            if os.access(cand, os.X_OK):
                return str(cand)
    return None


@dataclass(frozen=True)
class Sass:
    """What one compiled kernel is made of."""

    regs: int
    spill: int
    smem: int
    counts: dict
    loop: int
    loop_int: int
    tiles_per_iter: float

    @property
    def per_tile(self) -> float:
        return self.loop / self.tiles_per_iter

    @property
    def int_per_tile(self) -> float:
        return self.loop_int / self.tiles_per_iter


def _opcode(text: str) -> str:
    return re.sub(r"^@!?U?P[T0-9]+\s+", "", text).split()[0]


def parse_sass(text: str, mma_per_tile: int, smem: int, ptxas: str) -> Sass:
    """Counts of a ``cuobjdump -sass`` listing of one kernel (``ptxas`` is its ``-Xptxas -v`` output)."""
    ins = [(int(m.group(1), 16), m.group(2).strip())
           for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*?);", text)]
    ops = [_opcode(t) for _, t in ins]
    counts = {c: sum(o.split(".")[0] == c for o in ops) for c in COUNTED if "." not in c}
    counts["STG.128"] = sum(o.startswith("STG") and o.endswith(".128") for o in ops)
    spans = []  # backward branches: [target, branch] address ranges of the loops holding mma instructions
    for a, t in ins:
        m = re.search(r"BRA\s+(?:`\()?0x([0-9a-f]+)", t)
        if m and int(m.group(1), 16) <= a:
            seg = [_opcode(u) for b, u in ins if int(m.group(1), 16) <= b <= a]
            if any(o.startswith(("HMMA", "IMMA")) for o in seg):
                spans.append((int(m.group(1), 16), a, seg))
    loop, loop_int, tiles = _k_loop(spans, mma_per_tile)
    regs = re.search(r"Used (\d+) registers", ptxas)
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", ptxas)]
    static = re.search(r"(\d+) bytes smem", ptxas)
    return Sass(int(regs.group(1)) if regs else -1, sum(spills), smem + (int(static.group(1)) if static else 0),
                counts, loop, loop_int, tiles)


def _k_loop(spans, mma_per_tile: int) -> tuple[float, float, float]:
    """(instructions, integer instructions, k tiles) one iteration of the k loop executes: the outermost loop
    holding mma instructions; an inner loop holding them all (a k step loop left rolled) counts as many times
    as the tile needs, and the outer iteration then covers one tile."""
    if not spans:
        return 0.0, 0.0, 1.0
    lo, hi, seg = max(spans, key=lambda s: s[1] - s[0])
    inner = [s for s in spans if lo <= s[0] and s[1] <= hi and (s[0], s[1]) != (lo, hi)]

    def mmas(ops):
        return sum(o.startswith(("HMMA", "IMMA")) for o in ops)

    def integer(ops):
        return sum(o.split(".")[0] in INTEGER for o in ops)

    if inner:
        _, _, iseg = max(inner, key=lambda s: s[1] - s[0])
        if mmas(iseg) == mmas(seg):
            extra = mma_per_tile // mmas(iseg) - 1
            return len(seg) + extra * len(iseg), integer(seg) + extra * integer(iseg), 1.0
    return len(seg), integer(seg), mmas(seg) / mma_per_tile


def compile_sass(source: str, d: Path, stem: str, nvcc: str, cuobjdump: str, mma_per_tile: int, smem: int,
                 includes=()) -> Sass:
    cu, cubin = d / f"{stem}.cu", d / f"{stem}.cubin"
    cu.write_text(source)
    cmd = [nvcc, "-O3", "-arch=sm_80", "-cubin", "-std=c++17", "-Xptxas", "-v", *[f"-I{i}" for i in includes],
           "-o", str(cubin), str(cu)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"nvcc failed on {cu}:\n{res.stderr[-3000:]}")
    env = dict(os.environ)
    nvdisasm = find_tool("nvdisasm")  # cuobjdump -sass runs it (the nvidia-cuda-nvdisasm wheel has one)
    if nvdisasm:
        env["PATH"] = os.pathsep.join([str(Path(nvdisasm).parent), env.get("PATH", "")])
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True,
                          env=env).stdout
    (d / f"{stem}.sass").write_text(sass)
    return parse_sass(sass, mma_per_tile, smem, res.stderr + res.stdout)


# ---- the report -------------------------------------------------------------------------------------------

def _mma_per_tile(cfg) -> int:
    """mma instructions one thread (one warp) issues per k tile."""
    M, N, K, bM, bN, bK, stages, threads, dtype = cfg
    return bM * bN * bK // (16 * 8 * _ATOM_K[dtype]) // (threads // 32)


def layoutkit_kernel(cfg):
    sys.path.insert(0, str(ROOT))
    from layoutkit.backends.nv.cuda import print_module, smem_bytes
    from layoutkit.codegen import lower
    from layoutkit.infer import infer_layouts, programs

    M, N, K, bM, bN, bK, stages, threads, dtype = cfg
    p = programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, num_stages=stages, threads=threads, dtype=dtype,
                      accum_dtype="int32" if dtype.startswith("int") else "float32")
    k = lower(p, infer_layouts(p))
    return print_module([k]), smem_bytes(k)


def _tilelang_python(arg: str | None) -> str | None:
    if arg:
        return arg
    try:
        import tilelang  # noqa: F401
    except ImportError:
        return None
    return sys.executable


def _tilelang_row(tl_python, cfg, d: Path, name: str, nvcc, cuobjdump):
    out = d / f"tl_{name}.cu"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("TILELANG_CACHE_DIR", str(d / "tl_cache"))
    res = subprocess.run([tl_python, __file__, "--tilelang-source", json.dumps(list(cfg)), str(out)],
                         capture_output=True, text=True, env=env)
    if res.returncode:
        return f"TileLang failed: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}"
    root = Path(res.stdout.strip().splitlines()[-1])
    includes = [root / "src", root / "3rdparty" / "cutlass" / "include"]
    # the launch's last argument is its dynamic shared memory: call_packed(kernel, args.., grid, block, smem)
    launch = re.search(r"call_packed\(\"main_kernel\"[^)]*?(\d+)\)", out.with_suffix(".host.txt").read_text())
    return compile_sass(out.read_text(), d, f"tl_{name}", nvcc, cuobjdump, _mma_per_tile(cfg),
                        int(launch.group(1)) if launch else 0, includes)


def _row(who: str, s: Sass) -> str:
    c = " ".join(f"{k}={s.counts[k]}" for k in COUNTED if s.counts[k] or k != "IMMA")
    return (f"  {who:9} regs={s.regs:3} spill={s.spill}B smem={s.smem}B {c} | k loop: {s.loop} "
            f"({s.tiles_per_iter:g} tiles/iter) = {s.per_tile:.1f}/tile, int {s.int_per_tile:.1f}/tile")


def report(names, tl_python, keep: str | None) -> int:
    nvcc, cuobjdump = find_tool("nvcc"), find_tool("cuobjdump")
    if nvcc is None or cuobjdump is None:
        print(f"SASS report skipped: {'nvcc' if nvcc is None else 'cuobjdump'} not found (PATH, $CUDA_HOME/bin, "
              "or pip install nvidia-cuda-cuobjdump)")
        return 0
    if tl_python is None:
        print("TileLang not installed: layoutkit's kernels alone (--tilelang-python PYTHON to compare)")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(keep or tmp)
        d.mkdir(parents=True, exist_ok=True)
        for name in names:
            cfg = CONFIGS[name]
            src, smem = layoutkit_kernel(cfg)
            ours = compile_sass(src, d, f"lk_{name}", nvcc, cuobjdump, _mma_per_tile(cfg), smem)
            print(f"{name}:")
            print(_row("layoutkit", ours))
            theirs = _tilelang_row(tl_python, cfg, d, name, nvcc, cuobjdump) if tl_python else None
            if isinstance(theirs, Sass):
                print(_row("TileLang", theirs))
                ratio = ours.per_tile / theirs.per_tile
                iratio = ours.int_per_tile / max(theirs.int_per_tile, 1e-9)
                verdict = ""
                if name == MAIN:
                    ok = ratio <= 1.05 and ours.spill == 0
                    failed |= not ok
                    verdict = "  (target <= 1.05, no spills: " + ("met)" if ok else "MISSED)")
                print(f"  ratio    k-loop instructions/tile {ratio:.3f}x, integer {iratio:.3f}x, registers "
                      f"{ours.regs / theirs.regs:.3f}x{verdict}")
            elif theirs:
                print(f"  TileLang  {theirs}")
    return 0 if not failed else 1


def run_cli(argv, doc: str, configs, report_fn, tilelang_main, tilelang_python=lambda arg: arg) -> int:
    """The command line of both SASS reports: ``--tilelang-source`` runs the child that builds TileLang's
    kernel of one configuration; otherwise the named configurations (default: all) are reported."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--tilelang-source"]:
        return tilelang_main(argv[1], argv[2])
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("configs", nargs="*", help=f"of {', '.join(configs)} (default: all)")
    ap.add_argument("--tilelang-python", help="an interpreter with TileLang 0.1.15")
    ap.add_argument("--keep", help="keep the sources, cubins and SASS listings in this directory")
    args = ap.parse_args(argv)
    unknown = [c for c in args.configs if c not in configs]
    if unknown:
        ap.error(f"unknown configurations {unknown}; expected some of {list(configs)}")
    return report_fn(args.configs or list(configs), tilelang_python(args.tilelang_python), args.keep)


def main(argv=None) -> int:
    return run_cli(argv, __doc__, CONFIGS, report, _tilelang_main, _tilelang_python)


if __name__ == "__main__":
    sys.exit(main())
