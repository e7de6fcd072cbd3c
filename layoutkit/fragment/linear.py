"""Fragments as Triton distributed linear layouts: ``(register, lane, warp) -> tensor coordinate``.

A Triton distributed layout maps each hardware slot (register ``r`` of lane ``l`` of warp ``w``) to
the tensor element it holds; broadcast (several threads holding one element) is a non-injective map.
A :class:`~layoutkit.Fragment` maps the other way, element (and replica) to ``(thread, register)``
with ``thread = lane + lanes * warp``.  The two views describe the same placement when every slot
holds exactly one element, the extents are powers of two and the map is F2-linear.

>>> import layoutkit as lk
>>> F = lk.Fragment([4, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)
>>> f2 = F.to_linear(lanes=8)
>>> f2.in_dims, f2.out_dims
((('register', 2), ('lane', 8), ('warp', 2)), (('dim0', 4), ('dim1', 8)))
>>> f2.bases[0], f2.bases[1]
(((0, 1),), ((0, 2), (0, 4), (1, 0)))
>>> lk.Fragment.from_linear(f2).is_equal(F)
True
"""

from __future__ import annotations

import numpy as np

from ..algebra.bits import XorBasis, log2_exact, unpack_bits
from ..algebra.f2_reasons import not_linear_reason
from ..algebra.layout import placeholder
from ..algebra.linear import F2Linear
from ..algebra.linear_exprs import expressions_from_bases
from ..algebra.nodes import Expr
from ..errors import NotBijectiveError, NotLinearError, ShapeError, UnsupportedError
from .fragment import Fragment, rep_var

SLOT_DIMS = ("register", "lane", "warp")
"""Triton's in-dim names of a distributed layout, low to high."""


def fragment_to_linear(fragment: Fragment, lanes: int = 32) -> F2Linear:
    """``(register, lane, warp) -> (dim0, dim1, ...)``.  ``lanes``: threads per warp (32 on NVIDIA,
    ``targets.nv.WARP_SIZE``); fewer threads than that make one partial warp.  Raises
    :class:`~layoutkit.errors.NotLinearError` saying why there is no such view: an extent that is not a
    power of two, a slot that holds no element or two (``witness``: ``(register, thread)``), or a
    placement that is not F2-linear (``witness``: the slot)."""
    regs, threads = fragment.local_size, fragment.thread_extent
    lane_size = min(threads, lanes)
    what = fragment.describe()
    sizes = {"registers per thread": regs, "threads": threads, "lanes": lanes,
             **{f"input dim {d}": e for d, e in enumerate(fragment.input_shape)}}
    odd = [f"{name} = {n}" for name, n in sizes.items() if log2_exact(n) is None]
    if odd:
        raise NotLinearError(f"{what} has no Triton linear view: {', '.join(odd)}, not a power of two")
    ndim = len(fragment.input_shape)
    thread = fragment.thread_table().reshape(fragment.replicate_size, -1)
    index = np.broadcast_to(fragment.index_table().reshape(1, -1), thread.shape)
    coords = np.moveaxis(np.indices(fragment.input_shape), 0, -1).reshape(1, -1, ndim)
    coords = np.broadcast_to(coords, thread.shape + (ndim,))
    slot = (index * threads + thread).reshape(-1)  # register-major flat slot of every (replica, element)
    held = np.zeros(regs * threads, dtype=np.int64)
    np.add.at(held, slot, 1)
    if np.any(held != 1):
        k = int(np.flatnonzero(held != 1)[0])
        reg, t = divmod(k, threads)
        kind = "holds no element" if held[k] == 0 else f"holds {int(held[k])} elements"
        raise NotLinearError(f"{what} has no Triton linear view: register {reg} of thread {t} {kind} (a linear "
                             "layout maps every slot to exactly one element)", (reg, t))
    table = np.zeros((regs * threads, ndim), dtype=np.int64)
    table[slot] = coords.reshape(-1, ndim)
    # flat slot = register * threads + warp * lane_size + lane: reorder to [register, lane, warp]
    grid = table.reshape(regs, threads // lane_size, lane_size, ndim).transpose(0, 2, 1, 3)
    view = F2Linear.from_table(grid, SLOT_DIMS, [f"dim{d}" for d in range(ndim)])
    if view is None:
        reason, witness = not_linear_reason(grid, SLOT_DIMS)
        raise NotLinearError(f"{what} has no Triton linear view: the placement is not F2-linear: {reason}", witness)
    return F2Linear(view.in_dims, tuple((n, e) for (n, _), e in zip(view.out_dims, fragment.input_shape)), view.bases)


def _slot_map(view: F2Linear) -> F2Linear:
    """``view`` with in dims exactly ``register, lane, warp`` in that order (missing ones of size 1)."""
    unknown = [n for n in view.in_names if n not in SLOT_DIMS]
    if unknown or "lane" not in view.in_names:
        raise ShapeError(f"expected in dims among {SLOT_DIMS} (with 'lane'); found {list(view.in_names)}")
    pad = [(n, 1) for n in SLOT_DIMS if n not in view.in_names]
    if pad:
        view = view.concat_ins(F2Linear(tuple(pad), view.out_dims, tuple(() for _ in pad)))
    return view.transpose_ins(list(SLOT_DIMS))


def _kernel(view: F2Linear) -> list[tuple[int, ...]]:
    """A basis of the inputs mapped to 0, one vector per free variable (values per in dim)."""
    cols, widths = view.columns(), view.in_bits
    basis = XorBasis()
    out = []
    for k, c in enumerate(cols):
        combo = basis.solve(c)
        if combo is not None:
            out.append(unpack_bits(int(combo) ^ (1 << k), widths))
        basis.insert(c)
    return out


def fragment_from_linear(view: F2Linear, input_shape: tuple[int, ...] | None = None) -> Fragment:
    """The fragment placing element ``x`` (replica ``rep``) in every slot ``view`` maps to ``x``.

    Replicas are the slots a broadcast (free lane/warp variables) sends to one element; the replica
    number's bits select among them.  Raises :class:`~layoutkit.NotBijectiveError` when some element
    is held by no slot, :class:`~layoutkit.UnsupportedError` when one thread holds an element in two
    registers (a Fragment keeps one register index per element).
    """
    m = _slot_map(view)
    shape = tuple(s for _, s in m.out_dims) if input_shape is None else tuple(int(e) for e in input_shape)
    if shape != tuple(s for _, s in m.out_dims):
        raise ShapeError(f"input shape {shape} does not match the out dims {m.out_dims}")
    try:
        inverse = m.pseudo_inverse()  # element -> (register, lane, warp), free variables 0
    except NotBijectiveError as err:
        raise NotBijectiveError(f"not every element is held by a slot: {err}", err.witness) from None
    kernel = _kernel(m)
    if any(k[0] for k in kernel):
        raise UnsupportedError(
            f"slots {kernel} differ in the register and hold the same element: one thread would hold it twice"
        )
    replicate = 1 << len(kernel)
    variables = [placeholder(d, e) for d, e in enumerate(shape)]
    bases = [list(per) for per in inverse.bases] + [kernel]
    rep = rep_var(replicate)
    reg, lane, warp = expressions_from_bases(bases, variables + [rep], 3)
    lane_size = m.in_dim_size("lane")
    thread: Expr = lane + warp * lane_size
    return Fragment.from_exprs(shape, [reg], thread, replicate)


__all__ = ["SLOT_DIMS", "fragment_to_linear", "fragment_from_linear"]
