"""Mosaic GPU (JAX's Pallas on NVIDIA GPUs) with layoutkit as its layout-inference pass
(``docs/mosaic_gpu.md``).

:func:`infer_layout` has the signature and the contract of Mosaic GPU's own
``layout_inference.infer_layout(module, *, fuel, arch)``: it reads the module's ops into a layoutkit
SSA problem (:mod:`layoutkit.infer.ssa`), solves it, and writes ``in_layouts`` / ``out_layouts`` in
Mosaic's attribute syntax on the ops Mosaic sets them on.  It never calls Mosaic's solver.  Layouts
are compared as layoutkit fragments (:mod:`.mosaic_gpu_layouts`), reductions are
:func:`layoutkit.fragment.tiled.reduce_tiled`.  An op the pass does not read is refused with an
:class:`~layoutkit.errors.UnsupportedError` naming it; layouts that cannot all hold raise
:class:`MosaicLayoutError` (a ``ValueError``, as Mosaic's pass raises) naming the op and the layouts it
was shown.  jax is imported inside each function: importing this module needs no jax.

>>> callable(infer_layout)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ..errors import UnsupportedError
from ..fragment.tiled import reduce_tiled
from ..infer.ssa import Constraint, Proposal, SsaConflictError, SsaFuelError, SsaProblem, solve
from .mosaic_gpu_layouts import WARPGROUP, from_spec, to_spec

DEFAULT_FUEL = 100_000
"""Mosaic GPU's default fuel (guesses the search may try)."""

POINTWISE = frozenset(
    f"arith.{n}" for n in (
        "addi", "addf", "andi", "bitcast", "cmpf", "cmpi", "extf", "extsi", "extui", "fptosi", "fptoui",
        "maximumf", "maxui", "maxsi", "minimumf", "minui", "minsi", "muli", "mulf", "ori", "floordivsi", "divsi",
        "divui", "divf", "remui", "remsi", "remf", "sitofp", "uitofp", "subi", "subf", "truncf", "trunci", "xori",
        "select", "shli", "shrui", "shrsi")
) | frozenset(
    f"math.{n}" for n in ("exp", "exp2", "sin", "cos", "log", "rsqrt", "tanh", "absf", "absi", "round",
                          "roundeven", "copysign", "ctlz")
)
"""Ops whose vector operands and results all share one layout (Mosaic's pointwise ops)."""

UNDEF = "llvm.mlir.undef"
"""An undefined value: no demand on its layout (Mosaic's tests build inputs with it)."""


class MosaicLayoutError(SsaConflictError, ValueError):
    """No layouts satisfy the module: the message keeps Mosaic's own wording (its callers match on it) and
    adds layoutkit's explanation: the op and the layouts it was shown."""


class MosaicFuelError(SsaFuelError):
    """The search ran out of fuel (Mosaic's wording: consider adding layout annotations)."""


def _mosaic() -> SimpleNamespace:
    """Mosaic GPU's dialect, IR bindings and layout classes (imported on first use)."""
    from jax._src.lib import mosaic_gpu_dialect as mgpu
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import inference_utils, launch_context, layouts, tcgen05, utils

    return SimpleNamespace(mgpu=mgpu, ir=ir, fa=fa, layouts=layouts, utils=utils, iu=inference_utils,
                           tcgen05=tcgen05, lc=launch_context)


Site = tuple[Any, str, int, int]
"""``(operation, "o" | "r" | "a", index, region)``: an operand, result or block argument of an op."""


@dataclass(frozen=True)
class SmemTile:
    """The shared-memory transform of a reference: its tile (``None``: untiled); the swizzle follows from
    the tile's minor extent in bytes (Mosaic's rule: 32, 64 or 128 bytes swizzle that much, else none)."""

    tile: tuple[int, ...] | None

    def __str__(self) -> str:
        return f"tile{self.tile}" if self.tile is not None else "untiled"


def _is_vector(m: SimpleNamespace, value: Any) -> bool:
    return isinstance(value.type, m.ir.VectorType)


def _space(m: SimpleNamespace, value: Any) -> str:
    """``reg`` (a vector), ``smem`` (a transformable shared-memory reference), ``tmem`` or ``other``."""
    if isinstance(value.type, m.ir.VectorType):
        return "reg"
    if isinstance(value.type, m.ir.MemRefType):
        if m.utils.is_tmem_ref(value):
            return "tmem"
        if m.iu.is_transformable_smem_memref(value):
            return "smem"
    return "other"


def _swizzle(m: SimpleNamespace, ref_type: Any, tile: tuple[int, ...]) -> int:
    strides, _ = m.ir.MemRefType(ref_type).get_strides_and_offset()
    tail = list(strides[len(strides) - len(tile):])
    minor = tile[tail.index(min(tail))]
    bits = minor * m.utils.bitwidth(ref_type.element_type)
    if bits % 8:
        raise UnsupportedError(f"the minor tile dim {minor} of {ref_type} is not byte aligned")
    return bits // 8 if bits // 8 in (32, 64, 128) else 16


def _value(site: Site) -> Any:
    op, kind, index, region = site
    if kind == "o":
        return op.operands[index]
    if kind == "r":
        return op.results[index]
    return op.regions[region].blocks[0].arguments[index]


def _shape(site: Site) -> tuple[int, ...]:
    return tuple(_value(site).type.shape)


def _op_text(op: Any) -> str:
    """One line naming ``op`` for messages (printed without its regions, verification or large constants: the
    full form of a loop prints its whole body)."""
    operation = getattr(op, "operation", op)
    try:
        text = operation.get_asm(assume_verified=True, skip_regions=True, large_elements_limit=8)
    except TypeError:  # bindings without those options
        text = str(operation)
    text = text.strip().split("\n", 1)[0]
    return text if len(text) < 160 else text[:157] + "..."


@dataclass
class _Reader:
    """The module's ops as an :class:`~layoutkit.infer.ssa.SsaProblem` (one variable per class of sites)."""

    m: SimpleNamespace
    arch: tuple[int, int]
    problem: SsaProblem = field(default_factory=SsaProblem)
    var_of: dict[Site, int] = field(default_factory=dict)
    sites_of: dict[int, list[Site]] = field(default_factory=dict)
    ops: list[Any] = field(default_factory=list)
    aliases: dict[tuple[int, int, int], int] = field(default_factory=dict)
    divides: dict[int, tuple[int, ...]] = field(default_factory=dict)
    not_splat: set[int] = field(default_factory=set)

    # ---- variables ------------------------------------------------------------------------------
    def var(self, sites: Sequence[Site]) -> int:
        first = sites[0]
        v = self.problem.variable(f"{_op_text(first[0].operation if hasattr(first[0], 'operation') else first[0])}"
                                  f" :{first[1]}{first[2]}")
        self.sites_of[v] = list(sites)
        for s in sites:
            if s in self.var_of:
                raise UnsupportedError(f"site {s[1]}{s[2]} of {_op_text(s[0])} is read twice")
            self.var_of[s] = v
        shape = _shape(first)

        def fits(ls: tuple[Hashable, ...]) -> bool:
            return self.fits(ls[0], shape)

        self.problem.add(Constraint((v,), fits, None, f"the shape {shape} of {_op_text(first[0])}"))
        space = _space(self.m, _value(first))
        if space == "reg":
            default = self.strided_default(_value(first).type)
            if default is not None:
                self.problem.default(v, [default])
        elif space == "smem":
            self.problem.default(v, [SmemTile(None)])
        return v

    def ref(self, op: Any, index: int) -> int:
        """The variable of operand ``index`` (a memory reference): its producer's."""
        site = (op, "o", index, 0)
        producer = self.producer(site)
        v = self.var_of.get(producer)
        if v is None:
            raise UnsupportedError(f"the reference operand {index} of {_op_text(op)} comes from "
                                   f"{_op_text(producer[0])}, which layoutkit's Mosaic GPU pass does not read")
        self.var_of[site] = v
        self.sites_of[v].append(site)
        return v

    def fits(self, layout: Any, shape: tuple[int, ...]) -> bool:
        fa = self.m.fa
        if isinstance(layout, SmemTile):
            tile = layout.tile or ()
            return len(tile) <= len(shape) and all(
                s % t == 0 for s, t in zip(shape[len(shape) - len(tile):], tile))
        if isinstance(layout, self.m.tcgen05.TMEMLayout):
            try:
                layout.tiling.tile_shape(shape)
            except ValueError:
                return False
            return True
        if isinstance(layout, (fa.WGSplatFragLayout, fa.WGStridedFragLayout)):
            return tuple(layout.shape) == shape
        spec = to_spec(layout)
        base = spec.base_tile
        return len(shape) >= len(base) and all(s % b == 0 for s, b in zip(shape[len(shape) - len(base):], base))

    def strided_default(self, ty: Any) -> Any:
        """Mosaic's default: the widest strided layout of up to 8 bytes per thread that divides the vector."""
        bits = self.m.utils.bitwidth(ty.element_type)
        if bits % 8:
            return None
        size = math.prod(ty.shape)
        if size % WARPGROUP:
            return None
        vec = min(8 // (bits // 8), size // WARPGROUP)
        while vec > 0 and size % (vec * WARPGROUP):
            vec //= 2
        return self.m.fa.WGStridedFragLayout(tuple(ty.shape), vec) if vec else None

    def producer(self, site: Site) -> Site:
        value = _value(site)
        owner = value.owner
        if isinstance(owner, self.m.ir.Block):
            parent = owner.owner
            region = list(parent.regions).index(owner.region)
            return (parent, "a", list(owner.arguments).index(value), region)
        op = owner.opview if hasattr(owner, "opview") else owner
        return (op, "r", list(op.results).index(value), 0)

    # ---- layouts --------------------------------------------------------------------------------
    def is_splat(self, layout: Any) -> bool:
        return isinstance(layout, self.m.fa.WGSplatFragLayout)

    def is_tiled(self, layout: Any) -> bool:
        return isinstance(layout, self.m.fa.TiledLayout)

    def reduce(self, layout: Any, axes: tuple[int, ...], rank: int, keep_dims: bool, shape: tuple[int, ...]
               ) -> Any | None:
        """The layout of ``reduce(x, axes)`` when ``x`` has ``layout`` (None: not one Mosaic reduces)."""
        fa = self.m.fa
        out_shape = tuple(s for d, s in enumerate(shape) if d not in axes) if not keep_dims else tuple(
            1 if d in axes else s for d, s in enumerate(shape))
        if isinstance(layout, fa.WGSplatFragLayout):
            return fa.WGSplatFragLayout(out_shape)
        if isinstance(layout, fa.WGStridedFragLayout):
            trailing = math.prod(shape[axes[-1] + 1:])
            if trailing % (layout.vec_size * WARPGROUP):
                return None
            return fa.WGStridedFragLayout(out_shape, layout.vec_size)
        if keep_dims:
            return None
        spec = to_spec(layout)
        untiled = rank - len(spec.base_tile)
        tiled_axes = tuple(a - untiled for a in axes if a >= untiled)
        if not tiled_axes:
            return layout
        if len(tiled_axes) == len(spec.base_tile):
            return None  # every tiled dim reduced away: no tiled layout is left
        return from_spec(reduce_tiled(spec, tiled_axes))

    def relayout_ok(self, src: Any, dst: Any, bits: int, strict: bool) -> bool:
        """Whether Mosaic's lowering moves a value from ``src`` to ``dst`` (``strict``: only from a splat)."""
        fa = self.m.fa
        if src == dst:
            return True
        if isinstance(src, fa.WGSplatFragLayout):
            if isinstance(dst, fa.WGStridedFragLayout):
                return tuple(src.shape) == tuple(dst.shape)
            if isinstance(dst, fa.TiledLayout):
                return all(s % b == 0 for s, b in zip(src.shape, dst.base_tile_shape))
            return False
        if strict or not (isinstance(src, fa.TiledLayout) and isinstance(dst, fa.TiledLayout)):
            return False
        return _supported_tiled_relayout(fa, src, dst, bits)

    # ---- walking --------------------------------------------------------------------------------
    def walk(self, op: Any) -> None:
        op = op.opview if hasattr(op, "opview") else op
        name = op.operation.name
        if name in ("scf.yield", "scf.condition"):
            return
        m = self.m
        if m.iu.should_have_layout(op) or m.iu.should_have_tmem_layout(op) or m.iu.should_have_transforms(op):
            rule = RULES.get(name)
            if rule is None:
                raise UnsupportedError(f"layoutkit's Mosaic GPU pass does not read {name}: {_op_text(op)}")
            rule(self, op)
            self.ops.append(op)
        if name != "mosaic_gpu.custom_primitive":
            for region in op.operation.regions:
                for block in region:
                    for inner in block.operations:
                        self.walk(inner)

    def vector_sites(self, op: Any) -> list[Site]:
        out = [(op, "o", i, 0) for i, v in enumerate(op.operands) if _is_vector(self.m, v)]
        return out + [(op, "r", i, 0) for i, v in enumerate(op.results) if _is_vector(self.m, v)]

    def finish(self) -> None:
        """The edges: a producer's layout reaches each consumer unchanged, or from a splat."""
        seen: set[tuple[int, int]] = set()
        for v, sites in list(self.sites_of.items()):
            for s in sites:
                if not _is_vector(self.m, _value(s)):
                    continue
                bits = self.m.utils.bitwidth(_value(s).type.element_type)
                if s[1] == "o":
                    pairs = [(self.var_of[self.producer(s)], v)]
                else:
                    pairs = [(v, self.var_of[(u.owner.opview if hasattr(u.owner, "opview") else u.owner, "o",
                                              u.operand_number, 0)])
                             for u in _value(s).uses]
                for src, dst in pairs:
                    if src == dst or (src, dst) in seen:
                        continue
                    seen.add((src, dst))
                    self.edge(src, dst, bits, True, f"the use of {self.problem.names[src]} by "
                                                    f"{self.problem.names[dst]}")
        self.saturate_not_splat(seen)

    def saturate_not_splat(self, strict: set[tuple[int, int]]) -> None:
        """A value no splat may hold passes that on to every value it reaches unchanged (a strict use of a
        non-splat layout is that layout): stating it up front keeps the search from trying splats there."""
        fa = self.m.fa
        pinned = {v for v, (layout, _) in self.problem.pins.items() if not isinstance(layout, fa.WGSplatFragLayout)}
        todo = list(self.not_splat | pinned)
        reached = set(todo)
        succ: dict[int, list[int]] = {}
        for a, b in strict:
            succ.setdefault(a, []).append(b)
        while todo:
            v = todo.pop()
            for w in succ.get(v, ()):
                if w not in reached:
                    reached.add(w)
                    todo.append(w)
        for v in sorted(reached - self.not_splat - set(self.problem.pins)):
            self.not_of(v, (fa.WGSplatFragLayout,), f"{self.problem.names[v]} receives a value no splat holds")

    def edge(self, src: int, dst: int, bits: int, strict: bool, what: str) -> None:
        def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
            if src in known and dst not in known:
                yield dst, known[src], strict and not self.is_splat(known[src])
            elif dst in known and src not in known:
                yield src, known[dst], False

        self.problem.add(Constraint((src, dst), lambda ls: self.relayout_ok(ls[0], ls[1], bits, strict), propose,
                                    what, early=True))

    def not_of(self, v: int, kinds: tuple[type, ...], what: str) -> None:
        if self.m.fa.WGSplatFragLayout in kinds:
            self.not_splat.add(v)
        self.problem.add(Constraint((v,), lambda ls: not isinstance(ls[0], kinds), None, what))

    # ---- writing --------------------------------------------------------------------------------
    def write(self, solution: Mapping[int, Any]) -> None:
        m = self.m
        ir = m.ir
        per_op: dict[Any, dict[str, dict[int, Any]]] = {}
        for v, sites in self.sites_of.items():
            for op, kind, index, _ in sites:
                if kind == "a":
                    continue
                per_op.setdefault(op, {"o": {}, "r": {}})[kind][index] = solution[v]
        for op, sides in per_op.items():
            def pick(kind: str, space: str, op: Any = op, sides: Any = sides) -> list[tuple[Any, Any]]:
                values = op.operands if kind == "o" else op.results
                return [(values[i], sides[kind][i]) for i in sorted(sides[kind]) if _space(m, values[i]) == space]

            iu = m.iu
            for kind, side, check in (("o", "in", iu.should_have_in_layout), ("r", "out", iu.should_have_out_layout)):
                if check(op):
                    op.attributes[f"{side}_layouts"] = ir.ArrayAttr.get(
                        [m.layouts.to_layout_attr(x) for _, x in pick(kind, "reg")])
            for kind, side, check in (("o", "in", iu.should_have_in_tmem_layout),
                                      ("r", "out", iu.should_have_out_tmem_layout)):
                if check(op):
                    op.attributes[f"{side}_tmem_layouts"] = ir.ArrayAttr.get(
                        [m.layouts.to_layout_attr(x) for _, x in pick(kind, "tmem")])
            for kind, side, check in (("o", "in", iu.should_have_in_transforms),
                                      ("r", "out", iu.should_have_out_transforms)):
                if check(op):
                    op.attributes[f"{side}_transforms"] = ir.ArrayAttr.get(
                        [self.transforms_attr(value.type, x) for value, x in pick(kind, "smem")])

    def transforms_attr(self, ref_type: Any, layout: SmemTile) -> Any:
        m = self.m
        if layout.tile is None:
            return m.ir.ArrayAttr.get([])
        return m.ir.ArrayAttr.get([m.mgpu.TileTransformAttr.get(layout.tile),
                                   m.mgpu.SwizzleTransformAttr.get(m.mgpu.SwizzlingMode(
                                       _swizzle(m, ref_type, layout.tile)))])


def _supported_tiled_relayout(fa: Any, src: Any, dst: Any, bits: int) -> bool:
    """The tiled-to-tiled relayouts Mosaic GPU's lowering implements (a fact about its lowering)."""
    pairs = {(fa.WGMMA_LAYOUT, fa.WGMMA_TRANSPOSED_LAYOUT), (fa.WGMMA_TRANSPOSED_LAYOUT, fa.WGMMA_LAYOUT),
             (fa.TCGEN05_LAYOUT, fa.TCGEN05_TRANSPOSED_LAYOUT), (fa.TCGEN05_TRANSPOSED_LAYOUT, fa.TCGEN05_LAYOUT)}
    if (src, dst) in pairs:
        return True
    if (src, dst) == (fa.WGMMA_LAYOUT_UPCAST_2X, fa.WGMMA_LAYOUT):
        return bool(fa.can_relayout_wgmma_2x_to_wgmma(bits))
    if (src, dst) == (fa.WGMMA_LAYOUT_UPCAST_4X, fa.WGMMA_LAYOUT_UPCAST_2X):
        return bool(fa.can_relayout_wgmma_4x_to_wgmma_2x(bits))
    if (src, dst) == (fa.WGMMA_LAYOUT_UPCAST_4X, fa.WGMMA_LAYOUT):
        return bool(fa.can_relayout_wgmma_4x_to_wgmma_2x(bits) and fa.can_relayout_wgmma_2x_to_wgmma(bits))
    return bool(src == fa.tmem_native_layout(src.vector_length) and dst == fa.tmem_native_layout(dst.vector_length))


# ---- op rules ---------------------------------------------------------------------------------------
Rule = Callable[[_Reader, Any], None]


def _pointwise(r: _Reader, op: Any) -> None:
    r.var(r.vector_sites(op))


def _undef(r: _Reader, op: Any) -> None:
    r.var([(op, "r", 0, 0)])


def _constant(r: _Reader, op: Any) -> None:
    ir, fa = r.m.ir, r.m.fa
    v = r.var([(op, "r", 0, 0)])
    value = op.attributes["value"]
    if isinstance(value, ir.DenseElementsAttr) and ir.DenseElementsAttr(value).is_splat:
        r.problem.pin(v, fa.WGSplatFragLayout(tuple(op.result.type.shape)), _op_text(op))
    else:
        r.not_of(v, (fa.WGSplatFragLayout,), f"a non-splat constant is no splat: {_op_text(op)}")


def _broadcast(r: _Reader, op: Any) -> None:
    ir = r.m.ir
    if isinstance(op.operands[0].type, ir.ShapedType):
        raise UnsupportedError(f"layoutkit's Mosaic GPU pass reads vector.broadcast from scalars only: {_op_text(op)}")
    v = r.var([(op, "r", 0, 0)])
    r.problem.pin(v, r.m.fa.WGSplatFragLayout(tuple(op.result.type.shape)), _op_text(op))


def _layout_cast(r: _Reader, op: Any) -> None:
    fa = r.m.fa
    src = r.var([(op, "o", 0, 0)])
    dst = r.var([(op, "r", 0, 0)])
    layout = r.m.layouts.from_layout_attr(op.attributes["new_layout"])
    shape = tuple(op.result.type.shape)
    if not r.fits(layout, shape):
        raise MosaicLayoutError(f"Cannot cast to layout {layout}: the layout is not compatible with the operand "
                                f"shape {shape} in {_op_text(op)}.", (_op_text(op), layout))
    r.problem.pin(dst, layout, _op_text(op))
    bits = r.m.utils.bitwidth(op.operands[0].type.element_type)
    r.edge(src, dst, bits, False, f"the relayout {_op_text(op)}")
    del fa


def _reduction(r: _Reader, op: Any) -> None:
    r.var([(op, "o", 0, 0)])


def _reduce_candidates(r: _Reader, small: Any, shape: tuple[int, ...], axes: tuple[int, ...]) -> list[Any]:
    """Layouts of the reduced operand that reduce to ``small`` (Mosaic's candidates, in its order)."""
    fa = r.m.fa
    from jax.experimental.mosaic.gpu import tcgen05

    if isinstance(small, fa.WGSplatFragLayout):
        return [fa.WGSplatFragLayout(shape)]
    if isinstance(small, fa.WGStridedFragLayout):
        return [fa.WGStridedFragLayout(shape, small.vec_size)]
    cands = [fa.WGMMA_LAYOUT, fa.WGMMA_TRANSPOSED_LAYOUT, fa.TCGEN05_LAYOUT, fa.TCGEN05_TRANSPOSED_LAYOUT,
             tcgen05.TMEM_NATIVE_LAYOUT]
    if shape[-1] % 16 == 0:
        cands.append(tcgen05.fa_m64_collective_layout(shape[-1]))
    cands.append(small)
    out = []
    for c in cands:
        if len(c.base_tile_shape) > len(shape):
            continue
        if r.reduce(c, axes, len(shape), False, shape) == small:
            out.append(c)
    return out


def _multi_reduction(r: _Reader, op: Any) -> None:
    fa = r.m.fa
    src = r.var([(op, "o", 0, 0)])
    out = r.var([(op, "o", 1, 0), (op, "r", 0, 0)])
    shape = tuple(op.operands[0].type.shape)
    axes = tuple(sorted(int(a) for a in op.attributes["reduction_dims"]))
    r.not_of(src, (fa.WGStridedFragLayout,), f"a reduction reads no strided layout: {_op_text(op)}")

    def check(ls: tuple[Hashable, ...]) -> bool:
        return r.reduce(ls[0], axes, len(shape), False, shape) == ls[1]

    def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
        if src in known and out not in known:
            small = r.reduce(known[src], axes, len(shape), False, shape)
            if small is not None:
                yield out, small, True
        elif out in known and src not in known:
            for c in _reduce_candidates(r, known[out], shape, axes):
                yield src, c, False

    r.problem.add(Constraint((src, out), check, propose, _op_text(op)))


def _broadcast_in_dim(r: _Reader, op: Any) -> None:
    fa = r.m.fa
    src = r.var([(op, "o", 0, 0)])
    dst = r.var([(op, "r", 0, 0)])
    src_shape, dst_shape = tuple(op.operands[0].type.shape), tuple(op.result.type.shape)
    dims = tuple(int(d) for d in op.attributes["broadcast_dimensions"])
    dst_to_src = {d: s for s, d in enumerate(dims)}
    kept = tuple(d for d in range(len(dst_shape)) if d in dst_to_src and src_shape[dst_to_src[d]] == 1
                 and dst_shape[d] > 1)
    collapsed = tuple(d for d in range(len(dst_shape)) if d not in dst_to_src)

    def reduced(layout: Any) -> Any | None:
        shape = dst_shape
        if kept:
            layout = r.reduce(layout, kept, len(shape), True, shape)
            shape = tuple(1 if d in kept else s for d, s in enumerate(shape))
            if layout is None:
                return None
        if collapsed:
            layout = r.reduce(layout, collapsed, len(shape), False, shape)
        return layout

    def check(ls: tuple[Hashable, ...]) -> bool:
        s, d = ls
        if reduced(d) != s:
            return False
        if isinstance(s, fa.WGStridedFragLayout) and isinstance(d, fa.WGStridedFragLayout):
            return bool(fa.is_supported_strided_layout_broadcast(s, d, dims))
        return type(s) is type(d)

    def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
        if dst in known and src not in known:
            small = reduced(known[dst])
            if small is not None:
                yield src, small, True
        elif src in known and dst not in known:
            s = known[src]
            if isinstance(s, fa.WGSplatFragLayout):
                yield dst, fa.WGSplatFragLayout(dst_shape), False
            elif isinstance(s, fa.WGStridedFragLayout):
                d = fa.WGStridedFragLayout(dst_shape, s.vec_size)
                if fa.is_supported_strided_layout_broadcast(s, d, dims):
                    yield dst, d, False
            elif collapsed and not kept:
                for c in _reduce_candidates(r, s, dst_shape, collapsed):
                    yield dst, c, False

    r.problem.add(Constraint((src, dst), check, propose, _op_text(op)))


def _shape_cast(r: _Reader, op: Any) -> None:
    src = r.var([(op, "o", 0, 0)])
    dst = r.var([(op, "r", 0, 0)])
    a, b = tuple(op.operands[0].type.shape), tuple(op.result.type.shape)

    def check(ls: tuple[Hashable, ...]) -> bool:
        return _reshape(r, ls[0], a, b) == ls[1] and _reshape(r, ls[1], b, a) == ls[0]

    def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
        if src in known and dst not in known:
            out = _reshape(r, known[src], a, b)
            if out is not None:
                yield dst, out, True
        elif dst in known and src not in known:
            out = _reshape(r, known[dst], b, a)
            if out is not None:
                yield src, out, True

    r.problem.add(Constraint((src, dst), check, propose, _op_text(op)))


def _reshape(r: _Reader, layout: Any, source: tuple[int, ...], target: tuple[int, ...]) -> Any | None:
    """The layout of a reshaped value when Mosaic reshapes it for free (None otherwise)."""
    fa = r.m.fa
    if isinstance(layout, fa.WGSplatFragLayout):
        return fa.WGSplatFragLayout(target)
    if isinstance(layout, fa.WGStridedFragLayout):
        return fa.WGStridedFragLayout(target, layout.vec_size)
    base = layout.base_tile_shape
    if len(target) < len(base) or len(source) < len(base):
        return None
    if any(s % t for t, s in zip(base, source[len(source) - len(base):])):
        return None
    minor = len(base) - 1
    if (minor and source[len(source) - minor:] != target[len(target) - minor:]) or target[-len(base)] % base[0]:
        return None
    return layout


def _for(r: _Reader, op: Any) -> None:
    m = r.m
    block = op.regions[0].blocks[0]
    yield_op = block.operations[len(block.operations) - 1].opview
    for index, o in enumerate(op.operands):
        k = index - 3
        sites = [(op, "a", k + 1, 0), (op, "r", k, 0), (yield_op, "o", k, 0)]
        if _is_vector(m, o):
            r.var([(op, "o", index, 0), *sites])
        elif isinstance(o.type, m.ir.MemRefType) and (m.utils.is_smem_ref(o) or m.utils.is_cluster_smem_ref(o)):
            v = r.ref(op, index)
            for site in sites:
                r.var_of[site] = v
                r.sites_of[v].append(site)


def _while(r: _Reader, op: Any) -> None:
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    cond = before.operations[len(before.operations) - 1].opview
    yld = after.operations[len(after.operations) - 1].opview
    for op_, kind, idx, _ in r.vector_sites(op):
        if kind == "o":
            r.var([(op, "o", idx, 0), (op, "a", idx, 0), (yld, "o", idx, 0)])
        else:
            r.var([(op, "r", idx, 0), (op, "a", idx, 1), (cond, "o", idx + 1, 0)])
        del op_


def _index_switch(r: _Reader, op: Any) -> None:
    yields = []
    for region in op.regions:
        block = region.blocks[0]
        yields.append(block.operations[len(block.operations) - 1].opview)
    for _, kind, idx, _ in r.vector_sites(op):
        if kind == "r":
            r.var([(op, "r", idx, 0)] + [(y, "o", idx, 0) for y in yields])


def _barrier(r: _Reader, op: Any) -> None:
    for i, o in enumerate(op.operands):
        if _is_vector(r.m, o):
            r.var([(op, "o", i, 0), (op, "r", i, 0)])


def _not_splat_result(r: _Reader, op: Any) -> None:
    v = r.var([(op, "r", 0, 0)])
    r.not_of(v, (r.m.fa.WGSplatFragLayout,), f"{op.operation.name} makes no splat: {_op_text(op)}")


def _vector_load(r: _Reader, op: Any) -> None:
    v = r.var([(op, "r", 0, 0)])
    r.not_of(v, (r.m.fa.WGSplatFragLayout,), f"a load makes no splat: {_op_text(op)}")
    if _space(r.m, op.operands[0]) == "smem":
        s = r.ref(op, 0)
        _transferable(r, v, s, op.operands[0].type, _optimized(op, False), _op_text(op))


def _vector_store(r: _Reader, op: Any) -> None:
    v = r.var([(op, "o", 0, 0)])
    if _space(r.m, op.operands[1]) == "smem":
        s = r.ref(op, 1)
        _transferable(r, v, s, op.operands[1].type, _optimized(op, True), _op_text(op))
    if op.operation.name == "mosaic_gpu.async_store_smem":
        fa = r.m.fa
        r.not_of(v, (fa.WGStridedFragLayout, fa.WGSplatFragLayout), f"an async store takes a tiled layout: "
                                                                      f"{_op_text(op)}")


def _operand_only(r: _Reader, op: Any) -> None:
    r.var([(op, "o", 0, 0)])


def _mma_tiling(r: _Reader, v: int, ref: Any, bits: int, what: str, allow_unswizzled: bool = False) -> None:
    """The reference holds an MMA operand: its tile is ``(8, swizzle bytes * 8 / bits)`` (transposed when the
    reference is), for a swizzle of 32, 64 or 128 bytes (16 too when unswizzled operands are allowed)."""
    transposed = bool(r.m.utils.is_memref_transposed(r.m.ir.MemRefType(ref.type)))
    swizzles = (16, 32, 64, 128) if allow_unswizzled else (32, 64, 128)
    valid = {(8, s * 8 // bits) for s in swizzles}
    dims = tuple(ref.type.shape)[-2:]

    def logical(tile: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return tile if tile is None or not transposed else tuple(reversed(tile))

    def check(ls: tuple[Hashable, ...]) -> bool:
        layout = ls[0]
        assert isinstance(layout, SmemTile)
        return layout.tile is not None and len(layout.tile) == 2 and logical(layout.tile) in valid

    def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
        if v in known:
            return
        for sw in (128, 64, 32):
            elems = sw * 8 // bits
            tile = (elems, 8) if transposed else (8, elems)
            if all(d % t == 0 for d, t in zip(dims, tile)):
                yield v, SmemTile(tile), False

    r.problem.add(Constraint((v,), check, propose, what))


def _divides(r: _Reader, v: int, multiple: tuple[int, ...], what: str) -> None:
    old = r.divides.get(v)
    if old is None:
        r.divides[v] = multiple
    else:
        n = min(len(old), len(multiple))
        r.divides[v] = tuple(math.gcd(a, b) for a, b in zip(old[len(old) - n:], multiple[len(multiple) - n:])) if n \
            else ()
    def check(ls: tuple[Hashable, ...]) -> bool:
        layout: Any = ls[0]
        if isinstance(layout, SmemTile):
            tile = layout.tile
            if tile is None:
                return True
        elif isinstance(layout, (r.m.fa.WGStridedFragLayout, r.m.fa.WGSplatFragLayout)):
            return True
        else:
            tile = tuple(layout.base_tile_shape)
        return len(tile) <= len(multiple) and all(mu % t == 0 for t, mu in zip(reversed(tile), reversed(multiple)))

    r.problem.add(Constraint((v,), check, None, what))


def _tmem_layout(r: _Reader, shape: tuple[int, ...], collective: bool, packing: int, op: Any) -> Any:
    """The TMEM layout Mosaic gives an MMA operand of ``shape`` (128 rows: one row per lane; 64 rows: half
    the lanes, or the collective M=64 layout)."""
    t = r.m.tcgen05
    if len(shape) != 2 or shape[1] % packing or shape[0] not in (128, 64):
        raise MosaicLayoutError(f"Cannot assign TMEM layout to a TMEM reference of shape {shape} in {_op_text(op)}",
                                (_op_text(op), shape))
    if shape[0] == 128:
        return t.tmem_default_layout(packing)
    return t.tmem_m64_collective_layout(shape[1], packing) if collective else t.tmem_half_lane_layout(shape[1],
                                                                                                   packing)


def _pin_checked(r: _Reader, v: int, layout: Any, shape: tuple[int, ...], op: Any, role: str) -> None:
    if not r.fits(layout, shape):
        kind = "TMEM layout" if isinstance(layout, r.m.tcgen05.TMEMLayout) else "layout"
        raise MosaicLayoutError(f"Cannot assign {kind} {layout} to the {role} of {_op_text(op)}: the layout is not "
                                f"compatible with the shape {shape}.", (_op_text(op), layout))
    r.problem.pin(v, layout, _op_text(op))


def _wgmma(r: _Reader, op: Any) -> None:
    m, fa = r.m, r.m.fa
    acc = r.var([(op, "o", 0, 0), (op, "r", 0, 0)])
    _pin_checked(r, acc, fa.WGMMA_LAYOUT, tuple(op.results[0].type.shape), op, "accumulator")
    b_ref = op.operands[2]
    bits = m.utils.bitwidth(b_ref.type.element_type)
    b = r.ref(op, 2)
    _mma_tiling(r, b, b_ref, bits, _op_text(op))
    a_val = op.operands[1]
    if _space(m, a_val) == "smem":
        a = r.ref(op, 1)
        a_t = bool(m.utils.is_memref_transposed(m.ir.MemRefType(a_val.type)))
        b_t = bool(m.utils.is_memref_transposed(m.ir.MemRefType(b_ref.type)))
        flip = a_t != b_t

        def same(ls: tuple[Hashable, ...]) -> bool:
            ta, tb = ls[0].tile, ls[1].tile  # type: ignore[attr-defined]
            return ta == (tuple(reversed(tb)) if flip and tb is not None else tb)

        def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
            if b in known and a not in known:
                tb = known[b].tile  # type: ignore[attr-defined]
                yield a, SmemTile(tuple(reversed(tb)) if flip and tb is not None else tb), True
            elif a in known and b not in known:
                ta = known[a].tile  # type: ignore[attr-defined]
                yield b, SmemTile(tuple(reversed(ta)) if flip and ta is not None else ta), True

        r.problem.add(Constraint((a, b), same, propose, _op_text(op)))
    else:
        a = r.var([(op, "o", 1, 0)])
        layout = fa.WGMMA_LAYOUT_8BIT if m.utils.bitwidth(a_val.type.element_type) == 8 else fa.WGMMA_LAYOUT
        _pin_checked(r, a, layout, tuple(a_val.type.shape), op, "'a' operand")


def _mma(r: _Reader, op: Any) -> None:
    from jax.experimental.mosaic.gpu.mma import MMALayouts

    layouts = MMALayouts(op.operands[1].type.element_type)
    acc = r.var([(op, "o", 0, 0), (op, "r", 0, 0)])
    _pin_checked(r, acc, layouts.acc, tuple(op.results[0].type.shape), op, "accumulator")
    a = r.var([(op, "o", 1, 0)])
    _pin_checked(r, a, layouts.lhs, tuple(op.operands[1].type.shape), op, "'a' operand")
    b = r.var([(op, "o", 2, 0)])
    _pin_checked(r, b, layouts.rhs, tuple(op.operands[2].type.shape), op, "'b' operand")


def _tcgen05_mma(r: _Reader, op: Any) -> None:
    m = r.m
    t = m.tcgen05
    collective = bool(op.attributes["collective"]) if "collective" in op.attributes else False
    acc_val = op.operands[0]
    acc = r.ref(op, 0)
    acc_shape = tuple(acc_val.type.shape)
    try:
        acc_layout = _tmem_layout(r, acc_shape, collective, 1, op)
    except MosaicLayoutError:
        raise
    if not r.fits(acc_layout, acc_shape):
        raise MosaicLayoutError(f"Cannot assign TMEM layout {acc_layout} to the accumulator of a tcgen05 MMA op: the "
                                f"layout is not compatible with the accumulator shape {acc_shape}.", _op_text(op))
    r.problem.pin(acc, acc_layout, _op_text(op))
    names = [n for n in ("accumulator", "a", "b", "accumulate", "a_scale", "b_scale", "a_sparse_metadata")]
    del names
    b_val = op.operands[2]
    bits = m.utils.bitwidth(b_val.type.element_type)
    b = r.ref(op, 2)
    _mma_tiling(r, b, b_val, bits, _op_text(op))
    if acc_shape[0] == 64 and not collective:
        n = tuple(b_val.type.shape)[1]
        elems = next(8 * sw // bits for sw in (128, 64, 32, 16) if 8 * sw // bits <= n // 2)
        b_t = bool(m.utils.is_memref_transposed(m.ir.MemRefType(b_val.type)))
        _divides(r, b, (elems, 8) if b_t else (8, elems), _op_text(op))
    a_val = op.operands[1]
    a = r.ref(op, 1)
    if _space(m, a_val) == "tmem":
        packing = 32 // m.utils.bitwidth(a_val.type.element_type)
        a_layout = _tmem_layout(r, tuple(a_val.type.shape), collective, packing, op)
        _pin_checked(r, a, a_layout, tuple(a_val.type.shape), op, "'a' operand")
    else:
        _mma_tiling(r, a, a_val, bits, _op_text(op))
    operands = list(op.operands)
    meta = getattr(op, "a_sparse_metadata", None)
    if meta is not None:
        k = operands.index(meta)
        v = r.ref(op, k)
        _pin_checked(r, v, t.sparse_meta_layout(), tuple(meta.type.shape), op, "'a_sparse_metadata' operand")
    a_scale, b_scale = getattr(op, "a_scale", None), getattr(op, "b_scale", None)
    if (a_scale is None) != (b_scale is None):
        raise MosaicLayoutError(f"Expecting neither or both scales to be present in {_op_text(op)}", _op_text(op))
    if a_scale is not None:
        for scale in (a_scale, b_scale):
            assert scale is not None
            k = operands.index(scale)
            v = r.ref(op, k)
            layout = (t.b_scales_m64_collective_layout() if collective and scale == b_scale and acc_shape[0] == 64
                      else t.scales_layout())
            _pin_checked(r, v, layout, tuple(scale.type.shape), op, "scale operand")


def _with_transforms(r: _Reader, op: Any) -> None:
    m = r.m
    v = r.ref(op, 0)
    site = (op, "r", 0, 0)
    r.var_of[site] = v
    r.sites_of[v].append(site)
    transforms = [m.layouts.from_transform_attr(x) for x in op.attributes["transforms"]]
    tile: tuple[int, ...] | None = None
    if transforms and isinstance(transforms[0], m.lc.TileTransform):
        tile = tuple(transforms[0].tiling)
        rest = transforms[1:]
    else:
        rest = transforms
    if rest and not (len(rest) == 1 and isinstance(rest[0], m.mgpu.SwizzlingMode) and tile is not None):
        raise UnsupportedError(f"layoutkit's Mosaic GPU pass reads a tile and a swizzle only: {_op_text(op)}")
    if rest and int(rest[0]) != _swizzle(m, op.operands[0].type, tile or ()):
        raise UnsupportedError(f"Cannot honor caller-provided swizzle {rest[0]} in {_op_text(op)}: the tile's "
                               f"swizzle is {_swizzle(m, op.operands[0].type, tile or ())}")
    layout = SmemTile(tile)
    shape = tuple(op.operands[0].type.shape)
    if tile is not None and not r.fits(layout, shape):
        raise MosaicLayoutError(f"Cannot apply tiling {tile} to memref with shape {shape}.", _op_text(op))
    r.problem.pin(v, layout, _op_text(op))


def _memref_load_store(r: _Reader, op: Any) -> None:
    k = 0 if op.operation.name == "memref.load" else 1
    r.ref(op, k)


def _tied(r: _Reader, a: int, b: int, a_to_b: Callable[[Any], Any | None], b_to_a: Callable[[Any], Any | None],
          what: str) -> None:
    """``b`` is ``a_to_b(a)`` and ``a`` is ``b_to_a(b)`` (None: no layout does), each side forcing the other."""
    def check(ls: tuple[Hashable, ...]) -> bool:
        return a_to_b(ls[0]) == ls[1] and b_to_a(ls[1]) == ls[0]

    def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
        if a in known and b not in known:
            out = a_to_b(known[a])
            if out is not None:
                yield b, out, True
        elif b in known and a not in known:
            out = b_to_a(known[b])
            if out is not None:
                yield a, out, True

    r.problem.add(Constraint((a, b), check, propose, what))


def _same_ref(r: _Reader, op: Any) -> None:
    """The result is the operand reference (a cast, a cluster view): one variable."""
    v = r.ref(op, 0)
    site = (op, "r", 0, 0)
    r.var_of[site] = v
    r.sites_of[v].append(site)


def _aliased_slice(r: _Reader, op: Any, memory: int) -> None:
    """A slice's result: one variable per (memory, alias id, offset), so slices of one allocation at one offset
    share a layout; ``memory`` keeps shared-memory and tensor-memory alias ids apart."""
    site = (op, "r", 0, 0)
    if "alias_id" in op.attributes:
        key = (memory, int(r.m.ir.IntegerAttr(op.attributes["alias_id"]).value), int(op.offset.value))
        v = r.aliases.get(key)
        if v is not None:
            r.var_of[site] = v
            r.sites_of[v].append(site)
            return
        r.aliases[key] = r.var([site])
        return
    r.var([site])


def _slice_smem(r: _Reader, op: Any) -> None:
    _aliased_slice(r, op, 0)


def _known_gcd(r: _Reader, a: int, value: Any) -> int:
    """The largest divisor of ``a`` that the dynamic ``value`` is known to be a multiple of."""
    ir = r.m.ir
    if isinstance(value.type, ir.VectorType):
        return 1
    owner = value.owner
    owner = owner.opview if hasattr(owner, "opview") else owner
    if getattr(owner, "operation", None) is not None and owner.operation.name == "arith.constant":
        return math.gcd(a, int(ir.IntegerAttr(owner.attributes["value"]).value))
    g, n, f = 1, a, 2
    factors = []
    while f * f <= n:
        while n % f == 0:
            factors.append(f)
            n //= f
        f += 1
    if n > 1:
        factors.append(n)
    for factor in factors:
        if r.m.utils.is_known_divisible(value, g * factor):
            g *= factor
    return g


def _subview(r: _Reader, op: Any) -> None:
    ir = r.m.ir
    src = r.ref(op, 0)
    dst = r.var([(op, "r", 0, 0)])
    if any(st != 1 for st in op.static_strides):
        raise UnsupportedError(f"layoutkit's Mosaic GPU pass reads unit-stride subviews only: {_op_text(op)}")
    multiple: list[int] = []
    dynamic = 0
    src_shape = tuple(op.operands[0].type.shape)
    for i, size in enumerate(op.static_sizes):
        offset: Any = op.static_offsets[i]
        if offset == ir.ShapedType.get_dynamic_size():
            offset = op.offsets[dynamic]
            dynamic += 1
        if ir.ShapedType.is_dynamic_size(size):
            multiple = []
            continue
        g = math.gcd(size, src_shape[i])
        g = math.gcd(g, offset) if isinstance(offset, int) else _known_gcd(r, g, offset)
        multiple.append(g)
    _divides(r, src, tuple(multiple), _op_text(op))
    _tied(r, src, dst, lambda x: x, lambda x: x, _op_text(op))


def _transpose_tile(layout: Any, permutation: tuple[int, ...]) -> Any | None:
    if not isinstance(layout, SmemTile):
        return layout
    if layout.tile is None:
        return layout
    tile = layout.tile
    offset = len(permutation) - len(tile)
    tail = permutation[len(permutation) - len(tile):]
    if any(d < offset for d in tail):
        return None
    return SmemTile(tuple(tile[d - offset] for d in tail))


def _memref_transpose(r: _Reader, op: Any) -> None:
    ir = r.m.ir
    src = r.ref(op, 0)
    dst = r.var([(op, "r", 0, 0)])
    perm = tuple(ir.AffineDimExpr(e).position for e in op.permutation.value.results)
    inv = tuple(perm.index(i) for i in range(len(perm)))
    if _space(r.m, op.operands[0]) != "smem":
        _tied(r, src, dst, lambda x: x, lambda x: x, _op_text(op))
        return
    _tied(r, src, dst, lambda x: _transpose_tile(x, perm), lambda x: _transpose_tile(x, inv), _op_text(op))


def _async_index_vars(r: _Reader, op: Any, base: int) -> None:
    """Vector indices of a TMA gather / scatter: Mosaic's TMA index layouts (16 or 4 rows per warp)."""
    fa = r.m.fa
    for i, idx in enumerate(op.indices):
        if _is_vector(r.m, idx):
            v = r.var([(op, "o", base + i, 0)])
            rows = tuple(idx.type.shape)[0]
            if rows % 16 == 0:
                layout = fa.TMA_INDICES_LAYOUT
            elif rows % 4 == 0:
                layout = fa.TMA_INDICES_4_LAYOUT
            else:
                raise MosaicLayoutError(f"Unsupported TMA index shape {tuple(idx.type.shape)} in {_op_text(op)}",
                                        _op_text(op))
            r.problem.pin(v, layout, _op_text(op))


def _minor_divisible(r: _Reader, v: int, divisor: int, what: str) -> None:
    def check(ls: tuple[Hashable, ...]) -> bool:
        tile = ls[0].tile  # type: ignore[attr-defined]
        return not tile or tile[-1] % divisor == 0

    r.problem.add(Constraint((v,), check, None, what))


def _async_copy(r: _Reader, op: Any) -> None:
    m = r.m
    load = op.operation.name == "mosaic_gpu.async_load"
    multiple: list[int] = []
    for i, (size, index) in enumerate(zip(op.slice_lengths, op.indices)):
        if size == -1:
            continue
        if _is_vector(m, index):
            if i != 0:
                raise UnsupportedError("Only leading gather dimensions allowed. "
                                       f"(layoutkit's Mosaic GPU pass: {_op_text(op)})")
            gmem = op.source if load else op.destination
            if len(gmem.type.shape) != 2:
                raise UnsupportedError("Only 2D gathers/scatters for async load/store are supported. "
                                       f"(layoutkit's Mosaic GPU pass: {_op_text(op)})")
            multiple.append(size)
            continue
        multiple.append(_known_gcd(r, size, index))
    k = 1 if load else 0
    v = r.ref(op, k)
    _divides(r, v, tuple(multiple), _op_text(op))
    if any(_is_vector(m, idx) for idx in op.indices):
        divisor = (1024 // 4) // m.utils.bitwidth(op.source.type.element_type)
        lengths = [s for s in op.slice_lengths if s != -1]
        if lengths and lengths[-1] % divisor:
            raise MosaicLayoutError(f"Cannot assign layout to async load with gather indices since minor dim="
                                    f"{lengths[-1]} is not divisible by divisor={divisor} bits.", _op_text(op))
        _minor_divisible(r, v, divisor, _op_text(op))
    _async_index_vars(r, op, 3 if load else 2)


def _async_prefetch(r: _Reader, op: Any) -> None:
    _async_index_vars(r, op, 1)


def _warp_map(r: _Reader, op: Any) -> None:
    for i, o in enumerate(op.operands):
        if _space(r.m, o) in ("smem", "tmem"):
            v = r.ref(op, i)
            site = (op, "a", i, 0)
            r.var_of[site] = v
            r.sites_of[v].append(site)


def _transferable(r: _Reader, reg: int, smem: int, ref_type: Any, optimized: str, what: str) -> None:
    """A register value moves to or from a shared-memory reference: the pairs of register layout and tile
    Mosaic's lowering moves (untiled: a strided or splat-free untiled move; tiled: a transfer plan its
    lowering derives; transposed references: the transposed WGMMA / TCGEN05 layouts)."""
    m, fa = r.m, r.m.fa
    ref_type = m.ir.MemRefType(ref_type)
    shape = tuple(ref_type.shape)
    strides = tuple(ref_type.get_strides_and_offset()[0])
    bits = m.utils.bitwidth(ref_type.element_type)

    def ok(ls: tuple[Hashable, ...]) -> bool:
        layout, tile = ls
        return _smem_transfer_ok(m, tile.tile, layout, shape, strides, bits, optimized)  # type: ignore[attr-defined]

    def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
        if reg in known and smem not in known:
            if isinstance(known[reg], fa.TiledLayout) and len(shape) >= 2:
                seen = set()
                for tile in _conjured_tiles(m, ref_type):
                    multiple = r.divides.get(smem)
                    if multiple is not None:
                        n = min(len(multiple), len(tile))
                        tile = tuple(math.gcd(a, b) for a, b in zip(multiple[len(multiple) - n:], tile[len(tile) - n:]))
                    if tile not in seen:
                        seen.add(tile)
                        yield smem, SmemTile(tile), False
        elif smem in known and reg not in known:
            tile = known[smem].tile  # type: ignore[attr-defined]
            if tile is None:
                default = r.strided_default(ref_type)
                if default is not None:
                    yield reg, default, False
                return
            hopper = tuple(r.arch) == (9, 0)
            cands = [fa.WGMMA_LAYOUT, fa.WGMMA_TRANSPOSED_LAYOUT] if hopper else [
                fa.TCGEN05_LAYOUT, fa.TCGEN05_TRANSPOSED_LAYOUT, fa.WGMMA_LAYOUT, fa.WGMMA_TRANSPOSED_LAYOUT]
            for c in cands:
                yield reg, c, False

    r.problem.add(Constraint((reg, smem), ok, propose, what))


def _conjured_tiles(m: SimpleNamespace, ref_type: Any) -> Iterable[tuple[int, ...]]:
    """Mosaic's tiles for a reference moved from a tiled register layout: ``(8, swizzle elements)`` (transposed
    on a transposed reference) for swizzles of 128, 64 and 32 bytes that divide the minor dim."""
    shape = tuple(ref_type.shape)
    if len(shape) < 2:
        return
    bits = m.utils.bitwidth(ref_type.element_type)
    strides = tuple(ref_type.get_strides_and_offset()[0])
    rank = len(strides)
    order = sorted(range(rank), key=lambda d: (strides[d], d))
    if {order[0], order[1]} != {rank - 1, rank - 2}:
        return
    minor, second = shape[order[0]], shape[order[1]]
    if second % 8:
        return
    transposed = order[0] != rank - 1
    for sw in (128, 64, 32):
        elems = 8 * sw // bits
        if minor % elems == 0:
            yield (elems, 8) if transposed else (8, elems)


def _smem_transfer_ok(m: SimpleNamespace, tile: tuple[int, ...] | None, layout: Any, shape: tuple[int, ...],
                      strides: tuple[int, ...], bits: int, optimized: str) -> bool:
    fa = m.fa
    if not isinstance(layout, fa.TiledLayout):
        return tile is None
    transposed = len(strides) >= 2 and strides[-1] > strides[-2]
    tiling = tile or ()
    if transposed:
        return len(tiling) == 2 and layout in (fa.TCGEN05_TRANSPOSED_LAYOUT, fa.WGMMA_TRANSPOSED_LAYOUT)
    if optimized == "unoptimized" or (not tiling and optimized == "downgradable"):
        return True
    from jax.experimental.mosaic.gpu import dialect_lowering

    if not tiling:
        tiling = shape
        tiled = dialect_lowering.tile_strides(strides, tiling)
        swizzle = 16
    else:
        tiled = dialect_lowering.tile_strides(strides, tiling)
        tail = list(tiled[len(tiled) - len(tiling):])
        minor = tiling[tail.index(min(tail))]
        swizzle = m.iu.compute_swizzle(minor, bits)
    rank = len(tiling)
    first = len(shape) - rank
    nested_shape = tuple((shape[i] // tiling[i - first], tiling[i - first]) if i >= first and tiling[i - first] != 1
                         else (shape[i],) for i in range(len(shape)))
    nested_strides = tuple((tiled[i], tiled[i + rank]) if i >= first and tiling[i - first] != 1 else (tiled[i],)
                           for i in range(len(shape)))
    try:
        fa.plan_tiled_transfer(nested_shape, nested_strides, layout, bits, swizzle)
    except fa.TransferPlanDerivationError:
        return False
    return True


def _optimized(op: Any, store: bool) -> str:
    flag = op.attributes["optimized"] if "optimized" in op.attributes else None
    if flag is None:
        return "downgradable" if store else "optimized"
    return "optimized" if bool(flag) else "unoptimized"


def _tmem_transfer_ok(m: SimpleNamespace, tmem: Any, reg: Any, columns: int, bits: int) -> bool:
    """Whether Mosaic's lowering moves a TMEM layout to a register layout (tcgen05.ld / st shapes)."""
    fa, t = m.fa, m.tcgen05
    if not isinstance(reg, fa.TiledLayout) or not isinstance(tmem, t.TMEMLayout):
        return False
    packing = tmem.vector_length
    if reg == fa.TCGEN05_LAYOUT and tmem == t.tmem_default_layout(packing):
        return True
    if reg == tmem.as_tiled_layout() and packing * bits == 32:
        return True
    if reg == fa.TMEM_NATIVE_LAYOUT and tmem == t.tmem_default_layout(packing) and (
            (bits == 16 and packing == 1) or bits == 32):
        return True
    if columns % 16 == 0 and packing <= columns // 2 and reg == fa.WGMMA_LAYOUT and \
            tmem == t.tmem_half_lane_layout(columns, packing):
        return True
    return bool(columns % 16 == 0 and packing <= 8 and reg == t.fa_m64_collective_layout(columns)
                and tmem == t.tmem_m64_collective_layout(columns, packing))


def _tmem_transferable(r: _Reader, reg: int, tmem: int, shape: tuple[int, ...], bits: int, what: str) -> None:
    m, fa, t = r.m, r.m.fa, r.m.tcgen05
    columns = shape[1]

    def ok(ls: tuple[Hashable, ...]) -> bool:
        return _tmem_transfer_ok(m, ls[1], ls[0], columns, bits)

    def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
        if tmem in known and reg not in known:
            layout = known[tmem]
            cands = [fa.TCGEN05_LAYOUT, layout.as_tiled_layout(), fa.TMEM_NATIVE_LAYOUT,  # type: ignore[attr-defined]
                     fa.WGMMA_LAYOUT]
            if columns % 16 == 0:
                cands.append(t.fa_m64_collective_layout(columns))
            for c in cands:
                if _tmem_transfer_ok(m, layout, c, columns, bits):
                    yield reg, c, False
        elif reg in known and tmem not in known and isinstance(known[reg], fa.TiledLayout):
            for packing in dict.fromkeys([32 // bits, 1]):
                cands = [t.tmem_default_layout(packing)]
                if columns % 16 == 0 and packing <= columns // 2:
                    cands.append(t.tmem_half_lane_layout(columns, packing))
                if columns % 16 == 0 and packing <= 8:
                    cands.append(t.tmem_m64_collective_layout(columns, packing))
                for c in cands:
                    if _tmem_transfer_ok(m, c, known[reg], columns, bits):
                        yield tmem, c, False

    r.problem.add(Constraint((reg, tmem), ok, propose, what))


def _tmem_layout_cast(r: _Reader, op: Any) -> None:
    m = r.m
    v = r.ref(op, 0)
    site = (op, "r", 0, 0)
    r.var_of[site] = v
    r.sites_of[v].append(site)
    layout = m.layouts.from_layout_attr(op.attributes["new_layout"])
    layout = m.tcgen05.TMEMLayout(layout.tiling, layout.warp_dims, layout.lane_dims, layout.vector_dim)
    shape = tuple(op.operands[0].type.shape)
    if not r.fits(layout, shape):
        raise MosaicLayoutError(f"Cannot cast to TMEM layout {layout} in {_op_text(op)}: the layout is not "
                                f"compatible with the operand shape {shape}.", _op_text(op))
    r.problem.pin(v, layout, _op_text(op))


def _tmem_alloc(r: _Reader, op: Any) -> None:
    m = r.m
    res = r.var([(op, "r", 0, 0)])
    shape = tuple(op.results[0].type.shape)
    collective = bool(op.attributes["collective"]) if "collective" in op.attributes else False
    try:
        r.problem.default(res, [_tmem_layout(r, shape, collective, 1, op)])
    except MosaicLayoutError:
        pass
    smem = r.var([(op, "o", 0, 0)])
    r.problem.pin(smem, SmemTile(None), _op_text(op))
    del m


def _tmem_ref_only(r: _Reader, op: Any) -> None:
    r.ref(op, 0)


def _async_load_tmem(r: _Reader, op: Any) -> None:
    src = r.ref(op, 0)
    dst = r.var([(op, "r", 0, 0)])
    shape = tuple(op.operands[0].type.shape)
    _tmem_transferable(r, dst, src, shape, r.m.utils.bitwidth(op.operands[0].type.element_type), _op_text(op))


def _async_store_tmem(r: _Reader, op: Any) -> None:
    src = r.var([(op, "o", 0, 0)])
    dst = r.ref(op, 1)
    shape = tuple(op.operands[0].type.shape)
    _tmem_transferable(r, src, dst, shape, r.m.utils.bitwidth(op.operands[0].type.element_type), _op_text(op))


def _smem_to_tmem(r: _Reader, op: Any) -> None:
    m = r.m
    src = r.ref(op, 0)
    dst = r.ref(op, 1)
    bits = m.utils.bitwidth(op.operands[1].type.element_type)
    _pin_checked(r, dst, m.tcgen05.tmem_default_layout(32 // bits), tuple(op.operands[1].type.shape), op,
                 "TMEM destination")
    _mma_tiling(r, src, op.operands[0], bits, _op_text(op), allow_unswizzled=True)


def _sparse_meta_to_tmem(r: _Reader, op: Any) -> None:
    src = r.ref(op, 0)
    dst = r.ref(op, 1)
    r.problem.pin(dst, r.m.tcgen05.sparse_meta_layout(), _op_text(op))
    r.problem.pin(src, SmemTile(None), _op_text(op))


def _scales_to_tmem(r: _Reader, op: Any) -> None:
    t = r.m.tcgen05
    src = r.ref(op, 0)
    dst = r.ref(op, 1)
    r.problem.pin(src, SmemTile(None), _op_text(op))
    k_tiles = tuple(op.operands[1].type.shape)[1] // 4
    layout = (t.b_scales_m64_collective_layout() if tuple(op.operands[0].type.shape) == (1, k_tiles, 64, 16)
              else t.scales_layout())
    r.problem.pin(dst, layout, _op_text(op))


def _slice_tmem(r: _Reader, op: Any) -> None:
    r.ref(op, 0)
    _aliased_slice(r, op, 1)


def _sliced(r: _Reader, op: Any, big: int, small: int, what: str) -> None:
    """A slice keeps its operand's layout; no splat or strided layout is sliced."""
    fa = r.m.fa
    _tied(r, big, small, lambda x: x, lambda x: x, what)
    r.not_of(small, (fa.WGSplatFragLayout, fa.WGStridedFragLayout), f"no splat or strided layout is sliced: {what}")


def _extract_strided_slice(r: _Reader, op: Any) -> None:
    ir = r.m.ir
    if any(ir.IntegerAttr(x).value != 1 for x in op.attributes["strides"]):
        raise UnsupportedError(f"layoutkit's Mosaic GPU pass reads unit-stride slices only: {_op_text(op)}")
    src = r.var([(op, "o", 0, 0)])
    dst = r.var([(op, "r", 0, 0)])
    _divides(r, src, tuple(ir.IntegerAttr(x).value for x in op.attributes["offsets"]), _op_text(op))
    _sliced(r, op, src, dst, _op_text(op))


def _insert_strided_slice(r: _Reader, op: Any) -> None:
    ir, fa = r.m.ir, r.m.fa
    if any(ir.IntegerAttr(x).value != 1 for x in op.attributes["strides"]):
        raise UnsupportedError(f"layoutkit's Mosaic GPU pass reads unit-stride slices only: {_op_text(op)}")
    src = r.var([(op, "o", 0, 0)])
    dst = r.var([(op, "o", 1, 0)])
    res = r.var([(op, "r", 0, 0)])
    _divides(r, dst, tuple(ir.IntegerAttr(x).value for x in op.attributes["offsets"]), _op_text(op))
    _tied(r, dst, src, lambda x: x, lambda x: x, _op_text(op))
    _tied(r, dst, res, lambda x: x, lambda x: x, _op_text(op))
    _tied(r, src, res, lambda x: x, lambda x: x, _op_text(op))
    r.not_of(dst, (fa.WGSplatFragLayout, fa.WGStridedFragLayout), f"no splat or strided layout is sliced: "
                                                                 f"{_op_text(op)}")


def _vector_extract(r: _Reader, op: Any) -> None:
    src = r.var([(op, "o", 0, 0)])
    shape = tuple(op.operands[0].type.shape)
    if not _is_vector(r.m, op.results[0]):
        r.problem.pin(src, r.m.fa.WGSplatFragLayout(shape), _op_text(op))
        return
    if len(op.operands) > 1:
        raise UnsupportedError(f"layoutkit's Mosaic GPU pass reads static extract positions only: {_op_text(op)}")
    dst = r.var([(op, "r", 0, 0)])
    _divides(r, src, shape, _op_text(op))
    _divides(r, dst, tuple(op.results[0].type.shape), _op_text(op))
    _sliced(r, op, src, dst, _op_text(op))


def _expand_shape(r: _Reader, op: Any) -> None:
    m = r.m
    if m.utils.is_memref_transposed(m.ir.MemRefType(op.operands[0].type)):
        raise UnsupportedError(f"Transposed memrefs are not supported in ExpandShapeOp: {_op_text(op)}")
    src = r.ref(op, 0)
    dst = r.var([(op, "r", 0, 0)])
    rev: list[int] = []
    for dim, idx in zip(reversed(list(op.static_output_shape)), reversed(list(op.reassociation))):
        if m.ir.ShapedType.is_dynamic_size(dim) or len(idx) > 1:
            break
        rev.append(dim)
    _divides(r, src, tuple(reversed(rev)), _op_text(op))
    _tied(r, src, dst, lambda x: x, lambda x: x, _op_text(op))


def _collapse_tile(layout: Any, shape: tuple[int, ...], groups: tuple[int, ...]) -> Any | None:
    """The tile of a collapsed reference (Mosaic's rule: each group's tile is ``1*, partial?, full*``)."""
    if layout.tile is None:
        return layout
    rev_tile = list(layout.tile)[::-1]
    rev_shape = list(shape[len(shape) - len(layout.tile):])[::-1]
    if any(sz % t for sz, t in zip(rev_shape, rev_tile)):
        return None
    out: list[int] = []
    for n in groups[::-1]:
        if len(rev_tile) < n:
            return None
        ts, ss = rev_tile[:n], rev_shape[:n]
        full = 0
        for t, sz in zip(ts, ss):
            if t != sz:
                break
            full += 1
        rest = ts[full:]
        if rest and any(t != 1 for t in rest[1:]):
            return None
        out.append(math.prod(ts))
        rev_tile, rev_shape = rev_tile[n:], rev_shape[n:]
        if not rev_tile:
            break
    return SmemTile(tuple(out[::-1]))


def _collapse_shape(r: _Reader, op: Any) -> None:
    m = r.m
    groups = tuple(len(m.ir.ArrayAttr(g)) for g in op.attributes["reassociation"])
    if not groups:
        raise UnsupportedError(f"CollapseShapeOp with empty reassociation is not supported: {_op_text(op)}")
    src = r.ref(op, 0)
    dst = r.var([(op, "r", 0, 0)])
    ty = m.ir.MemRefType(op.operands[0].type)
    shape = tuple(ty.shape)
    if list(ty.get_strides_and_offset()[0]) != list(m.utils.get_contiguous_strides(shape)):
        raise UnsupportedError(f"CollapseShapeOp with non-contiguous strides is not supported: {_op_text(op)}")

    def check(ls: tuple[Hashable, ...]) -> bool:
        return _collapse_tile(ls[0], shape, groups) == ls[1]

    def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
        if src in known and dst not in known:
            out = _collapse_tile(known[src], shape, groups)
            if out is not None:
                yield dst, out, True

    r.problem.add(Constraint((src, dst), check, propose, _op_text(op)))


def _custom_primitive(r: _Reader, op: Any) -> None:
    m = r.m
    in_layouts = iter(op.attributes["in_layouts"])
    in_transforms = iter(op.attributes["in_transforms"])
    for i, operand in enumerate(op.operands):
        if _is_vector(m, operand):
            v = r.var([(op, "o", i, 0)])
            r.problem.pin(v, m.layouts.from_layout_attr(next(in_layouts)), _op_text(op))
        elif _space(m, operand) == "smem":
            site = (op, "o", i, 0)
            source = r.var_of.get(r.producer(site))
            if source is None:
                raise UnsupportedError(f"the reference operand {i} of {_op_text(op)} comes from an op layoutkit's "
                                       "Mosaic GPU pass does not read")
            v = r.var([site])
            _tied(r, source, v, lambda x: x, lambda x: x, _op_text(op))
            transforms = [m.layouts.from_transform_attr(x) for x in next(in_transforms)]
            tile = tuple(transforms[0].tiling) if transforms and isinstance(transforms[0], m.lc.TileTransform) else None
            r.problem.pin(v, SmemTile(tile), _op_text(op))
    out_layouts = iter(op.attributes["out_layouts"])
    for i, result in enumerate(op.results):
        if _is_vector(m, result):
            v = r.var([(op, "r", i, 0)])
            r.problem.pin(v, m.layouts.from_layout_attr(next(out_layouts)), _op_text(op))


def _print_layout(r: _Reader, op: Any) -> None:
    if _is_vector(r.m, op.operands[0]):
        r.var([(op, "o", 0, 0)])
    else:
        r.ref(op, 0)


def _cluster_cancel(r: _Reader, op: Any) -> None:
    v = r.ref(op, 0)
    r.problem.pin(v, SmemTile(None), _op_text(op))


RULES: dict[str, Rule] = {
    **dict.fromkeys(POINTWISE, _pointwise),
    UNDEF: _undef,
    "arith.constant": _constant,
    "vector.broadcast": _broadcast,
    "mosaic_gpu.layout_cast": _layout_cast,
    "vector.reduction": _reduction,
    "vector.multi_reduction": _multi_reduction,
    "mosaic_gpu.broadcast_in_dim": _broadcast_in_dim,
    "vector.shape_cast": _shape_cast,
    "scf.for": _for,
    "scf.while": _while,
    "scf.index_switch": _index_switch,
    "mosaic_gpu.optimization_barrier": _barrier,
    "mosaic_gpu.broadcasted_iota": _not_splat_result,
    "mosaic_gpu.multimem_load_reduce": _not_splat_result,
    "mosaic_gpu.vector_load": _vector_load,
    "mosaic_gpu.vector_store": _vector_store,
    "mosaic_gpu.debug_print": _operand_only,
    "mosaic_gpu.wgmma": _wgmma,
    "mosaic_gpu.mma": _mma,
    "mosaic_gpu.tcgen05_mma": _tcgen05_mma,
    "mosaic_gpu.with_transforms": _with_transforms,
    "memref.load": _memref_load_store,
    "memref.store": _memref_load_store,
    "memref.cast": _same_ref,
    "mosaic_gpu.get_cluster_ref": _same_ref,
    "mosaic_gpu.slice_smem": _slice_smem,
    "memref.subview": _subview,
    "memref.transpose": _memref_transpose,
    "mosaic_gpu.async_load": _async_copy,
    "mosaic_gpu.async_store": _async_copy,
    "mosaic_gpu.async_prefetch": _async_prefetch,
    "mosaic_gpu.warp_map": _warp_map,
    "mosaic_gpu.async_store_smem": _vector_store,
    "mosaic_gpu.tmem_layout_cast": _tmem_layout_cast,
    "mosaic_gpu.tmem_alloc": _tmem_alloc,
    "mosaic_gpu.tmem_dealloc": _tmem_ref_only,
    "mosaic_gpu.async_load_tmem": _async_load_tmem,
    "mosaic_gpu.async_store_tmem": _async_store_tmem,
    "mosaic_gpu.async_store_smem_to_tmem": _smem_to_tmem,
    "mosaic_gpu.async_store_sparse_metadata_smem_to_tmem": _sparse_meta_to_tmem,
    "mosaic_gpu.async_store_scales_smem_to_tmem": _scales_to_tmem,
    "mosaic_gpu.slice_tmem": _slice_tmem,
    "vector.extract_strided_slice": _extract_strided_slice,
    "vector.insert_strided_slice": _insert_strided_slice,
    "vector.extract": _vector_extract,
    "memref.expand_shape": _expand_shape,
    "memref.collapse_shape": _collapse_shape,
    "mosaic_gpu.custom_primitive": _custom_primitive,
    "mosaic_gpu.print_layout": _print_layout,
    "mosaic_gpu.try_cluster_cancel": _cluster_cancel,
    "mosaic_gpu.query_cluster_cancel": _cluster_cancel,
}
"""How each op kind the pass reads becomes variables and constraints (keyed by MLIR op name)."""


def infer_layout(module: Any, *, fuel: int = DEFAULT_FUEL, arch: tuple[int, int] = (9, 0)) -> None:
    """Set Mosaic GPU's layout attributes on ``module``'s ops with layoutkit's solver (see the module
    docstring); the contract of Mosaic's ``infer_layout``."""
    m = _mosaic()
    reader = _Reader(m, tuple(arch))  # type: ignore[arg-type]
    fa = m.fa
    try:
        for op in module.body:
            reader.walk(op)
        reader.finish()
        solution = solve(reader.problem, fuel=int(fuel), low=lambda layout: not isinstance(layout, fa.TiledLayout))
    except SsaFuelError as err:
        raise MosaicFuelError("Layout inference failed to find a solution. Consider adding layout annotations to "
                              f"your program to guide the search. ({err})", err.witness) from None
    except MosaicLayoutError:
        raise
    except SsaConflictError as err:
        raise MosaicLayoutError("Failed to infer a possible set of layouts. This should only happen if user-provided "
                                f"layout casts are unsatisfiable. layoutkit: {err}", err.witness) from None
    reader.write(solution)


__all__ = ["DEFAULT_FUEL", "MosaicFuelError", "MosaicLayoutError", "infer_layout"]
