"""The tile-op readers of the TileLang walk (:mod:`.tilelang_walk`): each ``tl.tileop.*`` call the
adapter reads becomes one Program op (see :mod:`.tilelang_tileops`), and what regions of parameter
tensors reach past the tensor.  A mixin of the walker: ``self.p`` is the Program being built,
``self.region`` reads a region argument, ``self._record_selections`` the fragment dims it selected."""

from __future__ import annotations

from typing import Any

from ..errors import LayoutError, UnsupportedError
from ..infer.ops import Buffer
from .tilelang_ir import copy_loop_regions, nodes
from .tilelang_ir import int_value as _int

__all__ = ["WARP_POLICIES", "TileOps", "global_reach"]

_SHARED = ("shared", "shared.dyn")
WARP_POLICIES = {0: "square", 1: "fullrow", 2: "fullcol"}
"""TileLang's ``GemmWarpPolicy.policy_type`` -> layoutkit's warp policy name."""


class TileOps:
    """Readers of ``T.copy`` / ``fill`` / ``transpose`` / ``im2col`` / ``gemm`` / ``gemm_sp`` / ``reduce`` /
    ``atomic_add`` / ``cumsum`` / ``cummax``."""

    p: Any
    tirx: Any
    _scans: list[tuple[str, str]]
    runtime_shaped: dict[str, str]

    def region(self, arg, what: str, any_shared_start: bool = False):  # pragma: no cover - the walker's
        raise NotImplementedError

    def _record_selections(self, op, where: str):  # pragma: no cover - the walker's
        raise NotImplementedError

    def _pin(self, op, annotations, where: str, shape=None) -> None:  # pragma: no cover - the walker's
        raise NotImplementedError

    def _buffer(self, data):  # pragma: no cover - the walker's
        raise NotImplementedError

    def copy(self, call) -> None:
        what = f"T.copy `{call}`"
        if self._runtime_shaped_copy(call, what):
            return
        src, dst = copy_loop_regions(self.region(call.args[0], what), self.region(call.args[1], what), what)
        op = self._record_selections(self.p.copy(src, dst), what)
        self._pin(op, getattr(call, "annotations", {}) or {}, what)

    def check_sized(self, buf, what: str) -> None:
        """Refuse a use of a shared buffer of a runtime shape (only its copies to or from global memory
        are read, see :meth:`_runtime_shaped_copy`)."""
        shape = self.runtime_shaped.get(buf.name)
        if shape is not None:
            raise UnsupportedError(f"{what}: shared buffer {buf.name} has the runtime shape ({shape}); expected a "
                                   f"constant shape (a runtime one is read only in a T.copy to or from global "
                                   f"memory of a runtime extent)")

    def _runtime_shaped_copy(self, call, what: str) -> bool:
        """A copy of a runtime extent between global memory and a shared buffer of a runtime shape
        (dynamic shared memory) constrains no layout: TileLang's copy proposes layouts only for a
        fragment, or for a TMA box (whose extents must be constants), and lowers this one to plain or
        ``cp.async`` loads in a loop of runtime extent, so it is left out of the Program (TileLang lays
        nothing out for it either, at sm_80 and sm_90)."""
        bufs = [_region_buffer(a) for a in call.args[:2]]
        shaped = [b is not None and b.name in self.runtime_shaped for b in bufs]
        if not any(shaped):
            return False
        other = bufs[0] if shaped[1] else bufs[1]
        constant = all(isinstance(e, self.tirx.IntImm) for e in _region_extents(call.args[0]))
        if all(shaped) or other is None or other.scope() != "global" or constant:
            for b in bufs:
                if b is not None:
                    self.check_sized(b, what)
        return True

    def fill(self, call) -> None:
        what = f"T.fill `{call}`"
        if self._global_dynamic_region(call.args[0]):
            # TileLang's FillNode proposes no layout: a fill of global memory constrains nothing, and
            # one of a runtime extent (``T.fill(x[a:b], 0)``) has no static loop for the Program
            return
        value = call.args[1]
        v = float(value.value) if isinstance(value, (self.tirx.IntImm, self.tirx.FloatImm)) else 0.0
        self._record_selections(self.p.fill(self.region(call.args[0], what), v), what)

    def _global_dynamic_region(self, arg) -> bool:
        """``arg`` is a ``T.region`` of a global tensor with an extent that is not a constant."""
        t = self.tirx
        if not (isinstance(arg, t.Call) and getattr(arg.op, "name", "") == "tl.region"):
            return False
        b = self._buffer(arg.args[0].buffer)
        return b is not None and b.scope == "global" and not all(isinstance(e, t.IntImm) for e in arg.args[2:])

    def scan(self, call) -> None:
        """TileLang's ``CumSum`` / ``CumMax`` ``InferLayout``: at the strict level each shared operand (the
        buffer the region names, a ``T.view`` included) takes the linear layout, or must already have it;
        fragments get nothing.  The Program pins those as strict annotations once the kernel's own
        ``T.annotate_layout`` entries are in (:meth:`_pin_scans`)."""
        what = f"T.{call.op.name.split('.')[-1]} `{call}`"
        for arg in call.args[:2]:
            b = self.region(arg, what).buffer
            if b.scope in _SHARED:
                self._scans.append((b.name, what))

    def _pin_scans(self) -> None:
        from ..targets.nv.swizzle import make_linear_layout

        for name, what in self._scans:
            b = self.p.buffers[name]
            linear = make_linear_layout(self.p.shape_of(name), b.dtype)
            old = self.p.annotations.get(name)
            if old is not None and not old.is_equal(linear):
                raise UnsupportedError(f"from_prim_func: {what}: the scan needs the linear layout of shared {name}; "
                                       f"the kernel annotates {old} (TileLang 0.1.15 rejects it too)")
            self.p.annotate_layout({b: linear})

    def transpose(self, call) -> None:
        """``T.transpose(src, dst)`` of whole buffers or regions at any rank >= 2 (TileLang swaps the last two
        axes and loops over the src region's non-unit extents).  Global starts are read as every global
        start is (clamped into the tensor: TileLang's boundary predicate only masks elements, and positions
        never reach layout inference)."""
        what = f"T.transpose `{call}`"
        src, dst = self.region(call.args[0], what), self.region(call.args[1], what)
        for b in (src.buffer, dst.buffer):
            if b.is_fragment:  # layoutkit's transpose carries a layout across; TileLang's proposes none
                raise UnsupportedError(f"{what}: operand {b.name} is a fragment; expected shared memory (TileLang "
                                       f"0.1.15's transpose lays out no fragment, layoutkit's would)")
        try:
            self.p.transpose(src, dst)
        except LayoutError as err:
            raise UnsupportedError(f"{what}: {err}") from None

    def im2col(self, call) -> None:
        """TileLang's ``Im2ColOp::InferLayout`` proposes no layout: the op constrains nothing, so the
        Program has no op for it; its column tile is written through shared memory only."""
        what = f"T.im2col `{call}`"
        col = self.region(call.args[1], what).buffer
        if col.scope not in ("shared", "shared.dyn"):
            raise UnsupportedError(f"{what}: column buffer {col.name} has scope {col.scope}; expected shared memory")
        self.region(call.args[0], what)

    def _whole(self, arg, what: str) -> Buffer:
        r = self.region(arg, what)
        if any(r.starts) or r.extents != r.buffer.shape:
            raise UnsupportedError(f"{what}: operand {r.buffer.name}{list(r.starts)} with extents "
                                   f"{list(r.extents or ())} is part of the buffer; expected the whole "
                                   f"{r.buffer.shape}")
        return r.buffer

    def gemm(self, call) -> None:
        what = f"T.gemm `{call}`"
        a = call.args
        # A / B may be parts of shared buffers (``A_shared[:, block_K:]``, a stage or batch slice):
        # TileLang takes M / N / K from the regions and lays out the whole buffers
        A, B = (self._operand(x, what) for x in a[:2])
        C = self._accumulator(a[2], what)
        policy = WARP_POLICIES.get(_int(a[8], what))
        if policy is None:
            raise UnsupportedError(f"{what}: unknown warp policy {a[8]}")
        ann = getattr(call, "annotations", None) or {}
        common = {"transpose_A": bool(_int(a[3], what)), "transpose_B": bool(_int(a[4], what)), "policy": policy,
                  "clear_accum": self._clear_accum(a[9], what)}
        if call.op.name == "tl.tileop.wgmma_gemm":
            self.p.wgmma_gemm(A, B, C, **common)
        elif call.op.name == "tl.tileop.tcgen05_gemm":
            self.p.tcgen05_gemm(A, B, C, **common,
                                use_2cta="use_2cta" in ann and bool(_int(ann["use_2cta"], f"{what}: use_2cta")))
        else:
            self.p.gemm(A, B, C, **common)

    def _accumulator(self, arg, what: str) -> Buffer:
        """C: the whole buffer, or a TCGEN05 accumulator's batch slice (``C_tmem[phase % 2, :, :]``), whose
        layout TileLang gives over the whole tensor-memory buffer (batch dims repeat along the columns)."""
        r = self.region(arg, what, any_shared_start=True)
        ext = tuple(r.extents or r.buffer.shape)
        if r.buffer.scope == "shared.tmem" and all(e == 1 for e in ext[:-2]) and ext[-2:] == r.buffer.shape[-2:]:
            return r.buffer
        return self._whole(arg, what)

    def gemm_sp(self, call) -> None:
        """``T.gemm_sp(A, E, B, C, transpose_A, transpose_E, transpose_B, M, N, K, policy, clear_accum)``
        (TileLang 0.1.15's argument order): A / E / B may be parts of shared buffers, as for ``T.gemm``."""
        what = f"T.gemm_sp `{call}`"
        a = call.args
        A, E, B = (self._operand(x, what) for x in a[:3])
        C = self._whole(a[3], what)
        policy = WARP_POLICIES.get(_int(a[10], what))
        if policy is None:
            raise UnsupportedError(f"{what}: unknown warp policy {a[10]}")
        self.p.gemm_sp(A, E, B, C, transpose_A=bool(_int(a[4], what)), transpose_B=bool(_int(a[6], what)),
                       transpose_E=bool(_int(a[5], what)), policy=policy, clear_accum=self._clear_accum(a[11], what))

    def _clear_accum(self, x, what: str) -> bool:
        """A constant ``clear_accum``, or False for one decided at run time (``j == 0`` in an unrolled loop):
        the GEMM then may accumulate into C, so C is read, and no layout of TileLang 0.1.15's GEMM depends
        on the flag."""
        if isinstance(x, (self.tirx.IntImm, int)):
            return bool(_int(x, what))
        return False

    def _operand(self, arg, what: str):
        r = self.region(arg, what, any_shared_start=True)
        if not any(r.starts) and r.extents == r.buffer.shape:
            return r.buffer
        if r.buffer.scope not in (*_SHARED, "shared.tmem"):
            raise UnsupportedError(f"{what}: operand {r.buffer.name}{list(r.starts)} with extents "
                                   f"{list(r.extents or ())} is part of a {r.buffer.scope} buffer; TileLang 0.1.15 "
                                   f"lays register operands out over the whole buffer: expected the whole "
                                   f"{r.buffer.shape}, or a region of shared memory")
        return r

    def reduce(self, call) -> None:
        what = f"T.reduce `{call}`"
        a = call.args
        src, dst = self._whole(a[0], what), self._whole(a[1], what)
        self.p.reduce(src, dst, dim=_int(a[3], what), kind=str(a[2].value), clear=bool(_int(a[4], what)))

    def atomic_add(self, call) -> None:
        self._atomic(call, "atomic_add")

    def atomic_max(self, call) -> None:
        self._atomic(call, "atomic_max")

    def atomic_min(self, call) -> None:
        self._atomic(call, "atomic_min")

    def _atomic(self, call, kind: str) -> None:
        """``T.atomic_add`` / ``atomic_max`` / ``atomic_min`` of a region or a constant into a region."""
        what = f"T.{kind} `{call}`"
        value, dst = call.args[0], call.args[1]
        build = getattr(self.p, kind)
        if isinstance(value, (self.tirx.IntImm, self.tirx.FloatImm)):
            op = build(self.region(dst, what), float(value.value))
        elif kind == "atomic_add":
            ann = getattr(call, "annotations", None) or {}
            use_tma = "use_tma" in ann and bool(_int(ann["use_tma"], f"{what}: use_tma"))
            op = build(self.region(dst, what), self.region(value, what), use_tma=use_tma)
        else:
            op = build(self.region(dst, what), self.region(value, what))
        self._record_selections(op, what)


def global_reach(func) -> list[tuple[Any, tuple[int, ...]]]:
    """The largest constant extent of every ``T.region`` over each parameter buffer, by data var.  A
    region may run past its tensor (a GQA decode reading 64 query rows of a 32-head tensor); TileLang
    guards those reads, and global positions never enter layout inference, so the Program's tensor
    is declared as large as the largest region (kernels inside their tensors are unchanged).  That holds of
    a tensor made in the body over a pointer (``T.make_tensor(ptrs[i], (M, K))``, whose region may be
    wider than ``M`` itself: TileLang guards each row) as of a parameter."""
    from tilelang import tvm

    tirx = tvm.tirx
    params = [func.buffer_map[p].data for p in func.params if p in func.buffer_map]
    reach: list[tuple[Any, tuple[int, ...]]] = []
    for call in nodes(func.body, tirx.Call):
        if getattr(call.op, "name", "") != "tl.region" or not isinstance(call.args[0], tirx.BufferLoad):
            continue
        buf = call.args[0].buffer
        data = buf.data
        extents = call.args[2:]
        is_global = any(data.same_as(v) for v in params) or buf.scope() == "global"
        if not is_global or not all(isinstance(e, tirx.IntImm) for e in extents):
            continue
        ext = tuple(int(e.value) for e in extents)
        for k, (v, old) in enumerate(reach):
            if v.same_as(data) and len(old) == len(ext):
                reach[k] = (v, tuple(max(a, b) for a, b in zip(old, ext)))
                break
        else:
            reach.append((data, ext))
    return reach


def _region_buffer(arg):
    """The TIR buffer a tile op's region argument (``T.region``, a BufferRegion or a BufferLoad) names."""
    load = arg.args[0] if getattr(getattr(arg, "op", None), "name", "") == "tl.region" else arg
    return getattr(load, "buffer", None)


def _region_extents(arg) -> list:
    """The extents of a tile op's region argument (a BufferLoad's are all 1)."""
    if getattr(getattr(arg, "op", None), "name", "") == "tl.region":
        return list(arg.args[2:])
    if hasattr(arg, "region"):
        return [r.extent for r in arg.region]
    return []
