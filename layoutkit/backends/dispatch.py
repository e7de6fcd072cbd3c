"""Op tables: how a backend's lowering and executors find the handler of an op (or IR statement) kind, the
way inference finds a rule in its registry.  A table is explicit and open: another module can
:meth:`OpTable.register` a handler for a new kind.

>>> table = OpTable("demo")
>>> @table.register("copy", "fill")
... def move(op):
...     return f"moved {op}"
>>> table.lookup("fill")("x"), "gemm" in table
('moved x', False)
"""

from __future__ import annotations

from collections.abc import Callable


class OpTable:
    """Kind -> handler."""

    def __init__(self, what: str):
        self.what = what
        self._handlers: dict[str, Callable] = {}

    def register(self, *kinds: str) -> Callable[[Callable], Callable]:
        def add(fn: Callable) -> Callable:
            for kind in kinds:
                self._handlers[kind] = fn
            return fn

        return add

    def unregister(self, kind: str) -> None:
        self._handlers.pop(kind, None)

    def lookup(self, kind: str, default: Callable | None = None) -> Callable | None:
        return self._handlers.get(kind, default)

    def __contains__(self, kind: str) -> bool:
        return kind in self._handlers

    def kinds(self) -> list[str]:
        return sorted(self._handlers)

    @classmethod
    def of_methods(cls, owner: type, what: str, prefix: str = "op_") -> OpTable:
        """A table of ``owner``'s ``<prefix><kind>`` methods, inherited ones included (kind -> unbound method)."""
        table = cls(what)
        # base classes first, so a subclass's handler (or a mixin's, e.g. the Ascend vector epilogue) wins
        for name, fn in ((n, f) for klass in reversed(owner.__mro__) for n, f in vars(klass).items()):
            if name.startswith(prefix) and callable(fn):
                table.register(name[len(prefix):])(fn)
        return table
