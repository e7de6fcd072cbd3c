"""Fragment benchmarks: full-domain thread/index evaluation of a 128x256 MMA accumulator fragment
and containment proofs, beside TileLang's per-coordinate ``map_forward_thread`` when installed."""

from __future__ import annotations

import numpy as np
from harness import TIMING_HEADERS, Budget, fmt_ratio, fmt_time, headline, measure, print_table, section, timing_cells

import layoutkit as lk

# 8 warps as 2 (rows) x 4 (cols), 64x64 per warp: the store fragment of docs/reference.md#accumulator-store-fragment.
BRW, BCW, WARP_ROWS, WARP_COLS, MS_Y = 2, 4, 4, 8, 8


def acc_thread(i, j):
    lane = 4 * (i % 8) + (j % 8) // 2
    return (j // MS_Y) // WARP_COLS * (32 * BRW) + (i // 16) // WARP_ROWS * 32 + lane


def acc_index(i, j):
    local = 4 * ((j % MS_Y) // 8) + 2 * ((i % 16) // 8) + j % 2
    return ((i // 16) % WARP_ROWS) * (WARP_COLS * 4) + ((j // MS_Y) % WARP_COLS) * 4 + local


def accumulator() -> lk.Fragment:
    return lk.Fragment([128, 256], forward_thread_fn=acc_thread, forward_index_fn=acc_index)


def bench_fragments(budget: Budget, slow: Budget, tilelang) -> list[str]:
    """Run the section; return failed result checks."""
    section("Fragment: 128x256 accumulator (256 threads, 128 registers each), containment")
    failures: list[str] = []
    frag = accumulator()
    coords = np.moveaxis(np.indices((128, 256)), 0, -1).reshape(-1, 2)
    ii, jj = coords[:, 0], coords[:, 1]
    want_t, want_i = acc_thread(ii, jj), acc_index(ii, jj)
    if not (np.array_equal(frag.apply_thread(coords), want_t) and np.array_equal(frag.apply(coords)[:, 0], want_i)):
        failures.append("fragment: thread/index tables disagree with the numpy reference")
    if frag.thread_extent != 256 or frag.local_size != 128 or not frag.prove_injective():
        failures.append("fragment: extent/local size/injectivity wrong")

    rows = []
    t_cold = measure(lambda: (f := accumulator()).thread_table() is not None and f.index_table(), budget=budget)
    rows.append(["construct + thread_table() + index_table()", "cold", t_cold])
    t_thr = measure(lambda: frag.apply_thread(coords), budget=budget)
    rows.append(["apply_thread(coords[32768, 2])", "warm", t_thr])
    t_hand = measure(lambda: acc_thread(ii, jj), budget=budget)
    rows.append(["hand-written numpy: the thread formula on the columns", "warm", t_hand,
                 fmt_ratio(t_hand.median / t_thr.median)])
    headline("128x256 accumulator fragment, thread of every element (apply_thread)", t_thr,
             f"hand-written numpy {fmt_time(t_hand.median)}", t_hand.median / t_thr.median)
    t_idx = measure(lambda: frag.apply(coords), budget=budget)
    rows.append(["apply(coords[32768, 2]) (register index)", "warm", t_idx])

    bigger = frag.replicate(2)
    full = lk.make_fully_replicated_fragment([128, 256], 256)
    if not (bigger.contains(frag) and not frag.contains(bigger) and full.contains(frag)):
        failures.append("fragment: containment verdicts wrong")
    t_c = measure(lambda: accumulator().replicate(2).contains(accumulator()), budget=budget)
    rows.append(["contains(): replicate(2) vs original, fresh objects", "cold", t_c])
    t_c2 = measure(lambda: bigger.contains(frag), budget=budget)
    rows.append(["contains(): tables cached", "warm", t_c2])

    theirs = "not installed (skipped)"
    if tilelang.ok:
        try:
            from tilelang.layout import Fragment as TLFragment

            tl = TLFragment([128, 256], forward_thread_fn=acc_thread, forward_index_fn=acc_index)
            sub = coords[::8]

            def scalar(v):
                return int(v[0]) if hasattr(v, "__len__") else int(v)

            def tl_threads():
                return [scalar(tl.map_forward_thread([int(a), int(b)])) for a, b in sub]

            got = np.asarray(tl_threads())
            if not np.array_equal(got, want_t[::8]):
                failures.append("fragment: TileLang map_forward_thread disagrees")
            t_tl = measure(tl_threads, budget=slow)
            scale = coords.shape[0] / sub.shape[0]
            per_coord = (t_tl.median / sub.shape[0]) / (t_thr.median / coords.shape[0])
            rows.append([f"TileLang map_forward_thread per coord ({sub.shape[0]:,}-coordinate sample)", "warm",
                         t_tl, fmt_ratio(per_coord)])
            theirs = (f"TileLang row: timed on every 8th coordinate; its ratio is per coordinate against apply_thread "
                      f"(x{scale:.0f} would be {t_tl.median * scale * 1e3:.0f} ms for the domain, extrapolated)")
        except Exception as err:  # an optional oracle must not stop the run
            theirs = f"TileLang failed: {type(err).__name__}: {str(err)[:100]}"
    print_table(["case", "mode", *TIMING_HEADERS, "theirs/ours"],
                [[c, m, *timing_cells(t), *(extra or [""])] for c, m, t, *extra in rows])
    print(f"  {theirs}")
    return failures
