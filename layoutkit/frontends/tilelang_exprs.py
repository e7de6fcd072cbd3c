"""Exact conversions between layoutkit expressions / layouts and TileLang's TIR ``PrimExpr`` /
``tilelang.layout.Layout`` / ``Fragment`` objects.

Both directions walk the expression tree node by node (no printing and re-parsing, no ``eval``):
``+ - *``, floor ``//`` and ``%`` by a positive constant, and the bitwise ``^ & |`` (TIR's
``bitwise_xor`` / ``bitwise_and`` / ``bitwise_or`` calls; ``^`` goes to TileLang spelled bit by bit,
``(a // 2^k % 2 + b // 2^k % 2) % 2 * 2^k``, as TileLang writes its swizzles, unless ``xor="bitwise"``
asks for the call).  Truncating ``Div`` / ``Mod`` and shifts
are accepted from TIR when they provably equal the floor forms (non-negative operands).  Anything
else raises :class:`~layoutkit.errors.UnsupportedError` naming the node.

TileLang is imported inside the functions that need it; the pure helpers work without it:

>>> sorted(_BITWISE)
['tirx.bitwise_and', 'tirx.bitwise_or', 'tirx.bitwise_xor']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..algebra.layout import Layout
from ..algebra.nodes import And, Const, Expr, FloorDiv, FloorMod, Lookup, Mul, Or, Sum, Var, Xor, text_prefix
from ..algebra.shapes import placeholder
from ..errors import OptionalDependencyError, UnsupportedError
from ..fragment.fragment import REP_NAME, Fragment, rep_var
from ..fragment.partial import PartialFragment


def _tvm():
    from tilelang import tvm

    return tvm


# ---- layoutkit -> TIR -----------------------------------------------------------------------------

def to_prim_expr(e: Expr, env: dict[str, object], xor: str = "bits") -> object:
    """The TIR ``PrimExpr`` (int32) of ``e``; ``env`` maps variable names to TIR expressions.
    ``xor="bits"`` spells ``^`` bit by bit as TileLang does (see :func:`_xor`), ``"bitwise"`` as TIR's
    ``bitwise_xor`` call.

    Needs TileLang (skipped as a doctest):

    >>> from tilelang import tvm  # doctest: +SKIP
    >>> i = tvm.tirx.Var("i", "int32")  # doctest: +SKIP
    >>> to_prim_expr(Var("i", 8) * 4 + 1, {"i": i})  # doctest: +SKIP
    i * 4 + 1
    """
    if xor not in ("bits", "bitwise"):
        raise UnsupportedError(f"to_tilelang: xor must be 'bits' or 'bitwise'; found {xor!r}")
    tirx = _tvm().tirx

    def go(x: Expr):
        if isinstance(x, Const):
            return tirx.IntImm("int32", x.value)
        if isinstance(x, Var):
            if x.name not in env:
                raise UnsupportedError(f"to_tilelang: variable {x.name} has no TIR counterpart; expected one of "
                                       f"{sorted(env)}")
            return env[x.name]
        if isinstance(x, Sum):
            out = None
            for atom, coeff in x.terms:
                t = go(atom)
                if abs(coeff) != 1:
                    t = t * tirx.IntImm("int32", abs(coeff))
                if out is None:
                    out = t if coeff > 0 else tirx.IntImm("int32", 0) - t
                else:
                    out = out + t if coeff > 0 else out - t
            if x.const:
                c = tirx.IntImm("int32", abs(x.const))
                out = c if out is None else (out + c if x.const > 0 else out - c)
            return out if out is not None else tirx.IntImm("int32", 0)
        if isinstance(x, Mul):
            return go(x.a) * go(x.b)
        if isinstance(x, FloorDiv):
            return tirx.floordiv(go(x.a), tirx.IntImm("int32", x.c))
        if isinstance(x, FloorMod):
            return tirx.floormod(go(x.a), tirx.IntImm("int32", x.c))
        if isinstance(x, Xor):
            return _xor(x, go, tirx) if xor == "bits" else tirx.bitwise_xor(go(x.a), go(x.b))
        if isinstance(x, And):
            return tirx.bitwise_and(go(x.a), go(x.b))
        if isinstance(x, Or):
            return tirx.bitwise_or(go(x.a), go(x.b))
        if isinstance(x, Lookup):
            raise UnsupportedError(f"to_tilelang: {text_prefix(x, 200)} reads table#{x.table.name} "
                                   f"({len(x.table)} entries): a table-backed index has no closed form, and "
                                   "TileLang layouts take index expressions only")
        raise UnsupportedError(f"to_tilelang: no TIR form for the {type(x).__name__} node {x}")

    return go(e)


def _xor(x: Xor, go, tirx):
    """``a ^ b`` of non-negative bounded operands spelled bit by bit the way TileLang writes its own
    swizzles, ``sum_k (a // 2^k % 2 + b // 2^k % 2) % 2 * 2^k``: TileLang compares layouts by proving
    their expressions equal, which its simplifier can do between two such sums but not between a
    ``bitwise_xor`` and a sum.  Other operands keep ``bitwise_xor``."""
    a, b = x.a, x.b
    if a.lo < 0 or b.lo < 0 or max(a.hi, b.hi) == float("inf"):
        return tirx.bitwise_xor(go(a), go(b))
    ta, tb = go(a), go(b)

    def c(v):
        return tirx.IntImm("int32", v)

    out = None
    for k in range(int(max(a.hi, b.hi)).bit_length()):
        bit = tirx.floormod(tirx.floormod(tirx.floordiv(ta, c(1 << k)), c(2))
                            + tirx.floormod(tirx.floordiv(tb, c(1 << k)), c(2)), c(2))
        term = bit * c(1 << k) if k else bit
        out = term if out is None else out + term
    return out if out is not None else c(0)


# ---- TIR -> layoutkit -----------------------------------------------------------------------------

_BITWISE = {"tirx.bitwise_xor": Xor, "tirx.bitwise_and": And, "tirx.bitwise_or": Or}


def from_prim_expr(e: object, lookup: Callable[[object], Expr | None], what: str = "expression") -> Expr:
    """Our expression for the TIR integer expression ``e``; ``lookup(var)`` gives the expression of a
    TIR variable (None: unsupported).  Raises :class:`UnsupportedError` naming the first node it
    cannot translate.

    Needs TileLang (skipped as a doctest), with ``i`` the TIR variable of :func:`to_prim_expr`'s example:

    >>> from_prim_expr(i * 4 + 1, lambda v: Var("i", 8) if v.same_as(i) else None)  # doctest: +SKIP
    i * 4 + 1
    """
    tirx = _tvm().tirx

    def fail(x, why: str):
        raise UnsupportedError(f"{what}: cannot translate {type(x).__name__} node `{x}` of `{e}`: {why}")

    def const_of(x) -> int | None:
        return int(x.value) if isinstance(x, tirx.IntImm) else None

    def go(x) -> Expr:
        if isinstance(x, tirx.IntImm):
            return Const(int(x.value))
        if isinstance(x, tirx.Var):
            got = lookup(x)
            if got is None:
                fail(x, "a variable that is neither a layout/loop variable nor known here")
            return got
        if isinstance(x, tirx.Cast):
            if not str(x.dtype).startswith(("int", "uint")):
                fail(x, f"a cast to {x.dtype}, expected an integer type")
            return go(x.value)
        if isinstance(x, tirx.Add):
            return go(x.a) + go(x.b)
        if isinstance(x, tirx.Sub):
            return go(x.a) - go(x.b)
        if isinstance(x, tirx.Mul):
            return go(x.a) * go(x.b)
        if isinstance(x, (tirx.FloorDiv, tirx.FloorMod, tirx.Div, tirx.Mod)):
            c = const_of(x.b)
            if c is None or c <= 0:
                fail(x, "a divisor that is not a positive constant")
            a = go(x.a)
            if isinstance(x, (tirx.Div, tirx.Mod)) and a.lo < 0:
                fail(x, "truncating division of a value that may be negative")
            return a // c if isinstance(x, (tirx.FloorDiv, tirx.Div)) else a % c
        if isinstance(x, tirx.Call):
            name = x.op.name
            if name in _BITWISE:
                a, b = go(x.args[0]), go(x.args[1])
                return a ^ b if name.endswith("xor") else (a & b if name.endswith("and") else a | b)
            if name in ("tirx.shift_left", "tirx.shift_right"):
                s = const_of(x.args[1])
                a = go(x.args[0])
                if s is None or s < 0 or (name.endswith("right") and a.lo < 0):
                    fail(x, "a shift by a non-constant amount or of a value that may be negative")
                return a * (1 << s) if name.endswith("left") else a // (1 << s)
            fail(x, f"the call {name} has no layoutkit counterpart")
        fail(x, "expected + - * // % ^ & | over integers")

    return go(e)


def _var_lookup(pairs: Sequence[tuple[object, Expr]], by_name: dict[str, Expr]) -> Callable[[object], Expr | None]:
    """Look a TIR variable up by identity first (loop vars of one name may differ), then by name."""

    def lookup(v) -> Expr | None:
        for tv, ours in pairs:
            if tv.same_as(v):
                return ours
        return by_name.get(v.name)

    return lookup


# ---- layouts -----------------------------------------------------------------------------------------

def missing_tilelang(what: str) -> str:
    """The message of a function that needs TileLang when it is not installed.

    >>> missing_tilelang("to_tilelang")[:52]
    'to_tilelang: expected the tilelang package (0.1.15, '
    """
    return (f"{what}: expected the tilelang package (0.1.15, the 'tilelang' extra: pip install "
            "'layoutkit[tilelang]') to be installed; found no importable tilelang")


def to_tilelang(layout: Layout, xor: str = "bits", shape: Sequence | None = None):
    """``tilelang.layout.Fragment`` / ``Layout`` with the same maps as ``layout`` (Fragments keep the
    replication; TileLang's Python API cannot bind a thread range, so a bound range is dropped: TileLang
    binds annotated layouts to the block's threads itself).  ``xor``: ``"bits"`` (default) writes
    ``a ^ b`` the way TileLang writes its own swizzles, so TileLang can prove an annotation equal to
    the layout it derives itself (sm_90 TMA copies check that); ``"bitwise"`` uses ``T.bitwise_xor``.
    Both have the same tables.  ``shape`` builds the TileLang layout over other (TIR) input extents
    of the same rank: the runtime extents of a ``T.Parallel(T.min(n, 512))`` loop laid out over its
    bound, as TileLang's own layout of it reads.  Anything but a layoutkit Layout / Fragment raises
    :class:`UnsupportedError`; without TileLang installed it raises
    :class:`~layoutkit.errors.OptionalDependencyError` naming the ``tilelang`` extra.

    Needs TileLang (skipped as a doctest):

    >>> import layoutkit as lk
    >>> tl = to_tilelang(lk.Layout([4, 8], lambda i, j: (j, i)))  # doctest: +SKIP
    >>> from_tilelang(tl).is_equal(lk.Layout([4, 8], lambda i, j: (j, i)))  # doctest: +SKIP
    True
    """
    if not isinstance(layout, Layout):
        raise UnsupportedError(f"to_tilelang: expected a layoutkit Layout or Fragment; found {type(layout).__name__}")
    try:
        from tilelang import layout as tl_layout
    except ImportError as err:
        raise OptionalDependencyError(missing_tilelang("to_tilelang"), extra="tilelang") from err
    if shape is not None and len(shape) != len(layout.input_shape):
        raise UnsupportedError(f"to_tilelang: shape {list(shape)} for a layout of rank {len(layout.input_shape)}")
    shape = list(layout.input_shape) if shape is None else list(shape)
    names = [v.name for v in layout.forward_vars]

    def env_of(vs, rep=None) -> dict[str, object]:
        env = dict(zip(names, vs))
        if rep is not None:
            env[REP_NAME] = rep
        return env

    if isinstance(layout, Fragment):
        index = layout.forward_index
        thread = layout.forward_thread
        R = layout.replicate_size

        def thread_fn(*vs):
            return to_prim_expr(thread, env_of(vs[:len(shape)], vs[len(shape)] if R > 1 else None), xor)

        def index_fn(*vs):
            # TileLang wraps anything but an FFI Array in a list, so several outputs travel as one
            import tvm_ffi

            return tvm_ffi.Array([to_prim_expr(e, env_of(vs), xor) for e in index])

        if isinstance(layout, PartialFragment):  # a reducer's layout: TileLang's own partial kind
            return tl_layout.PartialFragment(shape, forward_thread_fn=thread_fn, replicate=R, forward_index_fn=index_fn,
                                             combine=layout.combine_size)
        return tl_layout.Fragment(shape, forward_thread_fn=thread_fn, replicate=R, forward_index_fn=index_fn)
    exprs = layout.forward_index
    return tl_layout.Layout(shape, lambda *vs: [to_prim_expr(e, env_of(vs), xor) for e in exprs])


def from_tilelang(obj, shape: Sequence[int] | None = None) -> Layout:
    """layoutkit's ``Layout`` / ``Fragment`` for a ``tilelang.layout`` object (tables equal; a bound
    thread range is kept).  Anything else raises :class:`UnsupportedError` naming the type found.
    ``shape`` reads a layout whose input shape is symbolic (the loop layout of ``T.Parallel(T.min(n,
    512))``) over that constant bound instead; a symbolic shape without it raises.

    Needs TileLang (skipped as a doctest):

    >>> from tilelang import layout as tl_layout  # doctest: +SKIP
    >>> from_tilelang(tl_layout.Layout([4, 8], lambda i, j: (j, i))).input_shape  # doctest: +SKIP
    (4, 8)
    """
    from tilelang import layout as tl_layout

    if not isinstance(obj, tl_layout.Layout):
        raise UnsupportedError(f"from_tilelang: expected a tilelang.layout.Layout or Fragment; found "
                               f"{type(obj).__name__}")
    if type(obj).__name__ not in ("Layout", "Fragment", "PartialFragment"):
        raise UnsupportedError(f"from_tilelang: {type(obj).__name__} has no layoutkit counterpart here; expected "
                               f"a Layout or a Fragment")
    given = list(obj.get_input_shape())
    if shape is None:
        if not all(isinstance(x, (int, _tvm().tirx.IntImm)) for x in given):
            raise UnsupportedError(f"from_tilelang: the input shape {given} of {type(obj).__name__} is symbolic; "
                                   f"expected a constant shape (or a bound given as shape=)")
        shape = tuple(int(x) for x in given)
    elif len(shape) != len(given):
        raise UnsupportedError(f"from_tilelang: shape {tuple(shape)} for a layout of rank {len(given)}")
    shape = tuple(int(x) for x in shape)
    # a replicated Fragment lists its replication variable first: the input vars are the last ones
    tvars = list(obj.get_forward_vars())[-len(shape):]
    ours = [placeholder(d, n) for d, n in enumerate(shape)]
    by_name: dict[str, Expr] = {o.name: o for o in ours}
    if isinstance(obj, tl_layout.Fragment):
        R = int(obj.replicate_size)
        by_name[REP_NAME] = rep_var(R)
        lookup = _var_lookup(list(zip(tvars, ours)), by_name)
        what = f"from_tilelang({obj})"
        thread = from_prim_expr(obj.forward_thread, lookup, what)
        index = [from_prim_expr(e, lookup, what) for e in obj.index]
        rng = obj.thread_range
        bound = None if rng is None else (int(rng.min), int(rng.extent))
        frag = Fragment.from_exprs(shape, index or None, thread, R, bound)
        if type(obj).__name__ == "PartialFragment":  # a reducer's: the same maps, its low replicas addends
            return PartialFragment(frag, int(obj.combine_size))
        return frag
    lookup = _var_lookup(list(zip(tvars, ours)), by_name)
    return Layout.from_exprs(shape, [from_prim_expr(e, lookup, f"from_tilelang({obj})") for e in obj.index])
