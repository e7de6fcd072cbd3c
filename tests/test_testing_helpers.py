"""layoutkit.testing itself: the assertion helpers, the lazy strategy module and what the
strategies promise (bounds, shapes, families)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import layoutkit as lk
import layoutkit.testing as lkt
from layoutkit.algebra import And, Or, Xor
from layoutkit.testing import assert_bijective, assert_inverse_round_trip, assert_layouts_equal
from layoutkit.testing import strategies as lks

TRANSPOSE = lk.Layout([4, 8], lambda i, j: (j, i))
SWIZZLE = lk.Layout([8, 64], lambda i, j: (i, ((j // 8) ^ (i % 8)) * 8 + j % 8))


# ---- assert_bijective ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["auto", "enumerate", "isl", "f2"])
def test_assert_bijective_passes_and_returns_the_proof(method: str) -> None:
    proof = assert_bijective(SWIZZLE, method=method)
    # a swizzle is F2-linear: auto and isl are decided by the F2 rank, and the proof says so
    assert proof.verdict and proof.method == ("f2" if method in ("auto", "isl") else method)


@pytest.mark.parametrize("method", ["enumerate", "isl"])
def test_assert_bijective_names_a_collision(method: str) -> None:
    layout = lk.Layout([4, 4], lambda i, j: i + j)
    with pytest.raises(AssertionError, match="not bijective") as info:
        assert_bijective(layout, method=method)
    x, y, image = layout.prove_bijective(method).witness["collision"]
    assert f"{x} and {y} both map to {image}" in str(info.value)
    assert layout.map_forward_index(x) == layout.map_forward_index(y) == image


@pytest.mark.parametrize("method", ["enumerate", "isl"])
def test_assert_bijective_names_an_unreachable_output(method: str) -> None:
    layout = lk.Layout([4, 8], lambda i, j: i * 16 + j)
    with pytest.raises(AssertionError, match=r"output \(\d+,\) is not reached") as info:
        assert_bijective(layout, method=method)
    (out,) = layout.prove_bijective(method).witness["unreachable"]
    assert f"output ({out},)" in str(info.value)
    assert out not in layout.table()


def test_assert_bijective_turns_layout_errors_into_failures() -> None:
    negative = lk.Layout([4], lambda i: i - 2)
    with pytest.raises(AssertionError, match="negative"):
        assert_bijective(negative)
    with pytest.raises(TypeError, match="Layout"):
        assert_bijective("not a layout")  # type: ignore[arg-type]


# ---- assert_layouts_equal -----------------------------------------------------------------------------


def test_assert_layouts_equal_is_semantic() -> None:
    assert_layouts_equal(lk.Layout([64], lambda x: x // 8 * 8 + x % 8), lk.Layout([64], lambda x: x))
    assert_layouts_equal(SWIZZLE, lk.Layout.from_linear(SWIZZLE.to_linear()))


def test_assert_layouts_equal_names_the_first_difference() -> None:
    a = lk.Layout([4, 4], lambda i, j: (i, j))
    b = lk.Layout([4, 4], lambda i, j: (i, j ^ (i // 2)))
    with pytest.raises(AssertionError) as info:
        assert_layouts_equal(a, b)
    message = str(info.value)
    assert "differ at 8 of 16 coordinates" in message
    assert "first at (2, 0): a maps it to (2, 0), b maps it to (2, 1)" in message


def test_assert_layouts_equal_checks_shapes_and_ranks() -> None:
    with pytest.raises(AssertionError, match=r"different input shapes \(4, 8\) and \(8, 4\)"):
        assert_layouts_equal(TRANSPOSE, lk.Layout([8, 4], lambda i, j: (j, i)))
    with pytest.raises(AssertionError, match="different output ranks 2 and 1"):
        assert_layouts_equal(TRANSPOSE, TRANSPOSE.linearized())
    with pytest.raises(TypeError, match="Layout"):
        assert_layouts_equal(TRANSPOSE, None)  # type: ignore[arg-type]


# ---- assert_inverse_round_trip ------------------------------------------------------------------------


def test_assert_inverse_round_trip_passes() -> None:
    assert_inverse_round_trip(SWIZZLE)
    assert_inverse_round_trip(TRANSPOSE)


def test_assert_inverse_round_trip_reports_non_bijective_layouts() -> None:
    layout = lk.Layout([4, 4], lambda i, j: i + j)
    with pytest.raises(AssertionError, match=r"has no inverse: \(0, 1\) and \(1, 0\) both map to \(1,\)") as info:
        assert_inverse_round_trip(layout)
    assert isinstance(info.value.__cause__, lk.NotBijectiveError)


class _WrongInverse(lk.Layout):
    """A layout whose inverse() lies (to test the helper's own check)."""

    __slots__ = ()

    def inverse(self) -> lk.Layout:
        return lk.Layout(self.output_shape, lambda a, b: (b, 0))


def test_assert_inverse_round_trip_names_the_coordinate_that_does_not_come_back() -> None:
    layout = _WrongInverse.from_exprs(TRANSPOSE.input_shape, TRANSPOSE.forward_index)
    with pytest.raises(AssertionError) as info:
        assert_inverse_round_trip(layout)
    message = str(info.value)
    assert "inverse(layout(x)) != x at 28 of 32 coordinates" in message
    assert "first x = (0, 1): layout(x) = (1, 0), inverse(layout(x)) = (0, 0)" in message


# ---- the package: lazy strategies, no hypothesis needed ---------------------------------------------


def test_strategies_are_reachable_from_the_package() -> None:
    assert lkt.bijective_layouts is lks.bijective_layouts
    assert lkt.strategies is lks
    names = {"shapes", "coordinates", "bijective_layouts", "quasi_affine_layouts", "xor_layouts", "layouts"}
    assert names | {"fragments"} <= set(dir(lkt)) and names <= set(lkt.__all__)
    assert lkt.fragments is lks.fragments
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        lkt.nope  # noqa: B018


def test_package_imports_without_hypothesis() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["hypothesis"] = None  # makes `import hypothesis` fail
        import layoutkit as lk
        import layoutkit.testing as lkt
        lkt.assert_bijective(lk.Layout([4, 4], lambda i, j: (j, i)))
        try:
            lkt.shapes
        except ImportError:
            print("lazy")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "lazy", out.stderr


# ---- what the strategies promise --------------------------------------------------------------------


@given(lks.shapes(max_rank=2, max_extent=12, max_size=100), lks.shapes(pow2=True), lks.shapes(size=36, min_rank=2))
def test_shapes_respect_their_bounds(free: tuple[int, ...], pow2: tuple[int, ...], sized: tuple[int, ...]) -> None:
    assert 1 <= len(free) <= 2 and all(1 <= e <= 12 for e in free) and math.prod(free) <= 100
    assert all(e & (e - 1) == 0 for e in pow2) and math.prod(pow2) <= lks.MAX_SIZE
    assert 2 <= len(sized) <= 3 and math.prod(sized) == 36


@given(st.data())
def test_coordinates_lie_in_the_domain(data: st.DataObject) -> None:
    x = data.draw(lks.coordinates(SWIZZLE))
    assert 0 <= x[0] < 8 and 0 <= x[1] < 64
    assert len(data.draw(lks.coordinates([3, 1, 2]))) == 3


@given(lks.bijective_layouts(max_size=512))
def test_bijective_layouts_are_bijective_and_small(layout: lk.Layout) -> None:
    assert layout.size <= 512
    assert_bijective(layout)


@given(st.data())
def test_bijective_layouts_with_fixed_shape_or_box(data: st.DataObject) -> None:
    shape = data.draw(lks.shapes(max_size=512), label="shape")
    assert data.draw(lks.bijective_layouts(shape)).input_shape == shape
    onto = data.draw(lks.bijective_layouts(onto=shape))
    assert onto.output_shape == shape and onto.is_bijective()


@given(lks.quasi_affine_layouts())
def test_quasi_affine_layouts_have_no_bitwise_nodes(layout: lk.Layout) -> None:
    stack = list(layout.forward_index)
    while stack:
        e = stack.pop()
        assert not isinstance(e, (Xor, And, Or)), layout
        stack.extend(e.children())
    assert layout.size <= lks.MAX_SIZE
    assert np.all(layout.table() >= 0)


@given(lks.xor_layouts(bijective=False, max_steps=0))
def test_xor_layouts_are_power_of_two_and_linear(layout: lk.Layout) -> None:
    assert all(e & (e - 1) == 0 for e in layout.input_shape)
    assert layout.to_linear() is not None


@settings(max_examples=20)
@given(lks.layouts(shape=(6, 4)))
def test_layouts_with_fixed_shape(layout: lk.Layout) -> None:
    assert layout.input_shape == (6, 4)


def test_strategies_reject_bad_arguments() -> None:
    bad = [
        lambda: lks.xor_layouts(shape=(3, 4)),
        lambda: lks.bijective_layouts(shape=(4, 4), onto=(8, 4)),
        lambda: lks.bijective_layouts(transforms=("transpose",)),
        lambda: lks.shapes(max_rank=0),
        lambda: lks.shapes(min_rank=3, max_rank=2),
        lambda: lks.shapes(size=0),
    ]
    for make in bad:
        with pytest.raises(InvalidArgument):
            make()
