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

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...algebra.nodes import Expr, Var
from ...errors import UnsupportedError

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

@dataclass(frozen=True)
class ComputeFn:
    """One elementwise function of :class:`Compute`, :class:`ShflXor` and :class:`Move` (a parallel loop's
    ``compute``), defined once for both consumers of the IR: ``numpy(*operands)`` is what the executor computes
    (operands of the compute type: fp32 for floating dtypes, int64 for integers; the result is cast to the
    destination dtype) and ``c(operand_texts, floating)`` the C expression the CUDA printer writes.

    >>> COMPUTE_FNS["max"].c(("a", "b"), True), COMPUTE_FNS["max"].numpy(np.float32([1, np.nan]), np.float32([2, 3]))
    ('fmaxf(a, b)', array([2., 3.], dtype=float32))
    """

    name: str
    arity: int
    numpy: Callable[..., np.ndarray]
    c: Callable[[tuple[str, ...], bool], str]


def _fmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmax(a, b) if a.dtype.kind == "f" else np.maximum(a, b)  # fmaxf ignores NaN


def _fmin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmin(a, b) if a.dtype.kind == "f" else np.minimum(a, b)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f":  # C integer division truncates toward zero; the printer guards zero divisors
        return np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b))).astype(a.dtype)
    return np.divide(a, b)


def _binary(op: str) -> Callable[[tuple[str, ...], bool], str]:
    return lambda x, floating: f"({x[0]} {op} {x[1]})"


COMPUTE_FNS: dict[str, ComputeFn] = {f.name: f for f in (
    ComputeFn("copy", 1, lambda a: a, lambda x, floating: x[0]),
    ComputeFn("relu", 1, lambda a: _fmax(a, np.zeros_like(a)),
              lambda x, floating: f"fmaxf({x[0]}, 0.0f)" if floating else f"max({x[0]}, 0LL)"),
    ComputeFn("neg", 1, np.negative, lambda x, floating: f"(-{x[0]})"),
    ComputeFn("abs", 1, np.abs, lambda x, floating: f"fabsf({x[0]})" if floating else f"llabs({x[0]})"),
    ComputeFn("add", 2, np.add, _binary("+")),
    ComputeFn("sub", 2, np.subtract, _binary("-")),
    ComputeFn("mul", 2, np.multiply, _binary("*")),
    ComputeFn("div", 2, _div,
              lambda x, floating: f"({x[0]} / {x[1]})" if floating else f"({x[1]} == 0 ? 0LL : {x[0]} / {x[1]})"),
    ComputeFn("max", 2, _fmax, lambda x, floating: f"fmaxf({x[0]}, {x[1]})" if floating else f"max({x[0]}, {x[1]})"),
    ComputeFn("min", 2, _fmin, lambda x, floating: f"fminf({x[0]}, {x[1]})" if floating else f"min({x[0]}, {x[1]})"),
)}
"""The compute functions by name: the built-in ones, and those :func:`register_compute_fn` adds."""


def register_compute_fn(fn: ComputeFn) -> None:
    """Make ``fn`` a compute function of the IR (the executor and the CUDA printer both use its definition)."""
    if not isinstance(fn, ComputeFn) or not fn.name.isidentifier() or fn.arity not in (1, 2, 3):
        raise UnsupportedError(f"register_compute_fn: expected a ComputeFn with an identifier name and 1 to 3 "
                               f"operands; found {fn!r:.120}")
    COMPUTE_FNS[fn.name] = fn


def compute_fn(name: str, arity: int, where: str) -> ComputeFn:
    """The compute function ``name`` taking ``arity`` operands, or :class:`~layoutkit.errors.UnsupportedError`
    naming ``where`` and the functions there are."""
    fn = COMPUTE_FNS.get(name)
    if fn is None or fn.arity != arity:
        raise UnsupportedError(f"{where}: compute {name!r} with {arity} operands; expected one of "
                               f"{ {k: f.arity for k, f in COMPUTE_FNS.items()} } (name -> operand count)")
    return fn

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
