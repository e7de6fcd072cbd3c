"""The sm_90a GEMM epilogue: the accumulator through a swizzled shared tile and a TMA store, and epilogue ops
that reduce through shared memory on the consumer warp groups.

**TMA store.**  The copy of the accumulator (or a fragment laid out as it) to the ``[M, N]`` output becomes a
:class:`TmaStore` statement: the consumer threads write their wgmma D fragments into a shared tile laid out
in the canonical TMA form (:class:`~.hopper.OperandTile`: rows of a 32/64/128-byte swizzle span, chunk after
chunk along N) -- with ``stmatrix.m8n8.x4`` for 16-bit outputs (a warp's m16 x n16 block of one tile per
instruction: matrices ``(n8 block j, rows 0-7)``, ``(j, rows 8-15)``, ``(j + 1, 0-7)``, ``(j + 1, 8-15)``), with
``st.shared.v2`` pairs for 32-bit ones (``stmatrix`` is b16 only) --, fence the async proxy, meet at a named
barrier of the consumers, and one thread issues a ``cp.async.bulk.tensor`` store per chunk (box: one chunk of N
by ``bM`` rows; TMA leaves elements outside the tensor unwritten, so tails need no guards), commits the bulk
group and waits for its reads before the kernel ends.  In the inferred swizzle each ``stmatrix`` matrix (8 rows of
16 bytes) hits distinct banks; the fp32 pairs of a half warp (4 rows of 32 bytes) meet 2-way conflicts (4
wavefronts per warp store, 2 the least), as TileLang's tile for a TMA store's source is.

Where it applies:

* the program stages C through shared memory itself (``C_local -> C_shared -> C``, TileLang's sm_90 form):
  the shared tile is the program's buffer in its inferred layout (a TMA store's source gets the Hopper
  swizzle), which must be canonical; 16- and 32-bit outputs.  These programs have no direct-store lowering
  (a fragment -> shared copy is not lowered otherwise), so anything else is refused naming the op;
* the plain GEMM (``C_local -> C``) with a 16-bit output, by default (``tma_store=False`` keeps the direct
  stores; ``tma_store=True`` takes 32-bit outputs too, whose register pairs are already 8-byte stores): the
  staging tile :data:`STAGE` takes the layout the inference gives a TMA store's source of the tile's shape
  (:func:`~layoutkit.targets.nv.copy.tma_shared_layout`).  It needs 16-byte global rows, a swizzled
  (canonical) layout and room beside the operand stages (:data:`SMEM_LIMIT`); else direct stores.

Refused, with :class:`~layoutkit.errors.UnsupportedError` naming the op: a fragment -> shared copy that is not
the accumulator staged for the next op's copy of the whole tile to the output (no other shared staging is
lowered on sm_90a), such a tile not in a canonical swizzle, 8-bit outputs through shared memory, output rows
that are no multiple of 16 bytes (TMA) and a staging tile that does not fit beside the operand stages.

**Reductions through shared memory.**  Epilogue ops lowered with barriers and shared buffers (the warps'
partials of a row reduce, a shared-memory reduce, layout conversions) run on the consumer warp groups alone:
the producer warp group has left, so every barrier of the epilogue is the consumers' named barrier
(:data:`BARRIER_ID`) and the shared buffers are laid out after the operand stages.  GEMM + bias + row max,
row sums and casts lower this way.

>>> from layoutkit.infer import infer_layouts, programs
>>> from layoutkit.backends.nv import hopper
>>> p = programs.gemm_shared_epilogue(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, target="sm_90a")
>>> st = stores(hopper.plan(p, infer_layouts(p)))[0]
>>> st.dst, st.tile.buffer, st.tile.span, st.tile.chunk, st.stmatrix
('C', 'C_shared', 128, 64, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...dtypes import element_bits
from ...errors import UnsupportedError
from ...scopes import GLOBAL, SHARED, is_shared
from . import ir

if TYPE_CHECKING:
    from .hopper import OperandTile

STAGE = "C_stage"
"""The staging tile's buffer name when the program has none."""
SMEM_LIMIT = 227 * 1024
"""Dynamic shared memory one sm_90 block may use."""
BARRIER_ID = 1
"""The consumers' named barrier (0 is ``__syncthreads``, which the exited producer threads never reach)."""


@dataclass(frozen=True)
class TmaStore:
    """The epilogue statement storing the accumulator-shaped fragment ``src`` to global ``dst`` (``[M, N]``)
    through the shared tile ``tile`` (its ``buffer``) and TMA (see the module doc)."""

    src: str
    dst: str
    dtype: str
    tile: OperandTile
    M: int
    N: int
    bM: int
    bN: int

    @property
    def stmatrix(self) -> bool:
        """Whether the registers go to shared memory with ``stmatrix`` (16-bit outputs)."""
        return self.tile.bits == 16

    @property
    def map_name(self) -> str:
        return f"{self.dst}_map"

    @property
    def boxes(self) -> int:
        """TMA boxes (one chunk of N by ``bM`` rows each)."""
        return self.bN // self.tile.chunk


def operand_bytes(stages: int, a: OperandTile, b: OperandTile) -> int:
    """Shared bytes of the operand stages and their mbarriers (each operand's stages 1024-aligned)."""
    return sum(-(-stages * t.stage_bytes // 1024) * 1024 for t in (a, b)) + 16 * stages


def stores(h) -> list[TmaStore]:
    """The :class:`TmaStore` statements of a :class:`~.hopper.HopperGemm`'s epilogue."""
    return [st for st in h.epilogue if isinstance(st, TmaStore)]


def _canonical(layout, buffer: str, bits: int, why: str):
    from .hopper import match_tile

    try:
        return match_tile(layout, buffer, bits, "MN")
    except UnsupportedError as e:
        raise UnsupportedError(f"{why}: {e}") from None


def _is_acc(program, result, name: str, Cl) -> bool:
    b = program.buffers.get(name)
    frag = result.layout_map.get(name)
    return bool(b is not None and b.is_fragment and frag is not None and (frag is Cl or frag.is_equal(Cl)))


def _to_output(program, op, M: int, N: int) -> bool:
    dst = program.buffers[op.args["dst"]]
    return dst.scope == GLOBAL and tuple(dst.shape) == (M, N) and not any(op.args["dst_region"][0])


def _staged(program, result, ops, Cl, shape) -> tuple[int, TmaStore] | None:
    """``(k, store)`` when ``ops[k]`` copies the accumulator into a shared tile and ``ops[k + 1]`` that tile to
    the output (the program's own staging); a staging the lowering cannot follow raises."""
    M, N, bM, bN = shape
    for k, op in enumerate(ops):
        if op.kind != "copy" or not is_shared(program.buffers[op.args["dst"]].scope):
            continue
        src, sh = op.args["src"], op.args["dst"]
        nxt = ops[k + 1] if k + 1 < len(ops) else None
        why = f"sm_90a lowering: {op.name} stages {src} in shared {sh}"
        if not (_is_acc(program, result, src, Cl) and nxt is not None and nxt.kind == "copy"
                and nxt.args["src"] == sh and _to_output(program, nxt, M, N)):
            raise UnsupportedError(f"{why}; lowered when {src} is laid out as the accumulator and the next op copies "
                                   f"{sh} to the [{M}, {N}] output (a TMA store); found "
                                   f"{[o.name + ' (' + o.kind + ')' for o in ops[k:k + 2]]}")
        if tuple(program.buffers[sh].shape) != (bM, bN) or any(op.args["dst_region"][0]):
            raise UnsupportedError(f"{why}; expected the whole {bM} x {bN} tile, found {program.buffers[sh].shape}")
        out = program.buffers[nxt.args["dst"]].dtype
        bits = element_bits(out)
        if program.buffers[sh].dtype != out or bits not in (16, 32):
            raise UnsupportedError(f"{why}; expected a 16- or 32-bit tile of the output's dtype {out}, found "
                                   f"{program.buffers[sh].dtype}")
        if N * bits // 8 % 16:
            raise UnsupportedError(f"{why}; a TMA store needs 16-byte global rows, found {N} x {bits // 8} bytes")
        if sh not in result.layout_map:
            raise UnsupportedError(f"{why}; the inference gave {sh} no layout, so there is no swizzled tile for a "
                                   f"TMA store to {nxt.args['dst']}")
        tile = _canonical(result.layout_map[sh], sh, bits, why)
        return k, TmaStore(src, nxt.args["dst"], out, tile, M, N, bM, bN)
    return None


def _direct(program, result, ops, Cl, shape, want: bool | None) -> tuple[int, TmaStore] | None:
    """``(k, store)`` when ``ops[k]`` is the accumulator's copy to the output and a TMA store applies to it
    (see the module doc); ``want=True`` raises where it does not apply."""
    from ...targets.nv.copy import tma_shared_layout

    M, N, bM, bN = shape
    ks = [k for k, op in enumerate(ops) if op.kind == "copy" and _is_acc(program, result, op.args["src"], Cl)
          and _to_output(program, op, M, N)]
    if want is False or not ks:
        if want and not ks:
            raise UnsupportedError(f"sm_90a lowering: tma_store=True, but no op of {[op.name for op in ops]} copies "
                                   f"the accumulator to an [{M}, {N}] output")
        return None
    k = ks[-1]
    out = program.buffers[ops[k].args["dst"]].dtype
    bits = element_bits(out)
    why = f"sm_90a lowering: a TMA store of {ops[k].name} ({out})"
    if bits not in ((16, 32) if want else (16,)) or N * bits // 8 % 16:
        if want:
            raise UnsupportedError(f"{why}: the store through shared memory takes 16- or 32-bit outputs with 16-byte "
                                   f"global rows; found {bits}-bit elements, rows of {N * bits // 8} bytes")
        return None
    try:
        tile = _canonical(tma_shared_layout((bM, bN), out), STAGE, bits, why)
    except UnsupportedError:
        if want:
            raise
        return None
    return k, TmaStore(ops[k].args["src"], ops[k].args["dst"], out, tile, M, N, bM, bN)


def plan_store(program, result, ops, Cl, shape, room: int, want: bool | None) -> tuple[int, int, TmaStore | None]:
    """``(first, end, store)``: ``ops[first:end]`` are replaced by ``store`` (``end == first`` and ``None`` when
    the epilogue keeps direct stores).  ``room``: shared bytes left beside the operand stages."""
    staged = _staged(program, result, ops, Cl, shape)
    if staged is not None:
        k, st = staged
        if want is False:
            raise UnsupportedError(f"sm_90a lowering: tma_store=False, but the program stages {st.src} in shared "
                                   f"{st.tile.buffer} for its store to {st.dst}")
        if st.tile.stage_bytes > room:
            raise UnsupportedError(f"sm_90a lowering: {st.tile.buffer} needs {st.tile.stage_bytes} bytes of shared "
                                   f"memory; {room} are left beside the operand stages")
        return k, k + 2, st
    direct = _direct(program, result, ops, Cl, shape, want)
    if direct is None:
        return 0, 0, None
    k, st = direct
    if st.tile.stage_bytes > room:
        if want:
            raise UnsupportedError(f"sm_90a lowering: the staging tile needs {st.tile.stage_bytes} bytes of shared "
                                   f"memory; {room} are left beside the operand stages")
        return 0, 0, None
    return k, k + 1, st


def lower_epilogue(program, result, ops, Cl, shape, tile, room: int, want: bool | None) -> tuple[list, list]:
    """The consumer threads' epilogue statements (fragment ops, :func:`~.lower_frag.lower_ops`, around the
    :class:`TmaStore` where one applies) and the extra buffers (the staging tile first)."""
    from .lower_frag import lower_ops

    first, end, st = plan_store(program, result, ops, Cl, shape, room, want)
    convs = tuple(getattr(result, "conversions", ()))
    layouts = dict(result.layout_map)
    body, extra = [], []
    for part in (ops[:first], ops[end:]) if st is not None else (ops,):
        names = {op.name for op in part}
        b, e = lower_ops(part, program, layouts, tile, tuple(c for c in convs if c.op in names))
        body.append(b)
        extra += e
    if st is None:
        return body[0], extra
    scratch = sum(-(-b.size * element_bits(b.dtype) // 8 // 128) * 128 for b in extra if b.scope == SHARED)
    if -(-st.tile.stage_bytes // 1024) * 1024 + scratch > room:
        if want is None and end == first + 1:  # the default staging: the register stores fit where it does not
            return lower_epilogue(program, result, ops, Cl, shape, tile, room, False)
        raise UnsupportedError(f"sm_90a lowering: {st.tile.buffer} ({st.tile.stage_bytes} bytes) and the epilogue's "
                               f"shared scratch ({scratch} bytes) do not fit the {room} bytes beside the operand "
                               "stages")
    stage = ir.Buffer(st.tile.buffer, st.dtype, st.bM * st.bN, SHARED)
    return [*body[0], st, *body[1]], [stage, *extra]


def shared_buffers(h) -> list:
    """The shared buffers of the epilogue (the staging tile, reduction scratch)."""
    return [b for b in h.buffers if b.scope == SHARED]


__all__ = ["BARRIER_ID", "SMEM_LIMIT", "STAGE", "TmaStore", "lower_epilogue", "operand_bytes", "plan_store",
           "shared_buffers", "stores"]
