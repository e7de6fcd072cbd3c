"""Translations of index expressions to sympy and to C.

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 16), Var("_j", 16)
>>> to_c(j // 8 * 4 + i % 8)
'(_j >> 3) * 4 + (_i & 7)'
>>> to_sympy(i // 8 * 4 + j)
_j + 4*floor(_i/8)

A table lookup (:class:`~layoutkit.algebra.nodes.Lookup`) has no closed form: :func:`to_c` prints it as an
array read only when the caller names (and declares) its tables, see :func:`c_table`; sympy has no form for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..errors import UnsupportedError
from .nodes import And, Const, Expr, FloorDiv, FloorMod, Lookup, Mul, Or, Sum, Var, Xor, linear, text_prefix
from .tables import Table

# ---- C -----------------------------------------------------------------------------------------

C_PRELUDE = """\
static inline __attribute__((unused)) long long lk_floordiv(long long a, long long b) {
  long long q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline __attribute__((unused)) long long lk_floormod(long long a, long long b) {
  long long r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
"""
"""Helpers used by :func:`to_c` when an operand of ``//`` or ``%`` may be negative."""


def _is_pow2(c: int) -> bool:
    return c > 0 and c & (c - 1) == 0


TableNames = Callable[[Table], str]
"""How a C printer names a table it declares (see :func:`c_table`)."""


def _c_atom(e: Expr, tables: TableNames | None = None) -> str:
    s = to_c(e, tables)
    return s if isinstance(e, (Var, Const, Lookup)) and not (isinstance(e, Const) and e.value < 0) else f"({s})"


def to_c(e: Expr, tables: TableNames | None = None) -> str:
    """C expression for ``e``; exact floor semantics (shifts/masks for powers of two when the
    operand is known non-negative, ``lk_floordiv``/``lk_floormod`` from :data:`C_PRELUDE` when it
    may be negative).  A table lookup prints as ``name[index]`` with ``name = tables(table)``, the
    caller declaring the array (:func:`c_table`); without ``tables`` it is refused
    (:class:`~layoutkit.errors.UnsupportedError`: a table-backed index has no closed form to print).

    >>> from layoutkit.algebra.nodes import Var, lookup
    >>> e = lookup(Table([2, 0, 1]), Var("_i", 3)) * 4
    >>> to_c(e, lambda t: "lk_perm")
    'lk_perm[_i] * 4'
    """
    if isinstance(e, Lookup):
        if tables is None:
            raise UnsupportedError(f"C printer: {text_prefix(e, 80)} reads table#{e.table.name} ({len(e.table)} "
                                   "entries): the index is table-backed and has no closed form to print; a printer "
                                   "that declares its tables (c_table) passes their names")
        return f"{tables(e.table)}[{to_c(e.index, tables)}]"
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Sum):
        parts = []
        for atom, coeff in e.terms:
            term = _c_atom(atom, tables) if not isinstance(atom, Mul) else f"({to_c(atom, tables)})"
            if abs(coeff) != 1:
                term = f"{term} * {abs(coeff)}"
            parts.append(("- " if coeff < 0 else "+ ") + term)
        if e.const:
            parts.append(("- " if e.const < 0 else "+ ") + str(abs(e.const)))
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]
    if isinstance(e, (FloorDiv, FloorMod)):
        a, c = e.a, e.c
        if a.lo >= 0:
            if _is_pow2(c):
                k = c.bit_length() - 1
                return (f"{_c_atom(a, tables)} >> {k}" if isinstance(e, FloorDiv)
                        else f"{_c_atom(a, tables)} & {c - 1}")
            return f"{_c_atom(a, tables)} {'/' if isinstance(e, FloorDiv) else '%'} {c}"
        fn = "lk_floordiv" if isinstance(e, FloorDiv) else "lk_floormod"
        return f"{fn}({to_c(a, tables)}, {c})"
    if isinstance(e, Mul):
        return f"{_c_atom(e.a, tables)} * {_c_atom(e.b, tables)}"
    node = cast("Xor | And | Or", e)
    sym = {Xor: "^", And: "&", Or: "|"}[type(node)]
    return f"{_c_atom(node.a, tables)} {sym} {_c_atom(node.b, tables)}"


def c_table(table: Table, name: str, qualifiers: str = "static const") -> str:
    """The C definition of ``table`` as the array ``name`` (``int`` entries when they fit, else ``long long``),
    behind an include guard named after it, so several printed units that declare one table concatenate.

    >>> print(c_table(Table([2, 0, 1]), "lk_perm"))
    #ifndef LK_TABLE_lk_perm
    #define LK_TABLE_lk_perm
    static const int lk_perm[3] = {2, 0, 1};
    #endif
    """
    wide = table.lo < -(1 << 31) or table.hi >= 1 << 31
    ctype = "long long" if wide else "int"
    suffix = "LL" if wide else ""
    body = ", ".join(f"{v}{suffix}" for v in np.asarray(table.values).tolist())
    return (f"#ifndef LK_TABLE_{name}\n#define LK_TABLE_{name}\n"
            f"{qualifiers} {ctype} {name}[{len(table)}] = {{{body}}};\n#endif")


# ---- sympy -------------------------------------------------------------------------------------


def _sympy_bits(e: Expr, a: Any, b: Any) -> Any:
    """Bitwise ``a op b`` in plain sympy arithmetic, bit by bit (as the islpy translation does):
    with ``a_k = floor(a / 2**k) mod 2``, xor is ``(a_k + b_k) mod 2``, and ``floor((a_k + b_k) / 2)``,
    or ``floor((a_k + b_k + 1) / 2)``."""
    import sympy

    node = cast("Xor | And | Or", e)
    x, y = node.a, node.b
    if x.lo < 0 or y.lo < 0 or math.isinf(x.hi) or math.isinf(y.hi):
        raise UnsupportedError(f"bitwise operands of {e} must be non-negative and bounded for sympy")
    bits = max(int(x.hi).bit_length(), int(y.hi).bit_length(), 1)
    total = sympy.Integer(0)
    for k in range(bits):
        ak = sympy.Mod(sympy.floor(a / 2**k), 2)
        bk = sympy.Mod(sympy.floor(b / 2**k), 2)
        if isinstance(e, Xor):
            bit = sympy.Mod(ak + bk, 2)
        elif isinstance(e, And):
            bit = sympy.floor((ak + bk) / 2)
        else:
            bit = sympy.floor((ak + bk + 1) / 2)
        total += 2**k * bit
    return total


def to_sympy(e: Expr) -> Any:
    """sympy expression for ``e`` (integer, non-negative symbols; ``floor`` and ``Mod``; bitwise
    operators of bounded non-negative operands expanded bit by bit)."""
    import sympy

    if isinstance(e, Const):
        return sympy.Integer(e.value)
    if isinstance(e, Var):
        return sympy.Symbol(e.name, integer=True, nonnegative=True)
    if isinstance(e, Sum):
        terms, const = linear(e)
        return sympy.Add(*(to_sympy(a) * c for a, c in terms.items()), sympy.Integer(const))
    if isinstance(e, FloorDiv):
        return sympy.floor(to_sympy(e.a) / e.c)
    if isinstance(e, FloorMod):
        return sympy.Mod(to_sympy(e.a), e.c)
    if isinstance(e, Mul):
        return to_sympy(e.a) * to_sympy(e.b)
    if isinstance(e, Lookup):
        raise UnsupportedError(f"sympy: {text_prefix(e, 80)} reads table#{e.table.name} ({len(e.table)} entries): "
                               "a table-backed index has no closed form")
    node = cast("Xor | And | Or", e)
    return _sympy_bits(e, to_sympy(node.a), to_sympy(node.b))
