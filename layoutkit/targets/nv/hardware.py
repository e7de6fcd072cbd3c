"""NVIDIA hardware constants shared by the target's modules (one definition each), and the one reader of
NVIDIA arch strings (``"sm_90a"``): every module that needs an SM number parses it here.

>>> WARP_SIZE
32
>>> parse_arch("sm_90a"), arch_number("sm_80")
((90, 'a'), 80)
"""

from __future__ import annotations

import re

from ...errors import TargetError

WARP_SIZE = 32
"""Threads per warp, on every NVIDIA architecture layoutkit targets (sm_70 .. sm_120)."""

ARCH_RANGE = (70, 120)
"""The SM numbers the NVIDIA rules cover, both ends included: sm_70 (Volta, the first with tensor cores)
.. sm_120 (consumer Blackwell)."""

ARCH_SUFFIXES = ("", "a", "f")
"""Arch suffixes: none, ``a`` (arch-specific features: ``sm_90a`` wgmma, ``sm_100a`` tcgen05) and ``f``
(family-portable features, ``sm_100f``)."""

_ARCH = re.compile(r"sm_?(\d+)([a-z]?)")

__all__ = ["ARCH_RANGE", "ARCH_SUFFIXES", "WARP_SIZE", "arch_number", "parse_arch"]


def parse_arch(arch: str | int) -> tuple[int, str]:
    """``(SM number, suffix)`` of an NVIDIA arch: ``"sm_90a"`` (any case, the underscore optional) or an
    int SM number.  Law: ``f"sm_{n}{s}"`` of ``(n, s) = parse_arch(t)`` parses back to ``(n, s)``.  Anything
    else, or a suffix other than ``a`` / ``f``, raises :class:`~layoutkit.errors.TargetError` quoting it
    (the range of :data:`ARCH_RANGE` is the caller's to check: TileLang's own arch strings go beyond it).

    >>> parse_arch("sm_90a"), parse_arch("SM100f"), parse_arch(75)
    ((90, 'a'), (100, 'f'), (75, ''))
    >>> parse_arch("sm_8x")
    Traceback (most recent call last):
    ...
    layoutkit.errors.TargetError: expected an NVIDIA arch such as 'sm_80' or 'sm_90a'; found 'sm_8x'
    """
    if isinstance(arch, int) and not isinstance(arch, bool):
        if arch > 0:
            return arch, ""
    elif isinstance(arch, str):
        m = _ARCH.fullmatch(arch.strip().lower())
        if m and m.group(2) in ARCH_SUFFIXES:
            return int(m.group(1)), m.group(2)
    raise TargetError(f"expected an NVIDIA arch such as 'sm_80' or 'sm_90a'; found {arch!r}")


def arch_number(arch: str | int) -> int:
    """The SM number of ``arch`` (:func:`parse_arch` without the suffix).

    >>> arch_number("sm_90a"), arch_number(75)
    (90, 75)
    """
    return parse_arch(arch)[0]
