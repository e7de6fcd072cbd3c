"""Layout conversions in free mode: an op may read a fragment through a *converted view*.

A conversion sits on a fragment -> fragment edge: a loop op that reads fragment ``F`` and writes
another fragment.  In an attempt with the edge ``(op, F)`` converted, the op's rule does not see
``F``'s layout: it lays its loop out as if ``F`` were free and proposes a layout ``F'`` for its read,
which becomes the view (it is never committed to ``F``).  After the attempt, ``F`` keeps the layout
its other users gave it and the conversion ``F -> F'`` (store through shared memory, load back) is
priced by the cost model (:func:`layoutkit.cost.conversion_price`) and added to the attempt's score,
so free mode weighs "convert here" against "re-root the component".

>>> from layoutkit.infer import Program
>>> p = Program(threads=128)
>>> x = p.alloc_fragment("x", (8, 8), "float32"); y = p.alloc_fragment("y", (8, 8), "float32")
>>> op = p.parallel((8, 8), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (j, i))])
>>> conversion_edges([op], lambda b: p.buffers[b].scope == "local.fragment")
[(0, 'x')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ..algebra.layout import Layout
from ..fragment.fragment import Fragment


@dataclass(frozen=True)
class LayoutConversion:
    """Fragment ``buffer`` laid out as ``src`` is read by ``op`` as ``dst`` (converted through shared
    memory); ``cost`` is the :class:`~layoutkit.cost.AttemptCost` added to the attempt, ``detail`` the
    model's figures (e.g. the wavefronts of the NVIDIA backend's ``smem-aware`` model) or None."""

    buffer: str
    op: str
    src: Fragment
    dst: Fragment
    cost: object
    detail: object = None

    def __str__(self) -> str:
        extra = "" if self.detail is None else f" ({self.detail})"
        return (f"convert {self.buffer} for {self.op}: {self.src.describe()} -> {self.dst.describe()}, "
                f"cost {self.cost}{extra}")


def conversion_edges(ops, is_fragment: Callable[[str], bool]) -> list[tuple[int, str]]:
    """``(op uid, fragment)`` for every loop op reading a fragment it does not write while writing
    another fragment, in op order."""
    out: list[tuple[int, str]] = []
    for op in ops:
        if op.loop is None:
            continue
        reads = {a.buffer for a in op.accesses if not a.is_write and is_fragment(a.buffer)}
        writes = {a.buffer for a in op.accesses if a.is_write and is_fragment(a.buffer)}
        if writes:
            out.extend((op.uid, b) for b in sorted(reads - writes))
    return out


class MaskedLayouts(Mapping):
    """``layouts`` with some buffers replaced by their converted views (or hidden while the view is
    unknown): what a converted op's rule sees."""

    def __init__(self, base: Mapping, views: Mapping[str, Layout | None]):
        self._base = base
        self._views = views

    def __getitem__(self, name: str) -> Layout:
        if name in self._views:
            view = self._views[name]
            if view is None:
                raise KeyError(name)
            return view
        return self._base[name]

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name in self._views:
            return self._views[name] is not None
        return name in self._base

    def get(self, name, default=None):
        return self[name] if name in self else default

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._base if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)
