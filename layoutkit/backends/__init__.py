"""Backends: one folder per target family, each registering its hooks with inference and codegen.

A backend holds its op rules and merge, thread-range and op-validation hooks, target-only ops and passes,
lowering to its IR, printer and executor.  ``import layoutkit`` registers the built-in ones:

* :mod:`.nv` for ``target="sm_*"`` (CUDA);
* :mod:`.ascend` for ``target="ascend"`` (Ascend C).

Another target is one more folder that calls :func:`register_backend`.

>>> get_backend("sm_80").name, get_backend("ascend").name
('nv', 'ascend')
"""

from . import ascend, nv  # noqa: E402, F401, I001  (register the built-in backends)
from .registry import Backend, backend_names, get_backend, register_backend

__all__ = ["Backend", "backend_names", "get_backend", "register_backend"]
