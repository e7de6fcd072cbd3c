"""Programs as JSON: :meth:`Program.to_json <layoutkit.infer.program.Program.to_json>` and
:meth:`~layoutkit.infer.program.Program.from_json` call :func:`program_to_json` and :func:`program_from_json`.

Index functions are stored as expression text and parsed back by :func:`layoutkit.algebra.parse_expr`
(no ``eval``); layout annotations are stored as their index (and thread) expressions.

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
from typing import TYPE_CHECKING, Any

from ..algebra.layout import Layout, check_shape, placeholder
from ..algebra.parse import parse_expr
from ..errors import ShapeError
from .ops import Access, Op

if TYPE_CHECKING:  # pragma: no cover
    from .program import Program


def program_to_dict(p: Program) -> dict:
    """``p`` as JSON-ready data: threads, target, buffers, stages, ops, annotations and target regions."""
    ops = [op_dict(op) for op in p.ops]
    ann = {}
    for name, lay in p.annotations.items():
        ann[name] = _layout_dict(lay)
    out = {"threads": p.threads, "target": p.target,
           "buffers": [b.to_dict() for b in p.buffers.values()], "stages": dict(p.stages),
           "ops": ops, "annotations": ann}
    if p.regions:
        out["regions"] = {str(k): [op_dict(op) for op in v] for k, v in p.regions.items()}
    return out


def program_to_json(p: Program) -> str:
    return json.dumps(program_to_dict(p), sort_keys=True)


def program_from_json(text: str, cls: type[Program]) -> Program:
    """Rebuild a ``cls`` program from :func:`program_to_json` text; index expressions are parsed by the
    safe parser."""
    try:
        d = json.loads(text)
    except json.JSONDecodeError as err:
        raise ShapeError(f"Program.from_json: not JSON ({err.msg})") from None
    p = cls(d["threads"], d["target"])
    for b in d["buffers"]:
        p._add(b["name"], b["shape"], b["dtype"], b["scope"], b.get("alias_of"))
    p.stages = {k: int(v) for k, v in d.get("stages", {}).items()}
    for k, body in d.get("regions", {}).items():
        p.regions[int(k)] = [_op_from(o, p) for o in body]
    for o in d["ops"]:
        if o["kind"] == "vf":
            body = p.regions.get(int(o["uid"]), [])
            op = Op("vf", int(o["uid"]), dict(o["args"]), None, (),
                    tuple(dict.fromkeys(b for x in body for b in x.buffers)))
        else:
            op = _op_from(o, p)
        p.ops.append(op)
        p.next_uid = max(p.next_uid, int(o["uid"]) + 1)
    for body in p.regions.values():
        for op in body:
            p.next_uid = max(p.next_uid, op.uid + 1)
    for name, ld in d.get("annotations", {}).items():
        p.annotations[name] = _layout_from(ld)
    return p


def op_dict(op: Op) -> dict:
    """``op`` as JSON-ready data (what :meth:`Program.to_json` stores)."""
    d = {"kind": op.kind, "uid": op.uid, "args": _jsonable(op.args)}
    if op.loop is not None:
        d["loop"] = list(op.loop)
        d["accesses"] = [{"buffer": a.buffer, "indices": [str(e) for e in a.indices],
                          "write": a.is_write} for a in op.accesses]
    return d


def _op_from(o: dict, p: Program) -> Op:
    loop = tuple(o["loop"]) if o.get("loop") is not None else None
    accesses: tuple[Access, ...] = ()
    if loop is not None:
        names = {f"_{c}": placeholder(k, e) for k, (c, e) in enumerate(zip("ijklmnopqrstuvwxyz", loop))}
        accesses = tuple(Access(a["buffer"], tuple(parse_expr(t, names) for t in a["indices"]), a["write"])
                         for a in o["accesses"])
        for a in accesses:
            if a.buffer not in p.buffers:
                raise ShapeError(f"{o['kind']}#{o['uid']}: unknown buffer {a.buffer!r}")
    args: dict[str, Any] = {k: (tuple(tuple(x) for x in v) if k.endswith("_region") and v is not None else v)
            for k, v in o["args"].items()}
    return Op(o["kind"], int(o["uid"]), args, loop, accesses,
              tuple(dict.fromkeys([a.buffer for a in accesses] + [
                  v for k, v in args.items() if k in ("A", "B", "C", "src", "dst")])))


def _jsonable(args: dict) -> dict:
    return {k: ([list(x) for x in v] if k.endswith("_region") else v) for k, v in args.items()}


def _layout_dict(lay: Layout) -> dict:
    from ..fragment.fragment import Fragment

    d = {"shape": list(lay.input_shape), "index": [str(e) for e in lay.forward_index]}
    if isinstance(lay, Fragment):
        d.update(thread=str(lay.forward_thread), replicate=lay.replicate_size,
                 thread_range=None if lay.thread_range is None else list(lay.thread_range))
    return d


def _layout_from(d: dict) -> Layout:
    from ..fragment.fragment import Fragment, rep_var

    shape = check_shape(d["shape"])
    names: dict = {f"_{c}": placeholder(k, e) for k, (c, e) in enumerate(zip("ijklmnopqrstuvwxyz", shape))}
    if "thread" in d:
        names["_rep"] = rep_var(int(d["replicate"]))
        tr = d.get("thread_range")
        return Fragment.from_exprs(shape, [parse_expr(t, names) for t in d["index"]], parse_expr(d["thread"], names),
                                   int(d["replicate"]), None if tr is None else tuple(tr))
    return Layout.from_exprs(shape, [parse_expr(t, names) for t in d["index"]])

