"""Blackwell tensor memory through the TileLang adapter, checked against TileLang 0.1.15 at sm_100: GEMMs
whose accumulator is in tensor memory (``T.alloc_tmem``, ``T.gemm`` selecting TCGEN05, ``T.tcgen05_gemm``),
TS GEMMs with A stored into tensor memory, and ``T.copy`` between tensor memory and fragments
(``tcgen05.ld`` / ``st``) equal TileLang's tables; the TCGEN05 atom table and the TMEM layouts equal
TileLang's own functions over a grid of shapes and dtypes.  Without TileLang the same facts are in
``tests/test_nv_tcgen05.py``."""

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

require_tilelang()

import tilelang  # noqa: E402
from tilelang import _ffi_api, tvm  # noqa: E402
from tilelang.cuda.intrinsics.layout import mma_sm100_layout as sm100  # noqa: E402

from layoutkit.errors import LayoutError, UnsupportedError  # noqa: E402
from layoutkit.frontends.tilelang import from_prim_func, from_tilelang, lower, tilelang_inference  # noqa: E402
from layoutkit.infer import infer_layouts  # noqa: E402
from layoutkit.targets.nv.tcgen05 import (  # noqa: E402
    Tcgen05Atom,
    make_tmem_accumulator_layout,
    make_tmem_operand_a_layout,
    select_tcgen05_atom,
)
from layoutkit.testing.assertions import same_tables  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402

pytestmark = pytest.mark.oracle

SM100 = {"kind": "cuda", "arch": "sm_100"}

CASES = {
    "ss_bf16": lambda: K.tcgen05_gemm(),
    "explicit_tcgen05_gemm": lambda: K.tcgen05_gemm(explicit=True),
    "split_epilogue_256t": lambda: K.tcgen05_gemm(threads=256, split=2),
    "m64_weight_stationary": lambda: K.tcgen05_gemm(M=64),
    "m64_n256": lambda: K.tcgen05_gemm(M=64, N=256),
    "int8": lambda: K.tcgen05_gemm(dtype="int8", accum_dtype="int32"),
    "fp8": lambda: K.tcgen05_gemm(dtype="float8_e4m3fn"),
    # M = 64 dense (layout F): tcgen05.ld 16dp64b; with 96 columns no shape fits, the store loop lays C out
    # (256-bit vectors on sm_100)
    "layout_f": lambda: K.tcgen05_gemm(M=64, N=32, dtype="float8_e4m3fn"),
    "layout_f_256t": lambda: K.tcgen05_gemm(M=64, N=32, dtype="float8_e4m3fn", threads=256),
    "layout_f_96_columns": lambda: K.tcgen05_gemm(M=64, N=96, dtype="float8_e4m3fn"),
    "ts": lambda: K.tcgen05_ts_gemm(),
    "ts_256t": lambda: K.tcgen05_ts_gemm(N=128, threads=256),
}


@functools.cache
def _run(name: str):
    return tilelang_inference(CASES[name](), SM100)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tables_equal_tilelang(name):
    run = _run(name)
    assert not run.failed, run.error
    ours = infer_layouts(run.program)
    assert {b for b in run.layouts if run.program.buffers[b].scope == "shared.tmem"}  # tensor memory laid out
    for buf, theirs in run.layouts.items():
        assert same_tables(ours.layout_map[buf], theirs), (name, buf)


def test_split_epilogue_fragment_spans_both_warp_groups():
    """256 threads reading a 128 x 128 accumulator in two 64-column copies: thread ``128 * (j // 64) + i``
    holds row ``i``'s columns of its half, both copies agreeing on one fragment."""
    frag = infer_layouts(_run("split_epilogue_256t").program).layout_map["C_local"]
    assert (frag.thread_extent, frag.local_size) == (256, 64)
    th = frag.thread_table().reshape(128, 128)
    assert (th[7, 10], th[7, 100]) == (7, 135)


def test_tensor_memory_before_sm100_is_refused_by_name():
    with pytest.raises(UnsupportedError, match=r"scope 'shared.tmem' is Blackwell tensor memory .*needs an sm_100"):
        from_prim_func(K.tcgen05_gemm(), "sm_90")


def test_16bit_accumulator_in_tensor_memory_is_refused_as_tilelang_fails():
    """f16 x f16 -> f16 has no TCGEN05 atom: ``T.gemm`` selects MMA, whose accumulator must be a fragment;
    TileLang's inference fails there, layoutkit's rule refuses it naming the selection."""
    run = tilelang_inference(K.tcgen05_gemm(dtype="float16", accum_dtype="float16"), SM100)
    assert run.failed and "must be a fragment" in run.error
    with pytest.raises(UnsupportedError, match="this GEMM selects mma on sm_100"):
        infer_layouts(run.program)


@pytest.mark.parametrize("name", ["ss_bf16", "ts"])
def test_lowered_with_layoutkit_as_the_pass(name):
    """TileLang's pipeline lowers the kernel with layoutkit's layouts (tensor memory included) to tcgen05
    MMAs and ``tcgen05.ld`` / ``st`` copies; nvcc compiles it for sm_100a where installed."""
    source = lower(CASES[name](), SM100, fallback=False).kernel_source
    assert "tcgen05mma" in source and "tcgen05_ld" in source
    if shutil.which("nvcc") is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / "k.cu"
        cu.write_text(source)
        root = Path(tilelang.__file__).resolve().parent
        done = subprocess.run(["nvcc", "-gencode", "arch=compute_100a,code=sm_100a", "-std=c++17", "-w", "-c",
                               str(cu), "-o", str(Path(tmp) / "k.o"), f"-I{root / 'src'}",
                               f"-I{root / '3rdparty' / 'cutlass' / 'include'}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


# ---- the hardware facts against TileLang's own functions -------------------------------------------

@pytest.mark.parametrize("ab, c", [("bfloat16", "float32"), ("float16", "float32"), ("float8_e4m3fn", "float32"),
                                   ("float8_e5m2", "float16"), ("int8", "int32")])
def test_atom_table_equals_tilelang(ab, c):
    for M in (32, 64, 128, 256):
        for N in (8, 24, 48, 64, 96, 128, 192, 256, 512):
            for K_ in (16, 32, 64):
                for two_cta in (False, True):
                    for ws in (False, True):
                        theirs = tuple(int(x) for x in _ffi_api.get_tcgen5_mma_meta(M, N, K_, ab, c, not two_cta,
                                                                                     not ws))
                        try:
                            a = select_tcgen05_atom(M, N, K_, ab, c, two_cta=two_cta, weight_stationary=ws)
                            mine = (a.m, a.n, a.k, int(a.weight_stationary), int(a.two_cta))
                        except UnsupportedError:
                            mine = ()
                        assert mine == theirs, (M, N, K_, two_cta, ws)


ATOMS = [(128, 128, 16, False, False), (128, 64, 16, False, False), (64, 128, 16, True, False),
         (32, 128, 16, True, False), (64, 128, 32, False, False), (256, 128, 16, False, True),
         (128, 128, 16, False, True), (128, 256, 32, True, False)]


def _same_or_both_refuse(theirs_fn, mine_fn, what) -> None:
    """TileLang's layout and ours have the same tables and output shape, or TileLang refuses (an assertion or
    a ValueError) and so does layoutkit (a typed error)."""
    try:
        theirs = from_tilelang(theirs_fn().to_tilelang())
    except (AssertionError, ValueError):
        with pytest.raises(LayoutError):
            mine_fn()
        return
    mine = mine_fn()
    assert same_tables(mine, theirs) and mine.output_shape == theirs.output_shape, what


@pytest.mark.parametrize("atom", ATOMS, ids=[f"{a[0]}x{a[1]}{'ws' if a[3] else ''}{'2cta' if a[4] else ''}"
                                             for a in ATOMS])
def test_tmem_layouts_equal_tilelang(atom):
    meta, ours = sm100.TCGEN05Meta(*atom), Tcgen05Atom(*atom)
    m = ours.m_per_cta
    for shape in [(m, ours.n), (2 * m, ours.n), (m, 2 * ours.n), (2, m, ours.n)]:
        for dtype in ("float32", "float16"):
            for ts in (False, True):
                buf = tvm.tirx.decl_buffer(shape, dtype, scope="shared.tmem")
                _same_or_both_refuse(functools.partial(sm100.make_tmem_frg_c, buf, meta, is_ts=ts),
                                     functools.partial(make_tmem_accumulator_layout, shape, dtype, ours, a_in_tmem=ts),
                                     (shape, dtype, ts))
    for dtype in ("bfloat16", "int8"):
        shape = (m, 2 * ours.k)
        buf = tvm.tirx.decl_buffer(shape, dtype, scope="shared.tmem")
        _same_or_both_refuse(functools.partial(sm100.make_tmem_frg_a, buf, meta),
                             functools.partial(make_tmem_operand_a_layout, shape, dtype, ours), (shape, dtype))
