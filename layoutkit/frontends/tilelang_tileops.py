"""What the TileLang adapter does with each tile op of TileLang 0.1.15's ``tl.tileop.*`` registry.

Every registered name is either read (:data:`READ`: the adapter maps it to a Program op, or to
nothing where TileLang's ``InferLayout`` of the op proposes no layout and its operands are laid out
by other ops) or refused by name (:data:`REFUSED`: the construct as a user writes it and why).  A
name in neither (a newer TileLang) is refused as unknown.  The test suite lists the installed
registry and checks every name is in one of the two tables.

>>> refusal("tl.tileop.wgmma_gemm_sp", "T.wgmma_gemm_sp(a, e, b, c)")[:80]
'from_prim_func: `T.wgmma_gemm_sp(a, e, b, c)`: T.wgmma_gemm_sp (tl.tileop.wgmma_'
>>> refusal("tl.tileop.newop", "stmt")
'from_prim_func: `stmt`: tile op tl.tileop.newop is not in the TileLang 0.1.15 registry this adapter reads'
>>> sorted(set(READ) & set(REFUSED))
[]
"""

from __future__ import annotations

from ..errors import UnsupportedError

__all__ = ["READ", "REFUSED", "refuse", "refusal"]

READ: dict[str, str] = {
    "tl.tileop.copy": "T.copy",
    "tl.tileop.tma_copy": "T.tma_copy (TileLang's Copy, forced onto TMA)",
    "tl.tileop.async_copy": "T.async_copy (TileLang's Copy, lowered through cp.async)",
    "tl.tileop.fill": "T.fill / T.clear",
    "tl.tileop.gemm": "T.gemm",
    "tl.tileop.wgmma_gemm": "T.wgmma_gemm (TileLang's Gemm forced onto WGMMA; refused by the rule where T.gemm "
                            "would not select WGMMA, where TileLang's inference stops too)",
    "tl.tileop.tcgen05_gemm": "T.tcgen05_gemm (TileLang's Gemm forced onto Blackwell TCGEN05; refused by the rule "
                              "where T.gemm would not select TCGEN05, where TileLang's inference stops too)",
    "tl.tileop.gemm_sp": "T.gemm_sp (2:4 structured-sparse GEMM: mma.sp, or wgmma.sp on sm_90)",
    "tl.tileop.reduce": "T.reduce_sum / reduce_max / ...",
    "tl.tileop.atomicadd": "T.atomic_add",
    "tl.tileop.atomicmax": "T.atomic_max (TileLang's AtomicMax proposes no layout: a fragment operand follows "
                           "its other users)",
    "tl.tileop.atomicmin": "T.atomic_min (as T.atomic_max)",
    "tl.tileop.transpose": "T.transpose of buffers or regions of rank >= 2, swapping the last two axes (proposes no "
                           "layout, as in TileLang)",
    "tl.tileop.im2col": "T.im2col into shared memory (TileLang's Im2ColOp proposes no layout: not in the Program)",
    "tl.tileop.c2d_im2col": "T.c2d_im2col, the deprecated T.im2col",
    "tl.tileop.cumsum": "T.cumsum (TileLang's scan pins its shared operands to the linear layout: strict annotations)",
    "tl.tileop.cummax": "T.cummax (as T.cumsum)",
    "tl.tileop.reducer_init": "T.reducer_init (opens a reducer's epoch; proposes no layout)",
    "tl.tileop.finalize_reducer_v2": "T.finalize_reducer(acc, dst) (lays dst out as acc's partial after the "
                                     "collective, see layoutkit.infer.reducers)",
}
"""Tile ops the adapter reads, with the construct each is."""

_NO_COUNTERPART = "has no layoutkit counterpart yet"
_MATERIALIZED = ("is the collective TileLang's ReducerPlanAndMaterialize pass emits after LayoutInference (a user "
                 "writes T.finalize_reducer(acc, dst)); it never reaches layout inference")

REFUSED: dict[str, tuple[str, str]] = {
    "tl.tileop.finalize_reducer": ("the materialized finalize_reducer", _MATERIALIZED),
    "tl.tileop.gemm_blockscaled": ("T.gemm_blockscaled", _NO_COUNTERPART + " (block-scaled GEMM)"),
    "tl.tileop.wgmma_gemm_sp": ("T.wgmma_gemm_sp", _NO_COUNTERPART + " (structured-sparse GEMM forced onto "
                                "wgmma.sp, with its asynchronous wait); missing: a Program form of the forced "
                                "instruction (T.gemm_sp, which selects mma.sp or wgmma.sp itself, is read)"),
    "tl.tileop.tcgen05_gemm_sp": ("T.tcgen05_gemm_sp", _NO_COUNTERPART + " (Blackwell sparse GEMM)"),
    "tl.tileop.tcgen05_gemm_blockscaled": ("T.tcgen05_gemm_blockscaled",
                                           _NO_COUNTERPART + " (Blackwell block-scaled GEMM)"),
    "tl.tileop.ascend_copy": ("the Ascend T.copy", "is an Ascend tile op; the adapter reads CUDA kernels only"),
}
"""Tile ops the adapter refuses: ``name -> (construct, why)``."""


def refusal(name: str, stmt: str) -> str:
    """The message refusing tile op ``name`` in statement ``stmt``."""
    if name in REFUSED:
        construct, why = REFUSED[name]
        return f"from_prim_func: `{stmt}`: {construct} ({name}) {why}"
    return f"from_prim_func: `{stmt}`: tile op {name} is not in the TileLang 0.1.15 registry this adapter reads"


def refuse(name: str, stmt: str) -> UnsupportedError:
    """:class:`UnsupportedError` refusing tile op ``name`` in ``stmt`` (see :func:`refusal`).

    >>> refuse("tl.tileop.wgmma_gemm_sp", "T.wgmma_gemm_sp(a, e, b, c)").args[0].split(": ")[2][:32]
    'T.wgmma_gemm_sp (tl.tileop.wgmma'
    """
    return UnsupportedError(refusal(name, stmt))
