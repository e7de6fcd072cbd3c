"""The target protocol: what a target tells inference, and the registry that finds it by target family.

Inference knows no target.  A backend subclasses :class:`Target` (every hook has a target-free default),
names the target strings it serves with a glob ``family`` (``"sm_*"``, ``"ascend"``) and calls
:func:`register_target`; its op rules and its own tile ops then join the tile-op registry (:mod:`.library`), and
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
from typing import Any

from .. import deferred
from ..algebra.layout import Layout
from ..cost import register_cost_model
from ..errors import ScopeError
from ..scopes import GLOBAL, SCOPES
from . import validate
from .library import register_op, register_rule
from .ops import Buffer, Op, Region
from .rules import Rule
from .tileop import TileOp, best_family

Program = Any
"""A :class:`~layoutkit.infer.Program` (the hooks only read it; the program module builds on this one)."""

class Target:
    """Target hooks with target-free defaults (the NVIDIA-style scopes, no merge, every thread a consumer)."""

    family: str = "*"
    scopes: tuple[str, ...] = SCOPES
    global_scope: str = GLOBAL

    def scopes_of(self, target: str) -> tuple[str, ...]:
        """The scopes a program of ``target`` (a string this family matches) may allocate: :attr:`scopes`,
        unless one generation of the family lacks some (NVIDIA tensor memory before sm_100)."""
        return self.scopes

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
        """Extra :class:`~layoutkit.infer.Program` methods that are no tile op of their own (context managers,
        checks, a target's forms of a built-in op): name -> ``fn(program, *args, **kwargs)``."""
        return {}

    def tile_ops(self) -> tuple[TileOp, ...]:
        """The target's own tile ops (registered with the tile-op registry with the target)."""
        return ()

    def cost_models(self) -> Mapping[str, Callable]:
        """Cost models the target adds, by name -> factory (``infer_layouts(p, cost_model=name)``)."""
        return {}


_TARGETS: dict[str, Target] = {}
_RESOLVED: dict[str, Target] = {}  # target string -> its Target (Program asks on every op it builds)
RESOLVED_LIMIT = 1024
"""Most target strings :func:`get_target` remembers the resolution of; past it they are resolved again."""
_DEFAULT = Target()


def register_target(target: Target) -> None:
    """Make ``target``'s hooks, rules, tile ops and merge apply to target strings matching ``target.family``,
    and its cost models selectable by name."""
    _TARGETS[target.family] = target
    _RESOLVED.clear()
    for definition in target.tile_ops():
        register_op(definition)
    local = target.local_rules()
    for kind, fn in target.rules().items():
        register_rule(kind, target.family, fn, local=kind in local)
    for name, factory in target.cost_models().items():
        register_cost_model(name, factory)


def get_target(target: str) -> Target:
    """The registered target whose family matches ``target`` best (fewest wildcards, then longest), or the
    defaults."""
    hit = _RESOLVED.get(target)
    if hit is None:
        if len(_RESOLVED) >= RESOLVED_LIMIT:  # a process that sees ever new target strings stays bounded
            _RESOLVED.clear()
        deferred.load(target)
        pat = best_family(_TARGETS, target)
        hit = _RESOLVED[target] = _DEFAULT if pat is None else _TARGETS[pat]
    return hit


def check_scopes(program: Program, what: str) -> None:
    """Raise :class:`~layoutkit.errors.ScopeError` unless every buffer of ``program`` lives in a scope its
    target has (:attr:`Target.scopes`).  A program's buffers are checked when they are declared, against the
    target of that moment; this catches a program re-targeted since (``program.target = "sm_70"`` on an
    Ascend program), which the target's rules would otherwise read in scopes they know nothing of.  The
    error names the first such buffer (and how many more there are), its scope and the target's scopes
    (:meth:`Target.scopes_of`).

    >>> from layoutkit.infer import Program
    >>> p = Program(target="ascend")
    >>> _ = p.alloc("A_l1", (16, 16), "float16", "l1")
    >>> p.target = "sm_80"
    >>> try:
    ...     check_scopes(p, "infer_layouts")
    ... except ScopeError as e:
    ...     print(e.buffer, e.scope, e.target)
    A_l1 l1 sm_80
    """
    scopes = get_target(program.target).scopes_of(program.target)
    foreign = [b for b in program.buffers.values() if b.scope not in scopes]
    if not foreign:
        return
    first = foreign[0]
    more = f" (and {len(foreign) - 1} more: {', '.join(b.name for b in foreign[1:4])}" \
           f"{', ...' if len(foreign) > 4 else ''})" if len(foreign) > 1 else ""
    raise ScopeError(f"{what}: buffer {first.name} lives in scope {first.scope!r}, which target {program.target!r} "
                     f"does not have{more}; expected one of {', '.join(scopes)}: build the program for the target "
                     f"its scopes belong to, or allocate {first.name} in a scope of {program.target}",
                     first.name, first.scope, program.target, scopes)


def get_merge(target: str) -> Callable | None:
    """``target``'s merge of two plain layouts of one buffer (:meth:`Target.merge`), or None."""
    hooks = get_target(target)
    return hooks.merge if hooks.has_merge() else None


def get_builder(name: str, target: str) -> Callable | None:
    """``target``'s extra builder ``name`` (:meth:`Target.builders`), or None."""
    return get_target(target).builders().get(name)
