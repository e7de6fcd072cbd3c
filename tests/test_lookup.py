"""Table lookups in the expression IR: the Table value, the Lookup node through every visitor of the IR, and
Layout.from_table (the inverse of a table-backed bijection is in tests/test_bounded_work.py)."""

from __future__ import annotations

import pickle
import shutil
import subprocess

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.algebra import Lookup, Table, Var, simplify, substitute
from layoutkit.algebra.attained import attained_range
from layoutkit.algebra.bitlinear import bit_linear
from layoutkit.algebra.evaluate import compile_numpy, evaluate, evaluate_columns
from layoutkit.algebra.isl import to_isl_map
from layoutkit.algebra.nodes import Const, lookup
from layoutkit.algebra.overflow import INT64, fits, fits_values
from layoutkit.algebra.translate import c_table, to_c, to_sympy
from layoutkit.errors import CoordinateError, ExprError, LimitError, UnsupportedError

PERM = [5, 2, 7, 0, 3, 6, 1, 4]


def test_a_table_is_an_immutable_value_equal_by_content():
    t = Table(PERM)
    assert t == Table(np.array(PERM, dtype=np.int32)) and hash(t) == hash(Table(tuple(PERM)))
    assert t != Table(PERM[::-1]) and t != PERM
    assert (len(t), t.lo, t.hi) == (8, 0, 7)
    with pytest.raises(ValueError):
        t.values[0] = 1  # the entries are read-only
    with pytest.raises(AttributeError):
        t.lo = 3  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(t)) == t
    assert t.span(1, 3) == (0, 7) and t.span(4, 6) == (1, 6)


@pytest.mark.parametrize("values, error", [
    ([1.5, 2], ExprError), ([True, False], ExprError), ([[1, 2], [3, 4]], ExprError), ([], ExprError),
    ("0123", ExprError), ([2**70], LimitError), (np.array([2**63], dtype=np.uint64), LimitError),
    ([[1], [2, 3]], ExprError),
])
def test_tables_refuse_what_is_no_vector_of_int64(values, error):
    with pytest.raises(error):
        Table(values)


def test_a_lookup_is_an_interned_node_that_prints_pickles_and_substitutes():
    t, i = Table(PERM), Var("_i", 8)
    e = lookup(t, i)
    assert isinstance(e, Lookup) and e is Lookup(t, i) and e is lookup(Table(list(PERM)), i)
    assert (e.lo, e.hi, e.table, e.index) == (0, 7, t, i)
    assert str(e) == f"table#{t.name}[_i]" and repr(e) == f"Lookup(table#{t.name}[_i])"
    assert str(e * 8 + i) == f"table#{t.name}[_i] * 8 + _i"
    assert pickle.loads(pickle.dumps(e * 2 + 1)) is e * 2 + 1
    # the interval is that of the entries the index interval reaches: _i % 4 reads 5, 2, 7, 0
    assert (lookup(t, i % 4).lo, lookup(t, i // 2 + 4).hi) == (0, 6)
    j = Var("_j", 4)
    assert substitute(e, {i: j * 2 + 1}) is lookup(t, j * 2 + 1)
    assert substitute(e, {i: Const(2)}) == Const(7)
    assert simplify(e * 3 + e) is e * 4
    with pytest.raises(ExprError, match="a table lookup prints as table#<id>"):
        lk.parse_expr(str(i + e), {"_i": i})  # the text names the table: nothing to read back


def test_a_lookup_folds_constants_and_refuses_an_index_that_never_hits_the_table():
    t, i = Table(PERM), Var("_i", 8)
    assert lookup(t, 3) == Const(0) and lookup(Table([4, 4, 9]), Var("_k", 2)) == Const(4)
    with pytest.raises(CoordinateError, match=r"takes values in \[8, 15\], none of them inside table#\w+ of 8"):
        lookup(t, i + 8)
    with pytest.raises(CoordinateError):
        Lookup(t, Const(-1))
    with pytest.raises(ExprError, match="expected a Table, found list"):
        Lookup(PERM, i)  # type: ignore[arg-type]


def test_evaluation_gathers_vectorised_and_checks_every_index():
    t, i, j = Table(PERM), Var("_i", 8), Var("_j", 2)
    e = lookup(t, i) * 2 + j
    out = compile_numpy((e,), (i, j))(np.arange(8)[:, None], np.arange(2)[None, :])[0]
    assert out.tolist() == [[2 * p, 2 * p + 1] for p in PERM]
    cols = evaluate_columns((lookup(t, i), i), (i,), [np.arange(8)], in_range=True)
    assert cols[:, 0].tolist() == PERM
    assert evaluate(lookup(t, i), {i: 2}) == 7
    # a wider index interval (a composition widens them) is checked at evaluation, never wrapped around
    wide = lookup(t, Var("_w", 16))
    assert compile_numpy((wide,), (Var("_w", 16),))(np.array([7, 0]))[0].tolist() == [4, 5]
    for bad, value in ((np.array([3, 9]), 9), (np.array([-1, 0]), -1), (np.array([2**70], dtype=object), 2**70)):
        with pytest.raises(CoordinateError, match=rf"the index _w is {value} at position \(0,\)|is {value} at"):
            compile_numpy((wide,), (Var("_w", 16),))(bad)
    with pytest.raises(CoordinateError):
        evaluate(wide, {Var("_w", 16): 12})


def test_the_interval_visitors_know_the_node():
    t, i = Table([10, -3, 40, 2]), Var("_i", 4)
    e = lookup(t, i)
    assert attained_range(e) == (-3, 40) and attained_range(lookup(t, i // 2)) == (-3, 10)
    assert attained_range(lookup(t, (i * 3) % 4)) is None  # not a dense index: unknown
    assert fits((e * (1 << 55),), INT64) and not fits((e * (1 << 60),), INT64)
    k = Var("_k")  # no extent: from the spans of the inputs
    assert fits_values((lookup(t, k) * (1 << 56),), (k,), [(0, 3)], INT64)
    assert not fits_values((lookup(t, k) * (1 << 58),), (k,), [(0, 3)], INT64)


def test_translations_without_a_closed_form_refuse_typed():
    t, i = Table(PERM), Var("_i", 8)
    e = lookup(t, i ^ 3)
    assert bit_linear((e,), (i,), (8,)) is None
    with pytest.raises(UnsupportedError, match=rf"table#{t.name} \(8 entries\): a table-backed index has no "
                                               "quasi-affine form"):
        to_isl_map((e,), (i,))
    with pytest.raises(UnsupportedError, match="sympy: .* table-backed index has no closed form"):
        to_sympy(e)
    with pytest.raises(UnsupportedError, match="the index is table-backed and has no closed form to print"):
        to_c(e + 1)
    assert to_c(e * 4 + 1, lambda table: f"lk_t{table.name}") == f"lk_t{t.name}[_i ^ 3] * 4 + 1"


def test_the_islpy_proof_refuses_and_auto_enumerates():
    pytest.importorskip("islpy")
    layout = lk.Layout.from_table(PERM)
    with pytest.raises(lk.ProofError, match="islpy cannot decide this map: .* table-backed index"):
        layout.prove_bijective("isl")
    proof = layout.prove_bijective()
    assert (proof.verdict, proof.method) == (True, "enumerate")


def test_a_printed_table_compiles_and_reads_back_its_entries(tmp_path):
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no host C++ compiler")
    t, i = Table([3, -7, 2**40, 0]), Var("_i", 4)
    e = lookup(t, i) + 1
    read = to_c(e, lambda _: "lk_tab")
    src = (c_table(t, "lk_tab") + "\n" + c_table(t, "lk_tab") + "\n#include <cstdio>\nint main() {\n"
           f"  for (long long _i = 0; _i < 4; ++_i) std::printf(\"%lld\\n\", (long long)({read}));\n}}\n")
    (tmp_path / "t.cpp").write_text(src)
    subprocess.run([compiler, "-o", str(tmp_path / "t"), str(tmp_path / "t.cpp")], check=True, timeout=120)
    out = subprocess.run([str(tmp_path / "t")], check=True, capture_output=True, text=True).stdout.split()
    assert [int(v) for v in out] == [4, -6, 2**40 + 1, 1]


def test_from_table_reads_each_column_at_the_row_major_offset():
    table = np.stack([np.arange(12).reshape(3, 4)[::-1, ::-1], np.full((3, 4), 2)], axis=-1)
    layout = lk.Layout.from_table(table)
    assert layout.input_shape == (3, 4) and layout.output_shape == (12, 3)
    assert np.array_equal(layout.table(), table)
    assert str(layout.forward_index[1]) == "2"  # a constant column is that constant
    assert lk.Layout.from_table(layout.table()) == layout and hash(lk.Layout.from_table(table)) == hash(layout)
    assert pickle.loads(pickle.dumps(layout)) == layout
    with pytest.raises(lk.ShapeError, match=r"input_shape \+ \(outputs,\); found shape \(\)"):
        lk.Layout.from_table(np.int64(3))
    with pytest.raises(ExprError, match="expected an integer array; found float64"):
        lk.Layout.from_table([0.5, 1.0])


def _gather_kernel(name: str, layout: lk.Layout) -> object:
    """``y[t] = x[layout(t)]`` over one block."""
    from layoutkit.backends.nv import ir

    (src,) = layout.forward_index
    n = layout.size
    addr = substitute(src, {layout.forward_vars[0]: ir.TID})
    return ir.Kernel(name, n, (1, 1), (ir.Buffer("r", "float32", 1, "reg"), ir.Buffer("x", "float32", n, "global"),
                                        ir.Buffer("y", "float32", n, "global")),
                     (ir.Load("r", Const(0), "x", addr, 1), ir.Store("y", ir.TID, "r", Const(0), 1)))


def test_the_cuda_printer_declares_each_table_once_and_the_kernel_gathers_through_it():
    from layoutkit.backends.nv.cuda import print_module
    from layoutkit.testing.cuda_cpu import compiler, run_cuda

    perm = np.random.default_rng(3).permutation(128)
    layout = lk.Layout.from_table(perm)
    name = f"lk_table_{Table(perm).name}"
    source = print_module([_gather_kernel("gather_a", layout), _gather_kernel("gather_b", layout)])
    assert source.count(f"static __device__ const int {name}[128] = {{") == 2  # one per kernel, each guarded
    assert source.count(f"#ifndef LK_TABLE_{name}") == 2 and f"x[{name}[tid]]" in source
    if compiler() is None:
        pytest.skip("no C++ compiler for the CPU harness")
    x = np.arange(128, dtype=np.float32) * 3
    for kernel in ("gather_a", "gather_b"):
        out = run_cuda(source, {"x": x, "y": np.zeros(128, np.float32)}, kernel)
        assert np.array_equal(out.arrays["y"], x[perm])


def test_a_program_reading_a_table_is_refused_when_written_not_misread_when_read_back():
    from layoutkit.infer import Program

    t = Table(np.random.default_rng(0).permutation(64))
    p = Program(threads=64)
    x = p.alloc_fragment("x", (8, 8), "float32")
    p.parallel((8, 8), writes=[(x, lambda i, j: (lookup(t, i * 8 + j) // 8, lookup(t, i * 8 + j) % 8))])
    with pytest.raises(UnsupportedError, match=rf"reads table#{t.name} \(64 entries\): a table-backed index has no "
                                               "expression text to store"):
        p.to_json()
