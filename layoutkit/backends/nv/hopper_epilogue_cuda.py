"""CUDA text of the sm_90a epilogue (planned by :mod:`.hopper`): the consumers' statements with named barriers,
the :class:`~.hopper.TmaStore` (``stmatrix`` or ``st.shared.v2`` into the swizzled tile,
``fence.proxy.async``, the named barrier, ``cp.async.bulk.tensor`` stores and their bulk group), the shared
buffers' declarations (at :func:`~.hopper.shared_layout`'s offsets) and the output tensor maps.

>>> from layoutkit.infer import infer_layouts, programs
>>> from layoutkit.backends.nv import hopper, hopper_cuda
>>> p = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, num_stages=3, target="sm_90a")
>>> src = hopper_cuda.print_module(hopper.plan(p, infer_layouts(p)))
>>> [w in src for w in ("stmatrix.sync.aligned.m8n8.x4.shared.b16", "fence.proxy.async.shared::cta",
...                     "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.wait_group.read 0")]
[True, True, True, True]
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import UnsupportedError
from . import cuda, ir
from .hopper import BARRIER_ID, TmaStore, shared_buffers, stores

PRELUDE = """#ifndef LAYOUTKIT_SM90_EPILOGUE
#define LAYOUTKIT_SM90_EPILOGUE
static __device__ __forceinline__ __attribute__((unused)) unsigned lk_pack_f16x2(float lo, float hi) {
  half2 v = __floats2half2_rn(lo, hi); return *reinterpret_cast<unsigned*>(&v);
}
static __device__ __forceinline__ __attribute__((unused)) unsigned lk_pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); return *reinterpret_cast<unsigned*>(&v);
}
#endif  // LAYOUTKIT_SM90_EPILOGUE
"""
"""Packing two fp32 accumulators into the b16 pair a ``stmatrix`` register holds (low half first)."""

_TMA_DTYPE = {"float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
              "float32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"}
_PACK = {"float16": "lk_pack_f16x2", "bfloat16": "lk_pack_bf16x2"}


@dataclass(frozen=True)
class StoreKnobs:
    """Printed fields of the TMA store a test may perturb to check that the CPU harness notices: the output
    tensor map's swizzle span (0: none), ``stmatrix`` with ``.trans`` flipped, and the fence, the named barrier
    before the store, the bulk commit and the final wait each left out.  ``fence_by_issuer`` moves the fence
    from every writer (before the barrier) to the issuing thread after it (TileLang's order; the PTX memory
    model orders both).  The defaults print the kernel."""

    map_swizzle: int | None = None
    trans_flipped: bool = False
    fence: bool = True
    fence_by_issuer: bool = False
    barrier: bool = True
    commit: bool = True
    wait: bool = True


def _asm(text: str, operands: str = "") -> str:
    return f'asm volatile("{text};\\n" :: {operands} : "memory");' if operands else \
        f'asm volatile("{text};\\n" ::: "memory");'


def _per_group(values: list[int]) -> str:
    """A value (unsigned) that depends on the consumer warp group ``lk_wg``: a constant when every group has
    the same, linear in the group when the values step evenly, else a choice.

    >>> _per_group([0, 0]), _per_group([0, 64, 128]), _per_group([0, 64, 0])
    ('0u', '(0u + 64u * lk_wg)', '(lk_wg == 0u ? 0u : lk_wg == 1u ? 64u : 0u)')
    """
    if len(set(values)) == 1:
        return f"{values[0]}u"
    steps = {b - a for a, b in zip(values, values[1:])}
    if len(steps) == 1 and min(steps) > 0:
        return f"({values[0]}u + {steps.pop()}u * lk_wg)"
    choice = " : ".join(f"lk_wg == {g}u ? {v}u" for g, v in enumerate(values[:-1]))
    return f"({choice} : {values[-1]}u)"


def _tile_exprs(tiles) -> list[tuple[str, str, int, int]]:
    """``(m0, n0, n, first register)`` of each wgmma tile index, ``m0`` / ``n0`` as expressions of ``wg``; the
    groups must hold the same registers per tile index (register indices are compile-time constants)."""
    shapes = [[(t.n, t.reg) for t in g] for g in tiles]
    if any(s != shapes[0] for s in shapes):
        raise UnsupportedError(f"sm_90a TMA store: the consumer warp groups hold their wgmma tiles (n, first register) "
                               f"differently: {shapes}")
    return [(_per_group([g[i].m0 for g in tiles]), _per_group([g[i].n0 for g in tiles]), n, reg)
            for i, (n, reg) in enumerate(shapes[0])]


class EpiloguePrinter(cuda.Printer):
    """The sm_80 printer for the consumers' epilogue: barriers are the consumers' named barrier, a
    :class:`~.hopper.TmaStore` prints its shared writes, fence and store."""

    def __init__(self, kernel: ir.Kernel, consumers: int, tiles, knobs: StoreKnobs):
        super().__init__(kernel)
        self.depth = 0
        self.consumers = consumers
        self.tiles = tiles
        self.knobs = knobs

    def Barrier(self, st) -> None:
        self.emit(_asm(f"bar.sync {BARRIER_ID}, {self.consumers}"))

    def _address(self, st: TmaStore, rows8: str, row: str, col: str) -> str:
        """``lk_a``: the shared byte of element ``(rows8 + row, col)`` of the tile, ``rows8`` a multiple of 8 and
        ``row < 8``: whole 8-row groups (``8 span`` bytes) and chunks step past the swizzle's bits, so only the
        byte within 8 rows of a chunk is swizzled (the compiler folds the rest into immediates)."""
        t = st.tile
        mask = t.span // 16 - 1
        return (f"const unsigned lk_p = ({row}) * {t.span}u + ({col}) % {t.chunk}u * {t.bits // 8}u;\n"
                f"const unsigned lk_a = lk_cs + ({rows8}) * {t.span}u + ({col}) / {t.chunk}u * {t.chunk_bytes}u + "
                f"(lk_p ^ (((lk_p >> 7) & {mask}u) << 4));")

    def _stmatrix(self, st: TmaStore, m0: str, n0: str, n: int, reg: int) -> None:
        """The tile's ``m64 x n`` D fragment, a warp's m16 x n16 block per ``stmatrix.x4`` (x2 for a last n8)."""
        trans = ".trans" if self.knobs.trans_flipped else ""
        pack = _PACK[st.dtype]
        for num, first, count in ((4, 0, n // 16), (2, n // 16 * 2, n % 16 // 8)):
            if not count:
                continue
            self.emit("#pragma unroll")
            self.emit(f"for (unsigned j = 0; j < {count}u; ++j) {{")
            col = f"{n0} + {8 * first}u + 16u * j" + (" + 8u * (lk_lane / 16u)" if num == 4 else "")
            rows8 = f"{m0} + 16u * lk_warp + 8u * (lk_lane / 8u % 2u)"
            regs = []
            for i in range(num):  # matrix i: n8 block first + 2 j + i / 2, rows 8 (i % 2) ..
                r = f"{reg} + {4 * first} + 8 * j + {4 * (i // 2) + 2 * (i % 2)}"
                regs.append(f'"r"({pack}({st.src}[{r}], {st.src}[{r} + 1]))')
            vec = ", ".join(f"%{k + 1}" for k in range(num))
            self.depth += 1
            self.emit(self._address(st, rows8, "lk_lane % 8u", col))
            self.emit(_asm(f"stmatrix.sync.aligned.m8n8.x{num}{trans}.shared.b16 [%0], {{{vec}}}",
                           ", ".join(['"r"(lk_a)', *regs])))
            self.depth -= 1
            self.emit("}")

    def _st_shared(self, st: TmaStore, m0: str, n0: str, n: int, reg: int) -> None:
        """The tile's D fragment as pairs of adjacent columns, one ``st.shared.v2`` each (32-bit outputs)."""
        self.emit("#pragma unroll")
        self.emit(f"for (unsigned q = 0; q < {n // 4}u; ++q) {{")
        self.depth += 1
        self.emit(self._address(st, f"{m0} + 16u * lk_warp + 8u * (q % 2u)", "lk_lane / 4u",
                                f"{n0} + 8u * (q / 2u) + 2u * (lk_lane % 4u)"))
        self.emit(_asm("st.shared.v2.f32 [%0], {%1, %2}",
                       f'"r"(lk_a), "f"({st.src}[{reg} + 2 * q]), "f"({st.src}[{reg} + 2 * q + 1])'))
        self.depth -= 1
        self.emit("}")

    def TmaStore(self, st: TmaStore) -> None:
        k = self.knobs
        t = st.tile
        self.emit(f"{{  // {st.src} -> {t.buffer} ({t.span}-byte swizzle) -> TMA store to {st.dst}")
        self.depth += 1
        self.emit(f"const unsigned lk_cs = (unsigned)__cvta_generic_to_shared(&{t.buffer}[0]);")
        self.emit("const unsigned lk_lane = (unsigned)tid % 32u;\n"
                  "const unsigned lk_warp = (unsigned)tid % 128u / 32u;\n"
                  "const unsigned lk_wg = (unsigned)tid / 128u;")
        for m0, n0, n, reg in _tile_exprs(self.tiles):
            (self._stmatrix if st.stmatrix else self._st_shared)(st, m0, n0, n, reg)
        if k.fence and not k.fence_by_issuer:  # every writer: its stores before the barrier reach the async proxy
            self.emit(_asm("fence.proxy.async.shared::cta"))
        if k.barrier:
            self.Barrier(None)
        self.emit("if (tid == 0) {")
        self.depth += 1
        if k.fence and k.fence_by_issuer:
            self.emit(_asm("fence.proxy.async.shared::cta"))
        for c in range(st.boxes):
            self.emit(_asm("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3]",
                           f'"l"((unsigned long long)&{st.map_name}), "r"(bx * {st.bN} + {c * t.chunk}), '
                           f'"r"(by * {st.bM}), "r"(lk_cs + {c * t.chunk_bytes})'))
        if k.commit:
            self.emit(_asm("cp.async.bulk.commit_group"))
        self.depth -= 1
        self.emit("}")
        self.depth -= 1
        self.emit("}")


def print_epilogue(h, knobs: StoreKnobs = StoreKnobs()) -> list[str]:
    """The consumers' epilogue lines of :class:`~.hopper.HopperGemm` ``h`` (its statements, then the wait for
    the TMA stores' reads of shared memory before the threads exit)."""
    p = EpiloguePrinter(ir.Kernel(h.name, h.threads, h.grid, h.buffers, ()), 128 * h.consumers, h.tiles, knobs)
    p.block(h.epilogue)
    if stores(h) and knobs.wait:
        p.emit("if (tid == 0) {")
        p.depth += 1
        p.emit(_asm("cp.async.bulk.wait_group.read 0"))
        p.depth -= 1
        p.emit("}")
    return p.lines


def declarations(h, offsets: dict[str, int]) -> list[str]:
    out = []
    for b in shared_buffers(h):
        t = cuda.ctype(b.dtype)
        out.append(f"{t}* {b.name} = reinterpret_cast<{t}*>(lk_smem + {offsets[b.name]});")
    return out


def map_params(h) -> list[str]:
    return [f"const __grid_constant__ CUtensorMap {st.map_name}" for st in stores(h)]


def encode_maps(h, knobs: StoreKnobs = StoreKnobs()) -> tuple[list[str], list[str]]:
    """The encoder's extra parameters (the output maps, then the outputs) and its lines for them."""
    params, lines = [], []
    for st in stores(h):
        t, p = st.tile, st.map_name.lower()
        span = t.span if knobs.map_swizzle is None else knobs.map_swizzle
        eb = t.bits // 8
        params.append(f"CUtensorMap* {st.map_name}")
        lines += [f"  const cuuint64_t {p}_dims[2] = {{{st.N}ull, {st.M}ull}};",
                  f"  const cuuint64_t {p}_strides[1] = {{{st.N * eb}ull}};",
                  f"  const cuuint32_t {p}_box[2] = {{{t.chunk}u, {st.bM}u}};",
                  f"  const cuuint32_t {p}_elem[2] = {{1u, 1u}};",
                  f"  r = cuTensorMapEncodeTiled({st.map_name}, {_TMA_DTYPE[st.dtype]}, 2, (void*){st.dst}, {p}_dims, "
                  f"{p}_strides, {p}_box, {p}_elem, CU_TENSOR_MAP_INTERLEAVE_NONE, "
                  f"CU_TENSOR_MAP_SWIZZLE_{f'{span}B' if span else 'NONE'}, CU_TENSOR_MAP_L2_PROMOTION_NONE, "
                  "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);",
                  "  if (r != CUDA_SUCCESS) return r;"]
    outs = [f"const {cuda.ctype(st.dtype)}* {st.dst}" for st in stores(h)]
    return params + outs, lines
