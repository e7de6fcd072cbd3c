"""The shared-memory bank model: known figures, instruction semantics, and the F2 fast path agreeing
with the exact count on every swizzle and access pattern."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.targets import nv
from layoutkit.targets.nv.banks import transpose_read_access
from layoutkit.targets.nv.swizzle import SHARED_LAYOUTS

# ---- known figures (docs/reference.md#shared-memory-bank-model) ------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "wavefronts", "ways"),
    [
        (lambda i, j: i * 32 + j, 256, 16),
        (lambda i, j: i * 32 + (j ^ i), 32, 2),
        (lambda i, j: i * 32 + (j ^ (2 * i)), 16, 1),
    ],
    ids=["row-major", "xor-row", "xor-2row"],
)
@pytest.mark.parametrize("method", ["exact", "auto"])
def test_transpose_16x32_fp32(fn, wavefronts, ways, method):
    layout = lk.Layout([16, 32], fn)
    r = nv.bank_conflicts(layout, transpose_read_access(16, 32), "float32", method=method)
    assert (r.wavefronts, r.ways, r.instructions) == (wavefronts, ways, 16)
    assert r.ideal_wavefronts == 16
    assert r.method == ("exact" if method == "exact" else "f2")


@pytest.mark.parametrize("shape", [(16, 64), (64, 64), (32, 128), (128, 64)])
def test_fp16_accumulator_store_8way_unswizzled_conflict_free_swizzled(shape):
    rows, cols = shape
    brw, bcw = (2, 2) if rows >= 32 else (1, 1)
    frag = nv.make_mma_store_layout(brw, bcw, rows // brw, cols // bcw)
    plain = nv.bank_conflicts(nv.make_linear_layout(shape, "float16"), frag, "float16", "st.shared.b32")
    assert plain.ways == 8 and plain.wavefronts == 8 * plain.instructions
    for kind in ("32B", "64B", "128B"):
        smem = SHARED_LAYOUTS[kind](shape, "float16")
        r = nv.bank_conflicts(smem, frag, "float16", "st.shared.b32")
        assert r.ways == 1 and r.conflict_free and r.wavefronts == r.instructions, kind


def test_ldmatrix_x4_a_operand():
    frag = nv.make_mma_load_layout("A", "float16", 2, 2, 32, 32, 64)
    plain = nv.bank_conflicts(nv.make_linear_layout((64, 64), "float16"), frag, "float16", "ldmatrix.x4")
    swz = nv.bank_conflicts(nv.make_full_bank_swizzled_layout((64, 64), "float16"), frag, "float16", "ldmatrix.x4")
    assert plain.instructions == swz.instructions == 32  # 4 warps x (2 M atoms x 4 K atoms)
    assert plain.per_instruction.tolist() == [32] * 32 and plain.ways == 8
    assert swz.per_instruction.tolist() == [4] * 32 and swz.conflict_free and swz.vectorizable


# ---- instruction semantics -------------------------------------------------------------------------


def test_instruction_names():
    assert nv.instruction_spec("ld.shared.b64").phase_lanes == 16
    assert nv.instruction_spec("st.shared.b128").phase_lanes == 8
    assert nv.instruction_spec("stmatrix.x2.trans").matrices == 2
    with pytest.raises(lk.UnsupportedError):
        nv.instruction_spec("ld.global.b32")
    with pytest.raises(lk.UnsupportedError):
        nv.instruction_spec("ldmatrix")


def test_broadcast_is_free_and_phases_split_wide_accesses():
    layout = nv.make_linear_layout((32, 32), "float32")
    same = np.zeros((32, 1, 2), dtype=np.int64)  # every lane reads element (0, 0)
    assert nv.bank_conflicts(layout, same, "float32").wavefronts == 1
    # each lane reads 4 consecutive fp32 of its own row (16 bytes): 4 phases of 8 lanes
    rows = np.stack(np.meshgrid(np.arange(32), np.arange(4), indexing="ij"), axis=-1)
    r = nv.bank_conflicts(layout, rows, "float32", "ld.shared.b128")
    assert r.phases == 4 and r.vectorizable
    assert r.ways == 8  # 8 lanes of a phase hit the same 4 banks (rows are 128 bytes apart)
    r32 = nv.bank_conflicts(layout, rows, "float32", "ld.shared.b32")
    assert r32.instructions == 4 and r32.ways == 32


def test_partial_warps_and_unused_slots():
    layout = nv.make_linear_layout((8, 32), "float32")
    acc = np.stack(np.meshgrid(np.arange(8), np.arange(32), indexing="ij"), axis=-1)[:, None, :, :]
    acc = acc.reshape(8, 32, 2)  # 8 threads, each reads a full row: one partial warp
    acc[1, 5:] = -1  # unused slots
    r = nv.bank_conflicts(layout, acc, "float32")
    assert r.method == "exact" and r.instructions == 32


def test_errors():
    layout = nv.make_linear_layout((8, 8), "float16")
    with pytest.raises(lk.CoordinateError):
        nv.bank_conflicts(layout, np.full((32, 1, 2), 8), "float16")
    with pytest.raises(lk.ShapeError):
        nv.bank_conflicts(layout, np.zeros((32, 2), dtype=np.int64), "float16")
    with pytest.raises(nv.DtypeError):
        nv.bank_conflicts(layout, np.zeros((32, 1, 2), dtype=np.int64), "float17")
    with pytest.raises(lk.UnsupportedError):
        nv.bank_conflicts(layout, np.zeros((32, 1, 2), dtype=np.int64), "float64", "ldmatrix.x1")
    with pytest.raises(lk.ShapeError):  # a fragment over another shape
        nv.bank_conflicts(layout, nv.make_mma_store_layout(1, 1, 16, 16), "float16")
    with pytest.raises(lk.UnsupportedError):  # the F2 path does not apply to a padded layout
        nv.bank_conflicts(nv.make_padded_layout((16, 64), "float16"), nv.make_mma_store_layout(1, 1, 16, 64),
                          "float16", "st.shared.b32", method="f2")


# ---- the F2 fast path agrees with the exact count -------------------------------------------------


def _same(layout, access, dtype, inst):
    exact = nv.bank_conflicts(layout, access, dtype, inst, method="exact")
    fast = nv.bank_conflicts(layout, access, dtype, inst, method="auto")
    assert fast.method == "f2", "expected the F2 path to apply"
    assert (fast.wavefronts, fast.instructions, fast.ways, fast.ideal_wavefronts, fast.phases, fast.vectorizable) == (
        exact.wavefronts, exact.instructions, exact.ways, exact.ideal_wavefronts, exact.phases, exact.vectorizable
    )
    assert np.array_equal(np.sort(fast.per_instruction), np.sort(exact.per_instruction))
    return exact


KINDS = ("linear", "32B", "64B", "128B")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["float16", "int8", "float32"])
def test_f2_agrees_on_mma_moves(kind, dtype):
    bits = nv.element_bits(dtype)
    k = 1024 // bits  # 128 bytes of K per row: every swizzle fits A and B
    a = nv.make_mma_load_layout("A", dtype, 2, 2, 32, 32, k)
    b = nv.make_mma_load_layout("B", dtype, 2, 2, 32, 32, k, transposed=True)
    c = nv.make_mma_store_layout(2, 2, 32, 32, dtype=dtype)
    moves = [(a, "ldmatrix.x4"), (a, "ldmatrix.x2"), (a, "ld.shared.b32"), (b, "ldmatrix.x4"), (b, "ldmatrix.x1")]
    for frag, inst in moves:
        _same(SHARED_LAYOUTS[kind](frag.input_shape, dtype), frag, dtype, inst)
    store_type = "float16" if bits < 16 else dtype  # C [64, 64] stored as 16/32-bit
    for inst in ("st.shared.b32", "st.shared.b64"):
        _same(SHARED_LAYOUTS[kind](c.input_shape, store_type), c, store_type, inst)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("inst", ["ld.shared.b32", "ld.shared.b64", "ld.shared.b128"])
def test_f2_agrees_on_row_and_column_reads(kind, inst):
    shape = (32, 64)
    smem = SHARED_LAYOUTS[kind](shape, "float16")
    per_lane = nv.instruction_spec(inst).bytes_per_lane // 2
    t, e = np.meshgrid(np.arange(64), np.arange(32 * 64 // 64), indexing="ij")
    flat = (e // per_lane) * 64 * per_lane + t * per_lane + e % per_lane  # lane-contiguous vectors
    rows = np.stack([flat // 64, flat % 64], axis=-1)
    _same(smem, rows, "float16", inst)
    cols = np.stack([t % 32, (e * 2 + t // 32) % 64], axis=-1)  # transposed: scalar column reads
    _same(smem, cols, "float16", "ld.shared.b32" if inst == "ld.shared.b32" else inst)


@given(st.integers(0, 2**31 - 1))
def test_f2_agrees_on_random_linear_layouts(seed):
    rng = np.random.default_rng(seed)
    n_bits = 10  # a 32 x 32 tile of 4-byte elements
    while True:
        m = rng.integers(0, 2, size=(n_bits, n_bits), dtype=np.uint8)
        if lk.algebra.bits.gf2_inverse(m) is not None:
            break
    cols = [int(sum(int(m[r, c]) << r for r in range(n_bits))) for c in range(n_bits)]
    layout = lk.Layout.from_linear({"i": [(v,) for v in cols[:5]], "j": [(v,) for v in cols[5:]]})
    access = transpose_read_access(32, 32)
    _same(layout, access, "float32", "ld.shared.b32")
    frag = nv.make_mma_store_layout(2, 2, 16, 16)
    _same(layout, frag, "float16", "st.shared.b32")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("registers", "lanes", "warps"), [
    ([[0, 1], [0, 2], [0, 4]], [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], [[4, 0], [8, 0]]),   # 8-wide rows
    ([[1, 0], [0, 32]], [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16]], [[2, 0], [4, 0], [8, 0]]),   # column pairs
])
@pytest.mark.parametrize("inst", ["ld.shared.b32", "ld.shared.b128"])
def test_a_register_map_counts_as_its_fragment(kind, registers, lanes, warps, inst):
    view = lk.F2Linear.from_bases({"register": registers, "lane": lanes, "warp": warps}, [("dim0", 16), ("dim1", 64)])
    smem = SHARED_LAYOUTS[kind]((16, 64), "float16")
    by_map = nv.bank_conflicts(smem, view, "float16", inst)
    by_fragment = nv.bank_conflicts(smem, lk.Fragment.from_linear(view), "float16", inst)
    assert by_map.method == by_fragment.method      # the bases where they apply, else the Fragment's count
    assert (by_map.wavefronts, by_map.ways, by_map.instructions, by_map.phases, by_map.vectorizable) == \
        (by_fragment.wavefronts, by_fragment.ways, by_fragment.instructions, by_fragment.phases,
         by_fragment.vectorizable)
