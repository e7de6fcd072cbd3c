"""The structural F2 proof (algebra.bitlinear): same verdicts and boxes as enumeration, witnesses that collide."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

import layoutkit as lk
from layoutkit.algebra.bitlinear import bit_linear
from layoutkit.errors import ProofError
from layoutkit.testing.strategies import bijective_layouts, layouts, xor_layouts


def _check_against_enumeration(layout: lk.Layout) -> bool:
    affine = bit_linear(layout.forward_index, layout.forward_vars, layout.input_shape)
    if affine is None:
        return False
    linear, offset = affine
    assert tuple(m + 1 for m in linear.max_values(offset)) == layout.output_shape
    f2, enum = layout.prove_bijective("f2"), layout.prove_bijective("enumerate")
    assert f2.method == "f2" and f2.verdict == enum.verdict
    if not f2.verdict and "collision" in f2.witness:
        x, y, image = f2.witness["collision"]
        assert x != y
        assert tuple(layout.map_forward_index(list(x))) == tuple(layout.map_forward_index(list(y))) == image
    if not f2.verdict and "unreachable" in f2.witness:
        point = np.asarray(f2.witness["unreachable"])
        assert (point < np.asarray(layout.output_shape)).all()
        assert not (layout.table().reshape(-1, len(point)) == point).all(axis=1).any()
    return True


@given(xor_layouts())
def test_xor_layouts_agree_with_enumeration(layout):
    _check_against_enumeration(layout)


@given(bijective_layouts(pow2=True))
def test_pow2_bijections_agree_with_enumeration(layout):
    _check_against_enumeration(layout)


@given(layouts())
def test_any_layout_agrees_when_bit_linear(layout):
    _check_against_enumeration(layout)


def test_the_structures_it_reads():
    i, j = lk.Layout([64, 64], lambda i, j: (i, j)).forward_vars
    swizzle = lk.Layout([64, 64], lambda i, j: (i, ((j // 8) ^ (i % 8)) * 8 + j % 8))
    assert _check_against_enumeration(swizzle) and swizzle.prove_bijective().method == "f2"
    nested = lk.Layout([64, 64], lambda i, j: (i, j ^ (i ^ i // 2)))
    assert _check_against_enumeration(nested)
    damaged = lk.Layout([16, 16], lambda i, j: (i % 8, j ^ i))          # i's top bit is lost
    assert _check_against_enumeration(damaged) and not damaged.prove_bijective().verdict
    assert bit_linear((i + j,), (i, j), (64, 64)) is None               # carries
    assert bit_linear((i,), (i,), (48,)) is None                        # not a power of two
    assert lk.Layout([48, 4], lambda i, j: (j, i)).prove_bijective().method == "enumerate"


def test_large_xor_is_decided_without_enumerating():
    L = lk.Layout([4096, 4096], lambda i, j: (i, j ^ i))
    proof = L.prove_bijective()
    assert (proof.method, proof.verdict) == ("f2", True)
    bad = lk.Layout([4096, 4096], lambda i, j: (i // 2, j ^ i))
    proof = bad.prove_bijective()
    assert proof.method == "f2" and not proof.verdict
    x, y, image = proof.witness["collision"]
    assert tuple(bad.map_forward_index(list(x))) == tuple(bad.map_forward_index(list(y))) == image


def test_f2_on_a_map_without_that_structure_is_a_typed_error():
    with pytest.raises(ProofError, match="not affine over F2"):
        lk.Layout([6, 4], lambda i, j: (i, j)).prove_bijective("f2")
    assert np.array_equal(lk.Layout([8], lambda i: (i ^ 5,)).table().ravel(), np.arange(8) ^ 5)


def test_large_f2_maps_get_their_box_and_inverse_from_the_bit_matrix():
    L = lk.Layout([65536, 65536], lambda i, j: (j, i))          # 2**32 coordinates: never enumerated
    assert L.output_shape == (65536, 65536)
    inv = L.inverse()
    assert str(inv) == "Layout((65536, 65536) -> (65536, 65536), transform: (_i, _j) -> (_j, _i))"
    swz = lk.Layout([8192, 16384], lambda i, j: (i, j ^ (i % 1024)))
    assert swz.output_shape == (8192, 16384)
    assert tuple(swz.inverse().map_forward_index([5, 1029])) == (5, 1029 ^ 5)


def test_round_trip_on_bit_matrices_rejects_a_wrong_inverse():
    from layoutkit.algebra.bitlinear import composes_to_identity

    fwd = lk.Layout([16, 16], lambda i, j: (i, j ^ i))
    good, bad = lk.Layout([16, 16], lambda a, b: (a, b ^ a)), lk.Layout([16, 16], lambda a, b: (a, b))
    assert composes_to_identity(fwd.affine_f2(), good.affine_f2()) is True
    assert composes_to_identity(fwd.affine_f2(), bad.affine_f2()) is False
