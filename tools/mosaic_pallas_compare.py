"""Lower Pallas GPU kernels with Mosaic GPU's layout pass and with layoutkit's, and report per kernel: lowered or
why not, the ops given layouts, relayouts each way, ops whose layouts differ, and the time each pass took
(``docs/mosaic_gpu.md#pallas-kernels``).  The kernels: the ones written here
(``layoutkit.testing.mosaic_pallas``) and JAX's own ``ops/gpu`` kernels with the tuning configurations of
JAX's tests (``layoutkit.testing.mosaic_pallas_ops``).

    python tools/mosaic_pallas_compare.py [--set own|jax|all] [--only SUBSTRING] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from layoutkit.testing.mosaic_pallas import KERNELS, differences, lower_both  # noqa: E402
from layoutkit.testing.mosaic_pallas_ops import OPS_KERNELS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("own", "jax", "all"), default="all", help="which kernels")
    parser.add_argument("--only", default="", help="only kernels whose name contains this")
    parser.add_argument("--json", help="write every result here")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # pallas_call's own deprecation notice
    kernels = {**(KERNELS if args.set != "jax" else {}), **(OPS_KERNELS if args.set != "own" else {})}
    report, totals = {}, {"kernels": 0, "both_lowered": 0, "ops_with_layouts": 0, "relayouts_mosaic": 0,
                          "relayouts_layoutkit": 0, "differing_ops": 0, "more_relayouts": 0, "failed": []}
    print(f"{'kernel':<62} {'mosaic':<7} {'layoutkit':<9} {'ops':>5} {'relayouts m/l':<14} {'differ':<7} "
          f"{'time m/l (s)'}")
    for name in sorted(k for k in kernels if args.only in k):
        got = lower_both(kernels[name])
        m, lk = got["mosaic"], got["layoutkit"]
        diff = differences(m, lk) if not (m.error or lk.error) else []
        laid = sum(1 for _, attrs in lk.ops if attrs)
        report[name] = {k: asdict(v) for k, v in got.items()} | {"differ": len(diff)}
        totals["kernels"] += 1
        if not (m.error or lk.error):
            totals["both_lowered"] += 1
            totals["ops_with_layouts"] += laid
            totals["relayouts_mosaic"] += m.relayouts
            totals["relayouts_layoutkit"] += lk.relayouts
            totals["differing_ops"] += len(diff)
            totals["more_relayouts"] += lk.relayouts > m.relayouts
        elif lk.error:
            totals["failed"].append(name)
        status = lambda r: "ok" if not r.error else "failed"  # noqa: E731
        print(f"{name:<62} {status(m):<7} {status(lk):<9} {laid:>5} {m.relayouts}/{lk.relayouts:<12} "
              f"{len(diff):<7} {m.seconds:.3f}/{lk.seconds:.3f}", flush=True)
        for r, which in ((m, "mosaic"), (lk, "layoutkit")):
            if r.error:
                print(f"    {which}: {r.error}")
    print(json.dumps(totals))
    if args.json:
        Path(args.json).write_text(json.dumps({"kernels": report, "totals": totals}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
