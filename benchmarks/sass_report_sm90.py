#!/usr/bin/env python
"""SASS of layoutkit's sm_90a GEMM kernels (TMA + mbarrier + wgmma, warp specialised) beside TileLang's.

Both kernels are compiled with ``nvcc -O3 -arch=sm_90a -cubin -Xptxas -v`` and read with ``cuobjdump -sass``:
registers (the kernel's count at entry, and per warp group the producer's / consumers' ``setmaxnreg`` counts),
spills, shared memory, the HGMMA (fp16 / bf16) / QGMMA (fp8) / UTMALDG / SYNCS / USETMAXREG / WARPGROUP / BAR
counts, and the consumer k loop (the backward branch whose body holds the warp-group MMAs): its instructions
and integer instructions per k tile, and the epilogue's store mix (STSM / STS / FENCE / UTMASTG / STG and the
instructions from the last warp-group MMA to the consumers' EXIT).  The fp8 rows (e4m3 / e5m2, float32 C)
store B as [N, K] in both kernels: wgmma takes 8-bit operands K-major only.  Configurations ending
``_cshared`` stage C through a shared tile in both kernels (``C_local -> C_shared -> C``: stmatrix and a TMA
store in both); the others are TileLang's docs kernel (``C_local -> C``), which TileLang stores from registers
and layoutkit (16-bit C) through its staging tile and TMA (``lk direct``: layoutkit with ``tma_store=False``).

    python benchmarks/sass_report_sm90.py [--tilelang-python PYTHON] [--keep DIR] [config ...]

TileLang's source comes from ``tilelang.lower`` for ``arch = sm_90a`` in ``--tilelang-python`` (TileLang 0.1.15,
``PYTHONPATH`` removed) and compiles against that installation's headers.  Without nvcc or cuobjdump (with
nvdisasm beside it) the report prints why it skipped and exits 0.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CONFIGS = {  # name -> (M, N, K, bM, bN, bK, stages, consumer threads, dtype)
    "f16_128x128x64_s3_t256": (1024, 1024, 1024, 128, 128, 64, 3, 256, "float16"),
    "f16_128x128x64_s3_t128": (1024, 1024, 1024, 128, 128, 64, 3, 128, "float16"),
    "f16_128x256x64_s3_t256": (1024, 1024, 1024, 128, 256, 64, 3, 256, "float16"),
    "bf16_128x128x64_s4_t256": (1024, 1024, 1024, 128, 128, 64, 4, 256, "bfloat16"),
    "e4m3_128x128x128_s3_t256": (1024, 1024, 1024, 128, 128, 128, 3, 256, "float8_e4m3"),
    "e4m3_128x256x128_s3_t256": (1024, 1024, 1024, 128, 256, 128, 3, 256, "float8_e4m3"),
    "e5m2_128x128x128_s4_t128": (1024, 1024, 1024, 128, 128, 128, 4, 128, "float8_e5m2"),
    "f16_128x128x64_s3_t256_cshared": (1024, 1024, 1024, 128, 128, 64, 3, 256, "float16"),
    "bf16_128x128x64_s4_t256_cshared": (1024, 1024, 1024, 128, 128, 64, 4, 256, "bfloat16"),
}
COUNTED = ("HGMMA", "QGMMA", "UTMALDG", "SYNCS", "USETMAXREG", "WARPGROUP", "BAR")
GMMA = ("HGMMA", "QGMMA")
STORES = ("STSM", "STS", "FENCE", "UTMASTG", "STG")
"""The epilogue's store mix: stmatrix, st.shared, proxy fences, TMA stores, global stores."""


def staged(name: str) -> bool:
    """Whether configuration ``name`` stages C through a shared tile in both kernels."""
    return name.endswith("_cshared")


def _fp8(dtype: str) -> bool:
    return dtype.startswith("float8")


def _gemm_kwargs(cfg) -> dict:
    """``programs.gemm`` arguments of ``cfg`` on sm_90a (fp8: B [N, K], float32 C)."""
    M, N, K, bM, bN, bK, stages, threads, dtype = cfg
    fp8 = _fp8(dtype)
    return dict(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, num_stages=stages, threads=threads, dtype=dtype,
                target="sm_90a", transpose_B=fp8, out_dtype="float32" if fp8 else None)


def _sass_report():
    spec = importlib.util.spec_from_file_location("sass_report", Path(__file__).with_name("sass_report.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sass_report"] = mod
    spec.loader.exec_module(mod)
    return mod


def tilelang_source(cfg, staged_c: bool = False) -> str:
    """TileLang's sm_90a CUDA source of the GEMM ``cfg`` (the sm_80 report's docs kernel: A [M, K] x B [K, N];
    fp8: B [N, K] and a float32 C, as layoutkit's; ``staged_c``: C through a shared tile)."""
    fp8 = _fp8(cfg[-1])
    source, _host = _sass_report().tilelang_source(cfg, arch="sm_90a", transpose_B=fp8,
                                                   out_dtype="float32" if fp8 else None, staged=staged_c)
    return source


def _tilelang_main(cfg_json: str, out: str) -> int:
    import tilelang

    cfg = json.loads(cfg_json)
    Path(out).write_text(tilelang_source(tuple(cfg[:9]), staged_c=bool(cfg[9:] and cfg[9])))
    print(Path(tilelang.__file__).resolve().parent)
    return 0


@dataclass(frozen=True)
class Sass:
    regs: int
    spill: int
    counts: dict
    loop: int
    loop_int: int
    loop_tiles: float
    wg_regs: tuple = ()
    """``setmaxnreg`` counts: (producer's DEALLOC, consumers' TRY_ALLOC); empty when none."""
    stores: dict | None = None
    """The epilogue's :data:`STORES` counts."""
    tail: int = 0
    """Instructions from the last warp-group MMA to the next EXIT (what every consumer thread runs after it)."""

    @property
    def per_tile(self) -> float:
        return self.loop / self.loop_tiles


def parse(text: str, ptxas: str, hgmma_per_tile: int, sr) -> Sass:
    """Counts of one kernel's listing; the k loop is the shortest backward branch whose body holds as many
    HGMMA as any (the mbarrier retry blocks the compiler moves past the exit branch back into the loop too,
    over a longer range)."""
    ins = [(int(m.group(1), 16), m.group(2).strip()) for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*?);", text)]
    ops = [sr._opcode(t) for _, t in ins]
    counts = {c: sum(o.split(".")[0] == c for o in ops) for c in COUNTED}
    segs = []
    for a, t in ins:
        m = re.search(r"BRA\s+(?:`\()?0x([0-9a-f]+)", t)
        if m and int(m.group(1), 16) <= a:
            seg = [sr._opcode(u) for b, u in ins if int(m.group(1), 16) <= b <= a]
            segs.append((sum(o.startswith(GMMA) for o in seg), seg))
    most = max((n for n, _ in segs), default=0)
    best = min((seg for n, seg in segs if n == most and n), key=len, default=[])
    n_int = sum(o.split(".")[0] in sr.INTEGER for o in best)
    tiles = sum(o.startswith(GMMA) for o in best) / hgmma_per_tile if best else 1.0
    wg = [re.search(rf"USETMAXREG\.{kind}\S*\s+(?:\w+,\s*)?(0x[0-9a-f]+|\d+)", text)
          for kind in ("DEALLOC", "TRY_ALLOC")]
    regs = re.search(r"Used (\d+) registers", ptxas)
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", ptxas)]
    stores = {c: sum(o.split(".")[0] == c for o in ops) for c in STORES}
    last = max((k for k, o in enumerate(ops) if o.startswith(GMMA)), default=len(ops))
    end = next((k for k in range(last + 1, len(ops)) if ops[k].startswith("EXIT")), len(ops))
    return Sass(int(regs.group(1)) if regs else -1, sum(spills), counts, len(best), n_int, tiles or 1.0,
                tuple(int(m.group(1), 0) for m in wg) if all(wg) else (), stores,
                sum(o != "NOP" for o in ops[last + 1:end]))


def compile_sass(source: str, d: Path, stem: str, nvcc: str, cuobjdump: str, per_tile: int, sr, includes=()) -> Sass:
    cu, cubin = d / f"{stem}.cu", d / f"{stem}.cubin"
    cu.write_text(source)
    cmd = [nvcc, "-O3", "-arch=sm_90a", "-cubin", "-std=c++17", "-Xptxas", "-v", *[f"-I{i}" for i in includes],
           "-o", str(cubin), str(cu)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"nvcc failed on {cu}:\n{res.stderr[-3000:]}")
    env = dict(os.environ, PATH=str(Path(cuobjdump).parent) + os.pathsep + os.environ.get("PATH", ""))
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True,
                          env=env).stdout
    (d / f"{stem}.sass").write_text(sass)
    return parse(sass, res.stderr + res.stdout, per_tile, sr)


def _hgmma_per_tile(cfg) -> int:
    """Warp-group MMAs one consumer warp group of layoutkit's kernel issues per k tile (its wgmma tiles x k
    steps: k16, fp8 k32)."""
    sys.path.insert(0, str(ROOT))
    from layoutkit.backends.nv import hopper
    from layoutkit.infer import infer_layouts, programs

    p = programs.gemm(**_gemm_kwargs(cfg))
    h = hopper.plan(p, infer_layouts(p))
    return len(h.tiles[0]) * (h.bK // h.k_step)


def layoutkit_source(cfg, staged_c: bool = False, tma_store: bool | None = None) -> str:
    """layoutkit's kernel of ``cfg`` (``staged_c``: the program stages C in shared memory; ``tma_store``: as
    :func:`layoutkit.backends.nv.hopper.plan` takes it)."""
    sys.path.insert(0, str(ROOT))
    from layoutkit.backends.nv import hopper, hopper_cuda
    from layoutkit.infer import infer_layouts, programs

    if staged_c:
        kw = _gemm_kwargs(cfg)
        kw.pop("transpose_B"), kw.pop("out_dtype")
        p = programs.gemm_shared_epilogue(**kw)
    else:
        p = programs.gemm(**_gemm_kwargs(cfg))
    return hopper_cuda.print_module(hopper.plan(p, infer_layouts(p), tma_store=tma_store))


def _row(who: str, s: Sass) -> str:
    c = " ".join(f"{k}={s.counts[k]}" for k in COUNTED)
    wg = f" regs/WG producer {s.wg_regs[0]} consumers {s.wg_regs[1]}" if s.wg_regs else " regs/WG -"
    st = " ".join(f"{k}={(s.stores or {}).get(k, 0)}" for k in STORES)
    return (f"  {who:9} regs={s.regs:3}{wg} spill={s.spill}B {c} | k loop: {s.loop} ({s.loop_tiles:g} tiles) = "
            f"{s.per_tile:.1f}/tile, int {s.loop_int / s.loop_tiles:.1f}/tile | epilogue {st}, {s.tail} from the "
            "last MMA to EXIT")


def report(names, tl_python, keep) -> int:
    sr = _sass_report()
    nvcc, cuobjdump = sr.find_tool("nvcc"), sr.find_tool("cuobjdump")
    if nvcc is None or cuobjdump is None:
        print(f"sm_90a SASS report skipped: {'nvcc' if nvcc is None else 'cuobjdump'} not found")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(keep or tmp)
        d.mkdir(parents=True, exist_ok=True)
        for name in names:
            cfg = CONFIGS[name]
            per = _hgmma_per_tile(cfg)
            ours = compile_sass(layoutkit_source(cfg, staged(name)), d, f"lk_{name}", nvcc, cuobjdump, per, sr)
            print(f"{name}:")
            print(_row("layoutkit", ours))
            if not staged(name) and ours.stores and ours.stores["UTMASTG"]:
                direct = compile_sass(layoutkit_source(cfg, tma_store=False), d, f"lkd_{name}", nvcc, cuobjdump,
                                      per, sr)
                print(_row("lk direct", direct))
            if not tl_python:
                continue
            out = d / f"tl_{name}.cu"
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env.setdefault("TILELANG_CACHE_DIR", str(d / "tl_cache"))
            res = subprocess.run([tl_python, __file__, "--tilelang-source", json.dumps([*cfg, staged(name)]), str(out)],
                                 capture_output=True, text=True, env=env)
            if res.returncode:
                print(f"  TileLang  failed: {(res.stderr.strip().splitlines() or ['?'])[-1]}")
                continue
            root = Path(res.stdout.strip().splitlines()[-1])
            theirs = compile_sass(out.read_text(), d, f"tl_{name}", nvcc, cuobjdump, per, sr,
                                  [root / "src", root / "3rdparty" / "cutlass" / "include"])
            print(_row("TileLang", theirs))
            print(f"  ratio    k-loop instructions/tile {ours.per_tile / theirs.per_tile:.3f}x, integer "
                  f"{(ours.loop_int / ours.loop_tiles) / max(theirs.loop_int / theirs.loop_tiles, 1e-9):.3f}x")
    return 0


def main(argv=None) -> int:
    return _sass_report().run_cli(argv, __doc__, CONFIGS, report, _tilelang_main)


if __name__ == "__main__":
    sys.exit(main())
