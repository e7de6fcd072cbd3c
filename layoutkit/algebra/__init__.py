"""Integer index expressions and the Layout algebra."""

from .evaluate import compile_numpy, evaluate
from .layout import Layout
from .linear import F2Linear
from .nodes import (
    And,
    Const,
    Expr,
    FloorDiv,
    FloorMod,
    Lookup,
    Mul,
    Or,
    Sum,
    Var,
    Xor,
    as_expr,
    free_vars,
    simplify,
    substitute,
)
from .parse import parse_expr, parse_index_fn
from .proof import Proof
from .shapes import placeholder, positional_arity, positive_int
from .tables import Table

__all__ = [
    "positional_arity", "positive_int",
    "Layout", "placeholder", "F2Linear", "Proof", "Table",
    "And", "Const", "Expr", "FloorDiv", "FloorMod", "Lookup", "Mul", "Or", "Sum", "Var", "Xor",
    "as_expr", "free_vars", "compile_numpy", "evaluate", "parse_expr", "parse_index_fn", "simplify", "substitute",
]
