"""Tiled register layouts: a multi-level tiling of a tile, whose tiled dims are dealt to warps, lanes,
one vector and the registers (``docs/mosaic_gpu.md#tiled-register-layouts``).

A tiling ``tiles = (t0, t1, ...)`` applies each tile to the trailing dims of the current shape: a dim
of size ``s`` under a tile entry ``t`` becomes ``s // t`` (outer) and ``t`` (inner), and all the new
inner dims move to the end.  Every *tiled dim* is a digit ``x_d // a % s`` of one input dim ``d``.
``warp_dims`` and ``lane_dims`` (major to minor, negative indices into the tiled dims after the base
tile) are mixed-radix digits of the warp and the lane; a :class:`Replica` digit holds copies.  The
register index is row-major over the remaining tiled dims, times the vector length, plus the digit
of ``vector_dim``.

Law: ``tiled_from_fragment(tiled_fragment(spec, shape))`` builds a fragment equal to
``tiled_fragment(spec, shape)`` (the spec may differ: one function has many tilings).

>>> spec = TiledRegisterLayout(((64, 8), (16, 8), (8, 8), (1, 2)), (-8,), (-4, -3), -1)
>>> f = tiled_fragment(spec, (64, 8))
>>> f.thread_extent, f.local_size
(128, 4)
>>> print(f.forward_thread)
_i // 16 * 32 + _i % 8 * 4 + _j // 2
>>> tiled_fragment(tiled_from_fragment(f), (64, 8)).is_equal(f)
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from ..algebra.nodes import Const, Expr, add, scale
from ..algebra.shapes import check_shape, placeholder, positive_int
from ..errors import NotTiledError, ShapeError
from .fragment import Fragment, rep_var

WARP_LANES = 32
"""Lanes of a warp (the default of ``lanes``)."""


@dataclass(frozen=True)
class Replica:
    """A warp or lane digit of ``times`` values that all hold the same elements (a broadcast)."""

    times: int

    def __post_init__(self) -> None:
        positive_int(self.times, "Replica times")


Digit = int | Replica
TiledDim = tuple[int, int, int]
"""``(input dim, divisor, size)``: the tiled dim is ``x[dim] // divisor % size``."""


def tile_dims(tiles: Sequence[Sequence[int]], shape: Sequence[int]) -> list[TiledDim]:
    """The tiled dims of ``shape`` under ``tiles``, in order.

    >>> tile_dims(((8, 4), (2, 2)), (16, 8))
    [(0, 8, 2), (1, 4, 2), (0, 2, 4), (1, 2, 2), (0, 1, 2), (1, 1, 2)]
    """
    return [(d, a, s) for d, a, s, _ in _tagged_tile_dims(tiles, shape)]


Tag = tuple[int, int, str]
"""``(level, input dim, "outer" | "inner" | "in")``: which tile made a tiled dim."""


def _tagged_tile_dims(tiles: Sequence[Sequence[int]], shape: Sequence[int]) -> list[tuple[int, int, int, Tag]]:
    """:func:`tile_dims` with a tag per tiled dim: ``(level, input dim, "outer" | "inner")`` of the tile
    that made it (so that two tilings of one family can be matched dim by dim)."""
    dims: list[tuple[int, int, int, Tag]] = [(d, 1, int(s), (-1, d, "in")) for d, s in enumerate(shape)]
    for level, tile in enumerate(tiles):
        r = len(tile)
        if r == 0 or r > len(dims):
            raise ShapeError(f"tile {tuple(tile)} does not apply to a tiled shape of rank {len(dims)} "
                             f"(shape {tuple(shape)}, tiles {tuple(map(tuple, tiles))})")
        head, tail = dims[:-r], dims[-r:]
        outer, inner = [], []
        for (d, a, s, _), t in zip(tail, tile):
            t = positive_int(t, "tile size")
            if s % t:
                raise ShapeError(f"tiling {tuple(map(tuple, tiles))} does not divide shape {tuple(shape)}: "
                                 f"a dim of size {s} (input dim {d}) under a tile of {t}")
            outer.append((d, a * t, s // t, (level, d, "outer")))
            inner.append((d, a, t, (level, d, "inner")))
        dims = head + outer + inner
    return dims


@dataclass(frozen=True)
class TiledRegisterLayout:
    """A tiling plus the tiled dims dealt to warps, lanes and one vector (see the module docstring).

    >>> TiledRegisterLayout(((8, 8),), (Replica(4),), (-2, Replica(4)), -1).replication
    16
    """

    tiles: tuple[tuple[int, ...], ...]
    warp_dims: tuple[Digit, ...]
    lane_dims: tuple[Digit, ...]
    vector_dim: int
    lanes: int = WARP_LANES
    warps: int = 4

    def __post_init__(self) -> None:
        object.__setattr__(self, "tiles", tuple(tuple(int(t) for t in tile) for tile in self.tiles))
        if not self.tiles:
            raise ShapeError("a tiled register layout needs at least one tile; found none")
        if any(len(b) > len(a) for a, b in zip(self.tiles, self.tiles[1:])):
            raise ShapeError(f"tile ranks must not grow; found {self.tiles}")
        rank = len(self.tiled_shape)
        used = [d for d in (*self.warp_dims, *self.lane_dims, self.vector_dim) if not isinstance(d, Replica)]
        bad = [d for d in used if not -rank <= d < 0]
        if bad:
            raise ShapeError(f"tiled dims are negative indices into the {rank} tiled dims {self.tiled_shape}; "
                             f"found {bad[0]}")
        if len(set(used)) != len(used):
            raise ShapeError(f"a tiled dim is dealt twice among warps {self.warp_dims}, lanes {self.lane_dims} "
                             f"and vector {self.vector_dim}")
        for what, digits, want in (("warp", self.warp_dims, self.warps), ("lane", self.lane_dims, self.lanes)):
            got = math.prod(self.digit_size(d) for d in digits)
            if got != want:
                raise ShapeError(f"the {what} digits {digits} have {got} values; expected {want}")

    @property
    def base_tile(self) -> tuple[int, ...]:
        """The first tile: the shapes this layout applies to are multiples of it on their trailing dims."""
        return self.tiles[0]

    @cached_property
    def tiled_shape(self) -> tuple[int, ...]:
        """Sizes of the tiled dims after the base tile (those the digits index)."""
        return tuple(s for _, _, s in tile_dims(self.tiles, self.base_tile)[len(self.base_tile):])

    def digit_size(self, digit: Digit) -> int:
        return digit.times if isinstance(digit, Replica) else self.tiled_shape[digit]

    @property
    def vector_length(self) -> int:
        return self.tiled_shape[self.vector_dim]

    @property
    def replication(self) -> int:
        """Copies of each element (the product of the :class:`Replica` digits)."""
        return math.prod(d.times for d in (*self.warp_dims, *self.lane_dims) if isinstance(d, Replica))


def _mixed_radix(digits: Sequence[Expr], sizes: Sequence[int]) -> Expr:
    """``digits`` major to minor, each below its size, as one number."""
    out: Expr = Const(0)
    stride = 1
    for e, s in zip(reversed(digits), reversed(sizes)):
        out = add(out, scale(e, stride))
        stride *= s
    return out


def tiled_fragment(spec: TiledRegisterLayout, shape: Sequence[int]) -> Fragment:
    """The fragment of ``spec`` on ``shape`` (threads ``warp * lanes + lane``)."""
    shape = check_shape(shape, "tiled layout shape")
    dims = tile_dims(spec.tiles, shape)
    n = len(dims)
    xs = [placeholder(d, e) for d, e in enumerate(shape)]
    digit = [xs[d] // a % s if a * s != shape[d] else xs[d] // a for d, a, s in dims]
    rep = rep_var(spec.replication)
    rep_left = [spec.replication]

    def thread_part(digits: Sequence[Digit]) -> Expr:
        exprs, sizes = [], []
        for d in digits:
            if isinstance(d, Replica):
                rep_left[0] //= d.times
                exprs.append(rep // rep_left[0] % d.times)
                sizes.append(d.times)
            else:
                exprs.append(digit[n + d])
                sizes.append(dims[n + d][2])
        return _mixed_radix(exprs, sizes)

    warp = thread_part(spec.warp_dims)
    lane = thread_part(spec.lane_dims)
    dealt = {n + d for d in (*spec.warp_dims, *spec.lane_dims) if not isinstance(d, Replica)}
    vector = n + spec.vector_dim
    regs = [k for k in range(n) if k not in dealt and k != vector]
    index = add(scale(_mixed_radix([digit[k] for k in regs], [dims[k][2] for k in regs]), dims[vector][2]),
                digit[vector])
    return Fragment.from_exprs(shape, (index,), add(scale(warp, spec.lanes), lane), spec.replication)


def reduce_tiled(spec: TiledRegisterLayout, axes: Sequence[int]) -> TiledRegisterLayout:
    """``spec`` on the tile with the input dims ``axes`` (of the base tile) reduced away: their tiled dims
    leave the tiling, a warp or lane digit on one becomes a :class:`Replica` of its size, and a vector on
    one becomes a new last tile ``(1,)``.

    Law: on a shape ``s``, ``tiled_fragment(reduce_tiled(spec, axes), s')`` places element ``y`` where
    ``tiled_fragment(spec, s)`` places every ``x`` with ``x`` minus ``axes`` equal to ``y`` (``s'``: ``s``
    without ``axes``), the threads that differ only on ``axes`` becoming replicas.

    >>> spec = TiledRegisterLayout(((64, 8), (16, 8), (8, 8), (2,)), (-7,), (-3, -2), -1)
    >>> reduce_tiled(spec, (1,)).lane_dims
    (-2, Replica(times=4))
    """
    rank = len(spec.base_tile)
    gone = {int(a) for a in axes}
    if not gone or any(not 0 <= a < rank for a in gone) or len(gone) == rank:
        raise ShapeError(f"reduce axes must be some, not all, of the base tile's dims 0..{rank - 1}; found "
                         f"{tuple(axes)}")
    tiles: list[tuple[int, ...]] = []
    for tile in spec.tiles:
        first = rank - len(tile)  # the input dim of the tile's first entry
        kept = tuple(t for k, t in enumerate(tile) if first + k not in gone)
        if not kept:
            break
        tiles.append(kept)
    old = _tagged_tile_dims(spec.tiles, spec.base_tile)[rank:]
    base = tuple(e for d, e in enumerate(spec.base_tile) if d not in gone)
    renumber = {d: i for i, d in enumerate(d for d in range(rank) if d not in gone)}
    vector_gone = old[spec.vector_dim][0] in gone
    new = _tagged_tile_dims(tiles, base)[len(base):]
    # a vector on a reduced dim: a last tile (1,) adds one trailing dim of size 1, the new vector
    shift = len(new) + (1 if vector_gone else 0)
    where = {tag: k - shift for k, (_, _, _, tag) in enumerate(new)}
    if vector_gone:
        tiles.append((1,))

    def moved(d: Digit) -> Digit:
        if isinstance(d, Replica):
            return d
        src, _, size, tag = old[d]
        return Replica(size) if src in gone else where[(tag[0], renumber[src], tag[2])]

    vector = -1 if vector_gone else moved(spec.vector_dim)
    assert isinstance(vector, int)
    return TiledRegisterLayout(tuple(tiles), tuple(map(moved, spec.warp_dims)), tuple(map(moved, spec.lane_dims)),
                               vector, lanes=spec.lanes, warps=spec.warps)


def strided_fragment(shape: Sequence[int], vector: int, threads: int = 128) -> Fragment:
    """The tile flattened row-major, dealt to ``threads`` in runs of ``vector`` consecutive elements.

    >>> print(strided_fragment((8, 64), 2).forward_thread)
    _i % 4 * 32 + _j // 2
    """
    shape = check_shape(shape, "strided layout shape")
    vector, threads = positive_int(vector, "vector"), positive_int(threads, "threads")
    if math.prod(shape) % (vector * threads):
        raise ShapeError(f"a strided layout of {threads} threads x {vector} elements needs a size that is a multiple "
                         f"of {vector * threads}; found shape {shape}")
    xs = [placeholder(d, e) for d, e in enumerate(shape)]
    flat = _mixed_radix(xs, shape)
    thread = flat // vector % threads if math.prod(shape) > vector * threads else flat // vector
    index = add(scale(flat // (vector * threads), vector), flat % vector)
    return Fragment.from_exprs(shape, (index,), thread, 1)


def splat_fragment(shape: Sequence[int], threads: int = 128) -> Fragment:
    """One value for the whole tile: every thread holds it in register 0.

    >>> splat_fragment((8, 8)).local_size, splat_fragment((8, 8)).replicate_size
    (1, 128)
    """
    shape = check_shape(shape, "splat layout shape")
    threads = positive_int(threads, "threads")
    return Fragment.from_exprs(shape, (Const(0),), rep_var(threads), threads)


Segment = tuple[int, int, int, str, int]
"""``(input dim, low bit, bits, role, low role bit)`` with role ``register`` / ``lane`` / ``warp``."""


def _single_bit(image: Sequence[int]) -> tuple[int, int] | None:
    hits = [(d, v.bit_length() - 1) for d, v in enumerate(image) if v]
    if len(hits) == 1 and image[hits[0][0]] == 1 << hits[0][1]:
        return hits[0]
    return None


def tiled_from_fragment(fragment: Fragment, lanes: int = WARP_LANES) -> TiledRegisterLayout:
    """A tiled register layout whose fragment on ``fragment.input_shape`` is ``fragment`` (base tile: the
    whole shape, one tiling level per tiled dim).  Raises :class:`~layoutkit.errors.NotLinearError`
    when the fragment has no linear view (an extent that is not a power of two), and
    :class:`~layoutkit.errors.NotTiledError` with a witness when no tiling has it: a register,
    lane or warp bit that moves more than one element bit, or a register order that runs against
    an input dim's digit order."""
    shape = fragment.input_shape
    view = fragment.to_linear(lanes)
    roles: dict[tuple[int, int], tuple[str, int]] = {}
    zeros: dict[str, list[int]] = {"lane": [], "warp": []}
    for name, per_bit in zip(view.in_names, view.bases):
        for k, image in enumerate(per_bit):
            hit = _single_bit(image)
            if hit is None and name in zeros and not any(image):
                zeros[name].append(k)
                continue
            if hit is None:
                raise NotTiledError(f"{fragment.describe()} is not a tiled layout: {name} bit {k} moves the "
                                       f"element by {tuple(image)}, not by one bit of one dim", (name, k))
            roles[hit] = (name, k)
    reg_bits = len(view.bases[view.in_names.index("register")]) if "register" in view.in_names else 0
    # the vector: the run of low register bits that are consecutive bits of one dim
    vec_bits = 0
    if reg_bits:
        d0, b0 = next(key for key, r in roles.items() if r == ("register", 0))
        while roles.get((d0, b0 + vec_bits)) == ("register", vec_bits):
            vec_bits += 1
    segments: list[Segment] = []
    for d, e in enumerate(shape):
        b = e.bit_length() - 2  # the top bit of dim d
        while b >= 0:
            role, k = roles[(d, b)]
            lo = b
            while lo > 0 and roles[(d, lo - 1)] == (role, k - (b - lo + 1)) and not (
                    role == "register" and (k - (b - lo + 1) < vec_bits) != (k < vec_bits)):
                lo -= 1
            segments.append((d, lo, b - lo + 1, role, k - (b - lo)))
            b = lo - 1
    order = _order_segments(segments, vec_bits, fragment)
    # one tiling level per segment: the level splits the segment off the high end of its dim
    cur = list(shape)
    tiles = [tuple(shape)]
    for d, _, bits, _, _ in order:
        cur[d] >>= bits
        tiles.append(tuple(cur))
    r, m = len(shape), len(order)
    # tiled dims after the base tile: level l (1-based) emits r outer dims (segment l-1 at its dim), and
    # the last level leaves r trailing dims of size 1
    total = r * m + r

    def position(i: int) -> int:
        return r * i + order[i][0] - total

    lane_segs = [(s[4], position(i), s[2]) for i, s in enumerate(order) if s[3] == "lane"]
    warp_segs = [(s[4], position(i), s[2]) for i, s in enumerate(order) if s[3] == "warp"]
    vec = [position(i) for i, s in enumerate(order) if s[3] == "register" and s[4] == 0 and vec_bits]
    vector_dim = vec[0] if vec else -1

    def digits(segs: list[tuple[int, int, int]], free: list[int]) -> tuple[Digit, ...]:
        items: list[tuple[int, Digit]] = [(k, pos) for k, pos, _ in segs] + [(k, Replica(2)) for k in free]
        items.sort(key=lambda kv: -kv[0])
        merged: list[Digit] = []
        for _, dgt in items:
            if isinstance(dgt, Replica) and merged and isinstance(merged[-1], Replica):
                merged[-1] = Replica(merged[-1].times * 2)
            else:
                merged.append(dgt)
        return tuple(merged)

    warps = max(1, fragment.thread_extent // lanes)
    lane_size = min(fragment.thread_extent, lanes)
    return TiledRegisterLayout(tuple(tiles), digits(warp_segs, zeros["warp"]), digits(lane_segs, zeros["lane"]),
                               vector_dim, lanes=lane_size, warps=warps)


def _order_segments(segments: list[Segment], vec_bits: int, fragment: Fragment) -> list[Segment]:
    """Merge the chains ``dim's segments, high bits first`` and ``register segments, high bits first``
    (the vector, register bit 0, last); refuse when they disagree."""
    per_dim: dict[int, list[Segment]] = {}
    for s in segments:
        per_dim.setdefault(s[0], []).append(s)
    regs = sorted((s for s in segments if s[3] == "register"), key=lambda s: -s[4])
    reg_rank = {s: i for i, s in enumerate(regs)}
    heads = {d: 0 for d in per_dim}
    out: list[Segment] = []
    next_reg = 0
    while len(out) < len(segments):
        progressed = False
        for d, chain in per_dim.items():
            while heads[d] < len(chain):
                s = chain[heads[d]]
                if s[3] == "register" and reg_rank[s] != next_reg:
                    break
                out.append(s)
                heads[d] += 1
                progressed = True
                if s[3] == "register":
                    next_reg += 1
        if not progressed:
            s = regs[next_reg]
            raise NotTiledError(f"{fragment.describe()} is not a tiled layout: its register order puts bits "
                                   f"{s[1]}..{s[1] + s[2] - 1} of dim {s[0]} before higher bits of the same dim",
                                   (s[0], s[1]))
    del vec_bits
    return out
