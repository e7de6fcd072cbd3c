"""Lowering of solved Ascend cube programs (GM -> L1 -> L0A/L0B -> MAD -> L0C -> GM) to :mod:`.ir`.

Input: a program with ``target="ascend"`` and its inferred layouts; unless it already went through
:func:`~layoutkit.backends.ascend.passes.run_ascend_passes` (its GEMMs carry ``mnk``), the passes run first.
Each op becomes intrinsics whose parameters come from the fractal layouts:

* GM -> L1 ``copy``: ``DataCopy`` with ``Nd2NzParams`` (``nValue`` x ``dValue`` = the clamped ``valid`` block,
  ``srcDValue`` = the GM row pitch, ``dstNzC0Stride`` = the padded rows of the L1 image,
  ``dstNzNStride`` = 1).  A clamped (tail) copy is preceded by an ``InitConstValue`` that zeroes the tile's
  whole fractals, which is what the ``fill`` ops of ``insert_oob_padding`` ask for (those fills are consumed
  here; a non-zero pad value is refused).
* L1 -> L0A/L0B ``copy``: ``LoadData`` calls (``LoadData2DParams``), one per run of fractals whose source
  indices step evenly, so the L0 buffer holds exactly its inferred fractal image.
* ``gemm``: ``Mmad`` with ``MmadParams(m, n, k, cmatrixInitVal = clear_accum)``.
* L0C -> GM ``copy``: ``Fixpipe`` (``CFG_ROW_MAJOR``: NZ2ND) with ``FixpipeParamsV220``: ``mSize`` x
  ``nSize`` = the valid block, ``srcStride`` = the padded rows of the L0C image, ``dstStride`` = the GM row pitch.
* Between statements on different pipes that touch one buffer, ``SetFlag`` / ``WaitFlag`` pairs (the
  ``HardEvent`` of the two pipes) are inserted where no earlier pair already ordered them.

A MajorMN (CATLASS nZ) L1 operand cannot come out of the ND2NZ DMA from a row-major GM tensor (the DMA keeps
GM-contiguous runs as the C0 rows), so the L1 buffer is staged as the MajorK (zN) image of the same tile and
the ``LoadData`` transposes each 16 x 16 fractal (``ifTranspose``): the L0 buffer still holds the inferred
MajorMN image.  That needs 16-element fractal rows (16-bit types).

* The vector epilogue ``dual_copy`` L0C -> UB, a vector region, ``dual_copy`` UB -> GM:

  - when the region only applies ``relu`` / ``copy`` to the whole UB tile: one ``Fixpipe`` straight to GM
    with ``reluEn`` (the fixpipe applies the ReLU on the way out), clamped like the UB -> GM copy;
  - otherwise a mixed kernel (``KERNEL_TYPE_MIX_AIC_1_2``): the cube ``Fixpipe`` s the whole L0C tile into a
    GM ``workspace`` (on Atlas A2/A3 the cube cannot write UB) and signals ``CrossCoreSetFlag<2, PIPE_FIX>(0)``;
    each vector core waits for it, ``DataCopyPad`` s its half of the rows (``sub`` = ``GetSubBlockIdx()``) into
    UB, hands the workspace back (``CrossCoreSetFlag<2, PIPE_MTE2>(1)``, which the cube waits for before its
    next tile's ``Fixpipe``), runs the region's ops as vector intrinsics and ``DataCopyPad`` s its valid rows
    and columns to GM (``DataCopyExtParams`` with the tail's ``blockCount`` / ``blockLen`` per core), through a
    ``Cast`` (``CAST_RINT``) into a UB buffer of the output type when GM is float16 / bfloat16.

  Region ops (``parallel`` over the UB tile, identity accesses, ``compute``): ``copy``, ``relu``,
  ``add`` / ``mul`` / ``max`` of two UB tiles or of a tile and a 1-D UB vector broadcast over the rows
  (``lambda i, j: (j,)``: one intrinsic per row), and ``adds:C`` / ``muls:C`` / ``maxs:C`` with a scalar.  A
  GM -> UB ``copy`` (a bias vector) is a ``DataCopyPad`` on every vector core; a ``fill`` of a UB buffer is
  ``Duplicate``.  Within a core, ``SetFlag`` / ``WaitFlag`` order MTE2, V and MTE3 as for the cube.

* ``lower(..., double_buffer=True)``: the L1 and L0A/L0B buffers ping-pong (``X_0`` / ``X_1``) and the flags
  follow the slot (``EVENT_ID0`` / ``EVENT_ID1``, each ``SetFlag`` right after the statement depended on), so
  the GM -> L1 copies of step ``k + 1`` wait only for the loads of step ``k - 1``, not for the cube.

* ``set_atomic("add", "float32")`` / ``set_atomic_none()``: ``SetAtomicAdd<float>()`` / ``SetAtomicNone()``, so
  the Fixpipe stores in between accumulate into GM (split-K).

Anything else (other ``dual_copy`` paths, UB copies, other atomic modes) raises
:class:`~layoutkit.errors.UnsupportedError` naming the op.

The program is written tile by tile; the kernel is multi-core (:mod:`.distribute`): the ops of each output
tile are lowered on their own and folded into one tile body inside a :class:`~.ir.TileLoop` that every AI
core runs for tiles ``GetBlockIdx(), GetBlockIdx() + GetBlockNum(), ...`` (CATLASS's block swizzle), tail
tiles following the tile's origin extents (``nValue = mActual``, guarded zero fills), the K steps of a tile
rolled into a loop (:func:`roll_k_loops`) and the per-fractal-row ``LoadData`` calls into a loop over the
rows.  A mixed kernel's vector cores run the same tile loop (``GetBlockIdx() / GetSubBlockNum()``), each its
half of the rows, through the workspace slice of its cube core.  ``roll=False`` keeps the single-core form:
every tile and K step unrolled, as the passes left them.

>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.ascend_gemm(M=20, N=18, K=24, bm=32, bn=32, bk=32)   # one tile, tails in every dim
>>> k = lower(p, infer_layouts(p))
>>> tiles = k.body[0]                      # the loop over the output tiles, here one
>>> type(tiles).__name__, tiles.body[1].params.n_value, tiles.body[1].params.d_value, tiles.body[1].params.src_d_value
('TileLoop', 20, 24, 24)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import cast

from ...errors import UnsupportedError
from ...infer.ops import Op
from ...infer.program import Program
from ...targets import ascend
from ...targets.ascend import FractalInfo, FractalKind, Nd2NzParams
from ..dispatch import OpTable
from . import ir
from .distribute import Grid, merge_tiles, tile_groups
from .epilogue import FREE, WORKSPACE, VectorEpilogue, check_u16
from .loops import roll_k_loops
from .passes import layouts_of, run_ascend_passes
from .reference import round_up
from .scopes import GM, L0A, L0B, L0C, L1, UB
from .sync import EVENTS, SyncState, Touch, label_of

ROW = ascend.ROW_FRACTAL
MAX_REPEAT = 255  # LoadData2DParams.repeatTimes is a uint8_t
MAX_CORES = 20    # AI cores a launch uses at most (the cube cores of an Atlas A2 part)


def lower(program: Program, result=None, name: str | None = None, roll: bool = True,
          double_buffer: bool = False, cores: int = MAX_CORES) -> ir.Kernel:
    """The :class:`~.ir.Kernel` of a solved Ascend cube program (see the module doc); ``name``
    defaults to ``ascend_gemm`` for a program with a GEMM, else ``ascend_kernel``; ``roll=False`` keeps
    every tile and K step unrolled on one core, as the passes left them (else the tiles are spread over at
    most ``cores`` AI cores, :mod:`.distribute`);
    ``double_buffer=True`` ping-pongs the L1 and L0A/L0B buffers (see :class:`Lowering`).  ``result`` is
    trusted here (``None``: the program's annotations); :func:`layoutkit.codegen.lower` checks it first.

    >>> from layoutkit.infer import Program
    >>> lower(Program(), None)
    Traceback (most recent call last):
    ...
    layoutkit.errors.UnsupportedError: lower_ascend: expected a program with target='ascend'; found 'sm_80'
    """
    if name is None:
        name = "ascend_gemm" if any(op.kind == "gemm" for op in program.ops) else "ascend_kernel"
    if program.target != "ascend":
        raise UnsupportedError(f"lower_ascend: expected a program with target='ascend'; found {program.target!r}")
    if _processed(program):
        lay = layouts_of(program, result)
    else:
        program, _ = run_ascend_passes(program, result)
        lay = layouts_of(program)
    return Lowering(program, lay, roll, double_buffer, cores).run(name)


def _processed(program: Program) -> bool:
    gemms = [op for op in program.ops if op.kind == "gemm"]
    return bool(gemms) and all("mnk" in op.args for op in gemms)


def staged_image(layout, dtype: str) -> FractalInfo:
    """The fractal image an on-chip buffer holds in the emitted kernel: its inferred layout, except that a
    MajorMN L1 buffer is staged as the MajorK image of its shape (see the module doc).

    >>> L = ascend.make_ascend_major_mn_layout((32, 48), "float16")
    >>> staged_image(L, "float16").kind.name, staged_image(L, "float16").storage_shape
    ('MAJOR_K', (3, 2, 16, 16))
    """
    info = ascend.fractal_info(layout)
    if info.kind is FractalKind.MAJOR_MN:
        return ascend.fractal_info(ascend.make_ascend_major_k_layout((info.rows, info.cols), dtype))
    return info


def fractal_origins(info: FractalInfo) -> list[tuple[int, int, bool]]:
    """For each fractal of ``info`` in storage order: the logical (row, col) of its first element and
    whether its content is transposed (MajorMN fractals hold ``[col % 16, row % C0]``).

    >>> fractal_origins(ascend.fractal_info(ascend.make_ascend_nz_layout((32, 16), "float16")))
    [(0, 0, False), (16, 0, False)]
    """
    out = []
    for o0 in range(info.outer0):
        for o1 in range(info.outer1):
            if info.kind is FractalKind.MAJOR_MN:
                out.append((o0 * info.c0, o1 * ROW, True))
            else:
                out.append((o1 * ROW, o0 * info.c0, False))
    return out


def hardware_order(info: FractalInfo, role: str, transposed: bool) -> list[tuple[int, int, bool]]:
    """The fractals of an L0 operand image in the order ``Mmad`` reads them (Ascend C's Mmad: A in L0A is
    zZ, its ``16 x C0`` fractals row-major over (m, k); B in L0B is nZ, its ``C0 x 16`` fractals row-major
    over (k, n)), as :func:`fractal_origins` entries (origins in the buffer's own coordinates, which are the
    operand's transpose when ``transposed``).

    >>> info = ascend.fractal_info(ascend.make_ascend_major_k_layout((32, 32), "float16"))
    >>> [o[:2] for o in fractal_origins(info)], [o[:2] for o in hardware_order(info, "A", False)]
    ([(0, 0), (16, 0), (0, 16), (16, 16)], [(0, 0), (0, 16), (16, 0), (16, 16)])
    """
    def key(o):
        r, c, _ = o
        return (c, r) if transposed else (r, c)
    return sorted(fractal_origins(info), key=key) if role in ("A", "B") else fractal_origins(info)


def load_plan(src: FractalInfo, dst: FractalInfo, what: str,
              order: list[tuple[int, int, bool]] | None = None) -> list[tuple[int, ir.LoadData2DParams]]:
    """The ``LoadData`` calls that make ``dst`` hold the same logical tile as ``src``: one per run of
    consecutive destination fractals whose source fractals step evenly (at most 255 long), as
    ``[(first destination fractal, LoadData2DParams)]``; ``order`` is the destination's fractal order
    (:func:`hardware_order`; default: its storage order).

    >>> k = ascend.fractal_info(ascend.make_ascend_nz_layout((32, 32), "float16"))
    >>> load_plan(k, k, "x")
    [(0, LoadData2DParams(start_index=0, repeat_times=4, src_stride=1, dst_gap=0, if_transpose=False))]
    >>> zz = hardware_order(k, "A", False)
    >>> [(t, p.start_index, p.repeat_times, p.src_stride) for t, p in load_plan(k, k, "x", zz)]
    [(0, 0, 2, 2), (2, 1, 2, 2)]
    """
    # MajorMN fractals hold their block transposed, so a MajorK <-> MajorMN move transposes each fractal
    flip = (dst.kind is FractalKind.MAJOR_MN) != (src.kind is FractalKind.MAJOR_MN)
    if flip and (src.c0 != ROW or dst.c0 != ROW):
        raise UnsupportedError(f"{what}: a transposing LoadData needs 16 x 16 fractals (16-bit types); found C0 = "
                               f"{src.c0}")
    index = {(r, c): t for t, (r, c, _) in enumerate(fractal_origins(src))}
    pairs = []
    for r, c, _ in (fractal_origins(dst) if order is None else order):
        if (r, c) not in index:
            raise UnsupportedError(f"{what}: the L0 fractal at ({r}, {c}) has no matching L1 fractal (L1 image "
                                   f"{src.kind.name} {src.storage_shape}, L0 image {dst.kind.name} "
                                   f"{dst.storage_shape})")
        pairs.append(index[(r, c)])
    plan = []
    t = 0
    while t < len(pairs):
        n, stride = 1, 1
        if t + 1 < len(pairs) and pairs[t + 1] > pairs[t]:
            stride = pairs[t + 1] - pairs[t]
            while (t + n < len(pairs) and n < MAX_REPEAT and pairs[t + n] - pairs[t + n - 1] == stride):
                n += 1
        plan.append((t, ir.LoadData2DParams(pairs[t], n, stride, 0, flip)))
        t += n
    return plan


def _even(plan: list[tuple[int, ir.LoadData2DParams]]) -> bool:
    """Whether the calls of a load plan differ only by a start index and a destination moving evenly."""
    (t0, p0), (t1, p1) = plan[0], plan[1]
    return all(t == t0 + k * (t1 - t0) and q == replace(p0, start_index=p0.start_index + k * (p1.start_index
                                                                                                - p0.start_index))
               for k, (t, q) in enumerate(plan))


class Lowering(VectorEpilogue):
    """The lowering state.  With ``double_buffer`` every L1 / L0A / L0B buffer ``X`` becomes two, ``X_0`` and
    ``X_1``, and each write of ``X`` (a GM -> L1 copy with its zero fill, an L1 -> L0 load) switches to the
    other one, so K step ``k + 1`` loads while the cube multiplies step ``k``.  The flags then follow the
    ping-pong pattern: a ``SetFlag`` goes right after the statement a later one depends on (its
    ``EVENT_ID`` the buffer's slot) and the ``WaitFlag`` right before that later one, so a pipe waits for
    exactly the step it needs, not for everything issued since."""

    def __init__(self, program: Program, layouts: dict, roll: bool = True, double_buffer: bool = False,
                 cores: int = MAX_CORES):
        self.p = program
        self.cores = max(1, int(cores))
        self.roll = roll
        self.double = double_buffer
        self.slot: dict[str, int] = {}      # double-buffered buffer -> the slot its last write used
        self.after: dict[int, list] = {}    # cube body index -> SetFlags that follow that statement
        self.lay = layouts
        self.body: list = []
        self.images: dict[str, FractalInfo] = {}
        self.clamped: set[str] = set()
        self.sync = SyncState(self.slot_of if double_buffer else None)
        self.epilogue: dict | None = None  # an L0C -> UB dual_copy waiting for its UB -> GM half
        self.vbody: list = []               # the vector cores' statements (a mixed kernel)
        self.vsync = SyncState()
        self.ubs: dict[str, None] = {}      # UB buffers the vector body uses, in order of use
        self.casts: dict[str, tuple[str, int]] = {}  # UB buffers of the output type: name -> (dtype, size)
        self.workspace: tuple[int, int] | None = None
        self.handed = 0                     # tiles the cube has handed to the vector cores
        self.roles: dict[str, tuple[str, bool]] = {}  # L0 operand -> ("A" / "B", transposed in its buffer)
        for op in program.ops:
            if op.kind == "gemm":
                self.roles[op.args["A"]] = ("A", bool(op.args["transpose_A"]))
                self.roles[op.args["B"]] = ("B", bool(op.args["transpose_B"]))

    # ---- helpers ----------------------------------------------------------------------------------
    def scope(self, name: str) -> str:
        return self.p.buffers[name].scope

    def image(self, name: str, op: Op) -> FractalInfo:
        if name not in self.images:
            if name not in self.lay or getattr(self.lay[name], "fractal", None) is None:
                raise UnsupportedError(f"{op.name}: {name} has no fractal layout; run infer_layouts first")
            layout = self.lay[name]
            info = (staged_image(layout, self.p.buffers[name].dtype) if self.scope(name) == L1
                    else ascend.fractal_info(layout))
            if info.leading_shape:
                raise UnsupportedError(f"{op.name}: {name} has leading dims {info.leading_shape}; only 2-D "
                                       f"fractal buffers are lowered")
            self.images[name] = info
        return self.images[name]

    def emit(self, stmt, vector: bool = False) -> None:
        """Append ``stmt`` to the cube (or vector) body after the flags that order it behind other pipes."""
        body, sync = (self.vbody, self.vsync) if vector else (self.body, self.sync)
        for src, dst, at, event in sync.before(Touch.of(stmt)):
            if (src, dst) not in EVENTS:
                raise UnsupportedError(f"{label_of(stmt)}: no HardEvent orders pipe {src} before pipe {dst}")
            if sync.eager:  # set right after the statement depended on, on the slot's event
                self.after.setdefault(at, []).append(ir.SetFlag(src, dst, event))
                body.append(ir.WaitFlag(src, dst, event))
            else:
                body += [ir.SetFlag(src, dst), ir.WaitFlag(src, dst)]
        sync.placed(len(body))
        body.append(stmt)

    # ---- double buffering ---------------------------------------------------------------------------
    def pingpong(self, name: str) -> bool:
        return self.double and self.scope(name) in (L1, L0A, L0B)

    def slot_of(self, name: str) -> int | None:
        """The slot of a double-buffered buffer's name (``A_l1_1`` -> 1), else ``None``."""
        base, _, slot = name.rpartition("_")
        return int(slot) if slot in ("0", "1") and base in self.slot else None

    def current(self, name: str) -> str:
        """The slot of ``name`` that its last write filled (what a reader uses)."""
        return f"{name}_{self.slot.get(name, 0)}" if self.pingpong(name) else name

    def fresh(self, name: str) -> str:
        """Switch ``name`` to its other slot for a new write."""
        if not self.pingpong(name):
            return name
        self.slot[name] = 1 - self.slot.get(name, 1)
        return self.current(name)

    # ---- ops --------------------------------------------------------------------------------------
    def run(self, name: str) -> ir.Kernel:
        if not self.roll:
            for op in self.p.ops:
                self.lower_op(op)
            self.close_epilogue()
            flat = [x for i, stmt in enumerate(self.body) for x in [stmt] + self.after.get(i, [])]
            vbody = list(self.vbody)
            if self.handed:  # the vector cores' first hand-back, the cube's last wait (see VectorEpilogue.mixed)
                vbody.insert(0, ir.CrossCoreSetFlag(FREE, "MTE2"))
                flat.append(ir.CrossCoreWaitFlag(FREE))
            return self.kernel(name, flat, vbody, 1)
        plan = tile_groups(self.p)
        if plan is None:  # stores that do not tile one result: one task, run by core 0
            plan = (Grid(1, 1, 1, 1), [((0, 0), list(self.p.ops))])
        grid, groups = plan
        cube, vec = {}, {}
        for coord, ops in groups:
            self.begin_tile()
            for op in ops:
                self.lower_op(op)
            self.close_epilogue()
            flat = [x for i, stmt in enumerate(self.body) for x in [stmt] + self.after.get(i, [])]
            cube[coord] = roll_k_loops(flat) + [ir.PipeBarrier()]
            vec[coord] = list(self.vbody) + [ir.PipeBarrier()]
        tiles = grid.shape[0] * grid.shape[1]
        cores = min(tiles, self.cores)
        loop = ir.TileLoop(grid.m, grid.n, grid.bm, grid.bn, tuple(merge_tiles(cube, grid)))
        top: list = [loop]
        vtop: list = []
        if self.handed:
            vloop = replace(loop, body=tuple(merge_tiles(vec, grid, vector=True)), sub_rows=grid.bm // 2)
            vtop = [ir.CrossCoreSetFlag(FREE, "MTE2"), vloop]
            top.append(ir.CrossCoreWaitFlag(FREE))
        return self.kernel(name, top, vtop, cores)

    def lower_op(self, op: Op) -> None:
        into_ub = op.kind in ("copy", "fill") and self.scope(op.args["dst"]) == UB
        if self.epilogue is not None and op.kind not in ("vf", "dual_copy") and not into_ub:
            raise UnsupportedError(f"{op.name}: a {op.kind!r} op inside the vector epilogue begun by "
                                   f"{self.epilogue['op']}")
        LOWERINGS.lookup(op.kind, Lowering.unsupported)(self, op)

    def close_epilogue(self) -> None:
        if self.epilogue is not None:
            raise UnsupportedError(f"{self.epilogue['op']}: the L0C -> UB dual_copy has no UB -> GM dual_copy")
        if self.vbody and not self.handed:
            raise UnsupportedError("the program's UB ops feed no vector epilogue (UB ops are lowered only around "
                                   "an L0C -> UB ... UB -> GM epilogue)")

    def begin_tile(self) -> None:
        """Start an output tile afresh: its flags order only its own statements (a barrier ends each tile)
        and double buffering starts at slot 0, so every tile of a class lowers to the same statements."""
        self.body, self.after, self.vbody = [], {}, []
        self.slot = {}
        self.sync = SyncState(self.slot_of if self.double else None)
        self.vsync = SyncState()

    def kernel(self, name: str, body: list, vector: list, cores: int) -> ir.Kernel:
        body = body + [ir.PipeBarrier()]
        vector = vector + [ir.PipeBarrier()] if vector else []
        gms = [b for b in self.p.buffers.values() if b.scope == GM]
        params = tuple(ir.GlobalParam(b.name, b.dtype, self.p.shape_of(b.name)) for b in gms)
        if self.workspace is not None:  # one tile-sized slice per AI core
            params += (ir.GlobalParam(WORKSPACE, "float32", (cores * self.workspace[0], self.workspace[1])),)
        feeds_b = {op.args["src"] for op in self.p.ops if op.kind == "copy"
                   and self.scope(op.args["dst"]) == L0B}
        buffers = []
        for bname, info in self.images.items():
            scope = self.scope(bname)
            pos = ir.POSITIONS[scope][1 if scope == L1 and bname in feeds_b else 0]
            for each in ([f"{bname}_0", f"{bname}_1"] if self.pingpong(bname) else [bname]):
                buffers.append(ir.LocalBuffer(each, self.p.buffers[bname].dtype, pos, math.prod(info.storage_shape),
                                              info))
        for bname in self.ubs:
            buffers.append(ir.LocalBuffer(bname, self.p.buffers[bname].dtype, "VECCALC",
                                          math.prod(self.p.shape_of(bname)), None))
        for bname, (dt, size) in self.casts.items():
            buffers.append(ir.LocalBuffer(bname, dt, "VECCALC", size, None))
        return ir.Kernel(name, params, tuple(buffers), tuple(body), tuple(vector), cores)

    def unsupported(self, op: Op) -> None:
        raise UnsupportedError(f"{op.name}: Ascend C lowering handles copy (GM -> L1, L1 -> L0A/L0B, L0C -> GM), "
                               f"gemm and the OOB fills; found a {op.kind!r} op")

    def op_set_atomic(self, op: Op) -> None:
        mode, dtype = op.args["mode"], op.args.get("dtype", "float32")
        if mode not in ("add", "none") or (mode == "add" and dtype != "float32"):
            raise UnsupportedError(f"{op.name}: the Fixpipe atomic store is lowered for mode 'add' on float32 (or "
                                   f"'none'); found {mode!r} on {dtype}")
        self.body.append(ir.SetAtomic(mode, dtype))

    def op_fill(self, op: Op) -> None:
        a = op.args
        if self.scope(a["dst"]) == UB:
            return self.fill_ub(op)
        if a.get("for") not in self.clamped:
            raise UnsupportedError(f"{op.name}: only the OOB fills of clamped GM -> L1 copies are lowered; this one "
                                   f"fills {a['dst']} on its own")
        if float(a["value"]) != 0.0:
            raise UnsupportedError(f"{op.name}: the OOB pad value must be 0 (the ND2NZ DMA zero-fills its block "
                                   f"tail); found {a['value']}")

    def op_gemm(self, op: Op) -> None:
        a = op.args
        for key, scope in (("A", L0A), ("B", L0B), ("C", L0C)):
            if self.scope(a[key]) != scope:
                raise UnsupportedError(f"{op.name}: Mmad reads {key} from {scope}; {a[key]} is in "
                                       f"{self.scope(a[key])}")
            self.image(a[key], op)
        m, n, k = a["mnk"]
        check_u16(op, m=m, n=n, k=k)
        self.emit(ir.Mmad(a["C"], self.current(a["A"]), self.current(a["B"]),
                          ir.MmadParams(m, n, k, bool(a["clear_accum"])), bool(a["transpose_A"]),
                          bool(a["transpose_B"]), op.name))

    def op_copy(self, op: Op) -> None:
        a = op.args
        path = (self.scope(a["src"]), self.scope(a["dst"]))
        if path == (GM, L1):
            return self.gm_to_l1(op)
        if path in ((L1, L0A), (L1, L0B)):
            return self.l1_to_l0(op)
        if path == (L0C, GM):
            return self.l0c_to_gm(op)
        if path == (GM, UB):
            return self.gm_to_ub(op)
        raise UnsupportedError(f"{op.name}: Ascend C lowering has no {path[0]} -> {path[1]} copy (only GM -> L1, "
                               f"L1 -> L0A/L0B, L0C -> GM and GM -> UB)")

    def gm_to_l1(self, op: Op) -> None:
        a = op.args
        (s0, se), (d0, de) = a["src_region"], a["dst_region"]
        gm = self.p.shape_of(a["src"])
        if len(gm) != 2 or len(de) != 2:
            raise UnsupportedError(f"{op.name}: GM -> L1 lowering handles 2-D tensors; found {a['src']} {gm}")
        info = self.image(a["dst"], op)
        vr, vc = a.get("valid", list(se))
        pr = info.outer1 * ROW  # padded rows of the MajorK image: the pitch of its C0 column blocks
        c0 = info.c0
        if d0[1] % c0:
            raise UnsupportedError(f"{op.name}: the L1 column start {d0[1]} is not a multiple of C0 = {c0}")
        dst_off = (d0[1] // c0) * pr * c0 + d0[0] * c0
        dst = self.fresh(a["dst"])
        if [vr, vc] != list(se):  # a tail: zero the tile's fractals first (the OOB fills' effect)
            self.clamped.add(op.name)
            rows = round_up(d0[0] + de[0], ROW) - d0[0]
            blocks = round_up(d0[1] + de[1], c0) // c0 - d0[1] // c0
            self.emit(ir.InitConstValue(dst, dst_off, ir.InitConstValueParams(blocks, rows, pr - rows, 0.0),
                                        op.name))
        params = Nd2NzParams(nd_num=1, n_value=vr, d_value=vc, src_nd_matrix_stride=0, src_d_value=gm[1],
                             dst_nz_c0_stride=pr, dst_nz_n_stride=1, dst_nz_matrix_stride=0)
        check_u16(op, **vars(params))
        self.emit(ir.CopyGmToL1(dst, dst_off, a["src"], s0[0] * gm[1] + s0[1], params, op.name))

    def l1_to_l0(self, op: Op) -> None:
        a = op.args
        src, dst = a["src"], a["dst"]
        (s0, se), (d0, de) = a["src_region"], a["dst_region"]
        if any(s0) or any(d0) or tuple(se) != tuple(de):
            raise UnsupportedError(f"{op.name}: L1 -> L0 lowering moves whole fractal images (regions at 0 with "
                                   f"equal extents); found {src} at {s0} {se} -> {dst} at {d0} {de}")
        si, di = self.image(src, op), self.image(dst, op)
        if (si.rows, si.cols) != (di.rows, di.cols):
            raise UnsupportedError(f"{op.name}: {src} {si.rows}x{si.cols} and {dst} {di.rows}x{di.cols} differ")
        frac = ROW * di.c0
        role, transposed = self.roles.get(dst, ("", False))
        order = hardware_order(di, role, transposed)
        src, dst = self.current(src), self.fresh(dst)
        plan = load_plan(si, di, op.name, order)
        (t0, p0), *rest = plan
        if self.roll and rest and _even(plan):  # one call per fractal row, the rows stepping evenly: a loop over them
            dt, ds = rest[0][0] - t0, rest[0][1].start_index - p0.start_index
            body = ir.LoadData(dst, ir.offset(t0 * frac, [("fr", dt * frac)]), src, 0,
                               # a start index moving with the loop (resolved per iteration, like offsets)
                               replace(p0, start_index=cast(int, ir.offset(p0.start_index, [("fr", ds)]))), op.name)
            return self.emit(ir.For("fr", len(plan), (body,)))
        for t, params in plan:
            self.emit(ir.LoadData(dst, t * frac, src, 0, params, op.name))

    def l0c_to_gm(self, op: Op) -> None:
        a = op.args
        (s0, se), (d0, _) = a["src_region"], a["dst_region"]
        if any(s0):
            raise UnsupportedError(f"{op.name}: L0C -> GM lowering handles a whole L0C tile; found it at {s0}")
        self.fixpipe(op, a["src"], a["dst"], d0, a.get("valid", list(se)), relu=False)

    def fixpipe(self, op: Op, src: str, dst: str, d0, valid, relu: bool) -> None:
        gm = self.p.shape_of(dst)
        if len(gm) != 2:
            raise UnsupportedError(f"{op.name}: Fixpipe lowering writes a 2-D GM tensor; {dst} is {gm}")
        info = self.image(src, op)
        vm, vn = valid
        quant = {"float32": "NoQuant", "float16": "F322F16", "bfloat16": "F322BF16"}.get(self.p.buffers[dst].dtype)
        if quant is None or self.p.buffers[src].dtype != "float32":
            raise UnsupportedError(f"{op.name}: Fixpipe lowering converts a float32 L0C to float32/float16/bfloat16; "
                                   f"found {self.p.buffers[src].dtype} -> {self.p.buffers[dst].dtype}")
        params = ir.FixpipeParamsV220(n_size=vn, m_size=vm, src_stride=info.outer1 * ROW, dst_stride=gm[1],
                                      quant_pre=quant, relu_en=relu)
        check_u16(op, n_size=vn, m_size=vm, src_stride=params.src_stride)
        self.emit(ir.Fixpipe(dst, d0[0] * gm[1] + d0[1], src, 0, params, op.name))


LOWERINGS = OpTable.of_methods(Lowering, "Ascend lowering")
"""Op kind -> the lowering's handler, the vector epilogue's included (ops without one are refused by
``Lowering.unsupported``)."""
