#!/usr/bin/env python
"""Layout inference of the recorded kernels: layoutkit's ``infer_layouts`` beside TileLang's
``LayoutInference`` pass alone (not the whole lowering).

TileLang's lowering is run up to ``LayoutInference``; a temporary wrapper around
``tilelang.transform.LayoutInference`` runs the real pass several times on the module it receives
(timing each call), then stops the lowering with a private exception.  The attribute is always
restored.  Without TileLang only layoutkit's column is printed.

    python benchmarks/tilelang_pass.py            # standalone
    python benchmarks/tilelang_pass.py --quick

``bench_infer_vs_tilelang(budget)`` prints the table and returns the failed result checks.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent, _HERE):  # this checkout's layoutkit, and the harness next to this file
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import harness as h  # noqa: E402

from layoutkit import infer  # noqa: E402
from layoutkit.infer import programs  # noqa: E402


@dataclass(frozen=True)
class Case:
    """One recorded kernel: its name, the TileLang builder's keyword arguments and layoutkit's program."""

    name: str
    kind: str  # "gemm", "elementwise" or "gemm_rowmax_bias"
    params: dict
    program: Callable[[], infer.Program]


def _gemm(name: str, bM: int, bK: int, threads: int, policy: str = "Square", trans_b: bool = False,
          dtype: str = "float16", accum: str = "float32") -> Case:
    params = dict(M=1024, N=1024, K=1024, bM=bM, bN=bM, bK=bK, threads=threads, policy=policy, trans_B=trans_b,
                  dtype=dtype, accum_dtype=accum)

    def program() -> infer.Program:
        return programs.gemm(bM=bM, bN=bM, bK=bK, threads=threads, policy=policy.lower(), transpose_B=trans_b,
                             dtype=dtype, accum_dtype=accum)

    return Case(name, "gemm", params, program)


CASES = (
    _gemm("GEMM 32x32x32, 128 threads, Square", 32, 32, 128),
    _gemm("GEMM 128x128x32, 256 threads, Square", 128, 32, 256),
    _gemm("GEMM 128x128x32, 256 threads, FullRow", 128, 32, 256, "FullRow"),
    _gemm("GEMM 128x128x32, 256 threads, FullCol", 128, 32, 256, "FullCol"),
    _gemm("GEMM 128x128x32, 256 threads, transpose_B", 128, 32, 256, trans_b=True),
    _gemm("GEMM int8 128x128x64, 256 threads, transpose_B", 128, 64, 256, trans_b=True, dtype="int8",
          accum="int32"),
    Case("elementwise 64x64, 128 threads", "elementwise", dict(M=1024, N=1024, bM=64, bN=64, threads=128),
         lambda: programs.elementwise(bM=64, bN=64, threads=128)),
    Case("GEMM + bias + row max 64x64x32, 128 threads", "gemm_rowmax_bias",
         dict(M=1024, N=1024, K=1024, bM=64, bN=64, bK=32, threads=128), programs.gemm_rowmax_bias),
)


# ---- the same kernels written in TileLang (the conformance kernel source, shared with the tests) -----


def tilelang_func(case: Case):
    """The TileLang ``PrimFunc`` of ``case``."""
    from tilelang.tileop.base import GemmWarpPolicy

    from tests import tilelang_kernels as tk

    if case.kind == "gemm":
        params = dict(case.params, policy=getattr(GemmWarpPolicy, case.params["policy"]))
        return tk.gemm(**params)
    if case.kind == "elementwise":
        return tk.elementwise(**case.params)
    return tk.gemm_rowmax_bias(**case.params)


# ---- timing TileLang's pass alone ------------------------------------------------------------------


class _Stop(Exception):
    """Raised by the wrapper after timing, to stop the rest of the lowering."""


def time_layout_inference(func, reps: int, arch: str = "sm_80") -> tuple[h.Timing, object]:
    """Lower ``func`` with TileLang up to ``LayoutInference``; run that pass ``reps + 1`` times on the
    module it receives (the first call is an untimed warm-up) and return the timing of the others and
    the module the pass produced.  ``tilelang.transform.LayoutInference`` is restored afterwards."""
    import tilelang
    import tilelang.transform as tt
    from tilelang import tvm

    real = tt.LayoutInference
    times: list[float] = []
    produced: list[object] = []

    def wrapper():
        inner = real()

        def timed(mod):
            produced.append(inner(mod))  # warm-up: first-call caches, FFI lookups
            for _ in range(reps):
                t0 = time.perf_counter()
                inner(mod)
                times.append(time.perf_counter() - t0)
            raise _Stop

        return timed

    target = {"kind": "cuda", "arch": arch}
    tt.LayoutInference = wrapper
    try:
        with tvm.target.Target(target):
            tilelang.lower(func, target=target)
    except _Stop:
        pass
    finally:
        tt.LayoutInference = real
    if not times:
        raise RuntimeError("TileLang's lowering finished without calling LayoutInference")
    return h.Timing(statistics.median(times), min(times), len(times), max(times)), produced[0]


def layout_map(mod) -> dict[str, tuple]:
    """Buffer name -> (buffer, TileLang layout) from the ``layout_map`` annotations of ``mod["main"]``."""
    from tilelang import tvm

    tir = getattr(tvm, "tirx", None) or tvm.tir
    found: dict[str, tuple] = {}

    def visit(node) -> None:
        if hasattr(node, "annotations") and "layout_map" in node.annotations:
            found.update((buf.name, (buf, lay)) for buf, lay in node.annotations["layout_map"].items())

    tir.stmt_functor.post_order_visit(mod["main"].body, visit)
    return found


def _ints(values) -> list[int]:
    return [int(v) for v in (values if hasattr(values, "__len__") else [values])]


def disagreements(theirs: dict[str, tuple], ours: dict, points: int = 256) -> list[str]:
    """Where TileLang's layouts and layoutkit's differ, evaluated at ``points`` evenly spaced
    coordinates of every buffer: the output index of a layout; the set of (thread, register) pairs
    over all replicas of a fragment (which replica is numbered which does not matter).  Each entry
    names the buffer and gives a witness; empty when they agree."""
    import numpy as np

    if sorted(theirs) != sorted(ours):
        return [f"TileLang laid out {sorted(theirs)}, layoutkit {sorted(ours)}"]
    out = []
    for name, (buf, lay) in sorted(theirs.items()):
        mine = ours[name]
        shape = [int(e) for e in buf.shape]
        flat = np.unique(np.linspace(0, int(np.prod(shape)) - 1, points).astype(np.int64))
        coords = np.stack(np.unravel_index(flat, shape), axis=-1).tolist()
        if type(lay).__name__ != "Fragment":
            want = np.asarray(mine.apply(np.array(coords))).reshape(len(coords), -1).tolist()
            got = [_ints(lay.map_forward_index(c)) for c in coords]
            bad = next((k for k in range(len(coords)) if got[k] != want[k]), None)
            if bad is not None:
                out.append(f"{name}{tuple(coords[bad])}: TileLang {got[bad]}, layoutkit {want[bad]}")
            continue
        reps = int(lay.replicate_size)
        if reps != mine.replicate_size:
            out.append(f"{name}: TileLang replicates {reps}x, layoutkit {mine.replicate_size}x")
            continue
        names = [str(v) for v in lay.get_forward_vars()]
        # TileLang puts the replica variable among the inputs of a replicated fragment
        at = names.index("_rep") if "_rep" in names else (len(names) - 1 if len(names) > len(shape) else None)
        arr = np.array(coords)
        want_t = [np.asarray(mine.apply_thread(arr, rep=r)).reshape(-1) for r in range(reps)]
        want_i = [np.asarray(mine.apply(arr)).reshape(len(coords), -1)] * reps  # same register in every replica
        for k, c in enumerate(coords):
            got, want = set(), set()
            for r in range(reps):
                args = c if at is None else c[:at] + [r] + c[at:]
                got.add((_ints(lay.map_forward_thread(args))[0], tuple(_ints(lay.map_forward_index(args)))))
                want.add((int(want_t[r][k]), tuple(int(v) for v in want_i[r][k])))
            if got != want:
                out.append(f"{name}{tuple(c)}: TileLang (thread, register) {sorted(got)}, layoutkit {sorted(want)}")
                break
    return out


def _tilelang() -> str | None:
    """``None`` when TileLang (and its language module) import, else why not."""
    import oracles

    found = oracles.load_tilelang()
    if not found.ok:
        return found.status
    try:
        import tilelang.language  # noqa: F401
    except Exception as err:  # an optional oracle must not stop the run
        return f"not importable: tilelang.language: {type(err).__name__} (skipped)"
    return None


QUICK = (0, 1, 6, 7)
"""Indices into :data:`CASES` that ``--quick`` runs (one of each kernel kind and both GEMM sizes)."""


def bench_infer_vs_tilelang(budget: h.Budget, reps: int | None = None, quick: bool = False) -> list[str]:
    """Run the section; return failed result checks.  ``reps``: timed calls of TileLang's pass per
    kernel (default: ``budget.min_reps``); ``quick``: only the kernels of :data:`QUICK`."""
    h.section("Inference of the recorded kernels vs TileLang's LayoutInference pass alone")
    failures: list[str] = []
    missing = _tilelang()
    rows = []
    ratios: list[float] = []
    for case in [CASES[k] for k in QUICK] if quick else CASES:
        def fresh(case=case) -> infer.Program:
            infer.clear_caches()
            return case.program()

        try:
            result = infer.infer_layouts(fresh())
        except Exception as err:  # report it as a failed check, keep going
            failures.append(f"infer vs tilelang: layoutkit failed on {case.name}: {type(err).__name__}: {err}")
            continue
        if not result.layout_map:
            failures.append(f"infer vs tilelang: {case.name}: empty layout map")
        cold = h.measure(infer.infer_layouts, setup=fresh, budget=budget)
        theirs: h.Timing | None = None
        note = ""
        if missing is None:
            try:
                theirs, produced = time_layout_inference(tilelang_func(case), reps or budget.min_reps)
            except Exception as err:  # an optional oracle must not stop the run
                note = f"TileLang failed: {type(err).__name__}: {' '.join(str(err).split())[:90]}"
            else:
                try:
                    found = disagreements(layout_map(produced), result.layout_map)
                except Exception as err:  # reading TileLang's layouts back failed: say so, keep the timing
                    found = [f"could not compare the layouts: {type(err).__name__}: {' '.join(str(err).split())[:90]}"]
                failures.extend(f"infer vs tilelang: {case.name}: {what}" for what in found)
                note = "layouts DIFFER (see the failed checks)" if found else ""
        if theirs is not None:
            ratios.append(theirs.median / cold.median)
            if case in (CASES[0], CASES[1]):
                h.headline(f"inference of the {case.name} GEMM (caches cleared)", cold,
                           f"TileLang LayoutInference pass {h.fmt_time(theirs.median)}", theirs.median / cold.median)
        rows.append([case.name, *h.timing_cells(cold), *(h.timing_cells(theirs) if theirs else ["-"] * 4),
                     h.fmt_ratio(theirs.median / cold.median) if theirs else "-", note])
    h.print_table(["kernel", *(f"ours {h}" for h in h.TIMING_HEADERS), *(f"TileLang {h}" for h in h.TIMING_HEADERS),
                 "TileLang/ours", ""], rows)
    print("  layoutkit: infer_layouts() with its caches cleared before every call (program built untimed).")
    if missing:
        print(f"  tilelang: {missing}")
        return failures
    print("  TileLang: its LayoutInference pass alone, on the module lowering hands it (one untimed warm-up call);")
    if ratios:
        h.headline(f"inference of {'all ' if not quick else ''}{len(ratios)} recorded kernels (caches cleared)", "-",
                   "TileLang LayoutInference pass", f"{h.fmt_ratio(min(ratios))} to {h.fmt_ratio(max(ratios))}")
    print("  TileLang/ours = TileLang's median / layoutkit's median (> 1: layoutkit is faster).  Both lay out the")
    print("  same buffers identically, checked at 256 coordinates of each (a layout's output index; for a")
    print("  fragment, the set of (thread, register) pairs of every element over all its replicas).")
    return failures


if __name__ == "__main__":
    sys.exit(h.standalone(lambda budget: bench_infer_vs_tilelang(budget, quick="--quick" in sys.argv[1:])))
