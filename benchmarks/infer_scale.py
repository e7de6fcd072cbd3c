"""Inference scale within one connected component: a chain of elementwise loops, each reading the
fragment the previous one wrote (every op shares a fragment with the next, so free mode sees one
component of ``n`` ops), at 100, 300 and 1,000 ops, against the 1,000-op synthetic program of 200
independent components (``infer.py``).  Targets: the 1,000-op chain within 10x of the synthetic
program, and a fitted exponent of time vs ops of at most 1.2.

    python benchmarks/infer_scale.py            # standalone
    python benchmarks/infer_scale.py --quick

``bench_infer_scale(budget)`` prints the table and returns the failed result checks (strings).
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
    Timing,
    fmt_ratio,
    headline,
    measure,
    print_table,
    section,
    standalone,
    timing_cells,
)
from infer import synthetic  # noqa: E402

from layoutkit import infer  # noqa: E402

CHAIN_SIZES = (100, 300, 1000)
RATIO_TARGET = 10.0
EXPONENT_TARGET = 1.2


def _ident(i, j):
    return (i, j)


def chain(num_ops: int, shape: tuple[int, int] = (64, 64), dtype: str = "float32") -> infer.Program:
    """``num_ops`` parallel loops over ``shape``; loop ``k`` reads fragment ``f{k}`` and writes ``f{k+1}``."""
    p = infer.Program(threads=128, target="sm_80")
    frags = [p.alloc_fragment(f"f{k}", shape, dtype) for k in range(num_ops + 1)]
    for a, b in zip(frags, frags[1:]):
        p.parallel(shape, writes=[(b, _ident)], reads=[(a, _ident)])
    return p


def check_chain(p: infer.Program, result: infer.InferenceResult) -> str | None:
    """Every fragment and loop of a chain has the layout the chain's single loop gets alone (each
    loop follows the fragment it reads), or the failed check."""
    one = infer.infer_layouts(chain(1))
    want = one.layout_map["f1"]
    if not all(result.layout_map[name] == want for name in p.buffers):
        return "infer-scale: a chain fragment differs from the single loop's layout"
    if not all(result.loop_layouts[op.name] == one.loop_layouts[chain(1).ops[0].name] for op in p.ops):
        return "infer-scale: a chain loop layout differs from the single loop's"
    return None


def check_synthetic(p: infer.Program, result: infer.InferenceResult) -> str | None:
    """The synthetic program's groups are copies of one another: every group's layouts equal group 0's."""
    lays = result.layout_map
    for name in p.buffers:
        first = name.rstrip("0123456789") + "0"
        if first != name and first in lays and lays[name] != lays[first]:
            return f"infer-scale: synthetic buffer {name} differs from {first}"
    return None


def _time(p: infer.Program, reps: int) -> Timing:
    return measure(infer.infer_layouts, setup=lambda: (infer.clear_caches(), p)[1],
                   budget=Budget(seconds=0.0, min_reps=reps, warmup=0))


def bench_infer_scale(budget: Budget, quick: bool = False) -> list[str]:
    """Run the section; return failed result checks (``quick``: fewer repeats)."""
    section("Inference scale: one connected component (a chain of elementwise loops) vs independent components")
    failures: list[str] = []
    reps = 2 if quick else 5
    base = synthetic(1000)
    failed = check_synthetic(base, infer.infer_layouts(base))
    programs = [chain(n) for n in CHAIN_SIZES]
    for p in programs:
        failed = failed or check_chain(p, infer.infer_layouts(p))
    if failed:
        return [failed]
    t_base = _time(base, reps)
    timings = [_time(p, reps) for p in programs]
    rows = [["synthetic program, 1,000 ops in 200 components (the baseline)", *timing_cells(t_base), "1.00x"]]
    for n, t in zip(CHAIN_SIZES, timings):
        rows.append([f"chain of {n:,} ops, one component", *timing_cells(t), fmt_ratio(t.median / t_base.median)])
    print_table(["case (caches cleared first)", *TIMING_HEADERS, "median / baseline"], rows)
    ratio = timings[-1].median / t_base.median
    slope = float(np.polyfit(np.log(CHAIN_SIZES), np.log([t.median for t in timings]), 1)[0])
    print(f"  1,000-op chain / 1,000-op synthetic: {ratio:.2f}x (target <= {RATIO_TARGET:.0f}x); fitted exponent "
          f"over {CHAIN_SIZES[0]}..{CHAIN_SIZES[-1]:,} ops: {slope:.2f} (target <= {EXPONENT_TARGET})")
    headline("inference of a 1,000-op chain in one component", timings[-1], "1,000-op synthetic program",
             f"{ratio:.2f}x of it, target <= {RATIO_TARGET:.0f}x: {'met' if ratio <= RATIO_TARGET else 'MISSED'}")
    headline("exponent of time vs ops, one component (100..1,000 ops)", f"{slope:.2f}", "linear = 1.00",
             f"target <= {EXPONENT_TARGET}: {'met' if slope <= EXPONENT_TARGET else 'MISSED'}")
    for missed, what in ((ratio > RATIO_TARGET, f"chain / synthetic {ratio:.2f}x > {RATIO_TARGET:.0f}x"),
                         (slope > EXPONENT_TARGET, f"exponent {slope:.2f} > {EXPONENT_TARGET}")):
        if missed:  # a time target: printed, not a failed check (noise is not a bug)
            print(f"  MISSED target: {what}")
    return failures


if __name__ == "__main__":
    sys.exit(standalone(lambda budget: bench_infer_scale(budget, "--quick" in sys.argv[1:])))
