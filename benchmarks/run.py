#!/usr/bin/env python
"""layoutkit benchmarks: full-domain evaluation (16K and 1M coordinates), inverse, bijectivity proofs,
CuTe algebra, fragments, layout inference (beside TileLang's LayoutInference pass alone), code
generation, Ascend and cost models; the same work in pycute (CUTLASS CuTe in Python) and TileLang
when they are importable, as ratios.

    python benchmarks/run.py                 # everything (a few minutes with both oracles)
    python benchmarks/run.py --quick         # fewer repeats (under a minute)
    python benchmarks/run.py --only eval     # some sections: see SECTIONS below
    python benchmarks/run.py --profile       # cProfile the evaluation paths even when on target
    python benchmarks/run.py --json out.json # also write every measurement as JSON
    python benchmarks/run.py --markdown R.md # also write the report as Markdown (make bench: RESULTS.md)

See benchmarks/README.md for how to read the numbers.  Exit status: 0, or 1 when a result check
failed (layoutkit disagreeing with a reference, an inverse that does not round-trip).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # measure this checkout's layoutkit, installed or not
    sys.path.insert(0, str(_ROOT))

import numpy as np  # noqa: E402

import layoutkit as lk  # noqa: E402

try:  # the compiled-program cache; the benchmark only needs it for the "cache cleared" rows
    from layoutkit.algebra.evaluate import compile_numpy
except ImportError:  # pragma: no cover - layout of the package changed
    compile_numpy = None

import oracles  # noqa: E402
from ascend import bench_ascend  # noqa: E402
from codegen_time import bench_codegen  # noqa: E402
from cost import bench_cost  # noqa: E402
from fragments import bench_fragments  # noqa: E402
from full_domain import bench_full_domain  # noqa: E402
from harness import (  # noqa: E402
    HEADLINES,
    TIMING_HEADERS,
    Budget,
    Timing,
    fmt_ratio,
    fmt_time,
    headline,
    machine_description,
    measure,
    print_table,
    profile_top,
    section,
    span,
    timing_cells,
)
from infer import bench_infer  # noqa: E402
from infer_scale import bench_infer_scale  # noqa: E402
from memory import bench_memory  # noqa: E402
from nv import bench_nv  # noqa: E402
from plot import bench_plot  # noqa: E402
from scale import bench_scale  # noqa: E402
from tilelang_pass import bench_infer_vs_tilelang  # noqa: E402
from tla import bench_tla  # noqa: E402

TARGET_S = 1e-3
"""Full-domain evaluation target for the 16,384-coordinate swizzle."""

RECORDS: list[dict] = []
FAILURES: list[str] = []
EVAL_TARGETS: list[tuple[str, Timing]] = []
COMPARE_SUMMARY: list[tuple] = []
SECTION_SECONDS: dict[str, float] = {}
SECTIONS = (
    "eval", "inverse", "proof", "compare", "domain", "allocator", "fragment", "nv", "tla", "ascend", "plot", "infer",
    "infer-scale", "tilelang-infer", "codegen", "cost", "scale", "memory",
)


# ---- the layouts (plain functions: they run on layoutkit placeholders, TileLang vars and ints) ----


def full_bank_swizzle(i, j, vec=8, per=8):
    """TileLang ``make_full_bank_swizzled_layout`` for fp16 (128-byte swizzle): ``vec`` elements per
    16-byte chunk, ``per`` chunks per 128-byte row."""
    ts, s = i // 8, i % 8
    chunk = j // vec
    tc, c, v = chunk // per, chunk % per, j % vec
    return (tc, ts, v + ((c ^ s) + s * per) * vec)


def transpose(i, j):
    return (j, i)


def mixed_radix(i, j):
    """A padding-free permutation of the digits (i // 8, i % 8, j // 4, j % 4) into one offset."""
    return ((j % 4) * 1024 + (i % 8) * 128 + (j // 4) * 8 + i // 8,)


def row_major_1024(i, j):
    return (i * 1024 + j,)


CUTE_SHAPE = ((8, 16), (8, 16))
CUTE_STRIDE = ((1, 64), (8, 1024))


def cute_two_level_1d(x):
    """pycute ``Layout(((8,16),(8,16)),((1,64),(8,1024)))`` at the integer ``x`` (colexicographic)."""
    return (x % 8 + x // 8 % 16 * 64 + x // 128 % 8 * 8 + x // 1024 % 16 * 1024,)


def cute_two_level_2d(m, n):
    """The same layout at the rank-2 coordinate ``(m, n)`` in ``128 x 128``."""
    return (m % 8 + m // 8 * 64 + n % 8 * 8 + n // 8 * 1024,)


# ---- helpers ----------------------------------------------------------------------------------


def reference_table(fn: Callable, shape: Sequence[int]) -> np.ndarray:
    """``fn`` evaluated with plain Python ints at every coordinate (row-major): ``[size, m]``.
    Independent of layoutkit's simplifier and compiler."""
    return np.array([fn(*c) for c in np.ndindex(*shape)], dtype=np.int64).reshape(math.prod(shape), -1)


def all_coords(shape: Sequence[int]) -> np.ndarray:
    """Every coordinate of ``shape`` in row-major order as a contiguous int64 ``[size, rank]`` array."""
    return np.ascontiguousarray(np.indices(shape).reshape(len(shape), -1).T, dtype=np.int64)


def check(ok: bool, what: str) -> bool:
    if not ok:
        FAILURES.append(what)
        print(f"  MISMATCH: {what}")
    return ok


def record(section_name: str, case: str, impl: str, timing: Timing | None, **extra) -> None:
    entry = {"section": section_name, "case": case, "impl": impl}
    if timing is not None:
        entry.update(median_s=timing.median, min_s=timing.min, max_s=timing.max, reps=timing.reps)
    entry.update(extra)
    RECORDS.append(entry)


def short_error(err: BaseException, limit: int = 110) -> str:
    text = " ".join(str(err).split())
    for marker in ("has errors:", "Error:", "error:"):
        if marker in text:
            text = text[text.index(marker) :]
            break
    return f"{type(err).__name__}: {text[:limit]}{'...' if len(text) > limit else ''}"


def ratio(theirs: Timing | None, ours: Timing | None) -> float | None:
    if theirs is None or ours is None or ours.median <= 0:
        return None
    return theirs.median / ours.median


# ---- 1. full-domain evaluation --------------------------------------------------------------------


def bench_evaluation(budget: Budget, always_profile: bool) -> None:
    section("Evaluation target: 128x128 fp16 128-byte swizzle (16,384 coordinates), <= 1 ms")
    shape = (128, 128)
    n = math.prod(shape)
    layout = lk.Layout(shape, full_bank_swizzle)
    print(f"  {layout}")
    ref = reference_table(full_bank_swizzle, shape)
    coords = all_coords(shape)
    ok = check(np.array_equal(layout.table().reshape(n, -1), ref), "swizzle table() vs Python-int reference")
    ok &= check(np.array_equal(layout.apply(coords), ref), "swizzle apply() vs Python-int reference")
    if not ok:
        return

    def fresh():
        return lk.Layout(shape, full_bank_swizzle)

    # (label, mode, timed fn, untimed setup, counts against the target)
    cases: list[tuple[str, str, Callable, Callable | None, bool]] = [
        ("construct Layout only (lambda -> simplified exprs)", "cold", fresh, None, False),
        ("construct + table()", "cold", lambda: fresh().table(), None, True),
        ("table() on a fresh object (constructed untimed)", "cold", lambda obj: obj.table(), fresh, True),
    ]
    if compile_numpy is not None:
        cases.append(
            (
                "construct + table(), compiled-program cache cleared",
                "coldest",
                lambda _: fresh().table(),
                compile_numpy.cache_clear,
                True,
            )
        )
    cases.append(("apply(coords) on a [16384, 2] int64 array", "warm", lambda: layout.apply(coords), None, True))
    if compile_numpy is not None:
        program = compile_numpy(layout.forward_index, layout.forward_vars)
        columns = (coords[:, 0].copy(), coords[:, 1].copy())
        cases.append(
            (
                "compiled program on the 2 coordinate columns (no checks/stack)",
                "warm",
                lambda: program(*columns),
                None,
                False,
            )
        )

    rows, missed = [], []
    for label, mode, fn, setup, targeted in cases:
        t = measure(fn, setup, budget)
        verdict = ("met" if t.median <= TARGET_S else "MISSED") if targeted else "(info)"
        if targeted:
            EVAL_TARGETS.append((label, t))
            if label == "construct + table()":
                state = "met" if t.median <= TARGET_S else "MISSED"
                headline("16,384-coordinate 128B swizzle, construct + table()", t, "target 1 ms",
                         f"{state} ({fmt_ratio(t.median / TARGET_S)} of it)")
            if t.median > TARGET_S:
                missed.append((label, fn, setup))
        ns = f"{t.median / n * 1e9:.1f}"
        rows.append((label, mode, *timing_cells(t), ns, fmt_ratio(t.median / TARGET_S), verdict))
        record("eval", "fp16 swizzle 128x128", label, t, mode=mode, target_s=TARGET_S, verdict=verdict)
    print_table(("case", "mode", *TIMING_HEADERS, "ns/coord", "median/1ms", "target"), rows)
    to_profile = missed
    if always_profile and not missed:
        to_profile = [(label, fn, setup) for label, _, fn, setup, targeted in cases if targeted]
    for label, fn, setup in to_profile:
        print(f"\n  cProfile of '{label}' (200 calls; times per call; own = excluding callees):")
        for line in profile_top(fn, setup, reps=200):
            print("    " + line)


# ---- 2. inverse ---------------------------------------------------------------------------------


INVERSE_CASES = (
    ("transpose 64x64", transpose),
    ("fp16 full-bank swizzle 64x64", full_bank_swizzle),
    ("mixed-radix permutation 64x64", mixed_radix),
)


def bench_inverse(budget: Budget, tilelang: oracles.Oracle) -> None:
    section("inverse() of 64x64 layouts (a fresh object per call, so the bijectivity proof is included)")
    shape = (64, 64)
    rows, notes = [], []
    for name, fn in INVERSE_CASES:
        layout = lk.Layout(shape, fn)
        inv = layout.inverse()
        print(f"  {name}: {layout}\n    inverse: {inv}")
        forward = layout.table().reshape(-1, len(layout.forward_index))
        ident_in = all_coords(shape)
        ok = check(np.array_equal(inv.apply(forward), ident_in), f"{name}: inverse(forward(x)) != x")
        back = layout.apply(inv.table().reshape(-1, len(shape)))
        ok &= check(np.array_equal(back, all_coords(layout.output_shape)), f"{name}: forward(inverse(y)) != y")
        if not ok:
            continue
        ours = measure(lambda obj: obj.inverse(), lambda fn=fn: lk.Layout(shape, fn), budget)
        record("inverse", name, "layoutkit inverse()", ours)
        rows.append((name, "layoutkit inverse()", *timing_cells(ours), "1.00x (anchor)"))
        if not tilelang.ok:
            continue
        variants = [("tilelang inverse() (same lambda)", lambda fn=fn: oracles.tl_layout(shape, fn))]
        if fn is full_bank_swizzle:
            variants.append(
                ("tilelang inverse() (make_full_bank_swizzled_layout)", lambda: oracles.tl_full_bank_swizzle(shape))
            )
        for impl, build in variants:
            try:
                tl_inv = build().inverse()
            except Exception as err:
                rows.append((name, impl, "fails", "", "", "", "see note"))
                notes.append(f"{name}, {impl}: {short_error(err)}")
                record("inverse", name, impl, None, error=short_error(err, 400))
                if fn is full_bank_swizzle and "same lambda" in impl:
                    headline(f"inverse() of a {name} (proof + check included)", ours, "TileLang inverse() fails", "-")
                continue
            got = np.array([[int(v) for v in tl_inv.map_forward_index([int(o) for o in out])] for out in forward])
            if not check(np.array_equal(got, ident_in), f"{name}: TileLang inverse disagrees with the layout"):
                continue
            theirs = measure(lambda obj: obj.inverse(), build, budget)
            r = ratio(theirs, ours)
            record("inverse", name, impl, theirs, theirs_over_ours=r)
            if fn is full_bank_swizzle and "same lambda" in impl:
                headline(f"inverse() of a {name} (proof + check included)", ours,
                         f"TileLang inverse() {fmt_time(theirs.median)}", r)
            rows.append((name, impl, *timing_cells(theirs), fmt_ratio(r)))
    print()
    print_table(("layout", "implementation", *TIMING_HEADERS, "theirs/ours"), rows)
    if not tilelang.ok:
        notes.append(f"tilelang: {tilelang.status}")
    for note in notes:
        print(f"  note: {note}")


# ---- 3. proofs ----------------------------------------------------------------------------------


PROOF_CASES = (
    ("fp16 full-bank swizzle 128x128", (128, 128), full_bank_swizzle),
    ("transpose 64x64", (64, 64), transpose),
    ("row-major 1024x1024", (1024, 1024), row_major_1024),
)


def bench_proofs(budget: Budget) -> None:
    section("prove_bijective() on fresh objects (enumerate includes evaluating every coordinate)")
    rows, notes = [], []
    for name, shape, fn in PROOF_CASES:
        anchor: Timing | None = None
        size = math.prod(shape)
        probe = lk.Layout(shape, fn)
        if fn is row_major_1024:
            ok = np.array_equal(probe.table().reshape(-1), np.arange(size))
        else:
            ok = np.array_equal(probe.table().reshape(size, -1), reference_table(fn, shape))
        if not check(ok, f"{name}: table() vs reference"):
            continue
        for method in ("enumerate", "isl", "f2"):
            if method == "f2" and probe.affine_f2() is None:
                notes.append(f"{name}: not affine over F2 (no f2 row)")
                continue
            try:
                verdict = lk.Layout(shape, fn).prove_bijective(method)
            except Exception as err:  # e.g. islpy missing
                rows.append((name, method, "fails", "", "", "", "", "", "see note"))
                notes.append(f"{name}, {method}: {short_error(err)}")
                record("proof", name, method, None, error=short_error(err, 400))
                continue
            check(bool(verdict), f"{name}: prove_bijective({method!r}) refuted a bijection: {verdict}")
            t = measure(
                lambda obj, m=method: obj.prove_bijective(m), lambda fn=fn, shape=shape: lk.Layout(shape, fn), budget
            )
            record("proof", name, method, t, proved=bool(verdict))
            ns = f"{t.median / size * 1e9:.1f}"
            anchor = anchor or t
            rows.append((name, method, *timing_cells(t), ns, fmt_ratio(t.median / anchor.median), str(bool(verdict))))
    rows += _big_xor_rows(budget)
    print_table(("layout", "method", *TIMING_HEADERS, "ns/coord", "vs enumerate", "proved"), rows)
    for note in notes:
        print(f"  note: {note}")


def _big_xor_rows(budget: Budget) -> list[tuple]:
    """``(i, j ^ i)`` at 4096 x 4096: ``auto`` (read as an F2 map) against enumerating 16M coordinates."""
    name, shape = "xor (i, j ^ i) 4096x4096", (4096, 4096)

    def build():
        return lk.Layout(shape, lambda i, j: (i, j ^ i))

    rows, anchor = [], None
    for method in ("enumerate", "auto"):
        proof = build().prove_bijective(method)
        check(bool(proof), f"{name}: prove_bijective({method!r}) refuted a bijection: {proof}")
        t = measure(lambda obj, m=method: obj.prove_bijective(m), build, budget)
        record("proof", name, method, t, proved=bool(proof), decided_by=proof.method)
        anchor = anchor or t
        rows.append((name, f"{method} ({proof.method})", *timing_cells(t), f"{t.median / (1 << 24) * 1e9:.3f}",
                     fmt_ratio(t.median / anchor.median), str(bool(proof))))
    return rows


# ---- 4. side by side with pycute and TileLang ---------------------------------------------------

Theirs = list[tuple[str, "Timing | None", str]]  # (implementation, timing or None, note when None)


def _ours(shape: Sequence[int], fn: Callable, budget: Budget) -> tuple[lk.Layout, np.ndarray, Timing, Timing]:
    layout = lk.Layout(shape, fn)
    coords = all_coords(shape)
    warm = measure(lambda: layout.apply(coords), None, budget)
    cold = measure(lambda: lk.Layout(shape, fn).table(), None, budget)
    return layout, coords, warm, cold


def _compare_table(case: str, ours_warm: Timing, ours_cold: Timing, theirs: Theirs,
                   headlines: dict[str, str] | None = None) -> None:
    """Print one side-by-side table; ``headlines``: implementation -> summary label for the rows the
    summary quotes (their ratio against layoutkit's warm ``apply``)."""
    rows: list[tuple] = [
        (impl, mode, *timing_cells(t), "", "")
        for impl, mode, t in (
            ("layoutkit apply(coords)", "warm", ours_warm),
            ("layoutkit construct + table()", "cold", ours_cold),
        )
    ]
    record("compare", case, "layoutkit apply(coords)", ours_warm, mode="warm")
    record("compare", case, "layoutkit construct + table()", ours_cold, mode="cold")
    notes = []
    for impl, t, note in theirs:
        if t is None:
            rows.append((impl, "", "skipped" if "skipped" in note or "n/a" in note else "fails", "", "", "", "", ""))
            notes.append(f"{impl}: {note}")
            record("compare", case, impl, None, note=note)
            continue
        rw, rc = ratio(t, ours_warm), ratio(t, ours_cold)
        rows.append((impl, "", *timing_cells(t), fmt_ratio(rw), fmt_ratio(rc)))
        record("compare", case, impl, t, theirs_over_ours_warm=rw, theirs_over_ours_cold=rc)
        COMPARE_SUMMARY.append((case, impl, t, rw, rc))
        if headlines and impl in headlines:
            headline(headlines[impl], ours_warm, f"{impl} {fmt_time(t.median)}", rw)
    print_table(("implementation", "mode", *TIMING_HEADERS, "theirs/warm", "theirs/cold"), rows)
    for note in notes:
        print(f"  note: {note}")


def _tilelang_rows(shape, fn, layout: lk.Layout, coords: np.ndarray, slow: Budget, budget: Budget) -> Theirs:
    """TileLang's three ways to evaluate a layout everywhere: ``map_forward_index`` per coordinate,
    ``IndexMap.map_indices`` per coordinate (the IndexMap built once), ``IndexMap.map_tensor`` (C++ loop)."""
    out: Theirs = []
    table = layout.table().reshape(-1, len(layout.forward_index))
    points = [[int(v) for v in c] for c in coords]
    tl_obj = oracles.tl_layout(shape, fn)
    if not check(
        oracles.tl_output_shape(tl_obj) == layout.output_shape,
        f"TileLang output shape {oracles.tl_output_shape(tl_obj)} != layoutkit {layout.output_shape}",
    ):
        return out
    index_map = oracles.tl_index_map(tl_obj)

    def per_coord_mfi():
        return [tuple(int(v) for v in tl_obj.map_forward_index(p)) for p in points]

    def per_coord_map_indices():
        return [tuple(int(v) for v in index_map.map_indices(p)) for p in points]

    for impl, run in (
        ("tilelang map_forward_index per coord", per_coord_mfi),
        ("tilelang IndexMap.map_indices per coord", per_coord_map_indices),
    ):
        if check(np.array_equal(np.array(run(), dtype=np.int64), table), f"{impl} disagrees with layoutkit"):
            out.append((impl, measure(run, None, slow), ""))

    offsets = layout.linear_table().reshape(-1)
    variants = [("tilelang IndexMap.map_tensor + scatter (same lambda)", tl_obj)]
    if fn is full_bank_swizzle:
        variants.append(
            ("tilelang map_tensor + scatter (make_full_bank_swizzled_layout)", oracles.tl_full_bank_swizzle(shape))
        )
    for impl, variant in variants:
        src = oracles.tl_input_tensor(shape)
        im = oracles.tl_index_map(variant)
        try:
            got = oracles.tl_map_tensor_offsets(im, src)
        except Exception as err:
            out.append((impl, None, short_error(err)))
            continue
        same_box = oracles.tl_output_shape(variant) == layout.output_shape
        if check(same_box and np.array_equal(got, offsets), f"{impl} disagrees with layoutkit"):
            timing = measure(lambda im=im, src=src: oracles.tl_map_tensor_offsets(im, src), None, budget)
            out.append((impl, timing, ""))
    return out


def bench_compare(budget: Budget, slow: Budget, pycute: oracles.Oracle, tilelang: oracles.Oracle) -> None:
    section("Side by side with pycute and TileLang (every result checked element for element before timing)")
    print("  theirs/warm = their median / layoutkit apply() median; theirs/cold = their median / layoutkit")
    print("  construct + table() median.  > 1 means layoutkit is faster.")

    case = "A. pycute ((8,16),(8,16)):((1,64),(8,1024)) at every integer 0..16383"
    print(f"\n  {case}")
    shape = (16384,)
    layout, coords, warm, cold = _ours(shape, cute_two_level_1d, budget)
    print(f"     layoutkit: {layout}")
    ref = reference_table(cute_two_level_1d, shape)
    check(np.array_equal(layout.table().reshape(-1, 1), ref), "A: layoutkit table vs Python-int reference")
    theirs: Theirs = []
    if pycute.ok:
        P = pycute.module.Layout(CUTE_SHAPE, CUTE_STRIDE)
        crd2idx, pshape, pstride = pycute.module.crd2idx, P.shape, P.stride
        idx = list(range(16384))
        runs = (
            ("pycute Layout.__call__ per index", lambda: [P(i) for i in idx]),
            ("pycute crd2idx per index", lambda: [crd2idx(i, pshape, pstride) for i in idx]),
        )
        for impl, run in runs:
            if check(run() == layout.table().reshape(-1).tolist(), f"A: {impl} disagrees with layoutkit"):
                theirs.append((impl, measure(run, None, slow), ""))
    else:
        theirs.append(("pycute", None, pycute.status))
    if tilelang.ok:
        theirs += _tilelang_rows(shape, cute_two_level_1d, layout, coords, slow, budget)
    else:
        theirs.append(("tilelang", None, tilelang.status))
    # anchors: TileLang's whole-domain path; the per-index Python loops stay in the table, not the summary
    _compare_table(case, warm, cold, theirs, {
        "tilelang IndexMap.map_tensor + scatter (same lambda)": "two-level CuTe layout at every index (16K), apply()",
    })

    case = "B. the same pycute layout at every rank-2 coordinate (m, n) in 128x128"
    print(f"\n  {case}")
    shape = (128, 128)
    layout, coords, warm, cold = _ours(shape, cute_two_level_2d, budget)
    print(f"     layoutkit: {layout}")
    ref = reference_table(cute_two_level_2d, shape)
    check(np.array_equal(layout.table().reshape(-1, 1), ref), "B: layoutkit table vs Python-int reference")
    theirs = []
    if pycute.ok:
        P = pycute.module.Layout(CUTE_SHAPE, CUTE_STRIDE)
        pairs = [(int(m), int(n)) for m, n in coords]

        def run_pairs():
            return [P(m, n) for m, n in pairs]

        if check(run_pairs() == layout.table().reshape(-1).tolist(), "B: pycute disagrees with layoutkit"):
            theirs.append(("pycute Layout.__call__(m, n) per coord", measure(run_pairs, None, slow), ""))
    else:
        theirs.append(("pycute", None, pycute.status))
    _compare_table(case, warm, cold, theirs)

    case = "C. fp16 full-bank swizzle 128x128 at every (i, j)"
    print(f"\n  {case}")
    layout, coords, warm, cold = _ours(shape, full_bank_swizzle, budget)
    theirs = [("pycute", None, "n/a: not compared (the swizzle's 3-output form has no direct pycute equivalent)")]
    if tilelang.ok:
        theirs += _tilelang_rows(shape, full_bank_swizzle, layout, coords, slow, budget)
    else:
        theirs.append(("tilelang", None, tilelang.status))
    _compare_table(case, warm, cold, theirs)


# ---- 5. allocator sensitivity -------------------------------------------------------------------

MALLOC_KEEP = {
    "MALLOC_TRIM_THRESHOLD_": str(64 << 20),
    "MALLOC_TOP_PAD_": str(16 << 20),
    "MALLOC_MMAP_THRESHOLD_": str(16 << 20),
}


def allocator_probe(seconds: float) -> dict[str, list[float]]:
    """``[median, min, max]`` of the 16K swizzle evaluation paths in this (fresh) process; run in a
    subprocess."""
    shape = (128, 128)
    layout = lk.Layout(shape, full_bank_swizzle)
    coords = all_coords(shape)
    budget = Budget(seconds=seconds, min_reps=7)
    cases: dict[str, Callable] = {
        "apply(coords) on a [16384, 2] int64 array": lambda: layout.apply(coords),
        "construct + table()": lambda: lk.Layout(shape, full_bank_swizzle).table(),
    }
    if compile_numpy is not None:
        program = compile_numpy(layout.forward_index, layout.forward_vars)
        columns = (coords[:, 0].copy(), coords[:, 1].copy())
        ref = np.stack(program(*columns), axis=-1)

        def chunked(rows: int = 4096) -> np.ndarray:
            out = np.empty((coords.shape[0], len(layout.forward_index)), dtype=np.int64)
            for lo in range(0, coords.shape[0], rows):
                for k, col in enumerate(program(*(c[lo : lo + rows] for c in columns))):
                    out[lo : lo + rows, k] = col
            return out

        if not np.array_equal(chunked(), ref):
            raise RuntimeError("chunked evaluation disagrees with the one-shot program")
        cases["compiled program on the 2 coordinate columns"] = lambda: program(*columns)
        cases["what-if: same program in 4 chunks of 4096 rows (+ stack)"] = chunked
    return {label: [(t := measure(fn, None, budget)).median, t.min, t.max] for label, fn in cases.items()}


def bench_allocator(seconds: float) -> None:
    """The 16K evaluation in two fresh interpreters: glibc malloc defaults vs. told to keep freed memory.

    numpy allocates every 16,384-element int64 temporary (128 KiB) afresh; with glibc's default
    thresholds such blocks go back to the kernel when freed and come back page-faulted, which can
    cost more than the arithmetic.  Fresh subprocesses keep the comparison independent of whatever
    this process allocated before."""
    section("Allocator sensitivity (info): the 16K evaluation in fresh processes, default vs. kept malloc memory")
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        print("  skipped (the MALLOC_*_ settings are glibc's)")
        return
    results = {}
    for name, extra in (("default", {}), ("keep", MALLOC_KEEP)):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        env.update(extra)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--allocator-probe", str(seconds)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            print(f"  skipped: the probe process failed ({tail[0][:120]})")
            return
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = []
    for label, (default, *d_range) in results["default"].items():
        keep, *k_range = results["keep"][label]
        rows.append((label, span(Timing(default, d_range[0], 0, d_range[1])),
                     span(Timing(keep, k_range[0], 0, k_range[1])), fmt_ratio(default / keep)))
        record("allocator", "fp16 swizzle 128x128", label, None, default_median_s=default, keep_median_s=keep)
    print_table(("case", "default malloc: median (min - max)", "keep memory: median (min - max)",
                 "default/keep (medians)"), rows)
    print("  keep memory = " + " ".join(f"{k}={v}" for k, v in MALLOC_KEEP.items()))


# ---- main -----------------------------------------------------------------------------------------


class _Tee:
    """Copy everything printed to a second stream (the Markdown report)."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text: str) -> int:
        for s in self.streams:
            s.write(text)
        return len(text)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if "--markdown" not in args:
        return _main(args)
    path = Path(args[args.index("--markdown") + 1])
    import io

    machine = "".join(f"* {line}\n" for line in machine_description())  # the load before the run
    versions = ", ".join(f"{k} {v}" for k, v in oracles.installed_versions().items())
    buf = io.StringIO()
    real = sys.stdout
    sys.stdout = _Tee(real, buf)
    start = time.perf_counter()
    try:
        code = _main(args)
    finally:
        sys.stdout = real
    head = (
        "# layoutkit benchmark results\n\n"
        f"Written by `python benchmarks/run.py {' '.join(args)}` (`make bench`) in "
        f"{time.perf_counter() - start:.0f} s. Times are\n"
        "median, min and max over repeated calls; ratios are anchor / layoutkit (> 1: layoutkit is faster)\n"
        "unless a column says otherwise. Regenerate with `make bench`.\n\n"
        f"{machine}* layoutkit {lk.__version__}; {versions}\n\n"
    )
    if HEADLINES:
        head += "## Headline figures\n\n| case | layoutkit: median (min - max) | anchor | ratio |\n|---|---|---|---|\n"
        head += "".join(f"| {' | '.join(row)} |\n" for row in HEADLINES) + "\n"
    path.write_text(head + "## Full report\n\n```text\n" + buf.getvalue().rstrip() + "\n```\n")
    print(f"wrote {path}")
    return code


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="layoutkit benchmarks (see benchmarks/README.md for how to read them)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats (noisier numbers)")
    parser.add_argument("--budget", type=float, default=None, help="seconds of repeats per measurement (default 0.5)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run only these sections")
    parser.add_argument("--profile", action="store_true", help="cProfile the evaluation paths even when on target")
    parser.add_argument("--json", metavar="PATH", help="write all measurements to PATH as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="also write the whole report to PATH as Markdown")
    parser.add_argument("--allocator-probe", type=float, metavar="SECONDS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.allocator_probe is not None:  # internal: the allocator section runs this in a fresh subprocess
        print(json.dumps(allocator_probe(args.allocator_probe)))
        return 0

    seconds = args.budget if args.budget is not None else (0.05 if args.quick else 0.5)
    budget = Budget(seconds=seconds, min_reps=3 if args.quick else 7, max_reps=2000)
    slow = Budget(seconds=0.0, min_reps=2 if args.quick else 5, warmup=0)  # per-call Python loops, ~0.1 s a call
    sections = set(args.only or SECTIONS)

    print("layoutkit benchmarks")
    print(f"  layoutkit {lk.__version__}; " + ", ".join(f"{k} {v}" for k, v in oracles.installed_versions().items()))
    for line in machine_description():
        print(f"  {line}")
    malloc = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
    if malloc:
        print(f"  allocator settings in effect (they change the evaluation numbers; see the allocator section): "
              f"{malloc}")
    print(f"  timing: time.perf_counter, gc paused, >= {budget.min_reps} repeats and ~{seconds:g} s per row")

    if "eval" in sections:
        t0 = time.perf_counter()
        bench_evaluation(budget, args.profile)
        SECTION_SECONDS["eval"] = time.perf_counter() - t0
    pycute = tilelang = oracles.Oracle("-", None, None, "not requested")
    # imported after the first section so that torch & co. do not shape its heap
    if sections & {"inverse", "compare", "fragment", "scale"}:
        pycute = oracles.load_pycute()
        tilelang = oracles.load_tilelang()
        print(f"\n  oracles: pycute {pycute.version if pycute.ok else pycute.status}; ", end="")
        print(f"tilelang {tilelang.version if tilelang.ok else tilelang.status}")
    runs: dict[str, Callable[[], list[str] | None]] = {
        "inverse": lambda: bench_inverse(budget, tilelang),
        "proof": lambda: bench_proofs(budget),
        "compare": lambda: bench_compare(budget, slow, pycute, tilelang),
        "domain": lambda: bench_full_domain(budget, slow, args.quick),
        "allocator": lambda: bench_allocator(seconds),
        "fragment": lambda: bench_fragments(budget, slow, tilelang),
        "nv": lambda: bench_nv(budget),
        "tla": lambda: bench_tla(budget),
        "ascend": lambda: bench_ascend(budget),
        "plot": lambda: bench_plot(budget, args.quick),
        "infer": lambda: bench_infer(budget, args.quick),
        "infer-scale": lambda: bench_infer_scale(budget, args.quick),
        "tilelang-infer": lambda: bench_infer_vs_tilelang(budget, reps=2 if args.quick else 5, quick=args.quick),
        "codegen": lambda: bench_codegen(budget, slow, args.quick),
        "cost": lambda: bench_cost(budget),
        "scale": lambda: bench_scale(budget, args.quick, tilelang),
        "memory": lambda: bench_memory(budget, args.quick),
    }
    for name, run in runs.items():
        if name in sections:
            t0 = time.perf_counter()
            FAILURES.extend(run() or [])
            SECTION_SECONDS[name] = time.perf_counter() - t0

    section("Summary")
    if HEADLINES:
        print("  Headline figures (layoutkit: median (min - max); ratio = anchor / layoutkit, > 1: layoutkit faster)")
        print_table(("case", "layoutkit", "anchor", "ratio"), HEADLINES)
        print()
    for label, t in EVAL_TARGETS:
        state = "met" if t.median <= TARGET_S else "MISSED"
        print(
            f"  16K swizzle, {label:<52} {fmt_time(t.median):>10}  ({fmt_ratio(t.median / TARGET_S)} of 1 ms): {state}"
        )
    for case, impl, _t, rw, rc in COMPARE_SUMMARY:
        print(f"  {case.split('.')[0]}: {impl:<62} theirs/ours {fmt_ratio(rw)} vs warm, {fmt_ratio(rc)} vs cold")
    took = ", ".join(f"{k} {v:.1f}" for k, v in SECTION_SECONDS.items())
    print(f"  wall seconds per section: {took}")
    if FAILURES:
        print(f"  {len(FAILURES)} result check(s) FAILED:")
        for what in FAILURES:
            print(f"    - {what}")
    else:
        print("  all result checks passed (every timed implementation agreed element for element)")
    if args.json:
        payload = {"target_s": TARGET_S, "records": RECORDS, "failures": FAILURES,
                   "headlines": [dict(zip(("case", "layoutkit", "anchor", "ratio"), row)) for row in HEADLINES],
                   "section_seconds": SECTION_SECONDS}
        Path(args.json).write_text(json.dumps(payload, indent=1))
        print(f"  wrote {args.json}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
