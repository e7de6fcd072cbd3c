"""Ascend benchmarks: ND2NZ / NZ2ND of a 1024x1024 fp16 matrix (vectorised numpy models), a tail tile
with OOB padding, and the fractal layout tables.

Runnable on its own: ``python benchmarks/ascend.py [--quick]``; ``bench_ascend(budget)`` returns the
failed result checks and prints a table.
"""

from __future__ import annotations

import sys
from pathlib import Path

for _p in (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent):
    if str(_p) not in sys.path:  # measure this checkout's layoutkit, installed or not
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
    standalone,
    timing_cells,
)

from layoutkit.targets import ascend  # noqa: E402

N = 1024


def bench_ascend(budget: Budget) -> list[str]:
    """Run the section; return failed result checks."""
    section("Ascend: ND2NZ / NZ2ND 1024x1024 fp16, tail tile with OOB padding, fractal tables")
    failures: list[str] = []
    a = (np.arange(N * N) % 2039).astype(np.float16).reshape(N, N)
    params = ascend.Nd2NzParams.for_matrix(N, N)
    dst = np.zeros(N * N, dtype=np.float16)

    nz = ascend.nd2nz_matrix(a)
    # reference by reshape/transpose: [K/C0, M/16, 16, C0]
    want = a.reshape(N // 16, 16, N // 16, 16).transpose(2, 0, 1, 3)
    if not np.array_equal(nz, want):
        failures.append("ascend: ND2NZ 1024x1024 differs from the reshape/transpose reference")
    if not np.array_equal(ascend.nz2nd_matrix(nz, N, N), a):
        failures.append("ascend: NZ2ND(ND2NZ(a)) != a")

    rows = []
    t = measure(lambda: ascend.nd2nz(a, dst, params), budget=budget)
    rows.append(["nd2nz(1024x1024 fp16, Nd2NzParams)", t, f"{N * N * 2 / t.median / 1e9:.2f} GB/s"])
    t_ref = measure(lambda: np.ascontiguousarray(a.reshape(N // 16, 16, N // 16, 16).transpose(2, 0, 1, 3)),
                    budget=budget)
    rows.append(["numpy reshape/transpose (lower bound)", t_ref, f"{N * N * 2 / t_ref.median / 1e9:.2f} GB/s"])
    t_back = measure(lambda: ascend.nz2nd(dst, params), budget=budget)
    rows.append(["nz2nd(1024x1024 fp16)", t_back, f"{N * N * 2 / t_back.median / 1e9:.2f} GB/s"])

    gm = (np.arange(1000 * 1000) % 251).astype(np.float16).reshape(1000, 1000)
    L = ascend.make_ascend_nz_layout((128, 256), "float16")
    img = ascend.from_storage(ascend.load_tile(gm, L, (128, 256), (896, 768)), ascend.fractal_info(L))
    if not (np.array_equal(img[:104, :232], gm[896:, 768:]) and (img[104:, :] == 0).all()):
        failures.append("ascend: load_tile tail tile image wrong")
    t_tile = measure(lambda: ascend.load_tile(gm, L, (128, 256), (896, 768)), budget=budget)
    rows.append(["load_tile(128x256 tail of 1000x1000, OOB fills)", t_tile, ""])
    t_tab = measure(lambda: ascend.make_ascend_nz_layout((256, 256), "float16").table(), budget=budget)
    rows.append(["make_ascend_nz_layout(256x256).table() (cold)", t_tab, ""])

    copies = ("nd2nz", "nz2nd", "numpy")  # the rows that move the same bytes as the numpy reference
    print_table(["case", *TIMING_HEADERS, "throughput", "numpy/ours"],
                [[c, *timing_cells(u), x, fmt_ratio(t_ref.median / u.median) if c.startswith(copies) else ""]
                 for c, u, x in rows])
    print("  numpy/ours = the numpy reshape/transpose median / this row's median (> 1: faster than numpy's copy)")
    headline("ND2NZ of a 1024x1024 fp16 matrix", t, f"numpy reshape/transpose {fmt_time(t_ref.median)}",
             t_ref.median / t.median)
    return failures


if __name__ == "__main__":
    sys.exit(standalone(bench_ascend))
