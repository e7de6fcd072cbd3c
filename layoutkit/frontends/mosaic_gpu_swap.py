"""Mosaic GPU's lowering (Pallas on NVIDIA GPUs, Warpgroup semantics) with layoutkit's layout-inference pass
swapped in for Mosaic's own, inside :func:`use_layoutkit` blocks only (``docs/mosaic_gpu.md#swapping-the-pass``).

Mosaic calls its pass through two names, ``jax.experimental.mosaic.gpu.infer_layout`` (Pallas) and
``jax.experimental.mosaic.gpu.layout_inference.infer_layout`` (Mosaic's own kernels).  Each is a hook point of
the project's :class:`~layoutkit.frontends.interpose.Interposer` (:data:`PASS_HOOKS`): patched once while any
block is open in the process, the calling thread's (context's) innermost block answering, Mosaic's own
functions back when the last block closes, whatever the order the blocks close in and whether they raise.  A
thread without a block of its own gets Mosaic's pass.

The environment switch: with ``LAYOUTKIT_MOSAIC_GPU=1`` set, :func:`use_layoutkit_if_requested` swaps
layoutkit's pass in for every thread for the rest of the process (call it once, e.g. from a ``conftest.py`` or
``sitecustomize``); importing this module changes nothing.

Law: with no block open, both names hold exactly the functions they held before the first block opened.

>>> callable(use_layoutkit)
True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from .interpose import Interposer, attribute_patch

ENVIRONMENT_SWITCH = "LAYOUTKIT_MOSAIC_GPU"
"""Set to ``1`` to have :func:`use_layoutkit_if_requested` swap layoutkit's pass in for the whole process."""

HOOKS = (("jax.experimental.mosaic.gpu", "infer_layout"),
         ("jax.experimental.mosaic.gpu.layout_inference", "infer_layout"))
"""The names through which Mosaic GPU calls its layout-inference pass."""

PassOverride = Callable[..., Any]
"""``override(original, module, *, fuel=..., arch=...)``: what a call of Mosaic's pass runs instead
(``original`` is Mosaic's own function)."""

PASS_HOOKS: tuple[Interposer[PassOverride], ...] = tuple(
    Interposer(f"{module}.{attr}", attribute_patch(module, attr)) for module, attr in HOOKS)
"""One hook point per name in :data:`HOOKS` (the process's only patching of Mosaic's pass)."""


def layoutkit_pass(original: Callable[..., Any], module: Any, *args: Any, **kwargs: Any) -> Any:
    """The override that runs layoutkit's ``infer_layout`` in place of Mosaic's ``original``."""
    from .mosaic_gpu import infer_layout

    return infer_layout(module, *args, **kwargs)


@contextmanager
def override_pass(override: PassOverride | None) -> Iterator[None]:
    """Within the block, every call of Mosaic's pass in this thread runs ``override`` (None: Mosaic's own,
    shadowing an outer block)."""
    with ExitStack() as stack:
        for hook in PASS_HOOKS:
            stack.enter_context(hook.override(override))
        yield


@contextmanager
def use_layoutkit() -> Iterator[None]:
    """Inside the block, Mosaic GPU lowers with layoutkit's ``infer_layout`` in this thread."""
    with override_pass(layoutkit_pass):
        yield


def active() -> bool:
    """Whether a call of Mosaic's pass from the calling thread (context) reaches layoutkit's pass."""
    return PASS_HOOKS[0].current() is layoutkit_pass


def open_blocks() -> int:
    """How many blocks hold the hooks installed, in the whole process (0: Mosaic's own functions are in
    place)."""
    return PASS_HOOKS[0].open_blocks


def use_layoutkit_if_requested() -> bool:
    """Swap layoutkit's pass in for the whole process when ``LAYOUTKIT_MOSAIC_GPU=1``; True when it did (or
    had)."""
    if os.environ.get(ENVIRONMENT_SWITCH, "") != "1":
        return False
    for hook in PASS_HOOKS:
        hook.override_process(layoutkit_pass)
    return True
