"""What bounds a parallel loop's vector width in TileLang's vectoriser beyond what a Program access shows:
how aligned a global address is (:class:`Alignment`), and element atomics (:func:`atomic_vector_cap`;
:func:`scalar_atomic_cap` for the atomics with no vector form).

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

__all__ = ["Alignment", "atomic_vector_cap", "scalar_atomic_cap"]


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

    def _proved(self, expr) -> int:
        """The power of two the analyzer proves ``expr`` a multiple of (0: it is 0)."""
        with ExitStack() as stack:
            for fact in self.facts:
                stack.enter_context(self.analyzer.constraint_scope(fact))
            m = self.analyzer.modular_set(self.analyzer.simplify(expr))
        return _low_bit(math.gcd(int(m.coeff), int(m.base)))

    def address_alignment(self, buf, indices, loop_vars, lets) -> int:
        """The alignment (a power of two; 0 when unconstrained) TileLang proves for the part of ``buf``'s
        offset a Program access cannot show: the offset at the loop origin, and, where the buffer's
        strides are its own (not the row-major ones layoutkit assumes), the step of every outer loop
        variable.  ``lets`` maps a variable bound inside the loop to its value (the analyzer sees
        through those bindings)."""
        tirx = self.tirx
        sub = tirx.stmt_functor.substitute
        offset = tirx.IntImm("int64", 0)
        for x, s in zip(indices, self.strides(buf)):
            offset = offset + tirx.Cast("int64", x) * tirx.Cast("int64", s)
        for _ in range(len(lets) + 1):  # a binding may use an earlier one
            offset = sub(offset, lets)
        zero = {v: tirx.IntImm(v.dtype, 0) for v in loop_vars}
        base = sub(offset, zero)
        bits = [self._proved(base)]
        if len(buf.strides) and not all(isinstance(s, tirx.IntImm) for s in buf.strides):
            for v in loop_vars[:-1]:
                bits.append(self._proved(sub(offset, {**zero, v: tirx.IntImm(v.dtype, 1)}) - base))
        found = [b for b in bits if b]
        return min(found) if found else 0


def _arch(target: str) -> int:
    """The SM number of an ``sm_XY`` target (0 when it has none).

    >>> _arch("sm_90a"), _arch("sm_80"), _arch("cuda")
    (90, 80, 0)
    """
    digits = "".join(c for c in target.removeprefix("sm_") if c.isdigit())
    return int(digits) if target.startswith("sm_") and digits else 0


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
    if name == "float32" and _arch(target) >= 90 and scope in ("", "global"):
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


def _scalar_atomic(name: str) -> bool:
    """The element atomics TileLang's vectoriser treats as opaque calls (no vector form: ``T.atomic_max`` /
    ``atomic_min`` / ``atomic_load`` / ``atomic_store`` / ``atomic_or`` ..., and ``T.atomic_add(...,
    return_prev=True)``); ``atomic_add_elem_op`` has its own width (:func:`atomic_vector_cap`).

    >>> _scalar_atomic("tl.atomic_max_elem_op"), _scalar_atomic("tl.atomic_add_elem_op"), _scalar_atomic("tirx.exp")
    (True, False, False)
    """
    return name.startswith("tl.atomic_") and name.endswith("_elem_op") and name != "tl.atomic_add_elem_op"


def scalar_atomic_cap(body, inner, extent, strides) -> int | None:
    """The widest vector the opaque element atomics of a loop body allow (None when it has none), as
    TileLang's ``VectorizePlanner`` finds it for a call it cannot vectorise: the largest power of two
    (from ``gcd(128, extent)`` down) over which every buffer offset the call reads stays the same along
    the innermost loop variable ``inner``, i.e. 1 unless each atomic's address is invariant in it.
    ``strides(buffer)`` gives a buffer's strides."""
    from tilelang import tvm

    from .tilelang_ir import nodes

    t = tvm.tirx
    calls = [c for c in nodes(body, t.Call) if _scalar_atomic(getattr(c.op, "name", ""))]
    if not calls:
        return None
    ana = tvm.arith.Analyzer()
    ana.bind(inner, tvm.ir.Range.from_min_extent(0, extent))
    start = math.gcd(128, int(extent)) if isinstance(extent, int) else 1
    caps = []
    for call in calls:
        offsets = [sum((x * s for x, s in zip(n.indices, strides(n.buffer))), t.IntImm("int32", 0))
                   for n in nodes(call, t.BufferLoad, t.BufferStore)]
        size = start
        while size > 1 and not all(_invariant(ana, o, inner, size) for o in offsets):
            size //= 2
        caps.append(size)
    return min(caps)


def _invariant(ana, expr, var, size: int) -> bool:
    """``expr`` depends on ``var`` only through ``var // size`` (TileLang's ``IsExprInvariantInVectorBoundary``)."""
    from tilelang import tvm

    aligned = tvm.tirx.stmt_functor.substitute(expr, {var: (var // size) * size})
    return bool(ana.can_prove_equal(expr, aligned))
