"""Old name of :mod:`layoutkit.infer.programs` (the builders of reference tile programs), kept so
``from layoutkit.infer.kernels import ...`` and ``infer.kernels.gemm(...)`` keep working."""

from .programs import *  # noqa: F401, F403
