"""Bad input to the codegen entry points: typed errors that name the buffer / op, never a leaked
IndexError / KeyError / numpy error or a silently wrong result; and the batched executor loops."""

from __future__ import annotations

import numpy as np
import pytest

from layoutkit import codegen
from layoutkit.algebra.nodes import Const
from layoutkit.backends.ascend.execute import gm_inputs
from layoutkit.backends.ascend.execute import run as run_ascend_kernel
from layoutkit.backends.ascend.lower import lower as lower_ascend
from layoutkit.backends.nv import execute as execute_mod  # codegen.execute is the function
from layoutkit.backends.nv import ir
from layoutkit.codegen import CodegenInputError
from layoutkit.errors import DtypeError, LayoutError, UnsupportedError
from layoutkit.infer import Program, infer_layouts, programs
from layoutkit.infer.result import InferenceResult


@pytest.fixture(scope="module")
def gemm():
    p = programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32)
    a = np.ones((64, 64), np.float16)
    return p, infer_layouts(p), {"A": a, "B": a.copy()}


def _raises(cls, fn, buffer=None, match=None):
    with pytest.raises(cls, match=match) as info:
        fn()
    if buffer is not None:
        assert info.value.buffer == buffer
    return info.value


# ---- results that do not solve the program ------------------------------------------------------------

@pytest.mark.parametrize("entry", ["lower", "emit_cuda", "execute"])
def test_unsolved_result_names_the_buffer(gemm, entry):
    p, _, arrays = gemm
    args = (p, InferenceResult({}, {}, {})) + ((arrays,) if entry == "execute" else ())
    e = _raises(CodegenInputError, lambda: getattr(codegen, entry)(*args), "A_shared")
    assert str(e) == (f"{entry if entry != 'emit_cuda' else 'lower'}: the result has no layout for shared.dyn buffer "
                      "A_shared (32, 32); expected the result of infer_layouts on this program (its layouts: [])")


@pytest.mark.parametrize("result", [None, {"A_shared": 1}, "solved"])
def test_result_of_the_wrong_type(gemm, result):
    p, _, arrays = gemm
    e = _raises(CodegenInputError, lambda: codegen.execute(p, result, arrays))
    assert "expected the InferenceResult of infer_layouts(program)" in str(e) and type(result).__name__ in str(e)


def test_result_from_another_program(gemm):
    p, _, arrays = gemm
    other = infer_layouts(programs.gemm(M=64, N=64, K=64, bM=64, bN=64, bK=32))
    e = _raises(CodegenInputError, lambda: codegen.execute(p, other, arrays), "A_shared")
    assert str(e) == ("execute: shared.dyn buffer A_shared has shape (32, 32) x 2 stages; its layout in the result "
                      "has input shape (2, 64, 32): is the result from another program?")
    _raises(CodegenInputError, lambda: codegen.emit_cuda(p, other), "A_shared")
    q = programs.elementwise(M=64, N=64, bM=32, bN=32, threads=128)  # same shapes, twice the threads
    wide = infer_layouts(programs.elementwise(M=64, N=64, bM=32, bN=32, threads=256))
    e = _raises(CodegenInputError, lambda: codegen.lower(q, wide), "A_frag")
    assert "spans 256 threads; the program runs 128" in str(e)
    _raises(CodegenInputError, lambda: codegen.lower(p, infer_layouts(q)), "A_shared")  # another kind of program


def test_layout_fragment_mix_up(gemm):
    p, r, _ = gemm
    lm = dict(r.layout_map)
    lm["C_local"], lm["A_shared"] = lm["A_shared"], lm["C_local"]
    e = _raises(CodegenInputError, lambda: codegen.emit_cuda(p, InferenceResult(lm, {}, {})), "A_shared")
    assert "shared.dyn buffer A_shared (32, 32) needs a Layout; the result holds a Fragment" in str(e)
    lm = dict(r.layout_map, C_local=r.layout_map["B_shared"])
    e = _raises(CodegenInputError, lambda: codegen.lower(p, InferenceResult(lm, {}, {})), "C_local")
    assert "fragment C_local (32, 32) needs a Fragment" in str(e)


def test_not_a_program(gemm):
    _, r, arrays = gemm
    for entry, args in [("lower", ("gemm", r)), ("emit_cuda", (None, r)), ("execute", ({}, r, arrays)),
                        ("emit_ascend_c", (r, r))]:
        with pytest.raises(UnsupportedError, match=f"{entry}: expected a layoutkit.infer.Program; found "):
            getattr(codegen, entry)(*args)


def test_unsupported_op_and_target_named():
    p = Program()
    A, B = p.tensor("A", (64, 64), "float32"), p.tensor("B", (64, 64), "float32")
    x = p.alloc_fragment("x", (64, 64), "float32")
    p.copy(A, x)
    p.atomic_add(B, x)
    with pytest.raises(UnsupportedError, match=r"op atomic_add#1 \(atomic_add\) in a fragment program has no lowering"):
        codegen.emit_cuda(p, infer_layouts(p))
    old = programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32, target="sm_70")
    with pytest.raises(UnsupportedError, match="gemm#3 on sm_70 with float16 x float16"):
        codegen.execute(old, infer_layouts(old), {})
    with pytest.raises(UnsupportedError, match="emit_cuda: expected an NVIDIA program; found target 'ascend'"):
        codegen.emit_cuda(_ascend_program(), None)
    with pytest.raises(UnsupportedError, match="emit_ascend_c: expected a program with target='ascend'; found"):
        codegen.emit_ascend_c(old, infer_layouts(old))


# ---- arrays handed to execute ------------------------------------------------------------------------

def test_missing_input_is_not_zero_filled(gemm):
    p, r, arrays = gemm
    e = _raises(CodegenInputError, lambda: codegen.execute(p, r, {"A": arrays["A"]}), "B")
    assert str(e) == "execute: no array for input B (64, 64) float16 of the program (inputs ['A', 'B']; given ['A'])"
    out = codegen.execute(p, r, arrays)  # the output C may be left out: it starts at zero
    assert out["C"].shape == (64, 64) and float(out["C"][63, 63]) == 64.0


@pytest.mark.parametrize("bad, cls, message", [
    (np.ones((32, 128), np.float16), CodegenInputError, "execute: array A has shape (32, 128); expected (64, 64)"),
    (np.ones((64, 63), np.float16), CodegenInputError, "execute: array A has shape (64, 63); expected (64, 64)"),
    (np.ones((64, 64), np.float32), DtypeError,
     "execute: array A has dtype float32; expected float16 (the float16 buffer's storage type)"),
    ([[1.0] * 64] * 64, CodegenInputError, "execute: array A is a list; expected a numpy array of shape (64, 64)"),
])
def test_wrong_array(gemm, bad, cls, message):
    p, r, arrays = gemm
    e = _raises(cls, lambda: codegen.execute(p, r, {**arrays, "A": bad}))
    assert str(e) == message


def test_unknown_array_and_not_a_dict(gemm):
    p, r, arrays = gemm
    e = _raises(CodegenInputError, lambda: codegen.execute(p, r, {**arrays, "a": arrays["A"]}), "a")
    assert str(e) == "execute: arrays ['a'] are not global tensors of the program; expected some of ['A', 'B', 'C']"
    _raises(CodegenInputError, lambda: codegen.execute(p, r, [arrays["A"], arrays["B"]]))


def test_bf16_takes_bit_patterns_only():
    p = programs.gemm(M=32, N=32, K=32, bM=32, bN=32, bK=32, dtype="bfloat16")
    r = infer_layouts(p)
    vals = np.ones((32, 32), np.float32)
    with pytest.raises(DtypeError, match="array A has dtype float32; expected uint16 .the bfloat16 buffer"):
        codegen.execute(p, r, {"A": vals, "B": vals})
    bits = execute_mod.to_bf16(vals)
    assert float(np.asarray(codegen.execute(p, r, {"A": bits, "B": bits})["C"]).max()) > 0


# ---- the kernel-level executor -----------------------------------------------------------------------

def test_run_checks_parameters(gemm):
    p, r, arrays = gemm
    k = codegen.lower(p, r)
    c = np.zeros((64, 64), np.float16)
    e = _raises(CodegenInputError, lambda: execute_mod.run(k, {"A": arrays["A"], "C": c}), "B")
    assert "has no array for parameter B (4096 x float16)" in str(e)
    e = _raises(CodegenInputError, lambda: execute_mod.run(k, {**arrays, "A": arrays["A"][:3], "C": c}), "A")
    assert "parameter A has 192 elements (shape (3, 64))" in str(e) and "expects 4096" in str(e)
    with pytest.raises(DtypeError, match="parameter C has dtype float32; expected float16"):
        execute_mod.run(k, {**arrays, "C": c.astype(np.float32)})
    _raises(CodegenInputError, lambda: execute_mod.run(k, {**arrays, "C": c, "D": c}), "D")
    _raises(CodegenInputError, lambda: execute_mod.run(k, {**arrays, "C": c.tolist()}), "C")
    out = execute_mod.run(k, {**arrays, "C": c.reshape(-1)})  # any shape with the right element count
    assert out["C"].shape == (4096,) and float(out["C"].max()) == 64.0


def _store_loop_kernel() -> ir.Kernel:
    """Each thread stores registers 0 then 1 to the same element: the second store must win."""
    p = ir.Var("p", 2)
    body = (ir.Fill("r", 5.0), ir.Load("r", Const(1), "x", ir.TID, 1),
            ir.For(p, 2, (ir.Store("y", ir.TID, "r", p, 1),), unroll=True))
    bufs = (ir.Buffer("x", "float32", 32, "global"), ir.Buffer("y", "float32", 32, "global"),
            ir.Buffer("r", "float32", 2, "reg"))
    return ir.Kernel("k", 32, (1, 1), bufs, body)


def test_batched_loop_keeps_the_last_write():
    x = np.arange(32, dtype=np.float32)
    got = execute_mod.run(_store_loop_kernel(), {"x": x, "y": np.zeros(32, np.float32)})["y"]
    np.testing.assert_array_equal(got, x)  # register 1 (= x), stored by the last iteration


@pytest.mark.parametrize("case", [dict(M=100, N=72, K=80, bM=64, bN=64, bK=32), dict(M=64, N=64, K=64, bM=32,
                                                                                    bN=32, bK=32, num_stages=3)])
def test_batched_loops_equal_the_sequential_run(monkeypatch, case):
    p = programs.gemm(**case)
    k = codegen.lower(p, infer_layouts(p))
    rng = np.random.default_rng(0)
    arrays = {"A": rng.standard_normal((case["M"], case["K"])).astype(np.float16),
              "B": rng.standard_normal((case["K"], case["N"])).astype(np.float16),
              "C": np.zeros((case["M"], case["N"]), np.float16)}
    batched = execute_mod.run(k, arrays)["C"]
    monkeypatch.setattr(execute_mod, "_BATCHED", {})
    sequential = execute_mod.run(k, arrays)["C"]
    np.testing.assert_array_equal(batched, sequential)


# ---- Ascend ---------------------------------------------------------------------------------------------

def _ascend_program(n: int = 32) -> Program:
    p = Program(target="ascend")
    A, B = p.tensor("A", (20, 24), "float16"), p.tensor("B", (24, 18), "float16")
    C = p.tensor("C", (20, 18), "float32")
    a1, b1 = p.alloc("a1", (n, n), "float16", "l1"), p.alloc("b1", (n, n), "float16", "l1")
    a0, b0 = p.alloc("a0", (n, n), "float16", "l0a"), p.alloc("b0", (n, n), "float16", "l0b")
    c0 = p.alloc("c0", (n, n), "float32", "l0c")
    p.copy(A[0:n, 0:n], a1)
    p.copy(B[0:n, 0:n], b1)
    p.copy(a1, a0)
    p.copy(b1, b0)
    p.mad(a0, b0, c0, clear_accum=True)
    p.copy(c0, C[0:n, 0:n])
    return p


@pytest.fixture(scope="module")
def ascend():
    p = _ascend_program()
    return p, infer_layouts(p), {"A": np.ones((20, 24), np.float16), "B": np.ones((24, 18), np.float16)}


def test_ascend_execute_checks(ascend):
    p, r, arrays = ascend
    assert float(codegen.execute(p, r, arrays)["C"][19, 17]) == 24.0
    e = _raises(CodegenInputError, lambda: codegen.execute(p, r, {"A": arrays["A"]}), "B")
    assert str(e) == "execute: no array for input B (24, 18) float16 of the program (inputs ['A', 'B']; given ['A'])"
    with pytest.raises(DtypeError, match="array A has dtype int32; expected floating values for the float16 buffer"):
        codegen.execute(p, r, {**arrays, "A": arrays["A"].astype(np.int32)})
    other = infer_layouts(_ascend_program(48))
    for entry, args in [("execute", (p, other, arrays)), ("emit_ascend_c", (p, other)), ("lower", (p, other))]:
        e = _raises(CodegenInputError, lambda entry=entry, args=args: getattr(codegen, entry)(*args), "a1")
        assert "l1 buffer a1 has shape (32, 32); its layout in the result has input shape (48, 48)" in str(e)


def test_ascend_kernel_run_checks(ascend):
    p, r, arrays = ascend
    k = lower_ascend(p, r)
    assert gm_inputs(k) == ["A", "B"]
    e = _raises(CodegenInputError, lambda: run_ascend_kernel(k, {"A": arrays["A"]}), "B")
    assert str(e) == ("execute_ascend: no array for input B (24, 18) float16 of ascend_gemm (inputs ['A', 'B']; "
                      "given ['A'])")
    _raises(CodegenInputError, lambda: run_ascend_kernel(k, {**arrays, "X": arrays["A"]}), "X")
    _raises(CodegenInputError, lambda: run_ascend_kernel(k, [arrays["A"], arrays["B"]]))
    with pytest.raises(DtypeError, match="input A is int32; expected a numpy array of floating values"):
        run_ascend_kernel(k, {**arrays, "A": arrays["A"].astype(np.int32)})
    with pytest.raises(DtypeError, match="input B is list"):
        run_ascend_kernel(k, {**arrays, "B": arrays["B"].tolist()})
    with pytest.raises(LayoutError, match=r"input A has shape \(24, 20\); expected \(20, 24\)"):
        run_ascend_kernel(k, {**arrays, "A": arrays["A"].reshape(24, 20)})


# ---- the TileLang adapter without TileLang (the oracle cases: tests/test_frontend_tilelang_errors.py) -------

def test_frontend_without_tilelang_says_so(monkeypatch):
    from layoutkit.frontends import tilelang as tl_frontend

    monkeypatch.setitem(__import__("sys").modules, "tilelang", None)  # makes `import tilelang` fail here too
    for entry in ("from_prim_func", "tilelang_inference", "solve_prim_func"):
        with pytest.raises(UnsupportedError, match=f"{entry}: expected the tilelang package .0.1.15"):
            getattr(tl_frontend, entry)(object(), "sm_80")


@pytest.mark.parametrize("target", [80, {"kind": "cuda"}, None])
def test_frontend_target_checked_before_tilelang(target):
    from layoutkit.frontends import tilelang as tl_frontend

    with pytest.raises(UnsupportedError, match=r"TileLang target: expected a dict such as .* found "):
        tl_frontend.from_prim_func(object(), target)
