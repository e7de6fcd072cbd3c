"""Lowering of a solved NVIDIA GEMM program (:func:`layoutkit.infer.programs.gemm`, with any epilogue of
fragment ops such as :func:`~layoutkit.infer.programs.gemm_rowmax_bias`) to the :mod:`.ir`.

Operands: fp16 / bf16 (``m16n8k16``), int8 / uint8 (``m16n8k32``) and fp32 as tf32 (``m16n8k8``).  Operand
tiles move shared -> registers with ``ldmatrix`` (``.trans`` for a 16-bit ``B`` stored ``[K, N]``).

An 8- or 32-bit ``B`` stored ``[K, N]`` (which ``ldmatrix.trans`` cannot transpose) is read in 32- / 128-bit
words of relabelled columns (int8 words transposed with ``prmt``, :mod:`.operand_kn`) when the epilogue is the
accumulator's store through shared memory, else one element per lane.  The epilogue's last store of an
accumulator-shaped fragment goes through a padded shared tile and leaves in 16-byte row runs
(:mod:`.epilogue_smem`; ``staged_epilogue=False`` keeps the direct stores).

The shared addresses are the inferred (swizzled) layouts of ``A_shared`` / ``B_shared`` with the stage dim
leading; register offsets and the thread -> element map of the accumulator come from the inferred
``C_local`` fragment, checked against the ``mma.sync`` atoms before use.  With ``stages > 1`` the k loop is a
multistage ``cp.async`` pipeline: a prologue issues tiles ``0 .. stages-2``; iteration ``ko`` waits for tile
``ko`` (``wait_group stages-2``), synchronises, issues tile ``ko + stages - 1`` into the stage computed in the
previous iteration, then runs ``ldmatrix`` + ``mma.sync`` on stage ``ko % stages``; the loop is unrolled by
the stage count (fixed stages per copy of the body: shared offsets are immediates, global addresses advance by a
constant stride) and the last ``stages - 1`` tiles are peeled and drain with decreasing ``wait_group``
counts.  One block computes the ``bM x bN`` tile ``(blockIdx.y, blockIdx.x)``; tails are guarded (zero-filled
loads, skipped stores), and a guard the launch bounds and loop extents prove is dropped (:mod:`.guards`).

sm_75 has no ``cp.async`` and no k16 fp16 mma: its copies are synchronous and each k16 step runs as two
``m16n8k8`` on the halves of the same registers.  Each warp's accumulator atoms may be spread over the tile
(:class:`WarpGrid`): the sm_90 accumulator, shaped for ``wgmma`` (warps stacked along M, 64 rows apart),
runs on ``mma.sync`` atoms as well.

>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32)
>>> k = lower(p, infer_layouts(p))
>>> k.grid, k.threads, [b.name for b in k.scoped("global")]
((2, 2), 128, ['A', 'B', 'C'])
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ...algebra.layout import Layout
from ...algebra.nodes import Const, Expr, Var, substitute
from ...errors import UnsupportedError
from ...fragment.fragment import Fragment
from ...scopes import GLOBAL, SHARED
from ...targets.nv.gemm_plan import MMA, WORDS, GemmPlan, PlannedGemm, gemm_plan, instruction_shape, ptx_type
from ...targets.nv.hardware import WARP_SIZE, arch_number
from ...targets.nv.mma import MmaAtom
from ..dispatch import OpTable
from . import epilogue_smem, ir, operand_kn
from .guards import prove_guards
from .ir import REG
from .lower_frag import LOWERINGS, Tile, fragment_axes, lower_ops
from .warp_grid import WarpGrid, warp_grid


def _sub(layout, values) -> Expr:
    """The linearized address of ``layout`` at the coordinate expressions ``values`` (``(stage, row, col)``;
    the stage is dropped for a layout without a stage dim)."""
    if len(values) == len(layout.input_shape) + 1:
        values = values[1:]
    lin = layout.linearized()
    mapping = {v: (x if isinstance(x, Expr) else Const(int(x))) for v, x in zip(lin.forward_vars, values)}
    return substitute(lin.forward_index[0], mapping)


def _vector_ok(layout, vec: int) -> bool:
    """Whether runs of ``vec`` elements along the last dim are contiguous and aligned in ``layout``."""
    t = np.asarray(layout.linearized().table())[..., 0]
    t = t.reshape((1,) * (3 - t.ndim) + t.shape)
    if t.shape[-1] % vec:
        return False
    runs = t.reshape(t.shape[:-1] + (t.shape[-1] // vec, vec))
    return bool(np.all(runs == runs[..., :1] + np.arange(vec)) and np.all(runs[..., 0] % vec == 0))


def gemm_ops(program) -> dict:
    """The GEMM main loop of ``program``, walked op by op up to its one ``gemm``: each op before it plays its
    kind's role in the loop (:data:`MAIN_LOOP`: the ``fill`` of C is the accumulator's initial value, a global ->
    shared ``copy`` into A or B is that operand's tile load, in any order); the ops after the gemm are its
    epilogue.  An op with no role, or a role played twice or not at all, raises
    :class:`~layoutkit.errors.UnsupportedError` naming the op.

    >>> from layoutkit.infer import programs
    >>> ops = gemm_ops(programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32))
    >>> ops["A"], ops["B"], ops["fill"], ops["gemm"].name
    ('A', 'B', 0.0, 'gemm#3')
    """
    at = next(k for k, op in enumerate(program.ops) if op.kind == "gemm")
    gemm = program.ops[at]
    roles: dict = {"gemm": gemm, "epilogue": program.ops[at + 1:]}
    for op in program.ops[:at]:
        (MAIN_LOOP.lookup(op.kind) or _no_role)(op, gemm, roles)
    g = gemm.args
    missing = [what for what, key in ((f"fill of {g['C']}", "fill"), (f"copy into {g['A']}", "A"),
                                      (f"copy into {g['B']}", "B")) if key not in roles]
    if missing:
        raise UnsupportedError(f"gemm lowering: the main loop of {gemm.name} has no {' and no '.join(missing)}")
    return roles


def _no_role(op, gemm, roles: dict) -> None:
    raise UnsupportedError(f"gemm lowering: {op.name} ({op.kind}) before {gemm.name} has no role in its main loop "
                           f"(roles: {MAIN_LOOP.kinds()})")


MAIN_LOOP = OpTable("NVIDIA GEMM main loop")
"""Op kind -> ``fn(op, gemm, roles)``: the role an op before the GEMM plays in its main loop, recorded in
``roles`` (:func:`gemm_ops`)."""


@MAIN_LOOP.register("fill")
def _accumulator_init(op, gemm, roles: dict) -> None:
    C = gemm.args["C"]
    if op.args["dst"] != C or "fill" in roles:
        raise UnsupportedError(f"gemm lowering: {op.name} fills {op.args['dst']} before {gemm.name}; its main loop "
                               f"takes one fill, of the accumulator {C}")
    roles["fill"] = float(op.args["value"])


@MAIN_LOOP.register("copy")
def _operand_load(op, gemm, roles: dict) -> None:
    side = next((k for k in ("A", "B") if gemm.args[k] == op.args["dst"]), None)
    if side is None or side in roles:
        raise UnsupportedError(f"gemm lowering: {op.name} copies into {op.args['dst']} before {gemm.name}; its main "
                               f"loop takes one copy into each of {gemm.args['A']} and {gemm.args['B']}")
    if any(op.args["src_region"][0]):
        raise UnsupportedError(f"gemm lowering: {op.name} starts at {op.args['src_region'][0]}; tiles start at "
                               "the block origin")
    roles[side] = op.args["src"]


def _tile_copy(dst, layout, src, src_rows, src_cols, row0, col0, stage, threads, bits, name, live=None,
               can_async=True):
    """Stmts copying the tile ``layout`` (shape ``(stages, R, Cc)``) of ``dst`` from global ``src``."""
    R, Cc = layout.input_shape[-2:]
    vec = 128 // bits
    while vec > 1 and (Cc % vec or src_cols % vec or not _vector_ok(layout, vec)):
        vec //= 2
    per_row = Cc // vec
    total = R * per_row
    iters = -(-total // threads)
    it = Var(f"{name}_it", iters)
    lin = it * threads + ir.TID
    r, c = lin // per_row, lin % per_row * vec
    guard = ((row0 + r, src_rows), (col0 + c, src_cols))
    if live is not None:
        guard = (live,) + guard
    mask = ((lin, total),) if total % threads else ()  # threads past the tile copy nothing
    async_ = can_async and vec * bits // 8 in (4, 8, 16)
    stmt = ir.Copy(dst, _sub(layout, (stage, r, c)), src, (row0 + r) * src_cols + col0 + c, vec, guard, async_,
                   mask)
    return ir.For(it, iters, (stmt,), unroll=True)


def lower(program, result, *, staged_epilogue: bool | None = None) -> ir.Kernel:
    """The IR kernel of a solved program, walked op by op: a GEMM's main loop (a fill of C and the copies of A
    and B in any order, then the gemm), then every later op through its entry in :data:`.lower_frag.LOWERINGS`
    (global <-> fragment copies, parallel loops, reductions, fills, and the ops other code registers); a
    program without a GEMM is all such ops.  An op without a lowering raises
    :class:`~layoutkit.errors.UnsupportedError` naming the op.  ``result`` is trusted here: the public
    :func:`layoutkit.codegen.lower` checks it against the program first.  ``staged_epilogue``: the GEMM's
    final store through shared memory (:mod:`.epilogue_smem`); ``None`` takes it where it applies.

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.elementwise(M=64, N=64, bM=32, bN=32)
    >>> lower(p, infer_layouts(p)).name
    'elementwise_64x64_32x32_t128'
    """
    gemms = [k for k, op in enumerate(program.ops) if op.kind == "gemm"]
    if len(gemms) > 1:
        raise UnsupportedError(f"NVIDIA lowering: {program.ops[gemms[1]].name} is a second gemm; one gemm (its main "
                               "loop, then the ops of its epilogue) is lowered per kernel")
    after = program.ops[gemms[0] + 1:] if gemms else program.ops
    for op in after:  # every op the walk meets needs its lowering before anything is lowered
        if op.kind not in LOWERINGS:
            where = "after the gemm" if gemms else "in a fragment program"
            raise UnsupportedError(f"NVIDIA lowering: op {op.name} ({op.kind}) {where} has no lowering; lowered: "
                                   f"{LOWERINGS.kinds()}")
    if gemms:  # the ops before it are its main loop (:func:`gemm_ops` walks them, naming any it refuses)
        return lower_gemm(program, result, staged_epilogue=staged_epilogue)
    return lower_fragment_program(program, result)


def check_target(program) -> None:
    """Raise :class:`~layoutkit.errors.UnsupportedError` when ``program``'s GEMM (if any) has operands or an
    arch this lowering has no ``mma.sync`` for (:func:`~layoutkit.targets.nv.gemm_plan.instruction_shape`:
    sm_80+, sm_75 with float16 only), operands other than :data:`MMA_SYNC_OPERANDS` (A and B alike) or an
    accumulator other than float32 / int32.  Checked before the layouts, which inference may leave out for such
    a target.

    >>> from layoutkit.infer import programs
    >>> try:
    ...     check_target(programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32, target="sm_70"))
    ... except UnsupportedError as e:
    ...     print(str(e)[:48])
    gemm lowering: gemm#3 on sm_70 with float16 x fl
    """
    for op in program.ops:
        if op.kind != "gemm":
            continue
        for key in ("A_region", "B_region"):
            if op.args.get(key) is not None:
                raise UnsupportedError(f"gemm lowering: {op.name} reads the sub-region {op.args[key]} of "
                                       f"{op.args[key[0]]}; lowered GEMMs take whole operands")
        sm = arch_number(program.target)
        a, b, c = (program.buffers[op.args[k]].dtype for k in ("A", "B", "C"))
        try:
            instruction_shape(MMA, a, b, c, sm)
            why = ""
            if b != a or ptx_type(a) not in MMA_SYNC_OPERANDS or ptx_type(c, "accumulator") not in ("f32", "s32"):
                why = (f"the mma.sync kernel lowers operands {MMA_SYNC_OPERANDS} (A and B alike) into float32 / "
                       "int32 accumulators")
        except UnsupportedError as e:
            why = str(e)
        if why:
            raise UnsupportedError(f"gemm lowering: {op.name} on sm_{sm} with {a} x {b} -> {c}: {why}")


@dataclass(frozen=True, eq=False)
class GemmLaunch(PlannedGemm):
    """What the GEMM lowering reads off a solved program: the global operands ``A`` / ``B`` and the
    accumulator ``C`` (names), the problem shape, the stage count, the instruction plan of the block tile
    (:class:`~layoutkit.targets.nv.gemm_plan.GemmPlan`: instruction, warps, operand loads, element types) and
    the inferred layouts (``As`` / ``Bs`` with the stage dim leading, the accumulator fragment ``Cl``, its
    register table ``cidx`` and warp grid ``wg``)."""

    A: str
    B: str
    C: str
    M: int
    N: int
    K: int
    stages: int
    plan: GemmPlan
    As: Layout
    Bs: Layout
    Cl: Fragment
    cidx: np.ndarray
    wg: WarpGrid
    b_group: int = 0
    """Atoms per column group of a relabelled ``[K, N]`` 8- / 32-bit ``B`` (:mod:`.operand_kn`); 0: none."""
    b_skew: bool = False
    """Whether those loads are skewed against bank conflicts (:func:`.operand_kn.choose_skew`)."""

    @property
    def acc(self) -> str:
        return self.plan.c_dtype

    @property
    def threads(self) -> int:
        return self.plan.threads

    @property
    def sm(self) -> int:
        return self.plan.arch

    @property
    def atom(self) -> MmaAtom:
        return self.plan.atom

    @property
    def bits(self) -> int:
        return self.plan.bits

    @property
    def turing(self) -> bool:
        """sm_75: m16n8k8 fp16, no cp.async."""
        return self.plan.k_split > 1

    @property
    def kt(self) -> int:
        return -(-self.K // self.bK)

    @property
    def ko(self) -> Var:
        return Var("ko", self.kt)

    @property
    def origin(self) -> tuple[Expr, Expr]:
        """The block's tile origin ``(row, col)``: block ``(blockIdx.y, blockIdx.x)``."""
        return ir.BY * self.bM, ir.BX * self.bN

    @property
    def a_size(self) -> int:
        """Elements per lane of one m16 x k A operand."""
        return self.plan.local_a

    @property
    def b_per(self) -> int:
        """Elements per lane of one k x n8 B operand."""
        return self.plan.local_b * 8 // self.plan.n_dim


def gemm_launch(program, result, ops: dict) -> GemmLaunch:
    """The :class:`GemmLaunch` of a solved program whose main loop is ``ops`` (:func:`gemm_ops`), checked:
    no ``transpose_A``, an arch with ``mma.sync`` for the operands, an accumulator made of mma atoms whose
    warps cover the tile in whole instruction tiles, ``bK`` a multiple of the instruction's k."""
    g = ops["gemm"].args
    if g["transpose_A"]:
        raise UnsupportedError("gemm lowering: transpose_A is not lowered")
    tb = bool(g["transpose_B"])
    check_target(program)
    bufs = program.buffers
    A, B = bufs[ops["A"]], bufs[ops["B"]]
    As, Bs, Cl = (result.layout_map[g[k]] for k in ("A", "B", "C"))
    M, K = A.shape
    N = B.shape[0] if tb else B.shape[1]
    stages = As.input_shape[0] if len(As.input_shape) == 3 else 1
    bM, bK = As.input_shape[-2:]
    bN = Bs.input_shape[-2] if tb else Bs.input_shape[-1]
    wg, cidx = warp_grid(Cl, program.threads)
    warps = (wg.brw, program.threads // WARP_SIZE // wg.brw)
    try:
        plan = gemm_plan(bufs[g["A"]].dtype, bufs[g["B"]].dtype, bufs[g["C"]].dtype, bM, bN, bK, program.threads,
                         warps, trans_b=tb, arch=program.target)
    except UnsupportedError as e:
        raise UnsupportedError(f"gemm lowering: {e}") from None
    return GemmLaunch(A.name, B.name, g["C"], M, N, K, stages, plan, As, Bs, Cl, cidx, wg)


def lower_gemm(program, result, staged_epilogue: bool | None = None) -> ir.Kernel:
    """The IR kernel of a solved GEMM program and its epilogue (see the module doc for what is lowered):
    the accumulator fill, the k loop (:func:`gemm_main_loop`) and the epilogue (:func:`gemm_epilogue`).

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32)
    >>> lower_gemm(p, infer_layouts(p)).name
    'gemm_float16_64x64x64_32x32x32_s2_t128_sm80'
    """
    ops = gemm_ops(program)
    L = gemm_launch(program, result, ops)
    vec = epilogue_smem.staged_vec(program, result, L, ops["epilogue"]) if staged_epilogue is not False else 0
    if vec and len(ops["epilogue"]) == 1 and ops["epilogue"][0].args["src"] == L.C and L.bits != 16 and not L.tb:
        group = operand_kn.interleave_group(L.bits, L.wg.nt, L.wg.nj_stride, lambda g: _vector_ok(L.Bs, g))
        L = dataclasses.replace(L, b_group=group, plan=dataclasses.replace(L.plan, b_load=WORDS) if group else L.plan)
        if group:
            L = dataclasses.replace(L, b_skew=operand_kn.choose_skew(L, _sub))
    main = gemm_main_loop(L)
    epilogue, buffers = gemm_epilogue(program, result, L, ops["epilogue"], vec)
    body = (ir.Fill(L.C, ops["fill"]),) + main + tuple(epilogue)
    tag = f"{'_tb' if L.tb else ''}{epilogue_tag(ops['epilogue'])}_t{L.threads}_sm{L.sm}"  # unique per launch shape
    name = f"gemm_{L.dtype}_{L.M}x{L.N}x{L.K}_{L.bM}x{L.bN}x{L.bK}_s{L.stages}{tag}"
    return prove_guards(ir.Kernel(name, L.threads, (-(-L.N // L.bN), -(-L.M // L.bM)), buffers, body))


def tile_loads(L: GemmLaunch, t: Expr) -> tuple:
    """Copies of k tile ``t`` into stage ``t % stages`` (zeros past the last tile)."""
    st = t % L.stages
    m0, n0 = L.origin
    args = (st, L.threads, L.bits)
    a = _tile_copy("A_s", L.As, L.A, L.M, L.K, m0, t * L.bK, *args, "a", (t, L.kt), not L.turing)
    if L.tb:
        b = _tile_copy("B_s", L.Bs, L.B, L.N, L.K, n0, t * L.bK, *args, "b", (t, L.kt), not L.turing)
    else:
        b = _tile_copy("B_s", L.Bs, L.B, L.K, L.N, t * L.bK, n0, *args, "b", (t, L.kt), not L.turing)
    return a, b


def gemm_main_loop(L: GemmLaunch) -> tuple:
    """The k loop: each k tile copied global -> shared (:func:`tile_loads`), then per atom-k step the operand
    loads (:func:`operand_loads`) and the ``mma.sync`` s (:func:`mma_loop`).  With ``stages > 1`` a multistage
    ``cp.async`` pipeline (:func:`pipeline`); sm_75 copies synchronously."""
    ko = L.ko
    if L.turing:  # synchronous copies, the stages used round robin
        return (ir.For(ko, L.kt, tile_loads(L, ko) + (ir.Barrier(), tile_compute(L, ko), ir.Barrier())),)
    if L.stages > 1:
        return pipeline(L)
    main = ir.For(ko, L.kt, tile_loads(L, ko) + (ir.CommitGroup(), ir.WaitGroup(0), ir.Barrier(), tile_compute(L, ko),
                                                 ir.Barrier()))
    return main, ir.WaitGroup(0)


def tile_compute(L: GemmLaunch, t: Expr) -> ir.For:
    """The ``ldmatrix`` s and ``mma.sync`` s of k tile ``t`` (read from stage ``t % stages``)."""
    kk_n = L.bK // L.atom.k
    kk, mi, nj = Var("kk", kk_n), Var("mi", L.wg.mt), Var("nj", L.wg.nt)
    a_load, b_load = operand_loads(L, kk, mi, t % L.stages)
    b_loads = b_load if isinstance(b_load, tuple) else (b_load,)
    return ir.For(kk, kk_n, (a_load, *b_loads, mma_loop(L, mi, nj)), unroll=True)


def pipeline(L: GemmLaunch) -> tuple:
    """The multistage ``cp.async`` pipeline, its tail peeled: the prologue issues tiles ``0 .. stages-2``; the
    steady steps (``kt - stages + 1``) each wait for tile ``t`` (``wait_group stages-2``), synchronise, issue
    tile ``t + stages - 1`` into the stage computed in the previous step and compute tile ``t``;
    the last ``stages - 1`` tiles then drain with no copy issued, each waiting with one fewer group in
    flight.  No copy is issued past the last tile, so the loop extents prove the tile-index guards.  The steady
    steps run ``steady % stages`` peeled, then in a loop (kept rolled) of ``stages`` steps per iteration."""
    S, kt = L.stages, L.kt
    issued = min(S - 1, kt)
    s0 = Var("s0", issued)
    out: list = [ir.For(s0, issued, tile_loads(L, s0) + (ir.CommitGroup(),))]
    steady = max(kt - (S - 1), 0)

    def step(t: Expr) -> tuple:
        return (ir.WaitGroup(S - 2), ir.Barrier()) + tile_loads(L, t + (S - 1)) + (ir.CommitGroup(), tile_compute(L, t))

    # unrolled by the stage count, so each copy of the body reads and writes fixed stages: their offsets fold
    # into the instructions' immediates and only the global addresses advance, by a constant stride.  The odd
    # steps go first: peeled after the loop, they made ptxas spill in the drain
    rounds, first = divmod(steady, S)
    for t in range(first):
        out += step(Const(t))
    if rounds:
        ko = Var("ko", rounds)
        out.append(ir.For(ko, rounds, sum((step(ko * S + first + u) for u in range(S)), ()), rolled=True))
    for t in range(steady, kt):
        out += [ir.WaitGroup(kt - 1 - t), ir.Barrier(), tile_compute(L, Const(t))]
    return tuple(out)


def _warp_origin(L: GemmLaunch) -> tuple[Expr, Expr]:
    """Row and column of this thread's warp's first accumulator atom."""
    warp = ir.TID // WARP_SIZE
    return (warp % L.wg.brw) * L.wg.row_step, (warp // L.wg.brw) * L.wg.col_step


def operand_loads(L: GemmLaunch, kk: Var, mi: Var, stage: Expr) -> tuple:
    """Shared -> register loads of atom-k step ``kk``: ``ldmatrix`` of every A atom row ``mi`` of the warp,
    then the B operands (``ldmatrix`` x4 over two n8 blocks, x2 over one; for an 8- or 32-bit ``B`` stored
    ``[K, N]``, which ``ldmatrix.trans`` cannot transpose, word loads (:mod:`.operand_kn`) or per-lane element
    loads), from shared stage ``stage``."""
    atom, nt, tb, b_per = L.atom, L.wg.nt, L.tb, L.b_per
    E = 128 // L.bits  # elements per 16-byte ldmatrix row
    lane = ir.TID % WARP_SIZE
    r0, c0 = _warp_origin(L)
    rs, cs = L.wg.mi_stride, L.wg.nj_stride  # atom strides
    mat, row = lane // 8, lane % 8
    a_addr = _sub(L.As, (stage, r0 + mi * rs + (mat % 2) * 8 + row, kk * atom.k + (mat // 2) * E))
    a_load = ir.For(mi, L.wg.mt, (ir.Ldmatrix("a_frag", mi * L.a_size, "A_s", a_addr, 4, False),), unroll=True)
    nb = Var("nb", nt // 2) if nt % 2 == 0 else Var("nb", nt)
    if L.b_group:  # relabelled columns: word loads (and byte permutes) instead of element loads
        return a_load, operand_kn.b_loads(L, kk, stage, _sub, c0)
    if L.bits != 16 and not tb:  # no 8/32-bit ldmatrix.trans: each lane reads its B fragment elements
        kb, nb_ = operand_kn.fragment_coords(atom, lane)
        li, nj2 = Var("bl", b_per), Var("nb", nt)
        rk, cn = kk * atom.k + substitute(kb, {Var("l", b_per): li}), c0 + nj2 * cs + nb_
        b_ld = ir.Load("b_frag", nj2 * b_per + li, "B_s", _sub(L.Bs, (stage, rk, cn)), 1)
        return a_load, ir.For(nj2, nt, (ir.For(li, b_per, (b_ld,), unroll=True),), unroll=True)
    if nt % 2 == 0:  # x4 covers two n8 blocks
        if tb:
            b_addr = _sub(L.Bs, (stage, c0 + (2 * nb + mat // 2) * cs + row, kk * atom.k + (mat % 2) * E))
        else:
            b_addr = _sub(L.Bs, (stage, kk * atom.k + (mat % 2) * 8 + row, c0 + (2 * nb + mat // 2) * cs))
        b_ld = ir.Ldmatrix("b_frag", nb * (2 * b_per), "B_s", b_addr, 4, not tb)
    else:  # x2: one n8 block, two k halves
        m2, r16 = (lane % 16) // 8, lane % 8
        if tb:
            b_addr = _sub(L.Bs, (stage, c0 + nb * cs + r16, kk * atom.k + m2 * E))
        else:
            b_addr = _sub(L.Bs, (stage, kk * atom.k + m2 * 8 + r16, c0 + nb * cs))
        b_ld = ir.Ldmatrix("b_frag", nb * b_per, "B_s", b_addr, 2, not tb)
    return a_load, ir.For(nb, nb.extent, (b_ld,), unroll=True)


def mma_loop(L: GemmLaunch, mi: Var, nj: Var) -> ir.For:
    """The ``mma.sync`` s of one atom-k step over the warp's ``mt x nt`` accumulator atoms (sm_75: two
    ``m16n8k8`` per k16 step)."""
    mt, nt, rs, cs = L.wg.mt, L.wg.nt, L.wg.mi_stride, L.wg.nj_stride
    c_base = L.cidx[:mt * rs:rs, :nt * cs:cs]  # warp 0's atoms
    # C register offset of atom (mi, nj), affine in mi and nj (checked)
    s_mi = int(c_base[1, 0] - c_base[0, 0]) if mt > 1 else 0
    s_nj = int(c_base[0, 1] - c_base[0, 0]) if nt > 1 else 0
    if not np.array_equal(c_base, c_base[0, 0] + s_mi * np.arange(mt)[:, None] + s_nj * np.arange(nt)[None, :]):
        raise UnsupportedError("gemm lowering: C_local register offsets are not affine in the atom indices")
    c_off = mi * s_mi + nj * s_nj + int(c_base[0, 0])
    a_size, b_per = L.a_size, L.b_per
    if L.turing:  # one k16 step = two m16n8k8: A registers 0-1 / 2-3 and B register 0 / 1 hold k 0-7 / 8-15
        mmas = tuple(ir.Mma(L.plan.issued, ("a_frag", mi * a_size + 4 * h), ("b_frag", nj * b_per + 2 * h),
                            ("C_local", c_off)) for h in (0, 1))
    else:
        mmas = (ir.Mma(L.plan.issued, ("a_frag", mi * a_size), ("b_frag", nj * b_per), ("C_local", c_off)),)
    return ir.For(mi, mt, (ir.For(nj, nt, mmas, unroll=True),), unroll=True)


def gemm_epilogue(program, result, L: GemmLaunch, ops, staged_vec: int = 0) -> tuple[list, tuple]:
    """The statements of the epilogue ``ops`` (fragment ops on the accumulator tile, :func:`~.lower_frag.lower_ops`;
    with ``staged_vec`` the last, a copy to global, through shared memory: :mod:`.epilogue_smem`) and the kernel's
    buffers: the global tensors, the shared tiles, the operand and accumulator registers, the other fragments and
    what the epilogue adds."""
    tile = Tile(L.origin, (L.bM, L.bN), (L.M, L.N), fragment_axes(program))
    layouts = dict(result.layout_map)
    conversions = tuple(getattr(result, "conversions", ()))
    epilogue, extra = lower_ops(ops[:-1] if staged_vec else ops, program, layouts, tile, conversions)
    if staged_vec:
        a = ops[-1].args
        stmts, bufs = epilogue_smem.staged_store(L, a["src"], a["dst"], program.buffers[a["dst"]].dtype, staged_vec,
                                                 L.origin)
        epilogue, extra = epilogue + stmts, list(extra) + bufs
    bufs = program.buffers
    globals_ = [ir.Buffer(b.name, b.dtype, math.prod(b.shape), GLOBAL) for b in bufs.values() if b.scope == GLOBAL]
    frags = [ir.Buffer(n, b.dtype, layouts[n].local_size, REG) for n, b in bufs.items()
             if b.is_fragment and n != L.C]
    buffers = (*globals_, ir.Buffer("A_s", L.dtype, L.As.size, SHARED),
               ir.Buffer("B_s", L.dtype, L.Bs.size, SHARED),
               ir.Buffer("a_frag", L.dtype, L.wg.mt * L.a_size, REG),
               ir.Buffer("b_frag", L.dtype, L.wg.nt * L.b_per, REG),
               ir.Buffer(L.C, L.acc, L.Cl.local_size, REG), *operand_kn.scratch_buffers(L), *frags, *extra)
    return epilogue, buffers


MMA_SYNC_OPERANDS = ("f16", "bf16", "s8", "u8", "tf32")
"""The PTX operand types (:data:`~layoutkit.targets.nv.gemm_plan.PTX_TYPES`) the mma.sync kernel lowers: what
its printer and executor move (a float32 operand runs as tf32; fp8 ``mma.sync`` is not lowered)."""


def epilogue_tag(ops) -> str:
    """A kernel-name suffix naming the epilogue's computations (``_add_max`` for bias + row max)."""
    tags = [op.args.get("compute", "copy") if op.kind == "parallel" else op.args["kind"] + f"{op.args['dim']}"
            for op in ops if op.kind in ("parallel", "reduce")]
    return "".join(f"_{t}" for t in tags)


def lower_fragment_program(program, result) -> ir.Kernel:
    """Fragment ops only (:func:`~.lower_frag.lower_ops`): one tile per block over the 2-D global tensors,
    whose shapes must agree (one 2-D fragment tile shape too); other programs raise
    :class:`~layoutkit.errors.UnsupportedError` with the shapes found.

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.elementwise(M=100, N=72, bM=64, bN=64)
    >>> lower_fragment_program(p, infer_layouts(p)).grid
    (2, 2)
    """
    frags = [b for b in program.buffers.values() if b.is_fragment and len(b.shape) == 2]
    tiles = {tuple(b.shape) for b in frags}
    gshapes = {tuple(b.shape) for b in program.buffers.values() if b.scope == GLOBAL and len(b.shape) == 2}
    if len(tiles) != 1 or len(gshapes) != 1:
        raise UnsupportedError(f"lowering: fragment programs need one 2-D tile shape and one 2-D global shape; found "
                               f"tiles {sorted(tiles)}, global shapes {sorted(gshapes)}")
    (bM, bN), (M, N) = tiles.pop(), gshapes.pop()
    tile = Tile((ir.BY * bM, ir.BX * bN), (bM, bN), (M, N), fragment_axes(program))
    layouts = dict(result.layout_map)
    body, extra = lower_ops(program.ops, program, layouts, tile, tuple(getattr(result, "conversions", ())))
    bufs = [ir.Buffer(b.name, b.dtype, math.prod(b.shape), GLOBAL) for b in program.buffers.values()
            if b.scope == GLOBAL]
    bufs += [ir.Buffer(n, b.dtype, layouts[n].local_size, REG) for n, b in program.buffers.items()
             if b.is_fragment and n in layouts]
    grid = (-(-N // bN), -(-M // bM))
    fns = "".join(sorted({f"_{st.fn}" for st in body if isinstance(st, (ir.Move, ir.Compute)) and st.fn != "copy"}))
    fns += epilogue_tag([op for op in program.ops if op.kind == "reduce"])
    name = f"elementwise{fns}_{M}x{N}_{bM}x{bN}_t{program.threads}"
    return prove_guards(ir.Kernel(name, program.threads, grid, tuple(bufs + extra), tuple(body)))
