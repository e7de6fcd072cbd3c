"""The structured-sparse GEMM op of a :class:`~layoutkit.infer.Program`: ``gemm_sp(A, E, B, C)``
(TileLang's ``T.gemm_sp``), ``C += A_dense @ B`` where ``A`` holds the kept half of a 2:4 (1:2) sparse
``M x K`` operand, compressed to ``[M, K/2]`` (``[K/2, M]`` with ``transpose_A``), and ``E`` its metadata
(which columns were kept).  Which layouts it imposes is the target's rule (NVIDIA: ``mma.sp``,
:mod:`layoutkit.targets.nv.gemm_sp`); E is an operand the rule reads but lays out for nobody.

>>> from layoutkit.infer import Program
>>> p = Program(threads=128)
>>> A = p.alloc_shared("A_s", (64, 16), "float16"); E = p.alloc_shared("E_s", (64, 2), "int16")
>>> B = p.alloc_shared("B_s", (32, 64), "float16"); C = p.alloc_fragment("C", (64, 64), "float32")
>>> op = p.gemm_sp(A, E, B, C)
>>> op.kind, op.buffers, op.args["transpose_E"]
('gemm_sp', ('A_s', 'E_s', 'B_s', 'C'), False)
"""

from __future__ import annotations

from ..scopes import TMEM
from . import validate
from .ops import FRAGMENT, Buffer, Op, Region, is_shared

__all__ = ["build_gemm_sp", "operand_regions"]

SPARSE_FACTOR = 2
"""Logical K per stored column of the compressed A."""


def operand_regions(p, operands: dict, what: str, tmem_a: bool = False) -> tuple[dict[str, Buffer], dict]:
    """The buffers of a GEMM's ``operands`` (name -> Buffer | Region) and the ``{key}_region`` args of
    those that are parts of shared buffers with unit leading extents (a pipeline stage or a K slice);
    ``tmem_a``: A may also be a region of tensor memory (a TCGEN05 TS GEMM).  Shared by ``gemm`` and
    ``gemm_sp``; the accumulator C is always whole."""
    regions, bufs = {}, {}
    for key, x in operands.items():
        r = p.own(x)
        bufs[key] = r.buffer
        if isinstance(x, Buffer):
            continue
        ext = tuple(r.extents if r.extents is not None else r.buffer.shape)
        validate.region_bounds(r.buffer, r.starts, ext, what)
        laid_whole = is_shared(r.buffer.scope) or (tmem_a and key == "A" and r.buffer.scope == TMEM)
        if key == "C" or not laid_whole or any(e != 1 for e in ext[:-2]):
            shared = " / ".join(k for k in operands if k != "C")
            raise validate.OpValidationError(f"{what}: operand {key} is a region of {r.buffer.scope} buffer "
                                             f"{r.buffer.name} with extents {list(ext)}; expected whole buffers, "
                                             f"or for {shared} shared regions with unit leading extents", what,
                                             r.buffer.name)
        if tuple(r.starts) != (0,) * len(ext) or ext != tuple(r.buffer.shape):
            regions[f"{key}_region"] = (tuple(r.starts), ext)
    return bufs, regions


def _check(bufs: dict[str, Buffer], args: dict, what: str) -> None:
    """Ranks, M / N / logical K agreement (A holds K/2 columns) and an accumulator fragment."""
    for key, b in bufs.items():
        if len(b.shape) < 2:
            raise validate.OpValidationError(f"{what}: operand {key} ({b.name}) needs rank >= 2; found {b.shape}",
                                             what, b.name)
    a0, a1 = validate.gemm_tile(bufs["A"].shape, args.get("A_region"))
    b0, b1 = validate.gemm_tile(bufs["B"].shape, args.get("B_region"))
    M, Ka = (a1, a0) if args["transpose_A"] else (a0, a1)
    Kb, N = (b1, b0) if args["transpose_B"] else (b0, b1)
    C = bufs["C"]
    if Ka * SPARSE_FACTOR != Kb:
        raise validate.OpValidationError(f"{what}: the compressed A {bufs['A'].name} holds K/2 = {Ka} columns; "
                                         f"B {bufs['B'].name} has K = {Kb}, expected {Ka * SPARSE_FACTOR}", what,
                                         bufs["B"].name)
    if tuple(C.shape[-2:]) != (M, N) or C.scope != FRAGMENT:
        raise validate.OpValidationError(f"{what}: C {C.name} is a {C.scope} {C.shape}; expected a fragment "
                                         f"[..., {M}, {N}]", what, C.name)


def build_gemm_sp(p, A: Buffer | Region, E: Buffer | Region, B: Buffer | Region, C: Buffer, transpose_A: bool,
                  transpose_B: bool, transpose_E: bool, policy: str, clear_accum: bool) -> Op:
    """The op :meth:`Program.gemm_sp` appends (see the module doc)."""
    what = f"gemm_sp#{p.next_uid}"
    bufs, regions = operand_regions(p, {"A": A, "E": E, "B": B, "C": C}, what)
    args = {"A": bufs["A"].name, "E": bufs["E"].name, "B": bufs["B"].name, "C": bufs["C"].name,
            "transpose_A": validate.flag(transpose_A, "transpose_A", what),
            "transpose_B": validate.flag(transpose_B, "transpose_B", what),
            "transpose_E": validate.flag(transpose_E, "transpose_E", what),
            "policy": validate.text(policy, "gemm_sp policy", what).lower(),
            "clear_accum": validate.flag(clear_accum, "clear_accum", what), **regions}
    _check(bufs, args, what)
    return p.emit("gemm_sp", args)
