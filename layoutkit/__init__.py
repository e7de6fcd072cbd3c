"""layoutkit: tensor-compiler layouts, proved, inferred, priced, emitted and drawn.

>>> import layoutkit as lk
>>> print(lk.Layout([4, 4], lambda i, j: (j, i)).inverse())
Layout((4, 4) -> (4, 4), transform: (_i, _j) -> (_j, _i))
"""

from typing import TYPE_CHECKING

from . import deferred as _deferred
from .errors import (
    CodegenInputError,
    CoordinateError,
    DtypeError,
    ExprError,
    IntegerOverflowError,
    LayoutConflictError,
    LayoutError,
    LimitError,
    NotBijectiveError,
    NotLinearError,
    ProgramFormatError,
    ProofBudgetError,
    ProofError,
    RaceError,
    ShapeError,
    ShapeStrideError,
    UnsupportedError,
    UserFunctionError,
)

if TYPE_CHECKING:  # pragma: no cover - the names below are imported on first use
    from .algebra import Const, Expr, F2Linear, Layout, Proof, Var, parse_expr, parse_index_fn
    from .algebra.parametric import ParametricLayout, Symbol
    from .fragment import Fragment, PartialFragment, make_fully_replicated_fragment
    from .fragment.parametric import ParametricFragment

# The built-in targets, imported by the first lookup of a matching target string (or of a cost model,
# builder or backend by name), so that importing the package costs only what is used.
_deferred.defer("sm_*", "layoutkit.backends.nv")
_deferred.defer("ascend", "layoutkit.backends.ascend")

__version__ = "0.1.0"

_LAZY = {name: ".algebra" for name in ("Const", "Expr", "F2Linear", "Layout", "Proof", "Var", "parse_expr",
                                       "parse_index_fn")}
_LAZY.update({name: ".fragment" for name in ("Fragment", "PartialFragment", "make_fully_replicated_fragment")})
_LAZY.update({"Symbol": ".algebra.parametric", "ParametricLayout": ".algebra.parametric",
              "ParametricFragment": ".fragment.parametric"})
__getattr__ = _deferred.lazy_attributes(__name__, _LAZY)
"""``lk.Layout``, ``lk.Fragment``, ``lk.tla``, ``lk.infer``, ... imported on first use."""

__all__ = [
    "CodegenInputError",
    "Const",
    "DtypeError",
    "Fragment",
    "PartialFragment",
    "make_fully_replicated_fragment",
    "Expr",
    "F2Linear",
    "Layout",
    "Proof",
    "Var",
    "parse_expr",
    "parse_index_fn",
    "Symbol",
    "ParametricLayout",
    "ParametricFragment",
    "CoordinateError",
    "ExprError",
    "IntegerOverflowError",
    "LayoutConflictError",
    "LayoutError",
    "NotBijectiveError",
    "NotLinearError",
    "ShapeStrideError",
    "ProofError",
    "RaceError",
    "ProofBudgetError",
    "ShapeError",
    "UnsupportedError",
    "LimitError",
    "ProgramFormatError",
    "UserFunctionError",
]
