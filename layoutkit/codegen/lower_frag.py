"""Re-export of :mod:`layoutkit.backends.nv.lower_frag` (the NVIDIA lowering of fragment ops),
kept so ``layoutkit.codegen.lower_frag`` imports keep working."""

from ..backends.nv.lower_frag import *  # noqa: F401, F403
