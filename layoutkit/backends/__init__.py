"""Backends: one folder per target family, each registering its hooks with inference and codegen.

A backend holds its op rules and merge, thread-range and op-validation hooks, target-only ops and passes,
lowering to its IR, printer and executor.  ``import layoutkit`` registers the built-in ones by module path
(:mod:`layoutkit.deferred`): each is imported the first time a lookup asks for its target:

* :mod:`.nv` for ``target="sm_*"`` (CUDA);
* :mod:`.ascend` for ``target="ascend"`` (Ascend C).

Another target is one more folder that calls :func:`register_backend`.

>>> get_backend("sm_80").name, get_backend("ascend").name
('nv', 'ascend')
"""

import importlib

from .registry import Backend, backend_names, get_backend, register_backend, served_targets, target_name

__all__ = ["Backend", "backend_names", "get_backend", "register_backend", "served_targets", "target_name"]

_BUILT_IN = ("ascend", "nv")


def __getattr__(name: str):
    """The built-in backends (nv, ascend), imported on first use."""
    if name in _BUILT_IN:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
