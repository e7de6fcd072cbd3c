"""The NVIDIA backend (``target="sm_*"``): op rules (:mod:`.rules`), the backend hooks (:mod:`.backend`), the
bank-aware ``smem-aware`` cost model (:mod:`.smem_cost`), lowering (:mod:`.lower`, :mod:`.lower_frag`) to the
per-thread IR (:mod:`.ir`), the CUDA printer (:mod:`.cuda`) and the numpy executor (:mod:`.execute`); the
sm_90a GEMM (TMA, mbarriers, wgmma, warp specialisation) is planned by :mod:`.hopper` and printed by
:mod:`.hopper_cuda` (its epilogue, stmatrix + TMA store and barriers of the consumers, by
:mod:`.hopper_epilogue_cuda`) and run with numpy by :mod:`.hopper_execute`; :mod:`.warp_specialize` says which
programs get a producer warp group.

>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32)
>>> infer_layouts(p, cost_model="smem-aware").layout_map["C_local"].thread_extent
128
"""

import importlib

from ..registry import register_backend
from . import rules, smem_cost
from .backend import NvBackend
from .smem_cost import Conversion, SharedMemoryAwareModel, conversion_cost, staged_conversion_cost, staging_layout
from .warp_specialize import PRODUCER_THREADS, tma_capable


def register() -> None:
    """Register the NVIDIA backend (``target="sm_*"``): its hooks, rules, merge, builders and the smem-aware cost
    model (``import layoutkit`` defers this to the first lookup of such a target)."""
    register_backend(NvBackend())


__all__ = [
    "Conversion", "NvBackend", "PRODUCER_THREADS", "SharedMemoryAwareModel", "conversion_cost", "cuda", "execute",
    "hopper", "hopper_cuda", "hopper_epilogue_cuda", "hopper_execute", "ir", "lower", "lower_frag", "rules",
    "smem_cost", "staged_conversion_cost", "staging_layout", "tma_capable", "warp_specialize",
]

_LAZY = ("cuda", "execute", "hopper", "hopper_cuda", "hopper_epilogue_cuda", "hopper_execute", "ir", "lower",
         "lower_frag")


def __getattr__(name: str):
    """The code generation modules (:data:`_LAZY`), imported on first use."""
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
