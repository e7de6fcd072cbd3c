"""Blackwell (sm_100) tensor memory: the TCGEN05 MMA atom, the tensor-memory (TMEM) layouts of its
operands and the register fragment of a ``tcgen05.ld`` / ``tcgen05.st`` copy, as TileLang 0.1.15 builds
them.

Tensor memory is 128 datapaths (lanes) by 512 columns of 32 bits per CTA.  A TMEM buffer's layout maps
a buffer coordinate to ``(datapath, column)``, the column counted in the buffer's own element type
(an element narrower than its 32-bit storage word, a 16-bit accumulator, steps two value columns per
word).  The MMA atom (:func:`select_tcgen05_atom`, TileLang's ``GetTCGEN5MMAMeta``) decides the
accumulator's datapath arrangement, the PTX "data path layout organization" variants:

- M = 128 per CTA (layout D, and A for two CTAs): row ``m`` is datapath ``m``, column ``n`` column ``n``;
- M = 64 (layout F): rows in four 16-datapath quarters of the four 32-lane sub-partitions, a second M
  tile interleaved into the other halves or in fresh columns; M = 64 / 32 weight-stationary or two-CTA
  (layouts E / G, B / C): N halves / quarters stacked over the datapaths.

Tiles of the atom repeat over the buffer (M tiles first, then N tiles, then leading batch dims), as
CUTLASS's ``tmem_frg`` does.

>>> atom = select_tcgen05_atom(128, 128, 64, "bfloat16", "float32")
>>> atom
Tcgen05Atom(m=128, n=128, k=16, weight_stationary=False, two_cta=False)
>>> L = make_tmem_accumulator_layout((128, 128), "float32", atom)
>>> print(*L.forward_index, L.output_shape)
_i _j (128, 128)

A ``tcgen05.ld`` of that accumulator into a fragment, 32 datapaths per warp (``32dp32b``): thread
``t`` holds datapath ``t``, its registers the columns in order:

>>> F = make_tmem_copy_fragment(L, "float32", ((0, 128), (0, 128)), (128, 128), ((0, 128), (0, 128)), 128)
>>> print(F.forward_thread, *F.forward_index)
_i _j
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import numpy as np

from ...algebra.layout import Layout
from ...dtypes import canonical_dtype, element_bits, is_float8
from ...errors import ShapeError, UnsupportedError
from ...fragment.fragment import Fragment

TMEM_DATAPATHS = 128
"""Datapaths (lanes) of one CTA's tensor memory."""
TMEM_COLUMNS = 512
"""32-bit columns of one CTA's tensor memory."""
WARP_GROUP_THREADS = 128
"""Threads of one warp group: the four warps that together reach all 128 datapaths."""
_WS_N = (256, 128, 64)
"""Instruction N of the weight-stationary (``.ws``) MMA, widest first."""


@dataclass(frozen=True)
class Tcgen05Atom:
    """One TCGEN05 MMA instruction: ``m`` x ``n`` x ``k`` (``m`` over both CTAs of a ``two_cta`` pair),
    ``weight_stationary`` for the ``.ws`` form."""

    m: int
    n: int
    k: int
    weight_stationary: bool = False
    two_cta: bool = False

    @property
    def m_per_cta(self) -> int:
        return self.m // (2 if self.two_cta else 1)


def _family(ab_dtype: str, c_dtype: str) -> str | None:
    """``"16bit"`` (f16 / bf16 into f32), ``"narrow"`` (f8 / f6 / f4 into f32 or f16), ``"int8"``."""
    if ab_dtype in ("float16", "bfloat16") and c_dtype == "float32":
        return "16bit"
    narrow = is_float8(ab_dtype) or ab_dtype.startswith(("float6", "float4"))
    if narrow and c_dtype in ("float32", "float16"):
        return "narrow"
    if ab_dtype in ("int8", "uint8") and c_dtype == "int32":
        return "int8"
    return None


def _dense_ns(family: str, low: int = 8) -> list[int]:
    """Instruction N of the dense 1-CTA MMA, widest first (int8 steps by 16 above 32, by 8 below)."""
    out, n = [], 256
    while n >= low:
        out.append(n)
        n -= 16 if family == "int8" and n > 32 else 8
    return out


def select_tcgen05_atom(M: int, N: int, K: int, ab_dtype: object, c_dtype: object, *, two_cta: bool = False,
                        weight_stationary: bool = True) -> Tcgen05Atom:
    """The MMA atom of an ``M x N x K`` GEMM (TileLang's ``GetTCGEN5MMAMeta``): two-CTA atoms only where the
    GEMM asks (``use_2cta``), then the widest N dividing ``N``; M = 128 takes the dense atom (narrow floats
    and int8 try ``.ws`` first), M = 64 / 32 the ``.ws`` atom (narrow floats and int8 at M = 64 also the
    dense one).  No atom fits: :class:`UnsupportedError`.

    >>> select_tcgen05_atom(64, 128, 32, "float16", "float32")
    Tcgen05Atom(m=64, n=128, k=16, weight_stationary=True, two_cta=False)
    >>> select_tcgen05_atom(128, 96, 64, "int8", "int32").n
    96
    """
    a, c = canonical_dtype(ab_dtype), canonical_dtype(c_dtype)
    fam = _family(a, c)
    k = 16 if fam == "16bit" else 32
    if fam is not None and K % k == 0:
        atom = _pick(int(M), int(N), k, fam, two_cta, weight_stationary)
        if atom is not None:
            return atom
    raise UnsupportedError(f"no TCGEN05 MMA atom for M={M}, N={N}, K={K}, A/B {a}, C {c} (TileLang's "
                           f"GetTCGEN5MMAMeta fails the same GEMM)")


def _pick(M: int, N: int, k: int, fam: str, two_cta: bool, ws: bool) -> Tcgen05Atom | None:
    if two_cta and M % 64 == 0:
        for n in range(256, (32 if fam == "int8" else 16) - 1, -(32 if fam == "int8" else 16)):
            if N % n == 0:
                return Tcgen05Atom(256 if M % 128 == 0 else 128, n, k, False, True)
    for m in (128, 64, 32):
        if M % m:
            continue
        if ws and (m < 128 or fam != "16bit"):
            ws_n = next((n for n in _WS_N if N % n == 0), None)
            if ws_n is not None:
                return Tcgen05Atom(m, ws_n, k, True)
        dense = m == 128 or (m == 64 and fam != "16bit")
        dense_n = next((n for n in _dense_ns(fam) if N % n == 0), None) if dense else None
        return None if dense_n is None else Tcgen05Atom(m, dense_n, k)
    return None


# ---- TMEM layouts ---------------------------------------------------------------------------------
# An atom is a list of modes per matrix dim: (extent, virtual stride); the virtual address is
# datapath + 128 * column.  ``tile_stride`` is where the second tile starts in the atom's complement.

def _atom_modes(m: int, n: int, kind: str) -> tuple[list, list]:
    """``(row modes, column modes)`` of one atom: ``kind`` ``"full"`` (layouts A / D), ``"quarters"``
    (layout F), ``"halves"`` / ``"fourths"`` (N folded over the datapaths: layouts B / E, C / G)."""
    if kind == "full":
        return [(m, 1)], [(n, 128)]
    if kind == "quarters":
        return [(16, 1), (4, 32)], [(n, 128)]
    parts = 2 if kind == "halves" else 4
    if n % parts:
        raise ShapeError(f"a TMEM atom folding N={n} into {parts} datapath groups needs N divisible by {parts}")
    return [(m, 1)], [(n // parts, 128), (parts, m)]


def _complement(modes: list, total: int) -> list:
    """CuTe ``complement``: the modes that fill the gaps of ``modes``'s image up to ``total``."""
    out, current = [], 1
    for extent, stride in sorted(modes, key=lambda x: x[1]):
        if stride // current > 1:
            out.append((stride // current, current))
        current = stride * extent
    out.append((max(total // current, 1), current))
    return out


def _tiled_layout(shape: tuple[int, ...], m: int, n: int, kind: str, tile_stride: int, col_scale: int) -> Layout:
    """The atom repeated over ``shape`` (``[..., M, N]``): M tiles, N tiles, then the batch dims, the last
    fastest, from ``tile_stride`` on; restrided to ``(datapath, column * col_scale)``."""
    *batch, rows, cols = shape
    if rows % m or cols % n:
        raise ShapeError(f"TMEM buffer {list(shape)}: M {rows} / N {cols} must be multiples of the atom {m} x {n}")
    if prod(shape) * 32 > TMEM_DATAPATHS * TMEM_COLUMNS * 32 * col_scale:
        raise ShapeError(f"TMEM buffer {list(shape)} exceeds the 128 x 512 words of tensor memory")
    row_modes, col_modes = _atom_modes(m, n, kind)
    comp = _complement(row_modes + col_modes, 1 << 30)
    tiler = [rows // m, cols // n, *reversed(batch)]

    def fn(*idx):
        *b, i, j = idx
        terms = _mode_terms(i % m if rows > m else i, row_modes) + _mode_terms(j % n if cols > n else j, col_modes)
        coords = [i // m if rows > m else 0, j // n if cols > n else 0, *reversed(b)]
        tile = sum((c * s for c, s in zip(coords, _strides(tiler, tile_stride)) if not isinstance(c, int)), 0)
        terms += _mode_terms(tile, comp, flat=True) if not isinstance(tile, int) else []
        dp = sum((c * s for c, s in terms if s < 128), 0)
        col = sum((c * (s // 128) for c, s in terms if s >= 128), 0)
        return dp, col * col_scale

    return Layout(list(shape), fn)


def _strides(extents: list, first: int) -> list:
    out, s = [], first
    for e in extents:
        out.append(s)
        s *= e
    return out


def _mode_terms(x, modes: list, flat: bool = False) -> list:
    """``(coordinate, stride)`` of ``x`` split over ``modes`` (column-major); a stride below 128 is a
    datapath step, a multiple of 128 a column step."""
    out, div = [], 1
    for k, (extent, stride) in enumerate(modes):
        last = k == len(modes) - 1
        c = x // div if last else (x // div) % extent
        if div == 1 and last:
            c = x
        if stride % 128 and stride >= 128:
            raise ShapeError(f"TMEM mode stride {stride} is neither a datapath step nor a whole column")
        out.append((c, stride))
        div *= extent
    return out


def _kind_1cta(m: int, weight_stationary: bool) -> str:
    if m == 128:
        return "full"
    if m == 64:
        return "halves" if weight_stationary else "quarters"
    if m == 32 and weight_stationary:
        return "fourths"
    raise UnsupportedError(f"no 1-CTA TMEM accumulator atom for M={m}{' (.ws)' if weight_stationary else ''}")


def make_tmem_accumulator_layout(shape: Sequence[int], dtype: object, atom: Tcgen05Atom, *,
                                 a_in_tmem: bool = False) -> Layout:
    """The TMEM layout of a TCGEN05 accumulator ``shape`` (``[..., M, N]``) of ``dtype`` (TileLang's
    ``make_tmem_frg_c``): one 32-bit word per element, so a 16-bit element steps two columns; the
    ``.ws`` atom's own datapath fold, else the dense atom, interleaving a second M = 64 tile into the other
    datapath halves unless A is in tensor memory too (``a_in_tmem``: the TS form's non-interleaved
    allocation, fresh columns).

    >>> print(*make_tmem_accumulator_layout((64, 128), "float32", Tcgen05Atom(64, 128, 16, True)).forward_index)
    _j // 64 * 64 + _i _j % 64
    """
    dims = tuple(int(x) for x in shape)
    scale = 32 // min(element_bits(canonical_dtype(dtype)), 32)
    if atom.weight_stationary and not a_in_tmem:
        return _tiled_layout(dims, atom.m, atom.n, _kind_1cta(atom.m, True), 1, scale)
    m = atom.m_per_cta
    if atom.two_cta:
        kind = {128: "full", 64: "halves", 32: "fourths"}.get(m)
        if kind is None:
            raise UnsupportedError(f"no 2-CTA TMEM accumulator atom for M={m} per CTA")
        return _tiled_layout(dims, m, atom.n, kind, 1, scale)
    kind = _kind_1cta(m, False)
    return _tiled_layout(dims, m, atom.n, kind, 2 if a_in_tmem and kind == "quarters" else 1, scale)


def make_tmem_operand_a_layout(shape: Sequence[int], dtype: object, atom: Tcgen05Atom) -> Layout:
    """The TMEM layout of a TS GEMM's A operand (TileLang's ``make_tmem_frg_a``): the dense atom
    ``m_per_cta x k`` tiled non-interleaved (two CTAs: duplicated, the full-datapath atom per CTA), columns in
    A's own element type.

    >>> print(*make_tmem_operand_a_layout((128, 64), "bfloat16", Tcgen05Atom(128, 64, 16)).forward_index)
    _i _j
    """
    if atom.two_cta and atom.m_per_cta != 128:
        raise UnsupportedError("a two-CTA TS GEMM's A operand with M = 64 per CTA uses the duplicated TMEM "
                               "allocation, which a one-to-one layout cannot express (TileLang 0.1.15 refuses it "
                               "as well)")
    kind = _kind_1cta(atom.m_per_cta, False)
    return _tiled_layout(tuple(int(x) for x in shape), atom.m_per_cta, atom.k, kind, 2 if kind == "quarters" else 1, 1)


# ---- tcgen05.ld / tcgen05.st ----------------------------------------------------------------------

QUARTER_DATAPATHS = tuple(32 * w + r for w in range(4) for r in range(16))
"""The datapaths of layout F (an M = 64 accumulator): the low 16 of each warp's 32-lane sub-partition."""


def make_tmem_copy_fragment(tmem_layout: Layout, dtype: object, tmem_region: Sequence[tuple[int, int]],
                            reg_shape: Sequence[int], reg_region: Sequence[tuple[int, int]],
                            threads: int) -> Fragment:
    """The register fragment of a copy between a TMEM buffer laid out by ``tmem_layout`` (its region
    ``tmem_region`` of ``(start, extent)`` pairs) and a fragment buffer ``reg_shape`` (its region
    ``reg_region``), with ``threads`` threads (TileLang's ``InferTMemLayout``).  The tile must cover its
    datapaths by whole 32-bit columns, each once: all 128 (the ``32dp32b`` shape: thread ``datapath``), or
    layout F's low 16 of each sub-partition (``16dp64b``, issued once per warp: lane ``t`` of warp ``w``
    holds datapath ``32 w + 8 (t % 2) + t // 4`` and columns ``(t // 2) % 2 + 2 n``, a power-of-two count of
    column pairs, at most 64).  As many warp groups as the columns allow take contiguous column chunks
    (thread ``+ 128 * chunk``); registers follow the columns in order (two 16-bit values of a packed word next
    to each other); the register buffer repeats the tile as a row-major grid of slices, each slice's
    registers after the previous one's.  No shape fits (a gapped tile, an odd 16-datapath one):
    :class:`UnsupportedError`, where TileLang's copy proposes no layout.

    >>> L = Layout([128, 128], lambda i, j: (i, j))
    >>> F = make_tmem_copy_fragment(L, "float32", ((0, 128), (64, 64)), (128, 128), ((0, 128), (64, 64)), 256)
    >>> print(F.forward_thread, *F.forward_index, F.thread_extent)
    _j % 64 // 32 * 128 + _i _j // 64 * 32 + _j % 32 256
    """
    bits = element_bits(canonical_dtype(dtype))
    per_word = max(32 // bits, 1)
    t_ext = [e for _, e in tmem_region if e != 1]
    r_ext = [e for _, e in reg_region if e != 1]
    if t_ext != r_ext:
        raise ShapeError(f"TMEM copy: the TMEM region extents {t_ext} and the register region's {r_ext} differ")
    packed16 = per_word > 1 and _half_filled(tmem_layout)
    dp, col = _tile_table(tmem_layout, tmem_region)
    word = col // per_word
    vpc = 1 if packed16 else per_word
    columns = int(word.max()) + 1
    if int(dp.max()) >= TMEM_DATAPATHS:
        raise UnsupportedError("TMEM copy: the tile reaches past datapath 127")
    hits = np.zeros((TMEM_DATAPATHS, columns), dtype=np.int64)
    np.add.at(hits, (dp.ravel(), word.ravel()), 1)
    used = tuple(int(d) for d in np.flatnonzero(hits.any(axis=1)))
    quarter = used == QUARTER_DATAPATHS
    if not (quarter or used == tuple(range(TMEM_DATAPATHS))) or not (hits[list(used)] == vpc).all():
        raise UnsupportedError(f"TMEM copy: the tile does not cover datapaths 0..127 (or layout F's) x {columns} "
                               f"columns once each (a gapped tile): no tcgen05.ld / st shape TileLang plans fits")
    wgs = max(int(threads) // WARP_GROUP_THREADS, 1)
    groups = next((g for g in range(wgs, 0, -1) if columns % g == 0 and (not quarter or _pairs_ok(columns // g))),
                  None)
    if groups is None:
        raise UnsupportedError(f"TMEM copy: layout F's {columns} columns are no power-of-two count of column pairs "
                               f"(at most 64) per warp group: the 16dp64b shape does not fit")
    return _copy_fragment(tmem_layout, tmem_region, reg_shape, reg_region, per_word, packed16,
                          (columns // groups, vpc, groups, quarter))


def _pairs_ok(chunk: int) -> bool:
    """A 16dp64b issue per warp group: ``chunk`` columns in a power-of-two number (<= 64) of pairs."""
    pairs = chunk // 2
    return chunk % 2 == 0 and 0 < pairs <= 64 and pairs & (pairs - 1) == 0


def _half_filled(layout: Layout) -> bool:
    """A 16-bit TMEM buffer with one value per 32-bit word (an accumulator) moves with pack::16b."""
    t = layout.table().reshape(-1, 2)
    return layout.size < len(np.unique(t[:, 0])) * (int(t[:, 1].max()) + 1)


def _tile_table(layout: Layout, region) -> tuple[np.ndarray, np.ndarray]:
    """``(datapath, column)`` of every region element, relative to the region's origin."""
    idx = np.meshgrid(*[np.arange(s, s + e) for s, e in region], indexing="ij")
    out = layout.apply(np.stack(idx, axis=-1))
    origin = layout.apply(np.asarray([s for s, _ in region], dtype=np.int64))
    return out[..., 0] - origin[0], out[..., 1] - origin[1]


def _copy_fragment(layout, tmem_region, reg_shape, reg_region, per_word, packed16, plan):
    """The fragment of :func:`make_tmem_copy_fragment`; ``plan``: columns per warp group, values per
    word, warp groups, whether the tile is layout F (16dp64b)."""
    chunk, vpc, groups, quarter = plan
    t_dims = [d for d, (_, e) in enumerate(tmem_region) if e != 1]
    r_dims = [d for d, (_, e) in enumerate(reg_region) if e != 1]
    reps = []
    for d, (n, (_, e)) in enumerate(zip(reg_shape, reg_region)):
        if n % e:
            raise ShapeError(f"TMEM copy: register dim {d} ({n}) is not a whole number of regions ({e})")
        reps.append(n // e)
    origin = layout.map_forward_index([s for s, _ in tmem_region])
    per_slice = prod(e for _, e in tmem_region) // (WARP_GROUP_THREADS * groups)

    def fn(*y):
        local = [y[d] % e if n > e else y[d] for d, (n, (_, e)) in enumerate(zip(reg_shape, reg_region))]
        coord = [s for s, _ in tmem_region]
        for td, rd in zip(t_dims, r_dims):
            coord[td] = coord[td] + local[rd]
        dp, col = layout.map_forward_index(coord)
        dp, col = dp - origin[0], col - origin[1]
        word, sub = (col // per_word, col % per_word) if per_word > 1 else (col, 0)
        c = word % chunk if groups > 1 else word
        if quarter:  # 16dp64b: lane 4 (r % 8) + 2 (c % 2) + r // 8 of warp dp // 32, register c // 2
            r = dp % 32
            lane, c = dp // 32 * 32 + r % 8 * 4 + c % 2 * 2 + r // 8, c // 2
        else:
            lane = dp
        value = c * vpc + (0 if packed16 or per_word == 1 else sub)
        slot, stride = 0, 1
        for d in reversed(range(len(reg_shape))):
            if reps[d] > 1:
                slot = slot + (y[d] // reg_region[d][1]) * stride
                stride *= reps[d]
        thread = lane + (word // chunk) * WARP_GROUP_THREADS if groups > 1 else lane
        return thread, value + slot * per_slice

    return Fragment(list(reg_shape), fn)
