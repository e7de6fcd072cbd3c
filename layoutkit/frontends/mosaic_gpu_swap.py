"""Mosaic GPU's lowering (Pallas on NVIDIA GPUs, Warpgroup semantics) with layoutkit's layout-inference pass
swapped in for Mosaic's own, inside :func:`use_layoutkit` blocks only (``docs/mosaic_gpu.md#swapping-the-pass``).

Mosaic calls its pass through two names, ``jax.experimental.mosaic.gpu.infer_layout`` (Pallas) and
``jax.experimental.mosaic.gpu.layout_inference.infer_layout`` (Mosaic's own kernels).  The first block to open
puts a dispatcher on both, under a lock; the last to close puts Mosaic's functions back, whatever the order the
blocks close in and whether they raise.  Each block is recorded in a :class:`~contextvars.ContextVar`: the thread
that opened it (and contexts copied from it) gets layoutkit's pass, every other thread Mosaic's own.

The environment switch: with ``LAYOUTKIT_MOSAIC_GPU=1`` set, :func:`use_layoutkit_if_requested` opens a block
for the rest of the process (call it once, e.g. from a ``conftest.py`` or ``sitecustomize``); importing this
module changes nothing.

Law: with no block open, both names hold exactly the functions they held before the first block opened.

>>> callable(use_layoutkit)
True
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

ENVIRONMENT_SWITCH = "LAYOUTKIT_MOSAIC_GPU"
"""Set to ``1`` to have :func:`use_layoutkit_if_requested` swap layoutkit's pass in for the whole process."""

HOOKS = (("jax.experimental.mosaic.gpu", "infer_layout"),
         ("jax.experimental.mosaic.gpu.layout_inference", "infer_layout"))
"""The names through which Mosaic GPU calls its layout-inference pass."""


class PassSwap:
    """The swap of Mosaic's pass (see the module docstring); one instance owns the hooks."""

    def __init__(self) -> None:
        self._blocks: ContextVar[tuple[object, ...]] = ContextVar("layoutkit.mosaic_gpu.swap", default=())
        self._lock = threading.Lock()
        self._open = 0
        self._originals: list[tuple[Any, str, Any]] = []
        self._process_wide = False

    @property
    def active(self) -> bool:
        """Whether the calling context is inside a block, or the swap is process-wide (its calls reach
        layoutkit's pass)."""
        return self._process_wide or bool(self._blocks.get())

    def open_for_process(self) -> None:
        """Swap layoutkit's pass in for every thread until the process ends (idempotent)."""
        with self._lock:
            if self._process_wide:
                return
            if self._open == 0:
                self._install()
            self._open += 1
            self._process_wide = True

    @property
    def open_blocks(self) -> int:
        return self._open

    def _install(self) -> None:
        from .mosaic_gpu import infer_layout

        for module_name, attr in HOOKS:
            module = importlib.import_module(module_name)
            original = getattr(module, attr)

            @functools.wraps(original)
            def dispatch(*args: Any, __original: Callable[..., Any] = original, **kwargs: Any) -> Any:
                return (infer_layout if self.active else __original)(*args, **kwargs)

            self._originals.append((module, attr, original))
            setattr(module, attr, dispatch)

    def _uninstall(self) -> None:
        for module, attr, original in reversed(self._originals):
            setattr(module, attr, original)
        self._originals = []

    @contextmanager
    def block(self) -> Iterator[None]:
        with self._lock:
            if self._open == 0:
                self._install()
            self._open += 1
        handle = object()
        try:
            self._blocks.set((*self._blocks.get(), handle))
            yield
        finally:
            self._blocks.set(tuple(b for b in self._blocks.get() if b is not handle))
            with self._lock:
                self._open -= 1
                if self._open == 0:
                    self._uninstall()


SWAP = PassSwap()
"""The process's one swap of Mosaic's pass (the hooks are process-wide, so is their owner)."""


@contextmanager
def use_layoutkit() -> Iterator[None]:
    """Inside the block, Mosaic GPU lowers with layoutkit's ``infer_layout`` in this thread."""
    with SWAP.block():
        yield


def use_layoutkit_if_requested() -> bool:
    """Swap layoutkit's pass in for the whole process when ``LAYOUTKIT_MOSAIC_GPU=1``; True when it did (or
    had)."""
    if os.environ.get(ENVIRONMENT_SWITCH, "") != "1":
        return False
    SWAP.open_for_process()
    return True
