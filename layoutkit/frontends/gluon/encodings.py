"""Triton's layout encodings as values (no triton import): the distributed ones (``#ttg.blocked``,
``#ttg.slice``, ``#ttg.dot_op``, ``#ttg.nvidia_mma``, ``#ttg.linear``) and the shared ones
(``#ttg.swizzled_shared``, ``#ttg.nvmma_shared``, ``#ttg.padded_shared``), each with its exact F2
linear map on a shape, as Triton 3.9 defines it (``gl.to_linear_layout``; see ``docs/gluon.md``).

A distributed encoding's map is ``(register, lane, warp) -> (dim0, dim1, ...)``; a shared encoding's
is ``offset -> (dim0, ...)`` (the element stored at each offset; padding is added on top, see
:class:`PaddedShared`).  Maps are built from basis lists: a *product* (Triton's ``*`` of layouts over
the same out dims) lists the outer factor's bases scaled by the inner one's extent, and a map is fitted
to a shape by dropping / zeroing the bases past the shape and repeating in registers below it.

>>> b = Blocked((1, 4), (8, 4), (4, 1), (1, 0))
>>> b.linear((64, 64)).bases[0]     # registers: 4 along dim1, then the repeats (dim1, then dim0)
((0, 1), (0, 2), (0, 16), (0, 32), (32, 0))
>>> print(b)
#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...algebra.linear import F2Linear
from ...errors import ShapeError, UnsupportedError

Basis = tuple[int, ...]
Bases = dict[str, list[list[int]]]

REG, LANE, WARP = "register", "lane", "warp"


def _log2(n: int, what: str) -> int:
    if n < 1 or n & (n - 1):
        raise ShapeError(f"{what}: expected a power of two; found {n}")
    return n.bit_length() - 1


def _unit(rank: int, dim: int, value: int) -> list[int]:
    v = [0] * rank
    v[dim] = value
    return v


class _Builder:
    """Basis lists per in dim plus the extent per out dim; the product and shape fitting of Triton."""

    def __init__(self, rank: int):
        self.rank = rank
        self.bases: Bases = {REG: [], LANE: [], WARP: []}
        self.size = [1] * rank

    def identity(self, in_dim: str, sizes: Sequence[int], order: Sequence[int]) -> _Builder:
        """Multiply by ``identityStandardND(in_dim, sizes, order)``: ``order[0]`` fastest."""
        for d in order:
            for b in range(_log2(int(sizes[d]), f"{in_dim} extent of dim {d}")):
                self.bases[in_dim].append(_unit(self.rank, d, self.size[d] << b))
            self.size[d] *= int(sizes[d])
        return self

    def tile(self, tile: Bases, extent: Sequence[int]) -> _Builder:
        """Multiply by a given tile (bases per in dim covering ``extent``)."""
        for name, bs in tile.items():
            for v in bs:
                self.bases[name].append([x * s for x, s in zip(v, self.size)])
        self.size = [a * int(b) for a, b in zip(self.size, extent)]
        return self

    def fit(self, shape: Sequence[int], repeat_order: Sequence[int], keep_registers: bool = False) -> _Builder:
        """Triton's ``combineCtaCgaWithShape`` for one CTA: bases past the shape are zeroed (a broadcast;
        registers are dropped instead unless ``keep_registers``, as Triton's dot operands keep them); a
        smaller map repeats in registers, ``repeat_order[0]`` first."""
        for d in range(self.rank):
            want = int(shape[d])
            _log2(want, f"shape dim {d}")
            if self.size[d] <= want:
                continue
            for name in (WARP, LANE, REG):
                kept = []
                for v in self.bases[name]:
                    if v[d] >= want:
                        if name == REG and not keep_registers:
                            continue
                        v = list(v)
                        v[d] = 0
                    kept.append(v)
                self.bases[name] = kept
            self.size[d] = want
        for d in repeat_order:
            while self.size[d] < int(shape[d]):
                self.bases[REG].append(_unit(self.rank, d, self.size[d]))
                self.size[d] *= 2
        return self

    def linear(self) -> F2Linear:
        dims = [f"dim{d}" for d in range(self.rank)]
        return F2Linear.from_bases({n: self.bases[n] for n in (REG, LANE, WARP)},
                                   list(zip(dims, self.size)), require_surjective=False)


def _ints(xs: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(x) for x in xs)


def _list(xs: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def _bases_text(bs: Sequence[Sequence[int]]) -> str:
    return "[" + ", ".join(_list(b) for b in bs) + "]"


class Distributed:
    """A distributed (register) encoding: :meth:`linear` on a shape, :attr:`rank`, text with ``str``."""

    rank: int

    def linear(self, shape: Sequence[int]) -> F2Linear:
        raise NotImplementedError

    def _check(self, shape: Sequence[int]) -> tuple[int, ...]:
        s = _ints(shape)
        if len(s) != self.rank:
            raise ShapeError(f"{self}: expected a shape of rank {self.rank}; found {list(s)}")
        return s


@dataclass(frozen=True)
class Blocked(Distributed):
    """``#ttg.blocked``: ``size_per_thread`` registers, then ``threads_per_warp`` lanes, then
    ``warps_per_cta`` warps, each over the dims in ``order`` (fastest first)."""

    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]

    def __post_init__(self) -> None:
        n = len(self.order)
        if sorted(self.order) != list(range(n)) or {len(self.size_per_thread), len(self.threads_per_warp),
                                                   len(self.warps_per_cta)} != {n}:
            raise ShapeError(f"blocked encoding: expected equal ranks and a permutation as order; found {self!r}")

    @property
    def rank(self) -> int:
        return len(self.order)

    def linear(self, shape: Sequence[int]) -> F2Linear:
        s = self._check(shape)
        b = _Builder(self.rank).identity(REG, self.size_per_thread, self.order)
        b.identity(LANE, self.threads_per_warp, self.order).identity(WARP, self.warps_per_cta, self.order)
        return b.fit(s, self.order).linear()

    def __str__(self) -> str:
        return (f"#ttg.blocked<{{sizePerThread = {_list(self.size_per_thread)}, threadsPerWarp = "
                f"{_list(self.threads_per_warp)}, warpsPerCTA = {_list(self.warps_per_cta)}, order = "
                f"{_list(self.order)}}}>")


@dataclass(frozen=True)
class Slice(Distributed):
    """``#ttg.slice``: ``parent`` with dim ``dim`` removed (those bases become broadcasts)."""

    dim: int
    parent: Distributed

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    def linear(self, shape: Sequence[int]) -> F2Linear:
        s = self._check(shape)
        full = s[:self.dim] + (1,) + s[self.dim:]
        p = self.parent.linear(full)
        keep = [d for d in range(self.parent.rank) if d != self.dim]
        bases = {n: [[v[d] for d in keep] for v in per] for (n, _), per in zip(p.in_dims, p.bases)}
        return F2Linear.from_bases(bases, [(f"dim{k}", e) for k, e in enumerate(s)], require_surjective=False)

    def __str__(self) -> str:
        return f"#ttg.slice<{{dim = {self.dim}, parent = {self.parent}}}>"


@dataclass(frozen=True)
class NvidiaMma(Distributed):
    """``#ttg.nvidia_mma``: the accumulator of ``mma.sync`` (version 2) or ``wgmma`` (version 3);
    ``instr_shape`` ``[16, 8]`` / ``[16, N, K]``."""

    version_major: int
    version_minor: int
    warps_per_cta: tuple[int, ...]
    instr_shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.warps_per_cta)

    def _tile(self) -> tuple[Bases, list[int]]:
        if self.version_major not in (2, 3) or self.rank != 2:
            raise UnsupportedError(f"{self}: only rank-2 NVIDIA MMA versions 2 and 3 are read")
        n = 8 if self.version_major == 2 else int(self.instr_shape[1])
        regs = [[0, 1], [8, 0]] + [[0, c] for c in (8 << k for k in range(_log2(n, 'instr N') - 3))]
        return {REG: regs, LANE: [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]}, [16, n]

    def linear(self, shape: Sequence[int]) -> F2Linear:
        s = self._check(shape)
        tile, extent = self._tile()
        # wgmma spreads warps down M first (warp groups of four), mma.sync along N first
        warp_order = (0, 1) if self.version_major == 3 else (1, 0)
        b = _Builder(2).tile(tile, extent).identity(WARP, self.warps_per_cta, warp_order)
        return b.fit(s, (1, 0), keep_registers=True).linear()

    def __str__(self) -> str:
        return (f"#ttg.nvidia_mma<{{versionMajor = {self.version_major}, versionMinor = {self.version_minor}, "
                f"warpsPerCTA = {_list(self.warps_per_cta)}, instrShape = {_list(self.instr_shape)}}}>")


@dataclass(frozen=True)
class DotOperand(Distributed):
    """``#ttg.dot_op``: operand ``op_idx`` (0: A ``[M, K]``, 1: B ``[K, N]``) of an ``mma.sync`` parent,
    ``k_width`` consecutive K elements per register group."""

    op_idx: int
    parent: Distributed
    k_width: int

    @property
    def rank(self) -> int:
        return self.parent.rank

    def linear(self, shape: Sequence[int]) -> F2Linear:
        s = self._check(shape)
        p = self.parent
        if not (isinstance(p, NvidiaMma) and p.version_major == 2 and self.rank == 2):
            raise UnsupportedError(f"{self}: only operands of a rank-2 mma.sync (version 2) parent are read")
        kw = int(self.k_width)
        _log2(kw, "kWidth")
        # (non-K, K) coordinates first, transposed for B below
        regs = [[0, 1 << b] for b in range(_log2(kw, "kWidth"))]
        lanes = [[0, kw], [0, 2 * kw], [1, 0], [2, 0], [4, 0]]
        if self.op_idx == 0:
            regs.append([8, 0])
        regs.append([0, 4 * kw])
        extent = [16 if self.op_idx == 0 else 8, 8 * kw]
        if self.op_idx == 1:
            regs = [[k, m] for m, k in regs]
            lanes = [[k, m] for m, k in lanes]
            extent = extent[::-1]
        b = _Builder(2).tile({REG: regs, LANE: lanes}, extent)
        wpc = list(p.warps_per_cta)
        kdim = 1 if self.op_idx == 0 else 0
        for d in (1, 0):
            for _ in range(_log2(int(wpc[d]), "warps")):
                b.bases[WARP].append(_unit(2, d, 0 if d == kdim else b.size[d]))
                if d != kdim:
                    b.size[d] *= 2
        return b.fit(s, (1, 0) if self.op_idx == 0 else (0, 1), keep_registers=True).linear()

    def __str__(self) -> str:
        return f"#ttg.dot_op<{{opIdx = {self.op_idx}, parent = {self.parent}, kWidth = {self.k_width}}}>"


@dataclass(frozen=True)
class Linear(Distributed):
    """``#ttg.linear``: explicit bases per in dim (their length is the rank)."""

    register: tuple[Basis, ...]
    lane: tuple[Basis, ...]
    warp: tuple[Basis, ...]
    block: tuple[Basis, ...] = ()

    @property
    def rank(self) -> int:
        for per in (self.register, self.lane, self.warp, self.block):
            if per:
                return len(per[0])
        raise ShapeError("linear encoding without bases has no rank")

    def linear(self, shape: Sequence[int]) -> F2Linear:
        s = self._check(shape)
        if self.block:
            raise UnsupportedError(f"{self}: block (multi-CTA) bases are not read")
        return F2Linear.from_bases({REG: self.register, LANE: self.lane, WARP: self.warp},
                                   [(f"dim{k}", e) for k, e in enumerate(s)], require_surjective=False)

    @classmethod
    def of(cls, f: F2Linear) -> Linear:
        """The linear encoding of a distributed map (in dims among register / lane / warp)."""
        per = dict(zip(f.in_names, f.bases))
        unknown = set(per) - {REG, LANE, WARP}
        if unknown:
            raise UnsupportedError(f"linear encoding: expected in dims register / lane / warp; found {sorted(unknown)}")
        return cls(*(tuple(per.get(n, ())) for n in (REG, LANE, WARP)))

    def __str__(self) -> str:
        return (f"#ttg.linear<{{register = {_bases_text(self.register)}, lane = {_bases_text(self.lane)}, "
                f"warp = {_bases_text(self.warp)}, block = {_bases_text(self.block)}}}>")


class Shared:
    """A shared-memory encoding: :meth:`linear` (``offset -> (dim0, ...)``) on a shape, text with ``str``."""

    def linear(self, shape: Sequence[int]) -> F2Linear:
        raise NotImplementedError


def _shared_map(bases: Sequence[Sequence[int]], shape: Sequence[int]) -> F2Linear:
    return F2Linear.from_bases({"offset": [list(v) for v in bases]},
                               [(f"dim{k}", int(e)) for k, e in enumerate(shape)], require_surjective=False)


def _swizzled_bases(shape: Sequence[int], col: int, rows: Sequence[int], vec: int, per_phase: int,
                    max_phase: int, tile_cols: int) -> list[list[int]]:
    """Offsets of a row-swizzled tile: ``tile_cols`` contiguous columns (dim ``col``), then the rows (dims
    ``rows``, fastest first; the first row dim's index selects the phase), then further column tiles."""
    rank = len(shape)
    out = [_unit(rank, col, 1 << b) for b in range(_log2(tile_cols, "tile columns"))]
    for k, d in enumerate(rows):
        for b in range(_log2(int(shape[d]), f"shape dim {d}")):
            v = _unit(rank, d, 1 << b)
            if k == 0:
                v[col] = (((1 << b) // per_phase) % max_phase) * vec % tile_cols
            out.append(v)
    for b in range(_log2(tile_cols, "tile columns"), _log2(int(shape[col]), f"shape dim {col}")):
        out.append(_unit(rank, col, 1 << b))
    return out


@dataclass(frozen=True)
class SwizzledShared(Shared):
    """``#ttg.swizzled_shared``: rows of dim ``order[0]`` with their ``vec``-element groups XORed by the
    phase ``(row // per_phase) % max_phase`` of the next dim ``order[1]``."""

    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]

    def linear(self, shape: Sequence[int]) -> F2Linear:
        s = _ints(shape)
        if len(s) != len(self.order):
            raise ShapeError(f"{self}: expected a shape of rank {len(self.order)}; found {list(s)}")
        col = self.order[0]
        return _shared_map(_swizzled_bases(s, col, self.order[1:], self.vec, self.per_phase, self.max_phase,
                                           s[col]), s)

    def __str__(self) -> str:
        return (f"#ttg.swizzled_shared<{{vec = {self.vec}, perPhase = {self.per_phase}, maxPhase = "
                f"{self.max_phase}, order = {_list(self.order)}}}>")


@dataclass(frozen=True)
class NVMMAShared(Shared):
    """``#ttg.nvmma_shared``: the layout TMA and wgmma read: ``swizzle_bytes`` wide column tiles (the whole
    row when 0) of 16-byte groups XORed by the row; ``transposed``: dim 0 is the contiguous one."""

    swizzle_bytes: int
    element_bits: int
    transposed: bool = False
    fp4_padded: bool = False

    def linear(self, shape: Sequence[int]) -> F2Linear:
        s = _ints(shape)
        if len(s) < 2:
            raise UnsupportedError(f"{self}: expected a shape of rank 2 or more; found {list(s)}")
        if self.fp4_padded or (self.transposed and len(s) > 2):
            raise UnsupportedError(f"{self}: fp4-padded layouts and transposed ones of rank above 2 are not read")
        col, inner = (len(s) - 2, len(s) - 1) if self.transposed else (len(s) - 1, len(s) - 2)
        rows = [inner] + list(range(len(s) - 3, -1, -1))
        if self.swizzle_bytes == 0:
            return _shared_map(_swizzled_bases(s, col, rows, 1, 1, 1, s[col]), s)
        tile = self.swizzle_bytes * 8 // self.element_bits
        if s[col] < tile:
            raise ShapeError(f"{self}: the contiguous dim {col} of {list(s)} is narrower than the {tile}-element "
                             "swizzle tile")
        vec = 128 // self.element_bits
        return _shared_map(_swizzled_bases(s, col, rows, vec, 128 // self.swizzle_bytes, self.swizzle_bytes // 16,
                                           tile), s)

    def __str__(self) -> str:
        fp4 = ", fp4Padded = true" if self.fp4_padded else ""
        return (f"#ttg.nvmma_shared<{{swizzlingByteWidth = {self.swizzle_bytes}, transposed = "
                f"{str(self.transposed).lower()}, elementBitWidth = {self.element_bits}{fp4}}}>")


@dataclass(frozen=True)
class PaddedShared(Shared):
    """``#ttg.padded_shared``: a linear map ``offset -> coordinate`` (``offset_bases``) stored with
    ``paddings[i]`` extra elements after every ``intervals[i]`` elements (summed where several apply)."""

    intervals: tuple[int, ...]
    paddings: tuple[int, ...]
    offset_bases: tuple[Basis, ...]

    @classmethod
    def identity(cls, intervals: Sequence[int], paddings: Sequence[int], order: Sequence[int],
                 shape: Sequence[int]) -> PaddedShared:
        """Offsets in ``order`` (fastest first), as the text form ``{order = ..., shape = ...}`` says."""
        rank = len(shape)
        bases = tuple(tuple(_unit(rank, d, 1 << b)) for d in order
                      for b in range(_log2(int(shape[d]), f"shape dim {d}")))
        return cls(_ints(intervals), _ints(paddings), bases)

    def linear(self, shape: Sequence[int]) -> F2Linear:
        return _shared_map(self.offset_bases, _ints(shape))

    def padded_offset(self, offset: int) -> int:
        """The physical offset of linear offset ``offset``: ``offset + sum(offset // interval * padding)``."""
        return offset + sum((offset // i) * p for i, p in zip(self.intervals, self.paddings))

    def __str__(self) -> str:
        pairs = ", ".join(f"{i}:+{p}" for i, p in zip(self.intervals, self.paddings))
        return f"#ttg.padded_shared<[{pairs}] {{offset = {_bases_text(self.offset_bases)}, block = []}}>"
