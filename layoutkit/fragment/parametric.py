"""Parametric fragments: a concrete fragment *atom* repeated over symbolic extents (``M`` rows with
``M % 16 == 0``), with proofs that hold for every value of the symbols, or a refuting assignment.

Each input dim ``d`` has the atom's extent ``a_d`` and one or more digits above it, ``(extent,
thread_stride, index_stride)``, lowest first (the quotient ``q = x_d // a_d`` split
colexicographically, as in :class:`~layoutkit.algebra.parametric.ParametricLayout`):

    ``thread(x, rep) = atom.thread(x % a, rep) + sum digit * thread_stride``
    ``index(x)       = atom.index(x % a)       + sum digit * index_stride``

(``atom.index`` is the atom's register index, row-major over its ``output_shape``).  A repeat on the
register index is TileLang's ``Fragment.repeat``; one on the thread is ``repeat_on_thread``; a digit
with both strides zero broadcasts.

Proofs reduce to two mixed-radix numbers (:func:`~layoutkit.algebra.forall.radix_conditions`): the
thread (the atom's thread, extent ``atom.thread_extent``, and every digit with a thread stride) and
the register index (the atom's index, extent ``atom.local_size``, and the digits that only move the
index).  Injective -- one element per (thread, register) slot, replicas included -- when the atom is
and both numbers are injective and every broadcast digit has extent 1; bijective onto ``[0,
thread_extent) x [0, local_size)`` when both are exact and the atom fills its own box.

>>> import layoutkit as lk
>>> from layoutkit.algebra.parametric import Symbol
>>> M = Symbol("M", lo=16, multiple=16)
>>> atom = lk.Fragment([16, 8], forward_thread_fn=lambda i, j: i % 8 * 4 + j // 2,
...                    forward_index_fn=lambda i, j: i // 8 * 2 + j % 2)
>>> F = ParametricFragment((M,), atom, (M.sym / 16, 1), (0, 0), (4, 0))   # M/16 row tiles in registers
>>> bool(F.prove_bijective()), F.apply((17, 3), {"M": 32}), F.local_size()
(True, (5, 5), M/4)
>>> F.inverse(5, 5, {"M": 32})
((17, 3), 0)
>>> bad = ParametricFragment((M,), atom, (M.sym / 16, 1), (0, 0), (2, 0))  # index stride 2 < 4 slots
>>> p = bad.prove_injective()
>>> bool(p), p.witness["values"], p.witness["collision"]
(False, {'M': 32}, (((8, 0), 0), ((16, 0), 0), (0, 2)))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sympy

from ..algebra.forall import (
    Symbol,
    always_one,
    bind_symbols,
    bound_int,
    bounded_expand,
    check_extents,
    check_known,
    check_parametric,
    check_span,
    enumeration_budget,
    extent_expr,
    first_collision,
    first_missing,
    prove_for_all,
    radix_conditions,
    search_assignment,
    sort_digits,
    symbols_of,
)
from ..algebra.nodes import MAX_EXTENT, substitute
from ..algebra.parametric import digit_values
from ..algebra.proof import Proof
from ..algebra.shapes import check_table, placeholder, sequence_arg
from ..errors import ShapeError, UnsupportedError
from .fragment import Fragment

FragmentDigit = tuple[sympy.Expr, sympy.Expr, sympy.Expr]  # (extent, thread stride, index stride)


def _dim(repeat: Any, thread: Any, index: Any, d: int) -> tuple[FragmentDigit, ...]:
    group = [isinstance(x, (tuple, list)) for x in (repeat, thread, index)]
    if any(group):
        if not all(group) or not len(repeat) == len(thread) == len(index):
            raise ShapeError(f"dim {d}: expected as many thread and index strides as repeats; found "
                             f"{repeat!r}, {thread!r}, {index!r}")
        return tuple((extent_expr(r), extent_expr(t), extent_expr(i)) for r, t, i in zip(repeat, thread, index))
    return ((extent_expr(repeat), extent_expr(thread), extent_expr(index)),)


class ParametricFragment:
    """See the module docstring.  ``symbols`` are the :class:`Symbol` objects the extents and strides
    use; :meth:`tiled` collects them from its arguments."""

    def __init__(self, symbols: Sequence[Symbol], atom: Fragment, repeats: Sequence[Any],
                 thread_strides: Sequence[Any], index_strides: Sequence[Any]):
        if not isinstance(atom, Fragment):
            raise ShapeError(f"the atom must be a concrete Fragment; found {type(atom).__name__}")
        if atom.thread_range is not None:  # repeats on the thread would move the threads out of the range
            raise ShapeError(f"the atom is bound to the thread range {atom.thread_range}; repeat an unbound atom "
                             "and bind the range on the concrete fragment (bind(values).bind_thread_range(...))")
        n = len(atom.input_shape)
        repeats = sequence_arg(repeats, "ParametricFragment repeats")
        thread_strides = sequence_arg(thread_strides, "ParametricFragment thread strides")
        index_strides = sequence_arg(index_strides, "ParametricFragment index strides")
        if not len(repeats) == len(thread_strides) == len(index_strides) == n:
            raise ShapeError(f"expected {n} repeats, thread strides and index strides (one per atom dim); found "
                             f"{len(repeats)}, {len(thread_strides)}, {len(index_strides)}")
        self.symbols = sequence_arg(symbols, "ParametricFragment symbols")
        if any(not isinstance(s, Symbol) for s in self.symbols):
            raise ShapeError(f"ParametricFragment symbols must be Symbols; found {self.symbols!r:.80}")
        self.atom = atom
        self.digits = tuple(_dim(*args, d) for d, args in enumerate(zip(repeats, thread_strides, index_strides)))
        check_known([x for dd in self.digits for dig in dd for x in dig], self.symbols)
        check_parametric(sum(len(dd) for dd in self.digits), self.symbols, "ParametricFragment")
        check_extents([r for dd in self.digits for r, _, _ in dd], self.symbols, "ParametricFragment")
        self._proofs: dict[str, Proof] = {}  # the fragment never changes: each proof is decided once

    @classmethod
    def tiled(cls, atom: Fragment, repeats: Sequence[Any], thread_strides: Sequence[Any],
              index_strides: Sequence[Any]) -> ParametricFragment:
        """``atom`` repeated ``repeats[d]`` times along dim ``d``, each repeat moving the thread by
        ``thread_strides[d]`` and the register index by ``index_strides[d]`` (tuples: several digits)."""
        return cls(symbols_of(repeats, thread_strides, index_strides), atom, repeats, thread_strides, index_strides)

    def _key(self) -> tuple[object, ...]:
        return (self.symbols, self.atom, self.digits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParametricFragment) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        dims = ", ".join("(" + ", ".join(f"{e}:t{t}:i{i}" for e, t, i in dd) + ")" for dd in self.digits)
        names = [s.name for s in self.symbols]
        return f"ParametricFragment(atom {self.atom.input_shape}, digits {dims}; symbols {names})"

    # ---- sizes ------------------------------------------------------------------------------------
    def input_shape(self) -> tuple[sympy.Expr, ...]:
        """The input extents, polynomials in the symbols."""
        return tuple(bounded_expand(a * sympy.Mul(*[e for e, _, _ in dd]), "ParametricFragment.input_shape")
                     for a, dd in zip(self.atom.input_shape, self.digits))

    def _span(self, atom_extent: int, which: int) -> sympy.Expr:
        return bounded_expand(atom_extent + sum(((dig[0] - 1) * dig[which] for dd in self.digits for dig in dd),
                                                sympy.Integer(0)), "ParametricFragment span")

    def thread_extent(self) -> sympy.Expr:
        """``max(thread) + 1``, a polynomial in the symbols (strides are taken as non-negative)."""
        return self._span(self.atom.thread_extent, 1)

    def local_size(self) -> sympy.Expr:
        """Registers per thread (``max(index) + 1``), a polynomial in the symbols."""
        return self._span(self.atom.local_size, 2)

    # ---- binding ----------------------------------------------------------------------------------
    def _bound(self, values: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[tuple[tuple[int, int, int], ...], ...]]:
        sub = bind_symbols(self.symbols, values)
        digits = tuple(tuple((bound_int(e, sub, "extent"), bound_int(t, sub, "thread stride"),
                              bound_int(i, sub, "index stride")) for e, t, i in dd) for dd in self.digits)
        if any(e < 1 for dd in digits for e, _, _ in dd):
            raise ShapeError(f"extents {digits} for {dict(values)}: expected every extent >= 1")
        flat = [dig for dd in digits for dig in dd]
        where = f"ParametricFragment at {dict(values)}"
        check_span([(e, t) for e, t, _ in flat], self.atom.thread_extent, f"{where}: threads")
        check_span([(e, i) for e, _, i in flat], self.atom.local_size, f"{where}: registers")
        shape = tuple(a * math.prod(e for e, _, _ in dd) for a, dd in zip(self.atom.input_shape, digits))
        return shape, digits

    def bind(self, values: Mapping[str, int]) -> Fragment:
        """The concrete :class:`Fragment` for one assignment of the symbols."""
        shape, digits = self._bound(values)
        xs = [placeholder(d, e) for d, e in enumerate(shape)]
        atom = self.atom
        low = {v: x % a for v, x, a in zip(atom.forward_vars, xs, atom.input_shape)}
        thread = substitute(atom.forward_thread, low)
        out = atom.output_shape
        index = sum((substitute(e, low) * math.prod(out[k + 1:]) for k, e in enumerate(atom.forward_index)), 0)
        for x, a, dd in zip(xs, atom.input_shape, digits):
            for v, (_, t, i) in zip(digit_values(x // a, [e for e, _, _ in dd]), dd):
                thread, index = thread + v * t, index + v * i
        return Fragment.from_exprs(shape, (index,), thread, atom.replicate_size)

    def tables(self, values: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """``(thread, index)`` for one assignment: shapes ``(replicate,) + input_shape`` and ``input_shape``."""
        shape, digits = self._bound(values)
        check_table(shape, f"ParametricFragment.tables for {dict(values)}", self.atom.replicate_size)
        reps = tuple(s // a for s, a in zip(shape, self.atom.input_shape))
        thread = np.tile(self.atom.thread_table(), (1,) + reps).astype(np.int64)
        index = np.tile(self.atom.index_table(), reps).astype(np.int64)
        for d, (a, dd) in enumerate(zip(self.atom.input_shape, digits)):
            q = np.arange(shape[d], dtype=np.int64) // a
            vals = digit_values(q, [e for e, _, _ in dd])
            form = [-1 if k == d else 1 for k in range(len(shape))]
            # a digit of extent 1 adds nothing: its strides (which may pass int64) are never multiplied
            thread = thread + sum((v * t for v, (e, t, _) in zip(vals, dd) if e > 1),
                                  np.zeros_like(q)).reshape([1] + form)
            index = index + sum((v * i for v, (e, _, i) in zip(vals, dd) if e > 1), np.zeros_like(q)).reshape(form)
        return thread, index

    def apply(self, coord: Sequence[int], values: Mapping[str, int], rep: int = 0) -> tuple[int, int]:
        """``(thread, index)`` of ``coord`` (replica ``rep``) with the symbols bound to ``values``."""
        shape, digits = self._bound(values)
        if len(coord) != len(shape) or any(not 0 <= int(c) < e for c, e in zip(coord, shape)):
            raise ShapeError(f"coordinate {tuple(coord)} is outside {shape}")
        if not 0 <= rep < self.atom.replicate_size:
            raise ShapeError(f"replica {rep} is outside [0, {self.atom.replicate_size})")
        low = tuple(int(c) % a for c, a in zip(coord, self.atom.input_shape))
        thread, index = int(self.atom.thread_table()[(rep,) + low]), int(self.atom.index_table()[low])
        for c, a, dd in zip(coord, self.atom.input_shape, digits):
            for v, (_, t, i) in zip(digit_values(int(c) // a, [e for e, _, _ in dd]), dd):
                thread, index = thread + v * t, index + v * i
        return thread, index

    # ---- proofs -------------------------------------------------------------------------------------
    def _radices(self) -> tuple[list[tuple[sympy.Expr, sympy.Expr]], list[tuple[sympy.Expr, sympy.Expr]],
                                list[sympy.Expr], list[sympy.Expr]]:
        """(thread digits, index digits, broadcast extents, digits moving both) of the proofs."""
        threads = [(extent_expr(self.atom.thread_extent), sympy.Integer(1))]
        indices = [(extent_expr(self.atom.local_size), sympy.Integer(1))]
        broadcast, both = [], []
        for dd in self.digits:
            for e, t, i in dd:
                if always_one(e, self.symbols):
                    continue
                if t != 0:
                    threads.append((e, t))
                    if i != 0:
                        both.append(i)
                elif i != 0:
                    indices.append((e, i))
                else:
                    broadcast.append(e)
        return sort_digits(threads, self.symbols), sort_digits(indices, self.symbols), broadcast, both

    def prove_injective(self) -> Proof:
        """At most one element per (thread, register) slot, replicas included, for every admissible
        assignment; or the refuting assignment with the colliding ``((coord, rep), (coord, rep), slot)``."""
        if "injective" not in self._proofs:
            self._proofs["injective"] = self._prove_injective()
        return self._proofs["injective"]

    def _prove_injective(self) -> Proof:
        claim = "injective for all values (one element per thread register)"
        atom = self.atom.prove_injective()
        if not atom:
            return Proof(claim, False, "enumerate", {"atom": atom.witness})
        threads, indices, broadcast, _ = self._radices()
        nonneg = radix_conditions(threads)[0] + radix_conditions(indices)[0] + [1 - e for e in broadcast]
        return self._forall(nonneg, [], claim)

    def prove_bijective(self) -> Proof:
        """``(coord, rep) -> (thread, index)`` is a bijection onto ``[0, thread_extent) x [0, local_size)``
        for every admissible assignment (every slot of every thread holds exactly one element)."""
        if "bijective" not in self._proofs:
            self._proofs["bijective"] = self._prove_bijective()
        return self._proofs["bijective"]

    def _prove_bijective(self) -> Proof:
        claim = "bijective for all values onto (thread, register) slots"
        if not self._fills(*self._atom_tables()):
            return Proof(claim, False, "enumerate", {"atom": "the atom does not fill its (thread, register) box"})
        threads, indices, broadcast, both = self._radices()
        zero = radix_conditions(threads)[1] + radix_conditions(indices)[1] + [e - 1 for e in broadcast] + both
        return self._forall([], zero, claim)

    def contains(self, other: ParametricFragment) -> Proof:
        """Every replica of every element of ``other`` lives on a thread that holds it here, for every
        admissible assignment: proved when both repeat their atoms the same way on the thread and this
        atom contains the other's; otherwise refuted by a searched assignment, or ``UnsupportedError``."""
        claim = "contains for all values"
        if not isinstance(other, ParametricFragment):
            raise ShapeError(f"contains expects a ParametricFragment; found {type(other).__name__}")
        symbols = tuple({s.name: s for s in self.symbols + other.symbols}.values())
        same = [[(e, t) for e, t, _ in dd] for dd in self.digits] == [[(e, t) for e, t, _ in dd]
                                                                      for dd in other.digits]
        # element-wise atom containment (a fully replicated atom "contains everything" only by TileLang's
        # convention, which no longer holds once repeats move the threads)
        elementwise = not self.atom.is_fully_replicated() or other.atom.thread_extent <= self.atom.thread_extent
        if same and elementwise and self.atom.input_shape == other.atom.input_shape:
            inner = self.atom.contains(other.atom)
            if inner:
                return Proof(claim, True, "structural", detail="same thread repeats; the atom contains the other's")

        def fails(values: dict[str, Any]) -> bool:
            try:
                big, small = self.bind(values), other.bind(values)
            except ShapeError:
                return False
            return not big.contains(small)

        def points(values: dict[str, Any]) -> int:
            try:
                return sum(math.prod(f._bound(values)[0]) * f.atom.replicate_size for f in (self, other))
            except ShapeError:  # an assignment one of them does not admit: fails() answers without a table
                return 0

        checked = enumeration_budget(fails, points, claim)
        found = search_assignment(symbols, lambda sub: checked({str(k): int(v) for k, v in sub.items()}),
                                  self._used() | other._used())
        if found is None:
            raise UnsupportedError(f"{claim}: not proved structurally and not refuted by the searched assignments")
        witness = dict(self.bind(found).contains(other.bind(found)).witness or {})
        return Proof(claim, False, "enumerate", {"values": found, **witness})

    def inverse(self, thread: int, index: int, values: Mapping[str, int]) -> tuple[tuple[int, ...], int]:
        """``(coord, rep)`` of the element in slot ``(thread, index)`` (a bijective fragment, proved for
        every value first)."""
        if not self.prove_bijective():
            raise UnsupportedError("inverse: the fragment is not proved bijective for all values")
        shape, digits = self._bound(values)
        t, i = int(thread), int(index)
        t_low, i_low, coord = t, i, []
        for a, dd in zip(self.atom.input_shape, digits):
            q, below = 0, 1
            for e, ts, xs in dd:
                v = (t // ts) % e if ts else (i // xs) % e if xs else 0
                t_low, i_low, q, below = t_low - v * ts, i_low - v * xs, q + v * below, below * e
            coord.append(q * a)
        atom_t, atom_i = self._atom_tables()
        hit = np.argwhere((atom_t == t_low) & (atom_i[None] == i_low))
        if not hit.size:
            raise ShapeError(f"inverse: slot ({t}, {i}) is outside the fragment for {dict(values)}")
        rep, low = int(hit[0][0]), [int(h) for h in hit[0][1:]]
        out = tuple(c + h for c, h in zip(coord, low))
        if any(c >= e for c, e in zip(out, shape)) or self.apply(out, values, rep) != (t, i):
            raise ShapeError(f"inverse: slot ({t}, {i}) is outside the fragment for {dict(values)}")
        return out, rep

    def _atom_tables(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.atom.thread_table()), np.asarray(self.atom.index_table())

    @staticmethod
    def _fills(thread: np.ndarray, index: np.ndarray) -> bool:
        """Whether the slots ``thread * L + index`` are exactly ``[0, T*L)``."""
        index = np.broadcast_to(index, thread.shape)
        width = int(index.max()) + 1
        if not _dense(thread, index) or (int(thread.max()) + 1) * width != thread.size:
            return False  # the box has more slots than elements (or a negative slot): some slot stays empty
        keys = np.sort((thread * width + index).reshape(-1))
        return bool(np.array_equal(keys, np.arange(keys.size)))

    def _forall(self, nonneg: list[sympy.Expr], zero: list[sympy.Expr], claim: str) -> Proof:
        return prove_for_all(self.symbols, nonneg, zero, claim, lambda values: self._fails(claim, values),
                             lambda values, method: self._refuted(claim, values, method),
                             lambda values: math.prod(self._bound(values)[0]) * self.atom.replicate_size,
                             self._used())

    def _used(self) -> set[sympy.Symbol]:
        """The sympy symbols the extents and strides use (the others change nothing)."""
        return {v for dd in self.digits for dig in dd for x in dig for v in x.free_symbols}

    def _keys(self, values: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(thread, index, key)`` with one key per slot: ``thread * L + index`` (``L`` the register
        width) while that fits an int64 and nothing is negative; else the slots' ranks (the same
        collisions, with no wrap-around)."""
        thread, index = self.tables(values)
        index = np.broadcast_to(index, thread.shape)
        if _dense(thread, index):
            return thread, index, thread * (int(index.max()) + 1) + index
        t = np.unique(thread, return_inverse=True)[1].reshape(thread.shape)
        i = np.unique(index, return_inverse=True)[1].reshape(thread.shape)
        return thread, index, t * (int(i.max()) + 1) + i

    def _fails(self, claim: str, values: dict[str, int]) -> bool:
        thread, index, keys = self._keys(values)
        if claim.startswith("bijective"):
            return not self._fills(thread, index)
        return first_collision(keys.reshape(-1)) is not None

    def _refuted(self, claim: str, values: dict[str, int], method: str) -> Proof:
        thread, index, keys = self._keys(values)
        witness: dict[str, Any] = {"values": values}
        pair = first_collision(keys.reshape(-1))
        if pair is not None:
            (ra, *xa), (rb, *xb) = (np.unravel_index(k, keys.shape) for k in pair)
            slot = (int(thread.reshape(-1)[pair[0]]), int(index.reshape(-1)[pair[0]]))
            witness["collision"] = ((tuple(int(v) for v in xa), int(ra)), (tuple(int(v) for v in xb), int(rb)), slot)
        elif _dense(thread, index):
            width = int(index.max()) + 1
            missing = first_missing(keys.reshape(-1), (int(thread.max()) + 1) * width)
            if missing is not None:
                witness["unreachable"] = divmod(missing, width)
        return Proof(claim, False, method, witness)


def _dense(thread: np.ndarray, index: np.ndarray) -> bool:
    """Every slot ``(thread, index)`` is non-negative and ``thread * L + index`` fits an int64."""
    if thread.size == 0 or int(thread.min()) < 0 or int(index.min()) < 0:
        return thread.size == 0
    return (int(thread.max()) + 1) * (int(index.max()) + 1) <= MAX_EXTENT


__all__ = ["ParametricFragment", "Symbol"]
