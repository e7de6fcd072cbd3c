#!/usr/bin/env python
"""Full-domain evaluation at 16K (128x128) and 1M (1024x1024) coordinates: the fp16 128-byte swizzle,
the MMA accumulator fragment (thread and register of every element) and a nested two-level CuTe layout,
beside TileLang and pycute when they are importable.

TileLang and pycute evaluate one coordinate per Python call.  At 1M coordinates a full pass takes
seconds to minutes, so they are timed on an evenly spaced *sample* of coordinates and compared *per
coordinate* (their time per coordinate / layoutkit's time per coordinate over the whole domain); the
table says which rows are sampled and nothing is extrapolated.  TileLang's ``IndexMap.map_tensor``
(TVM's C++ loop) does cover the whole domain and is timed as such.

    python benchmarks/full_domain.py            # standalone
    python benchmarks/full_domain.py --quick

``bench_full_domain(budget, slow, quick)`` prints the tables and returns the failed result checks.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent, _HERE):  # this checkout's layoutkit, and the harness next to this file
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import numpy as np  # noqa: E402
from harness import (  # noqa: E402
    TIMING_HEADERS,
    Budget,
    Timing,
    fmt_ratio,
    fmt_time,
    headline,
    measure,
    print_table,
    section,
    timing_cells,
)

import layoutkit as lk  # noqa: E402
from layoutkit import tla  # noqa: E402
from layoutkit.targets import nv  # noqa: E402

SIZES = ((128, 128), (1024, 1024))
SAMPLE = 4096
"""Coordinates a per-coordinate (Python-loop) oracle evaluates per timed call."""

# 8 warps as 2 (rows) x 4 (cols); the warp tile grows with the block, so 1024x1024 gives 4096 registers.
BRW, BCW = 2, 4


@dataclass(frozen=True)
class Row:
    """One implementation's measurement: how many coordinates one timed call covers."""

    impl: str
    timing: Timing | None
    coords: int
    sampled: bool = False
    note: str = ""


def swizzle(i, j):
    """TileLang's fp16 full-bank (128-byte) swizzle on a plain lambda (ints, numpy arrays, TileLang vars)."""
    ts, s = i // 8, i % 8
    chunk = j // 8
    return (chunk // 8, ts, j % 8 + ((chunk % 8 ^ s) + s * 8) * 8)


def acc_thread(i, j, rows: int, cols: int):
    """Thread of element ``(i, j)`` of the m16n8 accumulator of a ``rows x cols`` block
    (docs/reference.md#accumulator-store-fragment)."""
    wr, wc = rows // BRW // 16, cols // BCW // 8
    return (j // 8) // wc * (32 * BRW) + (i // 16) // wr * 32 + 4 * (i % 8) + (j % 8) // 2


def acc_index(i, j, rows: int, cols: int):
    """Register of element ``(i, j)`` in its thread (same fragment as :func:`acc_thread`)."""
    wr, wc = rows // BRW // 16, cols // BCW // 8
    return ((i // 16) % wr) * (wc * 4) + ((j // 8) % wc) * 4 + 2 * ((i % 16) // 8) + j % 2


def cute_shape_stride(rows: int, cols: int) -> tuple[tuple, tuple]:
    """Two-level CuTe layout ``((8, rows/8), (8, cols/8)) : ((1, 64), (8, 8*rows))`` (a bijection)."""
    return ((8, rows // 8), (8, cols // 8)), ((1, 64), (8, 8 * rows))


def cute_offset(m, n, rows: int):
    """Offset of ``(m, n)`` under :func:`cute_shape_stride` (ints or numpy arrays).

    >>> cute_offset(9, 9, 128)
    1097
    """
    return m % 8 + m // 8 * 64 + n % 8 * 8 + n // 8 * (8 * rows)


def sample_coords(shape: tuple[int, int], count: int = SAMPLE) -> np.ndarray:
    """``count`` evenly spaced row-major coordinates of ``shape`` (all of them when fewer).

    >>> sample_coords((4, 4), 3).tolist()
    [[0, 0], [1, 3], [3, 3]]
    """
    size = shape[0] * shape[1]
    flat = np.linspace(0, size - 1, min(count, size)).astype(np.int64)
    return np.stack(np.unravel_index(flat, shape), axis=-1)


def _table(rows: list[Row], ours: Timing, domain: int) -> list[list[str]]:
    ours_ns = ours.median / domain
    out = []
    for r in rows:
        if r.timing is None:
            out.append([r.impl, "-", *timing_cells(None), "-", "-", r.note])
            continue
        ns = r.timing.median / r.coords
        what = f"{r.coords:,} (sample)" if r.sampled else f"{r.coords:,}"
        out.append([r.impl, what, *timing_cells(r.timing), f"{ns * 1e9:.1f}", fmt_ratio(ns / ours_ns), r.note])
    return out


HEADERS = ("implementation", "coords per call", *TIMING_HEADERS, "ns/coord", "per-coord ratio", "")


# ---- the three cases ---------------------------------------------------------------------------


def _swizzle(shape, budget: Budget, slow: Budget, quick: bool, tilelang, failures: list[str]) -> list[Row]:
    domain = shape[0] * shape[1]
    coords = np.ascontiguousarray(np.indices(shape).reshape(2, -1).T)
    layout = lk.Layout(shape, swizzle)
    want = np.stack(swizzle(coords[:, 0], coords[:, 1]), axis=-1)
    if not np.array_equal(layout.apply(coords), want):
        failures.append(f"full domain: swizzle {shape} apply() disagrees with numpy")
    if not np.array_equal(nv.make_full_bank_swizzled_layout(shape, "float16").table().reshape(domain, 3), want):
        failures.append(f"full domain: nv.make_full_bank_swizzled_layout {shape} disagrees with numpy")
    rows = [
        Row("layoutkit apply(coords) (warm)", measure(lambda: layout.apply(coords), budget=budget), domain),
        Row("layoutkit nv.make_full_bank_swizzled_layout + table() (cold)",
            measure(lambda: nv.make_full_bank_swizzled_layout(shape, "float16").table(), budget=budget), domain),
        Row("hand-written numpy: the lambda on the coordinate columns",
            measure(lambda: np.stack(swizzle(coords[:, 0], coords[:, 1]), axis=-1), budget=budget), domain),
    ]
    if tilelang is None:
        return rows
    import oracles

    sample = sample_coords(shape)
    points = [[int(a), int(b)] for a, b in sample]
    tl = oracles.tl_layout(shape, swizzle)

    def per_coord():
        return [[int(v) for v in tl.map_forward_index(p)] for p in points]

    if np.array_equal(np.array(per_coord()), want[sample[:, 0] * shape[1] + sample[:, 1]]):
        rows.append(Row("TileLang Layout.map_forward_index per coord", measure(per_coord, budget=slow),
                        len(points), sampled=len(points) < domain))
    else:
        failures.append(f"full domain: TileLang map_forward_index disagrees on the {shape} swizzle")
    if quick and domain > 1 << 16:
        rows.append(Row("TileLang map_tensor + scatter (make_full_bank_swizzled_layout)", None, domain,
                        note="skipped with --quick (seconds per call)"))
        return rows
    own = oracles.tl_full_bank_swizzle(shape)
    im, src = oracles.tl_index_map(own), oracles.tl_input_tensor(shape)
    offsets = layout.linear_table().reshape(-1)
    if np.array_equal(oracles.tl_map_tensor_offsets(im, src), offsets):
        once = Budget(seconds=0.0, min_reps=1 if domain > 1 << 16 else slow.min_reps, warmup=0)
        rows.append(Row("TileLang map_tensor + scatter (make_full_bank_swizzled_layout)",
                        measure(lambda: oracles.tl_map_tensor_offsets(im, src), budget=once), domain,
                        note="whole domain, C++ loop"))
    else:
        failures.append(f"full domain: TileLang map_tensor disagrees on the {shape} swizzle")
    return rows


def _fragment(shape, budget: Budget, slow: Budget, tilelang, failures: list[str]) -> list[Row]:
    rows_, cols = shape
    domain = rows_ * cols
    coords = np.ascontiguousarray(np.indices(shape).reshape(2, -1).T)
    ii, jj = coords[:, 0], coords[:, 1]
    want_t, want_i = acc_thread(ii, jj, rows_, cols), acc_index(ii, jj, rows_, cols)

    def build() -> lk.Fragment:
        return nv.make_mma_store_layout(BRW, BCW, rows_ // BRW, cols // BCW)

    frag = build()
    if not (np.array_equal(frag.thread_table().reshape(-1), want_t)
            and np.array_equal(frag.index_table().reshape(-1), want_i)):
        failures.append(f"full domain: make_mma_store_layout {shape} disagrees with the numpy reference")

    def both():
        return frag.apply_thread(coords), frag.apply(coords)

    def cold():
        f = build()
        return f.thread_table(), f.index_table()

    rows = [
        Row("layoutkit apply_thread + apply (warm)", measure(both, budget=budget), domain),
        Row("layoutkit make_mma_store_layout + thread_table + index_table (cold)", measure(cold, budget=budget),
            domain),
        Row("hand-written numpy: thread and register formulas on the coordinate columns",
            measure(lambda: (acc_thread(ii, jj, rows_, cols), acc_index(ii, jj, rows_, cols)), budget=budget),
            domain),
    ]
    if tilelang is None:
        return rows
    from tilelang.layout import Fragment as TLFragment

    tl = TLFragment(list(shape), forward_thread_fn=lambda i, j: acc_thread(i, j, rows_, cols),
                    forward_index_fn=lambda i, j: acc_index(i, j, rows_, cols))
    sample = sample_coords(shape)
    points = [[int(a), int(b)] for a, b in sample]

    def scalar(v) -> int:
        return int(v[0]) if hasattr(v, "__len__") else int(v)

    def per_coord():
        return [(scalar(tl.map_forward_thread(p)), scalar(tl.map_forward_index(p))) for p in points]

    flat = sample[:, 0] * cols + sample[:, 1]
    if np.array_equal(np.array(per_coord()), np.stack([want_t[flat], want_i[flat]], axis=-1)):
        rows.append(Row("TileLang map_forward_thread + map_forward_index per coord", measure(per_coord, budget=slow),
                        len(points), sampled=len(points) < domain))
    else:
        failures.append(f"full domain: TileLang fragment disagrees on the {shape} accumulator")
    return rows


def _cute(shape, budget: Budget, slow: Budget, pycute, failures: list[str]) -> list[Row]:
    rows_, cols = shape
    domain = rows_ * cols
    s, d = cute_shape_stride(rows_, cols)
    m, n = np.meshgrid(np.arange(rows_), np.arange(cols), indexing="ij")
    want = cute_offset(m, n, rows_)
    layout = tla.make_layout(s, d)
    if not (np.array_equal(layout.offset_table(), want) and np.array_equal(layout(m, n), want)):
        failures.append(f"full domain: tla layout {s}:{d} disagrees with numpy")
    rows = [
        Row("layoutkit tla layout(m, n) on index arrays (warm)", measure(lambda: layout(m, n), budget=budget),
            domain),
        Row("layoutkit tla.make_layout + offset_table() (cold)",
            measure(lambda: tla.make_layout(s, d).offset_table(), budget=budget), domain),
        Row("hand-written numpy: sum of the mode strides on (m, n)", measure(lambda: cute_offset(m, n, rows_),
                                                                            budget=budget), domain),
    ]
    if pycute is None:
        return rows
    P = pycute.Layout(s, d)
    sample = sample_coords(shape)
    pairs = [(int(a), int(b)) for a, b in sample]

    def per_coord():
        return [P(a, b) for a, b in pairs]

    if per_coord() == want[sample[:, 0], sample[:, 1]].tolist():
        rows.append(Row("pycute Layout.__call__(m, n) per coord", measure(per_coord, budget=slow), len(pairs),
                        sampled=len(pairs) < domain))
    else:
        failures.append(f"full domain: pycute disagrees with layoutkit on {s}:{d}")
    return rows


def _headlines(case: str, rows: list[Row], domain: int) -> None:
    """Summary rows: layoutkit's warm evaluation against what a user would write instead (hand-written
    numpy) and the oracles' whole-domain paths; per-coordinate Python loops over FFI calls stay in the
    tables but are no anchor (nobody evaluates a domain that way)."""
    ours = rows[0].timing
    for r in rows[1:]:
        if r.timing is None or r.impl.startswith("layoutkit") or r.sampled or " per coord" in r.impl:
            continue
        headline(case, ours, f"{r.impl}: {fmt_time(r.timing.median)}", r.timing.median / ours.median)


def bench_full_domain(budget: Budget, slow: Budget, quick: bool = False) -> list[str]:
    """Run the section; return failed result checks."""
    import oracles

    section("Full-domain evaluation at 16K and 1M coordinates: swizzle, MMA accumulator, nested CuTe layout")
    failures: list[str] = []
    tl_oracle, pc_oracle = oracles.load_tilelang(), oracles.load_pycute()
    tilelang = tl_oracle.module if tl_oracle.ok else None
    pycute = pc_oracle.module if pc_oracle.ok else None
    print(f"  per-coordinate oracles (Python loops) are timed on {SAMPLE:,} evenly spaced coordinates, marked")
    print("  '(sample)'; their ratio is per coordinate: (their ns/coord) / (layoutkit warm ns/coord) over the whole")
    print("  domain, not an extrapolated whole-domain time.  The anchor (1.00x) is each case's first row,")
    print("  layoutkit's warm evaluation; > 1 means layoutkit is faster.")
    for shape in SIZES:
        domain = shape[0] * shape[1]
        big = domain > 1 << 16
        # 1M rows take 10-100 ms a call: a fixed number of repeats instead of a time budget
        b = Budget(seconds=0.0, min_reps=3 if quick else 7, warmup=1) if big else budget
        label = f"{shape[0]}x{shape[1]} ({domain:,} coordinates)"
        cases: list[tuple[str, Callable[[], list[Row]]]] = [
            (f"fp16 128-byte swizzle {label}",
             lambda shape=shape, b=b: _swizzle(shape, b, slow, quick, tilelang, failures)),
            (f"MMA accumulator, 256 threads, {domain // 256:,} registers each, {label}",
             lambda shape=shape, b=b: _fragment(shape, b, slow, tilelang, failures)),
            (f"nested CuTe layout {cute_shape_stride(*shape)[0]}:{cute_shape_stride(*shape)[1]}, {label}",
             lambda shape=shape, b=b: _cute(shape, b, slow, pycute, failures)),
        ]
        for (title, run), short in zip(cases, ("fp16 128B swizzle", "MMA accumulator (thread + register)",
                                               "nested CuTe layout")):
            print(f"\n  {title}")
            rows = run()
            print_table(HEADERS, _table(rows, rows[0].timing, domain))
            if big:
                _headlines(f"{short}, all {domain:,} coordinates, layoutkit warm", rows, domain)
    for oracle in (tl_oracle, pc_oracle):
        if not oracle.ok:
            print(f"  {oracle.name}: {oracle.status}")
    return failures


if __name__ == "__main__":
    quick = "--quick" in sys.argv[1:]
    budget = Budget(seconds=0.1, min_reps=3) if quick else Budget(seconds=0.5, min_reps=7)
    slow = Budget(seconds=0.0, min_reps=3 if quick else 5, warmup=0)
    failed = bench_full_domain(budget, slow, quick)
    for f in failed:
        print(f"FAILED: {f}")
    sys.exit(1 if failed else 0)
