"""Cost-model benchmarks: scoring one free-mode attempt with each model (register-count, io-aware,
smem-aware) and the whole free-mode search of the GEMM + bias + row max kernel under each model,
plus a 64x64 transposed store where io-aware must pick the coalesced layout.

    python benchmarks/cost.py            # standalone
    python benchmarks/cost.py --quick

``bench_cost(budget)`` prints the tables and returns the failed result checks (strings).
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent, _HERE):  # this checkout's layoutkit, and the harness next to this file
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from harness import Budget, fmt_ratio, measure, print_table, section, span, standalone  # noqa: E402

from layoutkit import cost, infer  # noqa: E402
from layoutkit.infer import programs  # noqa: E402
from layoutkit.infer.engine import solve  # noqa: E402
from layoutkit.infer.free import statements  # noqa: E402

MODELS = ("register-count", "io-aware", "smem-aware")


class Counting:
    """Wraps a model and counts the attempts it scores."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0
        self.wants_statements = getattr(inner, "wants_statements", False)

    def cost(self, layouts, program, statements=None):
        self.calls += 1
        if self.wants_statements:
            return self.inner.cost(layouts, program, statements=statements)
        return self.inner.cost(layouts, program)


def transposed_store() -> infer.Program:
    p = infer.Program(threads=128)
    G = p.tensor("G", (256, 256), "float32")
    x = p.alloc_fragment("x", (64, 64), "float32")
    p.parallel((64, 64), writes=[(x, lambda i, j: (i, j))])
    p.parallel((64, 64), writes=[(G, lambda i, j: (i, j))], reads=[(x, lambda i, j: (j, i))])
    return p


def bench_cost(budget: Budget) -> list[str]:
    """Run the section; return failed result checks."""
    section("Cost models: scoring one attempt, and the free-mode search of GEMM + bias + row max")
    failures: list[str] = []
    rows = []
    for label, build in (("gemm+bias+rowmax", programs.gemm_rowmax_bias), ("64x64 transposed store", transposed_store)):
        p = build()
        ctx = solve(p)
        layouts = dict(ctx.layouts)
        stmts = statements(ctx, p.ops)
        t_st = measure(lambda ctx=ctx, p=p: statements(ctx, p.ops), budget=budget)
        rows.append([label, "build statements", len(stmts), span(t_st), span(t_st), "1.00x"])
        for name in MODELS:
            m = cost.get_cost_model(name)

            def score(_=None, m=m, layouts=layouts, p=p, stmts=stmts):
                return m.cost(layouts, p, statements=stmts)

            t_cold = measure(score, setup=cost.clear_caches, budget=budget)
            t_warm = measure(score, budget=budget)
            rows.append([label, f"score one attempt: {name}", str(score()), span(t_cold), span(t_warm),
                         fmt_ratio(t_cold.median / t_warm.median)])
    print_table(["program", "what", "result", "cold (cost caches cleared): median (min - max)",
                 "warm: median (min - max)", "cold/warm"], rows)

    rows = []
    base = None
    for name in MODELS:
        counter = Counting(cost.get_cost_model(name))
        r = infer.infer_layouts(programs.gemm_rowmax_bias(), cost_model=counter)
        if base is None:
            base = r
        elif any(not lay.is_equal(r.layout_map[k]) for k, lay in base.layout_map.items()):
            failures.append(f"cost: {name} changed a layout of the GEMM + bias + row max kernel")

        def cold(name=name):
            infer.clear_caches()
            infer.infer_layouts(programs.gemm_rowmax_bias(), cost_model=name)

        t_cold = measure(cold, budget=budget)
        t_warm = measure(lambda name=name: infer.infer_layouts(programs.gemm_rowmax_bias(), cost_model=name),
                         budget=budget)
        rows.append([name, counter.calls, span(t_cold), span(t_warm), fmt_ratio(t_cold.median / t_warm.median)])
    print_table(["model", "attempts scored", "infer_layouts (caches cleared): median (min - max)",
                 "infer_layouts (warm)", "cold/warm"], rows)

    io = cost.IOAwareModel()
    picks = {}
    for name in ("register-count", "io-aware"):
        p = transposed_store()
        ctx = solve(p, cost_model=name)
        picks[name] = io.cost(dict(ctx.layouts), p, statements(ctx, p.ops)).mem
    print(f"  transposed store, modelled global bytes of the chosen layout: register-count "
          f"{picks['register-count']} B, io-aware {picks['io-aware']} B")
    if not picks["io-aware"] < picks["register-count"]:
        failures.append("cost: io-aware did not pick the coalesced store")
    return failures


if __name__ == "__main__":
    sys.exit(standalone(bench_cost))
