"""The NV GEMM builders that assemble canonical expressions directly (MMA store fragment, bank
swizzles) give exactly the expressions the operator-by-operator simplifier chain gives (the
printed text is compared with TileLang elsewhere, so equality here is structural, not semantic)."""

from __future__ import annotations

import itertools

import pytest

from layoutkit.errors import ShapeError
from layoutkit.fragment import Fragment
from layoutkit.targets.nv import mma
from layoutkit.targets.nv.mma import make_mma_store_layout


def _reference_store(brw, bcw, wrt, wct, dtype, arch, chunk):
    """The accumulator map written as the formula of the docstring, one simplified operator at a time."""
    cfg = mma.mma_config(dtype, wrt, wct, chunk, arch)
    ms_x, ms_y, wr, wc = cfg.ms_x, cfg.ms_y, cfg.warp_rows, cfg.warp_cols
    local_out = ms_x * ms_y // 32

    def lane_local(i, j):
        mi, mj = i % ms_x, j % ms_y
        if local_out == 2:
            return 4 * mi + mj // 2, mj % 2
        return 4 * (mi % 8) + (mj % 8) // 2, 4 * (mj // 8) + 2 * (mi // 8) + mj % 2

    def thread(i, j):
        return ((j // ms_y) // wc) * (32 * brw) + ((i // ms_x) // wr) * 32 + lane_local(i, j)[0]

    def index(i, j):
        return ((i // ms_x) % wr) * (wc * local_out) + ((j // ms_y) % wc) * local_out + lane_local(i, j)[1]

    return Fragment([brw * wrt, bcw * wct], forward_thread_fn=thread, forward_index_fn=index)


CASES = [
    (brw, bcw, wrt, wct, dtype, arch)
    for brw, bcw in ((1, 1), (2, 2), (4, 1), (1, 4), (2, 4))
    for wrt, wct in ((16, 8), (16, 16), (32, 16), (16, 32), (64, 64), (32, 24), (48, 40))
    for dtype, arch in (("float16", "sm_80"), ("int8", "sm_80"), ("float32", "sm_80"), ("float64", "sm_80"),
                        ("float16", "sm_75"), ("int8", "sm_75"))
]


@pytest.mark.parametrize(("brw", "bcw", "wrt", "wct", "dtype", "arch"), CASES)
def test_store_layout_matches_the_operator_chain(brw, bcw, wrt, wct, dtype, arch):
    chunk = 4 if dtype == "float64" else 16
    try:
        want = _reference_store(brw, bcw, wrt, wct, dtype, arch, chunk)
    except ShapeError:
        with pytest.raises(ShapeError):
            make_mma_store_layout(brw, bcw, wrt, wct, dtype=dtype, arch=arch, chunk=chunk)
        return
    got = make_mma_store_layout(brw, bcw, wrt, wct, dtype=dtype, arch=arch, chunk=chunk)
    assert got.forward_thread == want.forward_thread
    assert got.forward_index == want.forward_index
    assert str(got) == str(want)
    assert (got.thread_table() == want.thread_table()).all()


def test_store_layout_cases_cover_every_atom():
    """The sweep reaches the m16n16, m16n8 and m8n8 (float64, sm_75 8-bit) atoms."""
    seen = set()
    for _brw, _bcw, wrt, wct, dtype, arch in CASES:
        chunk = 4 if dtype == "float64" else 16
        try:
            cfg = mma.mma_config(dtype, wrt, wct, chunk, arch)
        except ShapeError:
            continue
        seen.add((cfg.ms_x, cfg.ms_y))
    assert seen == {(16, 16), (16, 8), (8, 8)}


def test_store_layout_text_32x32_four_warps():
    F = make_mma_store_layout(2, 2, 16, 16)
    assert str(F.forward_thread) == "_j // 16 * 64 + _i // 16 * 32 + _i % 8 * 4 + _j % 8 // 2"
    assert str(F.forward_index[0]) == "_j % 16 // 8 * 4 + _i % 16 // 8 * 2 + _j % 2"


def test_bound_copy_keeps_tables_and_range():
    F = make_mma_store_layout(2, 2, 32, 32)
    table = F.thread_table()
    G = F.bind_thread_range(128, 128)
    assert G.thread_range == (128, 128) and F.thread_range is None
    assert G.thread_table() is table  # reused, not re-evaluated
    assert G == F.rebuild(thread_range=(128, 128))
    assert str(G).endswith("thread_range: [128, 256))")
    with pytest.raises(ShapeError):
        F.bind_thread_range(0, 0)


def test_swizzles_match_the_operator_chain():
    from layoutkit.targets.nv import swizzle

    for shape0, dtype in itertools.product(((4, 64), (8, 64), (16, 32), (32, 32), (64, 64), (2, 8, 64),
                                                   (128, 128), (8, 16), (32, 8)),
                                                  ("float16", "int8", "float32")):
        for kind in ("full", "half", "quarter"):
            shape = shape0
            try:
                got = swizzle.make_bank_swizzled_layout(shape, dtype, kind)
            except ShapeError:
                continue
            bits = {"float16": 16, "int8": 8, "float32": 32}[dtype]
            want = swizzle._build(shape, _reference_swizzle(kind, bits), kind, dtype, bits)
            assert got.forward_index == want.forward_index, (shape, dtype, kind)


def _reference_swizzle(kind, bits):
    per = {"full": 8, "half": 4, "quarter": 2}[kind]
    vec, shift = 128 // bits, 8 // per

    def fn(i, j):
        chunk = j // vec
        return chunk // per, i // 8, j % vec + (((chunk % per) ^ (i % 8 // shift)) + i % 8 * per) * vec

    return fn
