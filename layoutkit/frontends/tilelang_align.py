"""What bounds a parallel loop's vector width in TileLang's vectoriser beyond what a Program access shows:
how aligned a global address is (:class:`Alignment`), element atomics (:func:`atomic_vector_cap`), calls
the vectoriser cannot vectorise (:func:`opaque_call_cap`: ``T.ieee_add``, ``T.atomic_max``, an extern
call), the RNG's source width (:func:`rng_vector_cap`) and conditions on the inner loop variable
(:func:`condition_cap`).

TileLang's ``VectorizePlanner`` takes a global access's element offset ``sum(index_k * stride_k)`` over the
buffer's own strides (runtime ones included) and vectorises only as wide as its analyzer proves that
offset aligned, with the kernel's ``T.assume`` facts in scope (``T.assume(x.strides[0] % 8 == 0)``).  A
Program access keeps only the loop variables of an index (block and serial loop variables read as 0,
strides row-major), so the adapter hands the rest over as the loop's ``align``: the power of two
TileLang's analyzer proves the hidden part a multiple of (see :func:`address_alignment`).

>>> _low_bit(24), _low_bit(0)
(8, 0)
"""

from __future__ import annotations

import math
from contextlib import ExitStack
from typing import Any

from ..targets.nv.hardware import arch_number

__all__ = ["PLANNED_CALLS", "Alignment", "access_conditions", "atomic_vector_cap", "condition_cap", "opaque_call_cap",
           "rng_vector_cap"]


def _low_bit(n: int) -> int:
    """The largest power of two dividing ``n`` (0 for 0: every power divides it)."""
    n = abs(int(n))
    return n & -n


class Alignment:
    """The analyzer of one kernel, with its ``T.assume`` conditions in force."""

    def __init__(self, func):
        from tilelang import tvm

        from .tilelang_ir import nodes

        self.tirx = tvm.tirx
        self.analyzer = tvm.arith.Analyzer()
        # TileLang's passes turn ``T.assume(c)`` into ``AttrStmt(c, "tl.assume")`` around the rest of the
        # body; a call left as written is a fact too
        self.facts = [a.node for a in nodes(func.body, self.tirx.AttrStmt) if a.attr_key == "tl.assume"]
        self.facts += [call.args[0] for call in nodes(func.body, self.tirx.Call)
                       if getattr(call.op, "name", "") == "tirx.assume" and len(call.args) == 1]

    def strides(self, buf) -> list:
        """``buf``'s strides (its own, else row-major over its shape)."""
        if len(buf.strides):
            return list(buf.strides)
        out, acc = [], self.tirx.IntImm("int64", 1)
        for n in reversed(list(buf.shape)):
            out.append(acc)
            acc = acc * n
        return out[::-1]

    def _proved(self, expr, scope=()) -> int:
        """The power of two the analyzer proves ``expr`` a multiple of (0: every power, e.g. it is 0), with
        the kernel's facts and the conditions ``scope`` (loop ranges, enclosing ``if`` conditions) in force:
        the modular set of ``expr``, or, where the conditions pin a variable (``if token < 1`` inside
        ``T.Parallel(64, ...)``), the widest ``floormod(expr, 2**k) == 0`` they prove."""
        tirx = self.tirx
        with ExitStack() as stack:
            for fact in [*self.facts, *scope]:
                stack.enter_context(self.analyzer.constraint_scope(fact))
            m = self.analyzer.modular_set(self.analyzer.simplify(expr))
            modular = _low_bit(math.gcd(int(m.coeff), int(m.base)))
            if not modular or not scope:
                return modular
            p = 1
            while p < _PROVE_LIMIT and self.analyzer.can_prove_equal(
                    tirx.FloorMod(expr, tirx.IntImm(expr.dtype, 2 * p)), tirx.IntImm(expr.dtype, 0)):
                p *= 2
        return 0 if p >= _PROVE_LIMIT else max(p, modular)

    def address_alignment(self, buf, indices, loops, lets, conds=(), fused: bool = False) -> int:
        """The alignment (a power of two; 0 when unconstrained) TileLang proves for the part of ``buf``'s
        offset a Program access cannot show: the offset at the loop origin, and, where the buffer's
        strides are its own (not the row-major ones layoutkit assumes), the offset at the innermost loop
        variable's origin with the outer ones over their ranges (their steps).  As in TileLang's planner,
        the analyzer knows each loop variable's range and the conditions ``conds`` of the ``if``
        statements (and ``if_then_else`` branches) around the access (``if token < 1`` pins ``token``
        to 0, and its stride drops out).  A ``fused`` nest (TileLang fuses a fragment-free nest of
        power-of-two extents into one loop before planning) has one loop variable there, whose origin
        is every variable's: only the offset at the loop origin counts.  ``loops`` are the nest's
        ``For`` nodes; ``lets`` maps a variable bound inside the loop to its value (the analyzer sees
        through those bindings)."""
        tirx = self.tirx
        sub = tirx.stmt_functor.substitute
        offset = tirx.IntImm("int64", 0)
        for x, s in zip(indices, self.strides(buf)):
            offset = offset + tirx.Cast("int64", x) * tirx.Cast("int64", s)
        for _ in range(len(lets) + 1):  # a binding may use an earlier one
            offset = sub(offset, lets)
        loop_vars = [x.loop_var for x in loops]
        own = len(buf.strides) and not all(isinstance(s, tirx.IntImm) for s in buf.strides)
        pinned = loop_vars[-1:] if own and not fused else loop_vars
        base = sub(offset, {v: tirx.IntImm(v.dtype, 0) for v in pinned})
        ranges = [tirx.And(x.loop_var >= x.min, x.loop_var < x.min + x.extent) for x in loops] if conds else []
        return self._proved(base, [*ranges, *conds])

    def narrowing(self, accesses, loops, lets, fused: bool) -> dict[str, int]:
        """The loop's ``align``: each global buffer's :meth:`address_alignment` over its accesses
        ``(name, element bits, access node, conditions)``, kept where it narrows the widest vector (128
        bits of the element type)."""
        align: dict[str, int] = {}
        for name, bits, node, conds in accesses:
            a = self.address_alignment(node.buffer, list(node.indices), loops, lets, conds, fused)
            if a and a < max(1, 128 // bits):
                align[name] = min(a, align.get(name, a))
        return align


_PROVE_LIMIT = 512
"""Above the widest vector of any element type (256 bits of 1-byte elements is 32 lanes): an offset proved a
multiple of this constrains no vector."""


def access_conditions(body) -> list[tuple[Any, list]]:
    """``(access, conditions)`` for every ``BufferStore`` / ``BufferLoad`` under ``body``: the conditions
    of the ``if`` statements and ``if_then_else`` calls whose branch holds it (an else branch gives the
    negated condition), the constraint scopes TileLang's analyzer enters on its way to the access."""
    from tilelang import tvm

    from .tilelang_ir import nodes

    t = tvm.tirx
    branches = []
    for ite in nodes(body, t.IfThenElse):
        branches.append((ite.then_case, ite.condition))
        if ite.else_case is not None:
            branches.append((ite.else_case, t.Not(ite.condition)))
    for call in nodes(body, t.Call):
        if getattr(call.op, "name", "") == "tirx.if_then_else" and len(call.args) == 3:
            branches += [(call.args[1], call.args[0]), (call.args[2], t.Not(call.args[0]))]
    inside = [(nodes(branch, t.BufferStore, t.BufferLoad), cond) for branch, cond in branches]
    return [(n, [cond for held, cond in inside if any(h.same_as(n) for h in held)])
            for n in nodes(body, t.BufferStore, t.BufferLoad)]


def _atomic_width(dtype, scope: str, target: str) -> int:
    """TileLang's ``GetMaxAtomicVectorSize``: 2 for 16-bit floats, 4 for float32 in global memory on
    sm_90+, else 1 (no wider atomic instruction).

    >>> _atomic_width("float32", "global", "sm_80"), _atomic_width("float32", "global", "sm_90")
    (1, 4)
    """
    name = str(dtype)
    if getattr(dtype, "lanes", 1) != 1:
        return 1
    if name in ("float16", "bfloat16"):
        return 2
    if name == "float32" and arch_number(target) >= 90 and scope in ("", "global"):
        return 4
    return 1


def atomic_vector_cap(body, target: str) -> int | None:
    """The widest vector the element atomics of a loop body allow (``T.atomic_add(B[i, j], x)`` is
    ``atomic_add_elem_op``, whose destination TileLang vectorises only as wide as one atomic
    instruction); None when the body has none."""
    from tilelang import tvm

    from .tilelang_ir import nodes

    t = tvm.tirx
    caps = []
    for call in nodes(body, t.Call):
        if getattr(call.op, "name", "") != "tl.atomic_add_elem_op" or not call.args:
            continue
        dst = call.args[0]
        if isinstance(dst, t.Call) and dst.args and isinstance(dst.args[0], t.BufferLoad):
            dst = dst.args[0]  # access_ptr(B[i, j]) / address_of(B[i, j])
        caps.append(_atomic_width(dst.buffer.dtype, dst.buffer.scope(), target)
                    if isinstance(dst, t.BufferLoad) else 1)
    return min(caps) if caps else None


PLANNED_CALLS = frozenset({
    "tirx.if_then_else", "tirx.tvm_access_ptr", "tirx.address_of", "tl.access_ptr", "tl.atomic_add_elem_op",
    "tirx.ptx_cp_async", "tl.ptx_cp_async", "tl.reducer_update", "tl.rng_rand_float"})
"""Calls TileLang's ``VectorizePlanner`` gives a rule of their own (a condition, a pointer whose loads it
reads as plain accesses, the element atomic add's and cp.async's widths, a reducer update shaped by its
operands, the RNG's source width): every other call is opaque to it unless its op is ``TVectorizable``."""


def _opaque(call) -> bool:
    """Whether TileLang's vectoriser treats ``call`` as opaque: an op outside :data:`PLANNED_CALLS` without
    the ``TVectorizable`` attribute (``T.ieee_add``, ``T.rsqrt``, ``T.call_extern``, ``T.atomic_max``,
    ``T.atomic_add(..., return_prev=True)``; ``T.exp`` and ``T.fma`` are vectorisable)."""
    op = call.op
    name = getattr(op, "name", None)
    if not isinstance(name, str) or name in PLANNED_CALLS or not hasattr(op, "get_attr"):
        return False
    return not bool(op.get_attr("TVectorizable"))


def rng_vector_cap(body) -> int | None:
    """The widest vector ``T.rng_rand_float`` calls allow (None without any): TileLang keeps the source
    width of the scalar value, ``max(1, min(4, 128 // value bits))``, as a call constraint."""
    from tilelang import tvm

    from .tilelang_ir import nodes

    caps = [max(1, min(4, 128 // (c.dtype.bits * c.dtype.lanes))) for c in nodes(body, tvm.tirx.Call)
            if getattr(c.op, "name", "") == "tl.rng_rand_float" and c.dtype.bits]
    return min(caps) if caps else None


def opaque_call_cap(body, inner, extent, strides) -> int | None:
    """The widest vector the opaque calls of a loop body allow (None when it has none; see :func:`_opaque`),
    as TileLang's ``VectorizePlanner`` finds it for a call it cannot vectorise: the largest power of two
    (from ``gcd(256, extent)``, the widest the target may allow, down) over which every buffer offset the
    call reads or writes (and every ``tvm_access_ptr`` offset inside it) depends on the innermost loop
    variable ``inner`` only through ``inner // size``.  A call that touches no buffer allows any width.
    ``strides(buffer)`` gives a buffer's strides.  The offsets are the buffers' own, untransformed by a
    layout: an injective layout (shared memory) keeps an offset invariant exactly where the raw one is; a
    fragment TileLang has laid out already is read at its register index there, which stays the same
    wherever the logical index does (so this cap is never wider than TileLang's; it is narrower only where
    a fragment puts lanes the index tells apart on one register)."""
    from tilelang import tvm

    from .tilelang_ir import nodes

    t = tvm.tirx
    calls = [c for c in nodes(body, t.Call) if _opaque(c)]
    if not calls:
        return None
    groups = []
    for call in calls:
        offsets = [sum((x * s for x, s in zip(n.indices, strides(n.buffer))), t.IntImm("int32", 0))
                   for n in nodes(call, t.BufferLoad, t.BufferStore)]
        offsets += [c.args[2] for c in nodes(call, t.Call)
                    if getattr(c.op, "name", "") == "tirx.tvm_access_ptr" and len(c.args) >= 3]
        groups.append(offsets)
    return _widest_invariant(groups, inner, extent)


def condition_cap(body, inner, extent) -> int | None:
    """The widest vector the conditions of a loop body allow (None when it has none): TileLang's planner
    vectorises an ``if`` statement or an ``if_then_else`` only as wide as its (simplified) condition stays
    the same, the largest power of two from ``gcd(256, extent)`` down over which the condition depends on
    the innermost loop variable ``inner`` only through ``inner // size`` (``if j % 4 < 2``: 2; a bound
    check on the inner index against a runtime size: 1)."""
    from tilelang import tvm

    from .tilelang_ir import nodes

    t = tvm.tirx
    conds = [ite.condition for ite in nodes(body, t.IfThenElse)]
    conds += [c.args[0] for c in nodes(body, t.Call) if getattr(c.op, "name", "") == "tirx.if_then_else" and c.args]
    if not conds:
        return None
    return _widest_invariant([[c] for c in conds], inner, extent, simplify=True)


def _widest_invariant(groups, inner, extent, simplify: bool = False) -> int:
    """The smallest over ``groups`` (lists of expressions) of the widest power of two, from ``gcd(256,
    extent)`` down (1 for a runtime extent), over which every expression of the group depends on ``inner``
    (bound to ``[0, extent)``) only through ``inner // size``; ``simplify`` first simplifies each one."""
    from tilelang import tvm

    ana = tvm.arith.Analyzer()
    ana.bind(inner, tvm.ir.Range.from_min_extent(0, extent))
    start = math.gcd(256, int(extent)) if isinstance(extent, int) else 1
    caps = []
    for exprs in groups:
        exprs = [ana.simplify(e) for e in exprs] if simplify else exprs
        size = start
        while size > 1 and not all(_invariant(ana, e, inner, size) for e in exprs):
            size //= 2
        caps.append(size)
    return min(caps)


def _invariant(ana, expr, var, size: int) -> bool:
    """``expr`` depends on ``var`` only through ``var // size`` (TileLang's ``IsExprInvariantInVectorBoundary``)."""
    from tilelang import tvm

    aligned = tvm.tirx.stmt_functor.substitute(expr, {var: (var // size) * size})
    return bool(ana.can_prove_equal(expr, aligned))
