"""layoutkit: tensor-compiler layouts, proved, inferred, priced, emitted and drawn.

>>> import layoutkit as lk
>>> print(lk.Layout([4, 4], lambda i, j: (j, i)).inverse())
Layout((4, 4) -> (4, 4), (_i, _j) -> (_j, _i))
"""

from .algebra import Const, Expr, F2Linear, Layout, Proof, Var, parse_expr, parse_index_fn
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
    ProgramFormatError,
    ProofBudgetError,
    ProofError,
    RaceError,
    ShapeError,
    UnsupportedError,
    UserFunctionError,
)
from .fragment import Fragment, PartialFragment, make_fully_replicated_fragment

# isort: split
from . import backends as _backends  # noqa: F401  (registers the built-in NVIDIA and Ascend targets)

__version__ = "0.1.0"

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
    "CoordinateError",
    "ExprError",
    "IntegerOverflowError",
    "LayoutConflictError",
    "LayoutError",
    "NotBijectiveError",
    "ProofError",
    "RaceError",
    "ProofBudgetError",
    "ShapeError",
    "UnsupportedError",
    "LimitError",
    "ProgramFormatError",
    "UserFunctionError",
]
