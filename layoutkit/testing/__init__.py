"""Helpers for testing your own layouts: assertions and (optionally) hypothesis strategies.

The assertions need nothing beyond layoutkit itself.  The hypothesis strategies live in
:mod:`layoutkit.testing.strategies` and are also reachable here by name (``layoutkit.testing.shapes``,
``layoutkit.testing.bijective_layouts``, ...); hypothesis is imported only when one of them is first
used, so ``import layoutkit.testing`` works without hypothesis installed.

>>> import layoutkit as lk
>>> from layoutkit.testing import assert_bijective, assert_inverse_round_trip
>>> L = lk.Layout([16, 32], lambda i, j: (i, ((j // 4) ^ (i % 8)) * 4 + j % 4))
>>> assert_bijective(L).verdict
True
>>> assert_inverse_round_trip(L)

A property test of a layout family in a few lines (hypothesis required):

>>> from hypothesis import given, settings
>>> from layoutkit.testing import bijective_layouts
>>> @settings(max_examples=10, deadline=None)
... @given(bijective_layouts(pow2=True, max_size=256))
... def test_round_trip(layout):
...     assert_inverse_round_trip(layout)
>>> test_round_trip()
"""

from __future__ import annotations

from .assertions import assert_bijective, assert_inverse_round_trip, assert_layouts_equal

_STRATEGIES = (
    "shapes",
    "coordinates",
    "bijective_layouts",
    "quasi_affine_layouts",
    "xor_layouts",
    "layouts",
    "fragments",
)

__all__ = ["assert_bijective", "assert_inverse_round_trip", "assert_layouts_equal", *_STRATEGIES]


def __getattr__(name: str):
    """Import :mod:`layoutkit.testing.strategies` (and hypothesis) on first use of a strategy."""
    if name in _STRATEGIES or name == "strategies":
        import importlib

        module = importlib.import_module(".strategies", __name__)
        return module if name == "strategies" else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_STRATEGIES) | {"strategies"})
