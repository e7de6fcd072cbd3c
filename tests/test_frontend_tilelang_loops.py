"""Parallel-loop plans the TileLang adapter reads as TileLang 0.1.15's planner makes them, checked against
TileLang itself (the kernels are in :data:`tests.tilelang_kernels.KERNELS` / ``NOT_LOWERED``, so
``tests/test_frontend_tilelang.py`` also compares every table and lowers the annotated kernels):

- a call TileLang cannot vectorise (no ``TVectorizable`` attribute: ``T.ieee_add``, ``T.ieee_fsqrt``) caps
  the loop's vector width at the width over which its addresses stay the same, and a condition on the
  inner loop variable at the width over which it stays the same;
- the analyzer proving a global address aligned knows the loop ranges and the ``if`` conditions around
  the access (``if token < 1`` drops a runtime row stride), and a nest TileLang fuses before planning
  (power-of-two extents, no fragment) never shows an outer stride;
- a ragged fragment copy (more points than threads, not a multiple of them) has no TileLang plan: the
  attempt rooted there fails and the loop that reads the fragment lays it out.
"""

import functools

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

tilelang = require_tilelang()

from layoutkit.frontends.tilelang import (  # noqa: E402
    from_prim_func,
    lower,
    solve_prim_func,
    tilelang_inference,
)
from layoutkit.infer import infer_layouts  # noqa: E402
from layoutkit.testing.assertions import same_tables  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402

pytestmark = pytest.mark.oracle

TARGET = {"kind": "cuda", "arch": "sm_80"}


def _build(name: str):
    return (K.KERNELS.get(name) or K.NOT_LOWERED[name])()


@functools.cache
def run_of(name: str):
    return tilelang_inference(_build(name), TARGET)


def _assert_equal_tables(name: str) -> None:
    run = run_of(name)
    assert not run.failed, run.error
    ours = infer_layouts(run.program)
    for buf, theirs in run.layouts.items():
        assert same_tables(ours.layout_map[buf], theirs), f"{name}: {buf}: {ours.layout_map[buf]} vs {theirs}"
    for op, theirs in run.loop_layouts.items():
        assert same_tables(ours.loop_layouts[op], theirs), f"{name}: {op}: {ours.loop_layouts[op]} vs {theirs}"


def _loop_args(name: str) -> dict:
    (loop,) = [op for op in from_prim_func(_build(name), TARGET).ops if op.kind == "parallel"]
    return loop.args


def tilelang_lower(func):
    from tilelang import tvm

    with tvm.target.Target(TARGET):
        return tilelang.lower(func, target=TARGET)


@pytest.mark.parametrize("name, cap, thread", [
    ("opaque_call_f32", 1, "_i % 8 * 16 + _j"),  # T.ieee_add(A[i, j], B[i, j]): scalar
    ("opaque_call_f16", 1, "_i % 8 * 16 + _j"),
    ("opaque_call_grouped", 2, "_i * 8 + _j // 2"),  # T.ieee_fsqrt(S[i, j // 2]): 2 lanes read one address
])
def test_an_opaque_call_caps_the_vector_width(name, cap, thread):
    assert _loop_args(name)["vector_cap"] == cap
    assert str(run_of(name).loop_layouts["parallel#0"].forward_thread) == thread
    _assert_equal_tables(name)


def _with_call(kind: str):
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(4, threads=128) as bx:
            for i, j in T.Parallel(16, 64):
                if kind == "exp":
                    B[bx * 16 + i, j] = T.exp(A[bx * 16 + i, j])
                else:
                    B[bx * 16 + i, j] = A[bx * 16 + i, j] * T.ieee_frcp(A[bx * 16 + i, 0], "rn")
    return main


@pytest.mark.parametrize("kind, cap", [("exp", None), ("row_scale", 64)])
def test_a_vectorisable_call_or_an_invariant_operand_leaves_the_width(kind, cap):
    """``T.exp`` is ``TVectorizable`` (no cap); ``T.ieee_frcp(A[i, 0])`` reads one address along the row
    (the cap is the whole inner extent, the loop stays 8 fp16 wide)."""
    func = _with_call(kind)
    (loop,) = [op for op in from_prim_func(func, TARGET).ops if op.kind == "parallel"]
    assert loop.args.get("vector_cap") == cap
    run = tilelang_inference(func, TARGET)
    ours = infer_layouts(run.program).loop_layouts[loop.name]
    assert same_tables(ours, run.loop_layouts[loop.name])
    assert str(run.loop_layouts[loop.name].forward_thread) == "_i * 8 + _j // 8"


@pytest.mark.parametrize("name, cap, thread", [
    ("condition_bound", 1, "_i % 2 * 64 + _j"),  # if bx * 64 + j < N: scalar
    ("condition_mod", 2, "_i % 4 * 32 + _j // 2"),  # if j % 4 < 2
    ("condition_select", 8, "_i % 16 * 8 + _j // 8"),  # T.if_then_else(j < 8, ...): as without it
])
def test_a_condition_on_the_inner_variable_caps_the_vector_width(name, cap, thread):
    """The tensors' row stride is the runtime ``N``, but TileLang fuses the 64 x 64 nest (no fragment,
    power-of-two extents): the stride never narrows the vector, the condition does."""
    args = _loop_args(name)
    assert args["vector_cap"] == cap and "align" not in args
    assert str(run_of(name).loop_layouts["parallel#0"].forward_thread) == thread
    _assert_equal_tables(name)


@pytest.mark.parametrize("name, align", [
    ("pinned_row", None),  # if token < 1: the row is 0, the stride drops out
    ("pinned_row_else", None),  # the else branch of if token >= 1
    ("unpinned_row", 2),  # no condition: only an even stride is known
    ("fused_pinned_row", None),  # TileLang's issue 2883 kernel: fused, one loop variable
    ("fused_unpinned_row", None),
])
def test_conditions_and_fusion_decide_what_a_runtime_stride_costs(name, align):
    assert (_loop_args(name).get("align") or {}).get("src") == align
    width = 2 if align else 16
    assert str(run_of(name).loop_layouts["parallel#0"].forward_thread) == f"_j % {128 * width} // {width}"
    _assert_equal_tables(name)


def test_a_ragged_copy_root_fails_and_the_loop_lays_the_fragment_out():
    run = run_of("ragged_copy_root")
    _assert_equal_tables("ragged_copy_root")
    ours = infer_layouts(run.program)
    assert ours.derivations["A_local"][-1].op == "parallel#1"
    assert ours.layout_map["A_local"].replicate_size == 8


@pytest.mark.parametrize("name", ["opaque_call_f32", "opaque_call_grouped", "ragged_copy_root", "condition_mod"])
def test_layoutkit_as_the_pass_gives_tilelangs_cuda(name):
    """TileLang honours the layouts: the kernel lowered with layoutkit as its pass, or annotated with
    layoutkit's layouts, is TileLang's own CUDA text."""
    theirs = tilelang_lower(K.KERNELS[name]()).kernel_source
    assert lower(K.KERNELS[name](), TARGET, fallback=False).kernel_source == theirs
    assert tilelang_lower(solve_prim_func(K.KERNELS[name](), TARGET)).kernel_source == theirs
