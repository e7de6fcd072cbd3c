"""Layout: a map from logical coordinates to physical coordinates (TileLang ``T.Layout``).

A layout is an input shape plus one index expression per output dimension, over placeholder
variables ``_i, _j, _k, ...`` (one per input dim, each with its extent).  Coordinates are
row-major.  ``output_shape`` is TileLang's bounding box: ``max(out_d) + 1`` over the domain.

>>> import layoutkit as lk
>>> L = lk.Layout([4, 4], lambda i, j: (j, i))
>>> print(L)
Layout((4, 4) -> (4, 4), transform: (_i, _j) -> (_j, _i))
>>> L.map_forward_index([1, 2])
(2, 1)
>>> print(L.inverse())
Layout((4, 4) -> (4, 4), transform: (_i, _j) -> (_j, _i))
>>> print(lk.Layout([8, 8], lambda i, j: i * 8 + j).reshape([64]))
Layout((64,) -> (64,), transform: (_i,) -> (_i,))

TileLang code reads a layout through ``get_*`` methods; layoutkit's own names are properties.  Both
work and return the same values (layoutkit returns Python tuples and :class:`~layoutkit.Expr` where
TileLang returns TVM arrays and PrimExprs; the printed forms are the same):

>>> L = lk.Layout([16, 16], lambda i, j: (i * 16 + j) // 32)
>>> L.get_input_shape(), L.get_output_shape()
((16, 16), (8,))
>>> [str(e) for e in L.get_forward_index()], [v.name for v in L.get_forward_vars()]
(['_i // 2'], ['_i', '_j'])
>>> L.input_size, L.index == L.forward_index, str(L.get_linearized_forward_index())
((16, 16), True, '_i // 2')

This module holds the type: its evaluation, its identity, the layouts derived from it, its inverse, the
driver of its bijection proof and its F2 view.  The provers are in :mod:`.proof` and :mod:`.bitlinear`,
the F2 map type in :mod:`.linear`, the constructor tag in :mod:`.tagging` and the checks of shapes and
coordinate arrays in :mod:`.shapes`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import (
    CoordinateError,
    ExprError,
    LayoutError,
    LimitError,
    NotBijectiveError,
    NotLinearError,
    ProofBudgetError,
    ProofError,
    ShapeError,
    UnsupportedError,
)
from .attained import attained_ranges
from .bitlinear import AffineF2, bijection_by_f2, bit_linear, composes_to_identity
from .budget import check_budget, run_with_budget
from .evaluate import compile_numpy, evaluate_columns, grid
from .f2_reasons import not_linear_reason
from .inverse import solve_inverse
from .linear import F2Linear, bases_from_mapping, inverse_bases
from .linear_exprs import expressions_from_bases
from .nodes import (
    Const,
    Expr,
    Var,
    add,
    as_expr,
    floordiv,
    floormod,
    free_vars,
    scale,
    substitute,
    text_prefix,
    tuple_text,
)
from .piecewise import lookup_exprs, lookup_inverse, piecewise_inverse
from .proof import Proof, bijection_by_enumeration, bijection_by_isl, choose_method, describe_witness
from .shapes import (
    TABLE_LIMIT,
    call_index_fn,
    check_not_shape_stride,
    check_shape,
    coordinate_tuple,
    enumerable_grid,
    flat_coords,
    normalize_outputs,
    placeholder,
    positive_int,
    region_ranges,
    row_major_flat,
    sequence_arg,
    unflatten_mapping,
)
from .tagging import Tagged

ENUMERATION_LIMIT = 1 << 22
"""Domains up to this many coordinates are proved by enumeration under ``method="auto"`` (unless F2-linear); a
larger one that no structure decides is refused with a :class:`~layoutkit.errors.ProofBudgetError` (an explicit
``method="enumerate"`` goes up to :data:`~layoutkit.algebra.shapes.TABLE_LIMIT`)."""
AUTO_BUDGET_S = 2.0
"""Seconds ``method="auto"`` gives islpy (the one method whose cost the layout does not bound) before it
stops with a :class:`~layoutkit.errors.ProofBudgetError`."""
ISL_BUDGET_S = 4.0
"""Seconds an explicit ``method="isl"`` proof runs unless ``budget_s`` says otherwise (``None``: no limit)."""
DEFAULT_BUDGET = "default"
"""``prove_bijective``'s ``budget_s`` when none is given: the method's own default budget."""
_SLAB = 1 << 20  # coordinates per slab of linear_table
DESCRIBE_CHARS = 400
"""Characters of each output that :meth:`Layout.describe` shows."""
_STRUCTURE_FIRST = 1 << 12  # below this many coordinates one vectorised pass is as cheap as reading the structure

__all__ = ["AUTO_BUDGET_S", "DESCRIBE_CHARS", "ENUMERATION_LIMIT", "Layout", "tagged_layout"]


class Layout(Tagged):
    """Logical coordinate -> physical coordinate, as TileLang's ``T.Layout``.

    ``forward_fn`` is a function of one placeholder variable per input dim returning an expression
    or a tuple of expressions, or directly a sequence of expressions over the placeholders.  TileLang's
    accessors (``get_input_shape()``, ``get_output_shape()``, ``get_forward_index()``, ...) are there
    too (see the module doc).  pycute's ``Layout(shape, stride)`` raises
    :class:`~layoutkit.errors.ShapeStrideError` pointing to :func:`layoutkit.tla.make_layout`.
    """

    __slots__ = ("_input_shape", "_forward", "_vars", "_cache", "_tag")
    _input_shape: tuple[int, ...]
    _forward: tuple[Expr, ...]
    _vars: tuple[Var, ...]
    _cache: dict[object, Any]  # derived data only (tables, proofs, inverse), shared by tagged copies
    _tag: Hashable | None

    def __init__(
        self, input_shape: Sequence[int] | int, forward_fn: Callable[..., object] | Sequence[object] | None = None
    ) -> None:
        check_not_shape_stride(input_shape, forward_fn)  # before the shape check: pycute shapes nest
        shape = check_shape(input_shape)
        variables = tuple(placeholder(d, e) for d, e in enumerate(shape))
        if forward_fn is None:
            raise ExprError("Layout needs a forward function, e.g. lambda i, j: (j, i)")
        if callable(forward_fn):
            exprs = call_index_fn(forward_fn, variables, "Layout forward function")
        else:
            exprs = normalize_outputs(forward_fn, "Layout forward expressions")
        self.initialize(shape, variables, exprs)

    def initialize(self, shape: tuple[int, ...], variables: tuple[Var, ...], exprs: tuple[Expr, ...]) -> None:
        """Set the fields of a new layout (the constructors of this type and its subclasses call it once, on an
        object not yet shared): checks that the expressions use only the placeholders."""
        allowed = set(variables)
        for k, e in enumerate(exprs):
            for v in free_vars(e):
                if v not in allowed:
                    raise ExprError(
                        f"output {k} ({e}) uses {v!r}, which is not one of the input placeholders "
                        f"{', '.join(repr(x) for x in variables)}"
                    )
        object.__setattr__(self, "_input_shape", shape)
        object.__setattr__(self, "_vars", variables)
        object.__setattr__(self, "_forward", exprs)
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_tag", None)

    @classmethod
    def from_exprs(cls, input_shape: Sequence[int], exprs: Sequence[Expr]) -> Layout:
        """Build from expressions over the placeholders of ``input_shape`` (no function call)."""
        shape = check_shape(input_shape)
        obj = cls.__new__(cls)
        items = sequence_arg(exprs, "Layout.from_exprs expressions")
        if not items:
            raise ShapeError("Layout.from_exprs needs at least one output expression; found ()")
        obj.initialize(shape, tuple(placeholder(d, e) for d, e in enumerate(shape)), tuple(as_expr(e) for e in items))
        return obj

    @classmethod
    def from_table(cls, table: ArrayLike) -> Layout:
        """The layout whose images are ``table``: shape ``input_shape + (m,)`` as :meth:`table` returns it (a 1-d
        table is one output over one input).  Each output reads its column through a
        :class:`~layoutkit.algebra.nodes.Lookup` node at the row-major offset of the input (a constant column is
        that constant).  Law: ``Layout.from_table(L.table()).table() == L.table()``.

        >>> import layoutkit as lk
        >>> P = lk.Layout.from_table([2, 0, 3, 1])
        >>> P.output_shape, P(2), P.inverse()(3)
        ((4,), (3,), (2,))
        """
        try:
            arr = np.asarray(table)
        except (TypeError, ValueError) as err:  # ragged rows
            raise ShapeError(f"Layout.from_table: expected a rectangular integer array; found {table!r:.60}: "
                             f"{err}") from None
        if arr.dtype == object or arr.dtype.kind not in "iu":
            raise ExprError(f"Layout.from_table: expected an integer array; found {arr.dtype} {arr!r:.60}")
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim < 2 or arr.shape[-1] == 0:
            raise ShapeError(f"Layout.from_table: expected an array of shape input_shape + (outputs,); found shape "
                             f"{arr.shape}")
        shape = check_shape(arr.shape[:-1])
        variables = tuple(placeholder(d, e) for d, e in enumerate(shape))
        return cls.from_exprs(shape, lookup_exprs(arr.reshape(-1, arr.shape[-1]), shape, variables))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Layout is immutable")

    # ---- basic properties -------------------------------------------------------------------
    @property
    def input_shape(self) -> tuple[int, ...]:
        return self._input_shape

    @property
    def forward_index(self) -> tuple[Expr, ...]:
        return self._forward

    @property
    def forward_vars(self) -> tuple[Var, ...]:
        """The placeholder variables ``_i, _j, ...`` the expressions are written in."""
        return self._vars

    # ---- TileLang's accessor names (``T.Layout`` in TileLang 0.1.15) ---------------------------
    def get_input_shape(self) -> tuple[int, ...]:
        """``input_shape`` (TileLang's ``Layout.get_input_shape``)."""
        return self._input_shape

    def get_output_shape(self) -> tuple[int, ...]:
        """``output_shape``: the bounding box ``max(out_d) + 1`` (TileLang's ``get_output_shape``)."""
        return self.output_shape

    def get_forward_index(self) -> tuple[Expr, ...]:
        """``forward_index``: one expression per output dim (TileLang's ``get_forward_index``)."""
        return self._forward

    def get_forward_vars(self) -> tuple[Var, ...]:
        """``forward_vars``: the placeholders ``_i, _j, ...`` (TileLang's ``get_forward_vars``)."""
        return self._vars

    def get_linearized_forward_index(self) -> Expr:
        """The row-major offset over ``output_shape`` as one expression (``linearized().forward_index[0]``)."""
        return self.linearized().forward_index[0]

    @property
    def input_size(self) -> tuple[int, ...]:
        """``input_shape`` under TileLang's field name."""
        return self._input_shape

    @property
    def index(self) -> tuple[Expr, ...]:
        """``forward_index`` under TileLang's field name."""
        return self._forward

    @property
    def size(self) -> int:
        return math.prod(self._input_shape)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Bounding box of the image: ``max(out_d) + 1`` per output dim (TileLang's convention)."""
        hit: tuple[int, ...] | None = self._cache.get("output_shape")
        if hit is None:  # the node intervals, where the structure proves their ends are attained
            ranges = attained_ranges(self._forward)
            if all(r is not None and r[0] >= 0 for r in ranges):
                hit = self._cache["output_shape"] = tuple(r[1] + 1 for r in ranges if r is not None)
        if hit is None and self.size > _STRUCTURE_FIRST:
            affine = self.affine_f2()  # an F2 map's maxima come from its bit matrix: no pass over the domain
            if affine is not None:
                hit = self._cache["output_shape"] = tuple(m + 1 for m in affine[0].max_values(affine[1]))
        if hit is None:
            coords = enumerable_grid(self._input_shape, lambda: f"output_shape of {self.describe()}")
            lows, highs = self._output_range(coords)
            for k, lo in enumerate(lows):
                if lo < 0:
                    witness = self._find(lambda outs, k=k, lo=lo: outs[k] == lo)
                    raise LayoutError(
                        f"{self.describe()}: output {k} ({self._forward[k]}) is negative ({lo}) at {witness}; "
                        "layouts must map into non-negative coordinates"
                    )
            hit = tuple(int(h) + 1 for h in highs)
            self._cache["output_shape"] = hit
        return hit

    def _evaluate(self, coords: Sequence[NDArray[Any]]) -> tuple[NDArray[Any], ...]:
        return compile_numpy(self._forward, self._vars)(*coords)

    def _output_range(self, coords: Sequence[NDArray[Any]]) -> tuple[list[int], list[int]]:
        outs = self._evaluate(coords)
        return [int(o.min()) for o in outs], [int(o.max()) for o in outs]

    def _find(self, predicate: Callable[..., Any]) -> tuple[int, ...]:
        table = self.table()
        hit = np.argwhere(predicate(np.moveaxis(table, -1, 0)))
        return tuple(int(v) for v in hit[0])

    def describe(self) -> str:
        """The printed form (``str(layout)``) for error messages, without evaluating the map: the output
        shape shows when it is known without enumerating the domain (else ``?``), and each output's text
        is cut after :data:`DESCRIBE_CHARS` characters, so a message about a huge layout stays short and
        cheap.

        >>> import layoutkit as lk
        >>> lk.Layout([4, 8], lambda i, j: (j, i)).describe()
        'Layout((4, 8) -> (8, 4), transform: (_i, _j) -> (_j, _i))'
        """
        return self.printed(self.known_output_shape(), [text_prefix(e, DESCRIBE_CHARS) for e in self._forward])

    def known_output_shape(self) -> tuple[int, ...] | None:
        """``output_shape`` when it is computed already or the expressions' structure gives it, else None
        (never enumerates the domain)."""
        hit: tuple[int, ...] | None = self._cache.get("output_shape")
        if hit is None:
            ranges = attained_ranges(self._forward)
            if all(r is not None and r[0] >= 0 for r in ranges):
                hit = tuple(r[1] + 1 for r in ranges if r is not None)
        return hit

    def printed(self, output_shape: Sequence[int] | None, outputs: Sequence[object]) -> str:
        """The one printed form of a layout, ``Layout((in) -> (out), transform: (vars) -> (outputs))``
        (``?`` for an unknown output shape), shared by ``str`` and :meth:`describe`."""
        out = "(?)" if output_shape is None else _tuple_text(output_shape)
        ins = _tuple_text(v.name for v in self._vars)
        return f"Layout({_tuple_text(self._input_shape)} -> {out}, transform: {ins} -> {_tuple_text(outputs)})"

    # ---- evaluation -------------------------------------------------------------------------
    def map_forward_index(self, coord: Sequence[int | Expr]) -> tuple[Any, ...]:
        """Image of one coordinate: ints in, ints out; expressions in, expressions out.

        >>> import layoutkit as lk
        >>> lk.Layout([8, 8], lambda i, j: i * 8 + j).map_forward_index([2, 3])
        (19,)
        """
        coord = coordinate_tuple(coord, len(self._input_shape), self.describe())
        if all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in coord):
            for d, (c, e) in enumerate(zip(coord, self._input_shape)):
                if not 0 <= c < e:  # before the int64 conversion, which would overflow on huge ints
                    raise CoordinateError(f"coordinate {coord} is outside the input shape {self._input_shape} of "
                                          f"{self.describe()} (dim {d})")
            return tuple(int(v) for v in self.apply(np.asarray(coord, dtype=np.int64)))
        for d, c in enumerate(coord):
            if not isinstance(c, (int, np.integer, Expr)) or isinstance(c, bool):
                raise CoordinateError(f"{self.describe()}: coordinate {d} must be an integer or an index "
                                      f"expression; found {type(c).__name__} {c!r}")
        mapping = {v: as_expr(c) for v, c in zip(self._vars, coord)}
        return tuple(substitute(e, mapping) for e in self._forward)

    def __call__(self, *coord: int | Expr) -> tuple[Any, ...]:
        return self.map_forward_index(coord)

    @property
    def memo(self) -> dict[object, Any]:
        """The memo of derived data (tables, proofs, the inverse), shared by tagged copies; subclasses keep
        their own derived data here too.  Never holds anything that defines the layout."""
        return self._cache

    def _flat_coords(self, coords: ArrayLike) -> tuple[NDArray[np.int64], tuple[int, ...]]:
        """Checked ``[N, n]`` int64 view of a coordinate array and its leading shape (:func:`.shapes.flat_coords`)."""
        return flat_coords(coords, self._input_shape, self.describe)

    def apply(self, coords: ArrayLike) -> NDArray[np.int64]:
        """Images of an int array of coordinates ``[..., n]`` as ``[..., m]`` (vectorised).

        >>> import layoutkit as lk
        >>> lk.Layout([4, 8], lambda i, j: (j, i * 2)).apply([[1, 2], [3, 7]]).tolist()
        [[2, 2], [7, 6]]
        """
        flat, lead = self._flat_coords(coords)
        cols = [flat[:, d] for d in range(flat.shape[1])]
        out = evaluate_columns(self._forward, self._vars, cols, in_range=True)
        return out.reshape(lead + (len(self._forward),))

    def table(self) -> NDArray[np.int64]:
        """All images as an int64 array of shape ``input_shape + (m,)``."""
        hit: NDArray[np.int64] | None = self._cache.get("table")
        if hit is None:
            outs = self._evaluate(enumerable_grid(self._input_shape, lambda: f"table of {self.describe()}"))
            hit = np.stack([np.broadcast_to(o, self._input_shape) for o in outs], axis=-1)
            hit.setflags(write=False)
            self._cache["table"] = hit
        return hit

    def linear_table(self) -> NDArray[np.intp]:
        """Row-major offsets over ``output_shape`` for every input coordinate (shape ``input_shape``).

        Evaluated from the linearized expression in slabs of the first input dim, so the memory is the
        result plus one slab of temporaries (the per-output table is never built unless already cached).

        >>> import layoutkit as lk
        >>> lk.Layout([2, 3], lambda i, j: (j, i)).linear_table().tolist()
        [[0, 2, 4], [1, 3, 5]]
        """
        if "table" in self._cache or not self._input_shape:
            out: NDArray[np.intp] = np.ravel_multi_index(tuple(np.moveaxis(self.table(), -1, 0)), self.output_shape)
            return out
        (flat,) = self.linearized()._forward
        fn = compile_numpy((flat,), self._vars)
        shape = self._input_shape
        result = np.empty(shape, dtype=np.intp)
        step = max(1, _SLAB // max(1, math.prod(shape[1:])))
        rest = grid(shape)[1:]
        for r0 in range(0, shape[0], step):
            rows = np.arange(r0, min(shape[0], r0 + step), dtype=np.int64).reshape((-1,) + (1,) * (len(shape) - 1))
            result[r0 : r0 + len(rows)] = fn(rows, *rest)[0]
        return result

    # ---- derived layouts --------------------------------------------------------------------
    def linearized(self) -> Layout:
        """One output: ``sum_d out_d * prod(output_shape[d+1:])`` (TileLang's
        ``get_linearized_forward_index``)."""
        shape = self.output_shape
        total: Expr = Const(0)
        for k, e in enumerate(self._forward):
            total = add(total, scale(e, math.prod(shape[k + 1 :])))
        return Layout.from_exprs(self._input_shape, (total,))

    def repeat(self, dim: int, factor: int) -> Layout:
        """Grow input dim ``dim`` by ``factor``; the repeat number becomes a new first output.

        >>> import layoutkit as lk
        >>> print(lk.Layout([4, 4], lambda i, j: (j, i)).repeat(1, 3))
        Layout((4, 12) -> (3, 4, 4), transform: (_i, _j) -> (_j // 4, _j % 4, _i))
        """
        dim = self._dim(dim)
        factor = positive_int(factor, "repeat factor")
        e = self._input_shape[dim]
        shape = list(self._input_shape)
        shape[dim] = e * factor
        new = placeholder(dim, e * factor)
        mapping: dict[Var, Expr] = {
            v: (new if d == dim else placeholder(d, shape[d])) for d, v in enumerate(self._vars)
        }
        mapping[self._vars[dim]] = floormod(new, Const(e))
        exprs = (floordiv(new, Const(e)),) + tuple(substitute(x, mapping) for x in self._forward)
        return Layout.from_exprs(shape, exprs)

    def expand(self, leading_shape: Sequence[int]) -> Layout:
        """Prepend input dims that pass through as leading outputs (e.g. pipeline stages).

        >>> import layoutkit as lk
        >>> print(lk.Layout([4, 4], lambda i, j: (j, i)).expand([2]))
        Layout((2, 4, 4) -> (2, 4, 4), transform: (_i, _j, _k) -> (_i, _k, _j))
        """
        lead = check_shape(leading_shape, "expand leading shape")
        shape = lead + self._input_shape
        new_vars = [placeholder(d, e) for d, e in enumerate(shape)]
        mapping = {v: new_vars[len(lead) + d] for d, v in enumerate(self._vars)}
        exprs: tuple[Expr, ...] = tuple(new_vars[: len(lead)]) + tuple(substitute(x, mapping) for x in self._forward)
        out = Layout.from_exprs(shape, exprs)
        hook = getattr(self._tag, "expanded", None)
        tag = hook(shape) if callable(hook) else None
        return out if tag is None else out.with_tag(tag)

    def reshape(self, shape: Sequence[int], rescale_num: int = 1, rescale_den: int = 1) -> Layout:
        """View the same storage with a new input shape (row-major flattening on both sides).

        With ``rescale_num != rescale_den`` the element width changes (``num/den`` = old bits /
        new bits): narrowing splits each element into lanes (``last*f + flat % f``), widening
        merges ``f`` consecutive elements and requires them to be contiguous in the last output.
        """
        new_shape = check_shape(shape, "reshape shape")
        num, den = positive_int(rescale_num, "rescale_num"), positive_int(rescale_den, "rescale_den")
        if self.size * num != math.prod(new_shape) * den:
            raise ShapeError(
                f"reshape of {self._input_shape} to {new_shape} with rescale {num}/{den}: "
                f"{self.size} * {num} != {math.prod(new_shape)} * {den}"
            )
        flat = row_major_flat(new_shape)
        g = math.gcd(num, den)
        num, den = num // g, den // g
        if den == 1 and num > 1:
            old_flat = floordiv(flat, Const(num))
        elif num == 1 and den > 1:
            self._check_groups_contiguous(den)
            old_flat = scale(flat, den)
        elif num == 1 and den == 1:
            old_flat = flat
        else:
            raise UnsupportedError(f"reshape rescale {rescale_num}/{rescale_den} is neither a narrowing nor a widening")
        mapping = unflatten_mapping(self._input_shape, old_flat)
        exprs = [substitute(x, mapping) for x in self._forward]
        if num > 1:
            exprs[-1] = add(scale(exprs[-1], num), floormod(flat, Const(num)))
        elif den > 1:
            exprs[-1] = floordiv(exprs[-1], Const(den))
        return Layout.from_exprs(new_shape, exprs)

    def compose(self, inner: Layout) -> Layout:
        """``self.compose(M)(x) == self(M(x))``; M's image must lie inside self's input shape.

        >>> import layoutkit as lk
        >>> T = lk.Layout([4, 4], lambda i, j: (j, i))
        >>> print(T.compose(T))
        Layout((4, 4) -> (4, 4), transform: (_i, _j) -> (_i, _j))
        """
        if not isinstance(inner, Layout):
            raise LayoutError(f"compose expects a Layout, found {type(inner).__name__}")
        if len(inner.forward_index) != len(self._input_shape):
            raise ShapeError(
                f"compose: {inner} has {len(inner.forward_index)} outputs but {self} takes "
                f"{len(self._input_shape)} inputs"
            )
        mapping = dict(zip(self._vars, inner.forward_index))
        if all(0 <= e.lo and e.hi < n for e, n in zip(inner.forward_index, self._input_shape)):
            # the node intervals contain the image: inside without evaluating the domain
            return Layout.from_exprs(inner.input_shape, tuple(substitute(e, mapping) for e in self._forward))
        coords = enumerable_grid(inner.input_shape, lambda: f"compose with {inner.describe()}")
        lows, highs = inner._output_range(coords)
        for k, (lo, hi) in enumerate(zip(lows, highs)):
            if lo < 0 or hi >= self._input_shape[k]:
                bad = lo if lo < 0 else hi
                witness = inner._find(lambda outs, k=k, bad=bad: outs[k] == bad)
                raise CoordinateError(
                    f"compose: {inner} maps {witness} to output {k} = {bad}, outside the input shape "
                    f"{self._input_shape} of {self}"
                )
        return Layout.from_exprs(inner.input_shape, tuple(substitute(e, mapping) for e in self._forward))

    def map_region_bounds(self, region: Sequence[Sequence[int]]) -> tuple[tuple[int, int], ...]:
        """Bounding box ``[(lo, hi_exclusive), ...]`` of the image of an input box region."""
        ranges = region_ranges(region, self._input_shape, self.describe())
        points = math.prod(max(hi - lo, 0) for lo, hi in ranges)
        if points > TABLE_LIMIT:  # the image is evaluated over the whole box
            raise LimitError(f"region {ranges} of {self.describe()} has {points} points; at most 2**26 are "
                             f"evaluated", TABLE_LIMIT, points)
        coords = []
        for d, (lo, hi) in enumerate(ranges):
            if not 0 <= lo < hi <= self._input_shape[d]:
                raise CoordinateError(f"region dim {d} = [{lo}, {hi}) is empty or outside [0, {self._input_shape[d]})")
            shape = [1] * len(ranges)
            shape[d] = hi - lo
            coords.append(np.arange(lo, hi, dtype=np.int64).reshape(shape))
        lows, highs = self._output_range(coords)
        return tuple((lo, hi + 1) for lo, hi in zip(lows, highs))

    def is_equal(self, other: Layout) -> bool:
        """Same input shape and the same image at every coordinate (semantic, not textual)."""
        if not isinstance(other, Layout) or other.input_shape != self._input_shape:
            return False
        if len(other.forward_index) != len(self._forward):
            return False
        return self.first_difference(other) is None

    def first_difference(self, other: Layout) -> tuple[int, ...] | None:
        """A coordinate where the two layouts differ, or None (shapes must match)."""
        g = enumerable_grid(self._input_shape, lambda: f"comparing {self.describe()}")
        for a, b in zip(self._evaluate(g), other._evaluate(g)):
            diff = np.broadcast_to(a != b, self._input_shape)
            if diff.any():
                return tuple(int(v) for v in np.unravel_index(int(np.argmax(diff)), self._input_shape))
        return None

    def _check_groups_contiguous(self, f: int) -> None:
        """Raise unless every ``f`` consecutive elements are contiguous and aligned in the last output."""
        table = self.table().reshape(-1, len(self._forward))
        if table.shape[0] % f:
            raise ShapeError(f"widening by {f} needs the element count {table.shape[0]} to be a multiple of {f}")
        groups = table.reshape(-1, f, table.shape[1])
        first = groups[:, :1, :]
        lane = np.arange(f)
        ok_rest = np.all(groups[:, :, :-1] == first[:, :, :-1], axis=(1, 2))
        ok_last = np.all(groups[:, :, -1] == first[:, :, -1] + lane, axis=1) & (first[:, 0, -1] % f == 0)
        bad = np.flatnonzero(~(ok_rest & ok_last))
        if bad.size:
            start = tuple(int(v) for v in np.unravel_index(int(bad[0]) * f, self._input_shape))
            raise ShapeError(
                f"widening reshape by {f}: the {f} elements starting at {start} are not contiguous and aligned "
                f"in the last output of {self}"
            )

    def _permutation_inverse(self) -> Layout | None:
        """When the outputs are the input variables in some order (a transpose), the inverse puts them back: a
        bijection onto the permuted extents by its form, with nothing to prove or check.  None otherwise.

        The expressions are the ones digit matching finds (each input is the whole of one output; an input of
        extent 1 is the constant 0)."""
        fwd, variables = self._forward, self._vars
        if len(fwd) != len(variables) or set(fwd) != set(variables):
            return None
        where = {v: k for k, v in enumerate(fwd)}
        outs = tuple(placeholder(k, cast(Var, e).extent) for k, e in enumerate(fwd))
        return Layout.from_exprs(tuple(cast(int, o.extent) for o in outs),
                                 tuple(Const(0) if v.extent == 1 else outs[where[v]] for v in variables))

    def _proved_by_round_trip(self) -> Layout | None:
        """The digit-matching inverse of an F2-affine self when the bit matrices prove ``inv(self(x)) == x`` and
        the output box has as many points as the domain, else None (the caller takes the general path).

        Injective (it has a left inverse) from a domain onto a box of the same size, with every image in the box (an
        F2 map's outputs are non-negative and ``output_shape`` is their maximum plus one): a bijection onto the box,
        so the separate rank test would only repeat the proof."""
        fwd = self.affine_f2()
        if fwd is None or math.prod(self.output_shape) != self.size:
            return None
        outs = tuple(placeholder(k, e) for k, e in enumerate(self.output_shape))
        sol = solve_inverse(self._forward, self._vars, outs)
        if sol is None:
            return None
        inv = Layout.from_exprs(self.output_shape, sol)
        back = inv.affine_f2()
        return inv if back is not None and composes_to_identity(fwd, back) is True else None

    def _round_trips(self, inv: Layout) -> bool:
        """``inv(self(x)) == x`` everywhere: on the F2 bit matrices when both maps are affine over the bits (no
        evaluation), else over every coordinate."""
        fwd, back = self.affine_f2(), inv.affine_f2()
        if fwd is not None and back is not None:
            verdict = composes_to_identity(fwd, back)
            if verdict is not None:
                return verdict
        coords = np.moveaxis(np.indices(self._input_shape), 0, -1)
        return bool(np.array_equal(inv.apply(self.table()), coords))

    def _f2_inverse(self) -> Layout | None:
        view, _ = self._linear_view()
        if view is None:
            return None
        bases = inverse_bases(view, self.output_shape)
        if bases is None:
            return None
        outs = tuple(placeholder(k, e) for k, e in enumerate(self.output_shape))
        return Layout.from_exprs(self.output_shape, expressions_from_bases(bases, outs, len(self._input_shape)))

    # ---- proofs and inverse -----------------------------------------------------------------
    def prove_bijective(self, method: str = "auto", *, budget_s: float | str | None = DEFAULT_BUDGET) -> Proof:
        """Prove or refute that the layout is a bijection onto its output box.

        ``method``: ``"enumerate"`` (evaluate every coordinate), ``"isl"`` (symbolic: islpy, or the F2 rank
        when the map is affine over the input bits, where islpy's bit encoding is slow and the rank is
        exact), ``"f2"`` (the expressions are affine over the input bits, read off the tree: a rank test
        over F2, see :mod:`.bitlinear`) or ``"auto"``: chosen by the structure (:func:`.proof.choose_method`).
        The proof's ``method`` says which decided, and its ``detail`` why when that is not the one asked for.

        ``budget_s``: seconds the method may run before it is stopped with a
        :class:`~layoutkit.errors.ProofBudgetError` naming the method and what to try instead (islpy can take
        minutes on xor-heavy maps).  By default an explicit ``"isl"`` runs for :data:`ISL_BUDGET_S` and
        ``"auto"`` bounds islpy by :data:`AUTO_BUDGET_S`; ``None`` lifts the limit of an explicit method (f2 and
        enumeration are bounded by the layout's size).

        >>> import layoutkit as lk
        >>> L = lk.Layout([4096, 4096], lambda i, j: (i, j ^ i))
        >>> p = L.prove_bijective(); p.method, p.verdict
        ('f2', True)
        >>> lk.Layout([1024], lambda i: i ^ (i // 3)).prove_bijective("isl", budget_s=0.05)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        layoutkit.errors.ProofBudgetError: prove_bijective('isl') of Layout((1024,) ...: still running after ...
        """
        default = isinstance(budget_s, str) and budget_s == DEFAULT_BUDGET
        budget = None if default else check_budget(budget_s, "prove_bijective")
        if not isinstance(method, str) or method not in ("auto", "enumerate", "isl", "f2"):
            raise LayoutError(f"unknown proof method {method!r}; expected 'auto', 'enumerate', 'isl' or 'f2'")
        if method == "isl" and default:
            budget = ISL_BUDGET_S
        if method == "auto":
            method = choose_method(self.forward_index, self.size, self.affine_f2() is not None, ENUMERATION_LIMIT)
            if method == "isl" and budget is None:
                budget = AUTO_BUDGET_S
            if method == "enumerate" and self.size > ENUMERATION_LIMIT and ("proof", method) not in self._cache:
                # the size budget of enumeration under "auto": evaluating more points takes seconds per million
                raise ProofBudgetError(
                    f"prove_bijective('auto') of {self.describe()}: no structure decides it (not affine over F2, not "
                    f"quasi-affine), and enumerating its {self.size} coordinates is past the {ENUMERATION_LIMIT} "
                    f"'auto' enumerates; ask for method='enumerate' (up to {TABLE_LIMIT} coordinates) or "
                    "method='isl' with a budget_s", ENUMERATION_LIMIT, self.size)
        if method == "isl" and self.affine_f2() is not None:
            f2 = self.prove_bijective("f2")
            return dataclasses.replace(f2, detail=f"isl asked for; affine over F2, so the rank decided: {f2.detail}")
        key = ("proof", method)
        hit: Proof | None = self._cache.get(key)
        if hit is None:
            methods: dict[str, Callable[[], Proof]] = {
                "enumerate": lambda: bijection_by_enumeration(self.table(), self.output_shape),
                "isl": lambda: bijection_by_isl(self.forward_index, self.forward_vars, self.input_shape,
                                         self.output_shape),
                "f2": lambda: self._f2_proof()}
            spent: ProofBudgetError | None = self._cache.get(("proof budget", method))
            if spent is not None and budget is not None and budget <= float(spent.limit or 0):
                raise spent  # this method already ran out of a budget at least as large
            what = f"prove_bijective({method!r}) of {self.describe()}"
            if method == "isl":
                what += (f" (method='enumerate' decides its {self.size} coordinates"
                         + (")" if self.size <= ENUMERATION_LIMIT else f", past the {ENUMERATION_LIMIT} it takes)"))
            try:
                hit = run_with_budget(methods[method], budget, what)
            except ProofBudgetError as err:
                self._cache[("proof budget", method)] = err
                raise
            self._cache[key] = hit
        return hit

    def _f2_proof(self) -> Proof:
        """The F2 rank proof, or a ProofError saying why the map is not affine over F2."""
        affine = self.affine_f2()
        if affine is None:
            raise ProofError(f"{self.describe()}: not affine over F2 (an extent is not a power of two, or an "
                             "output is not built from bit shifts, masks, xors and carry-free sums)")
        return bijection_by_f2(affine)

    def affine_f2(self) -> AffineF2 | None:
        """``(linear, offset)`` with ``self(x) == offset ^ linear(x)`` over the input bits, read off the
        expressions (:func:`.bitlinear.bit_linear`: no evaluation), or None when the structure does not show
        such a form.  ``linear`` is an :class:`~layoutkit.algebra.linear.F2Linear` with in dims named after
        the placeholders and out dims ``dim0, dim1, ...``.

        >>> import layoutkit as lk
        >>> linear, offset = lk.Layout([4, 4], lambda i, j: (i, j ^ i ^ 1)).affine_f2()
        >>> linear.bases, offset
        ((((1, 1), (2, 2)), ((0, 1), (0, 2))), (0, 1))
        >>> lk.Layout([4, 4], lambda i, j: i * 3 + j).affine_f2() is None
        True
        """
        hit = self._cache.get("affine_f2", False)
        if hit is False:
            hit = self._cache["affine_f2"] = bit_linear(self._forward, self._vars, self._input_shape)
        return cast("AffineF2 | None", hit)

    def is_bijective(self, *, budget_s: float | None = None) -> bool:
        """``prove_bijective("auto", budget_s=budget_s).verdict``."""
        return self.prove_bijective(budget_s=budget_s).verdict

    def inverse(self) -> Layout:
        """The inverse layout: in closed form where digit matching or F2 elimination finds one (xor swizzles
        included), else the exact piecewise inverse read off the table, else (past the piecewise form's limits on
        its breaks) the inverse table itself, read through a :class:`~layoutkit.algebra.nodes.Lookup` node at the
        row-major offset of the outputs (:mod:`.piecewise`).  Law: for a bijection, ``inverse()(self(x)) == x``
        for every ``x``; a layout proved bijective always has an inverse.

        Raises :class:`NotBijectiveError` with two colliding coordinates or an unreachable output
        when the layout is not a bijection onto its output box (and the errors of :meth:`prove_bijective` and
        :meth:`table` when the domain is too large to decide or tabulate).

        >>> import layoutkit as lk
        >>> L = lk.Layout([4, 35], lambda i, j: (i // 2, (i % 2 * 35 + j) // 2 * 2 + (i * 35 + j) % 2))
        >>> L.inverse().map_forward_index(L.map_forward_index([3, 34]))
        (3, 34)
        >>> perm = np.random.default_rng(0).permutation(1 << 14)  # no closed form, ~16K breaks
        >>> P = lk.Layout.from_table(perm)
        >>> P.inverse()(*P(1234)), str(P.inverse().forward_index[0]).startswith("table#")
        ((1234,), True)
        """
        hit: Layout | None = self._cache.get("inverse")
        if hit is not None:
            return hit
        inv = self._permutation_inverse()
        if inv is None:
            inv = self._proved_by_round_trip()
        if inv is not None:
            self._cache["inverse"] = inv
            return inv
        proof = self.prove_bijective()
        if not proof:
            raise NotBijectiveError(
                f"{self} is not bijective onto its output box {self.output_shape}: "
                f"{describe_witness(proof.witness or {})}",
                proof.witness,
            )
        outs = tuple(placeholder(k, e) for k, e in enumerate(self.output_shape))
        sol = solve_inverse(self._forward, self._vars, outs)
        inv = None if sol is None else Layout.from_exprs(self.output_shape, sol)
        if inv is None or not self._round_trips(inv):
            inv = self._f2_inverse()
            if inv is not None and not self._round_trips(inv):
                inv = None
        if inv is None:
            # no closed form: the table read backwards, written as a step function (exact by construction;
            # checked like the others all the same)
            try:
                inv = Layout.from_exprs(self.output_shape, piecewise_inverse(
                    self.table(), self.output_shape, outs, f"inverse of {self.describe()}"))
            except LimitError:  # too many breaks for a step function: read the inverse from its table
                inv = Layout.from_exprs(self.output_shape, lookup_inverse(self.table(), self.output_shape, outs))
            if not self._round_trips(inv):
                raise LayoutError(f"inverse of {self.describe()}: the table-read inverse does not undo the layout")
        self._cache["inverse"] = inv
        return inv

    # ---- F2 view ------------------------------------------------------------------------------
    def to_linear(self) -> F2Linear:
        """The :class:`~layoutkit.algebra.linear.F2Linear` bases (Triton's ``LinearLayout``) of a layout
        that is linear over F2.  In dims are named after the placeholders, out dims ``dim0, dim1, ...``
        with sizes rounded up to powers of two.  Raises :class:`~layoutkit.errors.NotLinearError` saying
        why when there is none (an extent that is not a power of two, or a coordinate whose image is not
        the XOR of its bits' images, as ``witness``).

        >>> import layoutkit as lk
        >>> lk.Layout([4, 4], lambda i, j: (i, j ^ i)).to_linear().bases
        (((1, 1), (2, 2)), ((0, 1), (0, 2)))
        >>> lk.Layout([4, 4], lambda i, j: i * 3 + j).to_linear()
        Traceback (most recent call last):
        ...
        layoutkit.errors.NotLinearError: Layout((4, 4) -> (13,), transform: (_i, _j) -> (_i * 3 + _j,)) \
is not F2-linear: _i = 1, _j = 1 \
maps to (4,), but the XOR of the images of its bits (_j = 1 -> (1,), _i = 1 -> (3,)) is (2,)
        """
        view, reason = self._linear_view()
        if view is None:
            raise NotLinearError(f"{self.describe()} is not F2-linear: {reason[0]}", reason[1])
        return view

    def _linear_view(self) -> tuple[F2Linear | None, tuple[str, tuple[int, ...] | None]]:
        """``(view, ("", None))``, or ``(None, (reason, witness))`` (callers that only ask)."""
        names = [v.name for v in self.forward_vars]
        if any(e & (e - 1) for e in self.input_shape):  # before building a table that cannot be linear
            # a broadcast view: the reason reads only the shape, so no table of the whole domain is built
            # (one byte an item: a broadcast view's byte size must fit an intp, and shapes go up to 2**62 points)
            shape_only = np.broadcast_to(np.zeros(1, dtype=np.int8), self.input_shape + (1,))
            return None, not_linear_reason(shape_only, names)
        table = self.table()
        try:
            view = F2Linear.from_table(table, names, [f"dim{k}" for k in range(len(self.forward_index))])
        except ShapeError:
            self.output_shape  # noqa: B018 - negative images: raise the error that names a witness
            raise
        return (view, ("", None)) if view is not None else (None, not_linear_reason(table, names))

    @classmethod
    def from_linear(cls, view: F2Linear | Mapping[str, Sequence[Sequence[int]]] | Sequence[Sequence[Sequence[int]]],
                    input_shape: Sequence[int] | None = None) -> Layout:
        """Build a layout from F2 bases: an :class:`F2Linear`, or ``{in_dim: [[out...], ...]}`` /
        a list of per-dim basis lists (input extents are ``2**len(bases[d])``)."""
        bases = bases_from_mapping(view)
        n_out = {len(img) for per in bases for img in per}
        if isinstance(view, F2Linear):
            # the view names its outputs even when no input bit has a basis image (every extent 1)
            n_out.add(len(view.out_dims))
        if len(n_out) > 1:
            raise ShapeError(f"F2 bases must all have the same number of outputs; found {sorted(n_out)}")
        shape = tuple(2 ** len(per) for per in bases) if input_shape is None else check_shape(input_shape)
        if input_shape is not None and any(2 ** len(per) != e for per, e in zip(bases, shape)):
            raise ShapeError(f"input shape {shape} does not match {[len(p) for p in bases]} basis bits per dim")
        variables = tuple(placeholder(d, e) for d, e in enumerate(shape))
        return cls.from_exprs(shape, expressions_from_bases(bases, variables, n_out.pop() if n_out else 1))

    # ---- identity, printing -------------------------------------------------------------------
    def _dim(self, dim: int) -> int:
        n = len(self._input_shape)
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not -n <= dim < n:
            raise ShapeError(f"dim {dim!r} is out of range for input rank {n}")
        return int(dim) % n

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other._input_shape == self._input_shape
            and other._forward == self._forward
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._input_shape, self._forward))

    def __reduce__(self) -> tuple[Any, ...]:
        if self._tag is None:
            return (Layout.from_exprs, (self._input_shape, self._forward))
        return (tagged_layout, (self._input_shape, self._forward, self._tag))

    def __str__(self) -> str:
        try:
            out_shape: tuple[int, ...] | None = self.output_shape
        except LayoutError:
            out_shape = None
        return self.printed(out_shape, self._forward)

    __repr__ = __str__


def tagged_layout(input_shape: Sequence[int], exprs: Sequence[Expr], tag: Hashable | None) -> Layout:
    """``Layout.from_exprs(input_shape, exprs).with_tag(tag)`` (what tagged layouts pickle to)."""
    return Layout.from_exprs(input_shape, exprs).with_tag(tag)


_tuple_text = tuple_text


