"""Re-export of :mod:`layoutkit.backends.ascend.execute` (the numpy executor of Ascend kernels),
kept so ``layoutkit.codegen.execute_ascend`` imports keep working."""

from ..backends.ascend.execute import *  # noqa: F401, F403
