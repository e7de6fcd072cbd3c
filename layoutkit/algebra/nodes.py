"""Integer index expression nodes.

An expression is an immutable, hashable tree.  Every :class:`Var` carries its range
``[0, extent)``, so every node knows an integer interval ``[lo, hi]`` that contains all its values;
the simplifier (below) uses those intervals to drop needless ``%`` and
``//``.  Python operators build expressions through the simplifier, so a lambda such as
``lambda i, j: i // 8 * 4 + j % 2`` turns into a canonical expression at once:

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 16), Var("_j", 16)
>>> print(i % 16 % 8 + j // 8 * 4)
_j // 8 * 4 + _i % 8
>>> print((i % 8) // 8)
0

``//`` and ``%`` are floor division and floor modulo, as in Python.  This module holds the whole
expression type, as one ring of definitions that need each other: the Python operators
(:class:`ExprOperators`, a mixin of :class:`Expr`) build nodes through the simplifier, the nodes (keys,
intervals, interning, the traversals :func:`walk` and :func:`free_vars`) print through the printer, and
the simplifier orders terms by their printed text.

Printing

Print expressions the way TileLang prints them (Python syntax, minimal parentheses).

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 32), Var("_j", 32)
>>> print(j // 16 * 64 + i % 8 * 4 + j % 8 // 2)
_j // 16 * 64 + _i % 8 * 4 + _j % 8 // 2
>>> print(((j // 8) ^ (i % 8)) * 8 + j % 8)
(_j // 8 ^ _i % 8) * 8 + _j % 8

The output is valid Python and reads back to the same expression through
:func:`layoutkit.algebra.parse_expr`, except a table lookup (:class:`Lookup`), printed ``table#<id>[index]``
with the table named by its digest (its values are no text to read back).

Simplification

Bounds-aware smart constructors: every expression is built already simplified.

Canonical form (the one TVM's canonical simplifier prints, which is what TileLang shows):

* a sum is ``sum(coeff * atom) + const`` with terms ordered by coefficient (largest first), then by
  the split's lower factor and upper factor (largest first);
* a digit of ``x`` is written ``x % upper // lower`` (never ``x // lower % n``);
* divisions and remainders that the operand's interval makes trivial disappear
  (``(i % 8) // 8 -> 0``, ``i % 16`` with ``i < 16`` -> ``i``);
* adjacent digits of one base merge (``x // 8 * 8 + x % 8 -> x``).

Rules for ``S // c`` and ``S % c`` with ``S = g*Y + r`` where ``g`` divides ``c`` and every
coefficient of ``Y``, and ``0 <= r < g``:  ``S // c = Y // (c/g)`` and
``S % c = (Y % (c/g)) * g + r`` (both exact for floor semantics).

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 4), Var("_j", 2)
>>> print((i * 2 + j) % 4, "|", (i * 2 + j) // 4)
_i % 2 * 2 + _j | _i // 2
>>> x = Var("x", 64)
>>> print(x // 8 * 8 + x % 8, "|", x // 4 % 2, "|", x - x // 8 * 8)
x | x % 8 // 4 | x % 8
"""

from __future__ import annotations

import functools
import math
import numbers
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

from ..errors import CoordinateError, ExprError, LimitError, UnsupportedError
from .refused import RefusedOperators
from .tables import Table


class ExprOperators(RefusedOperators):
    """Mixin of :class:`~layoutkit.algebra.nodes.Expr`: the arithmetic and bitwise operators."""

    __slots__ = ()

    def __add__(self, other: object) -> Expr:
        return add(_expr(self), as_expr(other))

    def __radd__(self, other: object) -> Expr:
        return add(as_expr(other), _expr(self))

    def __sub__(self, other: object) -> Expr:
        return add(_expr(self), mul(as_expr(other), Const(-1)))

    def __rsub__(self, other: object) -> Expr:
        return add(as_expr(other), mul(_expr(self), Const(-1)))

    def __neg__(self) -> Expr:
        return mul(_expr(self), Const(-1))

    def __pos__(self) -> Expr:
        return _expr(self)

    def __mul__(self, other: object) -> Expr:
        return mul(_expr(self), as_expr(other))

    def __rmul__(self, other: object) -> Expr:
        return mul(as_expr(other), _expr(self))

    def __floordiv__(self, other: object) -> Expr:
        return floordiv(_expr(self), as_expr(other))

    def __rfloordiv__(self, other: object) -> Expr:
        return floordiv(as_expr(other), _expr(self))

    def __mod__(self, other: object) -> Expr:
        return floormod(_expr(self), as_expr(other))

    def __rmod__(self, other: object) -> Expr:
        return floormod(as_expr(other), _expr(self))

    def __xor__(self, other: object) -> Expr:
        return bitxor(_expr(self), as_expr(other))

    def __rxor__(self, other: object) -> Expr:
        return bitxor(as_expr(other), _expr(self))

    def __and__(self, other: object) -> Expr:
        return bitand(_expr(self), as_expr(other))

    def __rand__(self, other: object) -> Expr:
        return bitand(as_expr(other), _expr(self))

    def __or__(self, other: object) -> Expr:
        return bitor(_expr(self), as_expr(other))

    def __ror__(self, other: object) -> Expr:
        return bitor(as_expr(other), _expr(self))

    def __lshift__(self, other: object) -> Expr:
        factor: int = 2 ** shift_amount(other)
        return _expr(self) * factor

    def __rshift__(self, other: object) -> Expr:
        factor: int = 2 ** shift_amount(other)
        return _expr(self) // factor

    def __rlshift__(self, other: object) -> Expr:
        return as_expr(other) << self

    def __rrshift__(self, other: object) -> Expr:
        return as_expr(other) >> self


def shift_amount(value: object) -> int:
    """The shift amount of ``<<`` / ``>>``: a non-negative integer constant up to :data:`~.nodes.MAX_SHIFT`."""

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


_INTERNING = threading.Lock()
"""Held by :func:`_interned`'s insertion: ``WeakValueDictionary.setdefault`` is Python code, and two threads
building one key at once would otherwise keep two nodes (only lookups run without it)."""


def _interned(cls: type[_N], key: tuple[Any, ...], lo: float, hi: float) -> _N:
    node = object.__new__(cls)
    node._init(key, lo, hi)
    with _INTERNING:
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


class Lookup(Expr):
    """``table[index]``: the entry of an integer :class:`~layoutkit.algebra.tables.Table` at ``index`` (an index
    map with no closed form, such as the inverse of a tabulated bijection, read from its table).  Built by
    :func:`lookup`, which folds constant indices.

    Its interval is the smallest and largest entry the index interval can reach.  The index interval may be
    wider than the table (node intervals are conservative, and a composition widens them): evaluation checks
    every index it reads and raises :class:`~layoutkit.errors.CoordinateError` naming one outside the table,
    never wrapping around as numpy's negative indices would.

    >>> i = Var("_i", 4)
    >>> e = lookup(Table([2, 0, 3, 1]), i)
    >>> (e.lo, e.hi), str(e) == f"table#{e.table.name}[_i]", lookup(e.table, Const(2))
    ((0, 3), True, Const(3))
    """

    __slots__ = ()

    def __new__(cls, table: Table, index: object) -> Lookup:
        if not isinstance(table, Table):
            raise ExprError(f"Lookup: expected a Table, found {type(table).__name__}")
        index = as_expr(index)
        key = ("lookup", table, index)
        hit = _INTERNED.get(key)
        if hit is not None:
            return cast(Lookup, hit)
        if index.hi < 0 or index.lo >= len(table):
            raise CoordinateError(f"lookup: index {text_prefix(index, 80)} takes values in [{index.lo}, {index.hi}], "
                                  f"none of them inside table#{table.name} of {len(table)} entries")
        lo, hi = table.span(int(index.lo), int(index.hi)) if _inside_table(index, table) else (table.lo, table.hi)
        return _interned(cls, key, lo, hi)

    @classmethod
    def _rebuild(cls, table: Table, index: Expr) -> Expr:
        return lookup(table, index)

    @property
    def table(self) -> Table:
        return cast(Table, self._key[1])

    @property
    def index(self) -> Expr:
        return cast(Expr, self._key[2])

    def children(self) -> tuple[Expr, ...]:
        return (self.index,)

    def __repr__(self) -> str:
        return f"Lookup({self})"


def _inside_table(index: Expr, table: Table) -> bool:
    """Whether the interval of ``index`` lies inside ``[0, len(table))``."""
    return not (math.isinf(index.lo) or math.isinf(index.hi)) and 0 <= index.lo and index.hi < len(table)


def lookup(table: Table, index: object) -> Expr:
    """``table[index]`` through the simplifier: a constant index reads the table now, and a table constant over
    the entries the index can reach is that constant.  An index none of whose values can lie in the table is
    refused (:class:`~layoutkit.errors.CoordinateError`).

    >>> t = Table([7, 7, 5])
    >>> lookup(t, Var("_i", 2)), lookup(t, 2)
    (Const(7), Const(5))
    """
    e = as_expr(index)
    if isinstance(e, Const) and isinstance(table, Table) and 0 <= e.value < len(table):
        return Const(int(table.values[e.value]))
    node = Lookup(table, e)  # checks the operands
    return Const(int(node.lo)) if node.lo == node.hi and _inside_table(e, table) else node


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


# Python operator precedence, loosest first.
_OR, _XOR, _AND, _ADD, _MUL, _ATOM = 1, 2, 3, 5, 6, 9
_BITWISE_TEXT: dict[type[Expr], tuple[int, str]] = {Xor: (_XOR, "^"), And: (_AND, "&"), Or: (_OR, "|")}


def precedence(e: Expr) -> int:
    if isinstance(e, Sum):
        return _MUL if len(e.terms) == 1 and e.const == 0 else _ADD
    if isinstance(e, (Mul, FloorDiv, FloorMod)):
        return _MUL
    if isinstance(e, Const) and e.value < 0:
        return _ADD
    for cls, (prec, _) in _BITWISE_TEXT.items():
        if isinstance(e, cls):
            return prec
    return _ATOM


def _wrap(e: Expr, min_prec: int) -> list[str | Expr]:
    return ["(", e, ")"] if precedence(e) < min_prec else [e]


def _term(atom: Expr, coeff: int) -> list[str | Expr]:
    if coeff == 1:
        return _wrap(atom, _ADD)
    return [*_wrap(atom, _MUL), f" * {int_text(coeff)}"]


def _sum_pieces(e: Sum) -> list[str | Expr]:
    # TVM order: positive terms (by scale, descending), a positive constant, then subtractions.
    out: list[str | Expr] = []
    for a, c in e.terms:
        if c > 0:
            out += [" + "] if out else []
            out += _term(a, c)
    if e.const > 0:
        out += [" + ", int_text(e.const)] if out else [int_text(e.const)]
    for a, c in e.terms:
        if c < 0:
            out += [" - ", *_term(a, -c)] if out else [*_wrap(a, _MUL), f" * {int_text(c)}"]
    if e.const < 0:
        out.append(f" - {int_text(-e.const)}")
    return out


def pieces(e: Expr) -> list[str | Expr]:
    """The text of ``e`` one level deep: literal strings and the children printed in place.

    >>> from layoutkit.algebra import Var
    >>> pieces(Var("_i", 8) % 4 * 2 + 1)
    [FloorMod(_i % 4), ' * 2', ' + ', '1']
    """
    if isinstance(e, Const):
        return [int_text(e.value)]
    if isinstance(e, Var):
        return [e.name]
    if isinstance(e, Sum):
        return _sum_pieces(e)
    if isinstance(e, FloorDiv):
        return [*_wrap(e.a, _MUL), f" // {int_text(e.c)}"]
    if isinstance(e, FloorMod):
        return [*_wrap(e.a, _MUL), f" % {int_text(e.c)}"]
    if isinstance(e, Mul):
        return [*_wrap(e.a, _MUL), " * ", *_wrap(e.b, _MUL + 1)]
    if isinstance(e, Lookup):
        return [f"table#{e.table.name}[", e.index, "]"]
    prec, sym = _BITWISE_TEXT[type(e)]
    bit = cast("Xor | And | Or", e)
    return [*_wrap(bit.a, prec), f" {sym} ", *_wrap(bit.b, prec + 1)]


def to_str(e: Expr) -> str:
    """TileLang-style text of ``e`` (a sub-expression shared in the DAG is printed once and reused)."""
    memo: dict[int, str] = {}  # by identity: the nodes stay alive for the whole call

    def go(x: Expr) -> str:
        hit = memo.get(id(x))
        if hit is None:
            hit = memo[id(x)] = "".join(p if isinstance(p, str) else go(p) for p in pieces(x))
        return hit

    return go(e)


def text_prefix(e: Expr, limit: int) -> str:
    """The first ``limit`` characters of ``to_str(e)``, then ``...`` when the text is longer; reads
    only as much of the expression as it prints (for messages about huge expressions).

    >>> from layoutkit.algebra import Var
    >>> text_prefix(Var("_i", 8) * 4 + Var("_j", 4), 6)
    '_i * 4...'
    """
    out: list[str] = []
    size = 0
    stack: list[str | Expr] = [e]
    while stack:
        item = stack.pop()
        if not isinstance(item, str):
            stack.extend(reversed(pieces(item)))
            continue
        if size + len(item) > limit:
            out.append(item[: limit - size])
            return "".join(out) + "..."
        out.append(item)
        size += len(item)
    return "".join(out)


def compare_text(a: Expr, b: Expr) -> int:
    """``-1``, ``0`` or ``1`` as ``to_str(a)`` sorts before, equal to or after ``to_str(b)``, without
    printing either (see :func:`_compare`).

    >>> from layoutkit.algebra import Var
    >>> i, j = Var("_i", 8), Var("_j", 8)
    >>> compare_text(i % 4, j % 4), compare_text(i * 2, i), compare_text(i + j, i + j)
    (-1, 1, 0)
    """
    return 0 if a is b else _compare(a, b)[0]


@functools.lru_cache(maxsize=4096)
def _compare(a: Expr, b: Expr) -> tuple[int, bool]:
    """``(order, strict)``: the order of the two texts, and whether it is decided at a character
    inside both (so it holds for any text that follows either).  Both texts are read piece by piece;
    a sub-expression starting at the same place in both is skipped whole when it is the same node
    (it prints the same) and decided by this function, cached, when the pair's order is strict.  So
    the cost is that of the differing parts, not of the texts, which compose chains make
    exponentially longer than the DAG."""
    sa: list[str | Expr] = pieces(a)[::-1]
    sb: list[str | Expr] = pieces(b)[::-1]
    ta = tb = ""
    while True:
        if not ta and not tb and sa and sb:
            x, y = sa[-1], sb[-1]
            if not isinstance(x, str) and not isinstance(y, str):
                order, strict = (0, False) if x is y else _compare(x, y)
                if strict:
                    return order, True
                if x is y or order == 0 and x == y:
                    sa.pop()
                    sb.pop()
                    continue
        if not ta:
            if not sa:
                return (0 if not tb and not sb else -1), False
            x = sa.pop()
            if isinstance(x, str):
                ta = x
            else:
                sa.extend(reversed(pieces(x)))
            continue
        if not tb:
            if not sb:
                return 1, False
            y = sb.pop()
            if isinstance(y, str):
                tb = y
            else:
                sb.extend(reversed(pieces(y)))
            continue
        m = min(len(ta), len(tb))
        ha, hb = ta[:m], tb[:m]
        if ha != hb:
            return (-1 if ha < hb else 1), True
        ta, tb = ta[m:], tb[m:]


def tuple_text(items: Iterable[object]) -> str:
    """Python tuple syntax, as TileLang prints shapes and index tuples: ``(a, b)``, ``(a,)``.

    >>> tuple_text([16, 16]), tuple_text([8]), tuple_text([])
    ('(16, 16)', '(8,)', '()')
    """
    parts = [str(x) for x in items]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


_E = TypeVar("_E", bound=Expr)

# ---- linear forms ----------------------------------------------------------------------------


def linear(e: Expr) -> tuple[dict[Expr, int], int]:
    """Split ``e`` into ``({atom: coeff}, const)``.

    >>> from layoutkit.algebra import Var
    >>> i = Var("_i", 4)
    >>> linear(i * 3 + 2) == ({i: 3}, 2)
    True
    """
    if isinstance(e, Const):
        return {}, e.value
    if isinstance(e, Sum):
        return dict(e.terms), e.const
    return {e: 1}, 0


def split_view(atom: Expr) -> tuple[Expr, int, int | None]:
    """View ``atom`` as the digit ``base % upper // lower`` (``upper=None``: no modulo).

    >>> from layoutkit.algebra import Var
    >>> x = Var("x", 64)
    >>> split_view(x % 16 // 4) == (x, 4, 16)
    True
    """
    if isinstance(atom, FloorDiv):
        inner = atom.a
        if isinstance(inner, FloorMod):
            return inner.a, atom.c, inner.c
        return inner, atom.c, None
    if isinstance(atom, FloorMod):
        return atom.a, 1, atom.c
    return atom, 1, None


def make_split(base: Expr, lower: int, upper: int | None) -> Expr:
    """Build ``base % upper // lower`` through the simplifier."""
    e = base if upper is None else floormod(base, Const(upper))
    return e if lower == 1 else floordiv(e, Const(lower))


def _rank_key(item: tuple[Expr, int]) -> tuple[Any, ...]:
    atom, coeff = item
    _, lower, upper = split_view(atom)
    return (-coeff, -lower, -(INF if upper is None else upper))


def _sorted_terms(terms: dict[Expr, int]) -> tuple[tuple[Expr, int], ...]:
    """The terms in canonical order: by :func:`_rank_key`, then atoms of equal rank by their text.

    The text order is decided by :func:`~.printing.compare_text`, which reads the two texts only up
    to where they differ and skips a shared sub-expression whole, so no atom is printed: printing
    costs the size of the tree, which compose chains make exponential in the size of the DAG."""
    ranked = sorted(((_rank_key(item), item) for item in terms.items()), key=lambda pair: pair[0])
    out: list[tuple[Expr, int]] = []
    start = 0
    while start < len(ranked):
        stop = start + 1
        while stop < len(ranked) and ranked[stop][0] == ranked[start][0]:
            stop += 1
        group = [item for _, item in ranked[start:stop]]
        out += group if len(group) == 1 else sorted(group, key=_BY_TEXT)
        start = stop
    return tuple(out)


def _text_order(x: tuple[Expr, int], y: tuple[Expr, int]) -> int:
    return compare_text(x[0], y[0])


_BY_TEXT = functools.cmp_to_key(_text_order)


def _merge_digits(terms: dict[Expr, int]) -> dict[Expr, int]:
    """Merge digits of one base: ``x%u//l*s + x%l//m*s' -> x%u//m*s'`` when ``s == s'*(l/m)``.

    Only digits of one base merge, so atoms are grouped by base first: a sum of many atoms over distinct
    bases (a piecewise inverse's steps) costs linear time, not a comparison of every pair."""
    if len(terms) < 2:
        return terms
    groups: dict[Expr, list[Expr]] = {}
    for atom in terms:
        groups.setdefault(split_view(atom)[0], []).append(atom)
    for atoms in groups.values():
        if len(atoms) > 1:
            _merge_group(terms, atoms)
    return terms


def _merge_group(terms: dict[Expr, int], atoms: list[Expr]) -> None:
    """:func:`_merge_digits` on the atoms of ``terms`` that share one base (``atoms``, in term order)."""
    changed = True
    while changed and len(atoms) > 1:
        changed = False
        views = [(atom, terms[atom], split_view(atom)) for atom in atoms]
        for a1, s1, (x1, l1, u1) in views:
            for a2, s2, (_, l2, u2) in views:  # one base: only the factors differ
                if a1 is a2 or l1 % l2 or l1 == l2:
                    continue
                merged = None
                if u2 == l1 and s1 == s2 * (l1 // l2):
                    merged = make_split(x1, l2, u1)
                elif u1 == u2 and s1 == -s2 * (l1 // l2) and (u1 is None or u1 % l1 == 0):
                    # x%u//m*s' - x%u//l*(s'*l/m)  ->  x%l//m*s'
                    merged = make_split(x1, l2, l1)
                if merged is not None:
                    del terms[a1], terms[a2]
                    atoms.remove(a1)
                    atoms.remove(a2)
                    terms[merged] = terms.get(merged, 0) + s2
                    if terms[merged] == 0:
                        del terms[merged]
                        if merged in atoms:
                            atoms.remove(merged)
                    elif merged not in atoms:
                        atoms.append(merged)
                    changed = True
                    break
            if changed:
                break


def _flatten(terms: dict[Expr, int], const: int) -> tuple[dict[Expr, int], int]:
    flat: dict[Expr, int] = {}
    for atom, coeff in terms.items():
        if atom.lo == atom.hi:  # a variable of extent 1, or anything its bounds pin down
            const += int(atom.lo) * coeff
        elif isinstance(atom, (Sum, Const)):
            sub, k = linear(atom)
            const += k * coeff
            for a, c in sub.items():
                flat[a] = flat.get(a, 0) + c * coeff
        else:
            flat[atom] = flat.get(atom, 0) + coeff
    return {a: c for a, c in flat.items() if c != 0}, const


def make_sum(terms: dict[Expr, int], const: int = 0) -> Expr:
    """Canonical expression for ``sum(coeff * atom) + const``."""
    flat, const = _flatten(terms, const)
    flat = _merge_digits(flat)
    if any(isinstance(a, (Sum, Const)) for a in flat):
        return make_sum(flat, const)
    if not flat:
        return Const(const)
    if len(flat) == 1 and const == 0:
        ((atom, coeff),) = flat.items()
        if coeff == 1:
            return atom
    return Sum(_sorted_terms(flat), const)


# ---- arithmetic ------------------------------------------------------------------------------


def _plain(e: Expr) -> bool:
    """An atom ``make_sum({e: 1})`` returns unchanged (not a sum, not pinned to one value), so ``e + 0`` is
    ``e`` without building the sum."""
    return not isinstance(e, (Sum, Const)) and e.lo != e.hi


def add(a: Expr, b: Expr) -> Expr:
    """``a + b``."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value)
    if isinstance(b, Const) and b.value == 0 and _plain(a):
        return a
    if isinstance(a, Const) and a.value == 0 and _plain(b):
        return b
    ta, ca = linear(a)
    tb, cb = linear(b)
    for atom, coeff in tb.items():
        ta[atom] = ta.get(atom, 0) + coeff
    return make_sum(ta, ca + cb)


def scale(e: Expr, c: int) -> Expr:
    """``e * c`` for an integer ``c``."""
    if c == 0:
        return Const(0)
    if c == 1:
        return e
    terms, k = linear(e)
    return make_sum({a: s * c for a, s in terms.items()}, k * c)


def mul(a: Expr, b: Expr) -> Expr:
    """``a * b`` (a product of two non-constants stays a :class:`Mul` node)."""
    if isinstance(b, Const):
        return scale(a, b.value)
    if isinstance(a, Const):
        return scale(b, a.value)
    return Mul(a, b)


def _divisor(a: Expr, b: Expr, op: str) -> int:
    if not isinstance(b, Const):
        raise UnsupportedError(f"{op} by the non-constant expression {b} (in {a} {op} {b}) is not supported")
    if b.value == 0:
        raise ExprError(f"{op} by zero in {a} {op} 0")
    return b.value


def _gcd_candidates(terms: dict[Expr, int], c: int) -> list[int]:
    return sorted({math.gcd(c, s) for s in terms.values()} - {1, c}, reverse=True)


def _split_by(terms: dict[Expr, int], const: int, g: int) -> tuple[Expr, Expr] | None:
    """Write ``S = g*Y + r`` with ``0 <= r < g``; return ``(Y, r)`` or None if impossible."""
    big = {a: s // g for a, s in terms.items() if s % g == 0}
    if not big:
        return None
    q, rem = divmod(const, g)
    small = make_sum({a: s for a, s in terms.items() if s % g}, rem)
    if small.lo >= 0 and small.hi < g:
        return make_sum(big, q), small
    return None


def floordiv(a: Expr, b: Expr) -> Expr:
    """``a // b`` (floor division) for a constant ``b``."""
    c = _divisor(a, b, "//")
    if c < 0:
        return floordiv(scale(a, -1), Const(-c))
    if isinstance(a, Const):
        return Const(a.value // c)
    if c == 1:
        return a
    if not (math.isinf(a.lo) or math.isinf(a.hi)) and a.lo // c == a.hi // c:
        return Const(int(a.lo) // c)
    if isinstance(a, FloorDiv):
        return floordiv(a.a, Const(a.c * c))
    if isinstance(a, Sum):
        terms, const = linear(a)
        whole = {t: s // c for t, s in terms.items() if s % c == 0}
        q, rem = divmod(const, c)
        if whole or q:
            rest = make_sum({t: s for t, s in terms.items() if s % c}, rem)
            return add(make_sum(whole, q), floordiv(rest, Const(c)))
        for g in _gcd_candidates(terms, c):
            parts = _split_by(terms, const, g)
            if parts is not None:
                return floordiv(parts[0], Const(c // g))
    return FloorDiv(a, c)


def floormod(a: Expr, b: Expr) -> Expr:
    """``a % b`` (floor modulo, result in ``[0, b)``) for a constant ``b``."""
    c = _divisor(a, b, "%")
    if c < 0:
        return scale(floormod(scale(a, -1), Const(-c)), -1)
    if isinstance(a, Const):
        return Const(a.value % c)
    if c == 1:
        return Const(0)
    if not (math.isinf(a.lo) or math.isinf(a.hi)) and a.lo // c == a.hi // c:
        shift = -(int(a.lo) // c) * c
        return a if shift == 0 and _plain(a) else add(a, Const(shift))
    if isinstance(a, FloorMod) and a.c % c == 0:
        return floormod(a.a, Const(c))
    if isinstance(a, FloorDiv):
        return floordiv(floormod(a.a, Const(a.c * c)), Const(a.c))
    if isinstance(a, Sum):
        terms, const = linear(a)
        kept = {t: s for t, s in terms.items() if s % c}
        if len(kept) != len(terms) or not 0 <= const < c:
            return floormod(make_sum(kept, const % c), Const(c))
        for g in _gcd_candidates(terms, c):
            parts = _split_by(terms, const, g)
            if parts is not None:
                y, r = parts
                return add(scale(floormod(y, Const(c // g)), g), r)
    return FloorMod(a, c)


# ---- bitwise ---------------------------------------------------------------------------------


def low_zero_bits(e: Expr) -> float:
    """Number of low bits known to be zero in every value of ``e`` (``inf`` for 0)."""
    if isinstance(e, Const):
        v = e.value
        return INF if v == 0 else (v & -v).bit_length() - 1
    if isinstance(e, Sum):
        tz = low_zero_bits(Const(e.const))
        for atom, coeff in e.terms:
            tz = min(tz, low_zero_bits(Const(coeff)) + low_zero_bits(atom))
        return tz
    if isinstance(e, Mul):
        return low_zero_bits(e.a) + low_zero_bits(e.b)
    return 0


def _fits_below(x: Expr, bits: float) -> bool:
    return math.isinf(bits) or (not math.isinf(x.hi) and x.hi < 2**bits)


def _disjoint(a: Expr, b: Expr) -> bool:
    """True when ``a`` and ``b`` are non-negative and can never share a set bit."""
    if a.lo < 0 or b.lo < 0:
        return False
    return _fits_below(a, low_zero_bits(b)) or _fits_below(b, low_zero_bits(a))


def _xor_operands(e: Expr) -> list[Expr]:
    """The operands of a xor chain, left to right (without recursion: chains can be long)."""
    out: list[Expr] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Xor):
            stack.extend((x.b, x.a))
        else:
            out.append(x)
    return out


def bitxor(a: Expr, b: Expr) -> Expr:
    """``a ^ b``; equal operands of a xor chain cancel (``j ^ i ^ i -> j``), bit-disjoint
    operands become ``a + b``."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value ^ b.value)
    if a == b:
        return Const(0)
    if isinstance(a, Xor) or isinstance(b, Xor):
        ops = _xor_operands(a) + _xor_operands(b)
        counts = Counter(ops)  # linear, not quadratic, in the chain length
        kept = [x for x, n in counts.items() if n % 2]
        if len(kept) < len(ops):
            out: Expr = Const(0)
            for x in kept:
                out = bitxor(out, x)
            return out
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(b, Const) and b.value == 0:
        return a
    if _disjoint(a, b):
        return add(a, b)
    return Xor(a, b)


def bitor(a: Expr, b: Expr) -> Expr:
    """``a | b``; bit-disjoint operands become ``a + b``."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value | b.value)
    if a == b:
        return a
    if _disjoint(a, b):
        return add(a, b)
    return Or(a, b)


def bitand(a: Expr, b: Expr) -> Expr:
    """``a & b``; ``x & (2**k - 1)`` with ``x >= 0`` becomes ``x % 2**k``."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value & b.value)
    if isinstance(a, Const):
        a, b = b, a
    if a == b:
        return a
    if isinstance(b, Const):
        m = b.value
        if m == 0:
            return Const(0)
        if m > 0 and (m + 1) & m == 0 and a.lo >= 0:
            return floormod(a, Const(m + 1))
    if _disjoint(a, b):
        return Const(0)
    return And(a, b)


_BITWISE_BUILDERS: dict[type[Expr], Callable[[Expr, Expr], Expr]] = {Xor: bitxor, And: bitand, Or: bitor}


def rebuild(e: Expr, children: list[Expr]) -> Expr:
    """Rebuild node ``e`` with new children through the simplifier."""
    if isinstance(e, Sum):
        terms: dict[Expr, int] = {}
        for child, (_, coeff) in zip(children, e.terms):
            terms[child] = terms.get(child, 0) + coeff
        return make_sum(terms, e.const)
    if isinstance(e, FloorDiv):
        return floordiv(children[0], Const(e.c))
    if isinstance(e, FloorMod):
        return floormod(children[0], Const(e.c))
    if isinstance(e, Mul):
        return mul(*children)
    if isinstance(e, Lookup):
        return lookup(e.table, children[0])
    return _BITWISE_BUILDERS[type(e)](*children)


@functools.lru_cache(maxsize=1 << 14)
def _rebuilt(e: Expr, children: tuple[Expr, ...]) -> Expr:
    """:func:`rebuild`, remembered: nodes are interned, so the result is a function of the node and
    the new children; a compose chain rebuilds the same (node, children) pairs at every step (the
    deep levels of ``L o L o ... o L`` are those of the chain one shorter)."""
    return rebuild(e, list(children))


def substitute(e: Expr, mapping: Mapping[_E, Expr]) -> Expr:
    """Replace variables (or any sub-expressions) by expressions and re-simplify.

    >>> from layoutkit.algebra import Var
    >>> i, j = Var("_i", 8), Var("_j", 8)
    >>> print(substitute(i * 8 + j, {i: Var("t", 64) // 8, j: Var("t", 64) % 8}))
    t
    """
    memo: dict[Expr, Expr] = {}
    lookup = cast(Mapping[Expr, Expr], mapping)  # keys are Vars or other sub-expressions
    mkey = tuple(lookup.items())
    if len(_SUBSTITUTED) > SUBSTITUTE_CACHE:
        _SUBSTITUTED.clear()

    def go(x: Expr) -> Expr:
        hit = memo.get(x)
        if hit is not None:
            return hit
        if x in lookup:
            out = lookup[x]
        else:
            kids = x.children()
            if not kids:
                out = x
            else:
                out = _SUBSTITUTED.get((x, mkey))  # type: ignore[assignment]
                if out is None:
                    new = tuple(go(k) for k in kids)
                    out = x if all(n is k for n, k in zip(new, kids)) else _rebuilt(x, new)
                    _SUBSTITUTED[x, mkey] = out
        memo[x] = out
        return out

    return go(e)


SUBSTITUTE_CACHE = 1 << 15
"""Most remembered (node, mapping) substitutions; the cache is emptied when it grows past this."""
_SUBSTITUTED: dict[tuple[Expr, tuple[tuple[Expr, Expr], ...]], Expr] = {}
"""``substitute`` results by node and mapping (both interned values, so the result is a function of
them): the steps of ``M.compose(L)`` chains substitute the same mapping into the deep levels again."""


def simplify(e: Expr) -> Expr:
    """Re-run every rule bottom-up (idempotent: ``simplify(simplify(e)) == simplify(e)``)."""
    memo: dict[Expr, Expr] = {}

    def go(x: Expr) -> Expr:
        hit = memo.get(x)
        if hit is None:
            kids = x.children()
            hit = rebuild(x, [go(k) for k in kids]) if kids else x
            memo[x] = hit
        return hit

    return go(e)


def clear_caches() -> None:
    """Empty the memo tables of the printer's text order and the simplifier (for cold-start timings; the
    results never change, only their cost).

    >>> clear_caches()
    """
    _compare.cache_clear()
    _rebuilt.cache_clear()
    _SUBSTITUTED.clear()
