"""Moved modules left nothing behind at their old paths, the examples build the shared programs, and the scope
names and warp size are the ones defined once."""

import importlib.util
import runpy
from pathlib import Path

import layoutkit  # noqa: F401  (registers the backends)
from layoutkit import cost, infer, scopes
from layoutkit.algebra.shapes import placeholder
from layoutkit.cost import IOAwareModel
from layoutkit.cost.access import global_traffic
from layoutkit.fragment.fragment import Fragment
from layoutkit.infer import programs
from layoutkit.targets.nv import WARP_SIZE

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_moved_modules_left_no_re_export_behind():
    """Each module lives at one path: the re-exports of moved modules are gone, and so are the files a ring of
    imports was cut into (merged back into the module they import)."""
    gone = [f"layoutkit.codegen.{m}" for m in ("ascend_c", "ascend_ir", "ascend_loops", "checks", "cuda", "execute",
                                               "execute_ascend", "ir", "lower_ascend", "lower_frag", "lower_nv")]
    gone += ["layoutkit.infer.convert", "layoutkit.infer.kernels", "layoutkit.infer.cost", "layoutkit.algebra.convert",
             "layoutkit.tla.algebra", "layoutkit.tla.dtypes", "layoutkit.targets.nv.dtype",
             "layoutkit.frontends.tilelang_pass", "layoutkit.testing.cuda_cpu.translate_sm90",
             "layoutkit.testing.cuda_cpu.translate_sm90_store", "layoutkit.infer.conflicts",
             "layoutkit.backends.nv.reduce_shared", "layoutkit.backends.nv.hopper_epilogue",
             "layoutkit.frontends.tilelang_gemm_tir"]
    assert [m for m in gone if importlib.util.find_spec(m) is not None] == []
    assert infer.AttemptCost is cost.AttemptCost and infer.register_cost_model is cost.register_cost_model
    from layoutkit.infer import program

    assert [n for n in ("op_dict", "region_access", "SCOPES", "transpose_access") if hasattr(program, n)] == []


def test_examples_build_the_shared_programs():
    def example(name, *args):
        return runpy.run_path(str(EXAMPLES / name))["program"](*args)

    assert example("gemm.py").to_json() == programs.gemm().to_json()
    assert example("gemm.py", 64, 32, 16, 256).to_json() == programs.gemm(bM=64, bN=32, bK=16, threads=256).to_json()
    bias = example("gemm_bias_rowmax.py", 32)
    assert bias.to_json() == programs.gemm_rowmax_bias(bM=32, bN=32, bias_name="bias").to_json()
    assert "bias" in bias.buffers and "Bias" not in bias.buffers
    mul = example("elementwise.py")
    assert mul.ops[2].args["compute"] == "mul" and mul.to_json() == programs.elementwise_binary().to_json()


def test_program_json_round_trip_after_the_split():
    p = programs.gemm_rowmax_bias(M=128, N=128, K=64, bM=64, bN=64, bK=32)
    q = infer.Program.from_json(p.to_json())
    assert q.to_json() == p.to_json() and [op.kind for op in q.ops] == [op.kind for op in p.ops]


def test_scopes_are_the_ones_programs_use():
    p = infer.Program(threads=64)
    assert p.alloc_shared("s", (8, 8), "float16").scope == scopes.SHARED_DYN
    assert p.alloc_fragment("f", (8, 8), "float16").scope == scopes.FRAGMENT
    assert p.tensor("g", (8, 8), "float16").scope == scopes.GLOBAL
    assert infer.Program(target="ascend").alloc_shared("u", (8, 8), "float16").scope == "ub"


def test_warp_size_sets_the_instruction_count():
    """One thread per row: each warp instruction covers ``warp_size`` rows, so halving it doubles them."""
    L = Fragment([64, 8], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
    idx = (placeholder(0, 64), placeholder(1, 8))
    full, half = (global_traffic(L, idx, (64, 8), "float32", w) for w in (WARP_SIZE, WARP_SIZE // 2))
    assert half.instructions == 2 * full.instructions and full.issue_bytes == half.issue_bytes
    assert IOAwareModel.warp_size == WARP_SIZE
