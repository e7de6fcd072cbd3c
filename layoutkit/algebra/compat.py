"""TileLang's accessor names on :class:`~layoutkit.Layout` (``T.Layout`` in TileLang 0.1.15).

TileLang code reads a layout through ``get_*`` methods; layoutkit's own names are properties.  Both
work and return the same values (layoutkit returns Python tuples and :class:`~layoutkit.Expr` where
TileLang returns TVM arrays and PrimExprs; the printed forms are the same):

>>> import layoutkit as lk
>>> L = lk.Layout([16, 16], lambda i, j: (i * 16 + j) // 32)
>>> print(L)
Layout((16, 16) -> (8,), transform: (_i, _j) -> (_i // 2,))
>>> L.get_input_shape(), L.get_output_shape()
((16, 16), (8,))
>>> [str(e) for e in L.get_forward_index()], [v.name for v in L.get_forward_vars()]
(['_i // 2'], ['_i', '_j'])
>>> L.input_size, L.index == L.forward_index, str(L.get_linearized_forward_index())
((16, 16), True, '_i // 2')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ShapeStrideError
from .nodes import Expr, Var

if TYPE_CHECKING:
    from .layout import Layout


class TileLangAccessors:
    """The ``get_*`` family of TileLang's ``T.Layout`` (mixed into :class:`~layoutkit.Layout`)."""

    __slots__ = ()

    if TYPE_CHECKING:  # what Layout provides
        @property
        def input_shape(self) -> tuple[int, ...]: ...
        @property
        def output_shape(self) -> tuple[int, ...]: ...
        @property
        def forward_index(self) -> tuple[Expr, ...]: ...
        @property
        def forward_vars(self) -> tuple[Var, ...]: ...
        def linearized(self) -> Layout: ...

    def get_input_shape(self) -> tuple[int, ...]:
        """``input_shape`` (TileLang's ``Layout.get_input_shape``)."""
        return self.input_shape

    def get_output_shape(self) -> tuple[int, ...]:
        """``output_shape``: the bounding box ``max(out_d) + 1`` (TileLang's ``get_output_shape``)."""
        return self.output_shape

    def get_forward_index(self) -> tuple[Expr, ...]:
        """``forward_index``: one expression per output dim (TileLang's ``get_forward_index``)."""
        return self.forward_index

    def get_forward_vars(self) -> tuple[Var, ...]:
        """``forward_vars``: the placeholders ``_i, _j, ...`` (TileLang's ``get_forward_vars``)."""
        return self.forward_vars

    def get_linearized_forward_index(self) -> Expr:
        """The row-major offset over ``output_shape`` as one expression (``linearized().forward_index[0]``)."""
        return self.linearized().forward_index[0]

    @property
    def input_size(self) -> tuple[int, ...]:
        """``input_shape`` under TileLang's field name."""
        return self.input_shape

    @property
    def index(self) -> tuple[Expr, ...]:
        """``forward_index`` under TileLang's field name."""
        return self.forward_index


def check_not_shape_stride(input_shape: object, forward_fn: object) -> None:
    """Refuse ``Layout((2, 3), (3, 1))``: pycute's ``Layout(shape, stride)`` would otherwise build the
    constant map ``(3, 1)``.  A forward given as plain integers only (nested tuples included) is read
    as a stride; constant outputs are still written as a function (``lambda i, j: (3, 1)``).

    >>> check_not_shape_stride((2, 3), (3, 1))
    Traceback (most recent call last):
    ...
    layoutkit.errors.ShapeStrideError: Layout((2, 3), (3, 1)) looks like pycute's Layout(shape, stride), \
but lk.Layout takes an index function, e.g. lk.Layout([2, 3], lambda i, j: i * 3 + j * 1); for a shape and \
stride layout use layoutkit.tla.make_layout((2, 3), (3, 1)) (colexicographic, as CuTe)
    """
    if callable(forward_fn) or forward_fn is None or isinstance(forward_fn, (str, bytes)):
        return
    if not isinstance(forward_fn, (Sequence, int)) or not _plain_ints(forward_fn):
        return
    shape = list(input_shape) if isinstance(input_shape, Sequence) else [input_shape]
    strides = list(forward_fn) if isinstance(forward_fn, Sequence) else [forward_fn]
    flat = all(isinstance(v, int) for v in strides + shape) and len(shape) == len(strides) <= 6
    example = ("e.g. lk.Layout(" + str(shape) + ", lambda " + ", ".join("ijklmn"[: len(shape)]) + ": "
               + " + ".join(f"{v} * {s}" for v, s in zip("ijklmn", strides)) + ")") if flat else (
        "e.g. lk.Layout([4, 4], lambda i, j: i * 4 + j)")
    raise ShapeStrideError(
        f"Layout({input_shape!r}, {forward_fn!r}) looks like pycute's Layout(shape, stride), but lk.Layout takes "
        f"an index function, {example}; for a shape and stride layout use layoutkit.tla.make_layout("
        f"{input_shape!r}, {forward_fn!r}) (colexicographic, as CuTe)"
    )


def _plain_ints(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and all(_plain_ints(v) for v in value)


__all__ = ["TileLangAccessors", "check_not_shape_stride"]
