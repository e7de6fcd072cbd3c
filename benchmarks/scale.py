#!/usr/bin/env python
"""Scale benchmarks: workloads whose cost used to grow badly with the work, each as a ratio against
the baseline a user would compare it with, in one run, every result checked before it is timed.

    python benchmarks/scale.py            # standalone
    python benchmarks/scale.py --quick

Rows: a depth-20 compose chain against the ``table()`` of its result; ``output_shape`` of a 65536^2
domain; bijectivity proofs (the symbolic one of ``(i, j ^ i)``, ``auto`` at 4096^2, nested xors)
against enumeration; ``inverse()`` of a 1024^2 transpose and of a 128x256 accumulator fragment against
TileLang's ``inverse()`` (when TileLang is importable), of a random permutation of 2**16 points (read from its
inverse table) against numpy's ``argsort``, the 4096^2 swizzle inverse's memory; CuTe
``layout(m, n)`` over 1M index arrays and ``linear_table()`` of 16M coordinates against hand-written
numpy; a chain of elementwise loops in one component against the synthetic program of as many ops;
cold imports against ``import numpy``.  ``bench_scale(budget)`` returns the failed result checks.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _p in (str(_HERE.parent), str(_HERE)):
    if _p not in sys.path:  # this checkout's layoutkit, installed or not
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402
from harness import Budget, Timing, fmt_ratio, fmt_time, headline, measure, print_table, section  # noqa: E402

import layoutkit as lk  # noqa: E402
from layoutkit import infer, tla  # noqa: E402

Row = tuple[str, "Timing | None", str, "float | None", str]  # (case, ours, anchor text, ratio, requirement)


def _once(budget: Budget) -> Budget:
    return Budget(seconds=0.0, min_reps=max(1, min(3, budget.min_reps)), warmup=0)


def _clear_caches() -> None:
    infer.clear_caches()
    import layoutkit.algebra.evaluate  # noqa: F401  (the package exports functions of the same names)
    from layoutkit.algebra.nodes import clear_caches

    sys.modules["layoutkit.algebra.evaluate"].compile_numpy.cache_clear()
    clear_caches()


# ---- algebra ----------------------------------------------------------------------------------

BASE = ([16, 16], lambda i, j: ((i + j) % 16, (i + 2 * j) % 16))  # quasi-affine: both outputs use both inputs


def _chain(depth: int, right: bool) -> lk.Layout:
    base = lk.Layout(*BASE)
    out = base
    for _ in range(depth - 1):
        out = out.compose(base) if right else base.compose(out)
    return out


def _compose_rows(budget: Budget, failures: list[str]) -> list[Row]:
    base = lk.Layout(*BASE)
    want = base.table()
    for _ in range(19):
        want = base.table()[want[..., 0], want[..., 1]]
    rows: list[Row] = []
    for right, how in ((True, "M = M.compose(L)"), (False, "M = L.compose(M)")):
        result = _chain(20, right)
        if not np.array_equal(result.table(), want):
            failures.append(f"scale: depth-20 compose chain ({how}) disagrees with the composed tables")
            continue
        del result  # no node of a chain stays alive between the timed runs (they are interned)

        def cold_chain(_: None, right: bool = right) -> None:
            _chain(20, right)

        ours = measure(cold_chain, _clear_caches, budget)
        result = _chain(20, right)

        def fresh(result: lk.Layout = result) -> lk.Layout:
            _clear_caches()
            return lk.Layout.from_exprs(result.input_shape, result.forward_index)

        table = measure(lambda obj: obj.table(), fresh, budget)
        text = len(str(result.forward_index[0]))
        rows.append((f"depth-20 compose chain, {how} (16x16, caches cleared; output text {text:,} chars)", ours,
                     f"table() of the result {fmt_time(table.median)}", ours.median / table.median, "<= 10x"))
    return rows


def _output_shape_rows(budget: Budget, failures: list[str]) -> list[Row]:
    rows: list[Row] = []
    cases = (
        ("quasi-affine ((i*65536 + j) % 1000, (3i + j) // 7)", lambda i, j: ((i * 65536 + j) % 1000, (i * 3 + j) // 7),
         (1000, (3 * 65535 + 65535) // 7 + 1)),
        ("xor (i, j ^ i)", lambda i, j: (i, j ^ i), (65536, 65536)),
    )
    for name, fn, want in cases:
        if lk.Layout([65536, 65536], fn).output_shape != want:
            failures.append(f"scale: output_shape of {name} at 65536^2 is not {want}")
            continue
        t = measure(lambda obj: obj.output_shape, lambda fn=fn: lk.Layout([65536, 65536], fn), budget)
        rows.append((f"output_shape of {name} at 65536x65536 (fresh object)", t, "target 10 ms", t.median / 10e-3,
                     "<= 1x of the target"))
    return rows


def _proof_rows(budget: Budget, failures: list[str]) -> list[Row]:
    rows: list[Row] = []
    once = _once(budget)
    cases = (
        ("(i, j ^ i) 256x256, isl asked for", (256, 256), lambda i, j: (i, j ^ i), "isl", budget, "<= 10x"),
        ("(i, j ^ i) 4096x4096, auto", (4096, 4096), lambda i, j: (i, j ^ i), "auto", once, "<= 2x"),
        ("nested j ^ (i ^ i // 2) 4096x4096, isl asked for", (4096, 4096), lambda i, j: (i, j ^ (i ^ i // 2)), "isl",
         once, "< 1 s"),
    )
    for name, shape, fn, method, reps, need in cases:
        by_enum = lk.Layout(shape, fn).prove_bijective("enumerate")
        proof = lk.Layout(shape, fn).prove_bijective(method)
        if proof.verdict != by_enum.verdict:
            failures.append(f"scale: {name}: {proof} disagrees with enumeration")
            continue
        def build(fn: Callable = fn, shape: tuple[int, int] = shape) -> lk.Layout:
            return lk.Layout(shape, fn)

        ours = measure(lambda obj, m=method: obj.prove_bijective(m), build, reps)
        enum = measure(lambda obj: obj.prove_bijective("enumerate"), build, once)
        rows.append((f"prove_bijective {name} (decided by {proof.method})", ours,
                     f"enumeration {fmt_time(enum.median)}", ours.median / enum.median, need))
    return rows


def _inverse_rows(budget: Budget, failures: list[str], tilelang: object) -> list[Row]:
    rows: list[Row] = []
    once = _once(budget)
    transpose = lk.Layout([1024, 1024], lambda i, j: (j, i))
    if not np.array_equal(transpose.inverse().table(), transpose.table()):
        failures.append("scale: inverse of the 1024x1024 transpose is not the transpose")
    ours = measure(lambda obj: obj.inverse(), lambda: lk.Layout([1024, 1024], lambda i, j: (j, i)), once)
    from fragments import acc_index, acc_thread, accumulator

    if accumulator().inverse().inverse().input_shape is None:  # the round trip is checked in the test-suite
        failures.append("scale: the accumulator fragment has no inverse")
    t_acc = measure(lambda obj: obj.inverse(), accumulator, once)
    tl_t = tl_acc = None
    note = "TileLang not importable (skipped)"
    if getattr(tilelang, "ok", False):
        try:
            import oracles
            from tilelang.layout import Fragment as TLFragment

            tl_t = measure(lambda obj: obj.inverse(), lambda: oracles.tl_layout((1024, 1024), lambda i, j: (j, i)),
                           once)
            tl_acc = measure(lambda obj: obj.inverse(), lambda: TLFragment(
                [128, 256], forward_thread_fn=acc_thread, forward_index_fn=acc_index), once)
            note = ""
        except Exception as err:  # an optional oracle must not stop the run
            note = f"TileLang failed: {type(err).__name__}: {str(err)[:80]}"
    for case, t, theirs, need in (("inverse() of a 1024x1024 transpose", ours, tl_t, "<= 2x"),
                                   ("inverse() of the 128x256 accumulator fragment", t_acc, tl_acc, "<= 1x")):
        anchor = f"TileLang inverse() {fmt_time(theirs.median)}" if theirs else note
        rows.append((case, t, anchor, t.median / theirs.median if theirs else None, need))

    # a bijection with no closed form, past the piecewise form's limits: inverse() reads its inverse table
    perm = np.random.default_rng(0).permutation(1 << 16)
    scrambled = lk.Layout.from_table(perm)
    if not np.array_equal(scrambled.inverse().table()[perm, 0], np.arange(1 << 16)):
        failures.append("scale: the inverse of a random permutation of 2**16 points does not round-trip")
    t_perm = measure(lambda obj: obj.inverse(), lambda: lk.Layout.from_table(perm), once)

    def by_hand() -> None:  # what a user writes: invert with argsort, check the round trip
        inv = np.argsort(perm)
        assert np.array_equal(inv[perm], np.arange(perm.size))

    hand = measure(by_hand, None, once)
    rows.append(("inverse() of a random permutation of 2**16 points (proof, table-read inverse, round-trip check)",
                 t_perm, f"numpy argsort + round-trip check {fmt_time(hand.median)}", t_perm.median / hand.median,
                 "-"))

    from full_domain import swizzle as full_bank  # TileLang's fp16 full-bank swizzle, three outputs

    def swizzle() -> lk.Layout:
        return lk.Layout([4096, 4096], full_bank)

    tracemalloc.start()
    start = time.perf_counter()
    big = swizzle().inverse()
    took = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if big.map_forward_index(list(swizzle().map_forward_index([1000, 777]))) != (1000, 777):
        failures.append("scale: the 4096x4096 swizzle inverse does not round-trip")
    rows.append(("inverse() of a 4096x4096 fp16 full-bank swizzle (time with tracemalloc on)",
                 Timing(took, took, 1, took), f"peak traced memory {peak / 2**20:.0f} MiB", peak / (100 * 2**20),
                 "<= 100 MiB"))
    return rows


# ---- evaluation against hand-written numpy ----------------------------------------------------


def _cute_rows(budget: Budget, failures: list[str]) -> list[Row]:
    rng = np.random.default_rng(0)
    rows: list[Row] = []
    for (s, d) in (((1024, 1024), (1, 1024)), (((8, 16), (8, 16)), ((1, 64), (8, 1024)))):
        layout = tla.make_layout(s, d)
        m = rng.integers(0, tla.size(s[0]), 1 << 20)
        n = rng.integers(0, tla.size(s[1]), 1 << 20)
        if isinstance(s[0], int):
            def hand(m=m, n=n, d=d):
                return m * d[0] + n * d[1]
        else:
            def hand(m=m, n=n):
                return m % 8 + m // 8 * 64 + n % 8 * 8 + n // 8 * 1024
        if not np.array_equal(layout(m, n), hand()):
            failures.append(f"scale: tla layout {s}:{d}(m, n) disagrees with numpy")
            continue
        ours = measure(lambda layout=layout, m=m, n=n: layout(m, n), None, budget)
        theirs = measure(hand, None, budget)
        rows.append((f"CuTe {tla.make_layout(s, d)}(m, n) over 1M index arrays", ours,
                     f"numpy sum of mode strides {fmt_time(theirs.median)}", ours.median / theirs.median, "<= 2x"))
    return rows


def _swizzle_fn(i, j):  # numpy arrays or layoutkit placeholders: a 16-byte-chunk xor swizzle
    return (i, (j // 8 ^ i % 8) * 8 + j % 8)


def _linear_table_rows(budget: Budget, failures: list[str]) -> list[Row]:
    shape = (4096, 4096)
    i, j = np.ogrid[: shape[0], : shape[1]]

    def hand() -> np.ndarray:
        a, b = _swizzle_fn(i.astype(np.int64), j.astype(np.int64))
        return a * 4096 + b

    layout = lk.Layout(shape, _swizzle_fn)
    if layout.output_shape != (4096, 4096) or not np.array_equal(layout.linear_table(), hand()):
        failures.append("scale: linear_table of the 4096x4096 swizzle disagrees with numpy")
        return []
    once = _once(budget)
    ours = measure(lambda obj: obj.linear_table(), lambda: lk.Layout(shape, _swizzle_fn), once)
    theirs = measure(hand, None, once)
    tracemalloc.start()
    lk.Layout(shape, _swizzle_fn).linear_table()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return [(f"linear_table() of 16M coordinates (peak {peak / 2**20:.0f} MiB for a "
             f"{math.prod(shape) * 8 / 2**20:.0f} MiB result)", ours, f"hand numpy {fmt_time(theirs.median)}",
             ours.median / theirs.median, "-")]


# ---- inference: one connected component ------------------------------------------------------


def chain_program(num_ops: int) -> infer.Program:
    """``num_ops`` elementwise loops, each reading the fragment the previous one wrote: one component."""
    p = infer.Program(threads=128, target="sm_80")
    frags = [p.alloc_fragment(f"f{k}", (64, 64), "float32") for k in range(num_ops + 1)]
    for k in range(num_ops):
        p.parallel((64, 64), writes=[(frags[k + 1], lambda i, j: (i, j))], reads=[(frags[k], lambda i, j: (i, j))])
    return p


def _chain_rows(budget: Budget, failures: list[str], quick: bool) -> list[Row]:
    from infer import synthetic

    rows: list[Row] = []
    limit = 5.0 if quick else 15.0  # seconds of one size past which larger sizes are skipped
    times: list[tuple[int, float]] = []
    for n in (10, 100, 300, 1000):
        start = time.perf_counter()
        result = infer.infer_layouts(chain_program(n))
        took = time.perf_counter() - start
        if len({str(result.layout_map[f"f{k}"]) for k in range(n + 1)}) != 1:
            failures.append(f"scale: the {n}-op chain's fragments are not all one layout")
        reps = Budget(seconds=0.0, min_reps=1 if took > 1 else 3, warmup=0)
        ours = measure(lambda _, n=n: infer.infer_layouts(chain_program(n)), infer.clear_caches, reps) \
            if took < limit / 4 else Timing(took, took, 1, took)
        theirs = measure(lambda _, n=n: infer.infer_layouts(synthetic(n)), infer.clear_caches,
                         Budget(seconds=0.0, min_reps=3, warmup=0))
        times.append((n, ours.median))
        rows.append((f"inference of a {n}-op chain in one component (caches cleared)", ours,
                     f"{n}-op synthetic program {fmt_time(theirs.median)}", ours.median / theirs.median, "<= 10x"))
        if took > limit:
            rows.append(("inference of larger chains", None, f"skipped: {n} ops took {took:.0f} s", None, "-"))
            break
    big = [(n, t) for n, t in times if n >= 100]
    if len(big) >= 2:
        slope = np.polyfit(np.log([n for n, _ in big]), np.log([t for _, t in big]), 1)[0]
        rows.append((f"scaling exponent of the chain over {big[0][0]}..{big[-1][0]} ops", None, f"{slope:.2f}", None,
                     "<= 1.2"))
    return rows


# ---- imports ----------------------------------------------------------------------------------


def _cold(code: str, reps: int) -> float:
    best = math.inf
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=str(_HERE.parent))
        best = min(best, time.perf_counter() - start)
    return best


def _import_rows(budget: Budget, failures: list[str]) -> list[Row]:
    reps = 3 if budget.min_reps <= 3 else 7
    heavy = "import sys; assert not {'sympy', 'islpy', 'networkx', 'matplotlib'} & set(sys.modules), sys.modules.keys()"
    numpy_s = _cold("import numpy", reps)
    rows: list[Row] = []
    for code in ("import layoutkit", "import layoutkit.infer", "from layoutkit.infer import Program, infer_layouts",
                 "import layoutkit as lk; lk.Layout([4, 4], lambda i, j: (j, i))"):
        try:
            subprocess.run([sys.executable, "-c", f"{code}\n{heavy}"], check=True, capture_output=True,
                           cwd=str(_HERE.parent))
        except subprocess.CalledProcessError as err:
            failures.append(f"scale: `{code}` failed or imported a heavy library: {err.stderr[-200:]!r}")
            continue
        t = _cold(code, reps)
        need = "<= 1.5x" if code == "import layoutkit.infer" else "-"
        rows.append((f"cold `python -c \"{code}\"` (min of {reps})", Timing(t, t, reps, t),
                     f"`import numpy` {fmt_time(numpy_s)}", t / numpy_s, need))
    return rows


# ---- the section ------------------------------------------------------------------------------


def bench_scale(budget: Budget, quick: bool = False, tilelang: object = None) -> list[str]:
    """Run the section; return failed result checks."""
    section("Scale: costs that follow the structure (ratio = layoutkit / baseline, < 1: layoutkit faster)")
    failures: list[str] = []
    parts: list[Callable[[], list[Row]]] = [
        lambda: _compose_rows(budget, failures),
        lambda: _output_shape_rows(budget, failures),
        lambda: _proof_rows(budget, failures),
        lambda: _inverse_rows(budget, failures, tilelang),
        lambda: _cute_rows(budget, failures),
        lambda: _linear_table_rows(budget, failures),
        lambda: _chain_rows(budget, failures, quick),
        lambda: _import_rows(budget, failures),
    ]
    rows: list[Row] = []
    for part in parts:
        rows += part()
    table = []
    for case, ours, anchor, r, need in rows:
        table.append((case, fmt_time(ours.median) if ours else "-", fmt_time(ours.min) if ours else "-", anchor,
                      fmt_ratio(r) if r is not None else "-", need))
        if ours is not None and r is not None:
            headline(case, ours, anchor, f"{fmt_ratio(r)} of it (need {need})")
    print_table(("case", "median", "min", "baseline", "ours/baseline", "requirement"), table)
    return failures


if __name__ == "__main__":
    args = sys.argv[1:]
    quick = "--quick" in args
    budget = Budget(seconds=0.05, min_reps=3) if quick else Budget(seconds=0.3, min_reps=7)
    sys.path.insert(0, str(_HERE))
    import oracles

    found = bench_scale(budget, quick, oracles.load_tilelang())
    for f in found:
        print(f"FAILED: {f}")
    sys.exit(1 if found else 0)
