"""Re-export of :mod:`layoutkit.backends.ascend.ascend_c` (the Ascend C printer),
kept so ``layoutkit.codegen.ascend_c`` imports keep working."""

from ..backends.ascend.ascend_c import *  # noqa: F401, F403
