"""A reader of GLIR text (Gluon's MLIR before layout resolution) that needs no MLIR bindings and runs no
verifier: the module's encoding aliases, its ops line by line (results, name, operands, the tensor types
of its signature) and which SSA value every ``tensor<...>`` type on a line stands for, so that a resolver
can print each value's encoding back in place.

Only the pretty forms Gluon prints are read (one op per line; region ops open a ``{`` and close it on
their own line); a line the reader cannot place raises :class:`~layoutkit.errors.UnsupportedError`
naming the op and line.

>>> m = read_glir('''#b = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
... module attributes {"ttg.num-warps" = 4 : i32} {
...   tt.func public @k(%p: !tt.ptr<f32>) {
...     %0 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #gluon.auto_encoding>
...     %1 = tt.splat %p : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>, #b>
...     %2 = tt.addptr %1, %0 : tensor<128x!tt.ptr<f32>, #b>, tensor<128xi32, #gluon.auto_encoding>
...     tt.return
...   }
... }''')
>>> m.num_warps, [op.name for op in m.ops][:5], m.ops[3].operands
(4, ['tt.func', 'tt.make_range', 'tt.splat', 'tt.addptr', 'tt.return'], ('%1', '%0'))
>>> [(t.shape, t.encoding_text) for t in m.ops[3].types]
[((128,), '#b'), ((128,), '#gluon.auto_encoding')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...errors import UnsupportedError

AUTO_TEXT = "#gluon.auto_encoding"
_ALIAS = re.compile(r"^#([\w.$-]+)\s*=\s*(#.*)$")
_RESULT = re.compile(r"^\s*((?:%[\w$.-]+(?::\d+)?)(?:\s*,\s*%[\w$.-]+(?::\d+)?)*)\s*=\s*(.*)$")
_NAME = re.compile(r'^"?([\w.]+)"?')
_VALUE = re.compile(r"%[\w$.#-]+(?::\d+)?")
_ATTR_INT = r"{name}\s*=\s*(-?\d+)"


@dataclass(frozen=True)
class TensorType:
    """One ``tensor<...>`` on a line: where (``start``, ``end``: the span of its encoding text), its shape,
    element type and encoding text; ``value``: the SSA value it types, once the resolver has placed it."""

    start: int
    end: int
    shape: tuple[int, ...]
    element: str
    encoding_text: str
    value: str | None = None

    @property
    def is_auto(self) -> bool:
        return self.encoding_text == AUTO_TEXT


@dataclass
class GlirOp:
    """One line of the module body: ``results``, op ``name``, ``operands`` (in order of appearance before the
    signature), ``attrs`` (the line text), ``types`` (tensor types on the line, in order, split at the
    signature's ``->`` / ``to`` into ``before`` and ``after``), ``line`` (0-based), ``depth`` (region nesting)."""

    line: int
    name: str
    results: tuple[str, ...]
    operands: tuple[str, ...]
    text: str
    types: list[TensorType] = field(default_factory=list)
    split: int = 0
    """``types[:split]`` are left of the signature's ``->`` / ``to`` (all when there is none)."""
    depth: int = 0

    def int_attr(self, name: str) -> int | None:
        m = re.search(_ATTR_INT.format(name=re.escape(name)), self.text)
        return int(m.group(1)) if m else None

    def describe(self) -> str:
        return f"{self.name} (line {self.line + 1})"


@dataclass
class GlirModule:
    lines: list[str]
    aliases: dict[str, str]
    ops: list[GlirOp]
    num_warps: int
    target: str


_BRACKETS = {("<", ">"): re.compile(r"[<>]"), ("(", ")"): re.compile(r"[()]")}


def _matching(text: str, start: int, open_: str = "<", close: str = ">") -> int:
    """Index of the bracket closing the one at ``start`` (``->`` arrows are not brackets)."""
    depth = 0
    # only the two bracket characters are visited (a regex scan, not a per-character Python loop)
    pattern = _BRACKETS.get((open_, close)) or re.compile(re.escape(open_) + "|" + re.escape(close))
    for m in pattern.finditer(text, start):
        i = m.start()
        c = text[i]
        if c == open_ and not (open_ == "<" and i > 0 and text[i - 1] == "-"):
            depth += 1
        elif c == close and not (close == ">" and i > 0 and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i
    raise UnsupportedError(f"GLIR: unbalanced {open_}{close} in {text!r}")


_DIMS = re.compile(r"((?:\d+x)*)")
_TENSOR = re.compile(r"tensor<")


def tensor_types(line: str) -> list[TensorType]:
    """Every ``tensor<...>`` type on a line (nested pointer types included in the element)."""
    out = []
    for m in _TENSOR.finditer(line):
        start = m.end() - 1
        end = _matching(line, start)
        body = line[start + 1:end]
        # split off the encoding: the first ", #" (element types hold no "#", and an encoding's own fields
        # name their nested encodings after "=")
        cut = body.find(", #")
        if cut < 0:
            continue  # an unencoded tensor: nothing to resolve
        head, enc = body[:cut], body[cut + 1:].strip()
        dm = _DIMS.match(head)
        lead = dm.group(1) if dm else ""
        dims = [int(x) for x in lead.split("x")[:-1]]
        rest = head[len(lead):]
        enc_start = start + 1 + cut + 1 + (len(body[cut + 1:]) - len(body[cut + 1:].lstrip()))
        out.append(TensorType(enc_start, end, tuple(dims), rest, enc))
    return out


def _strip_loc(line: str) -> str:
    """The line without its trailing ``loc(...)`` (locations carry no types)."""
    i = line.rfind(" loc(")
    while i >= 0:
        j = _matching(line, i + 4, "(", ")")
        line = line[:i] + line[j + 1:]
        i = line.rfind(" loc(")
    return line


def _depth(text: str) -> int:
    """Brackets ``([{<`` opened and not closed in ``text`` (``->`` arrows are not brackets)."""
    opened = text.count("(") + text.count("[") + text.count("{") + text.count("<") - text.count("-<")
    closed = text.count(")") + text.count("]") + text.count("}") + text.count(">") - text.count("->")
    return opened - closed


def _signature_split(line: str) -> int:
    """The offset of the op's type signature (its last top-level `` : ``), or -1.

    >>> line = "%0 = tt.load %p {a = 1 : i32} : tensor<4x!tt.ptr<f32>, #b>"
    >>> line[_signature_split(line):]
    ': tensor<4x!tt.ptr<f32>, #b>'
    """
    i = line.rfind(" : ")
    while i >= 0:      # the last " : " at depth 0 (counting brackets is C-fast; few candidates per line)
        if _depth(line[:i]) == 0:
            return i + 1
        i = line.rfind(" : ", 0, i)
    return -1


def read_glir(text: str) -> GlirModule:
    """Read a GLIR module's text (see the module doc)."""
    lines = text.split("\n")
    aliases: dict[str, str] = {}
    ops: list[GlirOp] = []
    depth = 0
    num_warps, target = 4, ""
    for k, raw in enumerate(lines):
        s = raw.strip()
        am = _ALIAS.match(s)
        if am and not am.group(2).startswith("#loc") and not s.startswith("#loc"):
            if am.group(2).startswith("#ttg.") or am.group(2).startswith("#ttng."):
                aliases[am.group(1)] = am.group(2)
            continue
        if s.startswith("module"):
            nw = re.search(r'"ttg.num-warps"\s*=\s*(\d+)', s)
            tg = re.search(r'ttg.target\s*=\s*"([^"]+)"', s)
            num_warps = int(nw.group(1)) if nw else num_warps
            target = tg.group(1) if tg else target
            depth += 1
            continue
        if not s or s.startswith("#") or s.startswith("{-#") or s.startswith("//"):
            continue
        body = _strip_loc(raw)
        stripped = body.strip()
        rm = _RESULT.match(body)
        results: tuple[str, ...] = ()
        rest = stripped
        if rm:
            results = tuple(r.strip() for r in rm.group(1).split(","))
            rest = rm.group(2).strip()
        if rest.startswith("}") or rest.startswith("^"):
            name = rest[:2] if rest.startswith("})") else rest.split("(")[0].split()[0]
        else:
            nm = _NAME.match(rest)
            name = nm.group(1) if nm else rest.split()[0]
        sig = _signature_split(body)
        head = body if sig < 0 else body[:sig]
        operands = tuple(v for v in _VALUE.findall(head[len(body) - len(body.lstrip()):])
                         if v not in results)
        types = tensor_types(body)
        arrow = body.find(" -> ", sig if sig >= 0 else 0)
        to = body.find(" to ", sig) if sig >= 0 else -1
        cut = arrow if arrow >= 0 else to
        split = sum(1 for t in types if cut < 0 or t.start < cut)
        # map positions back: _strip_loc only removes text after the types, so spans are valid on ``raw``
        ops.append(GlirOp(k, name, results, operands, body, types, split, depth))
        depth += stripped.count("{") - stripped.count("}")
    return GlirModule(lines, aliases, ops, num_warps, target)


def strip_locations(text: str) -> str:
    """The module without source locations (``#loc`` aliases and every `` loc(...)``), which carry file paths.

    >>> strip_locations('#loc1 = loc("k.py":1:1)\\n  %0 = arith.constant 1 : i32 loc(#loc1)')
    '  %0 = arith.constant 1 : i32'
    """
    out = []
    for line in text.split("\n"):
        if line.startswith("#loc"):
            continue
        i = line.find(" loc(")
        while i >= 0:
            j = _matching(line, i + 4, "(", ")")
            line = line[:i] + line[j + 1:]
            i = line.find(" loc(")
        out.append(line)
    return "\n".join(out)


def erase_register_layouts(text: str) -> str:
    """The module with every distributed (register) encoding of a tensor type replaced by
    ``#gluon.auto_encoding``; shared-memory encodings stay.

    >>> erase_register_layouts('#b = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], '
    ...     'warpsPerCTA = [4], order = [0]}>\\n  %0 = tt.make_range {end = 128 : i32, start = 0 : i32} : '
    ...     'tensor<128xi32, #b>').split("\\n")[1]
    '  %0 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #gluon.auto_encoding>'
    """
    from .encodings import Distributed, parse_encoding

    aliases = read_aliases(text)
    lines = text.split("\n")
    for k, line in enumerate(lines):
        if line.startswith("#"):
            continue
        types = tensor_types(line)
        for t in reversed(types):
            if not t.is_auto and isinstance(parse_encoding(t.encoding_text, aliases), Distributed):
                line = line[:t.start] + AUTO_TEXT + line[t.end:]
        lines[k] = line
    return "\n".join(lines)


def read_aliases(text: str) -> dict[str, str]:
    """The module's encoding aliases ``name -> text`` (``#name = #ttg....`` lines)."""
    out = {}
    for line in text.split("\n"):
        am = _ALIAS.match(line.strip())
        if am and (am.group(2).startswith("#ttg.") or am.group(2).startswith("#ttng.")):
            out[am.group(1)] = am.group(2)
    return out
