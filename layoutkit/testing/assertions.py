"""Assertion helpers for checking your own layouts in tests (no hypothesis needed).

Each helper returns quietly when the property holds and raises :class:`AssertionError` with a
witness (coordinates and images) when it does not, so a failing test says *where* it fails.

>>> import layoutkit as lk
>>> from layoutkit.testing import assert_bijective, assert_inverse_round_trip, assert_layouts_equal
>>> swizzle = lk.Layout([8, 64], lambda i, j: (i, ((j // 8) ^ (i % 8)) * 8 + j % 8))
>>> assert_bijective(swizzle).verdict
True
>>> assert_inverse_round_trip(swizzle)
>>> assert_layouts_equal(swizzle, lk.Layout([8, 64], lambda i, j: (i, (j // 8 ^ i) * 8 + j % 8)))
>>> assert_bijective(lk.Layout([4, 4], lambda i, j: i + j))  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
AssertionError: Layout(...) is not bijective onto its output box (7,) (enumerate): (0, 1) and (1, 0) both map to (1,)
"""

from __future__ import annotations

import numpy as np

from ..algebra.layout import Layout
from ..algebra.proof import Proof, describe_witness
from ..errors import LayoutError, NotBijectiveError

__all__ = ["assert_bijective", "assert_layouts_equal", "assert_inverse_round_trip", "same_tables"]


def _check_layout(obj: object, what: str) -> Layout:
    if not isinstance(obj, Layout):
        raise TypeError(f"{what} must be a layoutkit Layout, found {type(obj).__name__}")
    return obj


def _coord(values: np.ndarray) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(values).reshape(-1))


def _domain(shape: tuple[int, ...]) -> np.ndarray:
    """Every coordinate of ``shape`` as an int64 array ``shape + (rank,)`` (row-major)."""
    return np.moveaxis(np.indices(shape, dtype=np.int64), 0, -1)


def assert_bijective(layout: Layout, method: str = "auto") -> Proof:
    """Assert that ``layout`` is a bijection onto its output box; return the :class:`Proof`.

    ``method`` is passed to :meth:`Layout.prove_bijective` (``"auto"``, ``"enumerate"``, ``"isl"`` or
    ``"f2"``).  On failure the message names two colliding coordinates and their common image, or
    an output coordinate inside the box that no input reaches.

    >>> import layoutkit as lk
    >>> assert_bijective(lk.Layout([4, 8], lambda i, j: (j, i))).method          # bits moved: decided over F2
    'f2'
    >>> assert_bijective(lk.Layout([4, 6], lambda i, j: (j, i))).method
    'enumerate'
    >>> assert_bijective(lk.Layout([4, 8], lambda i, j: i * 16 + j))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    AssertionError: Layout(...) is not bijective onto its output box (56,) (f2): output (8,) is not reached ...
    """
    layout = _check_layout(layout, "assert_bijective: layout")
    try:
        proof = layout.prove_bijective(method)
    except LayoutError as err:
        raise AssertionError(f"{layout} is not a bijection onto a box: {err}") from err
    if not proof.verdict:
        witness = describe_witness(proof.witness) if proof.witness else "no witness"
        raise AssertionError(
            f"{layout} is not bijective onto its output box {layout.output_shape} ({proof.method}): {witness}"
        )
    return proof


def assert_layouts_equal(a: Layout, b: Layout) -> None:
    """Assert that two layouts have the same input shape and the same image at every coordinate.

    The comparison is semantic (tables, not expression text).  On failure the message names the
    first differing coordinate (row-major order), both images and how many coordinates differ.

    >>> import layoutkit as lk
    >>> assert_layouts_equal(lk.Layout([8], lambda i: i % 4 * 2 + i // 4), lk.Layout([8], lambda i: (i * 2) % 7))
    Traceback (most recent call last):
        ...
    AssertionError: layouts differ at 1 of 8 coordinates; first at (7,): a maps it to (7,), b maps it to (0,)
    a = Layout((8,) -> (8,), transform: (_i,) -> (_i % 4 * 2 + _i // 4,))
    b = Layout((8,) -> (7,), transform: (_i,) -> (_i * 2 % 7,))
    """
    a = _check_layout(a, "assert_layouts_equal: a")
    b = _check_layout(b, "assert_layouts_equal: b")
    if a.input_shape != b.input_shape:
        raise AssertionError(
            f"layouts have different input shapes {a.input_shape} and {b.input_shape}\na = {a}\nb = {b}"
        )
    ra, rb = len(a.forward_index), len(b.forward_index)
    if ra != rb:
        raise AssertionError(f"layouts have different output ranks {ra} and {rb}\na = {a}\nb = {b}")
    ta, tb = a.table(), b.table()
    differs = np.any(ta != tb, axis=-1)
    if differs.any():
        first = np.unravel_index(int(np.argmax(differs)), a.input_shape)
        raise AssertionError(
            f"layouts differ at {int(differs.sum())} of {a.size} coordinates; first at {_coord(np.array(first))}: "
            f"a maps it to {_coord(ta[first])}, b maps it to {_coord(tb[first])}\na = {a}\nb = {b}"
        )


def same_tables(a: Layout, b: Layout) -> bool:
    """Whether two layouts (or fragments) are the same map: same kind and input shape, and for
    fragments the same replication and thread table of every replica, then the same index table.

    >>> import layoutkit as lk
    >>> same_tables(lk.Layout([8], lambda i: i % 4 * 2 + i // 4), lk.Layout([8], lambda i: (i * 2) % 7))
    False
    >>> same_tables(lk.Layout([4], lambda i: i), lk.Layout([4], lambda i: i % 4))
    True
    """
    from ..fragment.fragment import Fragment

    if isinstance(a, Fragment) != isinstance(b, Fragment) or a.input_shape != b.input_shape:
        return False
    if isinstance(a, Fragment) and isinstance(b, Fragment) and (
            a.replicate_size != b.replicate_size or not np.array_equal(a.thread_table(), b.thread_table())):
        return False
    return bool(np.array_equal(a.table(), b.table()))


def assert_inverse_round_trip(layout: Layout) -> None:
    """Assert that ``layout.inverse()`` exists and undoes ``layout`` over the whole domain.

    Checks ``inverse(layout(x)) == x`` for every input coordinate ``x`` (``inverse()`` only
    returns for bijections onto the output box, so every ``y`` of the box is such an image).  On
    failure the message names a coordinate and the images along the round trip, or the witness of
    non-bijectivity when no inverse exists.

    >>> import layoutkit as lk
    >>> assert_inverse_round_trip(lk.Layout([4, 6], lambda i, j: ((i + j) % 4, j)))
    >>> assert_inverse_round_trip(lk.Layout([4, 6], lambda i, j: (i + j) % 4 * 6 + j // 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    AssertionError: Layout(...) has no inverse: (0, 0) and (3, 1) both map to (0,)
    """
    layout = _check_layout(layout, "assert_inverse_round_trip: layout")
    try:
        inv = layout.inverse()
    except NotBijectiveError as err:
        witness = describe_witness(err.witness) if err.witness else "no witness"
        raise AssertionError(f"{layout} has no inverse: {witness}") from err
    except LayoutError as err:
        raise AssertionError(f"{layout}: inverse() failed: {err}") from err
    out_shape = layout.output_shape
    if inv.input_shape != out_shape or len(inv.forward_index) != len(layout.input_shape):
        raise AssertionError(
            f"the inverse maps {inv.input_shape} to {len(inv.forward_index)} outputs; expected the output box "
            f"{out_shape} to {len(layout.input_shape)} outputs\nlayout = {layout}\ninverse = {inv}"
        )
    xs = _domain(layout.input_shape)
    images = layout.table()
    back = inv.apply(images)
    bad = np.any(back != xs, axis=-1)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad)), layout.input_shape)
        raise AssertionError(
            f"inverse(layout(x)) != x at {int(bad.sum())} of {layout.size} coordinates; first x = {_coord(xs[at])}: "
            f"layout(x) = {_coord(images[at])}, inverse(layout(x)) = {_coord(back[at])}\n"
            f"layout = {layout}\ninverse = {inv}"
        )
