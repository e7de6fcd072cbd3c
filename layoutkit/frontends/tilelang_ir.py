"""Small readers of TileLang's TIR used by the adapter: node collection, constant integers, the
block's thread count and the shapes a kernel allocates.  TileLang is imported inside each function."""

from __future__ import annotations

import math

from ..algebra.nodes import Const, Expr
from ..errors import UnsupportedError
from ..infer.ops import Region
from .tilelang_exprs import from_prim_expr

__all__ = ["allocated_shapes", "copy_loop_regions", "expr_nodes", "extent_bound", "int_value", "launch_threads",
           "nodes", "selection_index", "thread_extent", "view_key"]


def int_value(x, what: str) -> int:
    """``x`` as a Python int when it is a constant (an ``int`` or TIR ``IntImm``), else
    :class:`UnsupportedError` naming ``what``.

    >>> int_value(3, "extent")
    3
    """
    if isinstance(x, int):
        return x
    from tilelang import tvm

    if isinstance(x, tvm.tirx.IntImm):
        return int(x.value)
    raise UnsupportedError(f"{what}: expected a constant integer; found `{x}`")


def extent_bound(x, what: str) -> tuple[int, bool]:
    """A loop extent as ``(value, False)`` when constant, else ``(its constant upper bound, True)``
    (``T.min(n, 512)`` -> 512, as TVM's analyzer bounds it); an extent with no bound below 2**31 - 1
    (a bare runtime ``n``) raises :class:`UnsupportedError` naming ``what``.

    >>> extent_bound(64, "extent")
    (64, False)
    """
    if isinstance(x, int):
        return x, False
    from tilelang import tvm

    if isinstance(x, tvm.tirx.IntImm):
        return int(x.value), False
    hi = int(tvm.arith.Analyzer().const_int_bound(x).max_value)
    if hi <= 0 or hi >= (1 << 31) - 1:
        raise UnsupportedError(f"{what}: the extent `{x}` is a runtime value with no constant upper bound; expected "
                               f"a constant, or a bounded expression such as T.min(n, 512)")
    return hi, True


def nodes(stmt, *types) -> list:
    """The nodes of ``types`` under ``stmt`` in post order.  Collected first and handled afterwards:
    an exception raised inside a TVM visitor callback would come back as a bare ``RuntimeError``.

    Needs TileLang (skipped as a doctest), with ``gemm`` a 64 x 64 x 32-tile ``@T.prim_func`` GEMM on 128 threads:

    >>> from tilelang import tvm  # doctest: +SKIP
    >>> len(nodes(gemm.body, tvm.tirx.For))  # doctest: +SKIP
    3
    """
    from tilelang import tvm

    out: list = []
    tvm.tirx.stmt_functor.post_order_visit(stmt, lambda n: out.append(n) if isinstance(n, types) else None)
    return out


def expr_nodes(e, *types) -> list:
    """The nodes of ``types`` inside the expression ``e`` (collected, not handled, in the callback, as
    :func:`nodes` collects a statement's)."""
    from tilelang import tvm

    out: list = []
    tvm.tirx.stmt_functor.post_order_visit(tvm.tirx.Evaluate(e), lambda n: out.append(n) if isinstance(n, types)
                                           else None)
    return out


def launch_threads(func, default: int | None = None) -> int:
    """The block's thread count: the ``tl.launch_threads`` block attribute (``T.Kernel(..., threads=...)``),
    else ``default`` (the launch TileLang materialised for a kernel written without ``threads=``), else,
    for a kernel with no ``threadIdx`` launch at all (no ``T.Kernel``; ``T.thread_binding`` loops are not
    launches), 1: TileLang's LayoutInference lays such a kernel out on its thread bounds ``[0, 1)``.

    Needs TileLang (skipped as a doctest), with ``gemm`` a 64 x 64 x 32-tile ``@T.prim_func`` GEMM on 128 threads:

    >>> launch_threads(gemm)  # doctest: +SKIP
    128
    """
    from tilelang import tvm

    for block in nodes(func.body, tvm.tirx.SBlock):
        if "tl.launch_threads" in block.annotations:
            return math.prod(int_value(x, "tl.launch_threads") for x in block.annotations["tl.launch_threads"])
    if default is not None:
        return default
    for node in nodes(func.body, tvm.tirx.AttrStmt):
        if node.attr_key == "thread_extent" and str(node.node.thread_tag).startswith("threadIdx."):
            raise UnsupportedError(f"from_prim_func: `{node.node.thread_tag} = T.launch_thread(...)` has the "
                                   f"runtime extent {node.value}; expected a constant thread count")
    return 1


def thread_extent(func) -> int | None:
    """The product of the ``threadIdx.x/y/z`` launch extents of ``func`` (None when it launches no
    threads, or launches them with a symbolic extent).

    Needs TileLang (skipped as a doctest), with ``gemm`` lowered past TileLang's MaterializeKernelLaunch:

    >>> thread_extent(gemm)  # doctest: +SKIP
    128
    """
    from tilelang import tvm

    extents: dict[str, int] = {}
    for node in nodes(func.body, tvm.tirx.AttrStmt):
        if node.attr_key == "thread_extent" and str(node.node.thread_tag).startswith("threadIdx."):
            if not isinstance(node.value, tvm.tirx.IntImm):
                return None
            extents.setdefault(str(node.node.thread_tag), int(node.value.value))
    return math.prod(extents.values()) if extents else None


def allocated_shapes(func) -> dict[str, tuple[int, ...]]:
    """Shapes of the buffers a ``PrimFunc`` allocates, by name (to recognise stage dims later).

    Needs TileLang (skipped as a doctest), with ``gemm`` a 64 x 64 x 32-tile ``@T.prim_func`` GEMM on 128 threads:

    >>> allocated_shapes(gemm)  # doctest: +SKIP
    {'A_shared': (64, 32), 'B_shared': (32, 64), 'C_local': (64, 64)}
    """
    from tilelang import tvm

    tirx = tvm.tirx
    out: dict[str, tuple[int, ...]] = {}
    for node in nodes(func.body, tirx.SBlock, tirx.AllocBuffer, tirx.DeclBuffer):
        bufs = list(node.alloc_buffers) if isinstance(node, tirx.SBlock) else [node.buffer]
        for b in bufs:
            if all(isinstance(x, tirx.IntImm) for x in b.shape):
                out.setdefault(b.name, tuple(int(x.value) for x in b.shape))
    return out


def view_key(buf) -> tuple:
    """What tells two TIR buffers over one data variable apart: shape (as text, symbolic extents
    included) and dtype.

    Needs TileLang (skipped as a doctest):

    >>> from tilelang import tvm  # doctest: +SKIP
    >>> view_key(tvm.tirx.decl_buffer((4, 8), "float16"))  # doctest: +SKIP
    (('4', '8'), 'float16')
    """
    from tilelang import tvm

    # str() of a constant extent goes through TVM's script printer (tens of microseconds): read it instead
    imm = tvm.tirx.IntImm
    return tuple(str(int(x.value)) if isinstance(x, imm) else str(x) for x in buf.shape), str(buf.dtype)


def selection_index(x, n: int, loop_var=None) -> int | None:
    """A shared-memory index that selects a slice by variables outside the parallel loop (a serial loop,
    a block index: ``A_shared[b, i, j]``, ``T.copy(A_shared[b, :, :], ...)``), read with them at 0 and
    clamped into ``[0, n)``; None when it uses a variable of the loop (``loop_var(v)`` not None) or
    cannot be read.  Exact for layouts: a shared buffer has one layout, so every slice it selects is
    laid out alike.

    >>> selection_index(3, 4), selection_index(7, 4)
    (3, 3)
    """
    if isinstance(x, int):
        return min(max(x, 0), n - 1)
    moving = []

    def look(v) -> Expr:
        if loop_var is not None and loop_var(v) is not None:
            moving.append(v)
        return Const(0)

    try:
        e = from_prim_expr(x, look, "selection")
    except UnsupportedError:
        return None
    if moving:
        return None
    return min(max(e.value if isinstance(e, Const) else 0, 0), n - 1)


def _level(scope: str) -> int:
    return 2 if scope.startswith("local") else 1 if scope.startswith("shared") else 0


def copy_loop_regions(src: Region, dst: Region, what: str) -> tuple[Region, Region]:
    """The two regions of a copy as TileLang's ``CopyNode::MakeIterVars`` loops over them: when their
    non-unit extents differ (``T.copy(A[:, 0:2], f[:, 0:3])``), the loop takes the extents of the side
    in the lower memory level (fragment < shared < global; the source on a tie) and both sides are
    accessed over them.  Refused like TileLang when that side is smaller than the source, and when
    the other side would then run past its buffer (TileLang guards it with a predicate a Program
    copy cannot express).

    >>> from layoutkit.infer import Program
    >>> p = Program(); A = p.tensor("A", (64, 64), "float32"); f = p.alloc_fragment("f", (64, 4), "float32")
    >>> s, d = copy_loop_regions(Region(A, (0, 0), (64, 2)), Region(f, (0, 0), (64, 3)), "copy")
    >>> s.extents, d.extents
    ((64, 3), (64, 3))
    """
    se = [(k, e) for k, e in enumerate(src.extents or ()) if e != 1]
    de = [(k, e) for k, e in enumerate(dst.extents or ()) if e != 1]
    if [e for _, e in se] == [e for _, e in de] or src.extents is None or dst.extents is None:
        return src, dst
    if len(se) != len(de):
        raise UnsupportedError(f"{what}: {src.buffer.name} {list(src.extents)} and {dst.buffer.name} "
                               f"{list(dst.extents)} have different numbers of non-unit extents")
    base_is_src = _level(src.buffer.scope) >= _level(dst.buffer.scope)
    base, other, pairs = (src, dst, list(zip(se, de))) if base_is_src else (dst, src, list(zip(de, se)))
    for (_, b), (_, o) in pairs:
        if not base_is_src and b < o:
            raise UnsupportedError(f"{what}: the copy loops over {base.buffer.name} {list(base.extents or ())}, "
                                   f"smaller than the source {other.buffer.name} {list(other.extents or ())}")
    ext = list(other.extents or ())
    for (_, b), (k, _) in pairs:
        ext[k] = b
    for k, (lo, e, n) in enumerate(zip(other.starts, ext, other.buffer.shape)):
        if e > n or (lo + e > n and other.buffer.scope != "global"):
            raise UnsupportedError(f"{what}: {other.buffer.name} accessed over [{lo}:{lo + e}] of dim {k} runs past "
                                   f"its {n}; expected extents inside the buffer")
    if other.buffer.scope == "global":  # global starts were clamped for the region's own extents
        starts = tuple(min(lo, n - e) for lo, e, n in zip(other.starts, ext, other.buffer.shape))
    else:
        starts = other.starts
    widened = Region(other.buffer, starts, tuple(ext))
    return (base, widened) if base_is_src else (widened, base)
