"""Lowering of solved Ascend cube programs (GM -> L1 -> L0A/L0B -> MAD -> L0C -> GM) to :mod:`.ascend_ir`.

Input: a program with ``target="ascend"`` and its inferred layouts; unless it already went through
:func:`~layoutkit.infer.ascend_passes.run_ascend_passes` (its GEMMs carry ``mnk``), the passes run first.
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

* The vector epilogue ``dual_copy`` L0C -> UB, a vector region of elementwise ``relu`` / ``copy`` over the
  whole UB tile, ``dual_copy`` UB -> GM: one ``Fixpipe`` straight to GM with ``reluEn`` (the fixpipe applies
  the ReLU on the way out), clamped like the UB -> GM copy.  The UB round trip through the vector cores (a
  mixed AIC/AIV kernel with cross-core flags) is not emitted.

* ``set_atomic("add", "float32")`` / ``set_atomic_none()``: ``SetAtomicAdd<float>()`` / ``SetAtomicNone()``, so
  the Fixpipe stores in between accumulate into GM (split-K).

Anything else (other ``dual_copy`` paths or vector regions, UB copies, other atomic modes) raises
:class:`~layoutkit.errors.UnsupportedError` naming the op.  The program is unrolled tile by tile, so the
kernel is straight-line code, except that runs of identical K steps (offsets moving evenly) are folded back
into ``for`` loops (:func:`roll_k_loops`).

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(target="ascend")
>>> A = p.tensor("A", (20, 24), "float16"); B = p.tensor("B", (24, 18), "float16")
>>> C = p.tensor("C", (20, 18), "float32")
>>> a1 = p.alloc("a1", (32, 32), "float16", "l1"); b1 = p.alloc("b1", (32, 32), "float16", "l1")
>>> a0 = p.alloc("a0", (32, 32), "float16", "l0a"); b0 = p.alloc("b0", (32, 32), "float16", "l0b")
>>> c0 = p.alloc("c0", (32, 32), "float32", "l0c")
>>> _ = p.copy(A[0:32, 0:32], a1); _ = p.copy(B[0:32, 0:32], b1)
>>> _ = p.copy(a1, a0); _ = p.copy(b1, b0); _ = p.mad(a0, b0, c0, clear_accum=True)
>>> _ = p.copy(c0, C[0:32, 0:32])
>>> k = lower(p, infer_layouts(p))
>>> k.body[1].params.n_value, k.body[1].params.d_value, k.body[1].params.src_d_value
(20, 24, 24)
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..errors import UnsupportedError
from ..infer.ascend_passes import layouts_of, run_ascend_passes
from ..infer.program import Op, Program
from ..targets import ascend
from ..targets.ascend import FractalInfo, FractalKind, Nd2NzParams
from . import ascend_ir as ir

ROW = ascend.ROW_FRACTAL
MAX_REPEAT = 255  # LoadData2DParams.repeatTimes is a uint8_t
U16 = 65535
EVENTS = {("MTE2", "MTE1"), ("MTE1", "MTE2"), ("MTE1", "M"), ("M", "MTE1"), ("M", "FIX"), ("FIX", "M"),
          ("MTE2", "M"), ("M", "MTE2"), ("FIX", "MTE2"), ("MTE2", "FIX")}
"""``HardEvent`` pairs the printer may emit (all exist in Ascend C)."""


def lower(program: Program, result=None, name: str | None = None) -> ir.Kernel:
    """The :class:`~.ascend_ir.Kernel` of a solved Ascend cube program (see the module doc); ``name``
    defaults to ``ascend_gemm`` for a program with a GEMM, else ``ascend_kernel``."""
    if name is None:
        name = "ascend_gemm" if any(op.kind == "gemm" for op in program.ops) else "ascend_kernel"
    if not program.is_ascend:
        raise UnsupportedError(f"lower_ascend: expected a program with target='ascend'; found {program.target!r}")
    if _processed(program):
        lay = layouts_of(program, result)
    else:
        program, _ = run_ascend_passes(program, result)
        lay = layouts_of(program)
    return _Lowering(program, lay).run(name)


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


def load_plan(src: FractalInfo, dst: FractalInfo, what: str) -> list[tuple[int, ir.LoadData2DParams]]:
    """The ``LoadData`` calls that make ``dst`` hold the same logical tile as ``src``: one per run of
    consecutive destination fractals whose source fractals step evenly (at most 255 long), as
    ``[(first destination fractal, LoadData2DParams)]``.

    >>> k = ascend.fractal_info(ascend.make_ascend_nz_layout((32, 32), "float16"))
    >>> load_plan(k, k, "x")
    [(0, LoadData2DParams(start_index=0, repeat_times=4, src_stride=1, dst_gap=0, if_transpose=False))]
    """
    # MajorMN fractals hold their block transposed, so a MajorK <-> MajorMN move transposes each fractal
    flip = (dst.kind is FractalKind.MAJOR_MN) != (src.kind is FractalKind.MAJOR_MN)
    if flip and (src.c0 != ROW or dst.c0 != ROW):
        raise UnsupportedError(f"{what}: a transposing LoadData needs 16 x 16 fractals (16-bit types); found C0 = "
                               f"{src.c0}")
    index = {(r, c): t for t, (r, c, _) in enumerate(fractal_origins(src))}
    pairs = []
    for r, c, _ in fractal_origins(dst):
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


class _Lowering:
    def __init__(self, program: Program, layouts: dict):
        self.p = program
        self.lay = layouts
        self.body: list = []
        self.images: dict[str, FractalInfo] = {}
        self.clamped: set[str] = set()
        self.sync = _SyncState()
        self.epilogue: dict | None = None  # an L0C -> UB dual_copy waiting for its UB -> GM half

    # ---- helpers ----------------------------------------------------------------------------------
    def scope(self, name: str) -> str:
        return self.p.buffers[name].scope

    def image(self, name: str, op: Op) -> FractalInfo:
        if name not in self.images:
            if name not in self.lay or getattr(self.lay[name], "fractal", None) is None:
                raise UnsupportedError(f"{op.name}: {name} has no fractal layout; run infer_layouts first")
            layout = self.lay[name]
            info = (staged_image(layout, self.p.buffers[name].dtype) if self.scope(name) == "l1"
                    else ascend.fractal_info(layout))
            if info.leading_shape:
                raise UnsupportedError(f"{op.name}: {name} has leading dims {info.leading_shape}; only 2-D "
                                       f"fractal buffers are lowered")
            self.images[name] = info
        return self.images[name]

    def emit(self, stmt) -> None:
        for src, dst in self.sync.before(stmt):
            if (src, dst) not in EVENTS:
                raise UnsupportedError(f"{stmt.label}: no HardEvent orders pipe {src} before pipe {dst}")
            self.body += [ir.SetFlag(src, dst), ir.WaitFlag(src, dst)]
        self.body.append(stmt)

    # ---- ops --------------------------------------------------------------------------------------
    def run(self, name: str) -> ir.Kernel:
        for op in self.p.ops:
            if self.epilogue is not None and op.kind not in ("vf", "dual_copy"):
                raise UnsupportedError(f"{op.name}: a {op.kind!r} op inside the vector epilogue begun by "
                                       f"{self.epilogue['op']}")
            getattr(self, f"op_{op.kind}", self.unsupported)(op)
        if self.epilogue is not None:
            raise UnsupportedError(f"{self.epilogue['op']}: the L0C -> UB dual_copy has no UB -> GM dual_copy")
        self.body = roll_k_loops(self.body) + [ir.PipeBarrier()]
        gms = [b for b in self.p.buffers.values() if b.scope == "gm"]
        params = tuple(ir.GlobalParam(b.name, b.dtype, self.p.shape_of(b.name)) for b in gms)
        feeds_b = {op.args["src"] for op in self.p.ops if op.kind == "copy"
                   and self.scope(op.args["dst"]) == "l0b"}
        buffers = []
        for bname, info in self.images.items():
            scope = self.scope(bname)
            pos = ir.POSITIONS[scope][1 if scope == "l1" and bname in feeds_b else 0]
            buffers.append(ir.LocalBuffer(bname, self.p.buffers[bname].dtype, pos, math.prod(info.storage_shape),
                                          info))
        return ir.Kernel(name, params, tuple(buffers), tuple(self.body))

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
        if a.get("for") not in self.clamped:
            raise UnsupportedError(f"{op.name}: only the OOB fills of clamped GM -> L1 copies are lowered; this one "
                                   f"fills {a['dst']} on its own")
        if float(a["value"]) != 0.0:
            raise UnsupportedError(f"{op.name}: the OOB pad value must be 0 (the ND2NZ DMA zero-fills its block "
                                   f"tail); found {a['value']}")

    def op_gemm(self, op: Op) -> None:
        a = op.args
        for key, scope in (("A", "l0a"), ("B", "l0b"), ("C", "l0c")):
            if self.scope(a[key]) != scope:
                raise UnsupportedError(f"{op.name}: Mmad reads {key} from {scope}; {a[key]} is in "
                                       f"{self.scope(a[key])}")
            self.image(a[key], op)
        m, n, k = a["mnk"]
        _u16(op, m=m, n=n, k=k)
        self.emit(ir.Mmad(a["C"], a["A"], a["B"], ir.MmadParams(m, n, k, bool(a["clear_accum"])),
                          bool(a["transpose_A"]), bool(a["transpose_B"]), op.name))

    def op_copy(self, op: Op) -> None:
        a = op.args
        path = (self.scope(a["src"]), self.scope(a["dst"]))
        if path == ("gm", "l1"):
            return self.gm_to_l1(op)
        if path in (("l1", "l0a"), ("l1", "l0b")):
            return self.l1_to_l0(op)
        if path == ("l0c", "gm"):
            return self.l0c_to_gm(op)
        raise UnsupportedError(f"{op.name}: Ascend C lowering has no {path[0]} -> {path[1]} copy (only GM -> L1, "
                               f"L1 -> L0A/L0B and L0C -> GM)")

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
        if [vr, vc] != list(se):  # a tail: zero the tile's fractals first (the OOB fills' effect)
            self.clamped.add(op.name)
            rows = _ru(d0[0] + de[0], ROW) - d0[0]
            blocks = _ru(d0[1] + de[1], c0) // c0 - d0[1] // c0
            self.emit(ir.InitConstValue(a["dst"], dst_off, ir.InitConstValueParams(blocks, rows, pr - rows, 0.0),
                                        op.name))
        params = Nd2NzParams(nd_num=1, n_value=vr, d_value=vc, src_nd_matrix_stride=0, src_d_value=gm[1],
                             dst_nz_c0_stride=pr, dst_nz_n_stride=1, dst_nz_matrix_stride=0)
        _u16(op, **vars(params))
        self.emit(ir.CopyGmToL1(a["dst"], dst_off, a["src"], s0[0] * gm[1] + s0[1], params, op.name))

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
        for t, params in load_plan(si, di, op.name):
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
        _u16(op, n_size=vn, m_size=vm, src_stride=params.src_stride)
        self.emit(ir.Fixpipe(dst, d0[0] * gm[1] + d0[1], src, 0, params, op.name))

    # ---- the vector epilogue: dual_copy L0C -> UB, vector region (relu / copy), dual_copy UB -> GM ----
    def op_dual_copy(self, op: Op) -> None:
        a = op.args
        path = (self.scope(a["src"]), self.scope(a["dst"]))
        if path == ("l0c", "ub") and self.epilogue is None:
            (s0, _), (d0, de) = a["src_region"], a["dst_region"]
            if any(s0) or any(d0) or tuple(de) != self.p.shape_of(a["dst"]):
                raise UnsupportedError(f"{op.name}: the epilogue moves the whole L0C tile into the whole UB buffer")
            self.epilogue = {"l0c": a["src"], "ub": a["dst"], "relu": False, "op": op.name}
            return
        if path == ("ub", "gm") and self.epilogue is not None and a["src"] == self.epilogue["ub"]:
            (_, de) = a["dst_region"]
            epi, self.epilogue = self.epilogue, None
            self.fixpipe(op, epi["l0c"], a["dst"], a["dst_region"][0], a.get("valid", list(de)), epi["relu"])
            return
        raise UnsupportedError(f"{op.name}: a {path[0]} -> {path[1]} dual_copy is lowered only as the L0C -> UB "
                               f"... UB -> GM epilogue around a relu/copy vector region")

    def op_vf(self, op: Op) -> None:
        epi = self.epilogue
        if epi is None:
            raise UnsupportedError(f"{op.name}: a vector region is lowered only between the epilogue's dual_copy ops")
        ub = epi["ub"]
        for inner in self.p.regions.get(op.uid, []):
            fn = inner.args.get("compute", "copy")
            ident = [f"_{c}" for c in "ij"]
            if (inner.kind != "parallel" or fn not in ("relu", "copy") or tuple(inner.loop) != self.p.shape_of(ub)
                    or any(x.buffer != ub or [str(e) for e in x.indices] != ident for x in inner.accesses)):
                raise UnsupportedError(f"{inner.name}: the vector epilogue lowers elementwise relu/copy over the whole "
                                       f"{ub} (identity accesses) only; found {inner.kind} {fn!r}")
            epi["relu"] = epi["relu"] or fn == "relu"


def roll_k_loops(body: list) -> list:
    """Fold runs of consecutive K steps (the statements up to and including each ``Mmad``) that differ only by
    offsets moving evenly from step to step into :class:`~.ascend_ir.For` loops (``kt0``, ``kt1``, ...).  The
    first K step of a tile (``cmatrixInitVal``) and tail steps (other ``Nd2NzParams``) stay outside.

    >>> m = ir.Mmad("c", "a", "b", ir.MmadParams(16, 16, 16, False), label="g")
    >>> ld = [ir.LoadData("a", 0, "a1", 0, ir.LoadData2DParams(0, 1, 1), label="x")]
    >>> steps = [ir.CopyGmToL1("a1", 0, "A", 16 * t, Nd2NzParams(1, 16, 16, 0, 64, 16, 1, 0), "c") for t in range(3)]
    >>> out = roll_k_loops([x for t in range(3) for x in [steps[t], *ld, m]])
    >>> loop, = out
    >>> loop.var, loop.extent, loop.body[0].src_offset
    ('kt0', 3, Offset(base=0, stride=16, var='kt0'))
    """
    segs, cur = [], []
    for s in body:
        cur.append(s)
        if isinstance(s, (ir.Mmad, ir.Fixpipe)):
            segs.append(cur)
            cur = []
    segs += [cur] if cur else []
    out: list = []
    i = loops = 0
    while i < len(segs):
        n, delta = 1, None
        while isinstance(segs[i][-1], ir.Mmad) and i + n < len(segs) and isinstance(segs[i + n][-1], ir.Mmad):
            d = _step_delta(segs[i + n - 1], segs[i + n])
            if d is None or (delta is not None and d != delta):
                break
            delta, n = d, n + 1
        if n >= 2:
            out.append(_loop(segs[i:i + n], delta, f"kt{loops}"))
            loops += 1
        else:
            out += segs[i]
        i += n
    return out


_OFFSETS = ("src_offset", "dst_offset")


def _offsets(s) -> dict[str, int]:
    return {f: getattr(s, f) for f in _OFFSETS if hasattr(s, f)}


def _bare(s):
    """``s`` without what may change from one K step to the next (offsets, label)."""
    changes = {f: 0 for f in _offsets(s)} | ({"label": ""} if hasattr(s, "label") else {})
    return replace(s, **changes) if changes else s


def _step_delta(a: list, b: list) -> tuple | None:
    if len(a) != len(b) or any(_bare(x) != _bare(y) for x, y in zip(a, b)):
        return None
    return tuple(tuple(_offsets(y)[f] - v for f, v in _offsets(x).items()) for x, y in zip(a, b))


def _loop(segs: list[list], delta: tuple, var: str) -> ir.For:
    body = []
    for j, s in enumerate(segs[0]):
        changes = {f: (ir.Offset(v, d, var) if d else v) for (f, v), d in zip(_offsets(s).items(), delta[j])}
        if hasattr(s, "label"):
            changes["label"] = f"{s.label}..{segs[-1][j].label}"
        body.append(replace(s, **changes) if changes else s)
    return ir.For(var, len(segs), tuple(body))


class _SyncState:
    """Which cross-pipe orderings a new statement needs: per buffer the last write and the reads since, and
    per pipe pair the last statement already ordered by a SetFlag/WaitFlag pair."""

    def __init__(self):
        self.n = 0
        self.last: dict[str, int] = {}                  # pipe -> index of its last statement
        self.synced: dict[tuple[str, str], int] = {}    # (src pipe, dst pipe) -> src statement index covered
        self.writer: dict[str, tuple[str, int]] = {}
        self.readers: dict[str, list[tuple[str, int]]] = {}

    def before(self, stmt) -> list[tuple[str, str]]:
        pipe = stmt.pipe
        deps: list[tuple[str, int]] = []
        for b in stmt.reads:
            deps += [self.writer[b]] if b in self.writer else []
        for b in stmt.writes:
            deps += ([self.writer[b]] if b in self.writer else []) + self.readers.get(b, [])
        need = sorted({q for q, i in deps if q != pipe and i > self.synced.get((q, pipe), -1)})
        for q in need:
            self.synced[(q, pipe)] = self.last[q]
        for b in stmt.reads:
            self.readers.setdefault(b, []).append((pipe, self.n))
        for b in stmt.writes:
            self.writer[b] = (pipe, self.n)
            self.readers[b] = []
        self.last[pipe] = self.n
        self.n += 1
        return [(q, pipe) for q in need]


def _ru(x: int, m: int) -> int:
    return -(-x // m) * m


def _u16(op: Op, **values: int) -> None:
    for key, v in values.items():
        if not 0 <= int(v) <= U16:
            raise UnsupportedError(f"{op.name}: {key} = {v} does not fit the uint16_t field of its Ascend C struct")

