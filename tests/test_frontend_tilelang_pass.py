"""layoutkit *as* TileLang's layout-inference pass (``layoutkit.frontends.tilelang.lower``): TileLang
0.1.15's own lowering with its LayoutInference replaced gives the same CUDA text as ``tilelang.lower``
on every test kernel TileLang solves (sm_80, and sm_90 with warp-specialised TMA pipelines), writes the
same annotations, never runs TileLang's pass, and lowers the kernels TileLang cannot lay out."""

import functools
import shutil
import subprocess
from pathlib import Path

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

tilelang = require_tilelang()

from layoutkit.errors import UnsupportedError  # noqa: E402
from layoutkit.frontends import tilelang as lktl  # noqa: E402
from layoutkit.frontends.tilelang import (  # noqa: E402
    LOOP_PREDICATE,
    PADDING_GUARD,
    from_tilelang,
    fuse_parallel_loops,
    layoutkit_inference,
)

from . import tilelang_kernels as K  # noqa: E402
from .test_frontend_tilelang import assert_same  # noqa: E402

pytestmark = pytest.mark.oracle

BUILDERS = {**K.KERNELS, **K.FUSED}
SOLVED_BY_TILELANG = sorted(set(BUILDERS) - K.TILELANG_FAILS)
SM90 = ["gemm_64", "attention_fullrow", "softmax_64x128", "gemm_rowmax_bias", "shared_loops"]
OURS, THEIRS = "layoutkit.LayoutInference", "tl.LayoutInference"


def _lowered(name: str, arch: str, ours: bool):
    """(CUDA text, names of the passes run, module after the layout pass, pass record or None)."""
    from tilelang import tvm

    seen: list[str] = []
    after: dict = {}

    @tvm.ir.instrument.pass_instrument
    class Record:
        def run_after_pass(self, mod, info):
            seen.append(info.name)
            if info.name in (OURS, THEIRS):
                after["mod"] = mod

    target = {"kind": "cuda", "arch": arch}
    with tvm.transform.PassContext(instruments=[Record()]):
        if ours:
            with layoutkit_inference(fallback=False) as record, tvm.target.Target(target):
                src = tilelang.lower(BUILDERS[name](), target=target).kernel_source
            return src, seen, after.get("mod"), record
        with tvm.target.Target(target):
            return tilelang.lower(BUILDERS[name](), target=target).kernel_source, seen, after.get("mod"), None


@functools.cache
def lowered(name: str, arch: str = "sm_80", ours: bool = True):
    return _lowered(name, arch, ours)


def _annotations(mod) -> tuple[dict, list]:
    """The root block's layout map by buffer name (layoutkit layouts) and each parallel loop's
    annotations (layout read back, predicate as text, padding guard), in program order."""
    from tilelang import tvm

    from layoutkit.frontends.tilelang_ir import extent_bound, nodes

    tirx = tvm.tirx
    func = next(iter(mod.functions.values()))
    blocks = nodes(func.body, tirx.SBlock)
    layouts = {}
    for block in blocks:
        for buf, lay in dict(block.annotations.get("layout_map", {})).items():
            layouts.setdefault((buf.name, tuple(int(x) for x in buf.shape)), from_tilelang(lay))
    loops = []
    for f in nodes(func.body, tirx.For):
        if "parallel_loop_layout" in f.annotations:
            lay = f.annotations["parallel_loop_layout"]
            # a runtime extent (T.min(n, 512)): both layouts are over it; read them over its bound
            shape = [extent_bound(x, "loop")[0] for x in lay.get_input_shape()]
            loops.append((from_tilelang(lay, shape), str(f.annotations.get(LOOP_PREDICATE)),
                          PADDING_GUARD in f.annotations, str(list(lay.get_input_shape()))))
    return layouts, loops


@pytest.mark.parametrize("name", SOLVED_BY_TILELANG)
def test_pass_lowers_to_tilelangs_cuda_without_running_tilelangs_inference(name):
    src, passes, _, record = lowered(name)
    theirs, their_passes, _, _ = lowered(name, ours=False)
    assert record.solved == 1 and record.fallbacks == []
    assert OURS in passes and THEIRS not in passes
    assert THEIRS in their_passes
    assert src == theirs


@pytest.mark.parametrize("name", SOLVED_BY_TILELANG)
def test_pass_writes_tilelangs_annotations(name):
    ours, loops = _annotations(lowered(name)[2])
    theirs, their_loops = _annotations(lowered(name, ours=False)[2])
    assert sorted(ours) == sorted(theirs)
    for key, lay in ours.items():
        assert_same(lay, theirs[key], f"{name}: {key}")
    assert len(loops) == len(their_loops)
    for (a, pa, ga, sa), (b, pb, gb, sb) in zip(loops, their_loops):
        assert_same(a, b, f"{name}: loop layout")
        assert (pa, ga, sa) == (pb, gb, sb)


@pytest.mark.parametrize("name", SM90)
def test_pass_on_warp_specialised_sm90_kernels(name):
    src, passes, _, record = lowered(name, "sm_90")
    assert record.fallbacks == [] and THEIRS not in passes
    assert src == lowered(name, "sm_90", ours=False)[0]


@pytest.mark.parametrize("name", sorted(K.TILELANG_FAILS))
def test_pass_lowers_kernels_tilelang_cannot_lay_out(name):
    src, passes, _, record = lowered(name)
    assert record.solved == 1 and THEIRS not in passes
    assert "__global__" in src


def test_lower_is_the_public_switch():
    art = lktl.lower(K.KERNELS["gemm_64"](), "sm_80")
    assert art.kernel_source == lowered("gemm_64", ours=False)[0]


def test_fused_loops_are_what_tilelang_lays_out():
    func = fuse_parallel_loops(K.FUSED["shared_loops"]())
    text = func.script()
    assert text.count("i_j_fused in T.parallel(8192") == 2



def test_a_kernel_layoutkit_refuses_falls_back_or_raises():
    from tilelang import tvm

    target = {"kind": "cuda", "arch": "sm_90"}  # T.wgmma_gemm_sp: refused by name, solved by TileLang
    with tvm.target.Target(target):
        theirs = tilelang.lower(K.sparse_gemm(forced_wgmma=True), target=target).kernel_source
    with layoutkit_inference() as record, tvm.target.Target(target):
        src = tilelang.lower(K.sparse_gemm(forced_wgmma=True), target=target).kernel_source
    assert record.solved == 0 and len(record.fallbacks) == 1 and "T.wgmma_gemm_sp" in record.fallbacks[0]
    assert src == theirs
    with pytest.raises(UnsupportedError, match="T.wgmma_gemm_sp"):
        lktl.lower(K.sparse_gemm(forced_wgmma=True), "sm_90", fallback=False)


@pytest.mark.parametrize("name", ["row_sum_reducer", "scalar_reducer", "two_site_reducer"])
def test_a_reducer_kernel_is_solved_by_the_pass_with_tilelangs_text(name):
    """The reducer's PartialFragment goes into the layout map TileLang's reducer planner reads."""
    from tilelang import tvm

    target = {"kind": "cuda", "arch": "sm_80"}
    with tvm.target.Target(target):
        theirs = tilelang.lower(K.KERNELS[name](), target=target).kernel_source
    with layoutkit_inference() as record, tvm.target.Target(target):
        src = tilelang.lower(K.KERNELS[name](), target=target).kernel_source
    assert record.solved == 1 and not record.fallbacks
    assert src == theirs


def test_factories_are_restored():
    import tilelang.transform as tlt

    before = tlt.LayoutInference, tlt.MaterializeKernelLaunch
    with pytest.raises(UnsupportedError):
        lktl.lower(K.sparse_gemm(forced_wgmma=True), "sm_90", fallback=False)
    assert (tlt.LayoutInference, tlt.MaterializeKernelLaunch) == before


def _include_dirs() -> list[str]:
    root = Path(tilelang.__file__).resolve().parent
    return [str(root / "src"), str(root / "3rdparty" / "cutlass" / "include")]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", ["gemm_128", "attention_fullrow", "shared_loops", *sorted(K.TILELANG_FAILS)])
def test_pass_output_compiles_with_nvcc(name, tmp_path):
    src = tmp_path / f"{name}.cu"
    src.write_text(lowered(name)[0])
    cmd = ["nvcc", "-arch=sm_80", "-std=c++17", "-w", "-c", str(src), "-o", str(tmp_path / f"{name}.o")]
    cmd += [f"-I{d}" for d in _include_dirs()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_fused_nests_compare_with_the_source_loops():
    """TileLang lays out a fragment-free nest after fusing it; its layout, reshaped back to the nest,
    is layoutkit's layout of the source loops, table for table."""
    from layoutkit.infer import infer_layouts

    run = lktl.tilelang_inference(K.FUSED["shared_loops"](), "sm_80")
    ours = infer_layouts(run.program)
    assert len(run.loop_layouts) == 2
    for op, theirs in run.loop_layouts.items():
        assert theirs.input_shape == (64, 128)
        assert_same(ours.loop_layouts[op], theirs, op)


CONFIGS = [({"tl.disable_warp_specialized": True}, "sm_90"), ({"tl.disable_tma_lower": True}, "sm_90"),
           ({"tl.layout_cost_model": "io-aware"}, "sm_80")]


@pytest.mark.parametrize("config, arch", CONFIGS, ids=["no-ws", "no-tma", "io-aware"])
@pytest.mark.parametrize("name", ["flash_attention", "gemm_rowmax_bias", "softmax_64x128"])
def test_pass_configs_are_honoured(name, config, arch):
    """Pass configs act on TileLang's passes around the substituted one as usual, and the cost model
    TileLang's pass would use is the one layoutkit infers with."""
    from tilelang import tvm

    from layoutkit.frontends.tilelang import configured_cost_model

    target = {"kind": "cuda", "arch": arch}
    with tvm.transform.PassContext(config=config), tvm.target.Target(target):
        theirs = tilelang.lower(BUILDERS[name](), target=target).kernel_source
    with tvm.transform.PassContext(config=config), layoutkit_inference(fallback=False) as record, \
            tvm.target.Target(target):
        assert configured_cost_model() == config.get("tl.layout_cost_model", "register-count")
        ours = tilelang.lower(BUILDERS[name](), target=target).kernel_source
    assert record.solved == 1 and ours == theirs


def test_a_function_lowered_again_reuses_its_solution(monkeypatch):
    """The pass remembers what it solved: the same PrimFunc lowered again is not walked or solved
    again (same CUDA text); a rebuilt kernel (new parameter objects) and another cost model are."""
    from layoutkit.frontends import tilelang as tp

    solved = []
    real = tp._solve
    monkeypatch.setattr(tp, "_solve", lambda func, state, cost: solved.append(cost) or real(func, state, cost))
    tp.clear_cache()
    func = K.KERNELS["softmax_64x128"]()
    first = lktl.lower(func, "sm_80", fallback=False).kernel_source
    again = lktl.lower(func, "sm_80", fallback=False).kernel_source
    assert again == first and solved == ["register-count"]
    assert lktl.lower(K.KERNELS["softmax_64x128"](), "sm_80", fallback=False).kernel_source == first
    lktl.lower(func, "sm_80", cost_model="io-aware", fallback=False)
    assert solved == ["register-count", "register-count", "io-aware"]
    tp.clear_cache()
    lktl.lower(func, "sm_80", fallback=False)
    assert len(solved) == 4
