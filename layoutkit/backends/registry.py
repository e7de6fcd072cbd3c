"""The backend registry: a :class:`Backend` is a target's inference hooks
(:class:`layoutkit.infer.target.Target`) plus its code generation (lower to its IR, print, execute);
:func:`register_backend` registers both by target family, and :mod:`layoutkit.codegen` dispatches through
:func:`get_backend`.

>>> get_backend("sm_90").language, get_backend("ascend").suffix
('cuda', '.cpp')
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from .. import deferred
from ..errors import UnsupportedError
from ..infer.target import Target, register_target


class Backend(Target):
    """A target that also generates code; the code generation hooks refuse by default."""

    name: str = "generic"
    language: str = ""
    """The printed language (``"cuda"``, ``"ascend_c"``)."""
    suffix: str = ".txt"
    requires_layouts: bool = True
    """Whether lowering needs the inference result's layouts (False: the program's annotations do)."""
    lowering_options: frozenset[str] = frozenset()
    """Keyword options :meth:`lower` and :meth:`check_target` take (the codegen facade refuses others)."""

    def check_target(self, program) -> None:
        """Refuse, before the layouts are checked, a program this backend cannot lower."""

    def check_lowerable(self, result, where: str) -> None:
        """Refuse a solved result this backend cannot lower (e.g. layout conversions)."""

    def lower(self, program, result):
        raise UnsupportedError(f"lower: no code generation for target {program.target!r} (backend {self.name})")

    def print_source(self, kernel) -> str:
        raise UnsupportedError(f"emit: backend {self.name} prints no source")

    def register_lowering(self, kind: str, fn) -> None:
        """``fn`` lowers the ops of ``kind`` (a tile op defined anywhere, :func:`layoutkit.infer.register_op`) on
        this backend; its signature is the backend's (NVIDIA: ``fn(op, lowering)``, see
        :data:`layoutkit.backends.nv.lower_frag.LOWERINGS`; Ascend: ``fn(lowering, op)``)."""
        raise UnsupportedError(f"register_lowering: backend {self.name} lowers no ops")

    def unregister_lowering(self, kind: str) -> None:
        """Forget the lowering :meth:`register_lowering` added for ``kind``."""

    def storage_dtype(self, dtype: str):
        """The numpy dtype ``execute`` requires of an array of ``dtype`` (None: any floating type)."""
        return None

    def execute(self, program, result, arrays: dict) -> dict:
        """Run the kernel :meth:`lower` gives with numpy (a backend with :attr:`lowering_options` takes them here
        too, as keywords)."""
        raise UnsupportedError(f"execute: no executor for target {program.target!r} (backend {self.name})")


_BACKENDS: dict[str, Backend] = {}
_GENERIC = Backend()


def register_backend(backend: Backend) -> None:
    """Register ``backend`` for the target strings matching ``backend.family``: inference (rules, merge,
    hooks) and code generation."""
    register_target(backend)
    _BACKENDS[backend.family] = backend


def get_backend(target: str) -> Backend:
    """The backend of ``target`` (most specific family first), or one that generates no code."""
    deferred.load(target)
    hits = [(pat.count("*"), -len(pat), pat) for pat in _BACKENDS if fnmatchcase(target, pat)]
    return _BACKENDS[min(hits)[2]] if hits else _GENERIC


def backend_names() -> list[str]:
    deferred.load()
    return [b.name for b in _BACKENDS.values()]
