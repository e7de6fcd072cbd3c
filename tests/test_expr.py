"""Index expressions: simplification rules, printing, conversions and input errors."""

from __future__ import annotations

import itertools
import shutil
import subprocess

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.algebra import Var, compile_numpy, evaluate, parse_expr, simplify
from layoutkit.algebra.isl import isl_map_text, point_coords, to_isl_map
from layoutkit.algebra.translate import C_PRELUDE, to_c, to_sympy

i, j = Var("_i", 16), Var("_j", 16)


@pytest.mark.parametrize(
    "expr, text",
    [
        (i % 16 % 8, "_i % 8"),
        ((i % 8) // 8, "0"),
        (i // 4 % 2, "_i % 8 // 4"),
        (i // 8 // 2, "0"),
        (Var("x", 64) // 8 // 2, "x // 16"),
        (i // 8 * 8 + i % 8, "_i"),
        (i - i // 4 * 4, "_i % 4"),
        ((i * 4 + 2) // 4, "_i"),
        ((i * 4 + j) % 4, "_j % 4"),
        ((i * 8 + j % 8) // 8, "_i"),
        ((i * 8 + j % 8) % 8, "_j % 8"),
        (i % 16, "_i"),
        (2 + i * 3 - 2, "_i * 3"),
        (i * 0, "0"),
        (i ^ 0, "_i"),
        (i ^ i, "0"),
        (i & 7, "_i % 8"),
        (i % 8 ^ j // 8 * 8, "_j // 8 * 8 + _i % 8"),
        (i % 8 | j // 8 * 8, "_j // 8 * 8 + _i % 8"),
        (i << 2, "_i * 4"),
        (i >> 2, "_i // 4"),
        (j // 16 * 64 + i // 16 * 32 + i % 8 * 4 + j % 8 // 2, "_i % 8 * 4 + _j % 8 // 2"),
        (lk.Const(7) // 2, "3"),
    ],
)
def test_simplification_rules(expr, text):
    assert str(expr) == text


def test_tilelang_print_order():
    a, b = Var("_i", 32), Var("_j", 32)
    e = b % 8 // 2 + a % 8 * 4 + a // 16 * 32 + b // 16 * 64
    assert str(e) == "_j // 16 * 64 + _i // 16 * 32 + _i % 8 * 4 + _j % 8 // 2"
    t = Var("_i", 2048)
    bitxor = (t % 512 // 256 + t % 64 // 32) % 2 * 32
    assert str(bitxor) == "(_i % 512 // 256 + _i % 64 // 32) % 2 * 32"
    assert str(a - b) == "_i - _j" and str(7 - a) == "7 - _i" and str(a * 3 - 5) == "_i * 3 - 5"


def test_simplify_is_idempotent_and_no_growth():
    e = ((i * 4 + j) // 2 % 8) ^ (j // 4 + i % 4 * 2)
    once = simplify(e)
    assert simplify(once) == once and len(str(once)) <= len(str(e))


def test_expressions_are_hashable_values():
    assert i * 4 + j == j + 4 * i
    assert len({i * 4 + j, j + i * 4, i + j}) == 2
    assert (i // 8) == (i // 8) and (i // 8) != (i // 4)


@pytest.mark.parametrize(
    "build, error",
    [
        (lambda: i * 0.5, lk.ExprError),
        (lambda: i / 2, lk.ExprError),
        (lambda: i + True, lk.ExprError),
        (lambda: i + "x", lk.ExprError),
        (lambda: i // 0, lk.ExprError),
        (lambda: i % 0, lk.ExprError),
        (lambda: i // j, lk.UnsupportedError),
        (lambda: i << j, lk.UnsupportedError),
        (lambda: bool(i), lk.ExprError),
        (lambda: int(i), lk.ExprError),
        (lambda: Var("x", 0), lk.ExprError),
        (lambda: Var("", 3), lk.ExprError),
    ],
)
def test_bad_expressions_raise_typed_errors(build, error):
    with pytest.raises(error):
        build()


def test_negative_divisors_follow_floor_semantics():
    x = Var("x", 20)
    for e, ref in [(x // -3, lambda v: v // -3), (x % -3, lambda v: v % -3), ((x - 10) // 4, lambda v: (v - 10) // 4),
                   ((x - 10) % 4, lambda v: (v - 10) % 4)]:
        got = [evaluate(e, {x: v}) for v in range(20)]
        assert got == [ref(v) for v in range(20)], str(e)


def test_compile_numpy_is_cached_and_broadcasts():
    a, b = Var("_i", 128), Var("_j", 128)
    exprs = (a % 8 * 64 + ((b // 8) ^ (a % 8)) * 8 + b % 8,)
    f = compile_numpy(exprs, (a, b))
    assert compile_numpy(exprs, (a, b)) is f
    (out,) = f(np.arange(128).reshape(128, 1), np.arange(128).reshape(1, 128))
    assert out.shape == (128, 128) and out[3, 17] == 3 * 64 + ((17 // 8) ^ 3) * 8 + 1


def test_parse_roundtrip_of_printed_text():
    names = {"_i": i, "_j": j}
    for e in [i // 8 * 4 + j % 2, (j // 8 ^ i % 8) * 8 + j % 8, i - j * 3 + 5, (i & 3) | (j >> 2)]:
        assert parse_expr(str(e), names) == e


@pytest.mark.parametrize("text", ["__import__('os')", "i.x", "f(i)", "i if j else 1", "1.5 * _i", "_i ** 2", "q + 1"])
def test_parser_rejects_anything_else(text):
    with pytest.raises(lk.ExprError):
        parse_expr(text, {"_i": i, "_j": j, "i": i})


def test_parse_index_fn_is_safe_and_checks_arity():
    fn = lk.parse_index_fn("lambda a, b: (b, a * 2)")
    assert [str(e) for e in fn(i, j)] == ["_j", "_i * 2"]
    with pytest.raises(lk.ExprError):
        lk.parse_index_fn("(lambda: 1)()")
    with pytest.raises(lk.ShapeError):
        lk.Layout([4, 4, 4], lk.parse_index_fn("lambda a, b: a"))


def test_to_sympy_matches_evaluation():
    import sympy

    e = (j // 8 ^ i % 8) * 8 + j % 8 + i // 4 + (i & j) * 3 + (i | j // 4)
    s = to_sympy(e)
    si, sj = sympy.Symbol("_i", integer=True, nonnegative=True), sympy.Symbol("_j", integer=True, nonnegative=True)
    for a, b in [(0, 0), (5, 13), (15, 15), (9, 2)]:
        assert int(s.subs({si: a, sj: b})) == evaluate(e, {i: a, j: b})


def test_isl_map_of_xor_matches_table():
    a, b = Var("_i", 8), Var("_j", 16)
    e = (b // 2 ^ a) * 2 + b % 2
    m = to_isl_map((e,), (a, b))
    pts = []
    m.wrap().foreach_point(lambda p: pts.append(point_coords(p, 3)))
    pairs = {(x, y): o for x, y, o in pts}
    assert len(pairs) == 128
    assert all(pairs[(x, y)] == evaluate(e, {a: x, b: y}) for x, y in itertools.product(range(8), range(16)))
    assert "exists" in isl_map_text((e,), (a, b))


def test_isl_rejects_products():
    with pytest.raises(lk.UnsupportedError):
        to_isl_map((i * j,), (i, j))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_c_expressions_compile_and_agree(tmp_path):
    x = Var("x", 64)
    y = Var("y", 64)
    exprs = [x // 8 * 4 + y % 2, (y // 8 ^ x % 8) * 8 + y % 8, (x - 40) // 3, (x - 40) % 6, x * y % 7, (x & 12) | y]
    loop = "for (long long x = 0; x < 64; ++x) for (long long y = 0; y < 64; ++y)"
    body = "\n".join(f'  {loop} printf("%lld\\n", (long long)({to_c(e)}));' for e in exprs)
    src = tmp_path / "t.c"
    src.write_text(f"#include <stdio.h>\n{C_PRELUDE}\nint main(void) {{\n{body}\n  return 0;\n}}\n")
    exe = tmp_path / "t"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(src)], check=True)
    out = [int(v) for v in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()]
    want = [evaluate(e, {x: a, y: b}) for e in exprs for a in range(64) for b in range(64)]
    assert out == want
