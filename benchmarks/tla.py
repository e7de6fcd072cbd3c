#!/usr/bin/env python
"""TLA / CuTe algebra benchmarks: composition, complement, right_inverse and logical_divide of a
128x128 layout by 16x16 tiles, beside pycute (CUTLASS's Python CuTe) when it is importable; plus
the TLA paths (crd2offset, get_tile_layout, full offset tables, to_layout).

    python benchmarks/tla.py            # standalone
    python benchmarks/tla.py --quick

``bench_tla(budget)`` prints the table and returns the failed result checks (empty when layoutkit
and pycute agree on every result that is timed).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parent), str(_HERE)):
    if _path not in sys.path:  # measure this checkout's layoutkit, installed or not
        sys.path.insert(0, _path)

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
    standalone,
    timing_cells,
)

from layoutkit import tla  # noqa: E402

A_SHAPE, A_STRIDE = (128, 128), (128, 1)  # row-major 128x128: does not coalesce to one mode
B_SHAPE, B_STRIDE = (16, 16), (1, 128)  # a 16x16 tile of it
TILER = (16, 16)


def _pycute():
    try:
        import pycute
    except Exception as err:  # noqa: BLE001 - an optional oracle must not stop the run
        return None, f"pycute not importable ({type(err).__name__}) (skipped)"
    return pycute, "pycute"


def _fmt(x) -> str:
    if isinstance(x, tuple):
        return "(" + ",".join(_fmt(v) for v in x) + ")"
    return str(x)


def _same(ours, theirs) -> bool:
    """Same shape:stride up to static markers (pycute has no static ints)."""
    return str(ours).replace("_", "") == f"{_fmt(theirs.shape)}:{_fmt(theirs.stride)}"


def algebra_cases(pc) -> list[tuple[str, Callable, Callable | None]]:
    """(name, layoutkit call, pycute call) for the same work."""
    A, B = tla.Layout(A_SHAPE, A_STRIDE), tla.Layout(B_SHAPE, B_STRIDE)
    As = tla.Layout(tla.make_static(A_SHAPE), tla.make_static(A_STRIDE))
    Bs = tla.Layout(tla.make_static(B_SHAPE), tla.make_static(B_STRIDE))
    Z = tla.zipped_divide(A, TILER)
    cases: list[tuple[str, Callable, Callable | None]] = [
        ("composition(A, B)", lambda: tla.composition(A, B), None),
        ("complement(B, size(A))", lambda: tla.complement(B, A.size), None),
        ("right_inverse(zipped_divide(A, 16x16))", lambda: tla.right_inverse(Z), None),
        ("logical_divide(A, (16, 16))", lambda: tla.logical_divide(A, TILER), None),
        ("logical_divide, static ints", lambda: tla.logical_divide(As, (tla._16, tla._16)), None),
        ("composition, static ints", lambda: tla.composition(As, Bs), None),
    ]
    if pc is None:
        return cases
    PA, PB = pc.Layout(A_SHAPE, A_STRIDE), pc.Layout(B_SHAPE, B_STRIDE)
    ptiler = (pc.Layout(16), pc.Layout(16))
    PZ = pc.zipped_divide(PA, ptiler)
    theirs = [
        lambda: pc.composition(PA, PB),
        lambda: pc.complement(PB, pc.size(PA)),
        lambda: pc.right_inverse(PZ),
        lambda: pc.logical_divide(PA, ptiler),
    ]
    return [(n, f, theirs[k] if k < len(theirs) else None) for k, (n, f, _) in enumerate(cases)]


def tla_cases() -> list[tuple[str, Callable]]:
    zn = tla.make_layout_from_tag("zN", "float16", 1024, 1024)
    nested = tla.make_layout(((4, 2), (4, 3)), ((4, 16), (1, 32)))
    rows, cols = np.meshgrid(np.arange(1024), np.arange(1024), indexing="ij")
    return [
        ("crd2offset((1,5), ((4,2),(4,3)), ...) scalar", lambda: tla.crd2offset((1, 5), nested.shape, nested.stride)),
        ("layout(1, 5) scalar", lambda: nested(1, 5)),
        ("get_tile_layout(zN 1024^2, (128,256), coord)", lambda: tla.get_tile_layout(zn, (128, 256), (896, 768))),
        ("make_layout_from_tag('zN', fp16, 1024, 1024)", lambda: tla.make_layout_from_tag("zN", "float16", 1024, 1024)),
        ("zN 1024x1024 offset_table() (1M offsets)", lambda: zn.offset_table()),
        ("zN 1024x1024 layout(rows, cols) arrays", lambda: zn(rows, cols)),
        ("zN 1024x1024 to_layout() (symbolic)", lambda: zn.to_layout()),
    ]


def bench_tla(budget: Budget) -> list[str]:
    """Run the section; return failed result checks."""
    section("TLA / CuTe algebra: (128,128):(128,1) by 16x16 tiles, beside pycute")
    failures: list[str] = []
    pc, status = _pycute()
    rows = []
    for name, ours, theirs in algebra_cases(pc):
        result = ours()
        t_ours = measure(ours, budget=budget)
        t_theirs: Timing | None = None
        note = ""
        if theirs is not None:
            ref = theirs()
            if not _same(result, ref):
                failures.append(f"tla: {name}: layoutkit {result} != pycute {_fmt(ref.shape)}:{_fmt(ref.stride)}")
                note = "DIFFERS"
            else:
                t_theirs = measure(theirs, budget=budget)
        ratio = None if t_theirs is None else t_theirs.median / t_ours.median
        rows.append([name, *timing_cells(t_ours), *timing_cells(t_theirs)[:3], fmt_ratio(ratio), str(result), note])
        if name == "composition(A, B)" and t_theirs is not None:
            headline("CuTe composition (128,128):(128,1) o (16,16):(1,128)", t_ours,
                     f"pycute {fmt_time(t_theirs.median)}", ratio)
    print_table(["operation", *TIMING_HEADERS, "pycute median", "pycute min", "pycute max", "pycute/ours",
                 "result", ""], rows)
    if pc is None:
        print(f"  {status}")

    zn = tla.make_layout_from_tag("zN", "float16", 1024, 1024)
    i, j = np.meshgrid(np.arange(1024), np.arange(1024), indexing="ij")
    want = (j // 16) * 1024 * 16 + (i // 16) * 256 + (i % 16) * 16 + j % 16
    if not np.array_equal(zn.offset_table(), want):
        failures.append("tla: zN offset_table disagrees with the numpy formula")
    if tla.crd2offset((1, 5), ((4, 2), (4, 3)), ((4, 16), (1, 32))) != 37:
        failures.append("tla: crd2offset seed example is not 37")
    trows = [[name, *timing_cells(measure(fn, budget=budget))] for name, fn in tla_cases()]
    print()
    print_table(["TLA path", *TIMING_HEADERS], trows)
    return failures


if __name__ == "__main__":
    sys.exit(standalone(bench_tla))
