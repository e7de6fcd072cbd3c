"""Layout inference over tile programs (REFERENCE sections 4-5, DESIGN section 2).

Target-free: a target joins through :mod:`.target` (its backend registers rules, merge and hooks by
target family; ``import layoutkit`` registers the built-in NVIDIA and Ascend backends, imported by the first
lookup of their targets).  The names below are imported on first use, so ``import layoutkit.infer`` costs
only this module.

>>> from layoutkit import infer
>>> p = infer.Program(threads=128, target="sm_80")
>>> x = p.alloc_fragment("x", (64, 64), "float16")
>>> _ = p.clear(x)
>>> r = infer.infer_layouts(p)
>>> print(r.layout_map[x].forward_index[0])
_i // 16 * 8 + _j % 8
"""

from typing import TYPE_CHECKING

from .. import deferred as _deferred

if TYPE_CHECKING:  # pragma: no cover - imported on first use (see _LAZY)
    from ..cost import AttemptCost, CostModel, RegisterCountModel, register_cost_model
    from .conflicts import InferenceConflictError, minimal_constraints
    from .conversions import LayoutConversion
    from .engine import clear_caches, infer_layouts, solve
    from .program import Access, Buffer, Op, Program, Region
    from .result import Derivation, InferenceResult
    from .rules import COMMON, FREE, STRICT, get_rule, register_merge, register_rule
    from .target import Target, get_target, register_target
    from .validate import OpValidationError

_LAZY = {
    **dict.fromkeys(("InferenceConflictError", "minimal_constraints"), ".conflicts"),
    "LayoutConversion": ".conversions",
    **dict.fromkeys(("AttemptCost", "CostModel", "RegisterCountModel", "register_cost_model"), "..cost"),
    **dict.fromkeys(("clear_caches", "infer_layouts", "solve"), ".engine"),
    **dict.fromkeys(("Access", "Buffer", "Op", "Program", "Region"), ".program"),
    **dict.fromkeys(("Derivation", "InferenceResult"), ".result"),
    **dict.fromkeys(("COMMON", "FREE", "STRICT", "get_rule", "register_merge", "register_rule"), ".rules"),
    **dict.fromkeys(("Target", "get_target", "register_target"), ".target"),
    "OpValidationError": ".validate",
}
__getattr__ = _deferred.lazy_attributes(__name__, _LAZY)

# the generic ("*") rules register when their modules load: before the first rule lookup
_deferred.defer("*", "layoutkit.infer.loops")

__all__ = [
    "Access", "AttemptCost", "Buffer", "COMMON", "clear_caches",
    "CostModel", "Derivation", "FREE", "InferenceConflictError",
    "InferenceResult", "LayoutConversion", "Op", "OpValidationError", "Program", "Region", "RegisterCountModel",
    "STRICT", "Target", "get_rule", "get_target",
    "infer_layouts", "minimal_constraints", "register_cost_model", "register_merge", "register_rule",
    "register_target", "solve",
]
