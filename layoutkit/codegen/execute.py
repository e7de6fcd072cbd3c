"""Re-export of :mod:`layoutkit.backends.nv.execute` (the numpy executor of NVIDIA kernels),
kept so ``layoutkit.codegen.execute`` imports keep working."""

from ..backends.nv.execute import *  # noqa: F401, F403
