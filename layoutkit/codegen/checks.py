"""Re-export of :mod:`layoutkit.backends.checks` (the checks of what code generation is handed),
kept so ``layoutkit.codegen.checks`` imports keep working."""

from ..backends.checks import *  # noqa: F401, F403
