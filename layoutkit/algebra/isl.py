"""Index maps as islpy (integer set library) relations.

Quasi-affine expressions (``+``, constant ``*``, ``//`` and ``%`` by constants) translate directly.
Bitwise operators of non-negative bounded operands translate through their bits: with
``a_k = floor(a / 2**k) mod 2``,
``a ^ b = sum_k 2**k * ((a_k + b_k) mod 2)``, ``a & b = sum_k 2**k * floor((a_k + b_k) / 2)`` and
``a | b = sum_k 2**k * floor((a_k + b_k + 1) / 2)``, each bitwise result bound to an existential
variable so that nested swizzles stay small.  Products of two non-constants are not quasi-affine
and raise :class:`UnsupportedError`, as do table lookups (:class:`~layoutkit.algebra.nodes.Lookup`: a table
has no Presburger form; the proofs enumerate such maps instead).

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 4), Var("_j", 4)
>>> m = to_isl_map((j, i), (i, j))
>>> m.is_injective()
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

from ..errors import UnsupportedError
from .nodes import And, Const, Expr, FloorDiv, FloorMod, Lookup, Mul, Or, Sum, Var, Xor


class _Writer:
    def __init__(self, names: dict[Var, str]):
        self.names = names
        self.exists: list[str] = []
        self.constraints: list[str] = []
        self.bound: dict[Expr, str] = {}

    def text(self, e: Expr) -> str:
        if isinstance(e, Const):
            return f"({e.value})"
        if isinstance(e, Var):
            if e not in self.names:
                raise UnsupportedError(f"variable {e.name} is not an input of this map")
            return self.names[e]
        if isinstance(e, Sum):
            parts = [f"{c} * {self.text(a)}" for a, c in e.terms]
            return "(" + " + ".join(parts + [f"({e.const})"]) + ")"
        if isinstance(e, FloorDiv):
            return f"floor({self.text(e.a)} / {e.c})"
        if isinstance(e, FloorMod):
            return f"({self.text(e.a)} mod {e.c})"
        if isinstance(e, Mul):
            raise UnsupportedError(f"{e} is a product of two non-constants: not quasi-affine, no isl form")
        if isinstance(e, Lookup):
            raise UnsupportedError(f"{e} reads table#{e.table.name} ({len(e.table)} entries): a table-backed index "
                                   "has no quasi-affine form, no isl form")
        return self._bitwise(e)

    def _bitwise(self, e: Expr) -> str:
        if e in self.bound:
            return self.bound[e]
        node = cast("Xor | And | Or", e)
        a, b = node.a, node.b
        if a.lo < 0 or b.lo < 0 or math.isinf(a.hi) or math.isinf(b.hi):
            raise UnsupportedError(f"bitwise operands of {e} must be non-negative and bounded for isl")
        ta, tb = self.text(a), self.text(b)
        bits = max(int(a.hi).bit_length(), int(b.hi).bit_length(), 1)
        terms = []
        for k in range(bits):
            ak = f"(floor({ta} / {2**k}) mod 2)"
            bk = f"(floor({tb} / {2**k}) mod 2)"
            if isinstance(e, Xor):
                bit = f"(({ak} + {bk}) mod 2)"
            elif isinstance(e, And):
                bit = f"floor(({ak} + {bk}) / 2)"
            else:
                bit = f"floor(({ak} + {bk} + 1) / 2)"
            terms.append(f"{2**k} * {bit}")
        name = f"e{len(self.exists)}"
        self.exists.append(name)
        self.constraints.append(f"{name} = " + " + ".join(terms))
        self.bound[e] = name
        return name


def isl_map_text(exprs: Sequence[Expr], variables: Sequence[Var], extents: Sequence[int | None] | None = None) -> str:
    """ISL text of ``{ [x...] -> [o...] : o_k = expr_k and 0 <= x_d < extent_d }``."""
    names = {v: f"x{d}" for d, v in enumerate(variables)}
    w = _Writer(names)
    outs = [f"o{k} = {w.text(e)}" for k, e in enumerate(exprs)]
    if extents is None:
        extents = [v.extent for v in variables]
    dom = [f"0 <= x{d} < {n}" if n is not None else f"0 <= x{d}" for d, n in enumerate(extents)]
    ins = ", ".join(names.values())
    outn = ", ".join(f"o{k}" for k in range(len(exprs)))
    body = " and ".join(w.constraints + outs)
    if w.exists:
        body = f"exists ({', '.join(w.exists)} : {body})"
    return f"{{ [{ins}] -> [{outn}] : {' and '.join(dom + [body])} }}"


def to_isl_map(exprs: Sequence[Expr], variables: Sequence[Var], extents: Sequence[int | None] | None = None) -> Any:
    """The map as an ``islpy.Map`` (domain: the box ``0 <= x_d < extent_d``)."""
    import islpy as isl

    return isl.Map(isl_map_text(exprs, variables, extents))


def box_set(shape: Sequence[int], prefix: str = "o") -> Any:
    """``{ [o0, ...] : 0 <= o_k < shape_k }`` as an ``islpy.Set``."""
    import islpy as isl

    names = ", ".join(f"{prefix}{k}" for k in range(len(shape)))
    cons = " and ".join(f"0 <= {prefix}{k} < {n}" for k, n in enumerate(shape)) or "true"
    return isl.Set(f"{{ [{names}] : {cons} }}")


def point_coords(point: Any, n: int) -> tuple[int, ...]:
    """Integer coordinates of an ``islpy.Point`` with ``n`` set dimensions."""
    import islpy as isl

    return tuple(point.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n))
