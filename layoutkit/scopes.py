"""Memory scope names of tile-program buffers, defined once for every layer.

These are the NVIDIA-style scopes TileLang writes and the target protocol
(:class:`layoutkit.infer.Target`) defaults to; a backend adds its own (Ascend's are in
:mod:`layoutkit.backends.ascend.scopes`).

>>> SCOPES
('global', 'shared', 'shared.dyn', 'local.fragment', 'local', 'local.reducer')
>>> is_shared(SHARED_DYN), is_shared(FRAGMENT)
(True, False)
"""

GLOBAL = "global"
"""Global (device) memory: the kernel's tensors."""
SHARED = "shared"
SHARED_DYN = "shared.dyn"
"""Dynamically sized shared memory: where ``alloc_shared`` allocates by default."""
FRAGMENT = "local.fragment"
"""Register fragments: a buffer distributed over the threads by a :class:`~layoutkit.Fragment`."""
LOCAL = "local"
"""Per-thread local buffers."""
REDUCER = "local.reducer"
"""Reducers (TileLang's ``T.alloc_reducer``): registers laid out by a :class:`~layoutkit.PartialFragment`,
whose replicas are addends of a pending reduction, touched only by ``reducer_init`` / parallel-loop updates /
``finalize_reducer``."""

TMEM = "shared.tmem"
"""Blackwell (sm_100) tensor memory: 128 datapaths x 512 32-bit columns per CTA, where TCGEN05 GEMMs
accumulate; only the NVIDIA target allocates it (not in :data:`SCOPES`)."""

SCOPES = (GLOBAL, SHARED, SHARED_DYN, FRAGMENT, LOCAL, REDUCER)
SHARED_SCOPES = (SHARED, SHARED_DYN)


def is_shared(scope: str) -> bool:
    return scope in SHARED_SCOPES


__all__ = ["FRAGMENT", "GLOBAL", "LOCAL", "REDUCER", "SCOPES", "SHARED", "SHARED_DYN", "SHARED_SCOPES", "TMEM",
           "is_shared"]
