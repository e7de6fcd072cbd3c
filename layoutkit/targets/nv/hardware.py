"""NVIDIA hardware constants shared by the target's modules (one definition each).

>>> WARP_SIZE
32
"""

from __future__ import annotations

WARP_SIZE = 32
"""Threads per warp, on every NVIDIA architecture layoutkit targets (sm_70 .. sm_100)."""

__all__ = ["WARP_SIZE"]
