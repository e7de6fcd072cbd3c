#!/usr/bin/env python
"""Compile time end to end: ``tilelang.lower`` with layoutkit *as* its layout-inference pass
(``layoutkit.frontends.tilelang.lower``) beside ``tilelang.lower`` alone, on GEMMs, flash attention,
softmax and ten more kernels of ``tests/tilelang_kernels.py`` (sm_80, CUDA source, no device compile).

Each kernel is first checked: both lowerings must give the same CUDA text and layoutkit's pass must
have solved it (no fallback to TileLang's pass).  Then each lowering is timed (medians over
``--reps`` runs after one warm-up) and split by a pass instrument into the layout pass (TileLang's
``tl.LayoutInference`` or layoutkit's) and the rest of TileLang's pipeline, which both share.
layoutkit's lowering is timed twice per run: as a user lowering the kernel again sees it (the pass
remembers the functions it solved, so it only recognises this one) and cold (that memory cleared
first: the kernel walked, solved and annotated).

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


def _lower_once(func, target: dict, ours: bool, cold: bool = False) -> tuple[float, float, str, list[str],
                                                                          dict[str, float]]:
    """(total seconds, layout pass seconds, CUDA text, fallbacks, seconds by pass name) of one lowering
    (``cold``: layoutkit's pass forgets what it solved first)."""
    import tilelang
    from tilelang import tvm

    from layoutkit.frontends import tilelang_pass

    if cold:
        tilelang_pass.clear_cache()

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
            with tilelang_pass.layoutkit_inference() as record, tvm.target.Target(target):
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
    theirs = _lower_once(func, target, ours=False)[2]  # warm-ups, and the equality check
    _, _, src, fallbacks, _ = _lower_once(func, target, ours=True)
    if fallbacks or src != theirs:
        return {"name": name, "error": "fell back: " + fallbacks[0] if fallbacks else "CUDA text differs"}
    runs: dict[str, list[tuple[float, float]]] = {"tl": [], "lk": [], "cold": []}
    passes: list[dict[str, float]] = []
    for _ in range(reps):
        total, alone, _, _, by_pass = _lower_once(func, target, ours=False)
        runs["tl"].append((total, alone))
        passes.append(by_pass)
        runs["lk"].append(_lower_once(func, target, ours=True)[:2])
        runs["cold"].append(_lower_once(func, target, ours=True, cold=True)[:2])
    med = {k: (statistics.median(t for t, _ in v), statistics.median(p for _, p in v)) for k, v in runs.items()}
    names = {n for d in passes for n in d}
    return {"name": name, "tl_total": med["tl"][0], "tl_pass": med["tl"][1], "lk_total": med["lk"][0],
            "lk_pass": med["lk"][1], "cold_total": med["cold"][0], "cold_pass": med["cold"][1],
            "tl_by_pass": {n: statistics.median(d.get(n, 0.0) for d in passes) for n in names}}


def report(rows: list[dict]) -> list[str]:
    """The table, the median end-to-end and pass-alone ratios, and where TileLang's time goes."""
    out = ["| kernel | tilelang.lower | of which LayoutInference | with layoutkit as the pass | of which "
           "layoutkit's pass | end-to-end ratio | pass ratio | cold: end-to-end | cold: pass | floor |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    ok = [r for r in rows if "error" not in r]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['name']} | - | - | - | - | not timed: {r['error']} | - | - | - | - |")
            continue
        out.append(f"| {r['name']} | {r['tl_total'] * 1e3:.1f} ms | {r['tl_pass'] * 1e3:.1f} ms | "
                   f"{r['lk_total'] * 1e3:.1f} ms | {r['lk_pass'] * 1e3:.2f} ms | "
                   f"{r['lk_total'] / r['tl_total']:.2f}x | {r['lk_pass'] / r['tl_pass']:.4f}x | "
                   f"{r['cold_total'] / r['tl_total']:.2f}x | {r['cold_pass'] / r['tl_pass']:.3f}x | "
                   f"{1 - r['tl_pass'] / r['tl_total']:.2f}x |")
    if ok:
        e2e = statistics.median(r["lk_total"] / r["tl_total"] for r in ok)
        alone = statistics.median(r["lk_pass"] / r["tl_pass"] for r in ok)
        cold = statistics.median(r["cold_total"] / r["tl_total"] for r in ok)
        cold_alone = statistics.median(r["cold_pass"] / r["tl_pass"] for r in ok)
        share = statistics.median(r["tl_pass"] / r["tl_total"] for r in ok)
        floor = statistics.median(1 - r["tl_pass"] / r["tl_total"] for r in ok)
        out += ["", f"median end-to-end ratio (layoutkit as the pass / tilelang.lower): {e2e:.2f}x over {len(ok)} "
                f"kernels, each checked to give the same CUDA text first (cold, the pass's memory cleared: "
                f"{cold:.2f}x)",
                f"median pass-alone ratio (layoutkit's pass / TileLang's LayoutInference): {alone:.4f}x (cold: "
                f"{cold_alone:.3f}x)",
                f"LayoutInference is a median {share:.0%} of tilelang.lower; the rest of TileLang's pipeline "
                f"({floor:.2f}x) is the floor of the end-to-end ratio with a free pass"]
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

    return ["# End to end: `tilelang.lower` with layoutkit as its layout pass", "",
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
