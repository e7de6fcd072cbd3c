"""Programs as JSON: :meth:`Program.to_json <layoutkit.infer.program.Program.to_json>` and
:meth:`~layoutkit.infer.program.Program.from_json` call :func:`program_to_json` and :func:`program_from_json`.

Index functions are stored as expression text and parsed back by :func:`layoutkit.algebra.parse_expr`
(no ``eval``); layout annotations are stored as their index (and thread) expressions.  A table lookup has no
such text (:class:`~layoutkit.algebra.nodes.Lookup` prints its table's digest, not its entries), so a program
that holds one is refused when written, not misread when read back.

>>> from layoutkit.infer import Program
>>> p = Program(threads=64)
>>> x = p.alloc_fragment("x", (8, 8), "float32")
>>> _ = p.parallel((8, 8), writes=[(x, lambda i, j: (j, i))])
>>> op_dict(p.ops[0])["accesses"]
[{'buffer': 'x', 'indices': ['_j', '_i'], 'write': True}]
>>> program_from_json(program_to_json(p), Program).to_json() == p.to_json()
True
"""

from __future__ import annotations

import json
from typing import Any

from ..algebra.layout import Layout
from ..algebra.nodes import Expr, Lookup, text_prefix, walk
from ..algebra.parse import parse_expr
from ..algebra.shapes import check_shape, placeholder
from ..errors import ProgramFormatError, ShapeError, UnsupportedError
from ..fragment.fragment import Fragment
from .library import TILE_OPS
from .ops import Access, Op
from .schema import load_document

Program = Any
"""A :class:`~layoutkit.infer.Program` (built by the program module, which builds on this one)."""


def program_to_dict(p: Program) -> dict:
    """``p`` as JSON-ready data: threads, target, buffers, stages, ops, annotations and target regions."""
    ops = [op_dict(op) for op in p.ops]
    ann = {}
    for name, lay in p.annotations.items():
        ann[name] = _layout_dict(lay)
    out = {"threads": p.threads, "target": p.target,
           "buffers": [b.to_dict() for b in p.buffers.values()], "stages": dict(p.stages),
           "ops": ops, "annotations": ann}
    if p.loop_annotations:
        out["loop_annotations"] = {name: _layout_dict(lay) for name, lay in p.loop_annotations.items()}
    if p.regions:
        out["regions"] = {str(k): [op_dict(op) for op in v] for k, v in p.regions.items()}
    return out


def program_to_json(p: Program) -> str:
    return json.dumps(program_to_dict(p), sort_keys=True)


def program_from_json(text: str | bytes, cls: type[Program]) -> Program:
    """Rebuild a ``cls`` program from :func:`program_to_json` text; index expressions are parsed by the
    safe parser.  The document is checked against :mod:`.schema` first: anything else raises
    :class:`~layoutkit.errors.ProgramFormatError` naming the field.

    >>> from layoutkit.infer import Program
    >>> program_from_json(  # doctest: +ELLIPSIS
    ...     '{"threads": 32, "target": "sm_80", "buffers": [{"name": "x"}], "ops": []}', Program)
    Traceback (most recent call last):
    ...
    layoutkit.errors.ProgramFormatError: Program.from_json: $.buffers[0]: expected the field 'shape'; found no ...
    """
    d = load_document(text, TILE_OPS)
    p = cls(d["threads"], d["target"])
    for k, b in enumerate(d["buffers"]):
        if b.get("alias_of") is not None and b["alias_of"] not in p.buffers:
            raise ProgramFormatError(f"$.buffers[{k}].alias_of", "a buffer declared before it", repr(b["alias_of"]))
        p._add(b["name"], b["shape"], b["dtype"], b["scope"], b.get("alias_of"))
    for name in d.get("stages", {}):
        _declared(p, name, f"$.stages key {name!r}")
    p.stages = dict(d.get("stages", {}))
    seen: set[int] = set()
    for k, body in d.get("regions", {}).items():
        p.regions[int(k)] = [_op_from(o, p, f"$.regions.{k}[{n}]", seen) for n, o in enumerate(body)]
    for n, o in enumerate(d["ops"]):
        path = f"$.ops[{n}]"
        if o["uid"] in p.regions:  # a region op (Program.region): its body's buffers are its own
            _unique(o["uid"], seen, path)
            op = Op(o["kind"], o["uid"], dict(o["args"]), None, (),
                    tuple(dict.fromkeys(b for x in p.regions[o["uid"]] for b in x.buffers)))
        else:
            op = _op_from(o, p, path, seen)
        p.ops.append(op)
        p.next_uid = max(p.next_uid, o["uid"] + 1)
    for body in p.regions.values():
        for op in body:
            p.next_uid = max(p.next_uid, op.uid + 1)
    for name, ld in d.get("annotations", {}).items():
        _declared(p, name, f"$.annotations key {name!r}")
        p.annotations[name] = _layout_from(ld)
    loops = {op.name: op for op in p.ops} | {op.name: op for body in p.regions.values() for op in body}
    for name, ld in d.get("loop_annotations", {}).items():
        found = loops.get(name)
        if found is None or found.loop is None:
            raise ProgramFormatError(f"$.loop_annotations key {name!r}", "a loop op of the program", repr(name))
        lay = _layout_from(ld)
        if not isinstance(lay, Fragment):
            raise ProgramFormatError(f"$.loop_annotations.{name}", "a fragment (with 'thread')", "no 'thread'")
        try:
            p.annotate_loop(found, lay)
        except ShapeError as err:  # a layout of the wrong loop: a malformed document, not a bad call
            raise ProgramFormatError(f"$.loop_annotations.{name}", "a loop layout of the op's shape and threads",
                                     str(err)) from None
    return p


def _declared(p: Program, name: object, path: str) -> str:
    if not isinstance(name, str) or name not in p.buffers:
        raise ProgramFormatError(path, f"a declared buffer (one of {sorted(p.buffers)[:8]})", repr(name))
    return name


def _check_arg_ranks(o: dict, p: Program, path: str) -> None:
    """Regions of the rank of the buffers they name, then the op's own checks
    (:attr:`.tileop.TileOp.check_document`)."""
    a = o["args"]
    for side in ("src", "dst", "A", "E", "B"):
        reg = a.get(f"{side}_region")
        if reg is None or side not in a:
            continue
        shape = p.buffers[a[side]].shape
        starts, extents = reg
        if len(starts) != len(shape):
            raise ProgramFormatError(f"{path}.args.{side}_region", f"{len(shape)} starts and extents (the rank "
                                     f"of {a[side]})", str(len(starts)))
        if min(extents) < 1:  # a region may overhang the buffer (boundary tiles); it may not be empty
            raise ProgramFormatError(f"{path}.args.{side}_region", "positive extents", str(reg))
    definition = TILE_OPS.get(o["kind"])
    if definition is not None and definition.check_document is not None:
        definition.check_document(a, {name: b.shape for name, b in p.buffers.items()}, path)


def _unique(uid: int, seen: set[int], path: str) -> None:
    if uid in seen:
        raise ProgramFormatError(f"{path}.uid", "a uid no other op has", str(uid))
    seen.add(uid)


def op_dict(op: Op) -> dict:
    """``op`` as JSON-ready data (what :meth:`Program.to_json` stores)."""
    d = {"kind": op.kind, "uid": op.uid, "args": _jsonable(op.args)}
    if op.loop is not None:
        d["loop"] = list(op.loop)
        d["accesses"] = [{"buffer": a.buffer, "indices": [expr_text(e) for e in a.indices],
                          "write": a.is_write} for a in op.accesses]
    return d


def _op_from(o: dict, p: Program, path: str, seen: set[int]) -> Op:
    _unique(o["uid"], seen, path)
    loop = tuple(o["loop"]) if o.get("loop") is not None else None
    accesses: tuple[Access, ...] = ()
    if loop is not None:
        names = {f"_{c}": placeholder(k, e) for k, (c, e) in enumerate(zip("ijklmnopqrstuvwxyz", loop))}
        built = []
        for k, a in enumerate(o["accesses"]):
            buf = p.buffers.get(_declared(p, a["buffer"], f"{path}.accesses[{k}].buffer"))
            if buf is not None and len(a["indices"]) != len(buf.shape):
                raise ProgramFormatError(f"{path}.accesses[{k}].indices", f"{len(buf.shape)} indices (the rank "
                                         f"of {buf.name})", f"{len(a['indices'])}")
            built.append(Access(a["buffer"], tuple(parse_expr(t, names) for t in a["indices"]), a["write"]))
        accesses = tuple(built)
    named = TILE_OPS.buffer_args(o["kind"])
    for key in named:
        if key in o["args"]:
            _declared(p, o["args"][key], f"{path}.args.{key}")
    _check_arg_ranks(o, p, path)
    args: dict[str, Any] = {k: (tuple(tuple(x) for x in v) if k.endswith("_region") and v is not None else v)
            for k, v in o["args"].items()}
    return Op(o["kind"], o["uid"], args, loop, accesses,
              tuple(dict.fromkeys([a.buffer for a in accesses] + [v for k, v in args.items() if k in named])))


def expr_text(e: Expr) -> str:
    """The text of ``e`` that :func:`~layoutkit.algebra.parse_expr` reads back, or
    :class:`~layoutkit.errors.UnsupportedError` for an expression that reads a table (no such text).

    >>> from layoutkit.algebra import Table, Var
    >>> from layoutkit.algebra.nodes import lookup
    >>> expr_text(Var("_i", 4) * 2)
    '_i * 2'
    >>> expr_text(lookup(Table([1, 0]), Var("_i", 2)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.UnsupportedError: Program.to_json: the index expression table#...[_i] reads table#... ...
    """
    found = next((x for x in walk(e) if isinstance(x, Lookup)), None)
    if found is not None:
        raise UnsupportedError(f"Program.to_json: the index expression {text_prefix(e, 200)} reads "
                               f"table#{found.table.name} ({len(found.table)} entries): a table-backed index has no "
                               "expression text to store")
    return str(e)


def _jsonable(args: dict) -> dict:
    return {k: ([list(x) for x in v] if k.endswith("_region") else v) for k, v in args.items()}


def _layout_dict(lay: Layout) -> dict:
    from ..fragment.fragment import Fragment

    d = {"shape": list(lay.input_shape), "index": [expr_text(e) for e in lay.forward_index]}
    if isinstance(lay, Fragment):
        d.update(thread=expr_text(lay.forward_thread), replicate=lay.replicate_size,
                 thread_range=None if lay.thread_range is None else list(lay.thread_range))
    return d


def _layout_from(d: dict) -> Layout:
    from ..fragment.fragment import Fragment, rep_var

    shape = check_shape(d["shape"])
    if ("replicate" in d or "thread_range" in d) and "thread" not in d:
        raise ProgramFormatError("$.annotations", "'thread' with 'replicate' / 'thread_range'", "no 'thread'")
    names: dict = {f"_{c}": placeholder(k, e) for k, (c, e) in enumerate(zip("ijklmnopqrstuvwxyz", shape))}
    if "thread" in d:
        names["_rep"] = rep_var(int(d.get("replicate", 1)))
        tr = d.get("thread_range")
        return Fragment.from_exprs(shape, [parse_expr(t, names) for t in d["index"]], parse_expr(d["thread"], names),
                                   int(d.get("replicate", 1)), None if tr is None else tuple(tr))
    return Layout.from_exprs(shape, [parse_expr(t, names) for t in d["index"]])

