"""Re-export of :mod:`layoutkit.backends.ascend.lower` (the Ascend lowering),
kept so ``layoutkit.codegen.lower_ascend`` imports keep working."""

from ..backends.ascend.lower import *  # noqa: F401, F403
