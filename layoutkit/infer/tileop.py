"""Tile ops as definitions: one :class:`TileOp` value per op kind holds everything inference knows of it (its
builders, the arguments its JSON form must carry and their types, its document checks and its target-free
layout rule), and an :class:`OpRegistry` finds them by kind.  A target adds its own rules for an op kind
(:meth:`OpRegistry.register_rule`, by target family: a glob such as ``"sm_*"``; the most specific family wins
over the definition's rule), and its own op definitions.

Laws: ``registry.get(d.kind) is d`` after ``registry.register(d)``; ``registry.rule(kind, target)`` is the
rule of the most specific family matching ``target`` (fewest wildcards, then longest pattern), else the
definition's rule; ``registry.builder(name)`` is the builder a definition lists under ``name``.

>>> from layoutkit.infer.rules import EMPTY
>>> def noop_rule(op, ctx, level):
...     return EMPTY
>>> def noop(program, buf):
...     return program.emit("noop", {"dst": buf.name})
>>> ops = OpRegistry(())
>>> ops.register(TileOp("noop", builders=(("noop", noop),), rule=noop_rule, local=True, required=("dst",)))
>>> ops.rule("noop", "sm_80") is noop_rule, ops.required_args("noop"), ops.builder("noop") is noop
(True, ('dst',), True)
>>> ops.register_rule("noop", "sm_*", lambda op, ctx, level: EMPTY)
>>> ops.rule("noop", "sm_80") is noop_rule, ops.rule("noop", "ascend") is noop_rule
(False, True)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import Any

from ..errors import UnsupportedError
from .rules import Rule

Builder = Callable[..., Any]
"""``builder(program, *args, **kwargs) -> Op``: a :class:`~layoutkit.infer.Program` method (the builder
appends the op through :meth:`~layoutkit.infer.Program.emit`)."""

DocumentCheck = Callable[[Mapping[str, Any], Mapping[str, tuple[int, ...]], str], None]
"""``check(args, shapes, path)``: raise :class:`~layoutkit.errors.ProgramFormatError` (naming ``path``) when the
op's JSON ``args`` do not fit the program (``shapes``: buffer name -> declared shape)."""

BUFFER_ARGS = ("A", "E", "B", "C", "src", "dst")
"""The argument names that name buffers, unless a definition says otherwise."""


@dataclass(frozen=True)
class TileOp:
    """One tile op: ``kind`` (the key of its ops, :attr:`~layoutkit.infer.Op.kind`); ``builders``: ``(method
    name, builder)`` pairs, the :class:`~layoutkit.infer.Program` methods that append it; ``rule``: its
    target-free layout rule (None: only targets lay it out), ``local`` when that rule reads only the op's own
    buffers and loop (free mode may then skip repeated attempts, see :mod:`.free`); ``required``: arguments
    every op of the kind carries (a JSON document without one is refused); ``argument_types``: ``(name,
    check)`` pairs typing its own arguments in a document (:mod:`.schema` checks); ``buffer_args``: the
    arguments naming buffers (declared-ness is checked on load; they join :attr:`~layoutkit.infer.Op.buffers`);
    ``check_document``: further checks of a loaded op's arguments against the program's buffer shapes.

    >>> TileOp("noop").buffer_args
    ('A', 'E', 'B', 'C', 'src', 'dst')
    """

    kind: str
    builders: tuple[tuple[str, Builder], ...] = ()
    rule: Rule | None = None
    local: bool = False
    required: tuple[str, ...] = ()
    argument_types: tuple[tuple[str, Callable[[Any, str], Any]], ...] = ()
    buffer_args: tuple[str, ...] = BUFFER_ARGS
    check_document: DocumentCheck | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind.isidentifier():
            raise UnsupportedError(f"TileOp: expected an identifier as the op kind; found {self.kind!r}")
        for name, fn in self.builders:
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("_") or not callable(fn):
                raise UnsupportedError(f"TileOp {self.kind}: expected (public method name, callable) builders; "
                                       f"found ({name!r}, {fn!r})")


@dataclass(frozen=True)
class FamilyRule:
    """A target family's rule for an op kind (``local`` as :attr:`TileOp.local`)."""

    rule: Rule
    local: bool = False


def best_family(patterns: Iterable[str], target: str) -> str | None:
    """The most specific glob of ``patterns`` matching ``target``: fewest wildcards, then the longest.

    >>> best_family(["*", "sm_*", "sm_9*"], "sm_90a"), best_family(["sm_*"], "ascend")
    ('sm_9*', None)
    """
    hits = [(pat.count("*"), -len(pat), pat) for pat in patterns if fnmatchcase(target, pat)]
    return min(hits)[2] if hits else None


_NO_TYPES: Mapping[str, Callable[[Any, str], Any]] = MappingProxyType({})


RESOLVED_LIMIT = 4096
"""Most (kind, target string) rule choices an :class:`OpRegistry` remembers; past it they are chosen again."""


class OpRegistry:
    """Op kind -> :class:`TileOp`, plus the rules targets add per family (see the module doc).  Filled only by
    explicit calls: the constructor's definitions, :meth:`register`, :meth:`register_rule`."""

    def __init__(self, definitions: Iterable[TileOp]):
        self._ops: dict[str, TileOp] = {}
        self._types: dict[str, Mapping[str, Callable[[Any, str], Any]]] = {}
        self._builders: dict[str, Builder] = {}
        self._family_rules: dict[str, dict[str, FamilyRule]] = {}
        self._chosen: dict[tuple[str, str], FamilyRule | None] = {}  # (kind, target) -> its rule: solver's hot path
        self._lock = threading.RLock()  # held by every change and by filling _chosen (threads solve concurrently)
        for d in definitions:
            self.register(d)

    def register(self, definition: TileOp) -> None:
        """Add ``definition`` (replacing one of the same kind, and its builders)."""
        if not isinstance(definition, TileOp):
            raise UnsupportedError(f"register_op: expected a TileOp; found {type(definition).__name__}")
        with self._lock:
            old = self._ops.get(definition.kind)
            if old is not None:
                for name, _ in old.builders:
                    self._builders.pop(name, None)
            taken = {name: kind for kind, d in self._ops.items() if kind != definition.kind for name, _ in d.builders}
            for name, fn in definition.builders:
                if name in taken:
                    raise UnsupportedError(f"register_op {definition.kind}: the builder {name!r} is op "
                                           f"{taken[name]!r}'s")
                self._builders[name] = fn
            self._ops[definition.kind] = definition
            self._chosen.clear()
            self._types[definition.kind] = MappingProxyType(dict(definition.argument_types))

    def unregister(self, kind: str) -> None:
        """Remove the definition of ``kind``, its builders and every target rule for it."""
        with self._lock:
            d = self._ops.pop(kind, None)
            self._types.pop(kind, None)
            for name, _ in d.builders if d is not None else ():
                self._builders.pop(name, None)
            self._family_rules.pop(kind, None)
            self._chosen.clear()

    def get(self, kind: str) -> TileOp | None:
        return self._ops.get(kind)

    def kinds(self) -> list[str]:
        return sorted(self._ops)

    def builder(self, name: str) -> Builder | None:
        """The builder a definition lists as Program method ``name``, or None."""
        return self._builders.get(name)

    def builder_names(self) -> list[str]:
        return sorted(self._builders)

    def required_args(self, kind: str) -> tuple[str, ...]:
        d = self._ops.get(kind)
        return () if d is None else d.required

    def argument_types(self, kind: str) -> Mapping[str, Callable[[Any, str], Any]]:
        return self._types.get(kind, _NO_TYPES)

    def buffer_args(self, kind: str) -> tuple[str, ...]:
        d = self._ops.get(kind)
        return BUFFER_ARGS if d is None else d.buffer_args

    def register_rule(self, kind: str, family: str, rule: Rule, *, local: bool = False) -> None:
        """``rule`` lays out ops of ``kind`` on the targets matching ``family`` (over the definition's rule)."""
        if not callable(rule):
            raise UnsupportedError(f"register_rule {kind!r}: expected a callable rule; found {type(rule).__name__}")
        with self._lock:
            self._family_rules.setdefault(kind, {})[family] = FamilyRule(rule, local)
            self._chosen.clear()

    def unregister_rule(self, kind: str, family: str) -> None:
        """Forget the rule ``family`` registered for ``kind`` (the definition's rule applies again)."""
        with self._lock:
            self._family_rules.get(kind, {}).pop(family, None)
            self._chosen.clear()

    def _choose(self, kind: str, target: str) -> FamilyRule | None:
        key = (kind, target)
        try:
            return self._chosen[key]  # one dict read: safe beside a registration in another thread
        except KeyError:
            pass
        with self._lock:  # pick and remember under the lock a registration clears under, so no stale entry
            chosen = self._pick(kind, target)  # may load a backend, whose registrations fill or clear the table
            if len(self._chosen) >= RESOLVED_LIMIT:  # a process that sees ever new target strings stays bounded
                self._chosen.clear()
            self._chosen[key] = chosen
        return chosen

    def _pick(self, kind: str, target: str) -> FamilyRule | None:
        table = self._family_rules.get(kind, {})
        pat = best_family(table, target)
        if pat is not None:
            return table[pat]
        d = self._ops.get(kind)
        return None if d is None or d.rule is None else FamilyRule(d.rule, d.local)

    def rule(self, kind: str, target: str) -> Rule:
        """The rule of ``kind`` on ``target``; :class:`~layoutkit.errors.UnsupportedError` when it has none."""
        chosen = self._choose(kind, target)
        if chosen is None:
            raise UnsupportedError(f"no layout rule for op kind {kind!r} on target {target!r}")
        return chosen.rule

    def rule_is_local(self, kind: str, target: str) -> bool:
        """Whether the rule :meth:`rule` picks was declared local."""
        chosen = self._choose(kind, target)
        return chosen is not None and chosen.local
