"""Warp partition: TileLang's examples, a brute-force specification, and the typed error."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.targets import nv


@pytest.mark.parametrize(
    ("args", "want"),
    [
        ((32, 32, 4, "square"), (2, 2)),
        ((32, 32, 4, "full_row"), (2, 2)),  # m = 4 invalid: 32 % 64
        ((32, 32, 4, "full_col"), (1, 4)),
        ((64, 64, 4, "FullRow"), (4, 1)),
        ((128, 128, 8, "square"), (2, 4)),
        ((128, 128, 8, 2), (1, 8)),  # TileLang's GemmWarpPolicy.FullCol == 2
        ((64, 64, 4, "square", "sm_70"), (2, 2)),
        ((128, 16, 4, "square", "sm_70"), (4, 1)),  # Volta: 16 columns per warp
        ((64, 64, 4, "square", "sm_90"), (4, 1)),  # WGMMA: warp groups of 4 along M
        ((128, 128, 8, "full_col", "sm_90"), (4, 2)),
        ((32, 64, 4, "square", "sm_90"), (2, 2)),  # M < 64: no WGMMA, plain MMA
    ],
)
def test_examples(args, want):
    assert nv.compute_warp_partition(*args) == want


def test_instruction_override():
    assert nv.compute_warp_partition(64, 64, 4, instruction="fma") == (1, 4)
    assert nv.compute_warp_partition(64, 64, 8, instruction="tcgen05") == (1, 8)
    assert nv.compute_warp_partition(64, 64, 8, arch="sm_90", instruction="mma") == (2, 4)


def test_error_names_everything():
    with pytest.raises(nv.WarpPartitionError) as info:
        nv.compute_warp_partition(16, 16, 4, "full_row")
    err = info.value
    assert isinstance(err, lk.LayoutError)
    assert (err.M, err.N, err.num_warps, err.policy) == (16, 16, 4, "FullRow")
    assert [(m, n) for m, n, _ in err.tried] == [(4, 1), (2, 2), (1, 4)]
    text = str(err)
    for part in ("M=16", "N=16", "4 warps", "FullRow", "4x1", "2x2", "1x4"):
        assert part in text
    with pytest.raises(nv.WarpPartitionError):
        nv.compute_warp_partition(40, 64, 4)  # M % 16
    with pytest.raises(nv.WarpPartitionError):
        nv.compute_warp_partition(64, 64, 6, arch="sm_90", instruction="wgmma")  # not whole warp groups
    with pytest.raises(lk.ShapeError):
        nv.compute_warp_partition(64, 64, 4, "diagonal")
    with pytest.raises(lk.ShapeError):
        nv.compute_warp_partition(64, 64, 0)


def _spec(M, N, nw, policy, k_n, group):
    """The rule of docs/reference.md#warp-partition, written independently."""
    pairs = [(m, nw // m) for m in range(1, nw + 1) if nw % m == 0]
    valid = [(m, n) for m, n in pairs if m % group == 0 and M % (16 * m) == 0 and N % (k_n * n) == 0]
    if not valid or M % 16 or N % k_n:
        return None
    if policy == "full_row":
        return max(valid)
    if policy == "full_col":
        return max(valid, key=lambda p: p[1])
    import numpy as np

    ideal = np.float32(M) / np.float32(N)
    scores = [abs(np.float32(np.float32(M) / np.float32(16 * m) / (np.float32(N) / np.float32(k_n * n))) - ideal)
              for m, n in valid]
    return valid[scores.index(min(scores))]


@given(
    M=st.sampled_from([16, 32, 48, 64, 96, 128, 256]),
    N=st.sampled_from([8, 16, 24, 32, 64, 96, 128, 256]),
    nw=st.sampled_from([1, 2, 3, 4, 6, 8, 16]),
    policy=st.sampled_from(["square", "full_row", "full_col"]),
    arch=st.sampled_from(["sm_80", "sm_70", "sm_90"]),
)
def test_valid_pair_or_typed_error(M, N, nw, policy, arch):
    inst = "wgmma" if arch == "sm_90" and M >= 64 and nw % 4 == 0 else "mma"
    k_n = 16 if arch == "sm_70" else 8
    want = _spec(M, N, nw, policy, k_n, 4 if inst == "wgmma" else 1)
    try:
        got = nv.compute_warp_partition(M, N, nw, policy, arch)
    except nv.WarpPartitionError as err:
        assert want is None
        assert (err.M, err.N, err.num_warps) == (M, N, nw)
        return
    m, n = got
    assert got == want
    assert m * n == nw and M % (16 * m) == 0 and N % (k_n * n) == 0
