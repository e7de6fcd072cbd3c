"""Differential tests against pycute (CUTLASS's Python CuTe, ``nvidia-cutlass``), on the cases
where pycute agrees with C++ CuTe; and the documented cases where it does not.

Skipped when ``import pycute`` fails (pycute is not a dependency of layoutkit).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from layoutkit import tla
from layoutkit.errors import LayoutError

try:
    import pycute
except Exception:  # noqa: BLE001 - any import failure means "no oracle"
    pycute = None

pytestmark = [pytest.mark.oracle, pytest.mark.skipif(pycute is None, reason="pycute is not installed")]


def _fmt(x) -> str:
    if isinstance(x, tuple):
        return "(" + ",".join(_fmt(v) for v in x) + ")"
    return str(x)


def theirs(layout) -> str:
    return f"{_fmt(layout.shape)}:{_fmt(layout.stride)}"


def ours(layout) -> str:
    return str(layout).replace("_", "")


def _random_layout(rng: random.Random, max_rank: int, injective: bool) -> tuple:
    rank = rng.randint(1, max_rank)
    shapes = [rng.choice((2, 3, 4, 6, 8)) for _ in range(rank)]  # no size-1 modes: see the coalesce_x case
    if injective:
        order = list(range(rank))
        rng.shuffle(order)
        strides = [0] * rank
        cur = 1
        for k in order:
            cur *= rng.choice((1, 1, 2))
            strides[k] = cur
            cur *= shapes[k]
    else:
        strides = [rng.choice((0, 1, 2, 3, 4, 8)) for _ in range(rank)]
    if rank == 1:
        return shapes[0], strides[0]
    return tuple(shapes), tuple(strides)


def _both(op: str, *args):
    """Run ``op`` in pycute and layoutkit on the same (shape, stride) pairs / ints."""
    p_args = [pycute.Layout(*a) if isinstance(a, tuple) else a for a in args]
    t_args = [tla.Layout(*a) if isinstance(a, tuple) else a for a in args]
    try:
        p = getattr(pycute, op)(*p_args)
    except (AssertionError, ZeroDivisionError, TypeError):
        p = None
    try:
        t = getattr(tla, op)(*t_args)
    except LayoutError as err:
        t = err
    return p_args, t_args, p, t


@pytest.mark.parametrize("seed", range(4))
def test_random_agreement_with_pycute(seed):
    rng = random.Random(seed)
    checked = 0
    for _ in range(150):
        op = rng.choice(("composition", "complement", "right_inverse", "coalesce", "logical_divide",
                         "zipped_divide", "tiled_divide", "logical_product"))
        a = _random_layout(rng, 3, injective=rng.random() < 0.8 or op == "right_inverse")
        b = _random_layout(rng, 2, injective=True)
        if op == "complement":
            args = (b, rng.choice((16, 32, 48, 64)))
        elif op in ("right_inverse", "coalesce"):
            args = (a,)
        else:
            args = (a, b)
        p_args, t_args, p, t = _both(op, *args)
        if op == "composition" and p is not None:
            A, B = p_args
            pycute_right = [p(i) for i in range(pycute.size(p))] == [A(B(i)) for i in range(pycute.size(B))]
            if not pycute_right:
                assert isinstance(t, LayoutError), f"pycute is wrong on {a} o {b} ({theirs(p)}); layoutkit must refuse"
                continue
        if p is None or isinstance(t, LayoutError):
            continue  # refused by one side (pycute asserts where layoutkit may still be exact)
        assert ours(t) == theirs(p), (op, args)
        checked += 1
    assert checked > 60


def test_swizzles_agree():
    for b, m, s in ((3, 3, 3), (2, 0, 3), (1, 2, -1), (3, 4, 3), (2, 1, -2)):
        mine, ref = tla.Swizzle(b, m, s), pycute.Swizzle(b, m, s)
        x = np.arange(mine.size)
        assert np.array_equal(mine(x), [ref(int(v)) for v in x])
    inner = ((8, 64), (64, 1))
    mine = tla.composition(tla.Swizzle(3, 3, 3), tla.Layout(*inner))
    ref = pycute.ComposedLayout(pycute.Swizzle(3, 3, 3), 0, pycute.Layout(*inner))
    assert [mine(i) for i in range(512)] == [ref(i) for i in range(512)]


# ---- where pycute and C++ CuTe differ (layoutkit follows C++) -------------------------------------------------------


def test_negative_strides_and_gappy_complements():
    """Complements whose strides do not divide agree with pycute (and C++); a negative-stride composition
    across a broadcast mode does not: pycute returns 4:0, C++ (and layoutkit) (2,2):(1,-512)."""
    for shape, stride in (((4, 6), (1, 6)), ((4, 10), (1, 10)), ((3, 2), (1, 7)), ((2, 2), (1, 3))):
        want = theirs(pycute.complement(pycute.Layout(shape, stride)))
        assert ours(tla.complement(tla.Layout(shape, stride))) == want
    A, B = ((1, (2, 4)), (0, (-1, 512))), (4, -1)
    assert theirs(pycute.composition(pycute.Layout(*A), pycute.Layout(*B))) == "4:0"
    assert ours(tla.composition(tla.Layout(*A), tla.Layout(*B))) == "(2,2):(1,-512)"
    assert ours(tla.composition(tla.Layout(4, 1), tla.Layout(4, -1))) == theirs(
        pycute.composition(pycute.Layout(4, 1), pycute.Layout(4, -1)))


def test_documented_differences():
    # idx2crd with a tuple index: pycute splits every mode with the global prefix strides
    assert pycute.idx2crd((5, 1), ((2, 3), 4)) == ((1, 2), 0)
    assert tla.idx2crd((5, 1), ((2, 3), 4)) == ((1, 2), 1)
    # idx2crd of an integer: pycute wraps the last mode, C++ leaves it unbounded
    assert pycute.idx2crd(17, (4, 2)) == (1, 0) and tla.idx2crd(17, (4, 2)) == (1, 4)
    # composition across a mode boundary: pycute returns a size-4 layout, C++ refuses
    assert pycute.size(pycute.composition(pycute.Layout((4, 6), (1, 5)), pycute.Layout(6, 1))) == 4
    with pytest.raises(LayoutError):
        tla.composition(tla.Layout((4, 6), (1, 5)), tla.Layout(6, 1))
    # a trailing size-1 mode: pycute's coalesce drops its stride, C++'s coalesce_x keeps it
    assert theirs(pycute.composition(pycute.Layout((4, 1), (1, 8)), pycute.Layout(8, 1))) == "8:1"
    assert ours(tla.composition(tla.Layout((4, 1), (1, 8)), tla.Layout(8, 1))) == "(4,2):(1,8)"
    # right_inverse with a stride-0 mode
    assert theirs(pycute.right_inverse(pycute.Layout((2, 4, 4, 6), (4, 1, 0, 8)))) == "1:0"
    assert ours(tla.right_inverse(tla.Layout((2, 4, 4, 6), (4, 1, 0, 8)))) == "(4,2,6):(2,1,32)"
    # left_inverse: pycute builds right_inverse((L, complement(L))), C++ sorts the strides
    assert theirs(pycute.left_inverse(pycute.Layout(4, 2))) == "(2,4):(4,1)"
    assert ours(tla.left_inverse(tla.Layout(4, 2))) == "(2,4):(0,1)"
    # logical_product with an integer tiler: pycute calls logical_divide
    assert theirs(pycute.logical_product(pycute.Layout((2, 2), (1, 2)), 3)) == "(3,2):(1,3)"
    assert ours(tla.logical_product(tla.Layout((2, 2), (1, 2)), 3)) == "((2,2),3):((1,2),4)"
    # composition with a tuple tiler: C++ drops the modes the tiler does not reach
    A = ((8, 8, 4), (8, 1, 64))
    t = (pycute.Layout(4, 2), None)
    assert theirs(pycute.composition(pycute.Layout(*A), t)) == "(4,8,4):(16,1,64)"
    assert ours(tla.composition(tla.Layout(*A), (tla.Layout(4, 2), None))) == "(4,8):(16,1)"
    # complement towards a shape (logical_divide's cotarget in C++): pycute cannot
    with pytest.raises(TypeError):
        pycute.complement(pycute.Layout((16,), (1,)), (128, 128))
    assert ours(tla.complement(tla.Layout((16,), (1,)), (128, 128))) == "1024:16"
