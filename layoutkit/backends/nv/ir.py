"""A small per-thread IR for lowered tile programs (shared by the CUDA printer and the numpy executor).

Every statement runs on every thread of a block.  Index expressions are :mod:`layoutkit.algebra`
expressions over the thread variables (:data:`TID`, :data:`BX`, :data:`BY`) and loop variables, so the
printer writes them with :func:`~layoutkit.algebra.translate.to_c` and the executor evaluates them with numpy,
for all threads at once.  Memory is addressed in elements of the buffer's dtype:

* ``global`` buffers are kernel parameters (flat, row-major), ``shared`` buffers are per block,
  ``reg`` buffers are per thread (register arrays, indexed by expressions that are uniform per warp).
* A guard is a tuple of ``(expr, bound)`` pairs meaning ``expr < bound`` for all pairs; a guarded load that
  fails reads zeros, a guarded store that fails writes nothing.

Statements: :class:`For` (loops, ``unroll`` prints ``#pragma unroll``), :class:`Copy` (vector global ->
shared, optionally ``cp.async``), :class:`CommitGroup` / :class:`WaitGroup` (cp.async groups),
:class:`Barrier` (``__syncthreads``), :class:`Fill` (registers), :class:`Ldmatrix`, :class:`Mma`
(``mma.sync``), :class:`Load` / :class:`Store` (vector global <-> register with a dtype cast),
:class:`Move` (register -> register), :class:`Compute` (one register := a function of registers),
:class:`ShflXor` (a butterfly step of a warp reduction), :class:`Prmt` (a byte permute of 32-bit
registers).  :class:`Load` / :class:`Store` also address
``shared`` buffers (per block), which carries the cross-warp step of a reduction.

>>> k = Kernel("k", threads=32, grid=(1, 1), buffers=(Buffer("x", "float32", 4, "reg"),),
...            body=(Fill("x", 0.0),))
>>> [b.name for b in k.buffers], k.body[0]
(['x'], Fill(buffer='x', value=0.0))
"""

from __future__ import annotations

from dataclasses import dataclass

from ...algebra.nodes import Expr, Var

TID = Var("tid", None)
"""``threadIdx.x``."""
BX = Var("bx", None)
"""``blockIdx.x``."""
BY = Var("by", None)
"""``blockIdx.y``."""

REG = "reg"
"""The IR scope of per-thread register arrays (the other IR scopes are the program's ``global`` and ``shared``)."""

Guard = tuple[tuple[Expr, int], ...]


@dataclass(frozen=True)
class Buffer:
    """A buffer: ``scope`` is ``GLOBAL`` (a parameter), ``SHARED`` (:mod:`layoutkit.scopes`) or :data:`REG`;
    ``size`` in elements."""

    name: str
    dtype: str
    size: int
    scope: str


@dataclass(frozen=True)
class For:
    """``for (var = 0; var < extent; ++var) body``; ``unroll`` prints ``#pragma unroll``, ``rolled`` prints
    ``#pragma unroll 1`` (a loop whose body the lowering unrolled already stays a loop: code size)."""

    var: Var
    extent: int
    body: tuple
    unroll: bool = False
    rolled: bool = False


@dataclass(frozen=True)
class Copy:
    """``vec`` consecutive elements ``src[src_addr:]`` -> ``dst[dst_addr:]`` (global -> shared) by the
    threads where ``mask`` holds; zeros where ``guard`` fails (out of the tensor); ``async_`` prints
    ``cp.async`` (byte size 4, 8 or 16)."""

    dst: str
    dst_addr: Expr
    src: str
    src_addr: Expr
    vec: int
    guard: Guard = ()
    async_: bool = False
    mask: Guard = ()


@dataclass(frozen=True)
class CommitGroup:
    """``cp.async.commit_group``."""


@dataclass(frozen=True)
class WaitGroup:
    """``cp.async.wait_group n`` (the executor's async copies complete at once)."""

    n: int = 0


@dataclass(frozen=True)
class Barrier:
    """``__syncthreads()``."""


@dataclass(frozen=True)
class Fill:
    """Every element of register buffer ``buffer`` := ``value``."""

    buffer: str
    value: float


@dataclass(frozen=True)
class Ldmatrix:
    """``ldmatrix.sync.aligned.x{num}[.trans].shared.b16``: lane ``t`` (``t < 8*num``) gives the shared
    address ``addr`` of row ``t % 8`` of matrix ``t // 8`` (16-byte rows); register ``m`` of every lane
    receives matrix ``m`` (see :func:`layoutkit.targets.nv.mma.ldmatrix_layout`), stored at element
    ``dst_off`` onward of register buffer ``dst``."""

    dst: str
    dst_off: Expr
    src: str
    addr: Expr
    num: int = 4
    trans: bool = False


@dataclass(frozen=True)
class Mma:
    """``mma.sync.aligned.{shape}.row.col``: ``C += A @ B`` on one warp's registers; operands are
    ``(register buffer, element offset)``; the registers follow the atoms of :mod:`layoutkit.targets.nv.mma`."""

    shape: str
    a: tuple[str, Expr]
    b: tuple[str, Expr]
    c: tuple[str, Expr]


@dataclass(frozen=True)
class Load:
    """``vec`` consecutive global elements ``src[src_addr:]`` -> registers ``dst[dst_off:]`` (cast to the
    register dtype); zeros where ``guard`` fails."""

    dst: str
    dst_off: Expr
    src: str
    src_addr: Expr
    vec: int
    guard: Guard = ()


@dataclass(frozen=True)
class Move:
    """``count`` registers ``src[src_off:]`` -> ``dst[dst_off:]`` through ``fn`` (:data:`MOVE_FNS`), cast to
    the destination dtype."""

    dst: str
    dst_off: Expr
    src: str
    src_off: Expr
    count: int
    fn: str = "copy"


MOVE_FNS = ("copy", "relu")
"""The elementwise functions of :class:`Move` (a parallel loop's ``compute``, as ``run_ascend`` models them)."""

COMPUTE_FNS = {"copy": 1, "relu": 1, "neg": 1, "abs": 1, "add": 2, "sub": 2, "mul": 2, "div": 2, "max": 2, "min": 2}
"""The functions of :class:`Compute` and :class:`ShflXor` (a parallel loop's ``compute``) -> their arity.
Floating operands compute in fp32 (``max`` / ``min`` ignore NaN, as ``fmaxf``), integers in 64 bits; the
result is cast to the destination dtype."""

REDUCE_FNS = {"sum": "add", "max": "max", "min": "min"}
"""A ``reduce`` kind -> the :data:`COMPUTE_FNS` function that folds two partials."""


@dataclass(frozen=True)
class Compute:
    """Register ``dst[dst_off] := fn(src_0[off_0], src_1[off_1], ...)`` (``srcs`` are ``(buffer, offset)``
    pairs; offsets are constants so the registers stay registers) on the threads where ``guard`` holds.

    >>> Compute("c", 3, "add", (("c", 3), ("bias", 1))).fn
    'add'
    """

    dst: str
    dst_off: int
    fn: str
    srcs: tuple[tuple[str, int], ...]
    guard: Guard = ()


@dataclass(frozen=True)
class ShflXor:
    """``buffer[off] := fn(buffer[off], __shfl_xor_sync(full, buffer[off], mask))``: every lane combines
    its register with the one of lane ``lane ^ mask`` (values read before any lane writes)."""

    buffer: str
    off: int
    mask: int
    fn: str


@dataclass(frozen=True)
class Prmt:
    """``prmt.b32 d, a, b, selector`` (PTX ISA default mode) on the 32-bit words of register buffers that start at
    element offsets ``a`` / ``b`` / ``dst`` (constants, 4-byte aligned): byte ``i`` of ``d`` is byte ``s & 7`` of
    the eight bytes ``{b, a}`` (``a`` bytes 0-3), ``s`` the selector's nibble ``i``; when ``s & 8`` the byte's
    sign is replicated over all eight bits instead.  The selector is a constant or an expression (per thread).

    >>> Prmt("x", 0, ("w", 0), ("w", 4), 0x5140).selector
    20800
    """

    dst: str
    dst_off: int
    a: tuple[str, int]
    b: tuple[str, int]
    selector: int | Expr


@dataclass(frozen=True)
class Store:
    """``vec`` consecutive register elements ``src[src_off:]`` -> ``dst[dst_addr:]`` (global), cast to
    the destination dtype, where ``guard`` holds."""

    dst: str
    dst_addr: Expr
    src: str
    src_off: Expr
    vec: int
    guard: Guard = ()


@dataclass(frozen=True)
class Kernel:
    """A kernel: ``grid = (x, y)`` blocks of ``threads`` threads; its global buffers are the parameters, in
    order; ``body`` runs on every thread."""

    name: str
    threads: int
    grid: tuple[int, int]
    buffers: tuple[Buffer, ...]
    body: tuple

    def buffer(self, name: str) -> Buffer:
        """The buffer called ``name`` (``KeyError`` when there is none: kernels are built by the lowering)."""
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def scoped(self, scope: str) -> list[Buffer]:
        """The buffers of ``scope`` (``global``, ``shared``, ``reg``), in declaration order.

        >>> Kernel("k", 32, (1, 1), (Buffer("y", "float32", 32, "global"), Buffer("r", "float32", 1, "reg")),
        ...        ()).scoped("reg")[0].name
        'r'
        """
        return [b for b in self.buffers if b.scope == scope]
