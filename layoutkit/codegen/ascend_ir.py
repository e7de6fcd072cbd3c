"""Re-export of :mod:`layoutkit.backends.ascend.ir` (the IR of the Ascend backend),
kept so ``layoutkit.codegen.ascend_ir`` imports keep working."""

from ..backends.ascend.ir import *  # noqa: F401, F403
