#!/usr/bin/env python
"""Layout inference of Pallas GPU kernels (Warpgroup semantics): layoutkit's Mosaic GPU pass beside Mosaic's own
``infer_layout`` on the same modules (``docs/mosaic_gpu.md#benchmark``).

Each kernel of ``layoutkit.testing.mosaic_pallas`` is lowered once on the CPU up to the layout pass; the module the
pass receives is kept as text, and each pass then runs on fresh parses of it (the best of ``--reps`` runs; a pass
that fails says so).  The ratio is Mosaic's time over layoutkit's: above 1, layoutkit is faster.

    python benchmarks/mosaic_pass.py [--reps 5]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def captured_modules() -> dict[str, str]:
    """Kernel name -> the module text the layout pass receives during its lowering."""
    from layoutkit.frontends.mosaic_gpu_swap import override_pass
    from layoutkit.testing.mosaic_pallas import KERNELS

    texts: dict[str, str] = {}
    for name, lower in sorted(KERNELS.items()):
        def spy(original: Any, module: Any, *args: Any, name: str = name, **kwargs: Any) -> None:
            texts[name] = str(module.operation.get_asm(enable_debug_info=False))
            original(module, *args, **kwargs)

        try:
            with override_pass(spy):
                lower()
        except Exception:  # noqa: BLE001 - the text is captured before the pass can fail
            pass
    return texts


def time_pass(text: str, run: Any, reps: int) -> float | str:
    import jax.experimental.mosaic.gpu as mgpu
    from jax._src.interpreters import mlir as mlir_interpreter
    from jax._src.lib.mlir import ir

    best = math.inf
    for _ in range(reps):
        context = ir.Context()
        context.append_dialect_registry(mlir_interpreter.upstream_dialects)
        context.load_all_available_dialects()
        mgpu.dialect.register_dialect(context)
        with context, ir.Location.unknown():
            module = ir.Module.parse(text)
            start = time.perf_counter()
            try:
                run(module, arch=(9, 0))
            except Exception as err:  # noqa: BLE001 - a failing pass is a row of the table
                return f"fails: {type(err).__name__}"
            best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    from jax.experimental.mosaic.gpu import layout_inference

    from layoutkit.frontends.mosaic_gpu import infer_layout

    ratios = []
    print(f"{'kernel':<16} {'Mosaic':>12} {'layoutkit':>12} {'Mosaic / layoutkit':>20}")
    for name, text in captured_modules().items():
        theirs = time_pass(text, layout_inference.infer_layout, args.reps)
        ours = time_pass(text, infer_layout, args.reps)
        both = isinstance(theirs, float) and isinstance(ours, float)
        ratio = theirs / ours if both else None  # type: ignore[operator]
        if ratio is not None:
            ratios.append(ratio)
        cell = lambda t: f"{t * 1e3:10.2f}ms" if isinstance(t, float) else t  # noqa: E731
        print(f"{name:<16} {cell(theirs):>12} {cell(ours):>12} {f'{ratio:.2f}x' if ratio else '-':>20}")
    if ratios:
        print(f"geometric mean Mosaic / layoutkit: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
