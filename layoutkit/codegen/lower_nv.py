"""Re-export of :mod:`layoutkit.backends.nv.lower` (the NVIDIA lowering),
kept so ``layoutkit.codegen.lower_nv`` imports keep working."""

from ..backends.nv.lower import *  # noqa: F401, F403
