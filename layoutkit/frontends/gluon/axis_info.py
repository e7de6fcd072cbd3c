"""What Triton's axis analysis proves about an integer, pointer or mask value of a GLIR module, per dim: its
*contiguity* (runs of consecutive values), *divisibility* (the power of two every run starts at a multiple of;
bytes for a pointer) and *constancy* (runs of equal values) -- the facts that bound the vector width of a global
access (docs/gluon.md, "Vector widths").

The rules follow the analysis Triton runs before lowering loads and stores: a ``make_range`` from 0 is one
contiguous run divisible by any power of two; a constant or a splat is constant along every dim and divisible
by its value's (or its scalar's) power of two; a kernel argument is divisible by its ``tt.divisibility``
attribute, and a program id by 1; a sum keeps the contiguity of a contiguous side over the runs of the other's
constancy and the gcd of their divisibilities (``addptr`` scales the offset's by the element size); a product
multiplies the divisibilities (a contiguous side counting as 1); a comparison ``range < bound`` is constant in
runs of ``gcd(contiguity, divisibility of the range, divisibility of the bound)``; ``and`` / ``or`` keep the
gcd of the constancies; ``expand_dims`` adds a dim of one, ``broadcast`` makes a dim of one constant along its
new extent.  A value the analysis does not follow (a call's result, an unknown op) proves nothing (all 1).

>>> offsets = AxisInfo((64,), (16,), (1,))      # a pointer (16-byte aligned) plus a range of 64
>>> vector_bound(offsets, None, 0, 4), vector_bound(offsets, AxisInfo((1,), (1,), (2,)), 0, 4)
(4, 2)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .glir import GlirOp

MAX_DIVISOR = 1 << 30
"""The divisibility of 0 (and of an unknown loop-carried value before its loop is read): every power of two."""


@dataclass(frozen=True)
class AxisInfo:
    """Per dim: contiguity, divisibility, constancy; ``constant``: the value where it is one integer."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: int | None = None

    @property
    def rank(self) -> int:
        return len(self.contiguity)


def _gcd(*xs: int) -> int:
    """gcd with 0 as the identity (Triton's convention for an unknown run)."""
    out = 0
    for x in xs:
        out = math.gcd(out, x)
    return out or 1


def _pow2(value: int) -> int:
    """The highest power of two dividing ``value`` (0: :data:`MAX_DIVISOR`).

    >>> _pow2(48), _pow2(0) == MAX_DIVISOR
    (16, True)
    """
    value = abs(value)
    return MAX_DIVISOR if value == 0 else min(value & -value, MAX_DIVISOR)


def vector_bound(pointer: AxisInfo, mask: AxisInfo | None, dim: int, elem_bytes: int) -> int:
    """The most elements one global access instruction may move along ``dim`` (the layout's fastest dim), as
    Triton lowers it: 16 bytes at most, no more than the pointers' contiguity, their alignment (divisibility in
    bytes over the element size) and, with a mask, the mask's constancy.

    >>> vector_bound(AxisInfo((128,), (4,), (1,)), None, 0, 2)
    2
    """
    out = min(max(1, 16 // elem_bytes), pointer.contiguity[dim], max(1, pointer.divisibility[dim] // elem_bytes))
    if mask is not None:
        out = min(out, mask.constancy[dim])
    return max(1, out)


def unknown(rank: int) -> AxisInfo:
    """A value the analysis proves nothing about."""
    return AxisInfo((1,) * rank, (1,) * rank, (1,) * rank)


def join(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """What holds of a value that is ``a`` on one path and ``b`` on another (a loop-carried value)."""
    div = tuple(_gcd(x, y) if ca == cb else _gcd(x, y, ca, cb)
                for x, y, ca, cb in zip(a.divisibility, b.divisibility, a.contiguity, b.contiguity))
    return AxisInfo(tuple(_gcd(x, y) for x, y in zip(a.contiguity, b.contiguity)), div,
                    tuple(_gcd(x, y) for x, y in zip(a.constancy, b.constancy)),
                    a.constant if a.constant is not None and a.constant == b.constant else None)


_HINT = re.compile(r"tt\.(divisibility|contiguity|constancy)\s*=\s*(?:dense<(\d+)>|(\d+))")
_INT_CONSTANT = re.compile(r"arith\.constant\s+(?:dense<(-?\d+|true|false)>|(-?\d+|true|false))\s*:")
_PREDICATE = re.compile(r"arith\.cmpi\s+(\w+)")
_POINTEE = re.compile(r"!tt\.ptr<(\w+)>")
_BITS = {"f32": 32, "i32": 32, "f16": 16, "bf16": 16, "i64": 64, "f64": 64, "i8": 8, "i16": 16, "i1": 8,
         "f8E4M3FN": 8, "f8E5M2": 8}
_CASTS = frozenset("arith.extsi arith.extui arith.trunci arith.index_cast ttg.convert_layout tt.bitcast "
                   "arith.bitcast".split())
_LOGICAL = frozenset("arith.andi arith.ori arith.xori".split())
_MIN_MAX = frozenset("arith.maxsi arith.maxui arith.minsi arith.minui".split())


def hints(text: str) -> dict[str, int]:
    """The ``tt.divisibility`` / ``tt.contiguity`` / ``tt.constancy`` hints in an attribute text.

    >>> hints("{tt.divisibility = 16 : i32}")
    {'divisibility': 16}
    """
    return {m.group(1): int(m.group(2) or m.group(3)) for m in _HINT.finditer(text)}


def _hinted(info: AxisInfo, found: Mapping[str, int]) -> AxisInfo:
    if not found:
        return info
    rank = info.rank

    def hinted(name: str, value: tuple[int, ...]) -> tuple[int, ...]:
        return (found[name],) * rank if name in found else value

    return AxisInfo(hinted("contiguity", info.contiguity), hinted("divisibility", info.divisibility),
                    hinted("constancy", info.constancy), info.constant)


@dataclass
class AxisAnalysis:
    """Axis facts of a module's values (memoised): ``defs`` maps a value key to its defining op, ``operands`` an
    op to its operand keys, ``arguments`` a kernel argument's key to its hints, ``inductions`` a loop's induction
    variable to its (lower bound, step) keys, ``carried`` a loop-carried value (iter arg or loop result) to its
    (initial, yielded) keys."""

    defs: Mapping[str, GlirOp]
    operands: Callable[[GlirOp], list[str]]
    arguments: Mapping[str, Mapping[str, int]]
    inductions: Mapping[str, tuple[str, str]]
    carried: Mapping[str, tuple[str, str]]

    def __post_init__(self) -> None:
        self.memo: dict[str, AxisInfo] = {}

    def of(self, key: str, rank: int = 1) -> AxisInfo:
        """The facts of value ``key`` (``rank`` where the value's type is not on a line the analysis reads)."""
        if key in self.memo:
            return self.memo[key]
        if key in self.carried:
            init, yielded = self.carried[key]
            first = self.of(init, rank)
            self.memo[key] = first        # one round of the loop's fixpoint: the yielded value from the first
            out = join(first, self.of(yielded, first.rank))
        else:
            self.memo[key] = unknown(rank)    # a cycle the rules do not follow proves nothing
            out = self._compute(key, rank)
        self.memo[key] = out
        return out

    def _compute(self, key: str, rank: int) -> AxisInfo:
        if key in self.arguments:
            return _hinted(unknown(rank), self.arguments[key])
        if key in self.inductions:
            lb, step = (self.of(k) for k in self.inductions[key])
            return AxisInfo((1,), (_gcd(lb.divisibility[0], step.divisibility[0]),), (1,))
        op = self.defs.get(key)
        if op is None:
            return unknown(rank)
        shape = op.types[-1].shape if op.types else (1,)
        out = self._rule(op, shape or (1,))
        return _hinted(out, hints(op.text))

    def _rule(self, op: GlirOp, shape: tuple[int, ...]) -> AxisInfo:
        name, rank = op.name, len(shape)
        args = self.operands(op)
        if name == "tt.make_range":
            start, end = op.int_attr("start") or 0, op.int_attr("end") or 0
            return AxisInfo((end - start,), (_pow2(start),), (1,))
        if name == "arith.constant":
            m = _INT_CONSTANT.search(op.text)
            if m is None:
                return unknown(rank)
            text = m.group(1) or m.group(2)
            value = {"true": 1, "false": 0}.get(text, None)
            value = int(text) if value is None else value
            return AxisInfo((1,) * rank, (_pow2(value),) * rank,
                            tuple(shape) if op.types else (1,), value)
        if name == "tt.get_program_id" or not args:
            return unknown(rank)
        if name == "tt.splat":
            src = self.of(args[0])
            return AxisInfo((1,) * rank, (src.divisibility[0],) * rank, tuple(shape), src.constant)
        if name in _CASTS:
            return self.of(args[0], rank)
        if name == "tt.expand_dims":
            src = self.of(args[0], rank - 1)
            axis = op.int_attr("axis") or 0
            new = (_pow2(src.constant) if src.constant is not None else
                   _gcd(*(1 if c > 1 else d for c, d in zip(src.contiguity, src.divisibility))))
            return AxisInfo(src.contiguity[:axis] + (1,) + src.contiguity[axis:],
                            src.divisibility[:axis] + (new,) + src.divisibility[axis:],
                            src.constancy[:axis] + (1,) + src.constancy[axis:], src.constant)
        if name == "tt.broadcast":
            src = self.of(args[0], rank)
            before = op.types[0].shape if op.types else shape
            if len(before) != rank or src.rank != rank:
                return unknown(rank)
            return AxisInfo(tuple(1 if before[d] == 1 else src.contiguity[d] for d in range(rank)),
                            src.divisibility,
                            tuple(shape[d] if before[d] == 1 else src.constancy[d] for d in range(rank)),
                            src.constant)
        if name == "tt.load":
            ptr = self.of(args[0], rank)
            mask = self.of(args[1], rank).constancy if len(args) > 1 else (0,) * rank
            return AxisInfo((1,) * rank, (1,) * rank, tuple(_gcd(p, m) for p, m in zip(ptr.constancy, mask)))
        if name == "arith.select" and len(args) == 3:
            cond, lhs, rhs = self.of(args[0], rank), self.of(args[1], rank), self.of(args[2], rank)
            if cond.constant is not None:
                return rhs if cond.constant == 0 else lhs
            if not (lhs.rank == rhs.rank == cond.rank == rank):
                return unknown(rank)
            return AxisInfo(tuple(_gcd(a, b, c) for a, b, c in zip(lhs.contiguity, rhs.contiguity, cond.constancy)),
                            join(lhs, rhs).divisibility,
                            tuple(_gcd(a, b, c) for a, b, c in zip(lhs.constancy, rhs.constancy, cond.constancy)))
        if len(args) < 2:
            return unknown(rank)
        lhs, rhs = self.of(args[0], rank), self.of(args[1], rank)
        if lhs.rank != rank or rhs.rank != rank:
            return unknown(rank)
        return _binary(op, lhs, rhs, shape)


def _binary(op: GlirOp, lhs: AxisInfo, rhs: AxisInfo, shape: tuple[int, ...]) -> AxisInfo:
    """The rules of the two-operand integer ops (see the module doc)."""
    name, rank = op.name, len(shape)
    dims = range(rank)
    lc, rc = lhs.constant, rhs.constant
    if name == "arith.cmpi":
        m = _PREDICATE.search(op.text)
        pred = m.group(1) if m else ""
        const = []
        for d in dims:
            hint = _gcd(lhs.constancy[d], rhs.constancy[d])
            if pred in ("sgt", "ugt", "sle", "ule") and lhs.constancy[d] == shape[d]:
                hint = max(hint, _gcd(rhs.contiguity[d], lhs.divisibility[d], rhs.divisibility[d]))
            elif pred in ("slt", "ult", "sge", "uge") and rhs.constancy[d] == shape[d]:
                hint = max(hint, _gcd(lhs.contiguity[d], lhs.divisibility[d], rhs.divisibility[d]))
            const.append(hint)
        return AxisInfo((1,) * rank, (1,) * rank, tuple(const))
    if name in _LOGICAL or name in _MIN_MAX:
        constancy = tuple(_gcd(a, b) for a, b in zip(lhs.constancy, rhs.constancy))
        if name in _LOGICAL:
            return AxisInfo((1,) * rank, (1,) * rank, constancy)
        j = join(lhs, rhs)
        return AxisInfo(j.contiguity, j.divisibility, constancy)
    if lc is not None and rc is not None:
        value = {"arith.addi": lc + rc, "arith.subi": lc - rc, "arith.muli": lc * rc}.get(name)
        if value is not None:
            return AxisInfo((1,) * rank, (_pow2(value),) * rank,
                            tuple(max(a, b) for a, b in zip(lhs.constancy, rhs.constancy)), value)
    if name in ("arith.addi", "arith.subi", "tt.addptr"):
        scale = 1
        if name == "tt.addptr":
            m = _POINTEE.search(op.text)
            scale = max(1, _BITS.get(m.group(1), 32) // 8) if m else 1
        if name == "arith.subi":
            contiguity = tuple(_gcd(lhs.contiguity[d], rhs.constancy[d]) for d in dims)
        else:
            contiguity = tuple(max(_gcd(lhs.constancy[d], rhs.contiguity[d]), _gcd(lhs.contiguity[d], rhs.constancy[d]))
                               for d in dims)
        return AxisInfo(contiguity,
                        tuple(_gcd(lhs.divisibility[d], min(rhs.divisibility[d] * scale, MAX_DIVISOR)) for d in dims),
                        tuple(_gcd(lhs.constancy[d], rhs.constancy[d]) for d in dims))
    if name == "arith.muli":
        contiguity = tuple(max(lhs.contiguity[d] if rc == 1 else 1, rhs.contiguity[d] if lc == 1 else 1)
                           for d in dims)
        div = tuple(min(MAX_DIVISOR, (1 if lhs.contiguity[d] > 1 and rc != 1 else lhs.divisibility[d])
                        * (1 if rhs.contiguity[d] > 1 and lc != 1 else rhs.divisibility[d])) for d in dims)
        return AxisInfo(contiguity, div, tuple(_gcd(lhs.constancy[d], rhs.constancy[d]) for d in dims))
    if name in ("arith.divsi", "arith.divui"):
        runs = []
        for d in dims:
            c = _gcd(lhs.constancy[d], rhs.constancy[d])
            if lhs.contiguity[d] == shape[d] and rhs.constancy[d] == shape[d]:
                c = max(c, _gcd(lhs.contiguity[d], lhs.divisibility[d], rhs.divisibility[d]))
            runs.append(c)
        div = tuple(lhs.divisibility[d] if lc == 0 or rc == 1 else
                    max(1, lhs.divisibility[d] // abs(rc)) if rc and abs(rc) & (abs(rc) - 1) == 0
                    and lhs.contiguity[d] == 1 else 1 for d in dims)
        return AxisInfo(tuple(lhs.contiguity[d] if rc == 1 else 1 for d in dims), div, tuple(runs))
    if name in ("arith.remsi", "arith.remui"):
        contiguity = tuple(_gcd(lhs.contiguity[d], lhs.divisibility[d], rhs.divisibility[d])
                           if lhs.contiguity[d] == shape[d] and rhs.constancy[d] == shape[d] else 1 for d in dims)
        div = tuple(_gcd(lhs.divisibility[d], rhs.divisibility[d]) if rhs.constancy[d] > 1 else 1 for d in dims)
        constancy = tuple(shape[d] if rc == 1 else _gcd(lhs.constancy[d], rhs.constancy[d]) for d in dims)
        return AxisInfo(contiguity, div, constancy)
    if name in ("arith.shli", "arith.shrui", "arith.shrsi"):
        shift = rc or 0
        lhs_div = tuple(1 if lhs.contiguity[d] > 1 and shift else lhs.divisibility[d] for d in dims)
        div = tuple(min(MAX_DIVISOR, x << shift) if name == "arith.shli" else max(1, x >> shift) for x in lhs_div)
        if name != "arith.shli" and rc is None:
            div = (1,) * rank
        return AxisInfo(tuple(lhs.contiguity[d] if rc == 0 else 1 for d in dims), div,
                        tuple(_gcd(lhs.constancy[d], rhs.constancy[d]) for d in dims))
    return unknown(rank)
