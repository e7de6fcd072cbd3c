"""Targets registered by module path, imported and registered the first time a lookup needs them.

``import layoutkit`` names the built-in backends here instead of importing them, so that a program that
never asks for a target (the algebra, fragments, target-free inference) does not pay for their rules,
hardware tables and code generators.  The registries that a backend fills (targets, rules, tile ops,
builders, cost models, backends) call :func:`load` before they answer: with a target string it imports the
deferred modules whose family matches it, without one (a lookup by name, a listing) all of them, and calls
each module's ``register()``: importing a backend registers nothing by itself.

>>> defer("demo_*", "layoutkit.no_such_module")
>>> "layoutkit.no_such_module" in pending("demo_7"), "layoutkit.no_such_module" in pending("sm_80")
(True, False)
>>> _PENDING.pop("layoutkit.no_such_module")
'demo_*'
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase

_PENDING: dict[str, str] = {}
"""Module -> the target family (a glob, as ``Target.family``; ``"*"``: every target) it registers
rules or hooks for when imported."""


_LOCK = threading.RLock()
"""Held while deferred modules load (re-entrant: a module's ``register()`` looks targets up itself)."""
_loading = 0
"""How many deferred modules are loading now (a lookup finding none pending still waits for them)."""


def defer(family: str, module: str) -> None:
    """Register ``module`` as one that registers rules or hooks for the targets matching ``family``."""
    _PENDING[module] = family


def pending(target: str | None = None) -> list[str]:
    """The deferred modules a lookup of ``target`` (None: any lookup) would import."""
    return [m for m, fam in _PENDING.items() if target is None or fnmatchcase(target, fam)]


def load(target: str | None = None) -> None:
    """Import the deferred modules matching ``target`` (None: all of them) and call their ``register()``;
    cheap when none is left."""
    global _loading
    if not _PENDING and not _loading:
        return
    # one thread loads at a time, and a thread finding a load under way waits for it: solving with a target's
    # rules half-registered would silently use the defaults
    with _LOCK:
        for module in pending(target):
            if _PENDING.pop(module, None) is not None:  # first, so that the module's own lookups do not re-enter
                _loading += 1
                try:
                    importlib.import_module(module).register()
                finally:
                    _loading -= 1


def lazy_attributes(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``names[name]`` (a module, relative to the package)
    is imported the first time ``name`` is read, and a submodule is imported when read by its name.
    Importing the package then costs only what its own body imports.

    >>> import layoutkit
    >>> getattr(layoutkit, "tla").__name__, layoutkit.Layout.__name__, "Layout" in vars(layoutkit)
    ('layoutkit.tla', 'Layout', True)
    """

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module, package), name)
            setattr(sys.modules[package], name, value)  # later reads skip this function
            return value
        if not name.startswith("__"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as err:
                if err.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
