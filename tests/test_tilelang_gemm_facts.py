"""The facts layoutkit's ``T.gemm`` lowering for TileLang (``layoutkit.frontends.tilelang_gemm``) is
built from, checked without TileLang: the plan of each GEMM shape, and the load addresses against
the MMA operand fragments of ``layoutkit.targets.nv`` (what ``ldmatrix`` from those addresses, or the
per-register loads, put in each lane's registers is what ``mma.sync`` expects there)."""

import itertools

import numpy as np
import pytest

from layoutkit.frontends.tilelang_gemm import address_a, address_b, mma_plan, register_a, register_b
from layoutkit.targets import nv


def test_plan_of_a_fp16_gemm():
    plan = mma_plan("float16", "float16", "float32", 64, 64, 32, 128, (2, 2), False, False)
    g = plan.gemm
    assert (g.name, g.k, g.n_dim) == ("m16n8k16", 16, 16)
    assert (g.warp_rows, g.warp_cols, g.local_a, g.local_b, g.local_c) == (2, 2, 8, 8, 8)
    assert plan.ptx_types == ("fp16", "fp16", "fp32")  # TileLang's spelling of PTX's f16 / f32
    assert g.ptx_types == ("f16", "f16", "f32")
    assert (g.a_load, g.b_load) == ("ldmatrix", "ldmatrix.trans")


def test_plan_of_narrow_warp_tiles_uses_n8_tiles():
    plan = mma_plan("bfloat16", "bfloat16", "float32", 64, 32, 32, 128, (1, 4), True, True)
    g = plan.gemm
    assert (g.n_dim, g.warp_rows, g.warp_cols, g.local_b, g.local_c) == (8, 4, 1, 4, 4)
    assert plan.ptx_types == ("bf16", "bf16", "fp32")


def test_plan_of_8bit_operands():
    plan = mma_plan("int8", "int8", "int32", 64, 64, 64, 128, (2, 2), False, True)
    g = plan.gemm
    assert (g.name, g.local_a, g.local_b, g.local_c) == ("m16n8k32", 16, 16, 8)
    assert (g.a_load, g.b_load) == ("ldmatrix", "ldmatrix")
    assert plan.ptx_types == ("int8", "int8", "int32")
    fp8 = mma_plan("float8_e4m3fn", "float8_e5m2", "float32", 64, 64, 64, 128, (2, 2), True, False)
    assert fp8.ptx_types == ("e4m3", "e5m2", "fp32")
    assert (fp8.gemm.a_load, fp8.gemm.b_load) == ("registers", "registers")  # k-major 8-bit rows: no ldmatrix


@pytest.mark.parametrize("args", [
    ("float32", "float32", "float32", 64, 64, 32, 128, (2, 2)),    # tf32: TileLang's own lowering
    ("float64", "float64", "float64", 64, 64, 32, 128, (2, 2)),
    ("float16", "int8", "float32", 64, 64, 32, 128, (2, 2)),       # operands of different widths
    ("float16", "float16", "float64", 64, 64, 32, 128, (2, 2)),
    ("float16", "float16", "float32", 64, 64, 8, 128, (2, 2)),     # K below one m16n8k16
    ("float16", "float16", "float32", 64, 64, 32, 96, (2, 2)),     # threads and warps disagree
    ("float16", "float16", "float32", 48, 64, 32, 128, (2, 2)),    # 24 rows per warp
    ("int8", "int8", "float32", 64, 64, 64, 128, (2, 2)),          # integers accumulate in int32
    ("float8_e4m3fnuz", "float8_e4m3fnuz", "float32", 64, 64, 64, 128, (2, 2)),  # no PTX type: not e4m3
])
def test_plans_handed_to_tilelang(args):
    assert mma_plan(*args, False, False) is None


def test_sm75_splits_k_so_tilelang_lowers_it():
    """sm_75 runs a k16 step as two m16n8k8: the plan says so, and the TIR builder (which issues k16) hands the
    GEMM to TileLang."""
    assert mma_plan("float16", "float16", "float32", 64, 64, 32, 128, (2, 2), False, False, arch="sm_75") is None


def _ldmatrix_positions(address, bits: int, trans: bool, num: int):
    """(lane, register, stored row, stored col) of every element ``ldmatrix.x{num}`` (``.trans``) loads
    when lane ``t`` supplies the row address ``address(t)`` of row ``t % 8`` of matrix ``t // 8``."""
    per_reg = 32 // bits
    out = []
    for lane, m, e in itertools.product(range(32), range(num), range(per_reg)):
        if trans:  # lane 4c + r//2 receives rows r, r+1 of column c
            r, c = (lane % 4) * 2 + e, lane // 4
        else:  # lane 4r + c//per_reg receives per_reg consecutive elements of row r
            r, c = lane // 4, (lane % 4) * per_reg + e
        row, col = (int(x) for x in address(8 * m + r))
        out.append((lane, m * per_reg + e, row, col + c))
    return out


def _assert_fragment(F, positions, logical):
    threads, index = F.thread_table()[0], F.index_table()
    seen = np.zeros(index.shape, dtype=int)
    for lane, reg, row, col in positions:
        i, j = logical(row, col)
        assert (threads[i, j], index[i, j]) == (lane, reg), (lane, reg, i, j)
        seen[i, j] += 1
    assert (seen == 1).all()  # every element of the operand tile loaded exactly once


@pytest.mark.parametrize("dtype,trans", [("float16", False), ("float16", True), ("bfloat16", False),
                                         ("int8", False), ("float8_e4m3", False)])
def test_ldmatrix_addresses_give_the_mma_a_fragment(dtype, trans):
    bits = nv.element_bits(dtype)
    k = 256 // bits
    F = nv.make_mma_load_layout("A", dtype, 1, 1, 16, 16, k)  # [16, k]: row, k
    positions = _ldmatrix_positions(lambda t: address_a(t, bits, trans), bits, trans, 4)
    _assert_fragment(F, positions, (lambda r, c: (c, r)) if trans else (lambda r, c: (r, c)))


@pytest.mark.parametrize("dtype,trans,n_dim", [("float16", False, 16), ("float16", True, 16), ("float16", False, 8),
                                               ("float16", True, 8), ("int8", True, 16), ("int8", True, 8)])
def test_ldmatrix_addresses_give_the_mma_b_fragment(dtype, trans, n_dim):
    bits = nv.element_bits(dtype)
    k = 256 // bits
    F = nv.make_mma_load_layout("B", dtype, 1, 1, 16, n_dim, k)  # [k, n]
    # B stored [k, n] is read with .trans (16-bit); stored [n, k] (transposed) without
    positions = _ldmatrix_positions(lambda t: address_b(t, bits, trans), bits, not trans, 4 if n_dim == 16 else 2)
    _assert_fragment(F, positions, (lambda r, c: (c, r)) if trans else (lambda r, c: (r, c)))


def test_register_loads_give_the_8bit_mma_fragments():
    A = nv.make_mma_load_layout("A", "int8", 1, 1, 16, 16, 32)
    B = nv.make_mma_load_layout("B", "int8", 1, 1, 16, 16, 32)
    a_pos = [(lane, reg, *register_a(lane, reg)) for lane in range(32) for reg in range(16)]
    b_pos = [(lane, reg, *register_b(lane, reg)) for lane in range(32) for reg in range(16)]
    _assert_fragment(A, a_pos, lambda r, c: (r, c))
    _assert_fragment(B, b_pos, lambda n, kk: (kk, n))
