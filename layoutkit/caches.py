"""Memo caches that register themselves, so forgetting every memoised result is one loop.

Layouts are immutable, so the caches only save time; :func:`clear_all` (``infer.clear_caches()``) empties
them, e.g. between benchmark runs.

>>> @memoized(maxsize=8)
... def square(x):
...     return x * x
>>> square(3), square.cache_info().currsize
(9, 1)
>>> clear_all(); square.cache_info().currsize
0
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

_CACHES: list = []


def memoized(maxsize: int | None = 1024) -> Callable[[Callable], Callable]:
    """:func:`functools.lru_cache` that registers the cache with :func:`clear_all`."""

    def wrap(fn: Callable) -> Callable:
        cached = lru_cache(maxsize=maxsize)(fn)
        _CACHES.append(cached)
        return cached

    return wrap


def clear_all() -> None:
    """Empty every registered cache."""
    for fn in _CACHES:
        fn.cache_clear()
