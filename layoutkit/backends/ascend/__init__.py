"""The Ascend backend (``target="ascend"``): the op builders (:mod:`.program`: ``p.mad``, ``p.dual_copy``,
vector regions, the atomic store mode), op rules (:mod:`.rules`), the passes (:mod:`.passes`), the tile-op
reference executor (:mod:`.reference`), lowering (:mod:`.lower`, :mod:`.loops`) to :mod:`.ir`, the Ascend C
printer (:mod:`.ascend_c`) and the executor of the lowered kernel (:mod:`.execute`).

>>> from layoutkit.infer import programs
>>> q, reports = run_ascend_passes(programs.ascend_gemm(M=64, N=64, K=64, bm=64, bn=64, bk=64))
>>> len(reports)
3
"""

import importlib

from ..registry import register_backend
from . import passes, program, reference, rules
from .backend import AscendBackend
from .passes import PassReport, insert_nd2nz, insert_oob_padding, normalize_fractal_storage, run_ascend_passes
from .reference import AscendExecutionError, UninitialisedReadError, bf16_bits, bf16_value, run_ascend


def register() -> None:
    """Register the Ascend backend (``target="ascend"``): its hooks, rules, tile ops (``import layoutkit`` defers
    this to the first lookup of the target)."""
    register_backend(AscendBackend())


__all__ = [
    "AscendBackend", "AscendExecutionError", "PassReport", "UninitialisedReadError", "ascend_c", "bf16_bits",
    "bf16_value", "execute", "insert_nd2nz", "insert_oob_padding", "ir", "loops", "lower", "normalize_fractal_storage",
    "passes", "program", "reference", "rules", "run_ascend", "run_ascend_passes",
]

_LAZY = ("ascend_c", "execute", "ir", "loops", "lower")


def __getattr__(name: str):
    """The code generation modules (ascend_c, execute, ir, loops, lower), imported on first use."""
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
