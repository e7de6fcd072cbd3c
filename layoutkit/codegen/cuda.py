"""Re-export of :mod:`layoutkit.backends.nv.cuda` (the CUDA printer),
kept so ``layoutkit.codegen.cuda`` imports keep working."""

from ..backends.nv.cuda import *  # noqa: F401, F403
