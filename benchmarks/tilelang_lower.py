#!/usr/bin/env python
"""Compile time end to end: ``tilelang.lower`` with layoutkit *as* its layout-inference pass and its
``T.gemm`` lowering on the ``mma.sync`` path (``layoutkit.frontends.tilelang.lower``) beside
``tilelang.lower`` alone, on GEMMs, flash attention, softmax and ten more kernels of
``tests/tilelang_kernels.py`` (sm_80, CUDA source, no device compile).

Each kernel is first checked: every lowering must give the same CUDA text and layoutkit's pass must
have solved it (no fallback to TileLang's pass).  Then each lowering is timed (medians over
``--reps`` runs after one warm-up) and split by a pass instrument into the layout pass (TileLang's
``tl.LayoutInference`` or layoutkit's), ``tl.LowerTileOp`` (where the GEMMs are lowered: TileLang's
parsed MMA macros or layoutkit's TIR) and the rest of TileLang's pipeline, which all share.
layoutkit's lowering is timed three ways per run: as a user lowering the kernel again sees it (the
pass remembers the functions it solved, so it only recognises this one), cold (that memory cleared
first: the kernel walked, solved and annotated), and with the layout pass alone (``lower_gemm=False``:
TileLang lowers the GEMMs).

    python benchmarks/tilelang_lower.py [--reps 5] [--arch sm_80] [--markdown FILE] [kernel ...]

``--markdown`` also writes the report, with the machine and its load average before the run (both
lowerings slow down under load, but not alike: compare runs made on a quiet machine).

Without TileLang it prints "tilelang not installed: skipped" and exits 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # this checkout's layoutkit and the kernels of its tests
    sys.path.insert(0, str(ROOT))

KERNELS = ("gemm_64", "gemm_128", "gemm_64x128_3stage_256t", "gemm_64_int8", "gemm_128x64_bf16_fullcol",
           "flash_attention", "attention_fullrow", "softmax_64x128", "elementwise_add_128", "reduce_sum_rows",
           "reduce_max_cols", "gemm_rowmax_bias", "gemm_bias_relu", "conv_im2col", "transpose_shared")
"""GEMM, flash attention and softmax, and ten more."""

PASSES = ("tl.LayoutInference", "layoutkit.LayoutInference")
TILE_OP = "tl.LowerTileOp"


def _lower_once(func, target: dict, ours: bool, cold: bool = False,
                lower_gemm: bool = True) -> tuple[float, float, str, list[str], dict[str, float]]:
    """(total seconds, layout pass seconds, CUDA text, fallbacks, seconds by pass name) of one lowering
    (``cold``: layoutkit's pass forgets what it solved first; ``lower_gemm``: layoutkit lowers the GEMMs)."""
    import tilelang
    from tilelang import tvm

    from layoutkit.frontends import tilelang as frontend

    if cold:
        frontend.clear_cache()

    by_pass: dict[str, float] = {}
    started: list[float] = []

    @tvm.ir.instrument.pass_instrument
    class PassTimes:
        def run_before_pass(self, mod, info):
            started.append(time.perf_counter())

        def run_after_pass(self, mod, info):
            by_pass[info.name] = by_pass.get(info.name, 0.0) + time.perf_counter() - started.pop()

    fallbacks: list[str] = []
    with tvm.transform.PassContext(instruments=[PassTimes()]):
        t0 = time.perf_counter()
        if ours:
            with frontend.layoutkit_inference(lower_gemm=lower_gemm) as record, tvm.target.Target(target):
                src = tilelang.lower(func, target=target).kernel_source
            fallbacks = record.fallbacks
        else:
            with tvm.target.Target(target):
                src = tilelang.lower(func, target=target).kernel_source
        total = time.perf_counter() - t0
    return total, sum(by_pass.get(n, 0.0) for n in PASSES), src, fallbacks, by_pass


def measure(name: str, reps: int, arch: str) -> dict:
    """Check one kernel, then time both lowerings (interleaved, so machine noise hits both alike)."""
    from tests import tilelang_kernels as tk

    target = {"kind": "cuda", "arch": arch}
    func = tk.KERNELS[name]()
    # the equality checks, each on a kernel built afresh (lowering a GEMM renames the kernel's thread
    # variable, which a later lowering of the same objects would see), then the warm-ups
    theirs = _lower_once(tk.KERNELS[name](), target, ours=False)[2]
    for lower_gemm in (True, False):
        _, _, src, fallbacks, _ = _lower_once(tk.KERNELS[name](), target, ours=True, lower_gemm=lower_gemm)
        if fallbacks or src != theirs:
            return {"name": name, "error": "fell back: " + fallbacks[0] if fallbacks else "CUDA text differs"}
    for ours in (False, True):
        _lower_once(func, target, ours=ours)
    runs: dict[str, list[tuple[float, float]]] = {"tl": [], "lk": [], "cold": [], "pass_only": []}
    tile_op: dict[str, list[float]] = {"tl": [], "lk": []}
    passes: list[dict[str, float]] = []
    for _ in range(reps):
        total, alone, _, _, by_pass = _lower_once(func, target, ours=False)
        runs["tl"].append((total, alone))
        tile_op["tl"].append(by_pass.get(TILE_OP, 0.0))
        passes.append(by_pass)
        total, alone, _, _, by_pass = _lower_once(func, target, ours=True)
        runs["lk"].append((total, alone))
        tile_op["lk"].append(by_pass.get(TILE_OP, 0.0))
        runs["cold"].append(_lower_once(func, target, ours=True, cold=True)[:2])
        runs["pass_only"].append(_lower_once(func, target, ours=True, lower_gemm=False)[:2])
    med = {k: (statistics.median(t for t, _ in v), statistics.median(p for _, p in v)) for k, v in runs.items()}
    names = {n for d in passes for n in d}
    return {"name": name, "tl_total": med["tl"][0], "tl_pass": med["tl"][1], "lk_total": med["lk"][0],
            "lk_pass": med["lk"][1], "cold_total": med["cold"][0], "cold_pass": med["cold"][1],
            "pass_only_total": med["pass_only"][0], "tl_tile_op": statistics.median(tile_op["tl"]),
            "lk_tile_op": statistics.median(tile_op["lk"]),
            "tl_by_pass": {n: statistics.median(d.get(n, 0.0) for d in passes) for n in names}}


def report(rows: list[dict]) -> list[str]:
    """The table, the median end-to-end and pass-alone ratios, and where TileLang's time goes."""
    out = ["| kernel | tilelang.lower | of which LayoutInference | of which LowerTileOp | with layoutkit | of which "
           "layoutkit's pass | of which LowerTileOp | end-to-end ratio | cold: end-to-end | pass only: end-to-end "
           "| pass ratio | cold: pass | floor of a free pass |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ok = [r for r in rows if "error" not in r]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['name']} | - | - | - | - | - | - | not timed: {r['error']} | - | - | - | - | - |")
            continue
        out.append(f"| {r['name']} | {r['tl_total'] * 1e3:.1f} ms | {r['tl_pass'] * 1e3:.1f} ms | "
                   f"{r['tl_tile_op'] * 1e3:.1f} ms | {r['lk_total'] * 1e3:.1f} ms | {r['lk_pass'] * 1e3:.2f} ms | "
                   f"{r['lk_tile_op'] * 1e3:.1f} ms | {r['lk_total'] / r['tl_total']:.2f}x | "
                   f"{r['cold_total'] / r['tl_total']:.2f}x | {r['pass_only_total'] / r['tl_total']:.2f}x | "
                   f"{r['lk_pass'] / r['tl_pass']:.4f}x | {r['cold_pass'] / r['tl_pass']:.3f}x | "
                   f"{1 - r['tl_pass'] / r['tl_total']:.2f}x |")
    if ok:
        def med(f) -> float:
            return statistics.median(f(r) for r in ok)

        out += ["", f"median end-to-end ratio (layoutkit as the pass and the GEMM lowering / tilelang.lower): "
                f"{med(lambda r: r['lk_total'] / r['tl_total']):.2f}x over {len(ok)} kernels, each checked to give "
                f"the same CUDA text first (cold, the pass's memory cleared: "
                f"{med(lambda r: r['cold_total'] / r['tl_total']):.2f}x)",
                f"median end-to-end ratio with the layout pass alone (TileLang lowers the GEMMs): "
                f"{med(lambda r: r['pass_only_total'] / r['tl_total']):.2f}x; its floor, TileLang's pipeline "
                f"without its LayoutInference: {med(lambda r: 1 - r['tl_pass'] / r['tl_total']):.2f}x",
                f"median pass-alone ratio (layoutkit's pass / TileLang's LayoutInference): "
                f"{med(lambda r: r['lk_pass'] / r['tl_pass']):.4f}x "
                f"(cold: {med(lambda r: r['cold_pass'] / r['tl_pass']):.3f}x)",
                f"LayoutInference is a median {med(lambda r: r['tl_pass'] / r['tl_total']):.0%} of tilelang.lower, "
                f"LowerTileOp {med(lambda r: r['tl_tile_op'] / r['tl_total']):.0%}; LowerTileOp with layoutkit's "
                f"GEMM lowering: {med(lambda r: r['lk_tile_op'] / max(r['tl_tile_op'], 1e-9)):.2f}x of TileLang's"]
        out += ["", *where_time_goes(ok)]
    return out


def where_time_goes(rows: list[dict], top: int = 6) -> list[str]:
    """Shares of tilelang.lower's time, all kernels together: the costliest passes and what runs
    outside any pass (Python glue of the pipeline, CUDA source printing)."""
    total = sum(r["tl_total"] for r in rows)
    by_pass: dict[str, float] = {}
    for r in rows:
        for n, t in r["tl_by_pass"].items():
            by_pass[n] = by_pass.get(n, 0.0) + t
    inside = sum(by_pass.values())
    ranked = sorted(by_pass.items(), key=lambda kv: -kv[1])[:top]
    parts = [f"{n} {t / total:.0%}" for n, t in ranked]
    return ["where tilelang.lower's time goes (all kernels): " + ", ".join(parts)
            + f", outside any pass {max(total - inside, 0.0) / total:.0%}"]


def header(args, load: tuple[float, float, float], seconds: float) -> list[str]:
    """What the Markdown report says about how it was made: command, machine, load before the run."""
    import platform

    import tilelang

    return ["# End to end: `tilelang.lower` with layoutkit as its layout pass and GEMM lowering", "",
            f"Written by `python benchmarks/tilelang_lower.py --reps {args.reps} --arch {args.arch} --markdown "
            f"{args.markdown.name}` in {seconds:.0f} s; times are medians over {args.reps} runs after a warm-up.",
            "", f"* machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs; "
            f"Python {platform.python_version()}, tilelang {tilelang.__version__}",
            f"* load average before the run: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}", ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", default=list(KERNELS))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--arch", default="sm_80")
    parser.add_argument("--markdown", type=Path, help="also write the report here, with the machine's load")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("tilelang") is None:
        print("tilelang not installed: skipped")
        return 0
    os.environ.setdefault("TILELANG_CACHE_DIR", tempfile.mkdtemp(prefix="layoutkit-bench-tl-"))
    load = os.getloadavg()
    started = time.perf_counter()
    rows = [measure(name, args.reps, args.arch) for name in args.kernels]
    lines = report(rows)
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join([*header(args, load, time.perf_counter() - started), *lines]) + "\n")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
