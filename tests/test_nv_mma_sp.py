"""The structured-sparse GEMM (``T.gemm_sp``, ``mma.sp``) without TileLang: fragment shapes and
bijections, the instruction atoms at known points, the sparse warp partition (where it differs from the
dense GEMM's), the CUTLASS metadata layouts, the Program op and the inference rule.  The comparisons with
TileLang 0.1.15 itself are in ``test_frontend_tilelang_gemm_sp.py``."""

import numpy as np
import pytest

from layoutkit.errors import LayoutError, ShapeError, UnsupportedError
from layoutkit.infer import Program, infer_layouts
from layoutkit.infer.library import TILE_OPS
from layoutkit.infer.schema import load_document
from layoutkit.targets import nv
from layoutkit.targets.nv.mma_sp import sparse_b_lane, sparse_b_local
from layoutkit.targets.nv.sparse_metadata import (
    make_cutlass_metadata_layout,
    make_cutlass_metadata_layout_sm8x,
    make_cutlass_metadata_layout_sm90,
)


def slots(frag):
    """Every (rep, thread, index) slot the fragment fills, one row per element and replica."""
    threads = frag.thread_table().reshape(frag.replicate_size, -1)
    index = frag.index_table().reshape(-1)
    return [(r, int(t), int(i)) for r in range(frag.replicate_size) for t, i in zip(threads[r], index)]


def assert_bijective(frag):
    """Each replica's (thread, index) pairs are distinct and fill threads x local_size exactly."""
    got = slots(frag)
    assert len(set(got)) == len(got)
    per_rep = frag.thread_extent * frag.local_size // frag.replicate_size
    assert len(got) == frag.replicate_size * per_rep


@pytest.mark.parametrize("dtype,k", [("float16", 32), ("bfloat16", 32), ("int8", 64), ("float8_e4m3", 64),
                                     ("float32", 16)])
@pytest.mark.parametrize("warps,tiles", [((1, 1), (16, 8)), ((2, 2), (32, 16)), ((4, 1), (16, 32)),
                                         ((1, 4), (64, 24))])
@pytest.mark.parametrize("trans", [False, True])
def test_operand_fragments_are_bijections_of_the_compressed_shapes(dtype, k, warps, tiles, trans):
    brw, bcw = warps
    wrt, wct = tiles
    K = 2 * k
    A = nv.make_mma_sp_load_layout("A", dtype, brw, bcw, wrt, wct, K, trans)
    B = nv.make_mma_sp_load_layout("B", dtype, brw, bcw, wrt, wct, K, trans)
    M, N = brw * wrt, bcw * wct
    assert A.input_shape == ((K // 2, M) if trans else (M, K // 2))  # A holds the kept half of K
    assert B.input_shape == ((N, K) if trans else (K, N))
    assert (A.replicate_size, B.replicate_size) == (bcw, brw)
    assert A.thread_extent == B.thread_extent == 32 * brw * bcw
    assert_bijective(A)
    assert_bijective(B)


def test_per_thread_registers_are_tilelangs_local_sizes():
    # float16 m16n8k32: A 16*32/2/32 = 8 registers per atom, B 16*32/32 = 16 per 16 columns; 2x2 atoms a warp
    A = nv.make_mma_sp_load_layout("A", "float16", 1, 1, 32, 32, 64)
    B = nv.make_mma_sp_load_layout("B", "float16", 1, 1, 32, 32, 64)
    assert (A.local_size, B.local_size) == (8 * 2 * 2, 16 * 2 * 2)
    C = nv.make_mma_sp_store_layout(1, 1, 32, 32, "float16", 64)
    assert C.local_size == 32 and C.input_shape == (32, 32)
    assert_bijective(C)


@pytest.mark.parametrize("bits,s,k,lane,local", [(16, 9, 13, 4 * 1 + 2, 8 + 2 * 1 + 1),
                                                  (8, 3, 37, 12 + 1, 0 + 4 * 2 + 1),
                                                  (32, 15, 6, 28 + 2, 4 + 1)])
def test_sparse_b_atom_at_known_points(bits, s, k, lane, local):
    assert sparse_b_lane(bits, s, k) == lane
    assert sparse_b_local(bits, s, k) == local


def test_b_fragment_is_the_mma_sp_register_order():
    B = nv.make_mma_sp_load_layout("B", "float16", 1, 1, 16, 16, 32)
    # element (k=13, n=9): lane 4*(9%8) + (13%8)//2 = 6, register 8*(9//8) + 2*(13//8) + 13%2 = 11
    assert int(B.thread_table()[0, 13, 9]) == 6 and int(B.index_table()[13, 9]) == 11


def test_a_fragment_is_the_dense_a_atom_over_the_stored_columns():
    sparse = nv.make_mma_sp_load_layout("A", "float16", 2, 2, 32, 32, 64)
    dense = nv.make_mma_load_layout("A", "float16", 2, 2, 32, 32, 32)
    assert sparse.is_equal(dense)


def test_unsupported_shapes_and_types_are_typed():
    with pytest.raises(ShapeError, match="multiple of the mma.sp k = 32"):
        nv.make_mma_sp_load_layout("A", "float16", 1, 1, 16, 16, 48)
    with pytest.raises(ShapeError, match="warp_row_tiles must be a multiple of 16"):
        nv.make_mma_sp_load_layout("B", "float16", 1, 1, 24, 16, 32)
    with pytest.raises(UnsupportedError, match="float64"):
        nv.mma_sp_k("float64")


@pytest.mark.parametrize("args,sparse,dense", [
    # FullRow: every warp on M when that divides; the dense GEMM's rule agrees here ...
    ((128, 128, 4, "full_row"), (4, 1), (4, 1)),
    # ... Square scores n = nw // m for each m without requiring M % (16 m) == 0
    ((48, 64, 4, "square"), (2, 2), (1, 4)),
    ((128, 128, 4, "square"), (2, 2), (2, 2)),
    ((128, 256, 8, "full_col"), (1, 8), (1, 8)),
])
def test_sparse_warp_partition(args, sparse, dense):
    assert nv.compute_sparse_warp_partition(*args) == sparse
    assert nv.compute_warp_partition(*args) == dense


def test_sparse_warp_partition_that_idles_warps_is_an_error():
    with pytest.raises(nv.WarpPartitionError, match="does not use every warp"):
        nv.compute_sparse_warp_partition(48, 64, 4, "full_row")  # M/16 = 3 warps of 4
    assert nv.compute_sparse_warp_partition(128, 256, 8, arch="sm_90", instruction="wgmma.sp") == (4, 2)
    with pytest.raises(nv.WarpPartitionError, match="multiple of 4 warps"):
        nv.compute_sparse_warp_partition(128, 256, 2, arch="sm_90", instruction="wgmma.sp")


@pytest.mark.parametrize("shape,e,a", [((32, 2), "int16", "float16"), ((128, 4), "int16", "bfloat16"),
                                       ((64, 2), "int32", "int8"), ((16, 4), "int32", "float8_e5m2")])
def test_sm8x_metadata_layout_is_a_permutation(shape, e, a):
    L = make_cutlass_metadata_layout_sm8x(shape, e, a)
    out = L.table().reshape(-1, 2)
    flat = out[:, 0] * shape[1] + out[:, 1]
    assert sorted(flat.tolist()) == list(range(shape[0] * shape[1]))


def test_sm8x_metadata_layout_interleaves_rows():
    L = make_cutlass_metadata_layout_sm8x((32, 2), "int16")
    # (1, 0): row 1 of a 32-row group interleaves to row 4 (even: no corner swap), offset 2*4 = 8 -> (4, 0);
    # (0, 1): the top-right corner of a 2x2 block swaps to (1, 0), offset 2*1 = 2 -> (1, 0)
    assert tuple(int(v) for v in L.table()[1, 0]) == (4, 0)
    assert tuple(int(v) for v in L.table()[0, 1]) == (1, 0)
    with pytest.raises(UnsupportedError, match="16-bit"):
        make_cutlass_metadata_layout_sm8x((32, 2), "int32", "float16")


@pytest.mark.parametrize("a,block_k,shape", [("float16", 64, (64, 8)), ("float32", 32, (128, 8)),
                                             ("int8", 128, (64, 16)), ("float8_e4m3", 64, (128, 16))])
def test_sm90_metadata_layout_is_a_permutation(a, block_k, shape):
    L = make_cutlass_metadata_layout_sm90(shape, "uint8", a, block_k)
    assert sorted(L.table().reshape(-1).tolist()) == list(range(shape[0] * shape[1]))
    assert make_cutlass_metadata_layout(shape, "uint8", a, "sm_90", block_k).is_equal(L)
    with pytest.raises(ShapeError, match="block_k"):
        make_cutlass_metadata_layout(shape, "uint8", a, "sm_90")


def _program(target="sm_80", threads=128, a=(64, 16), e=(64, 2), b=(32, 64), dtype="float16", e_dtype="int16",
             a_scope="shared", b_scope="shared", **kw):
    p = Program(threads=threads, target=target)
    A = p.alloc_fragment("A", a, dtype) if a_scope == "fragment" else p.alloc_shared("A", a, dtype)
    E = p.alloc_shared("E", e, e_dtype)
    B = p.alloc_fragment("B", b, dtype) if b_scope == "fragment" else p.alloc_shared("B", b, dtype)
    C = p.alloc_fragment("C", (a[0] if not kw.get("transpose_A") else a[1], b[1]), "float32")
    p.gemm_sp(A, E, B, C, **kw)
    return p


def test_rule_lays_out_a_b_c_and_leaves_e_alone():
    r = infer_layouts(_program())
    assert sorted(r.layout_map) == ["A", "B", "C"]
    assert r.layout_map["A"].is_equal(nv.make_swizzled_layout((64, 16), "float16"))
    assert r.layout_map["C"].is_equal(nv.make_mma_sp_store_layout(2, 2, 32, 32).bind_thread_range(0, 128))


def test_register_operands_get_the_mma_sp_fragments():
    r = infer_layouts(_program(a_scope="fragment", b_scope="fragment"))
    assert r.layout_map["A"].is_equal(nv.make_mma_sp_load_layout("A", "float16", 2, 2, 32, 32, 32)
                                      .bind_thread_range(0, 128))
    assert r.layout_map["B"].is_equal(nv.make_mma_sp_load_layout("B", "float16", 2, 2, 32, 32, 32)
                                      .bind_thread_range(0, 128))


def test_an_annotated_shared_operand_is_kept():
    p = _program()
    linear = nv.make_linear_layout((64, 16), "float16")
    p.annotate_layout({p.buffers["A"]: linear})
    assert infer_layouts(p).layout_map["A"].is_equal(linear)  # mma.sp keeps it; the dense GEMM would conflict


def test_sm90_selects_wgmma_sp_with_warp_group_layouts():
    r = nv.gemm_sp_layouts(("shared", (64, 16), "float16"), ("shared", (64, 2), "int16"),
                           ("shared", (64, 32), "float16"), ("local.fragment", (64, 64), "float32"),
                           transpose_B=True, arch="sm_90")
    assert r.instruction == "wgmma.sp" and r.warp_partition == (4, 1)
    assert r["C"].is_equal(nv.make_wgmma_store_layout(4, 1, 16, 64, dtype="float16", chunk=32)
                           .bind_thread_range(0, 128))
    assert r["A"].is_equal(nv.make_quarter_bank_swizzled_layout((64, 16), "float16"))  # 16 stored columns
    assert r["B"].is_equal(nv.make_half_bank_swizzled_layout((64, 32), "float16"))


def test_shape_and_arch_errors_are_typed():
    with pytest.raises(LayoutError, match="holds K/2 = 16 columns; B B has K = 16, expected 32"):
        _program(b=(16, 64))  # the compressed A's 16 columns need K = 32 rows of B
    with pytest.raises(ShapeError, match="metadata E"):
        infer_layouts(_program(e=(64, 4)))  # int16 metadata of float16 covers 16 columns: [64, 2]
    with pytest.raises(UnsupportedError, match="sm_80"):
        infer_layouts(_program(target="sm_75"))


def test_program_with_gemm_sp_round_trips_and_requires_e():
    p = _program(transpose_B=False, policy="fullrow")
    q = Program.from_json(p.to_json())
    assert q.to_json() == p.to_json() and set(q.ops[0].buffers) == {"A", "E", "B", "C"}
    doc = load_document(p.to_json(), TILE_OPS)
    del doc["ops"][0]["args"]["E"]
    import json

    with pytest.raises(LayoutError, match="'E'"):
        load_document(json.dumps(doc), TILE_OPS)
    r = infer_layouts(q)
    assert np.array_equal(r.layout_map["C"].thread_table(), infer_layouts(p).layout_map["C"].thread_table())
