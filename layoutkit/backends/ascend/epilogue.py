"""The vector epilogue of an Ascend cube kernel: ``dual_copy`` L0C -> UB, a vector region, ``dual_copy`` UB -> GM.

Lowered either as one ``Fixpipe`` with ``reluEn`` (a region that only applies ReLU / copy to the whole tile) or
as a mixed cube/vector kernel through a GM workspace (see :mod:`.lower`).  :class:`VectorEpilogue` holds the
``op_dual_copy`` / ``op_vf`` handlers and their helpers; the lowering state class mixes it in.
"""

from __future__ import annotations

import math

from ...errors import UnsupportedError
from ...infer.ops import Op
from ...targets import ascend
from . import ir
from .scopes import GM, L0C, UB

ROW = ascend.ROW_FRACTAL
U16 = 65535
BLOCK = 32         # bytes: the UB block
READY, FREE = 0, 1  # cross-core flags: the workspace holds a tile / the vector cores are done reading it
WORKSPACE = "workspace"
VEC_OPS = {"add": "Add", "mul": "Mul", "max": "Max", "adds": "Adds", "muls": "Muls", "maxs": "Maxs",
           "relu": "Relu", "copy": "Adds"}
ELEM = {"float32": 4, "float16": 2, "bfloat16": 2}


class VectorEpilogue:
    """Handlers of the epilogue ops; they use the state of :class:`~layoutkit.backends.ascend.lower.Lowering`
    (``p``, ``emit``, ``scope``, ``fixpipe``, the vector body and its UB buffers)."""

    def op_dual_copy(self, op: Op) -> None:
        a = op.args
        path = (self.scope(a["src"]), self.scope(a["dst"]))
        if path == (L0C, UB) and self.epilogue is None:
            (s0, _), (d0, de) = a["src_region"], a["dst_region"]
            if any(s0) or any(d0) or tuple(de) != self.p.shape_of(a["dst"]):
                raise UnsupportedError(f"{op.name}: the epilogue moves the whole L0C tile into the whole UB buffer")
            self.epilogue = {L0C: a["src"], UB: a["dst"], "op": op.name, "split": a["split"], "inner": []}
            return
        if path == (UB, GM) and self.epilogue is not None and a["src"] == self.epilogue[UB]:
            epi, self.epilogue = self.epilogue, None
            (d0, de) = a["dst_region"]
            if self.fusable(epi):
                relu = any(x.args.get("compute") == "relu" for x in epi["inner"])
                self.fixpipe(op, epi[L0C], a["dst"], d0, a.get("valid", list(de)), relu)
            else:
                self.mixed(epi, op)
            return
        raise UnsupportedError(f"{op.name}: a {path[0]} -> {path[1]} dual_copy is lowered only as the L0C -> UB "
                               f"... UB -> GM epilogue around a vector region")

    def op_vf(self, op: Op) -> None:
        if self.epilogue is None:
            raise UnsupportedError(f"{op.name}: a vector region is lowered only between the epilogue's dual_copy ops")
        self.epilogue["inner"] += self.p.regions.get(op.uid, [])

    def fusable(self, epi: dict) -> bool:
        """Whether the region is ReLU / copy of the UB tile in place (the fixpipe's ``reluEn`` does it)."""
        ident = [f"_{c}" for c in "ij"]
        return all(x.kind == "parallel" and x.args.get("compute", "copy") in ("relu", "copy")
                   and tuple(x.loop) == self.p.shape_of(epi[UB])
                   and all(y.buffer == epi[UB] and [str(e) for e in y.indices] == ident for y in x.accesses)
                   for x in epi["inner"])

    def use_ub(self, name: str, op: Op) -> tuple[int, ...]:
        if self.p.buffers[name].dtype != "float32":
            raise UnsupportedError(f"{op.name}: the vector epilogue computes in float32 UB buffers; {name} is "
                                   f"{self.p.buffers[name].dtype}")
        self.ubs[name] = None
        return self.p.shape_of(name)

    def mixed(self, epi: dict, op: Op) -> None:
        """The epilogue on the vector cores (see the module doc)."""
        l0c, ub = epi[L0C], epi[UB]
        h, n = self.use_ub(ub, op)
        info = self.image(l0c, op)
        if epi["split"] != "M" or len(self.p.shape_of(ub)) != 2:
            raise UnsupportedError(f"{epi['op']}: the mixed epilogue splits the L0C tile by rows (split 'M', 2-D); "
                                   f"found split {epi['split']!r} into {self.p.shape_of(ub)}")
        if (n * 4) % BLOCK:
            raise UnsupportedError(f"{epi['op']}: UB rows of {n} float32 are not whole 32-byte blocks")
        if self.workspace not in (None, (2 * h, n)):
            raise UnsupportedError(f"{epi['op']}: epilogues of different tile shapes {self.workspace} and "
                                   f"{(2 * h, n)} would share the workspace")
        self.workspace = (2 * h, n)
        if self.p.buffers[l0c].dtype != "float32":
            raise UnsupportedError(f"{epi['op']}: the L0C tile must be float32")
        # cube: wait until the vector cores hold the previous tile (the vector cores hand the workspace back
        # once before their first tile, the cube takes the last hand-back after its last tile), park this one
        # in its core's slice of the workspace, signal
        self.body.append(ir.CrossCoreWaitFlag(FREE))
        fix = ir.FixpipeParamsV220(n_size=n, m_size=2 * h, src_stride=info.outer1 * ROW, dst_stride=n)
        check_u16(op, m_size=2 * h, n_size=n, src_stride=fix.src_stride)
        self.emit(ir.Fixpipe(WORKSPACE, ir.offset(0, [("core", 2 * h * n)]), l0c, 0, fix, epi["op"]))
        self.body.append(ir.CrossCoreSetFlag(READY, "FIX"))
        self.handed += 1
        # vector cores: take half the rows, hand the workspace back, compute, store the valid part
        self.vbody.append(ir.CrossCoreWaitFlag(READY))
        self.emit(ir.CopyGmToUb(ub, 0, WORKSPACE, ir.offset(0, [("sub", h * n), ("core", 2 * h * n)]),
                                ir.DataCopyExtParams(1, h * n * 4, 0, 0), epi["op"]), vector=True)
        self.vbody.append(ir.CrossCoreSetFlag(FREE, "MTE2"))
        for inner in epi["inner"]:
            for stmt in self.vector_op(inner):
                self.emit(stmt, vector=True)
        self.ub_to_gm(op, ub, h, n)

    def ub_to_gm(self, op: Op, ub: str, h: int, n: int) -> None:
        """Store each core's valid rows and columns; a float16 / bfloat16 GM tensor first gets a ``Cast``
        (round to nearest even, ``CAST_RINT``) of the float32 tile into a UB buffer of its type."""
        a = op.args
        (d0, de) = a["dst_region"]
        dst = a["dst"]
        gm = self.p.shape_of(dst)
        dt = self.p.buffers[dst].dtype
        if len(gm) != 2 or dt not in ELEM:
            raise UnsupportedError(f"{op.name}: the epilogue stores a 2-D float32 / float16 / bfloat16 GM tensor; "
                                   f"{dst} is {dt} {gm}")
        if a.get("atomic"):
            raise UnsupportedError(f"{op.name}: an atomic ({a['atomic']}) store from the vector cores is not lowered")
        size = ELEM[dt]
        if (n * size) % BLOCK:
            raise UnsupportedError(f"{op.name}: UB rows of {n} {dt} are not whole 32-byte blocks")
        src = ub
        if dt != "float32":
            src = f"{ub}_{dt}"
            self.casts[src] = (dt, h * n)
            self.emit(ir.VecOp("Cast", src, 0, ((ub, 0),), h * n, label=op.name), vector=True)
        cols = max(0, min(de[1], gm[1] - d0[1]))
        rows = tuple(max(0, min(h, gm[0] - d0[0] - c * h)) for c in range(2))
        count = rows[0] if rows[0] == rows[1] else ir.PerCore(rows)
        used = -(-cols * size // BLOCK) * BLOCK
        params = ir.DataCopyExtParams(count, cols * size, (n * size - used) // BLOCK, (gm[1] - cols) * size)
        self.emit(ir.CopyUbToGm(dst, ir.offset(d0[0] * gm[1] + d0[1], [("sub", h * gm[1])]), src, 0, params,
                                op.name), vector=True)

    def gm_to_ub(self, op: Op) -> None:
        """A GM -> UB copy (a bias row, a tile of another input): ``DataCopyPad`` of the valid block."""
        a = op.args
        (s0, se), (d0, _) = a["src_region"], a["dst_region"]
        src, dst = a["src"], a["dst"]
        shape = self.use_ub(dst, op)
        gm = self.p.shape_of(src)
        valid = list(a.get("valid", [e for e in se if e != 1]))
        if len(gm) not in (1, 2) or len(shape) not in (1, 2) or len(valid) not in (1, 2) or any(d0):
            raise UnsupportedError(f"{op.name}: GM -> UB lowering copies a 1-D or 2-D block to the start of {dst}")
        if self.p.buffers[src].dtype != "float32":
            raise UnsupportedError(f"{op.name}: GM -> UB lowering copies float32 ({src} is "
                                   f"{self.p.buffers[src].dtype})")
        rows, cols = ([1] + valid)[-2:]
        pitch = shape[-1]
        gpitch = gm[-1]
        used = -(-cols * 4 // BLOCK) * BLOCK
        if rows > 1 and (pitch * 4 - used) % BLOCK:
            raise UnsupportedError(f"{op.name}: UB rows of {pitch} float32 are not whole 32-byte blocks")
        gaps = ((gpitch - cols) * 4, (pitch * 4 - used) // BLOCK) if rows > 1 else (0, 0)
        params = ir.DataCopyExtParams(rows, cols * 4, *gaps)
        start = s0[0] * gpitch + s0[1] if len(gm) == 2 else s0[0]
        self.emit(ir.CopyGmToUb(dst, 0, src, start, params, op.name), vector=True)

    def fill_ub(self, op: Op) -> None:
        a = op.args
        name = a["dst"]
        shape = self.use_ub(name, op)
        region = a.get("fill_region") or tuple((0, e) for e in shape)
        starts, ext = [r[0] for r in region], [r[1] for r in region]
        if list(ext[1:]) != list(shape[1:]) or any(starts[1:]):
            raise UnsupportedError(f"{op.name}: a UB fill covers whole rows (a contiguous run); found {region}")
        start = starts[0] * math.prod(shape[1:])
        self.emit(ir.VecOp("Duplicate", name, start, (), math.prod(ext), float(a["value"]), op.name), vector=True)

    def vector_op(self, inner: Op) -> list:
        """The vector intrinsics of one region op (see the module doc)."""
        fn = str(inner.args.get("compute", "copy"))
        kind, _, scalar = fn.partition(":")
        writes = [x for x in inner.accesses if x.is_write]
        reads = [x for x in inner.accesses if not x.is_write]
        loop = tuple(inner.loop or ())
        ident = [f"_{c}" for c in "ijklmn"[:len(loop)]]
        arity = 2 if kind in ("add", "mul", "max") else 1
        scalar_op = kind in ("adds", "muls", "maxs")
        bad = (inner.kind != "parallel" or kind not in VEC_OPS or (scalar != "") != scalar_op
               or len(writes) != 1 or len(reads) != arity or len(loop) != 2)
        if not bad:
            w = writes[0]
            bad = [str(e) for e in w.indices] != ident or self.scope(w.buffer) != UB
        if bad:
            raise UnsupportedError(f"{inner.name}: the vector epilogue lowers elementwise copy/relu/add/mul/max "
                                   f"(or adds:C/muls:C/maxs:C) over a UB tile, written in place; found "
                                   f"{inner.kind} {fn!r}")
        rows, cols = loop
        dst = w.buffer
        if self.use_ub(dst, inner) != loop:
            raise UnsupportedError(f"{inner.name}: the loop {loop} must cover the whole {dst}")
        full, rowvec = [], []
        for r in reads:
            idx = [str(e) for e in r.indices]
            shape = self.use_ub(r.buffer, inner) if self.scope(r.buffer) == UB else None
            if shape == loop and idx == ident:
                full.append(r.buffer)
            elif shape is not None and len(shape) == 1 and idx == ["_j"] and shape[0] >= cols:
                rowvec.append(r.buffer)
            else:
                raise UnsupportedError(f"{inner.name}: reads {r.buffer} at {idx}; expected a UB tile at {ident} or "
                                       f"a 1-D UB vector at ['_j'] (broadcast over rows)")
        if not full:
            raise UnsupportedError(f"{inner.name}: a vector op needs one operand that is the whole tile")
        op = VEC_OPS[kind]
        try:
            value = float(scalar or 0.0)
        except ValueError:
            raise UnsupportedError(f"{inner.name}: compute {fn!r} needs a number after the colon") from None
        if kind == "copy" and full[0] == dst:
            return []
        if not rowvec:
            return [ir.VecOp(op, dst, 0, tuple((b, 0) for b in full), rows * cols, value, inner.name)]
        at = ir.offset(0, [("r", cols)])
        body = (ir.VecOp(op, dst, at, ((full[0], at), (rowvec[0], 0)), cols, value, inner.name),)
        return [ir.For("r", rows, body)]


def check_u16(op: Op, **values: int) -> None:
    """Refuse a parameter that does not fit the ``uint16_t`` field of its Ascend C struct, naming ``op`` and it."""
    for key, v in values.items():
        if not 0 <= int(v) <= U16:
            raise UnsupportedError(f"{op.name}: {key} = {v} does not fit the uint16_t field of its Ascend C struct")

