"""The target protocol: what a target tells inference, and the registry that finds it by target family.

Inference knows no target.  A backend subclasses :class:`Target` (every hook has a target-free default),
names the target strings it serves with a glob ``family`` (``"sm_*"``, ``"ascend"``) and calls
:func:`register_target`; its op rules and merge then join the rule registry (:mod:`.rules`), and
:class:`~layoutkit.infer.Program` and the solver ask :func:`get_target` for scopes, op validation, extra
op builders and the thread range.  A target string no family matches gets the defaults.

>>> class Demo(Target):
...     family = "demo_*"
...     def thread_range(self, program):
...         return (0, 1)
>>> register_target(Demo())
>>> get_target("demo_1").thread_range(None), get_target("unknown").family
((0, 1), '*')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from .. import deferred
from ..cost import register_cost_model
from ..scopes import GLOBAL, SCOPES
from . import validate
from .rules import Rule, register_merge, register_rule

if TYPE_CHECKING:  # pragma: no cover
    from ..algebra.layout import Layout
    from .program import Buffer, Op, Program, Region

class Target:
    """Target hooks with target-free defaults (the NVIDIA-style scopes, no merge, every thread a consumer)."""

    family: str = "*"
    scopes: tuple[str, ...] = SCOPES
    global_scope: str = GLOBAL

    def rules(self) -> Mapping[str, Rule]:
        """Op kind -> layout rule on this target (they win over the ``"*"`` rules)."""
        return {}

    def local_rules(self) -> frozenset[str]:
        """The op kinds among :meth:`rules` whose rules are local (see :func:`~.rules.register_rule`)."""
        return frozenset()

    def merge(self, old: Layout, new: Layout, dtype: str) -> Layout | None:
        """Two plain layouts of one buffer merged into one, or None (a conflict)."""
        return None

    def has_merge(self) -> bool:
        return type(self).merge is not Target.merge

    def shared_scope(self, scope: str) -> str:
        """The scope ``alloc_shared(..., scope)`` allocates in."""
        return scope

    def thread_range(self, program: Program) -> tuple[int, int]:
        """``(min, extent)`` of the threads running the tile ops."""
        return (0, program.threads)

    def build_copy(self, program: Program, src: Region, dst: Region) -> Op | None:
        """The copy op of ``src -> dst``, or None for the target-free copy."""
        return None

    def check_gemm(self, A: Buffer, B: Buffer, C: Buffer, args: dict, what: str) -> None:
        """Validate a GEMM's operands (raise :class:`~layoutkit.infer.OpValidationError`)."""
        validate.gemm(A, B, C, args, what)

    def fill_args(self, starts: tuple[int, ...], extents: tuple[int, ...]) -> dict:
        """Extra arguments a fill of the region records."""
        return {}

    def max_vector_bits(self, target: str, global_only: bool) -> int:
        """The widest vector access of a parallel loop on ``target``; ``global_only``: the loop touches
        global memory and no shared memory (TileLang's ``MaxVectorLoadBits``: 128 bits by default)."""
        return 128

    def builders(self) -> Mapping[str, Callable]:
        """Extra :class:`~layoutkit.infer.Program` methods: name -> ``fn(program, *args, **kwargs)``."""
        return {}

    def cost_models(self) -> Mapping[str, Callable]:
        """Cost models the target adds, by name -> factory (``infer_layouts(p, cost_model=name)``)."""
        return {}


_TARGETS: dict[str, Target] = {}
_RESOLVED: dict[str, Target] = {}  # target string -> its Target (Program asks on every op it builds)
_BUILDERS: dict[str, Callable] = {}
_DEFAULT = Target()


def register_target(target: Target) -> None:
    """Make ``target``'s hooks, rules and merge apply to target strings matching ``target.family``, and its
    cost models selectable by name."""
    _TARGETS[target.family] = target
    _RESOLVED.clear()
    local = target.local_rules()
    for kind, fn in target.rules().items():
        register_rule(kind, target.family, fn, local=kind in local)
    if target.has_merge():
        register_merge(target.family, target.merge)
    _BUILDERS.update(target.builders())
    for name, factory in target.cost_models().items():
        register_cost_model(name, factory)


def get_target(target: str) -> Target:
    """The registered target whose family matches ``target`` best (fewest wildcards, then longest), or the
    defaults."""
    hit = _RESOLVED.get(target)
    if hit is None:
        deferred.load(target)
        pats = [(pat.count("*"), -len(pat), pat) for pat in _TARGETS if fnmatchcase(target, pat)]
        hit = _RESOLVED[target] = _TARGETS[min(pats)[2]] if pats else _DEFAULT
    return hit


def get_builder(name: str) -> Callable | None:
    """A registered extra op builder (builders check themselves which targets they accept)."""
    if name not in _BUILDERS:
        deferred.load()
    return _BUILDERS.get(name)
