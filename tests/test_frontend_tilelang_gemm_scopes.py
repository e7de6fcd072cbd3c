"""``T.gemm`` of per-thread ``local`` operands and into a shared accumulator against TileLang 0.1.15 itself:
the instruction TileLang selects (MMA on sm_80 and sm_100, WGMMA on sm_90, Volta's MMA on sm_70, the FMA
fallback where no MMA fits the dtypes) decides; a tensor-core instruction refuses those scopes in its
``infer_layout`` and TileLang's inference stops, as layoutkit's rule does (naming the operand), and the FMA
fallback lays out only fragment operands, table for table as TileLang's."""

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

tilelang = require_tilelang()

from layoutkit.frontends.tilelang import tilelang_inference  # noqa: E402
from layoutkit.infer import infer_layouts  # noqa: E402
from layoutkit.targets import nv  # noqa: E402
from layoutkit.testing.assertions import same_tables  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402

pytestmark = pytest.mark.oracle

TILELANG_REASON = {
    "A/B": "Unsupported gemm combination",
    "C": "must be a fragment",
    "partition": "No valid warp partition",
}
"""What TileLang's inference says where it stops, by what it refuses."""

REFUSED = sorted(name for name, (_, _, refused) in K.GEMM_SCOPES.items() if refused)
SOLVED = sorted(name for name, (_, _, refused) in K.GEMM_SCOPES.items() if not refused)


def _run(name: str):
    build, arch, refused = K.GEMM_SCOPES[name]
    return tilelang_inference(build(), {"kind": "cuda", "arch": arch}), refused


@pytest.mark.parametrize("name", REFUSED)
def test_both_refuse_and_name_the_same_operand(name):
    run, refused = _run(name)
    assert run.failed and TILELANG_REASON[refused] in run.error, run.error
    if refused == "partition":
        with pytest.raises(nv.WarpPartitionError):
            infer_layouts(run.program)
        return
    with pytest.raises(nv.GemmScopeError) as info:
        infer_layouts(run.program)
    assert info.value.operand == refused


@pytest.mark.parametrize("name", SOLVED)
def test_fma_fallback_equals_tilelang(name):
    """TileLang solves it; layoutkit lays out the same buffers with the same tables, and neither lays out a
    local or shared GEMM operand."""
    run, _ = _run(name)
    assert not run.failed, run.error
    ours = infer_layouts(run.program)
    gemm = next(op for op in run.program.ops if op.kind == "gemm")
    operands = {gemm.args[k] for k in ("A", "B", "C")}
    fragments = {b for b in operands if run.program.buffers[b].scope == "local.fragment"}
    assert fragments == operands & set(run.layouts) == operands & set(ours.layout_map)
    assert set(run.layouts) <= set(ours.layout_map)
    for buf, theirs in run.layouts.items():
        assert same_tables(ours.layout_map[buf], theirs), buf
    for loop, theirs in run.loop_layouts.items():
        assert same_tables(ours.loop_layouts[loop], theirs), loop
