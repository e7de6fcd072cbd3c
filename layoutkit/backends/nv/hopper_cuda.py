"""CUDA C++ printer of the sm_90a GEMM (:class:`.hopper.HopperGemm`): warp specialised TMA + mbarrier + wgmma.

The kernel (launch ``128 + consumers`` threads, ``grid``, the dynamic shared memory of the launch comment):

* thread 0 initialises the ``stages`` *full* barriers (one arrival: the producer's ``arrive.expect_tx``, plus
  the stage's transaction bytes) and *empty* barriers (one arrival per consumer thread), then the block
  synchronises once;
* warp group 0 lowers its register budget (``setmaxnreg.dec``); its thread 0 runs the k loop: wait for stage
  ``s = ko % stages`` to be empty (parity ``(ko / stages) & 1 ^ 1``: the first round passes), announce the
  stage's bytes and issue the TMA tile loads (``cp.async.bulk.tensor.2d``, one box per swizzle chunk);
* the consumer warp groups raise theirs (``setmaxnreg.inc``), wait for stage ``s`` to be full (parity
  ``(ko / stages) & 1``), run ``wgmma.mma_async`` over its k16 steps with descriptors of the canonical tiles,
  commit, wait for the group, and release the stage; then the epilogue (:mod:`.hopper_epilogue_cuda`): by
  default ``stmatrix`` into the swizzled output tile and a TMA store, else stores from the registers.

The tensor maps are ``__grid_constant__`` parameters; ``<kernel>_tensor_maps`` (host code, after the kernel)
encodes them with ``cuTensorMapEncodeTiled`` from the global tensors: dims inner first, the tile's box, the
swizzle mode of its span, out-of-bounds elements filled with zeros (the tails); an output's map has the
staging tile's box and swizzle, and TMA writes no element outside the tensor.

>>> from layoutkit.infer import infer_layouts, programs
>>> from layoutkit.backends.nv import hopper
>>> p = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, num_stages=3, target="sm_90a")
>>> src = print_module(hopper.plan(p, infer_layouts(p)))
>>> [w in src for w in ("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "CU_TENSOR_MAP_SWIZZLE_128B")]
[True, True]
"""

from __future__ import annotations

from dataclasses import dataclass

from . import cuda, hopper_epilogue_cuda
from .hopper import CONSUMER_REGS, WG, HopperGemm, OperandTile, descriptor_high, operand_offsets, shared_layout
from .hopper_epilogue_cuda import StoreKnobs

PRODUCER_REGS = 40

_FP8 = ("float8_e4m3", "float8_e4m3fn", "float8_e5m2")
_TMA_DTYPE = {"float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
              **dict.fromkeys(_FP8, "CU_TENSOR_MAP_DATA_TYPE_UINT8")}  # TMA moves fp8 as bytes


def _ctype(dtype: str) -> str:
    """The C element type of an operand: fp8 tensors are bytes (the kernel never reads them as numbers)."""
    return "unsigned char" if dtype in _FP8 else cuda.ctype(dtype)


@dataclass(frozen=True)
class Knobs:
    """Printed fields a test may perturb (:func:`print_module` with ``knobs``) to check that the CPU harness
    notices: the tensor maps' swizzle spans (0: none), the descriptors' swizzle spans, leading / stride
    offsets, the B transpose bit, the announced transaction bytes, the consumers' wait parity and when they
    release a stage (``early_release``: right after issuing its wgmma, before it completes); ``store``: the
    TMA store's (:class:`~.hopper_epilogue_cuda.StoreKnobs`).  ``None`` keeps the derived value."""

    a_map_swizzle: int | None = None
    b_map_swizzle: int | None = None
    a_desc_swizzle: int | None = None
    b_desc_swizzle: int | None = None
    a_lbo: int | None = None
    a_sbo: int | None = None
    b_lbo: int | None = None
    b_sbo: int | None = None
    trans_b: int | None = None
    store: StoreKnobs = StoreKnobs()
    tx_bytes: int | None = None
    full_parity_flip: bool = False
    early_release: bool = False
    ab_type: str | None = None
    """The printed wgmma operand type (``"e5m2"`` over e4m3 data: an fp8 instruction-field bug)."""


def descriptor_highs(h: HopperGemm, k: Knobs = Knobs()) -> tuple[int, int]:
    """The A and B wgmma descriptors' bits other than the start address, as the kernel prints them (the
    knobs' leading / stride offsets and swizzle spans over the plan's)."""
    return (descriptor_high(h.a, k.a_lbo, k.a_sbo, k.a_desc_swizzle),
            descriptor_high(h.b, k.b_lbo, k.b_sbo, k.b_desc_swizzle))


def transpose_b(h: HopperGemm, k: Knobs = Knobs()) -> int | None:
    """The printed ``imm-trans-b`` of the wgmma (1: B is MN-major), ``None`` for fp8, whose form has none."""
    return (None if h.a.bits == 8 else 0 if h.tb else 1) if k.trans_b is None else k.trans_b


def operand_type(h: HopperGemm, k: Knobs = Knobs()) -> str:
    """The printed wgmma operand type (``f16``, ``bf16``, ``e4m3``, ``e5m2``)."""
    return h.plan.ptx_types[0] if k.ab_type is None else k.ab_type


def map_spans(h: HopperGemm, k: Knobs = Knobs()) -> tuple[int, int]:
    """The swizzle spans (bytes, 0: none) the A and B tensor maps are encoded with."""
    return _pick(k.a_map_swizzle, h.a.span), _pick(k.b_map_swizzle, h.b.span)


def _smem(buf: str, index: str) -> str:
    return f"(unsigned)__cvta_generic_to_shared(&{buf}[{index}])"


def _wait(bar: str, parity: str) -> str:
    return (f"{{ unsigned lk_done = 0;\n  while (!lk_done) {{\n"
            f'    asm volatile("{{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n'
            f'selp.u32 %0, 1, 0, p;\\n}}\\n" : "=r"(lk_done) : "r"({bar}), "r"({parity}) : "memory");\n  }} }}')


def _tma_loads(h: HopperGemm, tile: OperandTile, tmap: str, inner0: str, outer0: str) -> list[str]:
    """One TMA box per chunk of the contiguous dim of ``tile`` into stage ``s``."""
    per_stage = tile.stage_bytes * 8 // tile.bits
    chunk_elems = tile.chunk_bytes * 8 // tile.bits
    out = []
    for c in range(tile.cols // tile.chunk):
        dst = _smem(tile.buffer, f"s * {per_stage} + {c * chunk_elems}")
        out.append(f'asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes '
                   f'[%0], [%1, {{%2, %3}}], [%4];\\n" :: "r"({dst}), "l"((unsigned long long)&{tmap}), '
                   f'"r"({inner0} + {c * tile.chunk}), "r"({outer0}), "r"(full) : "memory");')
    return out


def _producer(h: HopperGemm, k: Knobs) -> list[str]:
    S = h.stages
    k_of = "ko * " + str(h.bK)
    b_inner, b_outer = (k_of, f"bx * {h.bN}") if h.tb else (f"bx * {h.bN}", k_of)
    loads = (_tma_loads(h, h.a, "A_map", k_of, f"by * {h.bM}")
             + _tma_loads(h, h.b, "B_map", b_inner, b_outer))
    tx = h.tx_bytes if k.tx_bytes is None else k.tx_bytes
    body = [f"const int s = ko % {S};", f"const unsigned ph = (unsigned)(ko / {S}) & 1u;",
            f"const unsigned full = {_smem('lk_bar', 's')};", _wait(_smem("lk_bar", f"{S} + s"), "ph ^ 1u"),
            f'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n" :: "r"(full), "r"({tx}) '
            ': "memory");', *loads]
    return [f'asm volatile("setmaxnreg.dec.sync.aligned.u32 {PRODUCER_REGS};\\n" ::);',
            "if (threadIdx.x == 0) {", f"  for (int ko = 0; ko < {h.kt}; ++ko) {{",
            *("    " + line for b in body for line in b.splitlines()), "  }", "}"]


def _group_step(h: HopperGemm) -> tuple[int, int] | None:
    """``(A, B)`` byte steps from one consumer warp group's tiles to the next when the groups differ by them
    alone (same registers, offsets linear in the group): then one code path serves every group (a branch
    per group makes ptxas serialise the wgmma)."""
    t0 = h.tiles[0]
    if h.consumers == 1:
        return 0, 0
    steps = set()
    for g, ts in enumerate(h.tiles[1:], 1):
        if [(t.reg, t.n) for t in ts] != [(t.reg, t.n) for t in t0]:
            return None
        for t, u in zip(ts, t0):
            (a1, b1), (a0, b0) = operand_offsets(h, t, 0), operand_offsets(h, u, 0)
            if (a1 - a0) % g or (b1 - b0) % g:
                return None
            steps.add(((a1 - a0) // g, (b1 - b0) // g))
    return steps.pop() if len(steps) == 1 else None


def _wgmma(h: HopperGemm, t, kk: int, k: Knobs, step: tuple[int, int] | None) -> str:
    """One ``wgmma.mma_async m64nNk16`` (``k32`` for fp8) of tile ``t`` at k step ``kk`` of stage ``s``
    (``step``: the per-group offsets of :func:`_group_step`, in the stage's descriptors ``da`` / ``db``): the
    descriptors advance by the operand's offset in 16-byte units (the start address field cannot carry: shared
    addresses stay below 2^18).  The fp8 form has no transpose operands (the PTX ISA's K-major-only types)."""
    a_off, b_off = operand_offsets(h, t, kk)
    n = t.n
    regs = ", ".join(f"%{i}" for i in range(n // 2))
    outs = ", ".join(f'"+f"(C_local[{t.reg + i}])' for i in range(n // 2))
    ty = operand_type(h, k)
    trans_b = transpose_b(h, k)
    trans = "" if trans_b is None else f", 0, {trans_b}"
    da, db = f"da + {a_off >> 4}ull", f"db + {b_off >> 4}ull"
    return (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{n // 2 + 2}, 0;\\n'
            f"wgmma.mma_async.sync.aligned.m64n{n}k{h.k_step}.f32.{ty}.{ty} {{{regs}}}, %{n // 2}, %{n // 2 + 1}, p, "
            f'1, 1{trans};\\n}}\\n"\n  : {outs}\n  : "l"({da}), "l"({db}), "r"(1) : "memory");')


def _stage_descriptors(h: HopperGemm, k: Knobs, step: tuple[int, int] | None) -> list[str]:
    """``da`` / ``db``: the wgmma descriptors of stage ``s``'s A and B tiles (of this warp group's part)."""
    out = []
    hi_a, hi_b = descriptor_highs(h, k)
    for name, tile, base, hi, g in (("da", h.a, "a_base", hi_a, step and step[0]),
                                    ("db", h.b, "b_base", hi_b, step and step[1])):
        off = f"{base} + s * {tile.stage_bytes}" + (f" + wg * {g}" if g else "")
        start = f"(unsigned long long)((({off}) & 0x3FFFF) >> 4)"
        out.append(f"const unsigned long long {name} = 0x{hi:016x}ull | {start};")
    return out


def _arrive(index: str) -> str:
    return f'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n" :: "r"({_smem("lk_bar", index)}) : "memory");'


def _consumer(h: HopperGemm, k: Knobs) -> list[str]:
    S = h.stages
    parity = "ph ^ 1u" if k.full_parity_flip else "ph"
    body = [f"const int s = ko % {S};", f"const unsigned ph = (unsigned)(ko / {S}) & 1u;",
            _wait(_smem("lk_bar", "s"), parity), 'asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");']
    step = _group_step(h)
    body += _stage_descriptors(h, k, step)
    groups = [(None, h.tiles[0])] if step else list(enumerate(h.tiles))
    for g, tiles in groups:
        if g is not None:
            body.append(("if" if g == 0 else "} else if") + f" (wg == {g}) {{")
        for kk in range(h.bK // h.k_step):
            for t in tiles:
                body += [("  " if g is not None else "") + line for line in _wgmma(h, t, kk, k, step).splitlines()]
    body += ["}"] if not step else []
    # one wgmma group stays in flight: once the previous tile's group completes, its stage goes back
    commit = ['asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");',
              'asm volatile("wgmma.wait_group.sync.aligned 1;\\n" ::: "memory");']
    if k.early_release:  # a bug: the stage goes back while its wgmma may still read it
        body += [_arrive(f"{S} + s"), *commit]
    else:
        body += [*commit, "if (ko > 0) {", "  " + _arrive(f"{S} + (ko + {S - 1}) % {S}"), "}"]
    return [f'asm volatile("setmaxnreg.inc.sync.aligned.u32 {CONSUMER_REGS[h.consumers]};\\n" ::);',
            f"const int tid = threadIdx.x - {WG};  // the consumer thread: the accumulator fragment's thread",
            f"const int wg = tid / {WG};",
            f"const unsigned a_base = {_smem('A_s', '0')};", f"const unsigned b_base = {_smem('B_s', '0')};",
            f"for (int ko = 0; ko < {h.kt}; ++ko) {{", *("  " + line for b in body for line in b.splitlines()), "}",
            'asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");']


def print_kernel(h: HopperGemm, knobs: Knobs = Knobs()) -> str:
    """The ``__global__`` function of ``h`` and its host-side tensor-map encoder."""
    from . import ir

    off = shared_layout(h)
    S = h.stages
    k = ir.Kernel(h.name, h.threads, h.grid, h.buffers, (ir.Fill(h.C, h.fill),))
    fill = cuda.Printer(k)
    fill.depth = 0
    fill.block(k.body)
    globals_ = [b for b in h.buffers if b.scope == "global"]
    params = ", ".join(["const __grid_constant__ CUtensorMap A_map", "const __grid_constant__ CUtensorMap B_map",
                        *hopper_epilogue_cuda.map_params(h)]
                       + [f"{'const ' if b.name in (h.A, h.B) else ''}{_ctype(b.dtype)}* __restrict__ {b.name}"
                          for b in globals_])
    regs = [f"__align__(16) {cuda.ctype(b.dtype)} {b.name}[{b.size}];" for b in h.buffers if b.scope == "reg"]
    et = _ctype(h.dtype)
    lines = [
        "const int bx = blockIdx.x;", "const int by = blockIdx.y;",
        "extern __shared__ __align__(1024) unsigned char lk_smem[];",
        f"{et}* A_s = reinterpret_cast<{et}*>(lk_smem + {off['A_s']});",
        f"{et}* B_s = reinterpret_cast<{et}*>(lk_smem + {off['B_s']});",
        *hopper_epilogue_cuda.declarations(h, off),
        f"unsigned long long* lk_bar = reinterpret_cast<unsigned long long*>(lk_smem + {off['lk_bar']});",
        "if (threadIdx.x == 0) {", "#pragma unroll", f"  for (int s = 0; s < {S}; ++s) {{",
        f'    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" :: "r"({_smem("lk_bar", "s")}), "r"(1));',
        f'    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" :: "r"({_smem("lk_bar", f"{S} + s")}), '
        f'"r"({WG * h.consumers}));', "  }",
        '  asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");', "}", "__syncthreads();",
        f"if (threadIdx.x < {WG}) {{  // the producer warp group",
        *("  " + x for x in _producer(h, knobs)),
        "} else {  // the consumer warp groups",
        *("  " + x for x in regs), *("  " + x for x in fill.lines), *("  " + x for x in _consumer(h, knobs)),
        *("  " + x for x in hopper_epilogue_cuda.print_epilogue(h, knobs.store)), "}"]
    gx, gy = h.grid
    head = (f"// sm_90a, warp specialised: threads 0-{WG - 1} load with TMA, {WG}-{h.threads - 1} run wgmma; encode "
            f"the tensor maps with {h.name}_tensor_maps\n"
            f"// launch {h.name}: grid ({gx}, {gy}), block {h.threads}, dynamic shared memory {off['total']} bytes\n"
            f'extern "C" __global__ void __launch_bounds__({h.threads}, 1) {h.name}({params}) {{')
    return "\n".join([head, *("  " + x for x in lines), "}", _encoder(h, knobs)]) + "\n"


def _encode_one(h: HopperGemm, tile: OperandTile, tmap: str, gname: str, inner: int, outer: int,
                span: int) -> list[str]:
    p = tmap.split("_")[0].lower()
    mode = f"{span}B" if span else "NONE"
    return [f"  const cuuint64_t {p}_dims[2] = {{{inner}ull, {outer}ull}};",
            f"  const cuuint64_t {p}_strides[1] = {{{inner * tile.bits // 8}ull}};",
            f"  const cuuint32_t {p}_box[2] = {{{tile.chunk}u, {tile.rows}u}};",
            f"  const cuuint32_t {p}_elem[2] = {{1u, 1u}};",
            f"  r = cuTensorMapEncodeTiled({tmap}, {_TMA_DTYPE[h.dtype]}, 2, (void*){gname}, {p}_dims, {p}_strides, "
            f"{p}_box, {p}_elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_{mode}, "
            "CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);",
            "  if (r != CUDA_SUCCESS) return r;"]


def _pick(knob: int | None, derived: int) -> int:
    return derived if knob is None else knob


def _encoder(h: HopperGemm, k: Knobs) -> str:
    et = _ctype(h.dtype)
    b_inner, b_outer = (h.K, h.N) if h.tb else (h.N, h.K)
    a_span, b_span = map_spans(h, k)
    extra, store_lines = hopper_epilogue_cuda.encode_maps(h, k.store)
    params = ", ".join(["CUtensorMap* A_map", "CUtensorMap* B_map", *extra[:len(extra) // 2], f"const {et}* {h.A}",
                        f"const {et}* {h.B}", *extra[len(extra) // 2:]])
    lines = [f"// tensor maps of {h.name}: A [{h.M}, {h.K}] and B {'[N, K]' if h.tb else '[K, N]'} in tiles of the "
             "shared layouts, zeros out of bounds",
             f'extern "C" CUresult {h.name}_tensor_maps({params}) {{', "  CUresult r;",
             *_encode_one(h, h.a, "A_map", h.A, h.K, h.M, a_span),
             *_encode_one(h, h.b, "B_map", h.B, b_inner, b_outer, b_span), *store_lines,
             "  return CUDA_SUCCESS;", "}"]
    return "\n".join(lines)


def print_module(h: HopperGemm, knobs: Knobs = Knobs()) -> str:
    """A translation unit: the prelude, ``<cuda.h>`` (``CUtensorMap``, the encoder) and the kernel."""
    return cuda.PRELUDE + hopper_epilogue_cuda.PRELUDE + "#include <cuda.h>\n\n" + print_kernel(h, knobs)
