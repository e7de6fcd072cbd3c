"""Every example and reference program, re-targeted to every served target, either infers (and emits, as
``layoutkit infer --emit`` does) or is refused by a typed error: never an exception from inside the solver, a
rule or a lowering.  A program re-targeted after it was built keeps buffers in its old target's scopes; those
are refused up front, naming the buffer (:func:`layoutkit.infer.target.check_scopes`), and a rule that would
give a register buffer a memory layout is refused naming the op and the buffer."""

from __future__ import annotations

import inspect
import json
import runpy
from pathlib import Path

import pytest

from layoutkit import codegen, infer
from layoutkit.backends import backend_names, get_backend, target_name
from layoutkit.cli import main
from layoutkit.errors import LayoutError, ScopeError
from layoutkit.fragment import Fragment
from layoutkit.infer import OpValidationError, Program, infer_layouts, programs
from layoutkit.infer.rules import RuleResult
from layoutkit.infer.soundness import UnsoundLayoutError
from layoutkit.scopes import FRAGMENT, REDUCER

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120", "ascend")
"""Every NVIDIA generation the rules distinguish (Volta .. consumer Blackwell, the arch-specific ``a`` forms of
the wgmma and tcgen05 ones) and Ascend."""


def _example(path: Path):
    if path.suffix == ".json":
        return lambda: Program.from_json(path.read_text())
    return runpy.run_path(str(path))["program"]


def _builders() -> dict:
    """Name -> a function building the program: the examples, and the reference builders with their defaults."""
    out = {f"examples/{p.name}": _example(p) for p in sorted((ROOT / "examples").iterdir())
           if p.suffix in (".py", ".json")}
    for name, fn in inspect.getmembers(programs, inspect.isfunction):
        if fn.__module__ == programs.__name__ and name != "from_record":  # from_record reads a TileLang record
            out[f"programs.{name}"] = fn
    return out


BUILDERS = _builders()


def test_the_targets_cover_every_backend():
    assert all(target_name(t) == t for t in TARGETS)
    # a backend a test registered (tests/backends_cpu's scalar one, registered for the rest of its worker) is none
    # of layoutkit's own
    shipped = {n for n in backend_names() if type(get_backend(n)).__module__.startswith("layoutkit.")}
    assert {get_backend(t).name for t in TARGETS} == shipped
    assert len(BUILDERS) >= 15 and "examples/gemm_bias_rowmax.py" in BUILDERS


def _foreign(program: Program, target: str) -> list[str]:
    scopes = infer.get_target(target).scopes_of(target)
    return [name for name, buf in program.buffers.items() if buf.scope not in scopes]


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_each_program_infers_on_every_target_or_is_refused_typed(name, tmp_path):
    built = BUILDERS[name]()
    own = built.target
    outcomes, inferred = {}, set()
    for target in TARGETS:
        p = BUILDERS[name]()
        p.target = target
        foreign = _foreign(p, target)
        try:
            result = infer_layouts(p)
            for buf, lay in result.layout_map.items():  # a register buffer is laid out over threads
                if p.buffers[buf].scope in (FRAGMENT, REDUCER):
                    assert isinstance(lay, Fragment), (target, buf, lay)
            inferred.add(target)
            out = codegen.emit(p, result, tmp_path / target)
            assert [f.suffix for f in out] == [get_backend(target).suffix]
            outcomes[target] = "ok"
        except LayoutError as err:
            assert not isinstance(err, UnsoundLayoutError), (target, err)  # a rule bug, never an answer
            if foreign:
                assert isinstance(err, ScopeError) and err.buffer == foreign[0], (target, err)
                assert err.scope == p.buffers[foreign[0]].scope and err.target == target
            else:
                assert not isinstance(err, ScopeError), (target, err)
            outcomes[target] = type(err).__name__
        assert not foreign or outcomes[target] == "ScopeError", (target, outcomes[target])
    assert set(infer_layouts(built).layout_map) >= {b for b, buf in built.buffers.items() if buf.scope == FRAGMENT
                                                    and any(b in op.buffers for op in built.ops)}
    assert inferred, outcomes  # the sweep is not all refusals
    assert outcomes.get(own, "ok") != "ScopeError"


def test_gemm_bias_rowmax_on_ascend_is_refused_naming_the_buffer():
    p = runpy.run_path(str(ROOT / "examples/gemm_bias_rowmax.py"))["program"]()
    p.target = "ascend"
    with pytest.raises(ScopeError, match=r"infer_layouts: buffer A lives in scope 'global', which target 'ascend' "
                                         r"does not have \(and \d+ more: B, bias, C, \.\.\.\); expected one of gm, "
                                         r"ub, l1, l0a, l0b, l0c"):
        infer_layouts(p)


def test_ascend_gemm_on_an_nvidia_target_is_refused_naming_its_scopes():
    p = programs.ascend_gemm(M=64, N=64, K=64, bm=64, bn=64, bk=64)
    p.target = "sm_70"
    with pytest.raises(ScopeError) as info:
        infer_layouts(p)
    assert (info.value.buffer, info.value.scope, info.value.target) == ("A", "gm", "sm_70")
    assert "shared.dyn" in info.value.expected and "l0a" not in info.value.expected
    with pytest.raises(ScopeError, match="lower: buffer A lives in scope 'gm'"):  # Ascend lowers without a result
        codegen.lower(p, None)


def test_a_mad_whose_accumulator_is_a_fragment_is_refused_by_the_rule():
    """The Ascend scopes, a GEMM no builder checked (from JSON) with its accumulator in a register fragment read
    by a reduction: the MAD rule refuses it (it gave the fragment the L0C layout, and the reduction crashed)."""
    p = Program(target="ascend")
    A = p.alloc("A", (64, 32), "float16", "l0a")
    B = p.alloc("B", (32, 64), "float16", "l0b")
    C = p.alloc("C", (64, 64), "float32", "l0c")
    p.alloc_fragment("R", (64,), "float32")
    p.mad(A, B, C)
    doc = json.loads(p.to_json())
    for buf in doc["buffers"]:
        if buf["name"] == "C":
            buf["scope"] = FRAGMENT
    q = Program.from_json(json.dumps(doc))
    q.reduce(q.buffers["C"], q.buffers["R"], dim=1, kind="max")
    with pytest.raises(OpValidationError, match=r"gemm#0: operand C \(C\) must live in l0c; found scope "
                                                r"local.fragment") as info:
        infer_layouts(q)
    assert (info.value.op, info.value.buffer) == ("gemm#0", "C")


def test_a_rule_giving_a_register_buffer_a_plain_layout_is_refused():
    """Whatever rule does it, a plain (memory) layout proposed for a register fragment stops the solve with an
    error naming the op, the buffer and its scope, before a later rule reads it as a Fragment."""
    import layoutkit as lk

    def memory_rule(op, ctx, level):
        return RuleResult({"x": lk.Layout([8, 8], lambda i, j: (i, j))})

    infer.register_op(infer.TileOp("retarget_test_memory"))
    infer.register_rule("retarget_test_memory", "*", memory_rule)
    try:
        p = Program(threads=32)
        p.alloc_fragment("x", (8, 8), "float32")
        p.ops.append(infer.Op("retarget_test_memory", 0, {}, None, (), ("x",)))
        p.next_uid = 1
        with pytest.raises(OpValidationError, match=r"retarget_test_memory#0: the retarget_test_memory rule of "
                                                    r"target 'sm_80' gave register buffer x \(local.fragment, "
                                                    r"shape \(8, 8\)\) a plain Layout") as info:
            infer_layouts(p)
        assert (info.value.op, info.value.buffer) == ("retarget_test_memory#0", "x")
    finally:
        infer.unregister_op("retarget_test_memory")


@pytest.mark.parametrize("example, target, says", [
    ("ascend_gemm.py", "sm_70", "C C_l0 must be in one of"),  # the CLI's GEMM pre-check
    ("elementwise.py", "ascend", "buffer A lives in scope 'global', which target 'ascend' does not have"),
])
def test_the_cli_refuses_a_retargeted_program_in_one_line(example, target, says, capsys):
    assert main(["infer", str(ROOT / "examples" / example), "--target", target]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and says in err and "internal" not in err
