"""Typed errors raised by layoutkit.

Every error derives from :class:`LayoutError`, so ``except lk.LayoutError`` catches anything the
library raises on purpose.  Messages say what was expected, what was found and, where one exists,
a witness (a coordinate, an operation) that shows the problem.

>>> import layoutkit as lk
>>> try:
...     lk.Layout([4, 0], lambda i, j: i)
... except lk.ShapeError as e:
...     print(e)
Layout input shape must be positive integers; found (4, 0) (dim 1 is 0)
"""

from __future__ import annotations

from typing import Any


class LayoutError(Exception):
    """Base class of every error layoutkit raises on purpose."""


class ShapeError(LayoutError, ValueError):
    """A shape, extent or rank is not what an operation needs."""


class CoordinateError(ShapeError, IndexError):
    """A coordinate lies outside the domain it is used with."""


class DtypeError(ShapeError):
    """A dtype name layoutkit does not know, or one an operation does not support."""


class CodegenInputError(ShapeError):
    """A code generator or executor was handed a result or arrays that do not fit the program; ``buffer``
    names the buffer concerned (``None`` when the argument as a whole is wrong)."""

    def __init__(self, message: str, buffer: str | None = None):
        super().__init__(message)
        self.buffer = buffer


class ScopeError(ShapeError):
    """A buffer lives in a memory scope its program's target does not have (a program built for one target
    and re-targeted to another: Ascend's ``l0a`` on an NVIDIA GPU, NVIDIA's ``shared.dyn`` on Ascend);
    ``buffer`` names it, ``scope`` is its scope, ``target`` the program's target and ``expected`` that
    target's scopes."""

    def __init__(self, message: str, buffer: str, scope: str, target: str, expected: tuple[str, ...]):
        super().__init__(message)
        self.buffer = buffer
        self.scope = scope
        self.target = target
        self.expected = tuple(expected)


class ProgramFormatError(ShapeError):
    """A serialized program (``Program.from_json``) does not follow the document schema.

    ``path`` locates the offending value (``$.ops[3].uid``); ``expected`` and ``found`` say what the
    schema asks for and what the document holds.
    """

    def __init__(self, path: str, expected: str, found: str):
        super().__init__(f"Program.from_json: {path}: expected {expected}; found {found}")
        self.path = path
        self.expected = expected
        self.found = found


class LimitError(LayoutError, ValueError):
    """An input is past an explicit size limit (expression size, shift amount, extent) that keeps the
    work bounded; ``limit`` is the limit and ``found`` the size asked for."""

    def __init__(self, message: str, limit: float | None = None, found: object = None):
        super().__init__(message)
        self.limit = limit
        self.found = found


class UserFunctionError(LayoutError):
    """A function the caller handed in (an index or thread lambda) raised; the original exception is
    chained as ``__cause__``."""


class ExprError(LayoutError, TypeError):
    """An index expression cannot be built (float constants, true division, bad operand)."""


class ShapeStrideError(ExprError):
    """``lk.Layout(shape, stride)`` written as in pycute / CuTe: ``lk.Layout`` takes an index function;
    shape-and-stride layouts are :func:`layoutkit.tla.make_layout`."""


class NotBijectiveError(LayoutError):
    """A map that must be a bijection is not; ``witness`` shows why.

    ``witness`` is a dict: ``{"collision": (x, y, image)}`` for two inputs with one image, or
    ``{"unreachable": out}`` for an output coordinate inside the output box that nothing maps to.
    """

    def __init__(self, message: str, witness: dict[str, Any] | None = None):
        super().__init__(message)
        self.witness = witness


class LayoutConflictError(LayoutError):
    """Two constraints ask for different layouts of one buffer."""


class UnsupportedError(LayoutError, NotImplementedError):
    """The operation is well defined but outside what layoutkit can do for this input."""


class OptionalDependencyError(UnsupportedError, ImportError):
    """An optional package a function needs is not installed; ``extra`` is the layoutkit extra that
    installs it (``pip install 'layoutkit[<extra>]'``), which the message names."""

    def __init__(self, message: str, extra: str = ""):
        super().__init__(message)
        self.extra = extra


class TargetError(UnsupportedError, ValueError):
    """A target string names no target layoutkit serves (a malformed NVIDIA arch such as ``"sm_8x"``, or one
    outside the architectures its rules cover); the message quotes the string."""


class NotLinearError(UnsupportedError):
    """A layout or fragment has no F2-linear (Triton ``LinearLayout``) view; the message says why
    (an extent that is not a power of two, a slot held twice or not at all, or a coordinate whose image
    is not the XOR of its bits' images: ``witness``)."""

    def __init__(self, message: str, witness: object = None):
        super().__init__(message)
        self.witness = witness


class NotTiledError(UnsupportedError):
    """A fragment no tiled register layout (a tiling dealt to warps, lanes, a vector and registers) has;
    ``witness``: the slot bit that moves the element by more than one bit, or the input dim and bit whose
    register order runs against the tiling."""

    def __init__(self, message: str, witness: object = None):
        super().__init__(message)
        self.witness = witness


class RaceError(LayoutError, RuntimeError):
    """A kernel run (the numpy executor of the NVIDIA IR) read shared memory another thread wrote with no
    barrier in between; the message names the element, the reading and the writing thread."""


class IntegerOverflowError(LayoutError, OverflowError):
    """An integer result does not fit the int64 a table or image is returned in (layoutkit never wraps);
    ``witness`` holds the expression, the point and the exact value."""

    def __init__(self, message: str, witness: dict[str, Any] | None = None):
        super().__init__(message)
        self.witness = witness


class ProofError(LayoutError):
    """A proof method could not decide the property (for example islpy on a non-affine map)."""


class ProofBudgetError(LimitError, ProofError):
    """A proof or a search ran past its budget and was stopped undecided: a time budget (``budget_s``;
    ``limit`` is the budget and ``found`` the seconds it had run) or a size budget (``limit`` and ``found``
    count the steps, e.g. the assignments a counterexample search tried).  The message names the method that
    gave up and what to try instead."""


__all__ = [
    "LayoutError",
    "ShapeError",
    "CoordinateError",
    "DtypeError",
    "CodegenInputError",
    "ExprError",
    "ShapeStrideError",
    "NotLinearError",
    "ProgramFormatError",
    "ScopeError",
    "LimitError",
    "UserFunctionError",
    "NotBijectiveError",
    "LayoutConflictError",
    "UnsupportedError",
    "OptionalDependencyError",
    "TargetError",
    "ProofError",
    "ProofBudgetError",
    "IntegerOverflowError",
]
