"""Memo caches that register themselves, so forgetting every memoised result is one loop.

Layouts are immutable, so the caches only save time; :func:`clear_all` (``infer.clear_caches()``) empties
them, e.g. between benchmark runs.

>>> @memoized(maxsize=8)
... def square(x):
...     return x * x
>>> square(3), square.cache_info().currsize
(9, 1)
>>> sizes()[f"{__name__}.square"]
1
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


def sizes() -> dict[str, int]:
    """Entries each registered cache holds now, by the memoised function's qualified name (every cache has a
    ``maxsize``, so none grows with the number of programs a process solves)."""
    out: dict[str, int] = {}
    for fn in _CACHES:
        name = f"{fn.__module__}.{fn.__qualname__}"
        out[name] = out.get(name, 0) + fn.cache_info().currsize
    return out


def limits() -> dict[str, int | None]:
    """The ``maxsize`` of each registered cache, by the same names as :func:`sizes` (None: unbounded)."""
    return {f"{fn.__module__}.{fn.__qualname__}": fn.cache_info().maxsize for fn in _CACHES}


def clear_all() -> None:
    """Empty every registered cache."""
    for fn in _CACHES:
        fn.cache_clear()
