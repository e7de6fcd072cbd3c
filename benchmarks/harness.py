"""Timing, formatting and profiling helpers for ``benchmarks/run.py`` (standard library only)."""

from __future__ import annotations

import cProfile
import gc
import os
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds of ``reps`` timed calls (``time.perf_counter``).

    >>> Timing(2.0, 1.0, 3, 5.0).spread
    5.0
    """

    median: float
    min: float
    reps: int
    max: float = float("nan")

    @property
    def spread(self) -> float:
        """``max / min``: how noisy the repeats were (1.0 = identical)."""
        return self.max / self.min if self.min > 0 else float("nan")


@dataclass(frozen=True)
class Budget:
    """How long to keep repeating one measurement: at least ``min_reps`` calls, then more until
    ``seconds`` of wall time have passed (or ``max_reps`` calls)."""

    seconds: float = 0.5
    min_reps: int = 5
    max_reps: int = 2000
    warmup: int = 1


def measure(fn: Callable, setup: Callable | None = None, budget: Budget | None = None) -> Timing:
    """Time ``fn()`` (or ``fn(setup())`` when ``setup`` is given; setup is not timed).

    The garbage collector is paused while timing, as ``timeit`` does.  ``budget.warmup`` untimed
    calls come first (imports, first-call caches); they are not part of the result.
    """
    budget = budget or Budget()
    call = fn if setup is None else (lambda: fn(setup()))
    for _ in range(budget.warmup):
        call()
    times: list[float] = []
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        while len(times) < budget.min_reps or (
            time.perf_counter() - start < budget.seconds and len(times) < budget.max_reps
        ):
            if setup is None:
                t0 = time.perf_counter()
                fn()
                t1 = time.perf_counter()
            else:
                arg = setup()
                t0 = time.perf_counter()
                fn(arg)
                t1 = time.perf_counter()
            times.append(t1 - t0)
    finally:
        if gc_was_enabled:
            gc.enable()
    return Timing(statistics.median(times), min(times), len(times), max(times))


def fmt_time(seconds: float | None) -> str:
    """``12.3 us`` / ``1.234 ms`` / ``2.51 s`` (ASCII only)."""
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.2f} s"


TIMING_HEADERS = ("median", "min", "max", "reps")
"""Column headers matching :func:`timing_cells`."""


def timing_cells(t: Timing | None) -> list[str]:
    """``[median, min, max, reps]`` as table cells (``-`` for a missing timing).

    >>> timing_cells(Timing(2e-3, 1e-3, 7, 4e-3))
    ['2.000 ms', '1.000 ms', '4.000 ms', '7']
    """
    if t is None:
        return ["-"] * len(TIMING_HEADERS)
    return [fmt_time(t.median), fmt_time(t.min), fmt_time(t.max), str(t.reps)]


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}x"
    if value >= 10:
        return f"{value:.1f}x"
    return f"{value:.2f}x"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], indent: str = "  ") -> None:
    """Plain-text table: first column left-aligned, the others right-aligned."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        return indent + "  ".join(parts).rstrip()

    print(line(cells[0]))
    print(indent + "  ".join("-" * w for w in widths))
    for row in cells[1:]:
        print(line(row))


def machine_description() -> list[str]:
    """Lines describing this machine: CPU model, cores, memory, OS, Python, numpy, load average."""
    import platform

    import numpy as np

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:  # not Linux
        pass
    mem = ""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            kib = int(next(ln for ln in f if ln.startswith("MemTotal")).split()[1])
        mem = f", {kib / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    lines = [
        f"machine: {cpu}, {os.cpu_count()} logical CPUs{mem}",
        f"system: {platform.platform()}; Python {platform.python_version()} "
        f"({platform.python_implementation()}), numpy {np.__version__}",
    ]
    if hasattr(os, "getloadavg"):
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        lines.append(f"load average before the run: {load} (other work on the machine inflates medians; compare mins)")
    return lines


HEADLINES: list[tuple[str, str, str, str]] = []
"""(case, layoutkit, anchor, ratio) rows for the summary table: the figures the README quotes."""


def headline(case: str, ours: Timing | str, anchor: str, ratio: float | str | None) -> None:
    """Add a row to the summary table (``ours`` as ``median (min-max)``; ``ratio`` = anchor / ours)."""
    if isinstance(ours, Timing):
        ours = span(ours)
    HEADLINES.append((case, ours, anchor, ratio if isinstance(ratio, str) else fmt_ratio(ratio)))


def span(t: Timing | None) -> str:
    """``median (min - max)`` of a timing.

    >>> span(Timing(2e-3, 1e-3, 7, 4e-3))
    '2.000 ms (1.000 ms - 4.000 ms)'
    """
    if t is None:
        return "-"
    return f"{fmt_time(t.median)} ({fmt_time(t.min)} - {fmt_time(t.max)})"


def section(title: str) -> None:
    print()
    print("=" * len(title))
    print(title)
    print("=" * len(title))


def profile_top(fn: Callable, setup: Callable | None = None, reps: int = 200, top: int = 8) -> list[str]:
    """cProfile ``reps`` calls of ``fn`` and return the ``top`` functions by own (tottime) time,
    as lines ``tottime/call  cumtime/call  ncalls  where``."""
    args = [setup() if setup is not None else None for _ in range(reps)]
    prof = cProfile.Profile()
    prof.enable()
    for arg in args:
        if setup is not None:
            fn(arg)
        else:
            fn()
    prof.disable()
    stats = pstats.Stats(prof)
    entries = []
    for (filename, lineno, name), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        entries.append((tottime, cumtime, ncalls, _where(filename, lineno, name)))
    entries.sort(key=lambda e: e[0], reverse=True)
    total = sum(e[0] for e in entries) or 1.0
    out = [f"{'own/call':>10}  {'cum/call':>10}  {'own %':>6}  {'calls/rep':>9}  function"]
    for tottime, cumtime, ncalls, where in entries[:top]:
        out.append(
            f"{fmt_time(tottime / reps):>10}  {fmt_time(cumtime / reps):>10}  {100 * tottime / total:5.1f}%  "
            f"{ncalls / reps:9.1f}  {where}"
        )
    return out


def _where(filename: str, lineno: int, name: str) -> str:
    if filename == "~":  # built-in
        return name
    parts = filename.replace(os.sep, "/").split("/")
    for anchor in ("layoutkit", "numpy", "islpy", "pycute", "tilelang", "tvm"):
        if anchor in parts:
            idx = len(parts) - 1 - parts[::-1].index(anchor)
            return f"{'/'.join(parts[idx:])}:{lineno}({name})"
    return f"{parts[-1]}:{lineno}({name})"


def standalone(bench: Callable[[Budget], list[str]], argv: Sequence[str] | None = None) -> int:
    """Entry point of a section run on its own (``python benchmarks/<section>.py [--quick]``):
    run ``bench`` with a short or a normal budget, print its failed checks, exit 1 if any."""
    import sys

    args = sys.argv[1:] if argv is None else list(argv)
    budget = Budget(seconds=0.05, min_reps=3) if "--quick" in args else Budget(seconds=0.3, min_reps=7)
    failures = bench(budget)
    for f in failures:
        print(f"FAILED: {f}")
    return 1 if failures else 0
