"""Compile ``@gluon.jit`` kernels with layoutkit resolving their auto layouts: inside ``with
resolving_layouts():`` every Gluon kernel this thread compiles (``triton.compile`` or a launch) goes through
:func:`~layoutkit.frontends.gluon.resolve` between its GLIR and TTGIR stages, instead of Gluon's own
``ResolveAutoEncodings`` (which needs seeds).  :func:`autolayout` wraps one kernel so that its launches do.

Triton has one stage hook (``triton.knobs.runtime.add_stages_inspection_hook``); it is installed while any
thread is inside the block (counted under a lock) and acts only for the threads inside one, so other threads'
kernels compile untouched.  The hook adds ``layoutkit-resolve`` to the cache key of the kernels it changes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import UnsupportedError
from .glir import strip_locations
from .resolver import resolve


class _Session:
    """The installed hook: who is inside a block, and the MLIR contexts of the modules it parsed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.local = threading.local()
        self.previous: Any = None
        self.contexts: list[Any] = []

    def active(self) -> bool:
        return getattr(self.local, "depth", 0) > 0

    def __call__(self, *args: Any) -> Any:
        if not args:   # Triton asks for the cache key of the stages
            return ("layoutkit-resolve", "layoutkit-resolve") if self.active() else ("", "")
        if self.previous is not None:
            self.previous(*args)
        backend, stages, _options, language, capability = args
        if not self.active() or getattr(language, "name", str(language)).upper() != "GLUON":
            return None
        to_ttgir = stages["ttgir"]

        def resolved_then_ttgir(src: Any, metadata: dict) -> Any:
            from triton._C.libtriton import ir

            text = resolve(strip_locations(str(src)), f"sm_{capability}")
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            self.contexts.append(context)     # the module lives in it until the block ends
            import os
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "kernel.glir")
                with open(path, "w") as f:
                    f.write(text)
                module = ir.parse_mlir_module(path, context)
            module.context = context          # Triton's stages find their context there, as compile() sets it
            return to_ttgir(module, metadata)

        stages["ttgir"] = resolved_then_ttgir
        return None


_SESSION = _Session()


@contextmanager
def resolving_layouts() -> Iterator[None]:
    """Inside the block, this thread's Gluon compiles resolve auto layouts with layoutkit (see the module doc)."""
    try:
        from triton import knobs
    except ImportError as err:
        raise UnsupportedError(f"resolving_layouts needs triton 3.9 (the 'gluon' extra): {err}") from None
    s = _SESSION
    with s.lock:
        if s.users == 0:
            s.previous = knobs.runtime.add_stages_inspection_hook
            knobs.runtime.add_stages_inspection_hook = s
        s.users += 1
    s.local.depth = getattr(s.local, "depth", 0) + 1
    try:
        yield
    finally:
        s.local.depth -= 1
        with s.lock:
            s.users -= 1
            if s.users == 0:
                knobs.runtime.add_stages_inspection_hook = s.previous
                s.previous = None
                s.contexts.clear()


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
