"""Copy instruction selection (docs/reference.md#copy-instruction-selection)."""

from __future__ import annotations

import pytest

import layoutkit as lk
from layoutkit.targets import nv
from layoutkit.targets.nv import CopyInstruction as I
from layoutkit.targets.nv import CopyOperand as Op

G = Op("global", "float16", (1024, 1024), region=((0, 64), (0, 64)))
G_ROWS = Op("global", "float16", (1024, 1024), region=((64, 64), (0, 1024)))  # whole rows: contiguous
S = Op("shared", "float16", (64, 64))
S_ROWS = Op("shared.dyn", "float16", (64, 1024))
F = Op("local.fragment", "float16", (64, 64))
T = Op("shared.tmem", "float32", (128, 128))
FT = Op("local.fragment", "float32", (128, 128))


@pytest.mark.parametrize(
    ("src", "dst", "arch", "kw", "want"),
    [
        (G, S, "sm_80", {}, I.NORMAL),  # default loads are SIMT (cp.async is a later pass)
        (G, S, "sm_90", {}, I.NORMAL),  # a TMA load only when forced or preferred
        (S, G, "sm_90", {}, I.BULK_STORE),
        (S, G, "sm_80", {}, I.NORMAL),
        (S_ROWS, G_ROWS, "sm_90", {}, I.BULK_STORE_1D),
        (S_ROWS, G_ROWS, "sm_90", {"has_layout_map": False}, I.BULK_STORE),
        (S, F, "sm_80", {}, I.LDSM),
        (S, F, "sm_70", {}, I.NORMAL),
        (F, S, "sm_80", {}, I.NORMAL),
        (F, S, "sm_90", {}, I.STSM),
        (T, FT, "sm_100", {}, I.TMEM_LOAD),
        (FT, T, "sm_100", {}, I.TMEM_STORE),
        (G, S, "sm_90", {"is_tma_copy": True}, I.BULK_LOAD),
        (G_ROWS, S_ROWS, "sm_90", {"prefer_instruction": "tma"}, I.BULK_LOAD_1D),
        (G, S, "sm_80", {"is_async_copy": True}, I.CP_ASYNC),
        (G, S, "sm_80", {"prefer_instruction": "cp_async"}, I.CP_ASYNC),
        (S, F, "sm_90", {"prefer_instruction": "sync"}, I.LDSM),
        (S, G, "sm_90", {"prefer_instruction": "sync"}, I.NORMAL),
        (S, G, "sm_90", {"disable_tma": True}, I.NORMAL),
        (G, S, "sm_100", {"is_gather4": True}, I.BULK_LOAD_GATHER4),
        (S, G, "sm_100", {"is_scatter4": True}, I.BULK_STORE_SCATTER4),
        (G, S, "sm_90", {"cluster_mask": 3}, I.BULK_LOAD),
        (G, S, "sm_80", {"loop_layout": "a fragment"}, I.NORMAL),  # SIMT accepts a loop layout
    ],
)
def test_selection(src, dst, arch, kw, want):
    assert nv.select_copy_instruction(src, dst, arch, **kw) is want


@pytest.mark.parametrize(
    ("src", "dst", "arch", "kw"),
    [
        (G, S, "sm_80", {"is_tma_copy": True}),  # no TMA before sm_90
        (Op("global", "float16", (64, 60), region=((0, 64), (0, 4))), S, "sm_90", {"is_tma_copy": True}),  # 8 bytes
        (Op("global", "float32", (64, 64)), S, "sm_90", {"is_tma_copy": True}),  # dtypes differ
        (G, S, "sm_75", {"is_async_copy": True}),  # cp.async needs sm_80
        (S, G, "sm_80", {"is_async_copy": True}),  # and global -> shared
        (G, S, "sm_90", {"prefer_instruction": "tma", "disable_tma": True}),
        (G, S, "sm_80", {"prefer_instruction": "cp_async", "enable_async_copy": False}),
        (G, S, "sm_80", {"prefer_instruction": "fast"}),
        (G, S, "sm_80", {"cluster_mask": 1}),
        (S, F, "sm_80", {"loop_layout": "a fragment"}),  # LDSM with an explicit loop layout
        (F, S, "sm_90", {"loop_layout": "a fragment"}),  # STSM with an explicit loop layout
        (S, G, "sm_90", {"loop_layout": "a fragment"}),  # TMA store with an explicit loop layout
    ],
)
def test_errors(src, dst, arch, kw):
    with pytest.raises(nv.CopySelectionError) as info:
        nv.select_copy_instruction(src, dst, arch, **kw)
    assert isinstance(info.value, lk.UnsupportedError)


def test_strided_global_and_swizzled_shared_block_tma_paths():
    strided = Op("global", "float16", (1024, 1024), region=((0, 64), (0, 64)), strides=(1030, 1))  # 2060 bytes
    assert nv.select_copy_instruction(S, strided, "sm_90") is I.NORMAL
    swizzled = Op("shared", "float16", (64, 1024), layout=nv.make_full_bank_swizzled_layout((64, 1024), "float16"))
    assert nv.select_copy_instruction(swizzled, G_ROWS, "sm_90") is I.BULK_STORE  # not 1-D: shared is swizzled
    linear = Op("shared", "float16", (64, 1024), layout=nv.make_linear_layout((64, 1024), "float16"))
    assert nv.select_copy_instruction(linear, G_ROWS, "sm_90") is I.BULK_STORE_1D


def test_layout_requirements():
    assert nv.copy_layout_requirement(I.NORMAL) == "simt-loop"
    assert nv.copy_layout_requirement(I.CP_ASYNC) == "simt-loop"
    assert nv.copy_layout_requirement(I.BULK_STORE) == "tma-shared"
    assert nv.copy_layout_requirement(I.BULK_LOAD_1D) == "tma-linear"
    assert nv.copy_layout_requirement(I.TMEM_LOAD) == "tmem"
    assert I.NORMAL.is_simt and not I.LDSM.is_simt and I.BULK_STORE.is_tma
    assert nv.tma_shared_layout((64, 64), "float16").swizzle.kind == "full"
    assert nv.tma_shared_layout((4, 64), "float16").swizzle.kind == "linear"


def test_operand_validation():
    with pytest.raises(lk.ShapeError):
        Op("global", "float16", (64, 64), region=((0, 64),))
    with pytest.raises(nv.DtypeError):
        Op("global", "float99", (64, 64))
    with pytest.raises(lk.ShapeError):
        nv.select_copy_instruction("global", S)
