#!/usr/bin/env python
"""layoutkit and TileLang 0.1.15 as layout solvers of the same kernels (``tests/tilelang_kernels.py``).

For every kernel, TileLang's lowering runs up to its LayoutInference pass; the module that pass
receives is read into a layoutkit Program (``layoutkit.frontends.tilelang``).  TileLang's pass is
timed alone on that module; layoutkit's ``infer_layouts`` is timed on the Program (caches cleared
before each run).  The table says whether the two agree on every buffer and parallel loop (whole
tables), differ (with the register-count cost of each answer), or whether TileLang failed and
layoutkit solved; times are medians over ``--reps`` runs.

    python benchmarks/tilelang_kernels.py [--reps 3] [--arch sm_80] [kernel ...]

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




def _verdict(run, result, program) -> tuple[str, str, str]:
    """(verdict, layoutkit cost, TileLang cost) of one kernel."""
    from layoutkit.cost import get_cost_model
    from layoutkit.testing.assertions import same_tables

    model = get_cost_model("register-count")

    def cost(layouts) -> str:
        c = model.cost(dict(layouts), program)
        return f"{c.regs} regs" + (f", {c.mem} B spilled" if c.mem else "")

    ours = cost(result.layout_map)
    if run.failed:
        return "TileLang failed, layoutkit solved", ours, "-"
    theirs = cost(run.layouts)
    differ = [b for b, lay in run.layouts.items()
              if b not in result.layout_map or not same_tables(result.layout_map[b], lay)]
    differ += [op for op, lay in run.loop_layouts.items()
               if op not in result.loop_layouts or not same_tables(result.loop_layouts[op], lay)]
    if differ:
        return f"different ({', '.join(differ)})", ours, theirs
    return "same layouts", ours, theirs


def measure(name: str, build, target: dict, reps: int) -> list[str]:
    """One table row for kernel ``name``."""
    from layoutkit.errors import LayoutError
    from layoutkit.frontends.tilelang import tilelang_inference
    from layoutkit.infer import clear_caches, infer_layouts

    runs = [tilelang_inference(build(), target) for _ in range(reps)]
    run = runs[0]
    tl_ms = statistics.median(r.seconds for r in runs) * 1e3
    times = []
    try:
        for _ in range(reps):
            clear_caches()
            t0 = time.perf_counter()
            result = infer_layouts(run.program)
            times.append(time.perf_counter() - t0)
    except LayoutError as err:
        verdict = "both failed" if run.failed else "layoutkit failed"
        return [name, f"{verdict} ({type(err).__name__})", "-", "-", "-", f"{tl_ms:.1f}", "-"]
    ours_ms = statistics.median(times) * 1e3
    verdict, c_ours, c_theirs = _verdict(run, result, run.program)
    ratio = f"{tl_ms / ours_ms:.0f}x" if ours_ms > 0 else "-"
    return [name, verdict, c_ours, c_theirs, f"{ours_ms:.1f}", f"{tl_ms:.1f}", ratio]


def table(rows: list[list[str]]) -> str:
    head = ["kernel", "result", "cost layoutkit", "cost TileLang", "layoutkit ms", "TileLang pass ms", "TileLang/ours"]
    widths = [max(len(str(r[k])) for r in [head] + rows) for k in range(len(head))]
    lines = [" | ".join(h.ljust(w) for h, w in zip(head, widths)), "-+-".join("-" * w for w in widths)]
    lines += [" | ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", help="kernel names (default: all)")
    parser.add_argument("--reps", type=int, default=3, help="timed runs per solver and kernel (median)")
    parser.add_argument("--arch", default="sm_80")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("tilelang") is None:
        print("tilelang not installed: skipped")
        return 0
    if "TILELANG_CACHE_DIR" not in os.environ:  # keep TileLang's kernel cache out of the home directory
        os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="layoutkit-tilelang-cache-")
    from tests import tilelang_kernels as K

    kernels = {**K.KERNELS, **K.BOTH_FAIL}
    names = args.kernels or list(kernels)
    unknown = [n for n in names if n not in kernels]
    if unknown:
        parser.error(f"unknown kernels {unknown}; expected some of {sorted(kernels)}")
    target = {"kind": "cuda", "arch": args.arch}
    rows = [measure(n, kernels[n], target, max(1, args.reps)) for n in names]
    print(f"Layout inference, layoutkit vs TileLang's LayoutInference pass ({args.arch}, median of {args.reps})")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
