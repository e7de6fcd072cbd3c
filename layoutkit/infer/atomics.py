"""The tile atomics of a :class:`~layoutkit.infer.Program`: ``atomic_add`` and TileLang's ``atomic_max`` /
``atomic_min``, each from a region (``T.atomic_add(B[0, 0], A_shared)``) or a scalar.  A scalar goes into
one element (the element form, which may return the previous value) or into every element of a region
(``T.atomic_add(A[0:32, 0:32], 1.0)``: a loop over the region writing ``dst`` only).

Layout rules: ``atomic_add`` is laid out as a loop (or, ``use_tma``, a TMA reduce-add of a shared source);
``atomic_max`` / ``atomic_min`` propose nothing, as TileLang 0.1.15's ``AtomicMax`` / ``AtomicMin``: a
fragment operand is laid out by its other users (:data:`~layoutkit.infer.loops.SILENT_KINDS`).

>>> from layoutkit.infer import Program
>>> p = Program(threads=128)
>>> A = p.tensor("A", (64, 64), "float32")
>>> op = p.atomic_max(A[0:32, 0:32], 1.0)
>>> op.kind, op.loop, op.args["value"], [str(e) for e in op.accesses[0].indices]
('atomic_max', (32, 32), 1.0, ['_i', '_j'])
"""

from __future__ import annotations

import math

from . import validate
from .ops import Buffer, Op, Region, is_shared, region_access

__all__ = ["ATOMIC_KINDS", "build_atomic"]

ATOMIC_KINDS = ("atomic_add", "atomic_max", "atomic_min")


def build_atomic(p, kind: str, dst: Buffer | Region, src, return_prev: bool = False, use_tma: bool = False) -> Op:
    """Emit the ``kind`` atomic of ``src`` (a buffer, a region or a scalar) into ``dst`` on program ``p``."""
    what = f"{kind}#{p.next_uid}"
    d = p.own(dst)
    prev = validate.flag(return_prev, f"{kind} return_prev", what)
    tma = validate.flag(use_tma, f"{kind} use_tma", what)
    if not isinstance(src, (Buffer, Region)):
        value = validate.scalar(src, f"{what} value", what, d.buffer.name)
        if d.extents is not None and math.prod(d.extents) != 1:
            if prev:
                raise validate.OpValidationError(f"{what}: a scalar {kind} into the region {list(d.extents)} of "
                                                 f"{d.buffer.name} cannot return the previous value (only the "
                                                 f"element form can)", what, d.buffer.name)
            return _region_value(p, kind, d, value, what)
        validate.atomic_scalar(d, what)
        return p.emit(kind, {"dst": d.buffer.name, "starts": list(d.starts), "value": value, "return_prev": prev})
    if prev:
        raise validate.OpValidationError(f"{what}: the tile-region form of {kind} cannot return the previous value "
                                         f"(only the scalar form can)", what, d.buffer.name)
    s = p.own(src)
    if tma and (kind != "atomic_add" or not is_shared(s.buffer.scope)):
        raise validate.OpValidationError(f"{what}: a TMA atomic is an atomic_add reading shared memory; found {kind} "
                                         f"of {s.buffer.name} in {s.buffer.scope}", what, s.buffer.name)
    sr, dr, loop = validate.copy_regions(s, d, what)
    accesses = (region_access(s.buffer, sr, loop, False), region_access(d.buffer, dr, loop, True))
    args = {"src": s.buffer.name, "dst": d.buffer.name, "src_region": sr, "dst_region": dr}
    if tma:
        args["use_tma"] = True
    return p.emit(kind, args, loop, accesses)


def _region_value(p, kind: str, d: Region, value: float, what: str) -> Op:
    """A scalar into every element of region ``d``: a loop over its non-unit extents."""
    extents = tuple(d.extents or ())
    validate.region_bounds(d.buffer, d.starts, extents, what)
    loop = tuple(e for e in extents if e != 1)
    access = region_access(d.buffer, (d.starts, extents), loop, True)
    args = {"dst": d.buffer.name, "dst_region": (tuple(d.starts), extents), "value": value}
    return p.emit(kind, args, loop, (access,))
