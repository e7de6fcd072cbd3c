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
from itertools import permutations, product

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

    @property
    def rank(self) -> int:
        raise NotImplementedError

    def linear(self, shape: Sequence[int]) -> F2Linear:
        raise NotImplementedError

    def basis_lists(self, shape: Sequence[int]) -> tuple[dict[str, list[list[int]]], list[int]]:
        """The basis images of :meth:`linear` on ``shape`` per in dim and its out dim sizes, without building
        (and checking) the map where the encoding can say them directly: what a caller pricing many candidate
        layouts reads.

        >>> bases, sizes = Blocked((4, 1), (8, 4), (1, 4), (0, 1)).basis_lists((64, 32))
        >>> bases["register"], sizes
        ([[1, 0], [2, 0], [32, 0], [0, 16]], [64, 32])
        """
        f = self.linear(shape)
        return {n: [list(v) for v in per] for n, per in zip(f.in_names, f.bases)}, [e for _, e in f.out_dims]

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

    def basis_lists(self, shape: Sequence[int]) -> tuple[dict[str, list[list[int]]], list[int]]:
        s = self._check(shape)
        b = _Builder(self.rank).identity(REG, self.size_per_thread, self.order)
        b.identity(LANE, self.threads_per_warp, self.order).identity(WARP, self.warps_per_cta, self.order)
        b.fit(s, self.order)
        return b.bases, b.size

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

    def basis_lists(self, shape: Sequence[int]) -> tuple[dict[str, list[list[int]]], list[int]]:
        s = self._check(shape)
        full = s[:self.dim] + (1,) + s[self.dim:]
        bases, _ = self.parent.basis_lists(full)
        return {n: [v[:self.dim] + v[self.dim + 1:] for v in per] for n, per in bases.items()}, list(s)

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


@dataclass(frozen=True)
class Auto:
    """``#gluon.auto_encoding``: a layout left to the solver."""

    def __str__(self) -> str:
        return "#gluon.auto_encoding"


AUTO = Auto()
Encoding = Distributed | Shared | Auto


class _Reader:
    """Recursive descent over MLIR attribute text: ``{key = value, ...}``, ``[...]`` lists, integers,
    booleans and encoding attributes (inline ``#ttg.x<...>`` or an alias ``#name``)."""

    def __init__(self, text: str, aliases: dict[str, str]):
        self.text, self.pos, self.aliases = text, 0, aliases

    def fail(self, expected: str) -> UnsupportedError:
        return UnsupportedError(f"encoding text: expected {expected} at offset {self.pos} of {self.text!r}")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, token: str) -> bool:
        self.skip()
        return self.text.startswith(token, self.pos)

    def take(self, token: str) -> None:
        if not self.peek(token):
            raise self.fail(repr(token))
        self.pos += len(token)

    def word(self) -> str:
        self.skip()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "_.-"):
            self.pos += 1
        if start == self.pos:
            raise self.fail("a name or number")
        return self.text[start:self.pos]

    def value(self):
        if self.peek("["):
            self.take("[")
            items = []
            while not self.peek("]"):
                items.append(self.value())
                if not self.peek("]"):
                    self.take(",")
            self.take("]")
            return items
        if self.peek("#"):
            return self.encoding()
        w = self.word()
        if w in ("true", "false"):
            return w == "true"
        try:
            return int(w)
        except ValueError:
            raise self.fail(f"an integer, boolean, list or encoding (found {w!r})") from None

    def fields(self) -> dict:
        self.take("{")
        out = {}
        while not self.peek("}"):
            key = self.word()
            self.take("=")
            out[key] = self.value()
            if not self.peek("}"):
                self.take(",")
        self.take("}")
        return out

    def encoding(self) -> Encoding:
        self.take("#")
        name = self.word()
        if name == "gluon.auto_encoding":
            return AUTO
        if not self.peek("<"):
            if name not in self.aliases:
                raise UnsupportedError(f"encoding text: alias #{name} is not defined; known: {sorted(self.aliases)}")
            return parse_encoding(self.aliases[name], self.aliases)
        self.take("<")
        pairs = None
        if name == "ttg.padded_shared":
            self.take("[")
            pairs = []
            while not self.peek("]"):
                i = int(self.word())
                self.take(":")
                self.take("+")
                pairs.append((i, int(self.word())))
                if not self.peek("]"):
                    self.take(",")
            self.take("]")
        f = self.fields()
        self.take(">")
        return _build(name, f, pairs, self.text)


def _build(name: str, f: dict, pairs, text: str) -> Encoding:
    try:
        if name == "ttg.blocked":
            return Blocked(_ints(f["sizePerThread"]), _ints(f["threadsPerWarp"]), _ints(f["warpsPerCTA"]),
                           _ints(f["order"]))
        if name == "ttg.slice":
            return Slice(int(f["dim"]), f["parent"])
        if name == "ttg.dot_op":
            return DotOperand(int(f["opIdx"]), f["parent"], int(f.get("kWidth", 0)))
        if name == "ttg.nvidia_mma":
            return NvidiaMma(int(f["versionMajor"]), int(f["versionMinor"]), _ints(f["warpsPerCTA"]),
                             _ints(f["instrShape"]))
        if name == "ttg.linear":
            return Linear(*(tuple(_ints(v) for v in f.get(k, [])) for k in (REG, LANE, WARP, "block")))
        if name == "ttg.swizzled_shared":
            return SwizzledShared(int(f["vec"]), int(f["perPhase"]), int(f["maxPhase"]), _ints(f["order"]))
        if name == "ttg.nvmma_shared":
            return NVMMAShared(int(f["swizzlingByteWidth"]), int(f["elementBitWidth"]), bool(f.get("transposed")),
                               bool(f.get("fp4Padded")))
        if name == "ttg.padded_shared":
            iv, pd = zip(*pairs)
            if "offset" in f:
                return PaddedShared(_ints(iv), _ints(pd), tuple(_ints(v) for v in f["offset"]))
            return PaddedShared.identity(iv, pd, f["order"], f["shape"])
    except (KeyError, TypeError, ValueError) as err:
        raise UnsupportedError(f"encoding text {text!r}: {name} lacks or mistypes field {err}") from None
    raise UnsupportedError(f"encoding text {text!r}: #{name} is not one of the encodings read (blocked, slice, "
                           "dot_op, nvidia_mma, linear, swizzled_shared, nvmma_shared, padded_shared)")


def parse_encoding(text: str, aliases: dict[str, str] | None = None) -> Encoding:
    """The encoding an attribute text names (``aliases``: ``name -> text`` of the module's ``#name = ...``).

    >>> parse_encoding("#ttg.slice<{dim = 1, parent = #b}>", {"b": str(Blocked((1,), (32,), (4,), (0,)))}).dim
    1
    >>> parse_encoding(str(NVMMAShared(128, 16))) == NVMMAShared(128, 16)
    True
    """
    r = _Reader(text, aliases or {})
    enc = r.encoding()
    r.skip()
    if r.pos != len(r.text):
        raise r.fail("the end of the encoding")
    return enc


ORDER_SEARCH_RANK = 6
"""Highest rank for which :func:`blocked_of` tries every dim order (``rank!`` of them, 720 at rank 6) when
broadcast bases hide the order; a larger rank tries only the order the bases show."""


def blocked_of(f: F2Linear, shape: Sequence[int]) -> Blocked | None:
    """The blocked encoding whose map on ``shape`` is ``f``, or None when there is none (none is searched
    for past :data:`ORDER_SEARCH_RANK` among orders the bases do not show).

    >>> b = Blocked((1, 4), (8, 4), (4, 1), (1, 0))
    >>> blocked_of(b.linear((64, 64)), (64, 64)) == b
    True
    """
    rank = len(shape)
    per = dict(zip(f.in_names, f.bases))
    regs, lanes, warps = per.get(REG, ()), per.get(LANE, ()), per.get(WARP, ())

    def runs(bases) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for v in bases:
            nz = [d for d in range(rank) if v[d]]
            d = nz[0] if len(nz) == 1 else -1
            if out and out[-1][0] == d:
                out[-1] = (d, out[-1][1] * 2)
            else:
                out.append((d, 2))
        return out

    order: list[int] = []
    for d, _ in runs(regs) + runs(lanes) + runs(warps):
        if d >= 0 and d not in order:
            order.append(d)
    order += [d for d in range(rank) if d not in order]
    sizes = []
    for bases in (lanes, warps):
        n = [1] * rank
        for d, k in runs(bases):
            if d >= 0:
                n[d] *= k
        sizes.append(n)
    lane_n, warp_n = sizes
    # a broadcast (zero) lane or warp basis stands for a dim the shape is smaller than: try each dim for it
    lane_zeros = sum(1 for v in lanes if not any(v))
    warp_zeros = sum(1 for v in warps if not any(v))
    spt = [1] * rank  # the leading registers that step 1, 2, 4, ... along one dim
    for v in regs:
        nz = [d for d in range(rank) if v[d]]
        if len(nz) != 1 or v[nz[0]] != spt[nz[0]] or (spt[nz[0]] == 1 and any(x > 1 for x in spt)):
            break
        spt[nz[0]] *= 2
    # zero bases hide the order of the dims they stand for: the derived order first, then the others (rank!
    # of them: past ORDER_SEARCH_RANK only the derived one, so a hostile rank cannot make the search hang)
    others = permutations(range(rank)) if rank <= ORDER_SEARCH_RANK else ()
    orders = [tuple(order)] + [o for o in others if o != tuple(order)]
    for o, ld, wd in product(orders, order[::-1] if lane_zeros else order[-1:],
                             order[::-1] if warp_zeros else order[-1:]):
        tpw, wpc = list(lane_n), list(warp_n)
        tpw[ld] <<= lane_zeros
        wpc[wd] <<= warp_zeros
        walk, k = [1] * rank, 0  # registers step 1, 2, 4, ... along each dim of the order in turn
        for d in o:
            while k < len(regs) and list(regs[k]) == _unit(rank, d, walk[d]):
                walk[d] *= 2
                k += 1
        for cand_spt in (walk, spt, [1] * rank):
            cand = Blocked(tuple(cand_spt), tuple(tpw), tuple(wpc), o)
            try:
                if cand.linear(shape) == f:
                    return cand
            except (ShapeError, UnsupportedError):
                continue
    return None
