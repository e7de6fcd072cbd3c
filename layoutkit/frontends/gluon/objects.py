"""Gluon's layout objects (``triton.experimental.gluon.language``) <-> layoutkit, exactly.

:func:`from_gluon` gives the :class:`~layoutkit.Fragment` of a distributed layout on a shape (the slots
``(thread, register)`` of every element, replicas for broadcasts) or the :class:`~layoutkit.Layout` of a
shared one (logical coordinate -> element offset, padding included); :func:`to_gluon` gives back a
``BlockedLayout`` where one is exact, else a ``DistributedLinearLayout`` (fragments) or a
``SharedLinearLayout`` (shared layouts).  Both go through :mod:`.encodings`, whose maps are Triton's own
(``gl.to_linear_layout``; the tests compare them on every class).  triton is imported only when a Gluon
object is made or read: an :class:`~layoutkit.errors.UnsupportedError` names the ``gluon`` extra when it
is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...algebra.layout import Layout
from ...algebra.linear import F2Linear
from ...errors import ShapeError, UnsupportedError
from ...fragment.fragment import Fragment
from .encodings import (
    LANE,
    REG,
    WARP,
    Blocked,
    DotOperand,
    Encoding,
    Linear,
    NvidiaMma,
    NVMMAShared,
    PaddedShared,
    Shared,
    Slice,
    SwizzledShared,
    blocked_of,
)


def gluon_language() -> Any:
    """``triton.experimental.gluon.language``, or a typed error naming the extra that provides it."""
    try:
        from triton.experimental.gluon import language
    except ImportError as err:
        raise UnsupportedError("Gluon layouts need triton 3.9 (install layoutkit's 'gluon' extra); "
                               f"importing it failed: {err}") from None
    return language


def encoding_of(obj: Any) -> tuple[Encoding, tuple[int, ...] | None]:
    """The encoding of a Gluon layout object, and the shape it carries (linear and padded layouts)."""
    name = type(obj).__name__
    if name == "BlockedLayout":
        if obj.cga_layout:
            raise UnsupportedError(f"{obj}: multi-CTA (cga_layout) layouts are not read")
        return Blocked(*(tuple(int(x) for x in v) for v in (obj.size_per_thread, obj.threads_per_warp,
                                                            obj.warps_per_cta, obj.order))), None
    if name == "SliceLayout":
        parent, _ = encoding_of(obj.parent)
        return Slice(int(obj.dim), parent), None  # type: ignore[arg-type]
    if name == "DotOperandLayout":
        parent, _ = encoding_of(obj.parent)
        return DotOperand(int(obj.operand_index), parent, int(obj.k_width)), None  # type: ignore[arg-type]
    if name == "NVMMADistributedLayout":
        return NvidiaMma(int(obj.version[0]), int(obj.version[1]), tuple(obj.warps_per_cta),
                         tuple(obj.instr_shape)), None
    if name == "DistributedLinearLayout":
        return Linear(tuple(map(tuple, obj.reg_bases)), tuple(map(tuple, obj.lane_bases)),
                      tuple(map(tuple, obj.warp_bases)), tuple(map(tuple, obj.block_bases))), tuple(obj.shape)
    if name == "SwizzledSharedLayout":
        return SwizzledShared(int(obj.vec), int(obj.per_phase), int(obj.max_phase), tuple(obj.order)), None
    if name == "NVMMASharedLayout":
        return NVMMAShared(int(obj.swizzle_byte_width), int(obj.element_bitwidth), bool(obj.transposed),
                           bool(obj.fp4_padded)), None
    if name == "PaddedSharedLayout":
        iv, pd = zip(*obj.interval_padding_pairs)
        return PaddedShared(tuple(iv), tuple(pd), tuple(map(tuple, obj.offset_bases))), tuple(obj.shape)
    raise UnsupportedError(f"from_gluon: {name} is not one of the layouts read (BlockedLayout, SliceLayout, "
                           "DotOperandLayout, NVMMADistributedLayout, DistributedLinearLayout, SwizzledSharedLayout, "
                           "NVMMASharedLayout, PaddedSharedLayout)")


def gluon_of(enc: Encoding, shape: Sequence[int] | None = None) -> Any:
    """The Gluon object of an encoding (``shape``: needed by linear and padded ones)."""
    gl = gluon_language()
    if isinstance(enc, Blocked):
        return gl.BlockedLayout(list(enc.size_per_thread), list(enc.threads_per_warp), list(enc.warps_per_cta),
                                list(enc.order))
    if isinstance(enc, Slice):
        return gl.SliceLayout(enc.dim, gluon_of(enc.parent))
    if isinstance(enc, DotOperand):
        return gl.DotOperandLayout(enc.op_idx, gluon_of(enc.parent), enc.k_width)
    if isinstance(enc, NvidiaMma):
        return gl.NVMMADistributedLayout([enc.version_major, enc.version_minor], list(enc.warps_per_cta),
                                         list(enc.instr_shape))
    if isinstance(enc, Linear):
        if shape is None:
            raise ShapeError("a DistributedLinearLayout needs the tensor shape")
        return gl.DistributedLinearLayout([list(v) for v in enc.register], [list(v) for v in enc.lane],
                                          [list(v) for v in enc.warp], [], list(shape))
    if isinstance(enc, SwizzledShared):
        return gl.SwizzledSharedLayout(enc.vec, enc.per_phase, enc.max_phase, list(enc.order))
    if isinstance(enc, NVMMAShared):
        return gl.NVMMASharedLayout(enc.swizzle_bytes, enc.element_bits, 2, enc.transposed, enc.fp4_padded)
    if isinstance(enc, PaddedShared):
        if shape is None:
            raise ShapeError("a PaddedSharedLayout needs the tensor shape")
        return gl.PaddedSharedLayout([[i, p] for i, p in zip(enc.intervals, enc.paddings)],
                                     [list(v) for v in enc.offset_bases], [], list(shape))
    raise UnsupportedError(f"to_gluon: no Gluon layout for {enc}")


def shared_layout(enc: Shared, shape: Sequence[int]) -> Layout:
    """The :class:`~layoutkit.Layout` ``coordinate -> element offset`` of a shared encoding on ``shape``."""
    f = enc.linear(shape)
    lin = Layout.from_linear(f.invert())
    if isinstance(enc, PaddedShared):
        pad = Layout([lin.output_shape[0]], lambda o: o + sum((o // i) * p for i, p in zip(enc.intervals,
                                                                                        enc.paddings)))
        return pad.compose(lin)
    return lin


def from_gluon(layout: Any, shape: Sequence[int] | None = None) -> Fragment | Layout:
    """The layoutkit value of a Gluon layout on ``shape`` (a linear or padded layout carries its own).

    Distributed layouts give a :class:`~layoutkit.Fragment` (``Fragment.from_linear`` of Triton's map;
    a layout that puts one element in two registers of a thread has none, and the error says so); shared
    ones give a :class:`~layoutkit.Layout` from the coordinate to the offset.
    """
    enc, own = encoding_of(layout)
    shape = own if shape is None else tuple(int(s) for s in shape)
    if shape is None:
        raise ShapeError(f"from_gluon({type(layout).__name__}): the layout carries no shape; pass shape=")
    if isinstance(enc, Shared):
        return shared_layout(enc, shape)
    return Fragment.from_linear(enc.linear(shape))  # type: ignore[union-attr]


def encoding_of_linear(f: F2Linear) -> Blocked | Linear:
    """A blocked encoding where one is exact on ``f``'s shape, else the linear one."""
    shape = tuple(s for _, s in f.out_dims)
    blocked = blocked_of(f, shape) if set(f.in_names) <= {REG, LANE, WARP} else None
    return blocked if blocked is not None else Linear.of(f)


def to_gluon(value: Fragment | Layout | F2Linear) -> Any:
    """The Gluon layout of a fragment or distributed F2 map (``BlockedLayout`` where exact, else
    ``DistributedLinearLayout``), or of a shared Layout (a ``SharedLinearLayout``; the layout must be a
    bijection onto its offsets, power-of-two extents)."""
    gl = gluon_language()
    if isinstance(value, Fragment):
        value = value.to_linear()
    if isinstance(value, F2Linear):
        if "offset" in value.in_names:
            return gl.SharedLinearLayout([list(v) for v in value.bases[0]])
        enc = encoding_of_linear(value)
        return gluon_of(enc, [s for _, s in value.out_dims])
    if isinstance(value, Layout):
        f = value.to_linear()
        if len(f.out_dims) != 1:
            raise UnsupportedError(f"to_gluon: a shared Layout maps to one offset; found {len(f.out_dims)} outputs")
        inv = f.invert()
        return gl.SharedLinearLayout([list(v) for v in inv.bases[0]])
    raise UnsupportedError(f"to_gluon: expected a Fragment, Layout or F2Linear; found {type(value).__name__}")
