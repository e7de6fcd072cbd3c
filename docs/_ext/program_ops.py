"""The ``program-ops`` directive: the table of every op kind a JSON program may hold, read at build time from
the tile-op registry (``layoutkit.infer.library.TILE_OPS``, after every deferred backend registered its own
ops), so the page on the program format cannot fall behind the code.

Each row: the op kind, the :class:`~layoutkit.infer.Program` methods that append it, its required arguments,
and every argument its definition types, with the type the document check asks for (the check's own words:
it is called on a probe value and its refusal says what it expected; "or null" when it accepts ``null``).
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import Directive

_PROBE = object()


def argument_type(check) -> str:
    """What ``check`` (a document check: ``check(value, path)``) expects, in its own words."""
    from layoutkit.errors import ProgramFormatError

    try:
        check(_PROBE, "$")
        expected = "any JSON value"
    except ProgramFormatError as err:
        expected = err.expected
    try:
        check(None, "$")
    except ProgramFormatError:
        return expected
    return f"{expected}, or null"


def rows() -> list[tuple[str, str, str, str]]:
    """``(kind, builders, required, typed arguments)`` of every registered op kind."""
    from layoutkit import deferred
    from layoutkit.infer.library import TILE_OPS
    from layoutkit.infer.schema import SHARED_ARG_TYPES

    deferred.load()  # the backends register their own op kinds (Ascend's dual_copy, vf, ...)
    out = []
    for kind in TILE_OPS.kinds():
        d = TILE_OPS.get(kind)
        builders = ", ".join(f"``{name}``" for name, _ in d.builders) or "(built by its backend's passes)"
        required = ", ".join(f"``{a}``" for a in d.required) or "none"
        types = dict(d.argument_types)
        for name in d.required:
            if name not in types and name in SHARED_ARG_TYPES:
                types[name] = SHARED_ARG_TYPES[name]
        typed = "; ".join(f"``{a}``: {argument_type(c)}" for a, c in types.items()) or "none"
        out.append((f"``{kind}``", builders, required, typed))
    return out


class ProgramOps(Directive):
    """``.. program-ops::``: the op table (no arguments, no content)."""

    has_content = False

    def run(self):
        header = ("kind", "Program methods", "required arguments", "typed arguments")
        table = nodes.table(classes=["program-ops"])
        group = nodes.tgroup(cols=len(header))
        table += group
        for width in (12, 18, 30, 40):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += self._row(header, literal=False)
        body = nodes.tbody()
        group += body
        for row in rows():
            body += self._row(row, literal=True)
        return [table]

    def _row(self, cells, literal: bool):
        row = nodes.row()
        for text in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            if literal:
                # cells are short reST: ``name`` literals and plain words
                parts = text.split("``")
                for k, part in enumerate(parts):
                    if part:
                        para += nodes.literal(part, part) if k % 2 else nodes.Text(part)
            else:
                para += nodes.Text(text)
            entry += para
            row += entry
        return row


def setup(app):
    app.add_directive("program-ops", ProgramOps)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
