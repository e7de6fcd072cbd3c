"""Plot benchmarks: render times of ``layoutkit.plot`` figures against the 1 s target for 128x128.

    python benchmarks/plot.py            # standalone (or call bench_plot(budget) from run.py)

Each case writes one file per call into a temporary directory.  The 128x128 cases (a swizzle and an
MMA accumulator fragment) must render in under :data:`TARGET_S`; a miss is printed as ``MISSED``
(a time target, not a failed check).  Small, labelled grids are timed for reference only.
"""

from __future__ import annotations

import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # measure this checkout's layoutkit, installed or not
    sys.path.insert(0, str(_ROOT))

from harness import (  # noqa: E402
    TIMING_HEADERS,
    Budget,
    fmt_ratio,
    fmt_time,
    measure,
    print_table,
    section,
    standalone,
    timing_cells,
)

TARGET_S = 1.0
"""A 128x128 layout must render (one format) in under this many seconds."""


def bench_plot(budget: Budget, quick: bool = False) -> list[str]:
    """Run the section; return failed checks (missing matplotlib is a skip, not a failure).  ``quick``:
    one timed call per targeted case, the reference-only cases skipped."""
    section("Plots: render time per figure (target: 128x128 under 1 s)")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("  matplotlib not installed (skipped); pip install layoutkit[plot]")
        return []
    from layoutkit.plot import plot_banks, plot_diff, plot_layout
    from layoutkit.targets import nv

    failures: list[str] = []
    swz = nv.make_full_bank_swizzled_layout((128, 128), "float16")
    plain = nv.make_linear_layout((128, 128), "float16")
    acc = nv.make_mma_store_layout(2, 2, 64, 64)  # 128x128 accumulator on 4 warps
    small = nv.make_mma_store_layout(1, 1, 16, 16)
    small_swz = nv.make_half_bank_swizzled_layout((32, 32), "float16")
    store = small.repeat([1, 4], repeat_on_thread=False)
    store_smem = nv.make_full_bank_swizzled_layout((16, 64), "float16")
    if acc.input_shape != (128, 128):
        failures.append(f"plot: the accumulator covers {acc.input_shape}, expected (128, 128)")
    budget = Budget(seconds=min(budget.seconds, 2.0), min_reps=3, max_reps=20, warmup=1)
    if quick:  # renders take 0.2-6 s each
        budget = Budget(seconds=0.0, min_reps=1, warmup=1)
    rows, failed = [], []
    with tempfile.TemporaryDirectory() as out:
        cases = [
            ("128x128 swizzle", "png", True, lambda f: plot_layout(swz, out, "swz", formats=f)),
            ("128x128 swizzle", "svg", True, lambda f: plot_layout(swz, out, "swz", formats=f)),
            ("128x128 swizzle", "pdf", True, lambda f: plot_layout(swz, out, "swz", formats=f)),
            ("128x128 swizzle, output view", "png", True,
             lambda f: plot_layout(swz, out, "swz_out", formats=f, view="output")),
            ("128x128 fragment (128 threads)", "png", True, lambda f: plot_layout(acc, out, "acc", formats=f)),
            ("128x128 fragment (128 threads)", "svg", True, lambda f: plot_layout(acc, out, "acc", formats=f)),
            ("128x128 diff, swizzle vs linear", "png", True, lambda f: plot_diff(swz, plain, out, "d", formats=f)),
            ("16x16 fragment, labelled", "svg", False, lambda f: plot_layout(small, out, "s", formats=f)),
            ("32x32 swizzle, labelled", "png", False, lambda f: plot_layout(small_swz, out, "s32", formats=f)),
            ("bank heat map 16x64 st.shared.b32", "svg", False,
             lambda f: plot_banks(store_smem, store, "float16", out, "b", instruction="st.shared.b32", formats=f)),
        ]
        for label, fmt, target, fn in cases:
            if quick and not target:
                rows.append([label, fmt, "skipped with --quick", "", "", "", "-"])
                continue
            t = measure(lambda fn=fn, fmt=fmt: fn(fmt), budget=budget)
            verdict = "-"
            if target:
                verdict = f"{fmt_ratio(t.median / TARGET_S)} " + ("ok" if t.median < TARGET_S else "MISSED")
                if verdict.endswith("MISSED"):
                    failed.append(f"plot: {label} ({fmt}) took {fmt_time(t.median)}, target {fmt_time(TARGET_S)}")
            rows.append([label, fmt, *timing_cells(t), verdict])
        if not quick:
            root = ET.parse(Path(out) / "s.svg").getroot()
            labels = sum(1 for e in root.iter("{http://www.w3.org/2000/svg}text") if "".join(e.itertext()) == "T0 L0")
            if labels != 1:
                failures.append(f"plot: the 16x16 fragment SVG has {labels} 'T0 L0' labels, expected 1")
    print_table(["case", "format", *TIMING_HEADERS, f"median / {fmt_time(TARGET_S)} target"], rows)
    for line in failed:
        print("  MISSED " + line)
    return failures


if __name__ == "__main__":
    sys.exit(standalone(lambda budget: bench_plot(budget, "--quick" in sys.argv[1:])))
