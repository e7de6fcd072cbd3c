"""Warp partition of a GEMM block tile (TileLang ``ComputeWarpPartition``), ``docs/reference.md#warp-partition``.

``(m, n)`` warps (``m*n == num_warps``) are valid when ``M % (16*m) == 0`` and ``N % (kN*n) == 0``,
``kN = 8`` (16 on Volta).  FullRow takes the largest valid ``m``, FullCol the largest valid ``n``,
Square minimises ``|(M/(16m)) / (N/(kN*n)) - M/N|`` over ``m = 1..nw`` (first wins ties; float32
as TileLang).  WGMMA (sm_90) needs ``m % 4 == 0`` (warp groups); TCGEN05 and FMA use ``(1, nw)``.
When no pair is valid a :class:`WarpPartitionError` names M, N, the warp count, the policy and
every pair tried.

>>> compute_warp_partition(32, 32, 4, "full_row")   # m = 4 would need M % 64 == 0
(2, 2)
>>> compute_warp_partition(128, 128, 8, "square")
(2, 4)
>>> compute_warp_partition(64, 128, 4, arch="sm_90")
(4, 1)
>>> try:
...     compute_warp_partition(16, 8, 4)
... except WarpPartitionError as e:
...     print(e.tried)
((1, 4, 'N % (8*4) = 8'), (2, 2, 'M % (16*2) = 16'), (4, 1, 'M % (16*4) = 16'))
"""

from __future__ import annotations

import numpy as np

from ...errors import LayoutError, ShapeError
from .hardware import arch_number

M_PER_WARP = 16
WARP_GROUP = 4

_POLICIES = {
    "square": "Square",
    "fullrow": "FullRow",
    "full_row": "FullRow",
    "fullcol": "FullCol",
    "full_col": "FullCol",
}
_INSTRUCTIONS = ("mma", "wgmma", "tcgen05", "fma")


class WarpPartitionError(LayoutError, ValueError):
    """No ``(m_warps, n_warps)`` pair covers the tile.  Attributes: ``M``, ``N``, ``num_warps``,
    ``policy``, ``instruction`` and ``tried`` (``(m, n, why_invalid)`` for every pair considered)."""

    def __init__(self, message: str, M: int, N: int, num_warps: int, policy: str, instruction: str, tried: tuple):
        super().__init__(message)
        self.M, self.N, self.num_warps, self.policy, self.instruction = M, N, num_warps, policy, instruction
        self.tried = tried


def normalize_policy(policy: object) -> str:
    """``"Square" | "FullRow" | "FullCol"`` from a name (any case, ``full_row`` ...) or TileLang's
    ``GemmWarpPolicy`` value (0, 1, 2)."""
    if isinstance(policy, (int, np.integer)) and not isinstance(policy, bool):
        names = {0: "Square", 1: "FullRow", 2: "FullCol"}
        if int(policy) in names:
            return names[int(policy)]
    elif isinstance(policy, str) or hasattr(policy, "name"):
        text = policy if isinstance(policy, str) else policy.name  # type: ignore[union-attr]
        key = text.strip().lower().replace("-", "_")
        if key in _POLICIES:
            return _POLICIES[key]
    raise ShapeError(f"unknown warp policy {policy!r}: expected 'square', 'full_row' or 'full_col'")


def default_instruction(arch: str | int, M: int, num_warps: int) -> str:
    """The GEMM instruction family when only the arch is known: sm_90 uses WGMMA when the tile can
    (``M >= 64`` and whole warp groups), everything else MMA.  Use ``instruction=`` (or
    :func:`~layoutkit.targets.nv.gemm.select_gemm_instruction`, which also checks dtypes) otherwise."""
    sm = arch_number(arch)
    if 90 <= sm < 100 and M >= 64 and num_warps % WARP_GROUP == 0:
        return "wgmma"
    return "mma"


def compute_warp_partition(
    M: int,
    N: int,
    num_warps: int,
    policy: object = "square",
    arch: str | int = "sm_80",
    *,
    instruction: str | None = None,
) -> tuple[int, int]:
    """``(m_warps, n_warps)`` for an ``M x N`` block tile on ``num_warps`` warps (see the module doc)."""
    M, N, nw = (_int(v, name) for v, name in ((M, "M"), (N, "N"), (num_warps, "num_warps")))
    pol = normalize_policy(policy)
    inst = default_instruction(arch, M, nw) if instruction is None else str(instruction).lower()
    if inst not in _INSTRUCTIONS:
        raise ShapeError(f"unknown GEMM instruction {instruction!r}: expected one of {_INSTRUCTIONS}")
    if inst in ("tcgen05", "fma"):
        return 1, nw
    sm = arch_number(arch)
    k_n = 16 if 70 <= sm < 75 and inst == "mma" else 8
    group = WARP_GROUP if inst == "wgmma" else 1

    def fail(reason: str, tried: tuple) -> WarpPartitionError:
        listing = ", ".join(f"{m}x{n} ({why})" for m, n, why in tried) or "none"
        return WarpPartitionError(
            f"no valid warp partition for T.gemm ({inst}): M={M}, N={N}, {nw} warps, policy={pol}: {reason}; "
            f"each warp must own a multiple of {M_PER_WARP} rows and {k_n} columns"
            + (f", with m_warps a multiple of {group}" if group > 1 else "")
            + f". Pairs tried: {listing}",
            M, N, nw, pol, inst, tried,
        )

    if inst == "wgmma" and nw % group:
        raise fail(f"warp-group MMA needs a multiple of {group} warps", ())
    if M % M_PER_WARP:
        raise fail(f"M must be a multiple of {M_PER_WARP}", ())
    if N % k_n:
        raise fail(f"N must be a multiple of {k_n}", ())

    def why_invalid(m: int, n: int) -> str | None:
        if m % group:
            return f"m % {group} = {m % group}"
        if M % (m * M_PER_WARP):
            return f"M % ({M_PER_WARP}*{m}) = {M % (m * M_PER_WARP)}"
        if N % (n * k_n):
            return f"N % ({k_n}*{n}) = {N % (n * k_n)}"
        return None

    tried: list[tuple[int, int, str]] = []
    if pol == "FullRow":
        order = [(m, nw // m) for m in range(nw, 0, -1) if nw % m == 0]
    elif pol == "FullCol":
        order = [(nw // n, n) for n in range(nw // group, 0, -1) if nw % n == 0]
    else:
        order = [(m, nw // m) for m in range(1, nw + 1) if nw % m == 0]
    order = [(m, n) for m, n in order if m % group == 0 or pol == "FullCol"]
    best: tuple[int, int] | None = None
    if pol == "Square":
        ideal = np.float32(M) / np.float32(N)
        score = np.float32(np.finfo(np.float32).max)
        for m, n in order:
            why = why_invalid(m, n)
            if why is not None:
                tried.append((m, n, why))
                continue
            per_m = np.float32(M) / np.float32(m * M_PER_WARP)
            per_n = np.float32(N) / np.float32(n * k_n)
            balance = np.float32(abs(np.float32(per_m / per_n) - ideal))
            tried.append((m, n, f"balance {float(balance):g}"))
            if balance < score:
                score, best = balance, (m, n)
    else:
        for m, n in order:
            why = why_invalid(m, n)
            if why is None:
                best = (m, n)
                break
            tried.append((m, n, why))
    if best is None:
        raise fail("no pair divides the tile", tuple(tried))
    return best


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ShapeError(f"{what} must be a positive integer; found {value!r}")
    return int(value)
