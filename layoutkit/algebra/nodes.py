"""Integer index expression nodes.

An expression is an immutable, hashable tree.  Every :class:`Var` carries its range
``[0, extent)``, so every node knows an integer interval ``[lo, hi]`` that contains all its values;
the simplifier (:mod:`layoutkit.algebra.simplify`) uses those intervals to drop needless ``%`` and
``//``.  Python operators build expressions through the simplifier, so a lambda such as
``lambda i, j: i // 8 * 4 + j % 2`` turns into a canonical expression at once:

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 16), Var("_j", 16)
>>> print(i % 16 % 8 + j // 8 * 4)
_j // 8 * 4 + _i % 8
>>> print((i % 8) // 8)
0

``//`` and ``%`` are floor division and floor modulo, as in Python.  The operator methods are the
mixin :class:`~layoutkit.algebra.operators.ExprOperators`; this module holds the nodes themselves (keys,
intervals, interning) and the traversals :func:`walk` and :func:`free_vars`.
"""

from __future__ import annotations

import math
import numbers
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from ..errors import ExprError, LimitError
from .operators import ExprOperators

INF = math.inf
_N = TypeVar("_N", bound="Expr")

MAX_DEPTH = 128
"""Deepest expression tree (a Sum counts one level however many terms it has).  The printer, the
simplifier and the evaluators recurse once per level; past this they would run out of stack."""
MAX_EXTENT = 2**62
"""Largest variable extent: every coordinate of a domain fits an int64."""
MAX_SHIFT = 64
"""Largest shift amount of ``<<`` / ``>>`` (``1 << 2**40`` would allocate a 2**40-bit integer)."""
BOUND_CAP = 2**126
"""Interval bounds of compound nodes past this magnitude widen to infinity (sound, and it keeps the
bounds of ``x * x * x ...`` from growing into huge integers)."""


def as_int(value: object) -> int:
    """Accept Python and numpy integers (not bools, not floats) as constants."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise ExprError(f"expected an integer constant, found the bool {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        raise ExprError(
            f"expected an integer constant, found the float {value!r}: index expressions are "
            "integer-valued (use // for floor division)"
        )
    raise ExprError(f"expected an integer or an index expression, found {type(value).__name__} {value!r}")


def as_expr(value: object) -> Expr:
    """Wrap an integer as :class:`Const`; return expressions unchanged.

    >>> as_expr(3)
    Const(3)
    """
    if isinstance(value, Expr):
        return value
    return Const(as_int(value))


_INTERNED: weakref.WeakValueDictionary[tuple[Any, ...], Expr] = weakref.WeakValueDictionary()
"""Every live node by its key (hash-consing): building a node equal to a live one returns that one,
so equal sub-expressions are one object, a DAG stays a DAG through compose chains and substitutions,
and equality is identity.  An explicit registry of values, not state: it only ever answers "the node
with this key", and forgets a node as soon as nothing else holds it."""


_PIN_SMALL, _PIN_POWERS = 4096, 2**62
_PINNED: dict[int, Const] = {}
"""Constants the interning registry keeps alive (small integers and powers of two, at most ~8,300 of them): the
strides, extents and digit places that the simplifier builds again on every call would otherwise die at once and be
rebuilt each time, and building a node costs several times looking one up."""


def _interned(cls: type[_N], key: tuple[Any, ...], lo: float, hi: float) -> _N:
    node = object.__new__(cls)
    node._init(key, lo, hi)
    return cast(_N, _INTERNED.setdefault(key, node))


class Expr(ExprOperators):
    """Base class of all index expressions (immutable and hashable; equal nodes are one object)."""

    __slots__ = ("_key", "_hash", "lo", "hi", "depth", "__weakref__")
    _key: tuple[Any, ...]
    _hash: int
    lo: float
    hi: float
    depth: int
    """Height of the tree (1 for constants and variables)."""

    def _init(self, key: tuple[Any, ...], lo: float, hi: float) -> None:
        object.__setattr__(self, "_key", key)
        kids = self.children()
        depth = 1 + max((k.depth for k in kids), default=0)
        if depth > MAX_DEPTH:
            raise LimitError(f"expression nesting deeper than {MAX_DEPTH} levels (found {depth}); build the map "
                             f"from fewer nested operations", MAX_DEPTH, depth)
        if kids:
            lo = -INF if lo < -BOUND_CAP else lo
            hi = INF if hi > BOUND_CAP else hi
        object.__setattr__(self, "_hash", hash(key))
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "depth", depth)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        # interned: equal nodes are the same object (the key test is for the unequal, and cheap)
        return self is other or (isinstance(other, Expr) and self._hash == other._hash and self._key == other._key)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        return (getattr(type(self), "_rebuild"), self._key[1:])  # noqa: B009 - defined by each subclass

    @property
    def is_const(self) -> bool:
        return False

    def children(self) -> tuple[Expr, ...]:
        return ()

    def __truediv__(self, other: object) -> Expr:
        raise ExprError(f"true division {self} / {other} is not an integer expression; use //")

    __rtruediv__ = __truediv__

    def __int__(self) -> int:
        raise ExprError(f"expression {self} is not a constant")

    __index__ = __int__

    def __bool__(self) -> bool:
        raise ExprError(
            f"the truth value of expression {self} is unknown while the layout is built; "
            "write the map without Python conditionals"
        )

    def __str__(self) -> str:
        from .printing import to_str

        return to_str(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


class Const(Expr):
    """An integer constant."""

    __slots__ = ()

    def __new__(cls, value: int) -> Const:
        if type(value) is int:
            pinned = _PINNED.get(value)
            if pinned is not None:
                return pinned
        value = as_int(value)
        key = ("const", value)
        hit = _INTERNED.get(key)
        if hit is not None:
            return cast(Const, hit)
        node = _interned(cls, key, value, value)
        if -_PIN_SMALL <= value <= _PIN_SMALL or (0 < value <= _PIN_POWERS and value & (value - 1) == 0):
            _PINNED[value] = node
        return node

    @classmethod
    def _rebuild(cls, value: int) -> Const:
        return cls(value)

    @property
    def value(self) -> int:
        return cast('int', self._key[1])

    @property
    def is_const(self) -> bool:
        return True

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __repr__(self) -> str:
        return f"Const({int_text(self.value)})"


def int_text(value: int) -> str:
    """``value`` in decimal, or in hex past the digits Python converts to decimal (4300): both read back.

    >>> int_text(255), int_text(-(1 << 20000))[:6]
    ('255', '-0x100')
    """
    if value.bit_length() < 14000:
        return str(value)
    return hex(value)


class Var(Expr):
    """A variable ranging over ``[0, extent)`` (``extent=None``: unbounded above).

    >>> Var("_i", 8).hi
    7
    """

    __slots__ = ()

    def __new__(cls, name: str, extent: int | None = None) -> Var:
        if not isinstance(name, str) or not name:
            raise ExprError(f"a variable needs a non-empty name, found {name!r}")
        if extent is not None:
            extent = as_int(extent)
            if extent <= 0:
                raise ExprError(f"variable {name} needs a positive extent, found {extent}")
            if extent > MAX_EXTENT:
                raise LimitError(f"variable {name}: extents must be at most 2**62; found {extent}", MAX_EXTENT,
                                 extent)
        key = ("var", name, extent)
        hit = _INTERNED.get(key)
        return cast(Var, hit) if hit is not None else _interned(cls, key, 0, INF if extent is None else extent - 1)

    @classmethod
    def _rebuild(cls, name: str, extent: int | None) -> Var:
        return cls(name, extent)

    @property
    def name(self) -> str:
        return cast('str', self._key[1])

    @property
    def extent(self) -> int | None:
        return cast('int | None', self._key[2])

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.extent})"


def _scaled(lo: float, hi: float, c: int) -> tuple[float, float]:
    a, b = lo * c, hi * c
    return (a, b) if a <= b else (b, a)


class Sum(Expr):
    """``sum(coeff * atom) + const`` with canonical term order; built by the simplifier only."""

    __slots__ = ()

    def __new__(cls, terms: tuple[tuple[Expr, int], ...], const: int = 0) -> Sum:
        key = ("sum", tuple(terms), const)
        hit = _INTERNED.get(key)
        if hit is not None:
            return cast(Sum, hit)
        lo: float = const
        hi: float = const
        for atom, c in terms:
            a, b = _scaled(atom.lo, atom.hi, c)
            lo, hi = lo + a, hi + b
        return _interned(cls, key, lo, hi)

    @classmethod
    def _rebuild(cls, terms: tuple[tuple[Expr, int], ...], const: int) -> Sum:
        return cls(terms, const)

    @property
    def terms(self) -> tuple[tuple[Expr, int], ...]:
        return cast('tuple[tuple[Expr, int], ...]', self._key[1])

    @property
    def const(self) -> int:
        return cast('int', self._key[2])

    def children(self) -> tuple[Expr, ...]:
        return tuple(a for a, _ in self.terms)


class Mul(Expr):
    """Product of two non-constant expressions (not quasi-affine)."""

    __slots__ = ()

    def __new__(cls, a: Expr, b: Expr) -> Mul:
        key = ("mul", a, b)
        hit = _INTERNED.get(key)
        if hit is not None:
            return cast(Mul, hit)
        corners = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi) if not (math.isinf(x) or math.isinf(y))]
        if len(corners) == 4:
            lo, hi = min(corners), max(corners)
        elif a.lo >= 0 and b.lo >= 0:
            lo, hi = a.lo * b.lo, INF
        else:
            lo, hi = -INF, INF
        return _interned(cls, key, lo, hi)

    @classmethod
    def _rebuild(cls, a: Expr, b: Expr) -> Expr:
        return cls(a, b)

    @property
    def a(self) -> Expr:
        return cast('Expr', self._key[1])

    @property
    def b(self) -> Expr:
        return cast('Expr', self._key[2])

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)


def _fdiv(x: float, c: int) -> float:
    return x if math.isinf(x) else x // c


class FloorDiv(Expr):
    """``a // c`` for a positive integer constant ``c``."""

    __slots__ = ()

    def __new__(cls, a: Expr, c: int) -> FloorDiv:
        key = ("floordiv", a, c)
        hit = _INTERNED.get(key)
        return cast(FloorDiv, hit) if hit is not None else _interned(cls, key, _fdiv(a.lo, c), _fdiv(a.hi, c))

    @classmethod
    def _rebuild(cls, a: Expr, c: int) -> Expr:
        return cls(a, c)

    @property
    def a(self) -> Expr:
        return cast('Expr', self._key[1])

    @property
    def c(self) -> int:
        return cast('int', self._key[2])

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)


class FloorMod(Expr):
    """``a % c`` for a positive integer constant ``c`` (result in ``[0, c)``)."""

    __slots__ = ()

    def __new__(cls, a: Expr, c: int) -> FloorMod:
        key = ("floormod", a, c)
        hit = _INTERNED.get(key)
        return cast(FloorMod, hit) if hit is not None else _interned(cls, key, 0, c - 1)

    @classmethod
    def _rebuild(cls, a: Expr, c: int) -> Expr:
        return cls(a, c)

    @property
    def a(self) -> Expr:
        return cast('Expr', self._key[1])

    @property
    def c(self) -> int:
        return cast('int', self._key[2])

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)


def _bit_hi(hi: float) -> float:
    """Smallest ``2**k - 1`` that is >= hi (for non-negative operands)."""
    if math.isinf(hi):
        return INF
    return (1 << int(hi).bit_length()) - 1


class _Bitwise(Expr):
    __slots__ = ()
    op = ""

    @staticmethod
    def _bounds(a: Expr, b: Expr) -> tuple[float, float]:
        raise NotImplementedError

    def __new__(cls, a: Expr, b: Expr) -> _Bitwise:
        key = (cls.op, a, b)
        hit = _INTERNED.get(key)
        if hit is not None:
            return cast(_Bitwise, hit)
        lo, hi = cls._bounds(a, b) if a.lo >= 0 and b.lo >= 0 else (-INF, INF)
        return _interned(cls, key, lo, hi)

    @classmethod
    def _rebuild(cls, a: Expr, b: Expr) -> Expr:
        return cls(a, b)

    @property
    def a(self) -> Expr:
        return cast('Expr', self._key[1])

    @property
    def b(self) -> Expr:
        return cast('Expr', self._key[2])

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)


class Xor(_Bitwise):
    """Bitwise xor of two non-negative expressions."""

    __slots__ = ()
    op = "xor"

    @staticmethod
    def _bounds(a: Expr, b: Expr) -> tuple[float, float]:
        return 0, _bit_hi(max(a.hi, b.hi))


class And(_Bitwise):
    """Bitwise and of two non-negative expressions."""

    __slots__ = ()
    op = "and"

    @staticmethod
    def _bounds(a: Expr, b: Expr) -> tuple[float, float]:
        return 0, min(a.hi, b.hi)


class Or(_Bitwise):
    """Bitwise or of two non-negative expressions."""

    __slots__ = ()
    op = "or"

    @staticmethod
    def _bounds(a: Expr, b: Expr) -> tuple[float, float]:
        return max(a.lo, b.lo), _bit_hi(max(a.hi, b.hi))


def walk(roots: Expr | Sequence[Expr], prune: Callable[[Expr], bool] | None = None) -> Iterator[Expr]:
    """Every distinct sub-expression of ``roots`` once, depth first, left to right; ``prune(e)``
    returning True stops the descent below ``e`` (``e`` itself is still yielded).

    >>> i = Var("_i", 4)
    >>> [str(e) for e in walk([i * 4 + i % 2])]
    ['_i * 4 + _i % 2', '_i', '_i % 2']
    """
    stack = list(reversed(roots if isinstance(roots, (list, tuple)) else [roots]))
    seen: set[Expr] = set()
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        yield e
        if prune is None or not prune(e):
            stack.extend(reversed(e.children()))


def free_vars(expr: Expr) -> tuple[Var, ...]:
    """Variables of ``expr`` in order of first appearance (depth first, left to right).

    >>> i, j = Var("_i", 4), Var("_j", 4)
    >>> [v.name for v in free_vars(j * 4 + i)]
    ['_j', '_i']
    """
    # walk's order without its generator: every Layout checks its outputs' variables with this
    found: list[Var] = []
    stack, seen = [expr], set()
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if isinstance(e, Var):
            found.append(e)
        else:
            stack.extend(reversed(e.children()))
    return tuple(found)
