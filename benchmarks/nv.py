"""NVIDIA target benchmarks: build + evaluate every shared-memory layout of a 128x128 fp16 tile, and
the exact bank analysis of that tile under ``ldmatrix.x4`` (target < 50 ms), exact and F2 paths.

    python benchmarks/nv.py            # standalone
    python benchmarks/nv.py --quick

``bench_nv(budget)`` prints the tables and returns the failed result checks (strings).
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent, _HERE):  # this checkout's layoutkit, and the harness next to this file
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import numpy as np  # noqa: E402
from harness import (  # noqa: E402
    TIMING_HEADERS,
    Budget,
    fmt_ratio,
    fmt_time,
    headline,
    measure,
    print_table,
    section,
    span,
    standalone,
    timing_cells,
)

from layoutkit.targets import nv  # noqa: E402

SHAPE = (128, 128)
DTYPE = "float16"
BANK_TARGET_S = 50e-3


def _reference_swizzle(kind: str) -> np.ndarray:
    """docs/reference.md#nvidia-shared-memory-swizzles with numpy integers (independent of layoutkit's expressions)."""
    per = {"32B": 2, "64B": 4, "128B": 8}[kind]
    vec = 8
    i, j = np.indices(SHAPE)
    s, chunk = i % 8, j // vec
    idx = j % vec + (((chunk % per) ^ (s // (8 // per))) + s * per) * vec
    return np.stack([chunk // per, i // 8, idx], axis=-1)


BUILDERS = {
    "32B (quarter bank)": lambda: nv.make_quarter_bank_swizzled_layout(SHAPE, DTYPE),
    "64B (half bank)": lambda: nv.make_half_bank_swizzled_layout(SHAPE, DTYPE),
    "128B (full bank)": lambda: nv.make_full_bank_swizzled_layout(SHAPE, DTYPE),
    "make_swizzled_layout (auto)": lambda: nv.make_swizzled_layout(SHAPE, DTYPE),
    "make_wgmma_swizzled_layout": lambda: nv.make_wgmma_swizzled_layout(SHAPE, DTYPE),
    "padded": lambda: nv.make_padded_layout(SHAPE, DTYPE),
    "linear": lambda: nv.make_linear_layout(SHAPE, DTYPE),
    "volta crosswise": lambda: nv.make_volta_swizzled_layout(SHAPE, DTYPE),
}


def _check_tables(failures: list[str]) -> None:
    for kind, build in (("32B", BUILDERS["32B (quarter bank)"]), ("64B", BUILDERS["64B (half bank)"]),
                        ("128B", BUILDERS["128B (full bank)"])):
        if not np.array_equal(build().table(), _reference_swizzle(kind)):
            failures.append(f"nv: {kind} swizzle table differs from the numpy reference")
    for name, build in BUILDERS.items():
        layout = build()
        offsets = layout.linear_table().ravel()
        if np.unique(offsets).size != offsets.size:
            failures.append(f"nv: {name} maps two coordinates to one slot")


def bench_nv(budget: Budget) -> list[str]:
    """Run the NV section; return the failed result checks."""
    failures: list[str] = []
    section("NV target: every 128x128 fp16 shared layout (build + table), bank analysis under ldmatrix.x4")
    _check_tables(failures)
    rows = []
    for name, build in BUILDERS.items():
        t = measure(lambda build=build: build().table(), budget=budget)
        t_inv = None
        if name not in ("padded",):
            t_inv = measure(lambda build=build: build().inverse(), budget=budget)
        rows.append([name, *timing_cells(t), *timing_cells(t_inv)])
    print_table(["layout (128x128 float16)", *(f"build+table {h}" for h in TIMING_HEADERS),
                 *(f"build+inverse {h}" for h in TIMING_HEADERS)], rows)

    # A operand of a 128x128x128 block (2x2 warps, 64x64 per warp): 16384 elements, 4 warps x 32 ldmatrix.x4
    frag = nv.make_mma_load_layout("A", DTYPE, 2, 2, 64, 64, 128)
    layouts = {name: BUILDERS[name]() for name in ("linear", "32B (quarter bank)", "64B (half bank)",
                                                    "128B (full bank)", "padded")}
    want_per_inst = {"linear": 32, "padded": 4, "32B (quarter bank)": 4, "64B (half bank)": 4, "128B (full bank)": 4}
    rows = []
    for name, smem in layouts.items():
        exact = nv.bank_conflicts(smem, frag, DTYPE, "ldmatrix.x4", method="exact")
        auto = nv.bank_conflicts(smem, frag, DTYPE, "ldmatrix.x4")
        if exact.wavefronts != auto.wavefronts or exact.ways != auto.ways:
            failures.append(f"nv: F2 and exact bank counts differ for {name}")
        if exact.wavefronts != want_per_inst[name] * exact.instructions:
            failures.append(f"nv: {name} ldmatrix.x4 costs {exact.wavefronts_per_instruction} wavefronts per "
                            f"instruction, expected {want_per_inst[name]}")

        def cold(method, build=BUILDERS[name]):
            return nv.bank_conflicts(build(), nv.make_mma_load_layout("A", DTYPE, 2, 2, 64, 64, 128), DTYPE,
                                     "ldmatrix.x4", method=method)

        t_exact = measure(lambda smem=smem: nv.bank_conflicts(smem, frag, DTYPE, "ldmatrix.x4", method="exact"),
                          budget=budget)
        t_auto = measure(lambda smem=smem: nv.bank_conflicts(smem, frag, DTYPE, "ldmatrix.x4"), budget=budget)
        t_cold = measure(lambda: cold("exact"), budget=budget)
        verdict = "met" if t_cold.median < BANK_TARGET_S else "MISSED"
        rows.append([name, f"{exact.wavefronts_per_instruction:g} ({exact.ways}-way)", span(t_exact),
                     f"{span(t_auto)} {auto.method}", *timing_cells(t_cold),
                     f"{fmt_ratio(t_cold.median / BANK_TARGET_S)} {verdict}"])
        if name == "128B (full bank)":
            headline("ldmatrix.x4 bank analysis of a 128x128 tile (build all + exact, cold)", t_cold,
                     f"target 50 ms (warm: exact {fmt_time(t_exact.median)}, {auto.method} {fmt_time(t_auto.median)})",
                     f"{verdict} ({fmt_ratio(t_cold.median / BANK_TARGET_S)} of it)")
    print_table(["smem layout", "wavefronts/ldmatrix", "exact (warm): median (min - max)", "auto (warm)",
                 *(f"cold: build all + exact, {h}" if h == "median" else h for h in TIMING_HEADERS),
                 "cold/50 ms"], rows)
    t_report = measure(lambda: nv.bank_report(64, 64, 64), budget=budget)
    print(f"  bank_report(64, 64, 64) (5 layouts x 3 moves, fresh fragments): median {fmt_time(t_report.median)}, "
          f"min {fmt_time(t_report.min)}, max {fmt_time(t_report.max)}")
    return failures


if __name__ == "__main__":
    sys.exit(standalone(bench_nv))
