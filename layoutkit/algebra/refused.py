"""The Python operators index expressions refuse, each with an :class:`~layoutkit.errors.ExprError`
that says why (instead of Python's ``TypeError: bad operand type``).

>>> from layoutkit.algebra import Var
>>> min(Var("_i", 4), 2)
Traceback (most recent call last):
...
layoutkit.errors.ExprError: _i > 2: comparisons of index expressions are unknown while the layout is built \
(min, max, sorted and conditionals need them); write the map without them
"""

from __future__ import annotations

from typing import NoReturn

from ..errors import ExprError


class RefusedOperators:
    """Mixin of :class:`~layoutkit.algebra.nodes.Expr`: powers, ``abs``, ``~``, ``round`` and ordering."""

    __slots__ = ()

    def __pow__(self, other: object) -> NoReturn:
        raise ExprError(f"{self} ** {other}: powers of index expressions are not supported")

    def __rpow__(self, other: object) -> NoReturn:
        raise ExprError(f"{other} ** {self}: powers of index expressions are not supported")

    def _unsupported(self, what: str) -> ExprError:
        return ExprError(f"{what} of the index expression {self} is not an index expression; index maps use "
                         f"+ - * // % & | ^ << >> with integer constants")

    def __abs__(self) -> NoReturn:
        raise self._unsupported("abs()")

    def __invert__(self) -> NoReturn:
        raise self._unsupported("~ (bitwise not)")

    def __round__(self, ndigits: int | None = None) -> NoReturn:
        raise self._unsupported("round()")

    def _compare(self, op: str, other: object) -> NoReturn:
        raise ExprError(f"{self} {op} {other}: comparisons of index expressions are unknown while the layout "
                        f"is built (min, max, sorted and conditionals need them); write the map without them")

    def __lt__(self, other: object) -> NoReturn:
        self._compare("<", other)

    def __le__(self, other: object) -> NoReturn:
        self._compare("<=", other)

    def __gt__(self, other: object) -> NoReturn:
        self._compare(">", other)

    def __ge__(self, other: object) -> NoReturn:
        self._compare(">=", other)

