"""``resolve(glir_text, target)``: every ``#gluon.auto_encoding`` of a GLIR module replaced by an encoding
layoutkit chooses (see ``docs/gluon.md``).

1. *Read* (:mod:`.glir`): each tensor type on each line is placed on the SSA value it types.
2. *Relate*: Triton's ops tie the encodings of their values -- elementwise ops, casts, ``addptr``, loads,
   stores, ``broadcast``, calls, loop-carried values and yields share one encoding (one *class*);
   ``expand_dims`` and reductions make the smaller value a ``slice`` of the larger; a ``dot`` makes its
   operands ``dot_op`` of the accumulator's MMA encoding; a ``convert_layout`` joins its two sides when that
   breaks no author constraint (a conversion avoided).  The author's own encodings (and ``set_auto_layout``
   seeds) are fixed.
3. *Solve*: the free classes become fragments of a layoutkit :class:`~layoutkit.infer.Program` -- each global
   load / store a parallel loop over the class shape reading / writing a global tensor at the affine address
   the pointer arithmetic computes, each slice relation a reduction -- and :func:`~layoutkit.infer.infer_layouts`
   lays them out (vector width and coalescing of the global accesses, register count).  MMA accumulators take
   the target's MMA encoding with layoutkit's warp partition.
4. *Print*: each class's encoding (``#ttg.blocked`` where exact, ``slice`` / ``dot_op`` / ``nvidia_mma`` by
   relation) goes back into the text as an alias.

``explain(glir_text, target)`` lists which op decided each class.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...algebra.layout import Layout
from ...algebra.linear import F2Linear
from ...cost.warp_access import conversion_moves, reduction_rounds, warp_sectors
from ...dtypes import element_bits
from ...errors import LayoutConflictError, LayoutError, UnsupportedError
from ...fragment.fragment import Fragment
from ...infer import Program, infer_layouts
from ...infer.ops import Buffer
from ...targets.nv import bank_conflicts, compute_warp_partition
from .axis_info import AxisAnalysis, hints, vector_bound
from .encodings import (
    Blocked,
    Distributed,
    DotOperand,
    Encoding,
    Linear,
    NvidiaMma,
    Shared,
    Slice,
    blocked_of,
    parse_encoding,
)
from .glir import GlirModule, GlirOp, read_glir
from .objects import shared_layout

SAME = frozenset("""tt.addptr tt.load tt.store arith.select tt.bitcast tt.fp_to_fp tt.int_to_ptr tt.ptr_to_int
tt.clampf tt.precise_sqrt tt.precise_divf tt.mulhiui tt.extern_elementwise tt.atomic_rmw tt.atomic_cas
tt.broadcast ttg.async_copy_global_to_local ub.poison tt.assert gluon.set_auto_layout""".split())
FREE_RESULT = frozenset("tt.splat tt.make_range arith.constant ttg.local_load tt.descriptor_load".split())
_ELEMENTWISE = re.compile(r"^(arith|math)\.")
LOOP_WEIGHT = 8
"""The price multiplier of an access inside a loop (its trip count is a runtime value)."""
RUNTIME_STRIDE = 1 << 20
"""The stride of a dim scaled by a runtime scalar: far apart (its alignment is what the axis facts prove)."""
CP_ASYNC_MIN_BYTES = 4
"""``cp.async`` copies 4, 8 or 16 bytes per thread: a layout giving a thread fewer contiguous bytes fails to lower."""


class GlirResolveError(UnsupportedError):
    """A GLIR construct resolve cannot read or lay out; the message names the op and its line."""


@dataclass
class _Classes:
    """Union-find over value keys (``function:%name``) plus what ties each class."""

    parent: dict[str, str] = field(default_factory=dict)
    fixed: dict[str, tuple[Encoding, str]] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    elements: dict[str, str] = field(default_factory=dict)
    slices: list[tuple[str, int, str, str]] = field(default_factory=list)   # child, dim, parent, op
    operands: list[tuple[str, int, str, int, str]] = field(default_factory=list)  # value, idx, acc, kWidth, op
    derived: list[tuple[str, tuple, str, str]] = field(default_factory=list)  # result, (kind, ...), src, op
    mma: dict[str, tuple[int, str]] = field(default_factory=dict)            # acc value -> (version, op)
    soft: list[tuple[str, str]] = field(default_factory=list)                # convert_layout sides
    why: dict[str, str] = field(default_factory=dict)

    def find(self, k: str) -> str:
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _key(func: str, name: str) -> str:
    return f"{func}:{name.replace(':', '#') if ':' in name and not name.split(':')[1].isdigit() else name}"


def _symbol(op: GlirOp) -> str:
    """The function symbol a ``tt.func`` / ``tt.call`` line names (``@name`` or ``@"quoted name"``)."""
    m = re.search(r'@(?:"([^"]+)"|([\w.$-]+))', op.text)
    if m is None:
        raise GlirResolveError(f"{op.describe()}: expected a function symbol in {op.text.strip()[:120]!r}")
    return m.group(1) or m.group(2)


def _results(op: GlirOp) -> list[str]:
    """Result names, ``%r:3`` expanded to ``%r#0 .. %r#2``."""
    out = []
    for r in op.results:
        if ":" in r:
            name, n = r.split(":")
            out += [f"{name}#{i}" for i in range(int(n))]
        else:
            out.append(r)
    return out


def _operand_names(op: GlirOp) -> list[str]:
    return [o.replace(":", "#") for o in op.operands]


@dataclass
class _Reading:
    module: GlirModule
    classes: _Classes
    placed: dict[tuple[int, int], str]       # (op index, type index) -> value key
    defs: dict[str, GlirOp]                  # value key -> defining op
    func_of: dict[int, str]                  # op line -> function (an op is one line)
    accesses: list[tuple[str, str, GlirOp]]  # (pointer value key, 'load'|'store', op)
    shared: list[tuple[str, str, GlirOp]]    # (register value key, 'load'|'store', op) of shared memory
    arguments: dict[str, dict[str, int]] = field(default_factory=dict)   # kernel argument -> its tt.* hints
    inductions: dict[str, tuple[str, str]] = field(default_factory=dict)  # loop variable -> (lower bound, step)
    carried: dict[str, tuple[str, str]] = field(default_factory=dict)     # iter arg / loop result -> (init, yield)

    def axis(self) -> AxisAnalysis:
        """Triton's axis facts (contiguity, divisibility, constancy) of the module's values."""
        def operands(op: GlirOp) -> list[str]:
            return [_key(self.func_of[op.line], o) for o in _operand_names(op)]
        return AxisAnalysis(self.defs, operands, self.arguments, self.inductions, self.carried)


def _top_level_split(text: str) -> list[str]:
    """``text`` split at the commas outside ``<>`` / ``()`` (a type list).

    >>> _top_level_split("i32, tensor<4x8xf32, #a>, i32")
    ['i32', ' tensor<4x8xf32, #a>', ' i32']
    """
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]] if text.strip() else parts


def _tensor_positions(types: str, count: int) -> list[int]:
    """Where the ``count`` tensor types stand in the type list at the start of ``types`` (``"(i32, tensor<...>,
    i32) : i32 {"`` or ``"i32, tensor<...>"``): a loop carrying scalars beside tensors has its tensors' types
    among theirs.  Where the list cannot be read, the first ``count`` positions.

    >>> _tensor_positions("(i32, tensor<4xf32, #a>, i32)  : i32 {", 1)
    [1]
    """
    text = types.strip()
    if text.startswith("("):
        depth = 0
        for end, ch in enumerate(text):  # noqa: B007  (end is read after the loop)
            depth += 1 if ch == "(" else -1 if ch == ")" else 0
            if depth == 0:
                break
        text = text[1:end]
    else:
        text = text.split("{", 1)[0]
    positions = [k for k, ty in enumerate(_top_level_split(text)) if ty.strip().startswith("tensor<")]
    return positions if len(positions) == count else list(range(count))


def _read(text: str) -> _Reading:
    m = read_glir(text)
    ctas = re.search(r'"ttg\.num-ctas"\s*=\s*(\d+)', text)
    if ctas and int(ctas.group(1)) > 1:
        first = next((op for op in m.ops if any(t.is_auto for t in op.types)), None)
        if first is not None:
            raise GlirResolveError(f"{first.describe()}: a module of {ctas.group(1)} CTAs (ttg.num-ctas); resolve "
                                   "lays out single-CTA kernels only (a multi-CTA register layout needs a CGA layout)")
    cl = _Classes()
    placed: dict[tuple[int, int], str] = {}
    defs: dict[str, GlirOp] = {}
    func_of: dict[int, str] = {}
    params: dict[str, list[str]] = {}
    returns: dict[str, list[list[str]]] = {}
    accesses: list[tuple[str, str, GlirOp]] = []
    shared: list[tuple[str, str, GlirOp]] = []
    func = ""
    stack: list[tuple[int, GlirOp]] = []
    calls: list[tuple[str, list[str], list[str], GlirOp]] = []
    arguments: dict[str, dict[str, int]] = {}
    inductions: dict[str, tuple[str, str]] = {}
    carried: dict[str, tuple[str, str]] = {}
    loop_args: dict[int, list[tuple[str, str, str]]] = {}   # loop op line -> (iter arg, init, result) keys

    def place(i: int, t: int, key: str) -> None:
        ty = m.ops[i].types[t]
        placed[(i, t)] = key
        cl.find(key)
        old = cl.shapes.get(key)
        cl.shapes[key] = ty.shape if old is None else tuple(max(a, b) for a, b in zip(old, ty.shape))
        cl.elements.setdefault(key, ty.element)
        if not ty.is_auto:
            enc = parse_encoding(ty.encoding_text, m.aliases)
            if isinstance(enc, Distributed):
                prev = cl.fixed.get(key)
                if prev is not None and prev[0] != enc:
                    raise GlirResolveError(f"{m.ops[i].describe()}: value {key} typed {prev[0]} and {enc}")
                cl.fixed[key] = (enc, m.ops[i].describe())

    def same(i: int, keys: list[str]) -> None:
        """One signature type for all of ``keys`` (an elementwise op)."""
        op = m.ops[i]
        for t in range(len(op.types)):
            place(i, t, keys[0])
        for k in keys[1:]:
            cl.union(keys[0], k)

    def ordered(i: int, keys: list[str]) -> None:
        op = m.ops[i]
        if len(op.types) != len(keys):
            raise GlirResolveError(f"{op.describe()}: expected {len(keys)} tensor types for {keys}; found "
                                   f"{len(op.types)} in {op.text.strip()!r}")
        for t, k in enumerate(keys):
            place(i, t, k)

    tensor_names: set[str] = set()
    for i, op in enumerate(m.ops):
        if op.name == "tt.func":
            func = _symbol(op) or f"f{i}"
            ps = re.findall(r"(%[\w$.-]+):\s*tensor<", op.text)
            params[func] = [_key(func, p) for p in ps]
            # each argument's text runs to the next argument's name: its {tt.divisibility = ...} hints
            header = op.text.split(") attributes", 1)[0]
            starts = list(re.finditer(r"(%[\w$.-]+):\s", header))
            for idx, am in enumerate(starts):
                found = hints(header[am.end():starts[idx + 1].start() if idx + 1 < len(starts) else len(header)])
                if found:
                    arguments[_key(func, am.group(1))] = found
            before = [t for t in op.types[:op.split]]
            for t, p in enumerate(ps[:len(before)]):
                place(i, t, _key(func, p))
            rets = op.types[op.split:]
            for t in range(len(rets)):
                place(i, op.split + t, f"{func}:return{t}")
            func_of[op.line] = func
            stack.append((i, op))
            continue
        func_of[op.line] = func
        res = [_key(func, r) for r in _results(op)]
        ops_ = [_key(func, o) for o in _operand_names(op)]
        for r in res:
            defs[r] = op
        name = op.name
        opens = op.text.rstrip().endswith("{")
        if name in ("}", "})"):
            owner_i, owner = stack.pop() if stack else (-1, None)
            if name == "})" and owner is not None and op.types:
                # the closing line of a generic region op carries its signature
                o_keys = (_key(func, o) for o in _operand_names(owner))
                o_ops = [k for k in o_keys if k in tensor_names or k in cl.shapes]
                o_res = [_key(func, r) for r in _results(owner)]
                before, after = op.types[:op.split], op.types[op.split:]
                for t in range(len(before)):
                    place(i, t, o_ops[t] if t < len(o_ops) else o_ops[-1])
                for t in range(len(after)):
                    place(i, op.split + t, o_res[t])
                _relate_region_op(owner, o_ops, o_res, cl)
            if opens and owner is not None:          # "} else {"
                stack.append((owner_i, owner))
            continue
        if not op.types:
            if opens:
                stack.append((i, op))
            continue
        tensor_ops = [k for k in ops_ if k in tensor_names or k in cl.shapes]
        if name in ("scf.for", "scf.if", "scf.while"):
            inits = re.findall(r"(%[\w$.-]+)\s*=\s*(%[\w$.#:-]+)", op.text.split("iter_args", 1)[1]) \
                if "iter_args" in op.text else []
            # the result types: "-> (T, ...)" (before the trailing ": i32 {" of scf.for)
            header = op.text.split("->", 1)[1] if "->" in op.text else ""
            for t, pos in enumerate(_tensor_positions(header, len(op.types))):
                place(i, t, res[pos])
            for t, (a, init) in enumerate(inits):
                if t < len(res):
                    cl.union(res[t], _key(func, a))
                    cl.union(res[t], _key(func, init.replace(":", "#")))
            tensor_names.update(res)
            tensor_names.update(_key(func, a) for a, _ in inits)
            loop = re.search(r"scf\.for\s+(%[\w$.-]+)\s*=\s*(%[\w$.#:-]+)\s+to\s+%[\w$.#:-]+\s+step\s+(%[\w$.#:-]+)",
                             op.text)
            if loop:
                inductions[_key(func, loop.group(1))] = (_key(func, loop.group(2).replace(":", "#")),
                                                         _key(func, loop.group(3).replace(":", "#")))
                loop_args[op.line] = [(_key(func, arg), _key(func, first.replace(":", "#")), r)
                                      for (arg, first), r in zip(inits, res)]
            stack.append((i, op))
            continue
        if name == "scf.yield" or name == "scf.condition":
            owner = stack[-1][1] if stack else None
            owner_res = [_key(func, r) for r in _results(owner)] if owner is not None else []
            yielded = [k for k in ops_]
            for (arg_key, init_key, result_key), out_key in zip(
                    loop_args.get(owner.line, []) if owner is not None else [], yielded):
                carried[arg_key] = carried[result_key] = (init_key, out_key)
            for t, pos in enumerate(_tensor_positions(op.text.rsplit(" : ", 1)[-1], len(op.types))):
                place(i, t, yielded[pos])
            for k, r in zip(yielded, owner_res):
                if k in tensor_names or any(placed.get((i, t)) == k for t in range(len(op.types))):
                    cl.union(k, r)
            continue
        if name in ("tt.return",):
            # a function returning scalars beside tensors: only the tensors have encodings
            for t in range(len(op.types)):
                place(i, t, tensor_ops[t])
            returns.setdefault(func, []).append(tensor_ops)
            continue
        if name == "tt.call":
            callee = _symbol(op)
            # the signature says which operands and results are tensors (scalars, memdescs stand beside them)
            signature = op.text.rsplit(") : (", 1)[-1] if ") : (" in op.text else ""
            arg_types, _, res_types = signature.partition(") ->")
            tensor_ops = [o for o, ty in zip(ops_, _top_level_split(arg_types)) if ty.strip().startswith("tensor<")]
            tensor_res = [r for r, ty in zip(res, _top_level_split(res_types.strip().strip("()")))
                          if ty.strip().startswith("tensor<")]
            ordered(i, tensor_ops + tensor_res)
            calls.append((callee, tensor_ops, tensor_res, op))
            tensor_names.update(tensor_res)
            continue
        tensor_names.update(res)
        if name == "tt.trans":
            ordered(i, tensor_ops + res)
            m_order = re.search(r"order\s*=\s*array<i32:\s*([\d,\s]+)>", op.text)
            if m_order is None:
                raise GlirResolveError(f"{op.describe()}: expected an order = array<i32: ...> attribute")
            perm = tuple(int(x) for x in m_order.group(1).split(","))
            cl.derived.append((res[0], ("trans", perm), tensor_ops[0], op.describe()))
        elif name in ("tt.join", "tt.split", "tt.reshape"):
            kind = name.split(".")[1]
            # one printed type per side: join's two operands share theirs, split's two results theirs
            if len(op.types) != 2:
                raise GlirResolveError(f"{op.describe()}: expected 'T -> T' types; found {op.text.strip()[:120]!r}")
            place(i, 0, tensor_ops[0])
            place(i, 1, res[0])
            if kind == "join":
                cl.union(tensor_ops[0], tensor_ops[1])
            elif kind == "split":
                cl.union(res[0], res[1])
            cl.derived.append((res[0], (kind,), tensor_ops[0], op.describe()))
        elif name == "tt.expand_dims":
            ordered(i, tensor_ops + res)
            cl.slices.append((tensor_ops[0], op.int_attr("axis") or 0, res[0], op.describe()))
        elif name in ("tt.reduce", "tt.scan"):
            if opens:
                stack.append((i, op))
            else:
                ordered(i, tensor_ops + res)
                _relate_region_op(op, tensor_ops, res, cl)
        elif name == "ttg.convert_layout":
            ordered(i, tensor_ops + res)
            cl.soft.append((tensor_ops[0], res[0]))
        elif name in FREE_RESULT:
            ordered(i, tensor_ops + res) if len(op.types) == len(tensor_ops + res) else same(i, res)
        elif name == "tt.dot":
            a, b, c = tensor_ops[:3]
            place(i, 0, a)
            place(i, 1, b)
            place(i, 2, c)
            cl.union(c, res[0])
            bits = {"f16": 16, "bf16": 16, "f32": 32, "f8E4M3FN": 8, "f8E5M2": 8, "i8": 8}
            kw = max(1, 32 // bits.get(op.types[0].element, 16))
            cl.operands.append((a, 0, c, kw, op.describe()))
            cl.operands.append((b, 1, c, kw, op.describe()))
            cl.mma[c] = (2, op.describe())
        elif name in ("ttng.warp_group_dot", "ttng.warp_group_dot_wait"):
            keys = tensor_ops + res
            if name == "ttng.warp_group_dot":
                for t in range(len(op.types)):
                    place(i, t, keys[-1] if t == len(op.types) - 1 else tensor_ops[min(t, len(tensor_ops) - 1)])
                acc = tensor_ops[-1] if tensor_ops else res[0]
                cl.union(acc, res[0])
                cl.mma[acc] = (3, op.describe())
            else:
                same(i, keys)
        elif name in ("ttg.local_alloc", "ttg.local_store", "tt.descriptor_store", "ttng.async_shared_store"):
            for t in range(len(op.types)):
                place(i, t, tensor_ops[t])
            if len(tensor_ops) > 1:
                same(i, tensor_ops)
        elif name in SAME or _ELEMENTWISE.match(name) or name.startswith("math."):
            same(i, tensor_ops + res)
        else:
            raise GlirResolveError(f"{op.describe()}: resolve does not read {name!r} "
                                   f"({op.text.strip()[:120]!r}); the ops read are listed in docs/gluon.md")
        if name in ("ttg.local_alloc", "ttg.local_store", "ttng.async_shared_store") and tensor_ops:
            shared.append((tensor_ops[0], "store", op))
        elif name == "ttg.local_load":
            shared.append((res[0], "load", op))
        if name in ("tt.load", "ttg.async_copy_global_to_local"):
            accesses.append((tensor_ops[0], "load", op))
        elif name == "tt.store":
            accesses.append((tensor_ops[0], "store", op))
        if opens:
            stack.append((i, op))
    for callee, args, res, _ in calls:
        for a, p in zip(args, params.get(callee, [])):
            cl.union(a, p)
        for t, r in enumerate(res):
            cl.union(r, f"{callee}:return{t}")
            for ret in returns.get(callee, []):
                if t < len(ret):
                    cl.union(r, ret[t])
    for func_name, returned in returns.items():
        for values in returned:
            for t, k in enumerate(values):
                key = f"{func_name}:return{t}"
                if key in cl.parent:
                    cl.union(key, k)
    return _Reading(m, cl, placed, defs, func_of, accesses, shared, arguments, inductions, carried)


def _relate_region_op(op: GlirOp, tensor_ops: list[str], res: list[str], cl: _Classes) -> None:
    if op.name == "tt.reduce":
        axis = op.int_attr("axis") or 0
        for a in tensor_ops[1:]:
            cl.union(tensor_ops[0], a)
        for r in res:
            if cl.shapes.get(r, ()) != ():
                cl.slices.append((r, axis, tensor_ops[0], op.describe()))
    elif op.name == "tt.scan":
        for k in tensor_ops[1:] + res:
            cl.union(tensor_ops[0], k)


# ---- solving --------------------------------------------------------------------------------------------------

@dataclass
class _Solution:
    encodings: dict[str, Encoding]
    why: dict[str, str]


def _settle_relations(cl: _Classes) -> tuple[dict[str, tuple[int, str, str]], dict[str, tuple[int, str, int, str]]]:
    """Slice children per class (parents of one child with one dim are one class) and dot operands."""
    while True:
        child: dict[str, tuple[int, str, str]] = {}
        merged = False
        for c, d, p, why in cl.slices:
            rc, rp = cl.find(c), cl.find(p)
            if rc in child:
                d0, p0, why0 = child[rc]
                if d0 != d:
                    raise GlirResolveError(f"{why}: value class {c} is a slice along dim {d} here and along dim "
                                           f"{d0} at {why0}; a convert_layout is needed between them")
                if cl.find(p0) != rp:
                    cl.union(p0, rp)
                    merged = True
                if why.startswith("tt.reduce"):      # the explanation names the reduction over an expand_dims
                    child[rc] = (d0, p0, why)
            else:
                child[rc] = (d, rp, why)
        if not merged:
            break
    child = {cl.find(c): (d, cl.find(p), w) for c, (d, p, w) in child.items()}
    operand = {cl.find(v): (idx, cl.find(acc), kw, why) for v, idx, acc, kw, why in cl.operands}
    return child, operand


def _fixed_of(cl: _Classes) -> dict[str, tuple[Encoding, str]]:
    out: dict[str, tuple[Encoding, str]] = {}
    for k, (enc, why) in cl.fixed.items():
        r = cl.find(k)
        if r in out and out[r][0] != enc:
            raise GlirResolveError(f"{why}: value {k} must have {enc} but its class has {out[r][0]} "
                                   f"(from {out[r][1]})")
        out[r] = (enc, why)
    return out


def _join_converts(cl: _Classes, accessed: list[str]) -> None:
    """Join the two sides of a convert_layout where that keeps every class to at most one determination, unless
    a side that touches global memory would take the other's layout (it then keeps its own coalesced layout, as
    the author's conversion asked)."""
    for a, b in cl.soft:
        touched = {cl.find(k) for k in accessed}
        if cl.find(a) in touched and cl.find(b) in touched:
            continue
        child, operand = _settle_relations(cl)
        fixed = _fixed_of(cl)
        mma_roots = {cl.find(k) for k in cl.mma}
        ra, rb = cl.find(a), cl.find(b)
        if ra == rb or cl.shapes.get(a) is None:
            continue

        determined = set(fixed) | set(child) | set(operand) | mma_roots | {cl.find(r) for r, _, _, _ in cl.derived}
        if ra in determined and rb in determined:
            continue
        # a determined side converted into a class that touches global memory: that class keeps its own
        # (coalesced, vectorised) layout, as the author's conversion asked
        if (ra in determined and rb in touched) or (rb in determined and ra in touched):
            continue
        parents = {p for _, p, _ in child.values()} | {acc for _, acc, _, _ in operand.values()}
        if (ra in parents or rb in parents) and (ra in determined or rb in determined):
            continue
        if ra in determined:
            cl.union(ra, rb)
        else:
            cl.union(rb, ra)


def derived_encoding(enc: Distributed, how: tuple, src_shape: tuple[int, ...],
                     shape: tuple[int, ...]) -> Distributed:
    """The encoding Triton infers for the result of a shape op on a value in ``enc``: ``("trans", order)``,
    ``("join",)`` (a new last dim of 2, fastest in registers), ``("split",)`` (that dim removed) or
    ``("reshape",)`` (the row-major reinterpretation of the map): a blocked layout where it has one, else the
    linear encoding of the map.

    >>> derived_encoding(Blocked((1, 4), (4, 8), (4, 1), (1, 0)), ("join",), (32, 64), (32, 64, 2))
    Blocked(size_per_thread=(1, 4, 2), threads_per_warp=(4, 8, 1), warps_per_cta=(4, 1, 1), order=(2, 1, 0))
    """
    kind = how[0]
    if kind == "trans":
        return permuted_encoding(enc, how[1], shape)
    if kind == "join" and isinstance(enc, Blocked):
        return Blocked(enc.size_per_thread + (2,), enc.threads_per_warp + (1,), enc.warps_per_cta + (1,),
                       (enc.rank,) + enc.order)
    if kind == "split" and isinstance(enc, Blocked) and enc.order[0] == enc.rank - 1 \
            and enc.size_per_thread[-1] == 2 and enc.threads_per_warp[-1] == enc.warps_per_cta[-1] == 1:
        return Blocked(enc.size_per_thread[:-1], enc.threads_per_warp[:-1], enc.warps_per_cta[:-1], enc.order[1:])
    f = enc.linear(src_shape)
    per = {n: [list(v) for v in bs] for (n, _), bs in zip(f.in_dims, f.bases)}
    if kind == "join":
        per = {n: [v + [0] for v in bs] for n, bs in per.items()}
        per["register"] = [[0] * len(src_shape) + [1]] + per["register"]
    elif kind == "split":
        unit = [0] * (len(src_shape) - 1) + [1]
        if unit not in per["register"]:
            raise GlirResolveError(f"tt.split: the last dim of {enc} is not held in one thread's registers")
        per = {n: [v[:-1] for v in bs if v != unit] for n, bs in per.items()}
    elif kind == "reshape":
        strides = _row_major(src_shape)
        per = {n: [_unflatten(sum(a * b for a, b in zip(v, strides)), shape) for v in bs] for n, bs in per.items()}
    else:
        raise GlirResolveError(f"derived_encoding: unknown shape op {kind!r}")
    view = F2Linear.from_bases(per, [(f"dim{i}", e) for i, e in enumerate(shape)], require_surjective=False)
    found = blocked_of(view, shape)
    return found if found is not None else Linear.of(view)


def _unflatten(flat: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for e in reversed(shape):
        out.append(flat % e)
        flat //= e
    return out[::-1]


def permuted_encoding(enc: Distributed, order: tuple[int, ...], shape: tuple[int, ...]) -> Distributed:
    """The encoding of ``tt.trans(x, order)`` for ``x`` in ``enc`` (result dim ``i`` is source dim
    ``order[i]``; ``shape`` is the result's): a blocked layout with its parameters permuted, else the linear
    encoding of the permuted map.

    >>> permuted_encoding(Blocked((1, 4), (4, 8), (4, 1), (1, 0)), (1, 0), (32, 64))
    Blocked(size_per_thread=(4, 1), threads_per_warp=(8, 4), warps_per_cta=(1, 4), order=(0, 1))
    """
    if isinstance(enc, Blocked):
        return Blocked(tuple(enc.size_per_thread[k] for k in order), tuple(enc.threads_per_warp[k] for k in order),
                       tuple(enc.warps_per_cta[k] for k in order), tuple(order.index(k) for k in enc.order))
    src_shape = tuple(shape[order.index(k)] for k in range(len(shape)))
    f = enc.linear(src_shape)
    bases = {n: [[v[k] for k in order] for v in per] for (n, _), per in zip(f.in_dims, f.bases)}
    return Linear.of(F2Linear.from_bases(bases, [(f"dim{i}", e) for i, e in enumerate(shape)],
                                         require_surjective=False))


def _class_shape(cl: _Classes, root: str, child: dict) -> tuple[int, ...]:
    shape: tuple[int, ...] | None = None
    for k in cl.parent:
        if cl.find(k) == root and k in cl.shapes:
            s = cl.shapes[k]
            shape = s if shape is None or len(shape) != len(s) else tuple(max(a, b) for a, b in zip(shape, s))
    for c, (d, p, _) in child.items():
        if p == root:
            cs = _class_shape(cl, c, child)
            full = cs[:d] + (1,) + cs[d:]
            if shape is not None and len(shape) == len(full):
                shape = tuple(max(a, b) for a, b in zip(shape, full))
    return shape or ()


_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i64": "int64", "i8": "int8",
           "i16": "int16", "f64": "float64", "i1": "int8", "f8E4M3FN": "int8", "f8E5M2": "int8"}


def _affine(key: str, rd: _Reading, memo: dict) -> dict[int, int] | None:
    """Element strides per dim of an integer / pointer tensor value (None: not affine as far as read)."""
    if key in memo:
        return memo[key]
    memo[key] = None
    op = rd.defs.get(key)
    out: dict[int, int] | None = None
    if op is None:
        return None
    func = rd.func_of[op.line]
    args = [_key(func, o) for o in _operand_names(op)]
    name = op.name
    if name == "tt.make_range":
        out = {0: 1}
    elif name in ("tt.splat", "arith.constant"):
        out = {}
    elif name in ("arith.addi", "tt.addptr", "arith.subi"):
        lhs, rhs = (_affine(a, rd, memo) for a in args[:2])
        if lhs is not None and rhs is not None:
            out = dict(lhs)
            for d, s in rhs.items():
                out[d] = out.get(d, 0) + (s if name != "arith.subi" else -s)
    elif name in ("arith.extsi", "arith.extui", "arith.trunci", "tt.broadcast", "arith.index_cast"):
        out = _affine(args[0], rd, memo)
    elif name == "tt.expand_dims":
        src = _affine(args[0], rd, memo)
        axis = op.int_attr("axis") or 0
        out = None if src is None else {(d + 1 if d >= axis else d): s for d, s in src.items()}
    elif name == "arith.muli":
        parts = [_affine(a, rd, memo) for a in args[:2]]
        consts = [_constant(a, rd) for a in args[:2]]
        for p, c in ((parts[0], consts[1]), (parts[1], consts[0])):
            if p is not None and c is not None:
                out = {d: s * c for d, s in p.items()}
                break
        else:
            if parts[0] is not None and parts[1] is not None:
                # times a runtime scalar: not contiguous along those dims
                out = {d: RUNTIME_STRIDE for d in set(parts[0]) | set(parts[1])}
    memo[key] = out
    return out


def _constant(key: str, rd: _Reading) -> int | None:
    op = rd.defs.get(key)
    if op is None:
        return None
    if op.name == "arith.constant":
        m = re.search(r"dense<(-?\d+)>|constant (-?\d+) :", op.text)
        if m:
            return int(m.group(1) or m.group(2))
    if op.name == "tt.splat":
        func = rd.func_of[op.line]
        return _constant(_key(func, _operand_names(op)[0]), rd)
    if op.name in ("arith.extsi", "arith.extui"):
        func = rd.func_of[op.line]
        return _constant(_key(func, _operand_names(op)[0]), rd)
    return None


def sm_number(target: str) -> int:
    """The SM number of a target name (``"sm_90"``, ``"sm_90a"``, Triton's ``"cuda:90"``)."""
    m = re.search(r"(\d+)", target)
    if not m:
        raise GlirResolveError(f"resolve: expected a target such as 'sm_80' or 'cuda:90'; found {target!r}")
    return int(m.group(1))


def _solve(rd: _Reading, target: str) -> _Solution:
    cl = rd.classes
    _join_converts(cl, [ptr for ptr, _, _ in rd.accesses])
    child, operand = _settle_relations(cl)
    fixed = _fixed_of(cl)
    sm = sm_number(target)
    warps = rd.module.num_warps
    # in program order, not a set's: a refusal and a tie come out the same under every hash seed
    roots = list(dict.fromkeys(cl.find(k) for k in cl.parent))
    mma_roots = {cl.find(k): v for k, v in cl.mma.items()}
    enc: dict[str, Encoding] = {}
    why: dict[str, str] = {}
    for r, (e, w) in fixed.items():
        enc[r], why[r] = e, f"fixed by the kernel at {w}"
    for r, (version, w) in mma_roots.items():
        if r in enc:
            continue
        M, N = _class_shape(cl, r, child)[-2:]
        if version == 3 or sm >= 90 and version == 3:
            n = min(256, N)
            mma = NvidiaMma(3, 0, (warps, 1), (16, n, 16))
        else:
            wm, wn = compute_warp_partition(M, N, warps, "square", f"sm_{min(sm, 89)}")
            mma = NvidiaMma(2, 0, (wm, wn), (16, 8))
        enc[r], why[r] = mma, f"the MMA accumulator of {w} (warp partition {mma.warps_per_cta})"
    permuted = {cl.find(r): (how, cl.find(src), w) for r, how, src, w in cl.derived}
    free = [r for r in roots if r not in enc and r not in child and r not in operand and r not in permuted]
    # the conversions each free class takes part in, to an encoding already known (an MMA operand or
    # accumulator, an author's layout): their price joins the choice
    known = dict(enc)
    for r, (idx, acc, kw, _) in operand.items():
        if acc in enc:
            known[r] = DotOperand(idx, enc[acc], kw)  # type: ignore[arg-type]
    partners: dict[str, list[Encoding]] = {}
    for a, b in cl.soft:
        ra, rb = cl.find(a), cl.find(b)
        for x, y in ((ra, rb), (rb, ra)):
            if y in known and x != y:
                partners.setdefault(x, []).append(known[y])
    chosen, decided = _choose_blocked(rd, free, child, warps, sm, partners)
    for r in free:
        enc[r], why[r] = chosen[r], decided[r]

    visiting: set[str] = set()

    def of(r: str) -> Encoding:
        if r in enc:
            return enc[r]
        if r in visiting:   # shape ops leading a value back to itself (reshape, permute, split, join, permute back)
            where = permuted[r][2] if r in permuted else child[r][2] if r in child else r
            raise GlirResolveError(f"{where}: the encoding of {r} is derived from itself through shape ops; resolve "
                                   "lays out no such cycle yet")
        visiting.add(r)
        if r in operand:
            idx, acc, kw, w = operand[r]
            enc[r], why[r] = DotOperand(idx, distributed(acc, w), kw), f"operand {idx} of {w}"
        elif r in child:
            d, p, w = child[r]
            enc[r], why[r] = Slice(d, distributed(p, w)), f"a slice (dim {d}) of its parent at {w}"
        elif r in permuted:
            how, src, w = permuted[r]
            shape, src_shape = _class_shape(cl, r, child), _class_shape(cl, src, child)
            enc[r], why[r] = derived_encoding(distributed(src, w), how, src_shape, shape), f"derived at {w}"
        return enc[r]

    def distributed(r: str, where: str) -> Distributed:
        e = of(r)
        if not isinstance(e, Distributed):
            raise GlirResolveError(f"{where}: expected a register layout for {r}; found {e}")
        return e

    for r in roots:
        of(r)
    return _Solution({k: enc[cl.find(k)] for k in cl.parent}, {k: why[cl.find(k)] for k in cl.parent})


def _choose_blocked(rd: _Reading, free: list[str], child: dict, warps: int, sm: int,
                    partners: dict[str, list[Encoding]]) -> tuple[dict, dict]:
    """Lay the free classes out with layoutkit's inference (see the module doc)."""
    cl = rd.classes
    threads = warps * 32
    p = Program(threads=threads, target=f"sm_{min(sm, 90)}")
    bufs: dict[str, Buffer] = {}
    shape_of: dict[str, tuple[int, ...]] = {}
    derived = set(child)
    in_program = set(free) | derived
    for r in sorted(in_program):
        s = _class_shape(cl, r, child)
        if not s:
            continue
        shape_of[r] = s
        bufs[r] = p.alloc_fragment(f"c{len(bufs)}", s, "float32")
    memo: dict = {}
    decided: dict[str, str] = {}
    for ptr, kind, op in rd.accesses:
        r = cl.find(ptr)
        if r not in bufs:
            continue
        s = shape_of[r]
        strides = _affine(ptr, rd, memo)
        elem = re.search(r"!tt\.ptr<(\w+)>", cl.elements.get(ptr, "")) if ptr in cl.elements else None
        dtype = _DTYPES.get(elem.group(1) if elem else "f32", "float32")
        frag = bufs[r]
        ident = _identity(len(s))
        if strides is None or any(v < 0 for v in strides.values()):
            p.parallel(s, writes=[(frag, ident)]) if kind == "load" else p.parallel(s, reads=[(frag, ident)])
            continue
        st = [strides.get(d, 0) for d in range(len(s))]
        size = sum((e - 1) * v for e, v in zip(s, st)) + 1
        g = p.tensor(f"g{len(p.buffers)}", (max(size, 1),), dtype)
        addr = _address(st)
        if kind == "load":
            p.parallel(s, writes=[(frag, ident)], reads=[(g, addr)])
        else:
            p.parallel(s, writes=[(g, addr)], reads=[(frag, ident)])
        decided.setdefault(r, f"the global {kind} at {op.describe()}")
    for c, (d, par, _) in child.items():
        if c in bufs and par in bufs and shape_of[par][:d] + shape_of[par][d + 1:] == shape_of[c]:
            p.reduce(bufs[par], bufs[c], dim=d, kind="sum", clear=True)
    touched = {name for op in p.ops for name in op.buffers}
    for r in free:
        if r in bufs and bufs[r].name not in touched:   # no access prices it: a loop that writes it
            p.parallel(shape_of[r], writes=[(bufs[r], _identity(len(shape_of[r])))])
    try:
        result = infer_layouts(p) if p.ops else None
    except LayoutConflictError:
        # a program layoutkit's inference finds no common layout for (one value reduced along two dims and
        # converted back, say): each class is priced from the default blocked layout instead
        result = None
    priced = _priced_accesses(rd, child, shape_of, memo, rd.axis())
    smem = _shared_accesses(rd)
    chosen: dict[str, Encoding] = {}
    cache = _PriceCache()
    for r in free:
        if r not in shape_of:
            chosen[r] = _default_blocked((1,), warps)
            decided[r] = "a scalar-like class: the default blocked layout"
            continue
        b = None
        if result is not None and r in bufs:
            try:
                b = blocked_of(result.layout_map[bufs[r]].to_linear(), shape_of[r])
            except LayoutError:
                b = None
        start = b if b is not None else _default_blocked(shape_of[r], warps)
        kids = [(d, shape_of[c]) for c, (d, par, _) in child.items() if par == r and c in shape_of]
        best, note = _cheapest(start, shape_of[r], warps, priced.get(r, []), _reductions(cl, r, child, shape_of),
                               partners.get(r, []), kids, smem.get(r, []), cache)
        chosen[r] = best
        decided.setdefault(r, "layoutkit's inference over the class")
        if note:
            decided[r] += f"; {note}"
    return chosen, decided


@dataclass(frozen=True)
class _PricedAccess:
    """A global access as the pricing sees it: ``path`` (the slice dims from the root class down to the
    accessed class), element ``strides`` of the address per dim, ``elem_bytes``, the accessed ``shape``, and
    ``max_vector``: the most elements Triton moves per instruction along the contiguous dim, as its axis analysis
    proves the pointers' alignment and the mask's constancy (:func:`.axis_info.vector_bound`)."""

    path: tuple[int, ...]
    strides: tuple[int, ...]
    elem_bytes: int
    shape: tuple[int, ...]
    max_vector: int
    weight: int = 1
    """How often it runs relative to the kernel body (inside a loop: :data:`LOOP_WEIGHT`)."""
    masked: bool = False
    min_bytes: int = 0
    """The narrowest access per thread the instruction has (``cp.async``: 4 bytes); narrower layouts fail."""


def _priced_accesses(rd: _Reading, child: dict, shape_of: dict, memo: dict,
                     axis: AxisAnalysis) -> dict[str, list[_PricedAccess]]:
    """Per free root class: its global accesses and its slice children's."""
    cl = rd.classes
    out: dict[str, list] = {}
    for ptr, kind, op in rd.accesses:
        r = cl.find(ptr)
        strides = _affine(ptr, rd, memo)
        if strides is None or r not in shape_of:
            continue
        path: list[int] = []
        while r in child:
            d, par, _ = child[r]
            path.insert(0, d)
            r = par
        elem = re.search(r"!tt\.ptr<(\w+)>", cl.elements.get(ptr, ""))
        bits = {"f32": 32, "i32": 32, "f16": 16, "bf16": 16, "i64": 64, "f64": 64, "i8": 8, "i16": 16}
        nbytes = bits.get(elem.group(1) if elem else "f32", 32) // 8
        rank = len(shape_of[cl.find(ptr)])
        # Triton vectorises no wider than its axis analysis proves the pointers aligned and contiguous and the
        # mask constant along the contiguous dim
        masked = len(op.operands) > (1 if kind == "load" else 2) and op.name != "ttg.async_copy_global_to_local"
        own = cl.shapes.get(ptr, shape_of[cl.find(ptr)])     # the access's own shape, not its class's
        st = tuple(strides.get(d, 0) for d in range(rank))
        max_vector = 1
        if 1 in st:
            pointer = axis.of(ptr, rank)
            mask = axis.of(_key(rd.func_of[op.line], _operand_names(op)[1 if kind == "load" else 2]), rank) \
                if masked else None
            if pointer.rank == rank and (mask is None or mask.rank == rank):
                max_vector = vector_bound(pointer, mask, st.index(1), nbytes)
        out.setdefault(r, []).append(_PricedAccess(tuple(path), st, nbytes, own, max_vector,
                                                   LOOP_WEIGHT if op.depth > 2 else 1, masked,
                                                   CP_ASYNC_MIN_BYTES if op.name == "ttg.async_copy_global_to_local"
                                                   else 0))
    return out


def _shared_accesses(rd: _Reading) -> dict[str, list[tuple[Layout, str, str]]]:
    """Per class: ``(shared layout, dtype, 'load' | 'store')`` of its register <-> shared-memory moves."""
    cl = rd.classes
    out: dict[str, list[tuple[Layout, str, str]]] = {}
    for key, kind, op in rd.shared:
        m = re.search(r"!ttg\.memdesc<((?:\d+x)+)(\w+),\s*(#[^,>]+(?:<[^>]*>)?)", op.text)
        if m is None:
            continue
        shape = tuple(int(x) for x in m.group(1).rstrip("x").split("x"))
        try:
            enc = parse_encoding(m.group(3), rd.module.aliases)
            if not isinstance(enc, Shared):
                continue
            layout = shared_layout(enc, shape)
        except LayoutError:
            continue
        out.setdefault(cl.find(key), []).append((layout, _DTYPES.get(m.group(2), "float32"), kind))
    return out


def _reductions(cl: _Classes, root: str, child: dict, shape_of: dict) -> list[int]:
    """The dims along which reductions read the root class directly."""
    return sorted({d for c, d, p, why in cl.slices if cl.find(p) == root and why.startswith("tt.reduce")})


@dataclass
class _PriceCache:
    """What :func:`_cheapest` computes for one module's classes and keeps for the next: maps and basis lists per
    (encoding, shape), warp 0's sectors per (lane and register bases, strides, bytes, vector), wavefronts per
    (map, shared layout, dtype, width)."""

    maps: dict[tuple[Distributed, tuple[int, ...]], F2Linear] = field(default_factory=dict)
    bases: dict[tuple[Distributed, tuple[int, ...]], dict[str, list[list[int]]]] = field(default_factory=dict)
    sectors: dict[tuple, int] = field(default_factory=dict)
    wavefronts: dict[tuple[F2Linear, int, str, int], int] = field(default_factory=dict)


def _cheapest(start: Blocked, shape: tuple[int, ...], warps: int, accesses: list[_PricedAccess],
              reductions: list[int], converts: Sequence[Encoding] = (),
              children: Sequence[tuple[int, tuple[int, ...]]] = (),
              shared: Sequence[tuple[Layout, str, str]] = (), cache: _PriceCache | None = None):
    """The blocked layout (``start``'s registers and order, or a 16-byte vector along a dim an access is
    contiguous in) whose lanes and warps cost least: global access instructions, then their sectors
    (:func:`~layoutkit.cost.warp_access.warp_sectors`), then the shared-memory wavefronts of its moves to and from
    shared memory (``targets.nv.bank_conflicts``), then the elements its conversions to known layouts move
    across warps and lanes (:func:`~layoutkit.cost.warp_access.conversion_moves`), then the per-thread
    arithmetic (register bits off each access's contiguous dim; with a mask, the registers of the sliced index
    classes it is computed from), then reduction rounds across warps, then
    shuffles across lanes, then registers per thread; ``start`` wins ties.  ``cache``: the maps and prices
    already computed for the module's other classes."""
    cache = cache if cache is not None else _PriceCache()
    rank = len(shape)
    cands = [start]
    # registers and order: layoutkit's, and a 16-byte vector along each dim an access is contiguous in
    heads = [(start.size_per_thread, start.order)]
    narrowest = []      # heads a cp.async needs: its 4 bytes per thread, lanes and warps broadcasting if need be
    for a in accesses:
        if len(a.strides) == rank and 1 in a.strides and a.max_vector > 1:
            d = a.strides.index(1)
            order = (d,) + tuple(k for k in reversed(range(rank)) if k != d)
            head_bytes = [a.max_vector * a.elem_bytes] + ([a.min_bytes] if a.min_bytes else [])
            for width in head_bytes:
                vec = tuple(max(1, min(width // a.elem_bytes, shape[d])) if k == d else 1 for k in range(rank))
                if (vec, order) not in heads:
                    heads.append((vec, order))
                if width == a.min_bytes:
                    narrowest.append((vec, order))
                elif math.prod(shape) < math.prod(vec) * 32 * warps:
                    # a tile smaller than threads x vector: its full vector leaves lanes broadcasting
                    narrowest.append((vec, order))
    for spt, order in heads:
        for tpw in _splits(32, rank):
            for wpc in _splits(warps, rank):
                b = Blocked(spt, tpw, wpc, order)
                # lanes and warps past the shape only broadcast (start keeps its own)
                fits = all(spt[d] * tpw[d] * wpc[d] <= max(shape[d], spt[d]) or tpw[d] * wpc[d] == 1
                           for d in range(rank))
                if b != start and (fits or (spt, order) in narrowest):
                    cands.append(b)

    maps = cache.maps

    def linear(enc: Distributed, on: tuple[int, ...]) -> F2Linear:
        """``enc.linear(on)``, built once per module (stages, accesses and classes ask for the same maps)."""
        key = (enc, on)
        if key not in maps:
            maps[key] = enc.linear(on)
        return maps[key]

    def view_of(b: Blocked) -> F2Linear:
        return linear(b, shape)

    def access_encoding(b: Blocked, k: int) -> Distributed:
        enc: Distributed = b
        for d in accesses[k].path:
            enc = Slice(d, enc)
        return enc

    raws = cache.bases

    def bases(enc: Distributed, on: tuple[int, ...]) -> dict[str, list[list[int]]]:
        """The basis lists of ``enc``'s map on ``on``: the stages but the bank and conversion models price
        from these, with no map built."""
        key = (enc, on)
        if key not in raws:
            raws[key] = enc.basis_lists(on)[0]
        return raws[key]

    def access_bases(b: Blocked, k: int) -> dict[str, list[list[int]]]:
        """The basis lists of access ``k``'s map under ``b``."""
        return bases(access_encoding(b, k), accesses[k].shape)

    registers: dict[tuple[Blocked, int], tuple[int, int]] = {}

    def access_registers(b: Blocked, k: int) -> tuple[int, int]:
        """Registers per thread of access ``k`` under ``b`` and its vector width."""
        if (b, k) not in registers:
            a = accesses[k]
            bases = access_bases(b, k).get("register", [])
            registers[(b, k)] = 1 << len(bases), _vector(bases, a.strides, a.elem_bytes, a.max_vector)
        return registers[(b, k)]

    def instructions(b: Blocked) -> tuple[int]:
        """Global access instructions: one per warp and register group (wider vectors, fewer)."""
        total = 0
        for k, a in enumerate(accesses):
            regs, vec = access_registers(b, k)
            total += regs // vec * warps * a.weight
        return (total,)

    def too_narrow(b: Blocked) -> tuple[int]:
        """Accesses narrower per thread than their instruction allows (``cp.async`` below 4 bytes)."""
        return (sum(1 for k, a in enumerate(accesses) if a.min_bytes and
                    access_registers(b, k)[1] * a.elem_bytes < a.min_bytes),)

    sector_counts = cache.sectors

    def sectors(b: Blocked) -> tuple[int]:
        """The 32-byte sectors those instructions touch (warp 0's, times the warps: candidates that differ in
        their warps only, or share an access's map, are priced once)."""
        total = 0
        for k, a in enumerate(accesses):
            per = access_bases(b, k)
            vec = access_registers(b, k)[1]
            lanes, regs = per.get("lane", []), per.get("register", [])
            key = (tuple(map(tuple, lanes)), tuple(map(tuple, regs)), a.strides, a.elem_bytes, vec)
            if key not in sector_counts:   # warp 0's (the others' are shifted copies)
                sector_counts[key] = warp_sectors({"register": regs, "lane": lanes}, a.strides, a.elem_bytes, vec)
            total += sector_counts[key] * (1 << len(per.get("warp", ()))) * a.weight
        return (total,)

    def wavefronts(b: Blocked) -> tuple[int]:
        """Shared-memory wavefronts of the class's register <-> shared moves (a load and a store of one width
        through one layout cost the same wavefronts: priced once)."""
        total = 0
        if any(layout.input_shape == shape for layout, _, _ in shared):   # else no move is priced: no fragment
            f = view_of(b)
            seen = cache.wavefronts
            try:
                for layout, dtype, _ in shared:
                    if layout.input_shape == shape:
                        nbytes = element_bits(dtype) // 8
                        width = max(4, min(16, _vector(_register_bases(f), _row_major(shape), nbytes) * nbytes))
                        key = (f, id(layout), dtype, width)
                        if key not in seen:
                            seen[key] = bank_conflicts(layout, f, dtype, f"ld.shared.b{8 * width}").wavefronts
                        total += seen[key]
            except LayoutError:
                pass
        return (total,)

    def conversions(b: Blocked) -> tuple[int, int]:
        """Elements the conversions to known layouts move across warps, then across lanes."""
        moved_warps = moved_lanes = 0
        for other in converts:
            if isinstance(other, Distributed):
                mw, ml = conversion_moves(view_of(b), linear(other, shape))
                moved_warps, moved_lanes = moved_warps + mw, moved_lanes + ml
        return moved_warps, moved_lanes

    def widths(b: Blocked) -> tuple[int]:
        """Bytes per access instruction, widest first: equal instructions and sectors with narrower vectors
        mean lanes that idle or repeat an element anyway (a tile smaller than threads x vector).  A tile of
        fewer elements than threads is left to the arithmetic: every lane's one element costs less than a few
        lanes' vectors there."""
        if math.prod(shape) < 32 * warps:
            return (0,)
        return (-sum(access_registers(b, k)[1] * a.elem_bytes * a.weight for k, a in enumerate(accesses)),)

    def arithmetic(b: Blocked) -> tuple[int, int, int, int]:
        """Index arithmetic (register bits off each access's contiguous dim; with a mask, the registers of
        the sliced index classes it is computed from), reduction rounds across warps and lanes, registers."""
        f = bases(b, shape)
        rows = 0
        for k, a in enumerate(accesses):
            per = access_bases(b, k)
            rows += sum(1 for v in per.get("register", ()) if any(x for d, x in enumerate(v) if a.strides[d] != 1))
        if any(a.masked for a in accesses):
            for d, child_shape in children:
                rows += 1 << len(bases(Slice(d, b), child_shape).get("register", ()))
        lanes = warps_ = 0
        for d in reductions:
            ln, wp = reduction_rounds(f, d)
            lanes, warps_ = lanes + ln, warps_ + wp
        regs = 1 << len(f.get("register", ()))
        return rows, warps_, lanes * regs, regs

    # lexicographic: each stage prices only the candidates the earlier stages left tied (the costly bank and
    # conversion models run on few)
    alive = list(cands)
    best_cost: tuple[int, ...] = ()
    for stage in (too_narrow, instructions, sectors, wavefronts, conversions, widths, arithmetic):
        priced_stage = [(stage(b), b) for b in alive]
        low = min(c for c, _ in priced_stage)
        alive = [b for c, b in priced_stage if c == low]
        best_cost += low
    best = (best_cost, 0, alive[0])     # candidates keep their order: start first, so it wins ties
    note = "" if best[2] == start else (f"lanes / warps re-priced against {len(cands)} candidates "
                                        "(instructions, sectors, shared wavefronts, conversion moves across warps and "
                                        "lanes, index arithmetic, cross-warp and lane reduction rounds, registers: "
                                        f"{best[0]})")
    return best[2], note


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of ``shape``."""
    out, step = [], 1
    for e in reversed(shape):
        out.append(step)
        step *= e
    return tuple(reversed(out))


def _splits(total: int, rank: int) -> list[tuple[int, ...]]:
    """Every way to write ``total`` (a power of two) as a product of ``rank`` powers of two."""
    if rank == 1:
        return [(total,)]
    out = []
    k = 1
    while k <= total:
        out += [(k,) + rest for rest in _splits(total // k, rank - 1)]
        k *= 2
    return out


def _register_bases(view: F2Linear) -> Sequence[Sequence[int]]:
    """The register basis images of a register map (none where it has no register dim)."""
    return dict(zip(view.in_names, view.bases)).get("register", ())


def _vector(register_bases: Sequence[Sequence[int]], strides: Sequence[int], nbytes: int, cap: int = 16) -> int:
    """Registers a thread moves per instruction: leading register bases stepping the address by 1, 2, 4, ...
    elements, up to 16 bytes and ``cap`` elements.

    >>> _vector([[1], [2], [64]], (1,), 4), _vector([[1], [2], [64]], (1,), 4, cap=2), _vector([[2]], (1,), 4)
    (4, 2, 1)
    """
    v = 1
    for basis in register_bases:
        step = sum(a * b for a, b in zip(basis, strides))
        if step != v or (v * 2) * nbytes > 16 or v * 2 > cap:
            break
        v *= 2
    return v


def _identity(rank: int) -> Callable:
    return lambda *i: tuple(i)


def _address(strides: list[int]) -> Callable:
    def addr(*i):
        total = 0
        for v, s in zip(i, strides):
            if s:
                total = total + v * s
        return (total,)
    return addr


def _default_blocked(shape: tuple[int, ...], warps: int) -> Blocked:
    """Triton's default: one element per thread, lanes then warps along the last dims first."""
    rank = len(shape)
    order = tuple(range(rank - 1, -1, -1))
    tpw, wpc = [1] * rank, [1] * rank
    lanes, left = 32, warps
    for d in order:
        take = min(lanes, max(shape[d], 1))
        tpw[d] = take
        lanes //= take
    tpw[order[-1]] *= lanes
    for d in order[::-1]:
        room = max(shape[d] // tpw[d], 1)
        take = min(left, room)
        wpc[d] = take
        left //= take
    wpc[order[0]] *= left
    return Blocked((1,) * rank, tuple(tpw), tuple(wpc), order)


# ---- printing ------------------------------------------------------------------------------------------------

def _print(rd: _Reading, sol: _Solution) -> str:
    m = rd.module
    lines = list(m.lines)
    names: dict[str, str] = {}
    texts: dict[Encoding, str] = {}      # an encoding prints once (values share a few)
    for (i, t), key in sorted(rd.placed.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        op = m.ops[i]
        ty = op.types[t]
        if not ty.is_auto:
            continue
        e = sol.encodings.get(key)
        if e is None:
            raise GlirResolveError(f"{op.describe()}: no encoding for {key}")
        text = texts.get(e) or texts.setdefault(e, str(e))
        alias = names.setdefault(text, f"lk{len(names)}")
        line = lines[op.line]
        lines[op.line] = line[:ty.start] + f"#{alias}" + line[ty.end:]
    missing = [(i, t) for i, op in enumerate(m.ops) for t, ty in enumerate(op.types)
               if ty.is_auto and (i, t) not in rd.placed]
    if missing:
        i, t = missing[0]
        raise GlirResolveError(f"{m.ops[i].describe()}: tensor type {t} of {m.ops[i].text.strip()[:120]!r} is not "
                               "placed on a value")
    header = [f"#{a} = {text}" for text, a in names.items()]
    return "\n".join(header + lines)


def resolve(glir_text: str, target: str) -> str:
    """The module with every ``#gluon.auto_encoding`` replaced by layoutkit's choice (see the module doc);
    ``target``: ``"sm_80"``, ``"sm_90"`` (or Triton's ``"cuda:90"``).

    >>> text = '''module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:80"} {
    ...   tt.func public @k(%p: !tt.ptr<f32>) {
    ...     %0 = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, AUTO>
    ...     %1 = tt.splat %p : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, AUTO>
    ...     %2 = tt.addptr %1, %0 : tensor<512x!tt.ptr<f32>, AUTO>, tensor<512xi32, AUTO>
    ...     %3 = tt.load %2 : tensor<512x!tt.ptr<f32>, AUTO>
    ...     tt.store %2, %3 : tensor<512x!tt.ptr<f32>, AUTO>
    ...     tt.return
    ...   }
    ... }'''.replace("AUTO", "#gluon.auto_encoding")
    >>> print(resolve(text, "sm_80").split("\\n")[0])
    #lk0 = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    """
    rd = _read(glir_text)
    return _print(rd, _solve(rd, target))


def explain(glir_text: str, target: str) -> dict[str, str]:
    """Per value (``function:%name``): its encoding and the op that decided it."""
    rd = _read(glir_text)
    sol = _solve(rd, target)
    return {k: f"{sol.encodings[k]}: {sol.why[k]}" for k in sorted(sol.encodings)}


def resolved_fragments(glir_text: str, target: str) -> dict[str, Fragment]:
    """One :class:`~layoutkit.Fragment` per distinct resolved encoding and shape (named ``lk<k>_<shape>``), for
    drawing; encodings that put an element twice in a thread's registers have no Fragment and are left out."""
    rd = _read(glir_text)
    sol = _solve(rd, target)
    out: dict[str, Fragment] = {}
    seen: dict[tuple[str, tuple[int, ...]], str] = {}
    for key, enc in sorted(sol.encodings.items()):
        shape = rd.classes.shapes.get(key)
        if not shape or not isinstance(enc, Distributed) or (str(enc), shape) in seen:
            continue
        name = f"lk{len(seen)}_{'x'.join(map(str, shape))}"
        seen[(str(enc), shape)] = name
        try:
            out[name] = Fragment.from_linear(enc.linear(shape))
        except LayoutError:
            continue
    return out
