"""Multi-core kernels: the output tiles of a lowered Ascend program folded into one tile body that every AI
core runs for its share of the tiles (:class:`~.ir.TileLoop`, CATLASS's ``for (t = GetBlockIdx(); t < tiles;
t += GetBlockNum())`` with its block swizzle).

The program is written tile by tile; :func:`tile_groups` cuts its ops at the output tiles (each group ends
with the last store of one ``bm x bn`` tile of the result and the ``set_atomic_none`` after it), the lowering
lowers each group on its own (its flags start afresh, a ``PipeBarrier<PIPE_ALL>`` ends it) and
:func:`merge_tiles` folds the groups into one body:

* tiles fall into at most four classes (full, tail in M, tail in N, tail in both); within a class the tiles'
  statements are equal up to offsets, which must be affine in the tile coordinate ``(mi, ni)``;
* the classes' statement lists are aligned (:class:`difflib.SequenceMatcher` on the statements' kinds and
  buffers); a data statement only some classes have (a tail tile's ``InitConstValue``, the zero fill of a
  tail bias tile) is wrapped in a :class:`~.ir.Guard` on the tile's origin extents, while flags are kept
  unconditionally (a ``SetFlag`` / ``WaitFlag`` pair with nothing to order is harmless);
* a struct field that differs between classes becomes an expression of the tile's origin extents, the TLA
  ``get_tile_layout`` rule ``mActual = min(bm, M - mi * bm)`` (``nActual``; ``subM`` for a vector core's rows):
  affine when it is (``nValue = mActual``), else a :class:`~.ir.Pick` of the full and the tail value.

>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.ascend_gemm(M=100, N=72, K=40, bm=64, bn=64, bk=32)
>>> grid, groups = tile_groups(p)
>>> grid, [coord for coord, _ in groups]
(Grid(m=100, n=72, bm=64, bn=64), [(0, 0), (0, 1), (1, 0), (1, 1)])
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, fields, is_dataclass, replace
from itertools import combinations

import numpy as np

from ...errors import UnsupportedError
from ...infer.ops import Op
from ...infer.program import Program
from . import ir
from .ir import origin_extents
from .scopes import GM, L0C, UB

__all__ = ["Grid", "tile_groups", "merge_tiles"]


@dataclass(frozen=True)
class Grid:
    """The output tiles: an ``m x n`` result in ``bm x bn`` tiles."""

    m: int
    n: int
    bm: int
    bn: int

    @property
    def shape(self) -> tuple[int, int]:
        return -(-self.m // self.bm), -(-self.n // self.bn)

    def cls(self, tile: tuple[int, int]) -> tuple[bool, bool]:
        """Whether tile ``(mi, ni)`` is a tail in M, in N.

        >>> Grid(100, 72, 64, 64).cls((1, 0))
        (True, False)
        """
        mt, nt = self.shape
        return (tile[0] == mt - 1 and self.m % self.bm != 0, tile[1] == nt - 1 and self.n % self.bn != 0)

    def extents(self, cls: tuple[bool, bool]) -> dict[str, int]:
        """``mActual`` / ``nActual`` of the tiles of a class (the origin shape of the tile).

        >>> Grid(100, 72, 64, 64).extents((True, True))
        {'mActual': 36, 'nActual': 8}
        """
        mt, nt = self.shape
        return dict(zip(("mActual", "nActual"), origin_extents(self.m, self.n, self.bm, self.bn,
                                                               mt - 1 if cls[0] else 0, nt - 1 if cls[1] else 0)))


def _store(p: Program, op: Op):
    """``(GM tensor, tile start, tile extents)`` of an op storing an output tile, else ``None``."""
    a = op.args
    if op.kind not in ("copy", "dual_copy") or "src" not in a or "dst" not in a:
        return None
    path = (p.buffers[a["src"]].scope, p.buffers[a["dst"]].scope)
    if op.kind == "copy" and path == (L0C, GM):
        return a["dst"], tuple(a["dst_region"][0]), tuple(a["src_region"][1])
    if op.kind == "dual_copy" and path == (UB, GM):
        return a["dst"], tuple(a["dst_region"][0]), tuple(a["dst_region"][1])
    return None


def tile_groups(p: Program) -> tuple[Grid, list[tuple[tuple[int, int], list[Op]]]] | None:
    """The program's ops cut at its output tiles, as ``(Grid, [((mi, ni), ops)])``; ``None`` when the stores
    do not tile one 2-D GM tensor, each tile stored by one contiguous run of ops."""
    ops = list(p.ops)
    stores = [(i, s) for i, op in enumerate(ops) if (s := _store(p, op)) is not None]
    if not stores:
        return None
    dst, _, ext = stores[0][1]
    shape = p.shape_of(dst)
    if len(shape) != 2 or len(ext) != 2:
        return None
    grid = Grid(shape[0], shape[1], ext[0], ext[1])
    groups, start = [], 0
    for k, (i, (name, at, e)) in enumerate(stores):
        if name != dst or tuple(e) != tuple(ext) or at[0] % ext[0] or at[1] % ext[1]:
            return None
        if k + 1 < len(stores) and stores[k + 1][1][1] == at:
            continue
        end = i + 1
        while end < len(ops) and ops[end].kind == "set_atomic" and ops[end].args["mode"] == "none":
            end += 1
        if k + 1 == len(stores):
            end = len(ops)
        groups.append(((at[0] // ext[0], at[1] // ext[1]), ops[start:end]))
        start = end
    mt, nt = grid.shape
    coords = [c for c, _ in groups]
    if sorted(coords) != [(i, j) for i in range(mt) for j in range(nt)]:
        return None
    return grid, groups


# ---- folding the tiles into one body -------------------------------------------------------------------

def _key(s) -> tuple:
    """What must agree for two statements of different tiles to be the same statement of the tile body."""
    if isinstance(s, ir.For):
        return ("For", s.var, s.extent)
    if isinstance(s, (ir.SetFlag, ir.WaitFlag)):
        return (type(s).__name__, s.src, s.dst, s.event_id)
    if isinstance(s, ir.VecOp):
        return ("VecOp", s.op, s.dst, tuple(b for b, _ in s.srcs))
    if isinstance(s, ir.WORK):
        return (type(s).__name__,) + tuple(getattr(s, f, None) for f in ("dst", "src", "c", "a", "b"))
    return (type(s).__name__, s)


def _skeleton(body) -> tuple:
    return tuple((_key(s), _skeleton(s.body)) if isinstance(s, ir.For) else _key(s) for s in body)


def merge_tiles(lists: dict[tuple[int, int], list], grid: Grid, vector: bool = False) -> list:
    """One statement list for every tile of ``grid`` from each tile's own list (see the module doc);
    ``vector``: the lists are a vector core's (its struct fields may also follow ``subM``)."""
    by_cls: dict[tuple[bool, bool], list] = {}
    for t in sorted(lists):
        by_cls.setdefault(grid.cls(t), []).append(t)
    for tiles in by_cls.values():
        want = _skeleton(lists[tiles[0]])
        for t in tiles[1:]:
            if _skeleton(lists[t]) != want:
                raise UnsupportedError(f"tiles {tiles[0]} and {t} of one class lower to different statements; "
                                       f"they cannot share a tile loop")
    return _merge(lists, grid, by_cls, vector)


def _align(lists, by_cls) -> list[dict]:
    """Slots ``{class: index}`` aligning the classes' statement lists."""
    classes = sorted(by_cls, key=lambda c: -len(lists[by_cls[c][0]]))
    base = classes[0]
    slots = [{base: i} for i in range(len(lists[by_cls[base][0]]))]
    for c in classes[1:]:
        rep = lists[by_cls[c][0]]
        keys = [_key(lists[by_cls[next(iter(s))][0]][next(iter(s.values()))]) for s in slots]
        matcher = difflib.SequenceMatcher(None, keys, [_key(s) for s in rep], autojunk=False)
        out: list[dict] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    out.append({**slots[i1 + k], c: j1 + k})
                continue
            out += slots[i1:i2]
            out += [{c: j} for j in range(j1, j2)]
        slots = out
    return slots


def _merge(lists, grid: Grid, by_cls, vector: bool) -> list:
    present = set(by_cls)
    out = []
    for slot in _align(lists, by_cls):
        stmts = {t: lists[t][slot[c]] for c in slot for t in by_cls[c]}
        first = next(iter(stmts.values()))
        if isinstance(first, ir.For):
            sub = {t: list(s.body) for t, s in stmts.items()}
            body = _merge(sub, grid, {c: by_cls[c] for c in slot}, vector)
            stmt: object = replace(first, body=tuple(body))
        else:
            stmt = _unify(stmts, grid, vector)
        if set(slot) != present and isinstance(stmt, ir.WORK + (ir.For,)):
            stmt = ir.Guard(_condition(set(slot), present, grid), (stmt,))
        out.append(stmt)
    return out


def _condition(want: set, present: set, grid: Grid) -> tuple:
    """A :class:`~.ir.Guard` condition true on the classes ``want`` and false on the rest of ``present``."""
    m, n = ("mActual", grid.bm, True), ("nActual", grid.bn, True)
    for cond, test in ((((m,),), lambda c: c[0]), (((n,),), lambda c: c[1]),
                       (((m,), (n,)), lambda c: c[0] or c[1])):
        if {c for c in present if test(c)} == want:
            return cond
    return tuple((("mActual", grid.bm, c[0]), ("nActual", grid.bn, c[1])) for c in sorted(want))


def _unify(stmts: dict, grid: Grid, vector: bool):
    first = next(iter(stmts.values()))
    changes: dict = {}
    for name in ("src_offset", "dst_offset"):
        if hasattr(first, name):
            changes[name] = _fit_offset({t: getattr(s, name) for t, s in stmts.items()}, first)
    if isinstance(first, ir.VecOp):
        changes["srcs"] = tuple((b, _fit_offset({t: s.srcs[i][1] for t, s in stmts.items()}, first))
                                for i, (b, _) in enumerate(first.srcs))
        changes["count"] = _fit_param({t: s.count for t, s in stmts.items()}, grid, vector, first)
        _same({t: s.scalar for t, s in stmts.items()}, first, "scalar")
    params = getattr(first, "params", None)
    if params is not None and is_dataclass(params) and not isinstance(params, type):
        new = {}
        for f in fields(params):
            values = {t: getattr(s.params, f.name) for t, s in stmts.items()}
            v = next(iter(values.values()))
            if isinstance(v, (int, ir.PerCore)) and not isinstance(v, bool):
                new[f.name] = _fit_param(values, grid, vector, first)
            else:
                _same(values, first, f.name)
        changes["params"] = replace(params, **new)
    return replace(first, **changes) if changes else first


def _same(values: dict, stmt, what: str) -> None:
    if len(set(values.values())) > 1:
        raise UnsupportedError(f"{ir_label(stmt)}: {what} differs between output tiles ({sorted(set(values.values()))}"
                               f"); the tiles cannot share a tile loop")


def ir_label(stmt) -> str:
    return getattr(stmt, "label", "") or type(stmt).__name__


def _fit_offset(values: dict, stmt):
    """``base + a * mi + b * ni`` (plus the loop terms every tile shares) through every tile's offset."""
    lin = {t: ir.linear(v) for t, v in values.items()}
    terms = {t: terms for t, (_, terms) in lin.items()}
    if len(set(terms.values())) > 1:
        raise UnsupportedError(f"{ir_label(stmt)}: an offset moves with different loops in different tiles")
    points = [({"mi": mi, "ni": ni}, b) for (mi, ni), (b, _) in lin.items()]
    names = tuple(v for v in ("mi", "ni") if len({e[v] for e, _ in points}) > 1)
    coef = _affine(points, names)
    if coef is None:
        raise UnsupportedError(f"{ir_label(stmt)}: the offsets {sorted(b for _, b in points)} of its tiles are not "
                               f"affine in the tile coordinate (mi, ni)")
    return ir.offset(coef[0], list(next(iter(terms.values()))) + list(zip(names, coef[1:])))


def _fit_param(values: dict, grid: Grid, vector: bool, stmt):
    """A struct field over the tile classes (and vector cores): a constant, affine in the origin extents, or a
    :class:`~.ir.Pick`."""
    points: dict[tuple, tuple[dict, int]] = {}
    for t, v in values.items():
        cls = grid.cls(t)
        env = grid.extents(cls)
        for sub in ((0, 1) if vector else (None,)):
            e = dict(env)
            if sub is not None:
                h = _half(grid)
                e["subM"] = min(h, max(env["mActual"] - sub * h, 0))
            x = v.values[sub or 0] if isinstance(v, ir.PerCore) else v
            k = (cls, sub)
            if k in points and points[k][1] != x:
                raise UnsupportedError(f"{ir_label(stmt)}: a field takes {points[k][1]} and {x} in tiles of one class")
            points[k] = (e, int(x))
    names = ["subM", "mActual", "nActual"] if vector else ["mActual", "nActual"]
    return _fit(list(points.values()), names, grid, stmt)


def _half(grid: Grid) -> int:
    return grid.bm // 2


def _fit(points: list[tuple[dict, int]], names: list[str], grid: Grid, stmt):
    values = {v for _, v in points}
    if len(values) == 1:
        return values.pop()
    for k in (1, 2):
        for combo in combinations(names, k):
            got = _solve(points, combo)
            if got is not None:
                return got
    picks = []
    for var, full in (("mActual", grid.bm), ("nActual", grid.bn)):
        if len({e[var] for e, _ in points}) > 1:
            rest = [n for n in names if n != var]
            picks.append(ir.Pick(var, full, _fit([p for p in points if p[0][var] == full], rest, grid, stmt),
                                 _fit([p for p in points if p[0][var] < full], rest, grid, stmt)))
    if picks:  # split on the extent the value depends on: the pick with the fewest branches
        return min(picks, key=lambda x: repr(x).count("Pick("))
    raise UnsupportedError(f"{ir_label(stmt)}: a field takes values {sorted(values)} that no tile extent explains")


def _solve(points: list[tuple[dict, int]], combo: tuple[str, ...]):
    """Integer ``c + sum(a_v * v)`` (every ``a_v`` non-zero) through every point, or ``None``."""
    coef = _affine(points, combo)
    if coef is None or any(a == 0 for a in coef[1:]):
        return None
    return ir.offset(coef[0], list(zip(combo, coef[1:])))


def _affine(points: list[tuple[dict, int]], combo: tuple[str, ...]) -> list[int] | None:
    """Integer ``[c, a_1, ...]`` with ``c + sum(a_v * v)`` through every point, or ``None``."""
    x = np.array([[1] + [e[v] for v in combo] for e, _ in points], dtype=np.float64)
    y = np.array([v for _, v in points], dtype=np.float64)
    sol, *_ = np.linalg.lstsq(x, y, rcond=None)
    coef = [int(round(c)) for c in sol]
    if any(abs(c - r) > 1e-6 for c, r in zip(sol, coef)):
        return None
    if any(coef[0] + sum(a * e[v] for a, v in zip(coef[1:], combo)) != val for e, val in points):
        return None
    return coef
