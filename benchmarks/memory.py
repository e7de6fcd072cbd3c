"""Memory of a long-running compiler process: 5,000 distinct programs solved one after another in one
process (GEMMs, elementwise kernels, reductions, softmax, casts, transposes: shapes, tiles, dtypes, thread
counts and targets varied so no two are alike).  The process keeps nothing per program: every cache is
bounded, so the resident memory after the run is within :data:`GROWTH_TARGET_MIB` of the memory after a
warm-up of :data:`WARMUP` programs (the warm-up fills the interpreter's and the libraries' one-off state).

    python benchmarks/memory.py                 # 5,000 programs (a few minutes)
    python benchmarks/memory.py --quick         # 1,000 programs

``bench_memory(budget, quick)`` prints the table and returns the failed result checks (strings).
"""

from __future__ import annotations

import gc
import itertools
import resource
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent, _HERE):  # this checkout's layoutkit, and the harness next to this file
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from harness import Budget, headline, print_table, section, standalone  # noqa: E402

from layoutkit import caches, infer  # noqa: E402
from layoutkit.errors import LayoutError  # noqa: E402
from layoutkit.infer import programs  # noqa: E402

PROGRAMS = 5000
WARMUP = 200
GROWTH_TARGET_MIB = 100.0

_TILES = (16, 32, 64, 128)
_THREADS = (64, 128, 256)
_TARGETS = ("sm_80", "sm_86", "sm_89", "sm_90")
_HALF = ("float16", "bfloat16")
_ACCUM = ("float32", "float16")


_COMBOS = tuple(itertools.product(_TILES, _THREADS, _TARGETS, _HALF, _ACCUM))


def distinct_program(n: int) -> infer.Program:
    """Program ``n`` of an endless series of distinct programs: the kernel kind, the tile, the threads, the
    target and the dtypes vary, and the problem size (the global tensors' shapes) is new every time."""
    tile, threads, target, half, accum = _COMBOS[n % len(_COMBOS)]
    size = 1024 + 16 * n
    kind = n % 6
    if kind == 0:
        return programs.gemm(M=size, N=size, K=size, bM=max(32, tile), bN=max(32, tile), bK=32, threads=threads,
                             dtype=half, accum_dtype="float32", target=target)
    if kind == 1:
        return programs.elementwise(M=size, N=size, bM=tile, bN=tile, threads=threads, dtype=half, target=target)
    if kind == 2:
        return programs.tile_reduce(M=size, N=size, bM=tile, bN=2 * tile, dim=n % 2, kind=("sum", "max")[n // 6 % 2],
                                    threads=threads, dtype=accum, target=target)
    if kind == 3:
        return programs.softmax(M=size, N=size, bM=tile, bN=2 * tile, threads=threads, dtype="float32",
                                target=target)
    if kind == 4:
        return programs.elementwise_cast(M=size, N=size, bM=tile, bN=tile, threads=threads, in_dtype="float32",
                                         out_dtype=half, target=target)
    return programs.fragment_transpose(M=size, bM=tile, bN=tile, threads=threads, dtype=half, target=target)


def rss_mib() -> float:
    """Resident memory now (Linux ``/proc/self/statm``), else the peak (``ru_maxrss``), in MiB."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * resource.getpagesize() / 2**20
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (2**20 if sys.platform == "darwin" else 2**10)


def solve_many(count: int, warmup: int = WARMUP) -> dict[str, float]:
    """Solve ``count`` distinct programs; RSS after the warm-up and at the end, seconds, refused programs."""
    refused = 0
    start = time.perf_counter()
    after_warmup = rss_mib()
    for k in range(count):
        if k == warmup:
            gc.collect()
            after_warmup = rss_mib()
        try:
            infer.infer_layouts(distinct_program(k))
        except LayoutError:  # a refused program is solved work too
            refused += 1
    gc.collect()
    end = rss_mib()
    return {"programs": count, "warm MiB": after_warmup, "end MiB": end, "growth MiB": end - after_warmup,
            "seconds": time.perf_counter() - start, "refused": refused,
            "cache entries": sum(caches.sizes().values())}


def bench_memory(budget: Budget, quick: bool = False) -> list[str]:
    """Run the section; return failed result checks."""
    del budget  # one pass: the measurement is memory, not time
    section("Memory: distinct programs solved in one process")
    count = 1000 if quick else PROGRAMS
    r = solve_many(count)
    print_table(["programs", "RSS after warm-up", "RSS at end", "growth", "time", "refused", "cache entries"],
                [[str(r["programs"]), f"{r['warm MiB']:.1f} MiB", f"{r['end MiB']:.1f} MiB",
                  f"{r['growth MiB']:.1f} MiB", f"{r['seconds']:.1f} s", str(int(r["refused"])),
                  str(int(r["cache entries"]))]])
    headline(f"memory growth over {count} distinct solves", f"{r['growth MiB']:.1f} MiB",
             f"target < {GROWTH_TARGET_MIB:g} MiB", f"{r['growth MiB'] / GROWTH_TARGET_MIB:.2f} of target")
    if r["growth MiB"] >= GROWTH_TARGET_MIB:
        return [f"memory: {r['growth MiB']:.1f} MiB growth over {count} solves, past {GROWTH_TARGET_MIB:g} MiB"]
    return []


if __name__ == "__main__":
    sys.exit(standalone(lambda b: bench_memory(b, "--quick" in sys.argv[1:])))
