"""The constructor tag of a layout: which constructor built it (an NV swizzle, an Ascend fractal), kept
as metadata beside the map (:attr:`Tagged.tag`, :meth:`Tagged.with_tag`, ``swizzle``, ``fractal``).

A mixin of :class:`~layoutkit.Layout` (and so of every Fragment), separate from the map because a tag
is not part of it: it takes no part in ``==`` or ``hash``, and the map's operations never read it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, TypeVar

_T = TypeVar("_T", bound="Tagged")


class Tagged:
    """The ``tag`` slot's accessors (the slot itself, ``_tag``, is declared by :class:`~layoutkit.Layout`)."""

    __slots__ = ()
    _tag: Hashable | None

    @property
    def tag(self) -> Hashable | None:
        """Which constructor built this layout (an NV swizzle or Ascend fractal description), or None.

        The tag is metadata, not identity: it takes no part in ``==`` or ``hash``, so two constructors
        that build the same map build equal layouts, and inference, which merges and compares buffers'
        layouts by their maps, never sees two different layouts for one map.  :meth:`expand` keeps a
        tag that has an ``expanded(shape)`` method (returning the tag of the expanded layout or None);
        every other derived layout is untagged.

        >>> import layoutkit as lk
        >>> L = lk.Layout([4], lambda i: i)
        >>> T = L.with_tag("built-by-me")
        >>> T.tag, L.tag, T == L, hash(T) == hash(L)
        ('built-by-me', None, True, True)
        """
        return self._tag

    def with_tag(self: _T, tag: Hashable | None) -> _T:
        """The same layout carrying ``tag`` (shares the cached tables: the map is unchanged)."""
        out = object.__new__(type(self))
        for klass in type(self).__mro__:
            for slot in getattr(klass, "__slots__", ()):
                if hasattr(self, slot):
                    object.__setattr__(out, slot, getattr(self, slot))
        object.__setattr__(out, "_tag", tag)
        return out

    def tag_as(self, role: str) -> Any:
        """The tag when its ``role`` attribute is ``role`` (``"swizzle"``, ``"fractal"``), else None."""
        return self._tag if getattr(self._tag, "role", None) == role else None

    @property
    def swizzle(self) -> Any:
        """The NV shared-memory swizzle description (``nv.SwizzleInfo``) of a layout an nv constructor
        built, else None."""
        return self.tag_as("swizzle")

    @property
    def fractal(self) -> Any:
        """The Ascend fractal description (``ascend.FractalTag``) of a layout an ascend constructor
        built, else None."""
        return self.tag_as("fractal")


__all__ = ["Tagged"]
