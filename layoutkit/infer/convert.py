"""Old name of :mod:`layoutkit.infer.conversions` (layout conversions in free mode), kept so
``from layoutkit.infer.convert import ...`` keeps working."""

from .conversions import *  # noqa: F401, F403
