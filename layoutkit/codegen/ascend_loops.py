"""Re-export of :mod:`layoutkit.backends.ascend.loops` (loop rolling of Ascend kernels),
kept so ``layoutkit.codegen.ascend_loops`` imports keep working."""

from ..backends.ascend.loops import *  # noqa: F401, F403
