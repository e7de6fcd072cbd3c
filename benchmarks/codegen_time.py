#!/usr/bin/env python
"""Code generation time: lowering and CUDA printing of the solved 128x128x32 GEMM and the elementwise
kernel, the whole pipeline (inference + lowering + printing) beside TileLang's ``tilelang.lower`` to CUDA
source (its whole lowering, no nvcc), and the numpy executor on one 128x128x32 GEMM block.

    python benchmarks/codegen_time.py            # standalone
    python benchmarks/codegen_time.py --quick

``bench_codegen(budget, slow)`` prints the table and returns the failed result checks.
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
    fmt_time,
    headline,
    measure,
    print_table,
    section,
    timing_cells,
)

from layoutkit import codegen, infer  # noqa: E402
from layoutkit.backends.nv.cuda import print_module  # noqa: E402
from layoutkit.infer import programs  # noqa: E402

KERNELS = (
    ("GEMM 128x128x32, 128 threads, 2 stages", lambda: programs.gemm(bM=128, bN=128, bK=32), 1),
    ("elementwise 64x64, 128 threads", lambda: programs.elementwise(bM=64, bN=64, threads=128), 6),
)
"""(name, layoutkit program, index of the same kernel in ``tilelang_pass.CASES`` with 128 threads or None)."""


def _tilelang_lower(case_index: int, reps: int) -> tuple[Timing | None, str]:
    """TileLang's ``tilelang.lower`` of the same kernel to CUDA source (no device compile)."""
    try:
        import oracles
        import tilelang_pass

        found = oracles.load_tilelang()
        if not found.ok:
            return None, f"tilelang: {found.status}"
        import tilelang
        from tilelang import tvm

        base = tilelang_pass.CASES[case_index]
        params = dict(base.params, threads=128)
        func = tilelang_pass.tilelang_func(tilelang_pass.Case(base.name, base.kind, params, base.program))
        target = {"kind": "cuda", "arch": "sm_80"}

        def lower() -> str:
            with tvm.target.Target(target):
                return str(tilelang.lower(func, target=target).kernel_source)

        if "mma" not in lower() and base.kind == "gemm":  # also the warm-up call
            return None, "TileLang's source has no mma (unexpected)"
        return measure(lower, budget=Budget(seconds=0.0, min_reps=reps, warmup=0)), ""
    except Exception as err:  # an optional oracle must not stop the run
        return None, f"TileLang failed: {type(err).__name__}: {' '.join(str(err).split())[:90]}"


def bench_codegen(budget: Budget, slow: Budget, quick: bool = False) -> list[str]:
    """Run the section; return failed result checks."""
    section("Code generation: lower + CUDA printing of solved kernels, and the numpy executor")
    failures: list[str] = []
    rows = []
    for name, build, tl_case in KERNELS:
        program = build()
        result = infer.infer_layouts(program)
        source = codegen.emit_cuda(program, result)
        if "mma.sync" not in source and "gemm" in name.lower():
            failures.append(f"codegen: {name}: no mma.sync in the CUDA source")
        t_lower = measure(lambda p=program, r=result: codegen.lower(p, r), budget=budget)
        kernel = codegen.lower(program, result)
        t_print = measure(lambda k=kernel: print_module([k]), budget=budget)
        t_emit = measure(lambda p=program, r=result: codegen.emit_cuda(p, r), budget=budget)

        def pipeline(_=None, build=build) -> str:
            p = build()
            return codegen.emit_cuda(p, infer.infer_layouts(p))

        t_all = measure(pipeline, setup=infer.clear_caches, budget=budget)
        theirs, note = _tilelang_lower(tl_case, 1 if quick else slow.min_reps)
        for what, t in (("lower()", t_lower), ("print CUDA (lowered kernel)", t_print),
                        ("emit_cuda = lower + print", t_emit)):
            rows.append([name, what, *timing_cells(t), "", ""])
        rows.append([name, "infer (caches cleared) + lower + print", *timing_cells(t_all), "", ""])
        rows.append([name, "TileLang tilelang.lower -> CUDA source", *timing_cells(theirs),
                     fmt_ratio(theirs.median / t_all.median) if theirs else "-", note])
        short = name.split(",")[0]
        headline(f"codegen of the solved {short}: lower + CUDA printing", t_emit, "-", "-")
        if theirs is not None:
            headline(f"{short}: inference + lowering + CUDA printing", t_all,
                     f"TileLang lower() to CUDA source {fmt_time(theirs.median)}", theirs.median / t_all.median)

    # The executor on one 128x128x32 block: check the numbers, then time it.
    program = programs.gemm(M=128, N=128, K=32, bM=128, bN=128, bK=32)
    result = infer.infer_layouts(program)
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (128, 32)).astype(np.float16)
    b = rng.integers(-3, 4, (32, 128)).astype(np.float16)
    got = codegen.execute(program, result, {"A": a, "B": b})["C"]
    if not np.array_equal(got.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32)):
        failures.append("codegen: executor's 128x128x32 GEMM block differs from numpy matmul")
    t_exec = measure(lambda: codegen.execute(program, result, {"A": a, "B": b}), budget=slow)
    rows.append(["GEMM block 128x128x32, 128 threads", "numpy executor: lower + run (checked)", *timing_cells(t_exec),
                 "", ""])
    headline("numpy executor, one 128x128x32 GEMM block (lower + run)", t_exec, "-", "-")
    print_table(["kernel", "step", *TIMING_HEADERS, "TileLang/ours", ""], rows)
    print("  TileLang/ours = TileLang's whole lowering to CUDA source (its own inference included, no nvcc) over")
    print("  layoutkit's inference + lowering + printing; > 1 means layoutkit is faster.")
    return failures


if __name__ == "__main__":
    quick = "--quick" in sys.argv[1:]
    budget = Budget(seconds=0.1, min_reps=3) if quick else Budget(seconds=0.5, min_reps=7)
    slow = Budget(seconds=0.0, min_reps=3 if quick else 5, warmup=1)
    failed = bench_codegen(budget, slow, quick)
    for f in failed:
        print(f"FAILED: {f}")
    sys.exit(1 if failed else 0)
