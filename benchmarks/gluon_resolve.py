"""The Gluon front end on its recorded kernel list (tests/data/gluon, written by tools/gluon_fixtures.py): per
kernel and target, layoutkit's resolved kernel against the author's (register layouts written by hand), both
compiled by Triton 3.9 to cubin on this machine, and Triton alone on the erased kernel.

Reports per kernel: compiles (Triton alone / after resolve), convert_layout count in TTGIR, global load / store
vector widths (bits, from PTX), SASS instruction count, registers, spills; and resolve time against Triton's
whole compile time (ratio, median).  Needs the ``gluon`` extra.  Run: ``python benchmarks/gluon_resolve.py
[--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("TRITON_ALWAYS_COMPILE", "1")   # Triton's whole compile, never a cache hit

from layoutkit.frontends.gluon import resolve  # noqa: E402
from layoutkit.frontends.gluon.toolchain import compile_glir, kernel_metrics, regressions  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "gluon"


REPEATS = 5
"""Timings are the best of this many warm runs (a shared machine's noise only ever adds time)."""


def best_of(n: int, fn) -> float:
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(names: list[str] | None = None) -> dict:
    rows = []
    for path in sorted(DATA.glob("*.sm[0-9]*.glir")):
        if path.name.endswith(".author.glir") or (names and path.name.split(".")[0] not in names):
            continue
        name, sm = path.name.split(".")[0], "sm_" + path.name.split(".sm")[1][:2]
        erased = path.read_text()
        author = path.with_name(path.name.replace(".glir", ".author.glir")).read_text()
        row: dict = {"kernel": name, "target": sm}
        try:
            compile_glir(erased, sm)
            row["triton_alone"] = True
        except Exception:  # noqa: BLE001  (Triton raises its own errors; any refusal counts)
            row["triton_alone"] = False
        try:
            text = resolve(erased, sm)
        except Exception as err:  # noqa: BLE001
            row.update(resolved=False, error=f"{type(err).__name__}: {err}"[:200])
            rows.append(row)
            continue
        row["resolve_s"] = best_of(REPEATS, partial(resolve, erased, sm))
        try:
            ours = compile_glir(text, sm)
        except Exception as err:  # noqa: BLE001
            row.update(resolved=True, compiled=False, error=f"{type(err).__name__}: {err}"[:200])
            rows.append(row)
            continue
        row["compile_s"] = best_of(REPEATS, partial(compile_glir, text, sm))
        row.update(resolved=True, compiled=True, ours=kernel_metrics(ours),
                   author=kernel_metrics(compile_glir(author, sm)))
        rows.append(row)
    ok = [r for r in rows if r.get("compiled")]
    summary = {
        "kernels": len(rows),
        "triton_alone_compiles": sum(r["triton_alone"] for r in rows),
        "compile_after_resolve": len(ok),
        "sass_ratio_median": statistics.median(r["ours"]["sass"] / r["author"]["sass"] for r in ok) if ok else None,
        "sass_ratio_max": max((r["ours"]["sass"] / r["author"]["sass"] for r in ok), default=None),
        "resolve_over_compile_median": (statistics.median(r["resolve_s"] / r["compile_s"] for r in ok)
                                        if ok else None),
        **{bar.replace(" ", "_"): [r["kernel"] + "." + r["target"] for r in ok
                                   if bar in regressions(r["ours"], r["author"])]
           for bar in ("more converts", "narrower vectors", "new spills")},
    }
    return {"summary": summary, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the full report here")
    ap.add_argument("kernels", nargs="*")
    args = ap.parse_args()
    report = run(args.kernels or None)
    for r in report["rows"]:
        if r.get("compiled"):
            o, a = r["ours"], r["author"]
            print(f"{r['kernel']:18s} {r['target']}  triton-alone={'y' if r['triton_alone'] else 'n'}  "
                  f"converts {o['converts']}/{a['converts']}  ld {o['load_bits']}/{a['load_bits']}  "
                  f"st {o['store_bits']}/{a['store_bits']}  sass {o['sass']}/{a['sass']}  "
                  f"regs {o['regs']}/{a['regs']}  "
                  f"spill {o['spill_bytes']}/{a['spill_bytes']}  resolve/compile {r['resolve_s'] / r['compile_s']:.3f}")
        else:
            print(f"{r['kernel']:18s} {r['target']}  FAILED {r.get('error')}")
    print(json.dumps(report["summary"], indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
