"""The op-rule registry: each op kind has rules per target family; the engine knows no target.

A rule is ``fn(op, ctx, level) -> {buffer name: Layout}`` (``level``: :data:`STRICT`, :data:`COMMON`
or :data:`FREE`); loop rules also record the loop layout in ``ctx``.  Target families are glob
patterns over the target string (``"sm_*"``, ``"ascend"``, ``"*"``); the most specific match wins.

>>> register_rule("noop_demo", "*", lambda op, ctx, level: {})
>>> get_rule("noop_demo", "sm_80")(None, None, STRICT)
{}
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase

from ..errors import UnsupportedError

STRICT, COMMON, FREE = 2, 1, 0
LEVEL_NAMES = {STRICT: "strict", COMMON: "common", FREE: "free"}

Rule = Callable[..., dict]
_RULES: dict[str, dict[str, Rule]] = {}
_MERGES: dict[str, Callable] = {}


def register_rule(op_kind: str, target_family: str, fn: Rule) -> None:
    """Register ``fn`` as the layout rule of ``op_kind`` on targets matching ``target_family``."""
    _RULES.setdefault(op_kind, {})[target_family] = fn


def _best(table: dict, target: str):
    hits = [(pat.count("*"), -len(pat), pat) for pat in table if fnmatchcase(target, pat)]
    return table[min(hits)[2]] if hits else None


def get_rule(op_kind: str, target: str) -> Rule:
    """The rule for ``op_kind`` on ``target`` (most specific family first)."""
    fn = _best(_RULES.get(op_kind, {}), target)
    if fn is None:
        raise UnsupportedError(f"no layout rule for op kind {op_kind!r} on target {target!r}")
    return fn


def register_merge(target_family: str, fn: Callable) -> None:
    """``fn(old, new, dtype) -> Layout | None``: how a target merges two plain layouts of one buffer
    (NV: two bank swizzles keep the smaller granularity)."""
    _MERGES[target_family] = fn


def get_merge(target: str) -> Callable | None:
    return _best(_MERGES, target)
