"""A hook point of a host compiler, patched once however many threads use it: layoutkit stands in for a
compiler's pass (TileLang's ``LayoutInference``; ``triton.compile`` or Mosaic's ``infer_layout`` alike) only
inside the blocks that ask for it, in the thread (or :mod:`contextvars` context) that opened them.

An :class:`Interposer` owns one hook point.  While at least one :meth:`Interposer.override` block is open
anywhere in the process, the host's hook is a *dispatcher* (installed by the first block to open, under a
lock) that asks :meth:`Interposer.current` on every call which override the calling context has; the last
block to close, in whatever order the blocks close and whether or not they raise, puts the host's original
back.  Each block's override lives in a :class:`~contextvars.ContextVar`: a thread sees only the blocks it
opened itself (a fresh thread, a ``ThreadPoolExecutor`` worker, starts with none and gets the host's own
behaviour), nested blocks shadow outer ones, and an ``asyncio`` task or a ``contextvars.copy_context().run``
carries the blocks of the context it was copied from.  :meth:`Interposer.override_process` (an environment
switch's hook) sets the override of every context that has no block of its own, for the rest of the process.

Laws: with no block open (and no process-wide override) the host holds exactly what it held before the first
block opened (the same objects); ``current()`` in a context is the value of the innermost block open in it,
else the process-wide override, else None.

>>> import types
>>> host = types.SimpleNamespace(greet=lambda: "host")
>>> original = host.greet
>>> def patch(current):
...     host.greet = lambda: current() or original()
...     return lambda: setattr(host, "greet", original)
>>> hook = Interposer("greet", patch)
>>> with hook.override("outer"):
...     with hook.override("inner"):
...         inner = host.greet()
...     outer = host.greet()
>>> inner, outer, host.greet(), host.greet is original
('inner', 'outer', 'host', True)
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Generic, TypeVar

__all__ = ["Interposer", "attribute_patch"]

T = TypeVar("T")

Patch = Callable[[Callable[[], T | None]], Callable[[], None]]
"""``patch(current) -> restore``: put a dispatcher on the host that calls ``current()`` on every call to find
the calling context's override (None: do what the host's original does), and return the function that puts
the original back."""


class Interposer(Generic[T]):
    """One hook point of a host (see the module doc): ``name`` names its context variable, ``patch`` installs
    the dispatcher (called when the first block opens) and returns its undo (called when the last closes)."""

    def __init__(self, name: str, patch: Patch):
        self.name = name
        self._patch = patch
        self._blocks: ContextVar[tuple[tuple[object, T | None], ...]] = ContextVar(f"layoutkit.{name}", default=())
        self._lock = threading.Lock()
        self._open = 0
        self._restore: Callable[[], None] | None = None
        self._process: T | None = None

    def current(self) -> T | None:
        """The override of the innermost block open in the calling context, else the process-wide one, else
        None."""
        blocks = self._blocks.get()
        return blocks[-1][1] if blocks else self._process

    def override_process(self, value: T) -> bool:
        """From now until the process ends, :meth:`current` is ``value`` in every context without a block of
        its own (the dispatcher stays installed; counted as one open block).  Idempotent: False, and nothing
        changes, when a process-wide override is already set.

        >>> import types
        >>> host = types.SimpleNamespace(f=abs)
        >>> hook = Interposer("f", attribute_patch(host, "f"))
        >>> hook.override_process(lambda original, x: 0), hook.override_process(None), host.f(-3)
        (True, False, 0)
        >>> with hook.override(None):  # a block of the context's own shadows it
        ...     host.f(-3)
        3
        """
        with self._lock:
            if self._process is not None:
                return False
            if self._open == 0:
                self._restore = self._patch(self.current)
            self._open += 1
            self._process = value
            return True

    @property
    def open_blocks(self) -> int:
        """How many blocks are open in the whole process (the dispatcher is installed while this is > 0)."""
        return self._open

    @contextmanager
    def override(self, value: T | None) -> Iterator[T | None]:
        """Within the block, :meth:`current` in this context is ``value`` (None: the host's own behaviour,
        shadowing an outer block); yields ``value``."""
        with self._lock:
            if self._open == 0:
                self._restore = self._patch(self.current)
            self._open += 1
        handle = object()  # this block's entry, removed by identity: blocks may close in any order
        try:
            self._blocks.set((*self._blocks.get(), (handle, value)))
            yield value
        finally:
            self._blocks.set(tuple(b for b in self._blocks.get() if b[0] is not handle))
            with self._lock:
                self._open -= 1
                restore = self._restore if self._open == 0 else None
                if restore is not None:
                    self._restore = None
                    restore()


def attribute_patch(owner: object, attr: str) -> Patch:
    """The :data:`Patch` of a function attribute ``owner.attr`` (``owner`` an object, or a module's dotted name,
    imported when the first block opens): the dispatcher calls the calling context's override as
    ``override(original, *args, **kwargs)``, and the original itself where the context has none.

    >>> import types
    >>> host = types.SimpleNamespace(f=abs)
    >>> hook = Interposer("f", attribute_patch(host, "f"))
    >>> with hook.override(lambda original, x: 10 * original(x)):
    ...     inside = host.f(-3)
    >>> inside, host.f(-3), host.f is abs
    (30, 3, True)
    """

    def patch(current: Callable[[], Callable | None]) -> Callable[[], None]:
        target = importlib.import_module(owner) if isinstance(owner, str) else owner
        original = getattr(target, attr)

        @functools.wraps(original)
        def dispatch(*args, **kwargs):
            override = current()
            return original(*args, **kwargs) if override is None else override(original, *args, **kwargs)

        setattr(target, attr, dispatch)
        return lambda: setattr(target, attr, original)

    return patch
