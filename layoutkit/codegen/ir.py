"""Re-export of :mod:`layoutkit.backends.nv.ir` (the per-thread IR of the NVIDIA backend),
kept so ``layoutkit.codegen.ir`` imports keep working."""

from ..backends.nv.ir import *  # noqa: F401, F403
