"""Lower the Pallas GPU kernels of ``layoutkit.testing.mosaic_pallas`` with Mosaic GPU's layout pass and with
layoutkit's, and report per kernel: lowered or why not, relayouts each way, ops whose layouts differ, and the
time each pass took (``docs/mosaic_gpu.md#pallas-kernels``).

    python tools/mosaic_pallas_compare.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from layoutkit.testing.mosaic_pallas import KERNELS, differences, lower_both  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write every result here")
    args = parser.parse_args(argv)
    report = {}
    print(f"{'kernel':<16} {'mosaic':<8} {'layoutkit':<10} {'relayouts m/l':<14} {'differ':<7} {'time m/l (s)'}")
    for name in sorted(KERNELS):
        got = lower_both(name)
        m, lk = got["mosaic"], got["layoutkit"]
        diff = differences(m, lk) if not (m.error or lk.error) else []
        report[name] = {k: asdict(v) for k, v in got.items()} | {"differ": len(diff)}
        status = lambda r: "ok" if not r.error else "failed"  # noqa: E731
        print(f"{name:<16} {status(m):<8} {status(lk):<10} {m.relayouts}/{lk.relayouts:<12} {len(diff):<7} "
              f"{m.seconds:.3f}/{lk.seconds:.3f}")
        for r, which in ((m, "mosaic"), (lk, "layoutkit")):
            if r.error:
                print(f"    {which}: {r.error}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
