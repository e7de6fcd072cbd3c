"""Fragment = Layout + thread map + replication; PartialFragment; containment proofs."""

from .fragment import Fragment, make_fully_replicated_fragment, rep_var
from .partial import PartialFragment

__all__ = ["Fragment", "PartialFragment", "make_fully_replicated_fragment", "rep_var"]
