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
from ..errors import TargetError, UnsupportedError
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
    targets: str = ""
    """The target strings this backend serves, as a message says them (``"ascend"``)."""

    def target_name(self, text: str) -> str:
        """``text`` (a lower-case target its family matches) as this backend spells it; raises
        :class:`~layoutkit.errors.TargetError` quoting it when the backend serves no such target.  Law: a
        name it returns is returned unchanged."""
        return text

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


def target_name(text: str) -> str:
    """The target ``text`` names, spelled as its backend spells it (any case, spaces around it ignored);
    :class:`~layoutkit.errors.TargetError` quoting ``text`` and saying the served targets when no
    registered backend serves it.

    >>> target_name(" SM_100a "), target_name("ascend")
    ('sm_100a', 'ascend')
    >>> target_name("gfx90a")
    Traceback (most recent call last):
    ...
    layoutkit.errors.TargetError: target must be ascend or sm_70 .. sm_120 (an a or f suffix too); found 'gfx90a'
    """
    name = text.strip().lower()
    backend = get_backend(name)
    refusal = f"target must be {' or '.join(served_targets())}; found {text!r}"
    if backend is _GENERIC:
        raise TargetError(refusal)
    try:
        return backend.target_name(name)
    except TargetError as err:
        raise TargetError(refusal) from err


def served_targets() -> list[str]:
    """What each registered backend serves, as its messages say it (sorted).

    >>> served_targets()
    ['ascend', 'sm_70 .. sm_120 (an a or f suffix too)']
    """
    deferred.load()
    return sorted(b.targets for b in _BACKENDS.values() if b.targets)
