"""Which memory scopes each ``T.gemm`` instruction reads (TileLang 0.1.15's per-instruction ``infer_layout``):
MMA / WGMMA / Volta MMA refuse per-thread ``local`` operands and a non-fragment accumulator, the FMA fallback
takes every scope and lays out only its fragment operands."""

from __future__ import annotations

import numpy as np
import pytest

from layoutkit.errors import UnsupportedError
from layoutkit.infer import Program, infer_layouts
from layoutkit.targets import nv

F32 = "float32"


def _local_program(target: str, dtype: str = F32, c_scope: str = "local") -> Program:
    """A GEMM of ``T.alloc_local`` A / B (64 x 32 x 64) into C in ``c_scope``, on 128 threads."""
    p = Program(threads=128, target=target)
    A = p.alloc_local("A_local", (64, 32), dtype)
    B = p.alloc_local("B_local", (32, 64), dtype)
    C = p.alloc(f"C_{c_scope}", (64, 64), F32, c_scope)
    p.gemm(A, B, C)
    return p


def test_mma_refuses_local_operands_naming_the_pairing():
    """sm_80 selects MMA whatever the scopes; MMA reads A / B from shared memory or fragments only."""
    with pytest.raises(nv.GemmScopeError) as info:
        infer_layouts(_local_program("sm_80"))
    e = info.value
    assert (e.instruction, e.operand, e.found) == ("mma", "A/B", ("local", "local"))
    assert ("local.fragment", "local.fragment") in e.expected and len(e.expected) == 4
    assert "Unsupported gemm combination" in str(e) and isinstance(e, UnsupportedError)


@pytest.mark.parametrize("arch, inst", [("sm_80", "mma"), ("sm_90", "wgmma"), ("sm_70", "mma_sm70")])
def test_tensor_core_gemm_refuses_a_shared_accumulator(arch, inst):
    """A / B shared (a valid pairing for every tensor-core instruction), C in shared memory: refused on C."""
    with pytest.raises(nv.GemmScopeError) as info:
        nv.gemm_layouts(("shared", (64, 32), "float16"), ("shared", (32, 64), "float16"),
                        ("shared", (64, 64), F32), arch=arch)
    assert (info.value.instruction, info.value.operand, info.value.found) == (inst, "C", "shared")
    assert info.value.expected == ("local.fragment",)


def test_wgmma_needs_b_in_shared_memory():
    """WGMMA pairs are ss / rs only: a fragment B on sm_90 is no WGMMA (the selection then picks MMA, which
    takes it), and a local A is refused by WGMMA itself."""
    assert nv.select_gemm_instruction(("shared", (64, 32), "float16"), ("local.fragment", (32, 64), "float16"),
                                      ("local.fragment", (64, 64), F32), arch="sm_90") == "mma"
    with pytest.raises(nv.GemmScopeError) as info:
        nv.gemm_layouts(("local", (64, 32), "float16"), ("shared", (32, 64), "float16"),
                        ("local.fragment", (64, 64), F32), arch="sm_90")
    assert (info.value.instruction, info.value.found) == ("wgmma", ("local", "shared"))


def test_the_shape_is_checked_before_the_scopes():
    """Warp partition first (TileLang builds its MMA emitter before it looks at the scopes)."""
    with pytest.raises(nv.WarpPartitionError):
        nv.gemm_layouts(("shared", (16, 16), "float16"), ("shared", (16, 16), "float16"),
                        ("shared", (16, 16), F32), arch="sm_80")


@pytest.mark.parametrize("arch, dtype", [("sm_75", F32), ("sm_70", "float16")])
def test_fma_fallback_takes_local_operands_and_lays_none_out(arch, dtype):
    """No MMA fits (float32 on sm_75; local operands on sm_70): the FMA fallback, which proposes a layout
    only for fragments: a GEMM of local buffers is laid out by nothing."""
    p = _local_program(arch, dtype)
    assert nv.select_gemm_instruction(("local", (64, 32), dtype), ("local", (32, 64), dtype),
                                      ("local", (64, 64), F32), arch=arch) == "fma"
    result = infer_layouts(p)
    assert not {"A_local", "B_local", "C_local"} & set(result.layout_map)


def test_fma_lays_out_a_fragment_operand_beside_a_shared_accumulator():
    """FMA with A a fragment, B / C shared: A gets the round-robin fragment (flat index ``f`` on thread
    ``f % 128``, register ``f // 128``), the shared accumulator nothing."""
    r = nv.gemm_layouts(("local.fragment", (64, 32), F32), ("shared", (32, 64), F32), ("shared", (64, 64), F32),
                        arch="sm_75")
    assert r.instruction == "fma" and set(r.layouts) == {"A"}
    flat = np.arange(64 * 32).reshape(64, 32)
    assert np.array_equal(r["A"].thread_table()[0], flat % 128)
    assert np.array_equal(r["A"].index_table(), flat // 128)
