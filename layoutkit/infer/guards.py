"""Guards: the conditions a loop runs under (a partial tile, replicas that must not store twice), as values.

A rule returns its guard as a :class:`Predicate`, a conjunction of :class:`Guard` s.  A guard is an index
expression over ``_thread`` (the thread index in the block) and ``_index`` (the loop layout's register
index) with a relation to an integer, ``cond < bound`` or ``cond == bound``, so code generation and tests can
evaluate it; the few conditions with no such form (a slot that holds an element of a ragged loop, a
reduction padded with identities) are *notes*: text only.  The printed form is TileLang's, so
``InferenceResult.predicates`` (op -> text) reads as before.

>>> from layoutkit.algebra.nodes import Var
>>> t = Var("_thread", 128)
>>> g = Predicate.of(Guard.less(t, 100), Guard.equals(t % 32, 0))
>>> print(g)
_thread < 100 and _thread % 32 == 0
>>> g.holds(_thread=np.array([0, 31, 64, 100])).tolist()
[True, False, True, False]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..algebra.evaluate import compile_numpy
from ..algebra.nodes import Expr, free_vars
from ..errors import UnsupportedError

__all__ = ["Guard", "Predicate", "THREAD", "INDEX"]

THREAD, INDEX = "_thread", "_index"
"""The variables a guard may use: the thread index in the block and the loop layout's register index."""


@dataclass(frozen=True)
class Guard:
    """``cond < bound`` (``relation == "<"``), ``cond == bound`` (``"=="``) or a note (``cond is None``).

    ``text`` is the printed form; it defaults to ``f"{cond} {relation} {bound}"`` and is kept as given when a
    caller prints the condition before simplification (TileLang prints the raw sum)."""

    text: str
    cond: Expr | None = None
    relation: str | None = None
    bound: int | None = None

    @classmethod
    def less(cls, cond: Expr, bound: int, text: str | None = None) -> Guard:
        return cls(text or f"{cond} < {bound}", cond, "<", int(bound))

    @classmethod
    def equals(cls, cond: Expr, value: int, text: str | None = None) -> Guard:
        return cls(text or f"{cond} == {value}", cond, "==", int(value))

    @classmethod
    def note(cls, text: str) -> Guard:
        """A condition with no expression form (it reads as documentation of the op)."""
        return cls(text)

    @property
    def is_note(self) -> bool:
        return self.cond is None

    def holds(self, **values: np.ndarray | int) -> np.ndarray:
        """Where the guard is true, for arrays of ``_thread`` / ``_index`` values (broadcast).  A note cannot
        be evaluated and raises :class:`~layoutkit.errors.UnsupportedError`."""
        if self.cond is None:
            raise UnsupportedError(f"guard {self.text!r} is a note, not an expression: it cannot be evaluated")
        variables = tuple(sorted(free_vars(self.cond), key=lambda v: v.name))
        missing = sorted(v.name for v in variables if v.name not in values)
        if missing:
            raise UnsupportedError(f"guard {self.text!r} needs values for {missing}")
        (got,) = compile_numpy((self.cond,), variables)(*(np.asarray(values[v.name], np.int64) for v in variables))
        got = np.asarray(got)
        return got < self.bound if self.relation == "<" else got == self.bound

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Predicate:
    """A conjunction of guards (printed joined by ``" and "``); :meth:`of` drops ``None`` s and returns ``None``
    when nothing is left."""

    guards: tuple[Guard, ...]

    @classmethod
    def of(cls, *guards: Guard | Predicate | None) -> Predicate | None:
        flat: list[Guard] = []
        for g in guards:
            if isinstance(g, Predicate):
                flat += g.guards
            elif g is not None:
                flat.append(g)
        return cls(tuple(flat)) if flat else None

    @property
    def notes(self) -> tuple[Guard, ...]:
        return tuple(g for g in self.guards if g.is_note)

    def holds(self, **values: np.ndarray | int) -> np.ndarray:
        """Where every expression guard holds (notes are skipped: they constrain nothing evaluable)."""
        out: np.ndarray = np.asarray(True)
        for g in self.guards:
            if not g.is_note:
                out = out & g.holds(**values)
        return out

    def __str__(self) -> str:
        return " and ".join(g.text for g in self.guards)


def texts(predicates: Mapping[str, Predicate]) -> dict[str, str]:
    """op -> printed guard, the form ``InferenceResult.predicates`` keeps."""
    return {op: str(p) for op, p in predicates.items()}
