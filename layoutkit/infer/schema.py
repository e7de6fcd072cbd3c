"""The schema of a serialized program: what :func:`layoutkit.infer.serialize.program_from_json` accepts.

Every value of the document is checked for type, range and size before any of it is used, so a
hostile document (wrong types, missing fields, deep nesting, huge numbers, ``null``, binary) is refused
with one :class:`~layoutkit.errors.ProgramFormatError` naming the path, what was expected and what was
found, instead of a ``KeyError`` or ``RecursionError`` deep inside the rebuild.

Which arguments an op kind must carry, and their types, come from its definition (the tile-op registry
passed in, :mod:`.library`); the names below type the arguments every op kind shares.

>>> from layoutkit.infer.library import TILE_OPS
>>> load_document('{"threads": 32, "target": "sm_80", "buffers": [], "ops": [{"kind": "fill"}]}',
...               TILE_OPS)
Traceback (most recent call last):
...
layoutkit.errors.ProgramFormatError: Program.from_json: $.ops[0]: expected the field 'uid'; found no such field
>>> load_document('{"threads": 32, "target": "sm_80", "buffers": [], "ops": [{"kind": "fill", "uid": 0, '
...               '"args": {"dst": "x"}}]}', TILE_OPS)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
layoutkit.errors.ProgramFormatError: Program.from_json: $.ops[0].args: expected the argument 'value' (a fill op); ...
>>> load_document('{"threads": true, "target": "sm_80", "buffers": [], "ops": []}', TILE_OPS)
Traceback (most recent call last):
...
layoutkit.errors.ProgramFormatError: Program.from_json: $.threads: expected an integer in [1, 1048576]; found bool True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, Protocol

from ..errors import ProgramFormatError

MAX_TEXT = 64 * 2**20
"""Largest document, in characters."""
MAX_DEPTH = 16
"""Deepest nesting of arrays and objects anywhere in a document (a program needs 5)."""
MAX_ITEMS = 1_000_000
"""Longest array or object."""
MAX_STRING = 100_000
"""Longest string (index expression text included)."""
MAX_INT = 2**62
"""Largest magnitude of any integer: every value the rebuild computes with stays inside int64."""
MAX_EXTENT = 2**40
"""Largest buffer, loop or layout extent a document may declare."""
MAX_THREADS = 2**20

Check = Callable[[Any, str], Any]


def fail(path: str, expected: str, value: object) -> NoReturn:
    raise ProgramFormatError(path, expected, describe(value))


def describe(value: object) -> str:
    """``value`` for an error message: its JSON type and a short excerpt."""
    if value is None:
        return "null"
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def integer(lo: int = -MAX_INT, hi: int = MAX_INT) -> Check:
    def check(value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            fail(path, f"an integer in [{lo}, {hi}]", value)
        return value
    return check


def string(max_len: int = MAX_STRING) -> Check:
    def check(value: Any, path: str) -> str:
        if not isinstance(value, str):
            fail(path, "a string", value)
        if len(value) > max_len:
            fail(path, f"a string of at most {max_len} characters", f"{len(value)} characters")
        return value
    return check


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        fail(path, "true or false", value)
    return value


def number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -MAX_INT <= value <= MAX_INT:
        fail(path, f"a finite number of magnitude at most {MAX_INT}", value)
    return value


def nullable(check: Check) -> Check:
    def inner(value: Any, path: str) -> Any:
        return None if value is None else check(value, path)
    return inner


def array(item: Check, min_len: int = 0, max_len: int = MAX_ITEMS) -> Check:
    def check(value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            fail(path, "an array", value)
        if not min_len <= len(value) <= max_len:
            fail(path, f"an array of {min_len} to {max_len} items", f"{len(value)} items")
        return [item(v, f"{path}[{k}]") for k, v in enumerate(value)]
    return check


def mapping(key: Check, value_check: Check) -> Check:
    def check(value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            fail(path, "an object", value)
        for k in value:
            key(k, f"{path} key {k!r}")
        return {k: value_check(v, f"{path}.{k}") for k, v in value.items()}
    return check


def record(required: dict[str, Check], optional: dict[str, Check]) -> Check:
    """An object with exactly these fields (the ``optional`` ones may be missing)."""
    def check(value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            fail(path, "an object", value)
        for name in required:
            if name not in value:
                raise ProgramFormatError(path, f"the field {name!r}", "no such field")
        for name in value:
            if name not in required and name not in optional:
                known = sorted([*required, *optional])
                raise ProgramFormatError(f"{path}.{name}", f"one of the fields {known}", "an unknown field")
        fields = {**required, **optional}
        return {name: fields[name](v, f"{path}.{name}") for name, v in value.items()}
    return check


def json_value(value: Any, path: str) -> Any:
    """Any JSON value (the depth is bounded when the document is read)."""
    if isinstance(value, list):
        return [json_value(v, f"{path}[{k}]") for k, v in enumerate(value)]
    if isinstance(value, dict):
        return mapping(string(), json_value)(value, path)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number(value, path)
    if value is None or isinstance(value, (str, bool)):
        return string()(value, path) if isinstance(value, str) else value
    fail(path, "a JSON value", value)


def int_key(value: Any, path: str) -> str:
    """An object key that spells a non-negative integer (an op uid)."""
    if not isinstance(value, str) or not value.isdigit() or len(value) > 12:
        fail(path, "a key spelling a non-negative integer", value)
    return value


MAX_RANK = 18
"""Most dims of a shape or loop (one loop variable name ``_i`` ... ``_z`` each)."""
EXTENT = integer(1, MAX_EXTENT)
SHAPE = array(EXTENT, 1, MAX_RANK)
NAME = string(1000)
EXPR_TEXT = string()


def region(value: Any, path: str) -> Any:
    """``[[starts], [extents]]`` of equal lengths."""
    pair = array(array(integer(0, MAX_EXTENT), 1, MAX_RANK), 2, 2)(value, path)
    if len(pair[0]) != len(pair[1]):
        fail(path, "starts and extents of equal length", value)
    return pair


SHARED_ARG_TYPES: dict[str, Check] = {
    "src": NAME, "dst": NAME, "A": NAME, "B": NAME, "C": NAME, "E": NAME,
    "thread_range": nullable(array(integer(0, MAX_EXTENT), 2, 2)),
    # the regions of the buffer arguments: checked for every kind, since the loader reads them before it knows
    # whether the kind is registered
    **{f"{side}_region": nullable(region) for side in ("src", "dst", "A", "B", "C", "E")},
}
"""Types of the arguments every op kind shares (buffer names, their regions, the thread range); an op kind types its own
(:attr:`~layoutkit.infer.tileop.TileOp.argument_types`); any other argument is any JSON value."""


class OpKinds(Protocol):
    """What the document check asks of the tile-op registry."""

    def required_args(self, kind: str) -> tuple[str, ...]: ...

    def argument_types(self, kind: str) -> Mapping[str, Check]: ...


def args(value: Any, path: str, types: Mapping[str, Check]) -> dict[str, Any]:
    if not isinstance(value, dict):
        fail(path, "an object", value)
    return {k: types.get(k, SHARED_ARG_TYPES.get(k, json_value))(v, f"{path}.{k}")
            for k, v in mapping(string(1000), json_value)(value, path).items()}


ACCESS = record({"buffer": NAME, "indices": array(EXPR_TEXT, 1, 64), "write": boolean}, {})
OP_FIELDS = record({"kind": NAME, "uid": integer(0, 2**31 - 1), "args": mapping(string(1000), json_value)},
                   {"loop": nullable(SHAPE), "accesses": array(ACCESS)})


def op_check(kinds: OpKinds) -> Check:
    """The check of one op: its fields, then its arguments as its kind's definition types and requires them."""
    def check(value: Any, path: str) -> dict[str, Any]:
        d = OP_FIELDS(value, path)
        d["args"] = args(d["args"], f"{path}.args", kinds.argument_types(d["kind"]))
        for name in kinds.required_args(d["kind"]):
            if d["args"].get(name) is None:
                found = "null" if name in d["args"] else "no such field"
                raise ProgramFormatError(f"{path}.args", f"the argument {name!r} (a {d['kind']} op)", found)
        return loop_fields(d, path)
    return check


def loop_fields(d: dict[str, Any], path: str) -> dict[str, Any]:
    """An op with a loop has accesses, one without has none."""
    if d.get("loop") is not None and "accesses" not in d:
        raise ProgramFormatError(path, "the field 'accesses' (the op has a loop)", "no such field")
    if d.get("loop") is None and d.get("accesses"):
        raise ProgramFormatError(f"{path}.accesses", "no accesses (the op has no loop)",
                                 f"{len(d['accesses'])} accesses")
    return d


BUFFER = record({"name": NAME, "shape": SHAPE, "dtype": NAME, "scope": NAME}, {"alias_of": nullable(NAME)})
LAYOUT = record({"shape": SHAPE, "index": array(EXPR_TEXT, 1, 64)},
                {"thread": EXPR_TEXT, "replicate": integer(1, MAX_EXTENT),
                 "thread_range": nullable(array(integer(0, MAX_EXTENT), 2, 2))})


def document(kinds: OpKinds) -> Check:
    """The check of a whole program document, its ops checked by :func:`op_check`."""
    op = op_check(kinds)
    return record(
        {"threads": integer(1, MAX_THREADS), "target": NAME, "buffers": array(BUFFER), "ops": array(op)},
        {"stages": mapping(NAME, integer(1, 1024)), "regions": mapping(int_key, array(op)),
         "annotations": mapping(NAME, LAYOUT), "loop_annotations": mapping(NAME, LAYOUT)},
    )


def _reject_constant(name: str) -> NoReturn:
    raise ProgramFormatError("$", "finite numbers only", name)


def _depth_ok(value: Any) -> int:
    """Nesting depth of ``value``, counted without recursion (stops past :data:`MAX_DEPTH`)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    deepest = 0
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d)
            if deepest > MAX_DEPTH:
                return deepest
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def load_document(text: object, kinds: OpKinds) -> dict[str, Any]:
    """Parse and check a program document (``kinds``: the tile-op registry its op kinds are checked against);
    return it as plain data."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as err:
            raise ProgramFormatError("$", "UTF-8 text", f"undecodable bytes at offset {err.start}") from None
    if not isinstance(text, str):
        fail("$", "JSON text (str or UTF-8 bytes)", text)
    if len(text) > MAX_TEXT:
        raise ProgramFormatError("$", f"at most {MAX_TEXT} characters", f"{len(text)} characters")
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ProgramFormatError("$", "JSON text", f"not JSON ({err.msg} at line {err.lineno} column "
                                 f"{err.colno})") from None
    except RecursionError:
        raise ProgramFormatError("$", f"nesting at most {MAX_DEPTH} deep", "deeper nesting") from None
    except ValueError as err:  # integers past the interpreter's digit limit
        raise ProgramFormatError("$", "numbers of ordinary size", str(err).splitlines()[0]) from None
    depth = _depth_ok(data)
    if depth > MAX_DEPTH:
        raise ProgramFormatError("$", f"nesting at most {MAX_DEPTH} deep", f"depth {depth}")
    doc: dict[str, Any] = document(kinds)(data, "$")
    return doc
