"""The op-rule registry: each op kind has rules per target family; the engine knows no target.

A rule is a pure function ``fn(op, ctx, level) -> RuleResult`` (``level``: :data:`STRICT`, :data:`COMMON` or
:data:`FREE`): it reads the solver state through the read-only :class:`RuleContext` and returns the layouts
it proposes, the op's loop layout and guard; the engine commits them.  (A plain ``{buffer: Layout}`` mapping
is accepted as the layouts alone.)  Target families are glob patterns over the target string (``"sm_*"``,
``"ascend"``, ``"*"``); the most specific match wins.

>>> register_rule("noop_demo", "*", lambda op, ctx, level: RuleResult())
>>> get_rule("noop_demo", "sm_80")(None, None, STRICT).layouts
{}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import Any

from .. import deferred
from ..errors import UnsupportedError
from ..scopes import FRAGMENT, REDUCER
from .guards import Predicate

STRICT, COMMON, FREE = 2, 1, 0
LEVEL_NAMES = {STRICT: "strict", COMMON: "common", FREE: "free"}


@dataclass(frozen=True)
class RuleResult:
    """What a rule proposes for one op: ``layouts`` (buffer -> Layout), the op's ``loop`` layout (loop ops),
    ``loops`` of other ops it solved (a region's inner ops), and ``predicate``: the guard the loop runs under
    (partial tiles, replicas) or a note on the op (reductions over idle threads), a
    :class:`~layoutkit.infer.guards.Predicate`."""

    layouts: Mapping[str, Any] = field(default_factory=dict)
    loop: Any = None
    loops: Mapping[str, Any] = field(default_factory=dict)
    predicate: Predicate | None = None


EMPTY = RuleResult()
"""The result of a rule that proposes nothing."""


_MISSING = object()


class ProgramView:
    """Read-only lookups of a solver state's program by buffer name (shared by the solver's context and the
    read-only :class:`RuleContext` rules see)."""

    __slots__ = ()
    program: Any

    def buffer(self, name: str):
        return self.program.buffers[name]

    def shape(self, name: str) -> tuple[int, ...]:
        return self.program.shape_of(name)

    def is_fragment(self, name: str) -> bool:
        return self.program.buffers[name].scope == FRAGMENT

    def is_reducer(self, name: str) -> bool:
        return self.program.buffers[name].scope == REDUCER

    def needs_layout(self, name: str) -> bool:
        """A register buffer inference must lay out: a fragment or a reducer."""
        return self.program.buffers[name].scope in (FRAGMENT, REDUCER)


class RuleContext(ProgramView):
    """The solver state a rule sees, read-only: the program, target and thread range, the layouts and loop
    layouts so far, whether fills plan layouts (``fallback``), and :meth:`once`, a per-solve memo."""

    __slots__ = ("program", "target", "rng", "layouts", "loops", "fallback", "_memo")

    def __init__(self, program, rng: tuple[int, int], layouts: Mapping, loops: Mapping, fallback: bool, memo: dict):
        self.program = program
        self.target = program.target
        self.rng = rng
        self.layouts = MappingProxyType(layouts)
        self.loops = MappingProxyType(loops)
        self.fallback = fallback
        self._memo = memo

    def once(self, rule: Callable, key, compute: Callable[[], Any]):
        """``compute()`` the first time ``rule`` asks for ``key`` in this solve, the same value after
        (for results of a whole program that no cache can key, e.g. a region's sub-solve)."""
        full = (rule, key)
        hit = self._memo.get(full, _MISSING)
        if hit is _MISSING:
            hit = self._memo[full] = compute()
        return hit


def op_range(op, rng: tuple[int, int]) -> tuple[int, int]:
    """The ``(min, extent)`` of the threads ``op`` runs on: its ``thread_range`` (recorded inside
    :meth:`~layoutkit.infer.Program.thread_bounds`), else the program's ``rng``.

    >>> from layoutkit.infer.ops import Op
    >>> op_range(Op("fill", 0, {"thread_range": [128, 128]}), (0, 256)), op_range(Op("fill", 1), (0, 256))
    ((128, 128), (0, 256))
    """
    bounds = op.args.get("thread_range") if op.args else None
    return rng if bounds is None else (int(bounds[0]), int(bounds[1]))


Rule = Callable[..., RuleResult]
_RULES: dict[str, dict[str, Rule]] = {}
_LOCAL: dict[str, dict[str, bool]] = {}
_MERGES: dict[str, Callable] = {}


def register_rule(op_kind: str, target_family: str, fn: Rule, *, local: bool = False) -> None:
    """Register ``fn`` as the layout rule of ``op_kind`` on targets matching ``target_family``.

    ``local``: the rule reads only the layouts of the op's own buffers, the op's own loop layout, the
    level, the thread range and ``fallback`` (never :meth:`RuleContext.once` or another op's loop), and
    proposes layouts only for the op's own buffers and no other op's loop (``RuleResult.loops`` stays
    empty).  Free mode may then prove that every root of a connected component ends in the same layouts
    and skip the attempts it would repeat (:mod:`.free`); a rule registered without the flag is always
    run from every root."""
    _RULES.setdefault(op_kind, {})[target_family] = fn
    _LOCAL.setdefault(op_kind, {})[target_family] = local


def _best_pattern(table: dict, target: str) -> str | None:
    hits = [(pat.count("*"), -len(pat), pat) for pat in table if fnmatchcase(target, pat)]
    return min(hits)[2] if hits else None


def _best(table: dict, target: str):
    pat = _best_pattern(table, target)
    return None if pat is None else table[pat]


def get_rule(op_kind: str, target: str) -> Rule:
    """The rule for ``op_kind`` on ``target`` (most specific family first)."""
    deferred.load(target)
    fn = _best(_RULES.get(op_kind, {}), target)
    if fn is None:
        raise UnsupportedError(f"no layout rule for op kind {op_kind!r} on target {target!r}")
    return fn


def rule_is_local(op_kind: str, target: str) -> bool:
    """Whether the rule :func:`get_rule` picks for ``op_kind`` on ``target`` was registered ``local``.

    >>> rule_is_local("parallel", "sm_80"), rule_is_local("noop_demo", "sm_80")
    (True, False)
    """
    table = _LOCAL.get(op_kind, {})
    pat = _best_pattern(table, target)
    return pat is not None and table[pat]


def register_merge(target_family: str, fn: Callable) -> None:
    """``fn(old, new, dtype) -> Layout | None``: how a target merges two plain layouts of one buffer
    (NV: two bank swizzles keep the smaller granularity)."""
    _MERGES[target_family] = fn


def get_merge(target: str) -> Callable | None:
    deferred.load(target)
    return _best(_MERGES, target)
