"""Exact shared-memory bank model: wavefronts and conflict ways of a warp-level access.

Shared memory has 32 banks of 4-byte words; word ``w`` lives in bank ``w % 32``.  An instruction is
served in *phases*; a phase costs ``max over banks of the number of distinct words it touches in
that bank`` wavefronts (one thread reading a word another thread also reads is a broadcast, free).

* ``ld.shared`` / ``st.shared`` ``.b32 / .b64 / .b128``: each lane moves 4/8/16 bytes; a phase is
  32 / 16 / 8 consecutive lanes (128 bytes when every lane is busy).
* ``ldmatrix`` / ``stmatrix`` ``.x1 / .x2 / .x4`` (``.trans``): each lane moves 1/2/4 32-bit
  registers; register ``r`` of every lane belongs to matrix ``r`` (8 rows of 16 bytes), and each
  matrix is one phase.  ``.trans`` only permutes registers between lanes: the words of a phase,
  hence the cost, are the same.

An *access* says which elements each thread moves, in register order: a :class:`~layoutkit.Fragment`
(register ``index`` of thread ``thread``; every replica moves its copy), a register / lane / warp
:class:`~layoutkit.algebra.linear.F2Linear` (Triton's linear layout: thread ``lane + 32 * warp``; counted from its
bases when it is a bijection, with no Fragment built) or an int array
``[threads, elems, rank]`` of coordinates (a negative coordinate marks an unused slot).  Registers
are consumed in order, ``bytes_per_lane`` per instruction; threads ``32*w .. 32*w + 31`` form warp
``w``.  The shared layout maps a coordinate to an element offset (its outputs linearised row-major
over ``output_shape``, as TileLang stores it).  When a lane's elements in one instruction are not
contiguous (``vectorizable`` is False: no single vector instruction can move them), the count is that
of the words they touch, as if gathered by that instruction.

Known figures (``docs/reference.md#shared-memory-bank-model``): transposing a 16x32 fp32 tile reads in 256 / 32 / 16
wavefronts with a row-major / ``xor row`` / ``xor 2*row`` layout:

>>> import numpy as np, layoutkit as lk
>>> t, k = np.meshgrid(np.arange(32), np.arange(16), indexing="ij")   # lane t, load k
>>> reads = np.stack([t % 16, 2 * k + t // 16], axis=-1)               # column pairs, 16 rows
>>> for fn in (lambda i, j: i * 32 + j, lambda i, j: i * 32 + (j ^ i), lambda i, j: i * 32 + (j ^ (2 * i))):
...     r = bank_conflicts(lk.Layout([16, 32], fn), reads, "float32")
...     print(r.wavefronts, r.ways)
256 16
32 2
16 1

``method="f2"`` counts power-of-two, F2-linear cases from basis vectors alone (every phase of a
linear access costs ``2**(rank(words) - rank(banks))``); ``"auto"`` uses it when it applies and the
exact enumeration otherwise.  Both give the same numbers (tested on every swizzle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ...algebra.bits import log2_exact
from ...algebra.distinct import sorted_distinct
from ...algebra.layout import Layout
from ...algebra.linear import F2Linear
from ...dtypes import canonical_dtype, element_bits
from ...errors import CoordinateError, LayoutError, ShapeError, UnsupportedError
from ...fragment.fragment import Fragment
from .hardware import WARP_SIZE

NUM_BANKS = 32
BANK_BYTES = 4
_WARP_BITS = WARP_SIZE.bit_length() - 1  # lane bits of a thread index


@dataclass(frozen=True)
class InstructionSpec:
    """How one warp-level shared-memory instruction is served.

    ``bytes_per_lane``: bytes each lane moves; ``phase_lanes``: lanes served together (SIMT);
    ``matrices``: 8x8 matrices (ldmatrix/stmatrix, one phase each; 0 for SIMT).
    """

    name: str
    bytes_per_lane: int
    phase_lanes: int
    matrices: int = 0
    trans: bool = False
    store: bool = False

    @property
    def is_matrix(self) -> bool:
        return self.matrices > 0

    @property
    def registers_per_lane(self) -> int:
        return self.bytes_per_lane // 4


_SIMT_WIDTHS = {"b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "f64": 8, "v2.b32": 8,
                "b128": 16, "v4.b32": 16, "v2.b64": 16, "v4.u32": 16, "v4.f32": 16}


def instruction_spec(name: str | InstructionSpec) -> InstructionSpec:
    """Parse an instruction name: ``ld.shared.b32|b64|b128`` (also ``v2.b32``, ``v4.b32``),
    ``st.shared.*``, ``ldmatrix.x1|x2|x4[.trans]``, ``stmatrix.x1|x2|x4[.trans]``.

    >>> instruction_spec("ldmatrix.x4.trans")
    InstructionSpec(name='ldmatrix.x4.trans', bytes_per_lane=16, phase_lanes=32, matrices=4, trans=True, store=False)
    >>> instruction_spec("st.shared.v4.b32").phase_lanes
    8
    """
    if isinstance(name, InstructionSpec):
        return name
    text = str(name).strip().lower()
    if "matrix" in text:
        store = text.startswith("stmatrix")
        if not (store or text.startswith("ldmatrix")):
            raise UnsupportedError(f"unknown matrix instruction {name!r}: expected ldmatrix.x4 / stmatrix.x2 / ...")
        num = next((n for n in (1, 2, 4) if f".x{n}" in text), None)
        if num is None:
            raise UnsupportedError(f"{name!r}: say how many matrices (.x1, .x2 or .x4)")
        trans = ".trans" in text
        canon = f"{'stmatrix' if store else 'ldmatrix'}.x{num}" + (".trans" if trans else "")
        return InstructionSpec(canon, 4 * num, WARP_SIZE, num, trans, store)
    for prefix, store in (("ld.shared.", False), ("st.shared.", True)):
        if text.startswith(prefix):
            width = _SIMT_WIDTHS.get(text[len(prefix):])
            if width is None:
                break
            return InstructionSpec(f"{prefix}b{8 * width}", width, WARP_SIZE * 4 // width, 0, False, store)
    raise UnsupportedError(
        f"unknown shared-memory instruction {name!r}: expected ld.shared.b32/b64/b128, st.shared.b32/b64/b128, "
        "ldmatrix.x1/x2/x4[.trans] or stmatrix.x1/x2/x4[.trans]"
    )


@dataclass(frozen=True)
class BankReport:
    """The cost of an access.

    ``wavefronts``: total over all warps and instructions; ``instructions``: warp-level instructions
    issued; ``per_instruction``: wavefronts of each (in warp-major order); ``ways``: the worst
    conflict degree (most distinct words one bank serves in one phase); ``ideal_wavefronts``: the
    count with no conflicts (each phase's distinct words / 32, rounded up); ``vectorizable``: every
    lane's words in each instruction are contiguous and aligned (ldmatrix: each phase is 16-byte
    rows); ``method``: ``"exact"`` or ``"f2"``.
    """

    instruction: str
    dtype: str
    wavefronts: int
    instructions: int
    ways: int
    ideal_wavefronts: int
    phases: int
    vectorizable: bool
    method: str
    per_instruction: np.ndarray = field(repr=False, compare=False)

    @property
    def wavefronts_per_instruction(self) -> float:
        return self.wavefronts / self.instructions if self.instructions else 0.0

    @property
    def conflict_free(self) -> bool:
        return self.wavefronts == self.ideal_wavefronts

    def __str__(self) -> str:
        return (f"{self.instruction} ({self.dtype}): {self.wavefronts} wavefronts over {self.instructions} "
                f"instructions ({self.wavefronts_per_instruction:g} each, ideal {self.ideal_wavefronts}), "
                f"{self.ways}-way")


# ---- access normalisation ----------------------------------------------------------------------


def _slots(layout: Layout, access) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(thread, slot, flat_coord)`` of every access, and the thread count."""
    if isinstance(access, Fragment):
        if access.input_shape != layout.input_shape:
            raise ShapeError(
                f"the access fragment covers {access.input_shape} but the shared layout takes {layout.input_shape}"
            )
        threads = access.thread_table().reshape(access.replicate_size, -1)
        index = access.index_table().reshape(-1)
        n = index.size
        t = threads.reshape(-1).astype(np.int64)
        s = np.tile(index, access.replicate_size).astype(np.int64)
        x = np.tile(np.arange(n, dtype=np.int64), access.replicate_size)
        return t, s, x, int(t.max()) + 1
    arr = np.asarray(access)
    if arr.dtype.kind not in "iu" or arr.ndim != 3 or arr.shape[-1] != len(layout.input_shape):
        raise ShapeError(
            f"an access array must be integers of shape [threads, elems, {len(layout.input_shape)}]; "
            f"found {arr.dtype} {arr.shape}"
        )
    n_threads, n_elems, _ = arr.shape
    t = np.repeat(np.arange(n_threads, dtype=np.int64), n_elems)
    s = np.tile(np.arange(n_elems, dtype=np.int64), n_threads)
    coords = arr.reshape(-1, arr.shape[-1]).astype(np.int64)
    active = np.all(coords >= 0, axis=1)
    shape = np.asarray(layout.input_shape)
    outside = active & np.any(coords >= shape, axis=1)
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        raise CoordinateError(
            f"access of thread {t[k]}, element {s[k]} is {tuple(int(v) for v in coords[k])}, outside the layout's "
            f"input shape {layout.input_shape}"
        )
    flat = np.ravel_multi_index(tuple(coords[active].T), layout.input_shape)
    return t[active], s[active], flat.astype(np.int64), n_threads


def _offsets(layout: Layout) -> np.ndarray:
    """Element offset of every coordinate (row-major over ``output_shape``), flat."""
    return np.asarray(layout.linear_table()).reshape(-1).astype(np.int64)


def _register_words(slot: np.ndarray, offset: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expand element accesses to 32-bit register words: ``(entry, register_word, memory_word)``."""
    if bits >= 32:
        per = bits // 32
        h = np.arange(per, dtype=np.int64)
        entry = np.repeat(np.arange(slot.size, dtype=np.int64), per)
        rw = (slot[:, None] * per + h).reshape(-1)
        mw = (offset[:, None] * per + h).reshape(-1)
        return entry, rw, mw
    return np.arange(slot.size, dtype=np.int64), slot // (32 // bits), (offset * bits) // 32


# ---- the exact count -----------------------------------------------------------------------------


def _runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start index and length of each run of equal values in a sorted array."""
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    return starts, np.diff(np.r_[starts, sorted_keys.size])


def _phase_groups(spec: InstructionSpec, t, rw) -> tuple[np.ndarray, np.ndarray, int, int]:
    """``(group, q, n_phase, n_inst)``: the (warp, instruction, phase) group id of every register word,
    numbered ``(warp * n_inst + q) * n_phase + phase``, and each word's instruction index within its lane."""
    q = rw // spec.registers_per_lane
    phase = rw % spec.matrices if spec.is_matrix else (t % WARP_SIZE) // spec.phase_lanes
    n_phase = spec.matrices if spec.is_matrix else WARP_SIZE // spec.phase_lanes
    n_inst = int(q.max()) + 1
    return ((t // WARP_SIZE) * n_inst + q) * n_phase + phase, q, n_phase, n_inst


def phase_bank_hits(layout: Layout, access, dtype: object, instruction: str | InstructionSpec = "ld.shared.b32"):
    """``(hits, names)``: ``hits[p, b]`` is the number of distinct 32-bit words phase ``p`` touches in bank
    ``b`` (phases in warp, instruction, phase order; the wavefronts of a phase are its row maximum), and
    ``names[p]`` labels the phase ``"w<warp> i<instruction> p<phase>"``.

    >>> import layoutkit as lk
    >>> hits, names = phase_bank_hits(lk.Layout([16, 32], lambda i, j: i * 32 + j),
    ...                               transpose_read_access(16, 32), "float32")
    >>> hits.shape, names[0], int(hits.max(axis=1).sum())
    ((16, 32), 'w0 i0 p0', 256)
    """
    spec = instruction_spec(instruction)
    bits = element_bits(canonical_dtype(dtype))
    t, s, x, _ = _slots(layout, access)
    entry, rw, mw = _register_words(s, _offsets(layout)[x], bits)
    group, _, n_phase, n_inst = _phase_groups(spec, t[entry], rw)
    big = int(mw.max()) + 1
    words = sorted_distinct(group * big + mw)
    ids, row = np.unique(words // big, return_inverse=True)
    hits = np.zeros((ids.size, NUM_BANKS), dtype=np.int64)
    np.add.at(hits, (row, (words % big) % NUM_BANKS), 1)
    names = []
    for gid in ids.tolist():
        inst, p = divmod(gid, n_phase)
        wi, qi = divmod(inst, n_inst)
        names.append(f"w{wi} i{qi} p{p}")
    return hits, names


def _exact(spec: InstructionSpec, t, rw, mw) -> dict:
    rpi = spec.registers_per_lane
    group, q, n_phase, _ = _phase_groups(spec, t, rw)
    big = (int(mw.max()) // 4 + 1) * 4  # a multiple of 4, so (key // 4) keeps 16-byte rows apart
    words = sorted_distinct(group * big + mw)  # distinct (phase, word)
    g, w = words // big, words % big
    bank_keys = np.sort(g * NUM_BANKS + w % NUM_BANKS)  # one entry per distinct word, grouped by (phase, bank)
    starts, per_bank = _runs(bank_keys)
    kg = bank_keys[starts] // NUM_BANKS
    phase_starts, _ = _runs(kg)
    group_ids = kg[phase_starts]
    wave = np.maximum.reduceat(per_bank, phase_starts)  # max over banks of distinct words, per phase
    _, distinct = _runs(g)
    ideal = -(-distinct // NUM_BANKS)
    inst_of_phase = group_ids // n_phase
    inst_starts, _ = _runs(inst_of_phase)
    per_instruction = np.add.reduceat(wave, inst_starts).astype(np.int64)
    if spec.is_matrix:  # each phase reads whole, aligned 16-byte rows
        vec = sorted_distinct(words // 4).size * 4 == words.size
    else:  # each lane's words of one instruction are contiguous and aligned
        lane_words = sorted_distinct((t * (int(q.max()) + 1) + q) * big + mw)
        key, word = lane_words // big, lane_words % big
        starts_k, count = _runs(key)
        lo, hi = word[starts_k], np.maximum.reduceat(word, starts_k)
        vec = bool(np.all((hi - lo + 1 == count) & (lo % count == 0) & (count <= rpi)))
    return dict(wavefronts=int(wave.sum()), instructions=int(inst_starts.size), ways=int(wave.max()),
                ideal=int(ideal.sum()), phases=int(group_ids.size), vectorizable=bool(vec),
                per_instruction=per_instruction)


# ---- the F2 fast path ----------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _layout_map(layout: Layout) -> F2Linear | None:
    """The linearised layout as an F2 map (input dims ``x0, x1, ...`` to ``offset``), or None."""
    names = [f"x{d}" for d in range(len(layout.input_shape))]
    return F2Linear.from_table(np.asarray(layout.linear_table())[..., None], names, ["offset"])


def _f2(spec: InstructionSpec, layout: Layout, t, s, x, n_threads: int, bits: int) -> dict | None:
    """Counts from basis vectors, or None when the case is not power-of-two and F2-linear."""
    lf = _layout_map(layout)
    n_slots = int(s.max()) + 1 if s.size else 0
    tb, sb, wb = log2_exact(n_threads), log2_exact(n_slots), log2_exact(bits)
    if lf is None or tb is None or sb is None or wb is None or bits > 64 or t.size != n_threads * n_slots:
        return None
    grid = np.full((n_threads, n_slots), -1, dtype=np.int64)
    grid[t, s] = x
    if np.any(grid < 0):
        return None
    coords = np.stack(np.unravel_index(grid, layout.input_shape), axis=-1)
    access = F2Linear.from_table(coords, ["thread", "slot"], lf.in_names)
    if access is None:
        return None
    return _f2_counts(spec, lf, access, tb, sb, wb, bits, n_threads)


def _thread_slot_map(layout: Layout, access: F2Linear) -> F2Linear | None:
    """A register / lane / warp map (Triton's linear layout of a register tensor) as the F2 map ``(thread,
    slot) -> coordinate`` that :func:`_f2` builds from a Fragment's tables (thread ``lane + 32 * warp``, slot the
    register index), or None where that map is not a bijection onto the layout's input (replicated or partial
    registers: the Fragment path counts those)."""
    lf = _layout_map(layout)
    per = dict(zip(access.in_names, access.bases))
    if lf is None or set(per) - {"register", "lane", "warp"} or tuple(n for _, n in access.out_dims) != tuple(
            layout.input_shape):
        return None
    thread = [list(v) for v in per.get("lane", ()) + per.get("warp", ())]
    slot = [list(v) for v in per.get("register", ())]
    bits = sum((n - 1).bit_length() for n in layout.input_shape)
    if len(thread) + len(slot) != bits or access.rank() != bits:
        return None
    return F2Linear.from_bases({"thread": thread, "slot": slot}, list(zip(lf.in_names, layout.input_shape)))


def _f2_counts(spec: InstructionSpec, lf: F2Linear, access: F2Linear, tb: int, sb: int, wb: int, bits: int,
               n_threads: int) -> dict | None:
    """The F2 counts of an access map ``(thread, slot) -> coordinate`` through the layout map ``lf``."""
    # thread and slot bits -> element offset, in 32-bit word units below
    addr = [img[0] << wb for per in access.compose(lf).bases for img in per]
    in_thread = list(range(tb))
    in_slot = list(range(tb, tb + sb))
    per = max(1, bits // 32)
    half_bits = log2_exact(per) or 0
    addr += [32 << h for h in range(half_bits)]
    half = list(range(tb + sb, tb + sb + half_bits))
    # register-word bits: (slot, half) for wide elements; slot >> log2(32/bits) for narrow ones
    sub = log2_exact(32 // bits) or 0 if bits < 32 else 0
    rw_bits = half + in_slot[sub:]
    elem_in_word = in_slot[:sub]
    rpi = log2_exact(spec.registers_per_lane) or 0
    if spec.is_matrix:
        internal = in_thread[:_WARP_BITS] + elem_in_word
        phases_per_inst = spec.matrices
    else:
        internal = in_thread[: log2_exact(spec.phase_lanes)] + elem_in_word + rw_bits[:rpi]
        phases_per_inst = WARP_SIZE // spec.phase_lanes
    if len(in_thread) < _WARP_BITS or len(rw_bits) < rpi:
        return None  # partial warps or instructions: leave them to the exact count
    words = [addr[b] >> 5 for b in internal]
    banks = [(addr[b] >> 5) % NUM_BANKS for b in internal]
    rank_w, rank_b = F2Linear.from_images(words).rank(), F2Linear.from_images(banks).rank()
    per_phase = 1 << (rank_w - rank_b)
    n_warps = n_threads // WARP_SIZE
    n_inst = (1 << len(rw_bits)) // spec.registers_per_lane
    phases = n_warps * n_inst * phases_per_inst
    ideal_per_phase = -(-(1 << rank_w) // NUM_BANKS)
    if spec.is_matrix:  # whole 16-byte rows: the words of a phase include both low word bits
        vec = F2Linear.from_images(words + [1, 2]).rank() == rank_w
    else:  # a lane's words span exactly the low bits: contiguous and aligned
        lane = [addr[b] >> 5 for b in elem_in_word + rw_bits[:rpi]]
        r = F2Linear.from_images(lane).rank()
        vec = all(w < (1 << r) for w in lane) and r <= rpi
    return dict(wavefronts=per_phase * phases, instructions=n_warps * n_inst, ways=per_phase,
                ideal=ideal_per_phase * phases, phases=phases, vectorizable=bool(vec),
                per_instruction=np.full(n_warps * n_inst, per_phase * phases_per_inst, dtype=np.int64))


# ---- public entry ----------------------------------------------------------------------------------


def bank_conflicts(
    smem_layout: Layout, access, dtype: object, instruction: str = "ld.shared.b32", *, method: str = "auto"
) -> BankReport:
    """Wavefronts and conflict ways of moving ``access`` through ``smem_layout`` (module doc).

    ``dtype`` is the element type in shared memory; ``instruction`` one of :func:`instruction_spec`'s
    names; ``method``: ``"auto"`` (F2 when it applies, else exact), ``"exact"`` or ``"f2"`` (raises
    :class:`~layoutkit.UnsupportedError` when it does not apply).

    >>> from layoutkit.targets import nv
    >>> C = nv.make_mma_store_layout(1, 1, 16, 16)            # one warp's fp16 accumulator
    >>> plain = nv.make_linear_layout((16, 64), "float16")
    >>> swz = nv.make_full_bank_swizzled_layout((16, 64), "float16")
    >>> C64 = C.repeat([1, 4], repeat_on_thread=False)       # 16 x 64: four 16x16 tiles per thread
    >>> nv.bank_conflicts(plain, C64, "float16", "st.shared.b32").ways
    8
    >>> nv.bank_conflicts(swz, C64, "float16", "st.shared.b32").ways
    1
    """
    if not isinstance(smem_layout, Layout):
        raise LayoutError(f"bank_conflicts expects a shared-memory Layout; found {type(smem_layout).__name__}")
    spec = instruction_spec(instruction)
    name = canonical_dtype(dtype)
    bits = element_bits(name)
    if spec.is_matrix and bits > 32:
        raise UnsupportedError(f"{spec.name} moves 16-bit pairs; {name} ({bits}-bit) cannot be loaded with it")
    if method not in ("auto", "exact", "f2"):
        raise ShapeError(f"method must be 'auto', 'exact' or 'f2'; found {method!r}")
    if isinstance(access, F2Linear):
        # a register map: counted from its bases where it is a bijection, else through its Fragment
        fast = _thread_slot_map(smem_layout, access) if method != "exact" and bits <= 64 else None
        lf = _layout_map(smem_layout)
        if fast is not None and lf is not None:
            tb, sb, wb = fast.in_dim_size("thread").bit_length() - 1, fast.in_dim_size("slot").bit_length() - 1, \
                log2_exact(bits)
            result = _f2_counts(spec, lf, fast, tb, sb, wb, bits, 1 << tb) if wb is not None else None
            if result is not None:
                return _report(spec, name, result, "f2")
        access = Fragment.from_linear(access)
    t, s, x, n_threads = _slots(smem_layout, access)
    if t.size == 0:
        raise ShapeError("expected an access that touches at least one element; found none")
    keys = t * (int(s.max()) + 1) + s
    if sorted_distinct(keys).size != t.size:
        order = np.argsort(keys, kind="stable")
        k = int(np.flatnonzero(keys[order][1:] == keys[order][:-1])[0])
        a, b = order[k], order[k + 1]
        coords = [tuple(int(v) for v in np.unravel_index(int(x[i]), smem_layout.input_shape)) for i in (a, b)]
        raise ShapeError(
            f"expected one element per (thread, register) slot; found {coords[0]} and {coords[1]} both in "
            f"thread {int(t[a])}, register {int(s[a])}"
        )
    result = None
    if method in ("auto", "f2"):
        result = _f2(spec, smem_layout, t, s, x, n_threads, bits)
        if result is None and method == "f2":
            raise UnsupportedError(
                "the F2 fast path needs a power-of-two, F2-linear layout and access with every slot of whole warps "
                "used; use method='exact'"
            )
    used = "f2" if result is not None else "exact"
    if result is None:
        offsets = _offsets(smem_layout)[x]
        entry, rw, mw = _register_words(s, offsets, bits)
        result = _exact(spec, t[entry], rw, mw)
    return _report(spec, name, result, used)


def _report(spec: InstructionSpec, name: str, result: dict, used: str) -> BankReport:
    return BankReport(
        instruction=spec.name, dtype=name, wavefronts=result["wavefronts"], instructions=result["instructions"],
        ways=result["ways"], ideal_wavefronts=result["ideal"], phases=result["phases"],
        vectorizable=result["vectorizable"], method=used, per_instruction=result["per_instruction"],
    )


def warp_wavefronts(addr: np.ndarray, width: int) -> int:
    """Bank wavefronts of one warp's shared access: lane ``i`` touches ``width`` bytes from byte ``addr[i]``;
    16-byte accesses go in quarter-warp phases, 8-byte ones in half-warp phases; per phase, the most distinct
    32-bit words that fall in one of the 32 banks (:func:`bank_conflicts` for an access given as a layout and
    coordinates).

    >>> lanes = np.arange(32)
    >>> warp_wavefronts(lanes * 4, 4), warp_wavefronts(lanes * 128, 4), warp_wavefronts(lanes * 16, 16)
    (1, 32, 4)
    """
    per = 8 if width >= 16 else 16 if width == 8 else WARP_SIZE
    total = 0
    for ph in range(0, WARP_SIZE, per):
        a = addr[ph:ph + per, None] + np.arange(0, max(width, 4), 4)[None, :]
        words = np.unique(a // 4)
        total += int(np.bincount(words % NUM_BANKS, minlength=NUM_BANKS).max())
    return total


def transpose_read_access(rows: int, cols: int, threads: int = WARP_SIZE) -> np.ndarray:
    """The access ``[threads, rows*cols/threads, 2]`` that reads a ``rows x cols`` tile column by
    column (load ``k`` of lane ``t`` reads flat element ``k*threads + t`` of the transposed tile).

    >>> transpose_read_access(16, 32)[:, 0][:3].tolist()
    [[0, 0], [1, 0], [2, 0]]
    """
    if (rows * cols) % threads:
        raise ShapeError(f"{rows}x{cols} elements do not split evenly over {threads} threads")
    t, k = np.meshgrid(np.arange(threads), np.arange(rows * cols // threads), indexing="ij")
    flat = k * threads + t
    return np.stack([flat % rows, flat // rows], axis=-1)


__all__ = ["BankReport", "InstructionSpec", "bank_conflicts", "instruction_spec", "transpose_read_access",
           "warp_wavefronts", "NUM_BANKS", "BANK_BYTES"]
