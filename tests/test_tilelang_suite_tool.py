"""The TileLang suite tool's own logic, without TileLang or torch: which pass (sm_80 on an A100's
answers, sm_90 on an H100's) a file is built in, how the two passes' rows merge, and what the CPU
redirection of ``torch.cuda`` answers (checked on a stand-in ``torch`` module)."""

from __future__ import annotations

import doctest
import importlib.util
import sys
import types
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("tilelang_suite", Path(__file__).resolve().parents[1] / "tools" /
                                              "tilelang_suite.py")
suite = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(suite)


def test_doctests():
    assert doctest.testmod(suite).failed == 0


def test_files_written_for_hopper_are_built_at_sm_90_first():
    assert suite.first_arch("examples/dequantize_gemm/example_dequant_gemm_fp4_hopper.py") == "sm_90"
    assert suite.first_arch("examples/deepseek_v4/sparse_attn_fwd_sm90.py") == "sm_90"
    assert suite.first_arch("examples/flash_attention/example_gqa_bwd_tma_reduce.py") == "sm_80"


def test_a_hopper_failure_at_sm_80_asks_for_the_sm_90_pass():
    tma = {"status": "tilelang-fails", "why": "Check failed: T.tma_copy() requires TMA-capable target and ..."}
    assert suite.needs_hopper([tma])
    assert suite.needs_hopper([{"status": "no-kernel", "why": "AssertionError: This example only supports GPU "
                                                              "with compute capability >= 9.0"}])
    # a solved kernel, or a failure for another reason, does not
    assert not suite.needs_hopper([{"status": "equal", "why": "compute capability >= 9.0"}])
    assert not suite.needs_hopper([{"status": "no-kernel", "why": "ModuleNotFoundError: No module named 'fla'"}])


def test_the_sm_90_rows_replace_only_the_hopper_failures():
    first = [{"where": "t.py::a", "status": "equal"},
             {"where": "t.py::b", "status": "no-kernel", "why": "compute capability >= 9.0"},
             {"where": "t.py::c", "status": "no-kernel", "why": "No module named 'fla'"}]
    second = [{"where": "t.py::a", "status": "differ", "arch": "sm_90"},
              {"where": "t.py::b", "status": "equal", "arch": "sm_90"}]
    merged = suite.merge_passes(first, second)
    assert [(r["where"], r["status"], r.get("arch")) for r in merged] == [
        ("t.py::a", "equal", None), ("t.py::b", "equal", "sm_90"), ("t.py::c", "no-kernel", None)]
    # a file that stopped before its first kernel takes every row of the sm_90 pass
    whole = [{"where": "t.py", "status": "no-kernel", "why": "assert compute capability >= 9.0"}]
    assert suite.merge_passes(whole, second) == second
    assert suite.merge_passes(whole, []) == whole


def test_each_pass_compiles_for_its_arch_and_answers_for_its_gpu():
    assert suite.NVCC_ARCH == {"sm_80": "sm_80", "sm_90": "sm_90a", "sm_100": "sm_100a"}
    assert suite.nvcc_arch_flags("sm_100") == ["-gencode", "arch=compute_100a,code=sm_100a"]
    b200 = suite.DEVICES["sm_100"]
    assert (b200["major"], b200["minor"], b200["multi_processor_count"]) == (10, 0, 148)
    assert suite.nvcc_arch_flags("sm_80") == ["-gencode", "arch=compute_80,code=sm_80"]
    assert suite.nvcc_arch_flags("sm_90") == ["-gencode", "arch=compute_90a,code=sm_90a"]
    a100, h100 = suite.DEVICES["sm_80"], suite.DEVICES["sm_90"]
    assert (a100["major"], a100["minor"], a100["multi_processor_count"]) == (8, 0, 108)
    assert (h100["major"], h100["minor"], h100["multi_processor_count"]) == (9, 0, 132)
    assert (a100["shared_memory_per_block_optin"], h100["shared_memory_per_block_optin"]) == (166912, 232448)


def _stand_in_torch():
    torch = types.ModuleType("torch")
    torch.dtype = type("dtype", (), {})
    torch.device = type("device", (), {"__init__": lambda self, s: setattr(self, "s", s),
                                       "__str__": lambda self: self.s})
    torch.Tensor = type("Tensor", (), {"to": lambda self, *a, **k: (a, k), "cuda": None})
    torch.randperm = lambda n, **k: ("randperm", n, k)
    torch.empty = lambda *shape, **k: ("empty", shape, k)
    torch.get_rng_state = lambda: "the CPU generator's state"
    torch.cuda = types.SimpleNamespace()
    return torch


def test_cuda_requests_go_to_the_cpu_and_device_queries_answer_an_h100(monkeypatch):
    torch = _stand_in_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    suite._cpu_torch("sm_90")
    assert torch.randperm(8, device="cuda") == ("randperm", 8, {"device": "cpu"})
    assert torch.empty(2, 3, device=torch.device("cuda:0")) == ("empty", (2, 3), {"device": "cpu"})
    assert torch.empty(2, device="meta") == ("empty", (2,), {"device": "meta"})
    assert torch.Tensor().to("cuda", non_blocking=True) == (("cpu",), {"non_blocking": True})
    assert torch.cuda.get_device_capability() == (9, 0)
    props = torch.cuda.get_device_properties(0)
    assert (props.name, props.multi_processor_count, props.major) == ("NVIDIA H100 80GB HBM3", 132, 9)
    assert torch.cuda.is_available() is True
    assert torch.cuda.get_rng_state(0) == "the CPU generator's state"  # what torch.random.fork_rng saves
    torch.cuda.set_device(0)  # the autotuner's workers: a no-op, as is its device scope
    with torch.cuda.device(0):
        assert torch.cuda.current_device() == 0


def test_blackwell_files_and_rows_go_to_the_sm100_pass():
    assert suite.first_arch("examples/gemm_tcgen05/gemm_tcgen5mma.py") == "sm_100"
    assert suite.needs_blackwell([{"status": "refused", "why": "scope 'shared.tmem' is Blackwell tensor memory"}])
    assert not suite.needs_blackwell([{"status": "equal"}, {"status": "no-kernel", "why": "needs compute >= 9.0"}])
