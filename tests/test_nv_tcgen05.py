"""Blackwell tensor memory (``layoutkit.targets.nv.tcgen05``): the TCGEN05 MMA atom table, the TMEM layouts
of accumulators and TS A operands, the register fragment of ``tcgen05.ld`` / ``st`` copies, and the sm_100
GEMM and copy rules through inference.  No TileLang needed; ``tests/test_frontend_tilelang_tmem.py``
checks the same facts against TileLang 0.1.15 itself."""

import numpy as np
import pytest

from layoutkit.algebra.layout import Layout
from layoutkit.errors import ScopeError, ShapeError, UnsupportedError
from layoutkit.infer import Program, infer_layouts
from layoutkit.targets import nv
from layoutkit.targets.nv.tcgen05 import (
    Tcgen05Atom,
    make_tmem_accumulator_layout,
    make_tmem_copy_fragment,
    make_tmem_operand_a_layout,
    select_tcgen05_atom,
)

# ---- the atom table -------------------------------------------------------------------------------

@pytest.mark.parametrize("args, kw, expected", [
    ((128, 128, 64, "bfloat16", "float32"), {}, (128, 128, 16, False, False)),
    ((128, 96, 64, "float16", "float32"), {}, (128, 96, 16, False, False)),
    ((64, 128, 32, "bfloat16", "float32"), {}, (64, 128, 16, True, False)),   # M = 64: .ws
    ((32, 192, 16, "bfloat16", "float32"), {}, (32, 64, 16, True, False)),    # .ws N in (256, 128, 64)
    ((128, 128, 64, "int8", "int32"), {}, (128, 128, 32, True, False)),       # int8 tries .ws first
    ((128, 96, 64, "int8", "int32"), {}, (128, 96, 32, False, False)),        # 96: no .ws N divides it
    ((64, 96, 64, "float8_e4m3fn", "float32"), {}, (64, 96, 32, False, False)),
    ((128, 128, 64, "bfloat16", "float32"), {"two_cta": True}, (256, 128, 16, False, True)),
    ((64, 128, 64, "bfloat16", "float32"), {"two_cta": True}, (128, 128, 16, False, True)),
    ((64, 128, 64, "bfloat16", "float32"), {"weight_stationary": False}, None),
    ((128, 128, 8, "bfloat16", "float32"), {}, None),                       # K not a multiple of 16
    ((16, 128, 64, "bfloat16", "float32"), {}, None),
    ((128, 128, 64, "float16", "float16"), {}, None),                       # 16-bit into 16-bit: no atom
])
def test_atom_table(args, kw, expected):
    if expected is None:
        with pytest.raises(UnsupportedError, match="no TCGEN05 MMA atom"):
            select_tcgen05_atom(*args, **kw)
        return
    a = select_tcgen05_atom(*args, **kw)
    assert (a.m, a.n, a.k, a.weight_stationary, a.two_cta) == expected


# ---- TMEM layouts ---------------------------------------------------------------------------------

def _image(layout: Layout) -> np.ndarray:
    return layout.table().reshape(-1, 2)


def test_dense_accumulator_is_datapath_by_column_and_one_to_one():
    """Layout D: row m on datapath m, column n in column n; a second N tile continues the columns, a batch dim
    after them."""
    L = make_tmem_accumulator_layout((2, 128, 256), "float32", Tcgen05Atom(128, 128, 16))
    assert L.output_shape == (128, 512)
    assert L(1, 5, 200) == (5, 456)
    assert len({tuple(x) for x in _image(L)}) == L.size  # one-to-one


def test_m64_accumulator_uses_the_quarter_datapaths_and_interleaves_a_second_tile():
    """Layout F (dense M = 64): rows in the low 16 datapaths of each 32-lane sub-partition; a second M tile
    fills the high halves (interleaved), or with A in tensor memory (TS) fresh columns."""
    atom = Tcgen05Atom(64, 64, 32)
    L = make_tmem_accumulator_layout((128, 64), "float32", atom)
    assert [L(i, 0)[0] for i in (0, 15, 16, 63, 64, 127)] == [0, 15, 32, 111, 16, 127]
    assert L.output_shape == (128, 64)
    ts = make_tmem_accumulator_layout((128, 64), "float32", atom, a_in_tmem=True)
    assert ts(64, 0) == (0, 64) and ts.output_shape == (112, 128)


def test_weight_stationary_m64_folds_n_halves_over_the_datapaths():
    """Layout E: the second half of N goes to datapaths 64..127."""
    L = make_tmem_accumulator_layout((64, 128), "float32", Tcgen05Atom(64, 128, 16, True))
    assert L(3, 64) == (67, 0) and L(3, 63) == (3, 63)
    assert L.output_shape == (128, 64)


def test_16bit_accumulator_takes_one_word_per_value():
    L = make_tmem_accumulator_layout((128, 64), "float16", Tcgen05Atom(128, 64, 32))
    assert L(0, 5) == (0, 10) and L.output_shape == (128, 127)


def test_ts_operand_a_in_its_own_element_columns():
    A = make_tmem_operand_a_layout((128, 64), "bfloat16", Tcgen05Atom(128, 64, 16))
    assert A(7, 40) == (7, 40)
    with pytest.raises(UnsupportedError, match="duplicated"):
        make_tmem_operand_a_layout((64, 32), "bfloat16", Tcgen05Atom(128, 64, 16, two_cta=True))


def test_tmem_buffer_too_large_or_not_whole_atoms_is_refused():
    with pytest.raises(ShapeError, match="multiples of the atom"):
        make_tmem_accumulator_layout((128, 100), "float32", Tcgen05Atom(128, 64, 16))
    with pytest.raises(ShapeError, match="exceeds"):
        make_tmem_accumulator_layout((4, 128, 256), "float32", Tcgen05Atom(128, 256, 16))


# ---- tcgen05.ld / st register fragments ------------------------------------------------------------

IDENTITY = Layout([128, 128], lambda i, j: (i, j))


def test_copy_fragment_one_warp_group_holds_rows():
    F = make_tmem_copy_fragment(IDENTITY, "float32", ((0, 128), (0, 128)), (128, 128), ((0, 128), (0, 128)), 128)
    assert (F.thread_extent, F.local_size) == (128, 128)
    th, ix = F.thread_table().reshape(128, 128), F.table().reshape(128, 128)
    assert (th[9, 77], ix[9, 77]) == (9, 77)
    assert len(set(zip(th.ravel().tolist(), ix.ravel().tolist()))) == 128 * 128  # every (thread, register) once


def test_copy_fragment_two_warp_groups_split_the_columns():
    """256 threads: the second warp group takes the second half of the columns."""
    F = make_tmem_copy_fragment(IDENTITY, "float32", ((0, 128), (0, 128)), (128, 128), ((0, 128), (0, 128)), 256)
    th, ix = F.thread_table(), F.table()
    assert th.reshape(128, 128)[5, 64] == 133 and th.reshape(128, 128)[5, 63] == 5
    assert ix.reshape(128, 128)[5, 64] == 0 and F.local_size == 64


def test_split_epilogue_slices_follow_one_another_in_the_registers():
    """Two copies of 64 columns each: every copy infers the same whole-buffer fragment, the second slice's
    registers after the first's."""
    a = make_tmem_copy_fragment(IDENTITY, "float32", ((0, 128), (0, 64)), (128, 128), ((0, 128), (0, 64)), 128)
    b = make_tmem_copy_fragment(IDENTITY, "float32", ((0, 128), (64, 64)), (128, 128), ((0, 128), (64, 64)), 128)
    assert np.array_equal(a.table(), b.table())
    assert a.table().reshape(128, 128)[3, 70] == 70


def test_copy_fragment_of_16bit_values_packs_pairs_or_unpacks_an_accumulator():
    packed = Layout([128, 64], lambda i, j: (i, j))  # a bf16 TS operand: two values per word
    F = make_tmem_copy_fragment(packed, "bfloat16", ((0, 128), (0, 64)), (128, 64), ((0, 128), (0, 64)), 256)
    assert F.thread_extent == 256 and F.table().reshape(128, 64)[0, 33] == 1  # 32 words: 16 per warp group
    acc = make_tmem_accumulator_layout((128, 64), "float16", Tcgen05Atom(128, 64, 32))
    G = make_tmem_copy_fragment(acc, "float16", ((0, 128), (0, 64)), (128, 64), ((0, 128), (0, 64)), 128)
    assert G.table().reshape(128, 64)[0, 33] == 33  # pack::16b: one value per word


def test_layout_f_tile_moves_with_16dp64b_once_per_warp():
    """An M = 64 accumulator (layout F) is read with the 16dp64b shape: lane ``4 (r % 8) + 2 (j % 2) + r // 8``
    of warp ``i // 16`` (``r = i % 16``) holds column pair ``j // 2``."""
    quarters = make_tmem_accumulator_layout((64, 32), "float32", Tcgen05Atom(64, 32, 32))
    F = make_tmem_copy_fragment(quarters, "float32", ((0, 64), (0, 32)), (64, 32), ((0, 64), (0, 32)), 128)
    th, ix = F.thread_table().reshape(64, 32), F.table().reshape(64, 32)
    assert (th[0, 0], th[9, 1], th[16, 0], th[17, 0]) == (0, 4 + 2 + 1, 32, 36)
    assert (ix[9, 1], ix[9, 30]) == (0, 15) and F.local_size == 16
    assert len(set(zip(th.ravel().tolist(), ix.ravel().tolist()))) == 64 * 32


def test_copy_fragment_refuses_tiles_no_shape_plans_and_mismatched_regions():
    odd = make_tmem_accumulator_layout((64, 96), "float32", Tcgen05Atom(64, 96, 32))
    with pytest.raises(UnsupportedError, match="power-of-two count of column pairs"):
        make_tmem_copy_fragment(odd, "float32", ((0, 64), (0, 96)), (64, 96), ((0, 64), (0, 96)), 128)
    gapped = Layout([128, 8], lambda i, j: (i, j * 2))
    with pytest.raises(UnsupportedError, match="gapped"):
        make_tmem_copy_fragment(gapped, "float32", ((0, 128), (0, 8)), (128, 8), ((0, 128), (0, 8)), 128)
    with pytest.raises(ShapeError, match="differ"):
        make_tmem_copy_fragment(IDENTITY, "float32", ((0, 128), (0, 64)), (128, 32), ((0, 128), (0, 32)), 128)


# ---- through inference ----------------------------------------------------------------------------

def _tcgen05_program(target="sm_100", threads=128, M=128, N=128):
    p = Program(threads=threads, target=target)
    A = p.alloc_shared("A_s", (M, 64), "bfloat16")
    B = p.alloc_shared("B_s", (N, 64), "bfloat16")
    C = p.alloc("C_t", (M, N), "float32", "shared.tmem")
    F = p.alloc_fragment("C_l", (M, N), "float32")
    p.gemm(A, B, C, transpose_B=True)
    p.copy(C, F)
    return p


def test_sm100_gemm_lays_out_tensor_memory_and_the_copy_the_fragment():
    r = infer_layouts(_tcgen05_program())
    assert r.layout_map["A_s"].swizzle.kind == "full"
    assert r.layout_map["C_t"](3, 4) == (3, 4)
    frag = r.layout_map["C_l"]
    assert str(frag.forward_thread) == "_i" and frag.thread_range == (0, 128)
    assert nv.select_gemm_instruction(("shared", (128, 64), "bfloat16"), ("shared", (128, 64), "bfloat16"),
                                      ("shared.tmem", (128, 128), "float32"), transpose_B=True,
                                      arch="sm_100a") == "tcgen05"


def test_tensor_memory_before_sm100_is_refused():
    """Tensor memory is no scope of an sm_90 program: refused when allocated, and when an sm_100 program is
    re-targeted to sm_90 (the GEMM rule's own refusal is :func:`nv.gemm_layouts`', test_nv_gemm)."""
    with pytest.raises(ScopeError, match="buffer 'C_t': target 'sm_90' has no scope 'shared.tmem'"):
        _tcgen05_program(target="sm_90")
    p = _tcgen05_program()
    p.target = "sm_90"
    with pytest.raises(ScopeError, match="buffer C_t lives in scope 'shared.tmem', which target 'sm_90' does not have"):
        infer_layouts(p)


def test_ts_gemm_needs_k_major_a():
    with pytest.raises(UnsupportedError, match="K-major"):
        nv.gemm_layouts(("shared.tmem", (64, 128), "bfloat16"), ("shared", (64, 64), "bfloat16"),
                        ("shared.tmem", (128, 64), "float32"), transpose_A=True, arch="sm_100")


@pytest.mark.parametrize("target, vector", [("sm_90", 4), ("sm_100", 8)])
def test_global_only_loops_vectorise_256_bits_on_sm100(target, vector):
    """A fragment -> global copy of float32: 128-bit vectors (4) before sm_100, 256-bit (8) from sm_100 on,
    where nothing in shared memory is touched."""
    p = Program(threads=128, target=target)
    g = p.tensor("D", (64, 96), "float32")
    f = p.alloc_fragment("f", (64, 96), "float32")
    p.copy(f, g)
    th = infer_layouts(p).layout_map["f"].thread_table().reshape(64, 96)
    assert (th[0, :vector] == th[0, 0]).all() and th[0, vector] != th[0, 0]
