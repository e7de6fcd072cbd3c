"""Copy instruction selection for CUDA (TileLang ``SelectCopyInstForLowering``),
``docs/reference.md#copy-instruction-selection``.

The chosen form decides which layout a copy needs (a SIMT loop fragment, a TMA-compatible shared
layout, an ldmatrix fragment), so layout inference asks for it first.  Order:

1. forced forms: ``is_gather4`` / ``is_scatter4`` (TMA gather4/scatter4), ``cluster_mask`` (multicast,
   needs a TMA bulk load), ``T.tma_copy`` (``is_tma_copy``), ``T.async_copy`` (``is_async_copy``);
2. ``prefer_instruction``: ``"tma"``, ``"cp_async"`` or ``"sync"``;
3. default: a TMA store if possible, then the synchronous forms LDSM -> STSM -> TMEM -> normal SIMT.

Preconditions: TMA needs sm_90+, global<->shared, equal dtypes, a last copied extent of a whole number
of 16 bytes and 16-byte global strides (1-D TMA: in bounds, contiguous on both sides, the shared
layout row-major linear); cp.async needs sm_80+, global->shared and equal dtypes; ldmatrix (sm_75+)
reads shared into a fragment, stmatrix (sm_90+) writes a fragment to shared; TMEM (sm_100) moves
between tensor memory and a fragment.  An explicit ``loop_layout`` is only valid for a SIMT form
(normal or cp.async): anything else raises :class:`CopySelectionError`, as TileLang does.

>>> g = CopyOperand("global", "float16", (1024, 1024), region=((0, 64), (0, 64)))
>>> s = CopyOperand("shared", "float16", (64, 64))
>>> f = CopyOperand("local.fragment", "float16", (64, 64))
>>> select_copy_instruction(g, s, "sm_80").value, select_copy_instruction(s, g, "sm_90").value
('normal', 'bulk_store')
>>> select_copy_instruction(s, f, "sm_80").value, select_copy_instruction(f, s, "sm_80").value
('ldsm', 'normal')
>>> select_copy_instruction(g, s, "sm_80", prefer_instruction="cp_async").value
'cp_async'
>>> try:
...     select_copy_instruction(s, f, "sm_80", loop_layout=object())
... except CopySelectionError as e:
...     print(str(e)[:58])
T.copy loop layout annotation requires SIMT copy; got ldsm
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from ...algebra.layout import Layout
from ...algebra.shapes import check_shape
from ...dtypes import canonical_dtype, element_bits
from ...errors import ShapeError, UnsupportedError
from .hardware import arch_number

SHARED_SCOPES = ("shared", "shared.dyn")
FRAGMENT_SCOPES = ("local.fragment",)
TMEM_SCOPES = ("shared.tmem",)


class CopyInstruction(str, Enum):
    """The lowering form of one ``T.copy``."""

    NORMAL = "normal"
    LDSM = "ldsm"
    STSM = "stsm"
    BULK_LOAD = "bulk_load"
    BULK_STORE = "bulk_store"
    CP_ASYNC = "cp_async"
    BULK_LOAD_1D = "bulk_load_1d"
    BULK_STORE_1D = "bulk_store_1d"
    TMEM_LOAD = "tmem_load"
    TMEM_STORE = "tmem_store"
    BULK_LOAD_GATHER4 = "bulk_load_gather4"
    BULK_STORE_SCATTER4 = "bulk_store_scatter4"

    @property
    def is_simt(self) -> bool:
        """Lowered as a SIMT parallel loop (its layout comes from the loop fragment)."""
        return self in (CopyInstruction.NORMAL, CopyInstruction.CP_ASYNC)

    @property
    def is_tma(self) -> bool:
        return self.value.startswith("bulk_")


class CopySelectionError(UnsupportedError):
    """No lowering form satisfies the copy's annotations (or a loop layout was given for a non-SIMT form)."""


@dataclass(frozen=True)
class CopyOperand:
    """One side of a copy: memory ``scope`` (``global``, ``shared``/``shared.dyn``,
    ``local.fragment``, ``shared.tmem``), element ``dtype``, buffer ``shape``, the copied ``region``
    as ``((min, extent), ...)`` (None: the whole buffer), the buffer's known ``layout`` (shared) and
    its element ``strides`` (global; None: row-major contiguous)."""

    scope: str
    dtype: str
    shape: tuple[int, ...]
    region: tuple[tuple[int, int], ...] | None = None
    layout: Layout | None = None
    strides: tuple[int, ...] | None = None

    def __post_init__(self):
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        object.__setattr__(self, "shape", check_shape(self.shape, "copy operand shape"))
        if self.region is not None:
            region = tuple((int(lo), int(ext)) for lo, ext in self.region)
            if len(region) != len(self.shape):
                raise ShapeError(
                    f"copy region: expected one range per dim ({len(self.shape)}); found {len(region)}: {region}"
                )
            object.__setattr__(self, "region", region)

    @property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        return self.region if self.region is not None else tuple((0, e) for e in self.shape)

    @property
    def bits(self) -> int:
        return element_bits(self.dtype)

    def is_shared(self) -> bool:
        return self.scope in SHARED_SCOPES

    def is_global(self) -> bool:
        return self.scope == "global"

    def is_fragment(self) -> bool:
        return self.scope in FRAGMENT_SCOPES

    def is_tmem(self) -> bool:
        return self.scope in TMEM_SCOPES

    def in_bounds(self) -> bool:
        return all(lo >= 0 and lo + ext <= e for (lo, ext), e in zip(self.ranges, self.shape))

    def element_strides(self) -> tuple[int, ...]:
        if self.strides is not None:
            return tuple(int(s) for s in self.strides)
        return tuple(math.prod(self.shape[d + 1 :]) for d in range(len(self.shape)))


# ---- preconditions (TileLang copy_analysis.cc) ----------------------------------------------------


def _global_strides_ok(op: CopyOperand) -> bool:
    strides = op.element_strides()
    if strides[-1] != 1:
        return False
    for s in strides[:-1]:
        nbytes = -(-s * op.bits // 8)
        if nbytes % 16 or nbytes >= 1 << 40:
            return False
    return True


def _bulk(global_op: CopyOperand, shared_op: CopyOperand, sm: int, check_last_dim: bool) -> bool:
    if sm < 90 or not global_op.is_global() or not shared_op.is_shared():
        return False
    if check_last_dim and (global_op.ranges[-1][1] * global_op.bits) % 128:
        return False
    if global_op.dtype != shared_op.dtype:
        return False
    return _global_strides_ok(global_op)


def _contiguous_global_region(op: CopyOperand) -> bool:
    expected = 1
    strides = op.element_strides()
    partial = False
    for d in range(len(op.shape) - 1, -1, -1):
        lo, ext = op.ranges[d]
        if not partial:
            if ext != 1 and op.strides is not None and strides[d] != expected:
                return False
            if lo == 0 and ext == op.shape[d]:
                expected *= op.shape[d]
            else:
                partial = True
        elif ext != 1:
            return False
    return True


def _is_linear(layout: Layout | None, shape: tuple[int, ...]) -> bool:
    if layout is None:
        return True
    if layout.input_shape != shape:
        return False
    from .swizzle import make_linear_layout

    return layout.linearized().is_equal(make_linear_layout(shape))


def _bulk_1d(global_op: CopyOperand, shared_op: CopyOperand) -> bool:
    n_shared = math.prod(e for _, e in shared_op.ranges)
    n_global = math.prod(e for _, e in global_op.ranges)
    return (
        _is_linear(shared_op.layout, shared_op.shape)
        and _contiguous_global_region(global_op)
        and n_shared == n_global
        and (n_shared * shared_op.bits) % 128 == 0
    )


@dataclass(frozen=True)
class _Facts:
    bulk_load_1d: bool
    bulk_store_1d: bool
    bulk_load: bool
    bulk_store: bool
    bulk_load_any: bool
    bulk_store_any: bool
    cp_async: bool
    ldsm: bool
    stsm: bool
    tmem_load: bool
    tmem_store: bool


def _facts(src: CopyOperand, dst: CopyOperand, sm: int, has_layout_map: bool) -> _Facts:
    in_bounds = has_layout_map and src.in_bounds() and dst.in_bounds()
    load_1d = in_bounds and _bulk(src, dst, sm, False) and _bulk_1d(src, dst)
    store_1d = in_bounds and _bulk(dst, src, sm, False) and _bulk_1d(dst, src)
    return _Facts(
        bulk_load_1d=load_1d,
        bulk_store_1d=store_1d,
        bulk_load=_bulk(src, dst, sm, True),
        bulk_store=_bulk(dst, src, sm, True),
        bulk_load_any=load_1d or _bulk(src, dst, sm, False),
        bulk_store_any=store_1d or _bulk(dst, src, sm, False),
        cp_async=sm >= 80 and src.is_global() and dst.is_shared() and src.dtype == dst.dtype,
        ldsm=sm >= 75 and src.is_shared() and dst.is_fragment(),
        stsm=sm >= 90 and src.is_fragment() and dst.is_shared(),
        tmem_load=100 <= sm <= 110 and src.is_tmem() and dst.is_fragment(),
        tmem_store=100 <= sm <= 110 and src.is_fragment() and dst.is_tmem(),
    )


def _tma(f: _Facts, allow_load: bool, allow_store: bool, check_last_dim: bool) -> CopyInstruction | None:
    if allow_load and f.bulk_load_1d:
        return CopyInstruction.BULK_LOAD_1D
    if allow_store and f.bulk_store_1d:
        return CopyInstruction.BULK_STORE_1D
    if allow_load and (f.bulk_load if check_last_dim else f.bulk_load_any):
        return CopyInstruction.BULK_LOAD
    if allow_store and (f.bulk_store if check_last_dim else f.bulk_store_any):
        return CopyInstruction.BULK_STORE
    return None


def _sync(f: _Facts) -> CopyInstruction:
    if f.ldsm:
        return CopyInstruction.LDSM
    if f.stsm:
        return CopyInstruction.STSM
    if f.tmem_load:
        return CopyInstruction.TMEM_LOAD
    if f.tmem_store:
        return CopyInstruction.TMEM_STORE
    return CopyInstruction.NORMAL


def select_copy_instruction(
    src: CopyOperand,
    dst: CopyOperand,
    arch: str | int = "sm_80",
    *,
    prefer_instruction: str | None = None,
    is_tma_copy: bool = False,
    is_async_copy: bool = False,
    is_gather4: bool = False,
    is_scatter4: bool = False,
    cluster_mask: int = 0,
    disable_tma: bool = False,
    disable_tma_lower: bool = False,
    enable_async_copy: bool = True,
    loop_layout: object = None,
    has_layout_map: bool = True,
) -> CopyInstruction:
    """The lowering form of ``T.copy(src, dst)`` on ``arch`` (see the module doc).

    ``disable_tma`` is the copy's annotation, ``disable_tma_lower`` / ``enable_async_copy`` the pass
    configs; ``has_layout_map`` is True during layout inference (1-D TMA needs it).
    """
    for op, name in ((src, "src"), (dst, "dst")):
        if not isinstance(op, CopyOperand):
            raise ShapeError(f"select_copy_instruction: {name} must be a CopyOperand; found {type(op).__name__}")
    sm = arch_number(arch)
    where = f"T.copy({src.scope} {src.dtype}{list(src.shape)} -> {dst.scope} {dst.dtype}{list(dst.shape)}, sm_{sm})"
    inst = _select(src, dst, sm, where, prefer_instruction, is_tma_copy, is_async_copy, is_gather4, is_scatter4,
                   cluster_mask, disable_tma, disable_tma_lower, enable_async_copy, has_layout_map)
    if loop_layout is not None and not inst.is_simt:
        raise CopySelectionError(
            f"T.copy loop layout annotation requires SIMT copy; got {inst.value} for {where}. "
            "Remove loop_layout or change the copy pattern (expected: normal or cp_async)."
        )
    return inst


def _select(src, dst, sm, where, prefer, is_tma, is_async, gather4, scatter4, cluster_mask, disable_tma,
            disable_tma_lower, enable_async, has_layout_map) -> CopyInstruction:
    if gather4:
        return CopyInstruction.BULK_LOAD_GATHER4
    if scatter4:
        return CopyInstruction.BULK_STORE_SCATTER4
    f = _facts(src, dst, sm, has_layout_map)
    tma_reason = (f"T.tma_copy() requires a TMA-capable target (sm_90+) and a global<->shared copy with equal "
                  f"dtypes, 16-byte rows and strides; not available for {where}")
    if cluster_mask:
        if f.bulk_load:
            return CopyInstruction.BULK_LOAD
        raise CopySelectionError(
            f"cluster_mask=0x{cluster_mask:x} requires a descriptor TMA bulk load, which {where} cannot use"
        )
    if is_tma:
        inst = _tma(f, True, True, True)
        if inst is None:
            raise CopySelectionError(tma_reason)
        return inst
    if is_async:
        if f.cp_async:
            return CopyInstruction.CP_ASYNC
        raise CopySelectionError(
            f"T.async_copy needs cp.async (sm_80+), a global->shared copy and equal dtypes; {where} has none of that"
        )
    if prefer is not None:
        key = str(prefer).lower()
        if key == "tma":
            if disable_tma or disable_tma_lower:
                raise CopySelectionError(f"prefer_instruction='tma' conflicts with disabled TMA for {where}")
            inst = _tma(f, True, True, True)
            if inst is None:
                raise CopySelectionError("prefer_instruction='tma' could not be honored: " + tma_reason)
            return inst
        if key == "cp_async":
            if not enable_async:
                raise CopySelectionError(
                    f"prefer_instruction='cp_async' conflicts with enable_async_copy=False ({where})"
                )
            if f.cp_async:
                return CopyInstruction.CP_ASYNC
            raise CopySelectionError(f"prefer_instruction='cp_async' could not be honored for {where}")
        if key == "sync":
            return _sync(f)
        raise CopySelectionError(f"unsupported prefer_instruction={prefer!r}; expected 'tma', 'cp_async' or 'sync'")
    if not disable_tma and not disable_tma_lower:
        inst = _tma(f, False, True, True)
        if inst is not None:
            return inst
    return _sync(f)


def copy_layout_requirement(inst: CopyInstruction | str) -> str:
    """What the chosen form asks of layout inference.

    ``"simt-loop"``: the copy is a parallel loop; its fragment follows the loop layout (normal,
    cp.async, and ldmatrix/stmatrix, which TileLang also infers through the SIMT loop);
    ``"tma-shared"``: the shared side gets a TMA-compatible layout (a Hopper swizzle for stores, or
    linear); ``"tma-linear"``: 1-D TMA, the shared buffer must stay row-major linear; ``"tmem"``: the
    fragment follows the tensor-memory layout.

    >>> copy_layout_requirement("bulk_store"), copy_layout_requirement(CopyInstruction.LDSM)
    ('tma-shared', 'simt-loop')
    """
    inst = CopyInstruction(inst)
    if inst in (CopyInstruction.TMEM_LOAD, CopyInstruction.TMEM_STORE):
        return "tmem"
    if inst in (CopyInstruction.BULK_LOAD_1D, CopyInstruction.BULK_STORE_1D):
        return "tma-linear"
    if inst.is_tma:
        return "tma-shared"
    return "simt-loop"


def tma_shared_layout(shape: Sequence[int], dtype: object) -> Layout:
    """The shared layout TileLang gives a TMA store's source when none is known: the Hopper rule with
    ``k_major=True`` (a 128/64/32B swizzle, else linear).

    >>> tma_shared_layout((64, 64), "float16").swizzle.kind
    'full'
    """
    from .swizzle import make_linear_layout, make_wgmma_swizzled_layout

    dims = check_shape(shape, "TMA shared buffer shape")
    if len(dims) < 2:
        return make_linear_layout(dims, dtype)
    return make_wgmma_swizzled_layout(dims, dtype)


TMA_MAX_BOX_DIM = 256
"""Largest extent of one TMA box dimension."""


def tma_linear_layout(shape: Sequence[int], fixed: Sequence[int] = ()) -> Layout:
    """TileLang's ``MakeTmaLinearLayout``: the shared layout a TMA copy gives a buffer with none.
    Outputs in physical order: the ``fixed`` dims (copied at extent 1, e.g. a pipeline stage), then
    for every dim longer than a box (and a whole number of boxes) its box index, then the positions
    inside the box.

    >>> print(tma_linear_layout((2, 64, 512), fixed=(0,)))
    Layout((2, 64, 512) -> (2, 2, 64, 256), transform: (_i, _j, _k) -> (_i, _k // 256, _j, _k % 256))
    """
    from ...algebra.nodes import Const, floordiv, floormod
    from ...algebra.shapes import placeholder

    dims = check_shape(shape, "TMA shared buffer shape")
    keep, outer, inner = [], [], []
    for d, n in enumerate(dims):
        v = placeholder(d, n)
        if d in fixed:
            keep.append(v)
        elif n > TMA_MAX_BOX_DIM and n % TMA_MAX_BOX_DIM == 0:
            outer.append(floordiv(v, Const(TMA_MAX_BOX_DIM)))
            inner.append(floormod(v, Const(TMA_MAX_BOX_DIM)))
        else:
            inner.append(v)
    return Layout.from_exprs(dims, keep + outer + inner)


def tma_atomic_add_layout(shape: Sequence[int], dtype: object, fixed: Sequence[int] = ()) -> Layout:
    """TileLang's ``MakeTMAAtomicAddSharedLayout``: the layout a TMA atomic add (``T.atomic_add(dst,
    src_shared, use_tma=True)``) proposes for its shared source of ``shape`` (rank >= 2) when it has
    none.  For 16- and 32-bit elements on rows a multiple of 8, the widest bank swizzle whose chunk
    row (8, 4 or 2 vectors of 128 bits) divides the last dim; otherwise the TMA linear layout
    (``fixed`` the dims the op covers at extent 1).

    >>> print(tma_atomic_add_layout((16, 16), "float32").output_shape)
    (1, 2, 128)
    >>> tma_atomic_add_layout((16, 24), "float32").swizzle.kind
    'quarter'
    >>> print(tma_atomic_add_layout((16, 12), "float32"))
    Layout((16, 12) -> (16, 12), transform: (_i, _j) -> (_i, _j))
    """
    from .swizzle import make_bank_swizzled_layout

    dims = check_shape(shape, "TMA atomic add shared buffer shape")
    if len(dims) < 2:
        raise ShapeError(f"tma_atomic_add_layout: expected a shared buffer of rank >= 2; found {list(dims)}")
    bits = element_bits(dtype)
    if bits in (16, 32) and dims[-2] % 8 == 0:
        vec = 128 // bits
        for kind, per in (("full", 8), ("half", 4), ("quarter", 2)):
            if dims[-1] % (vec * per) == 0:
                return make_bank_swizzled_layout(dims, dtype, kind)
    return tma_linear_layout(dims, fixed)


def tma_inferred_layout(inst: CopyInstruction | str, shape: Sequence[int], dtype: object,
                        fixed: Sequence[int] = ()) -> Layout | None:
    """The layout TileLang's TMA copy proposes (free level) for its shared buffer of ``shape``
    (pipeline stage dims first, listed in ``fixed``) when the buffer has none: a TMA store of rank
    >= 2 takes the Hopper swizzle of its last two dims (expanded over leading dims), or the TMA linear
    layout when that swizzle is linear; a TMA load takes the TMA linear layout; 1-D TMA needs the
    buffer as it is (None).

    >>> print(tma_inferred_layout("bulk_store", (64, 64), "float16").output_shape)
    (1, 8, 512)
    >>> tma_inferred_layout("bulk_store_1d", (64,), "float16") is None
    True
    """
    inst = CopyInstruction(inst)
    dims = check_shape(shape, "TMA shared buffer shape")
    if inst in (CopyInstruction.BULK_LOAD_1D, CopyInstruction.BULK_STORE_1D) or not inst.is_tma:
        return None
    if inst == CopyInstruction.BULK_STORE and len(dims) >= 2:
        from .swizzle import make_linear_layout

        tile = tma_shared_layout(dims[-2:], dtype)
        if not tile.is_equal(make_linear_layout(dims[-2:], dtype)):
            return tile.expand(dims[:-2]) if len(dims) > 2 else tile
    return tma_linear_layout(dims, fixed)
