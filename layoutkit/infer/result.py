"""What inference returns.

>>> r = InferenceResult({}, {}, {}, {})
>>> r.explain("x")
[]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..algebra.layout import Layout
from ..fragment.fragment import Fragment


@dataclass(frozen=True)
class Derivation:
    """One step that set or changed a buffer's layout."""

    rule: str
    level: str
    op: str
    action: str = "set"
    cost: object = None

    def __str__(self) -> str:
        c = "" if self.cost is None else f", cost {self.cost}"
        return f"{self.action} by {self.rule} rule of {self.op} at {self.level} level{c}"


@dataclass(frozen=True)
class InferenceResult:
    """``layout_map``: buffer name -> Layout/Fragment; ``loop_layouts``: loop op name -> Fragment;
    ``predicates``: op name -> guard text (partial tiles, as TileLang prints it); ``guards``: the same guards as
    :class:`~layoutkit.infer.guards.Predicate` values (expressions over ``_thread`` / ``_index`` one can
    evaluate, and notes); ``derivations``: buffer -> steps; ``conversions``: the
    :class:`~layoutkit.infer.conversions.LayoutConversion` s free mode inserted (a fragment read by one op through
    another layout, converted through shared memory)."""

    layout_map: dict
    loop_layouts: dict
    predicates: dict
    derivations: dict = field(default_factory=dict)
    conversions: tuple = ()
    guards: dict = field(default_factory=dict)

    def __getitem__(self, buf) -> Layout:
        return self.layout_map[_name(buf)]

    def explain(self, buf) -> list[Derivation]:
        """The derivation chain of ``buf`` (rule, level, source op, cost), oldest first."""
        return list(self.derivations.get(_name(buf), []))

    def fragments(self) -> dict[str, Fragment]:
        return {k: v for k, v in self.layout_map.items() if isinstance(v, Fragment)}


class NameKeyed(dict):
    """A dict keyed by buffer name that also accepts Buffer objects."""

    def __getitem__(self, key):
        return super().__getitem__(_name(key))

    def __contains__(self, key):
        return super().__contains__(_name(key))

    def get(self, key, default=None):
        return super().get(_name(key), default)


def _name(buf) -> str:
    return buf if isinstance(buf, str) else getattr(buf, "name", buf)
