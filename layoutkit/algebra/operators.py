"""The Python operators that build index expressions: ``+ - * // % ^ & | << >>`` (and their reflected
forms) on :class:`~layoutkit.algebra.nodes.Expr`, each going through the simplifier
(:mod:`layoutkit.algebra.simplify`), so ``i // 8 * 4 + j % 2`` is canonical as soon as it is written.

A mixin, separate from the node classes: the nodes define what an expression *is* (keys, intervals,
interning), this says how Python syntax builds one.  The operators expressions refuse are in
:mod:`layoutkit.algebra.refused`.

>>> from layoutkit.algebra import Var
>>> i = Var("_i", 16)
>>> print(i << 2, i >> 2, 3 - i)
_i * 4 _i // 4 3 - _i
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..errors import ExprError, LimitError, UnsupportedError
from .refused import RefusedOperators

if TYPE_CHECKING:
    from .nodes import Expr


class ExprOperators(RefusedOperators):
    """Mixin of :class:`~layoutkit.algebra.nodes.Expr`: the arithmetic and bitwise operators."""

    __slots__ = ()

    def __add__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import add

        return add(_expr(self), as_expr(other))

    def __radd__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import add

        return add(as_expr(other), _expr(self))

    def __sub__(self, other: object) -> Expr:
        from .nodes import Const, as_expr
        from .simplify import add, mul

        return add(_expr(self), mul(as_expr(other), Const(-1)))

    def __rsub__(self, other: object) -> Expr:
        from .nodes import Const, as_expr
        from .simplify import add, mul

        return add(as_expr(other), mul(_expr(self), Const(-1)))

    def __neg__(self) -> Expr:
        from .nodes import Const
        from .simplify import mul

        return mul(_expr(self), Const(-1))

    def __pos__(self) -> Expr:
        return _expr(self)

    def __mul__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import mul

        return mul(_expr(self), as_expr(other))

    def __rmul__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import mul

        return mul(as_expr(other), _expr(self))

    def __floordiv__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import floordiv

        return floordiv(_expr(self), as_expr(other))

    def __rfloordiv__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import floordiv

        return floordiv(as_expr(other), _expr(self))

    def __mod__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import floormod

        return floormod(_expr(self), as_expr(other))

    def __rmod__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import floormod

        return floormod(as_expr(other), _expr(self))

    def __xor__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import bitxor

        return bitxor(_expr(self), as_expr(other))

    def __rxor__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import bitxor

        return bitxor(as_expr(other), _expr(self))

    def __and__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import bitand

        return bitand(_expr(self), as_expr(other))

    def __rand__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import bitand

        return bitand(as_expr(other), _expr(self))

    def __or__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import bitor

        return bitor(_expr(self), as_expr(other))

    def __ror__(self, other: object) -> Expr:
        from .nodes import as_expr
        from .simplify import bitor

        return bitor(as_expr(other), _expr(self))

    def __lshift__(self, other: object) -> Expr:
        factor: int = 2 ** shift_amount(other)
        return _expr(self) * factor

    def __rshift__(self, other: object) -> Expr:
        factor: int = 2 ** shift_amount(other)
        return _expr(self) // factor

    def __rlshift__(self, other: object) -> Expr:
        from .nodes import as_expr

        return as_expr(other) << self

    def __rrshift__(self, other: object) -> Expr:
        from .nodes import as_expr

        return as_expr(other) >> self


def shift_amount(value: object) -> int:
    """The shift amount of ``<<`` / ``>>``: a non-negative integer constant up to :data:`~.nodes.MAX_SHIFT`."""
    from .nodes import MAX_SHIFT, Const, Expr, as_int

    if isinstance(value, Expr):
        if not isinstance(value, Const):
            raise UnsupportedError(f"shift by the non-constant expression {value}")
        amount = value.value
    else:
        amount = as_int(value)
    if amount < 0:
        raise ExprError(f"shift amounts must be >= 0, found {amount}")
    if amount > MAX_SHIFT:
        raise LimitError(f"shift amounts must be at most {MAX_SHIFT}; found {amount}", MAX_SHIFT, amount)
    return amount


def _expr(node: ExprOperators) -> Expr:
    """``node`` as the :class:`~layoutkit.algebra.nodes.Expr` it is (the mixin is only a base of Expr)."""
    return cast("Expr", node)
