"""Compile ``@gluon.jit`` kernels with layoutkit resolving their auto layouts: inside ``with
resolving_layouts():`` every Gluon kernel this thread compiles (``triton.compile`` or a launch) goes through
:func:`~layoutkit.frontends.gluon.resolve` between its GLIR and TTGIR stages, instead of Gluon's own
``ResolveAutoEncodings`` (which needs seeds).  :func:`autolayout` wraps one kernel so that its launches do.

Triton has one stage hook (``triton.knobs.runtime.add_stages_inspection_hook``).  It is a hook point of
:mod:`layoutkit.frontends.interpose`: patched once while any block is open anywhere, acting only for the
threads (contexts) inside one, nestable, and put back, the very object it held, when the last block closes,
whether or not a block raised.  A hook that was installed before (the user's own) still runs for every
compile, inside a block or not.  The hook adds ``layoutkit-resolve`` to the cache key of the kernels it
changes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import UnsupportedError
from ..interpose import Interposer
from .glir import strip_locations
from .resolver import resolve

CACHE_KEY = "layoutkit-resolve"
"""What a block adds to the key (and hash) Triton caches its compiles under."""


class _Resolving:
    """One :func:`resolving_layouts` block's override of the stage hook: called as ``block(previous, *args)``
    (``previous``: the hook Triton held before, or None), it holds the MLIR contexts of the modules it parsed
    until the block ends."""

    def __init__(self) -> None:
        self.contexts: list[Any] = []

    def __call__(self, previous: Callable | None, *args: Any) -> Any:
        if not args:   # Triton asks for the cache key of the stages
            key, digest = previous() if previous is not None else ("", "")
            return key + CACHE_KEY, digest + CACHE_KEY
        if previous is not None:
            previous(*args)
        backend, stages, _options, language, capability = args
        if getattr(language, "name", str(language)).upper() != "GLUON":
            return None
        to_ttgir = stages["ttgir"]

        def resolved_then_ttgir(src: Any, metadata: dict) -> Any:
            from triton._C.libtriton import ir

            text = resolve(strip_locations(str(src)), f"sm_{capability}")
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            self.contexts.append(context)     # the module lives in it until the block ends
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "kernel.glir")
                with open(path, "w") as f:
                    f.write(text)
                module = ir.parse_mlir_module(path, context)
            module.context = context          # Triton's stages find their context there, as compile() sets it
            return to_ttgir(module, metadata)

        stages["ttgir"] = resolved_then_ttgir
        return None


def _patch_stage_hook(current: Callable[[], _Resolving | None]) -> Callable[[], None]:
    """Put the dispatcher on Triton's stage hook (the :data:`~layoutkit.frontends.interpose.Patch` of
    :data:`STAGE_HOOK`): a context with no block gets exactly what the hook held before (nothing, when it held
    None); the returned undo puts that very object back."""
    from triton import knobs

    runtime = knobs.runtime
    original = runtime.add_stages_inspection_hook

    def dispatch(*args: Any) -> Any:
        block = current()
        if block is not None:
            return block(original, *args)
        if original is not None:
            return original(*args)
        return None if args else ("", "")

    runtime.add_stages_inspection_hook = dispatch
    return lambda: setattr(runtime, "add_stages_inspection_hook", original)


STAGE_HOOK: Interposer[_Resolving] = Interposer("triton.knobs.runtime.add_stages_inspection_hook",
                                                _patch_stage_hook)
"""Triton's stage hook as a hook point, overridden per thread / context by :func:`resolving_layouts`."""


@contextmanager
def resolving_layouts() -> Iterator[None]:
    """Inside the block, this thread's Gluon compiles resolve auto layouts with layoutkit (see the module doc)."""
    try:
        from triton import knobs  # noqa: F401  (the hook point lives there)
    except ImportError as err:
        raise UnsupportedError(f"resolving_layouts needs triton 3.9 (the 'gluon' extra): {err}") from None
    block = _Resolving()
    try:
        with STAGE_HOOK.override(block):
            yield
    finally:
        block.contexts.clear()


class _AutoLayoutKernel:
    """A ``@gluon.jit`` kernel whose launches and warmups run inside :func:`resolving_layouts`."""

    def __init__(self, kernel: Any):
        self.kernel = kernel
        self.__doc__ = getattr(kernel, "__doc__", None)

    def __getitem__(self, grid: Any) -> Any:
        launcher = self.kernel[grid]

        def launch(*args: Any, **kwargs: Any) -> Any:
            with resolving_layouts():
                return launcher(*args, **kwargs)
        return launch

    def warmup(self, *args: Any, **kwargs: Any) -> Any:
        with resolving_layouts():
            return self.kernel.warmup(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kernel, name)


def autolayout(kernel: Any) -> Any:
    """Decorate a ``@gluon.jit`` kernel (put it above ``@gluon.jit``) so that compiling it lets layoutkit lay
    out every value the kernel leaves to ``gl.AutoLayout()``."""
    return _AutoLayoutKernel(kernel)
