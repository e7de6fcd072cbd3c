"""Layout inference over tile programs (REFERENCE sections 4-5, DESIGN section 2).

>>> from layoutkit import infer
>>> p = infer.Program(threads=128, target="sm_80")
>>> x = p.alloc_fragment("x", (64, 64), "float16")
>>> _ = p.clear(x)
>>> r = infer.infer_layouts(p)
>>> print(r.layout_map[x].forward_index[0])
_i // 16 * 8 + _j % 8
"""

from . import ascend_rules as _ascend_rules  # noqa: F401  (registers the "ascend" rules)
from .ascend_exec import AscendExecutionError, UninitialisedReadError, run_ascend
from .ascend_passes import PassReport, insert_nd2nz, insert_oob_padding, normalize_fractal_storage, run_ascend_passes
from .conflicts import InferenceConflictError, minimal_constraints
from .convert import LayoutConversion
from .cost import AttemptCost, CostModel, RegisterCountModel, register_cost_model
from .engine import clear_caches, infer_layouts, solve
from .program import Access, Buffer, Op, Program, Region
from .result import Derivation, InferenceResult
from .rules import COMMON, FREE, STRICT, get_rule, register_merge, register_rule
from .validate import OpValidationError

__all__ = [
    "Access", "AscendExecutionError", "AttemptCost", "PassReport", "UninitialisedReadError", "insert_nd2nz",
    "insert_oob_padding", "normalize_fractal_storage", "run_ascend", "run_ascend_passes",
    "Buffer", "COMMON", "clear_caches",
    "CostModel", "Derivation", "FREE", "InferenceConflictError",
    "InferenceResult", "LayoutConversion", "Op", "OpValidationError", "Program", "Region", "RegisterCountModel",
    "STRICT", "get_rule",
    "infer_layouts", "minimal_constraints", "register_cost_model", "register_merge", "register_rule", "solve",
]
