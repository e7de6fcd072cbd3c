"""Vectorised evaluation: expressions compiled once into a straight-line numpy program.

The program is a list of numpy calls over the expression DAG (shared sub-expressions are computed
once); power-of-two divisors use shifts and masks, which are exact floor division and floor modulo on
two's-complement integers.  Inputs broadcast, so evaluating ``(i, j)`` over a 128x128 domain with
``i`` of shape ``(128, 1)`` and ``j`` of shape ``(1, 128)`` computes ``i % 8`` on 128 values only.
:func:`evaluate_columns` runs the same instructions over arbitrary points (one column per variable)
in cache-sized chunks, into reused buffers, and in int32 when that provably cannot overflow.

Integers never wrap: numpy's int64 is used only where :mod:`.overflow` proves, from the node intervals
(or from the intervals the inputs actually span), that no intermediate value can leave it.  Otherwise
the same program runs over Python ints (object arrays, exact), and a result outside int64 raises
:class:`~layoutkit.errors.IntegerOverflowError` instead of coming back wrapped.

>>> import numpy as np
>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 4), Var("_j", 4)
>>> run = compile_numpy((i * 4 + j, j), (i, j))
>>> [a.tolist() for a in run(np.array([1, 2]), np.array([3, 0]))]
[[7, 8], [3, 0]]
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import CoordinateError, ExprError
from .nodes import And, Const, Expr, FloorDiv, FloorMod, Lookup, Mul, Or, Sum, Var, Xor
from .overflow import INT32, INT64, fits, fits_values, narrow_int64, topological


def _is_pow2(c: int) -> bool:
    return c > 0 and c & (c - 1) == 0


def _sum_op(coeffs: tuple[int, ...], const: int) -> Callable[..., Any]:
    def run(*xs: Any, out: Any = None, tmp: Any = None) -> Any:
        if out is None:
            acc: Any = None
            for x, c in zip(xs, coeffs):
                term = x if c == 1 else x * c
                acc = term if acc is None else acc + term
            return acc + const if const else acc
        # into a buffer: accumulate in place, scaled terms go through the scratch buffer ``tmp``
        np.multiply(xs[0], coeffs[0], out=out)
        for x, c in zip(xs[1:], coeffs[1:]):
            np.add(out, x if c == 1 else np.multiply(x, c, out=tmp), out=out)
        return np.add(out, const, out=out) if const else out

    return run


def _needs_tmp(node: Expr) -> bool:
    return isinstance(node, Sum) and any(c != 1 for _, c in node.terms[1:])


def _checked_index(node: Lookup, index: Any) -> NDArray[np.int64]:
    """The index operand of ``node`` as int64, or :class:`~layoutkit.errors.CoordinateError` naming an index
    outside the table (numpy would wrap a negative one around, or raise an untyped IndexError)."""
    arr = np.asarray(index)
    n = len(node.table)
    if arr.size:
        lo, hi = arr.min(), arr.max()
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            where = tuple(int(v) for v in np.unravel_index(int(np.argmax(arr == bad)), arr.shape))
            raise CoordinateError(
                f"{node}: the index {node.index} is {int(bad)} at position {where} of the evaluated points, outside "
                f"the {n} entries of table#{node.table.name}")
    return arr.astype(np.int64, copy=False)


def _lookup_op(node: Lookup) -> Callable[..., Any]:
    """``table[index]`` by fancy indexing, after checking every index lies in the table."""
    values = node.table.values

    def run(x: Any, out: Any = None) -> Any:
        picked = values[_checked_index(node, x)]
        if out is None:
            return picked
        out[...] = picked  # int32 buffers: the node interval (the entries' range) fits them
        return out

    return run


def _instruction(node: Expr) -> Callable[..., Any]:
    """``fn(*operands, out=None)`` computing ``node`` (a Sum also takes a scratch ``tmp``)."""
    if isinstance(node, Lookup):
        return _lookup_op(node)
    if isinstance(node, Sum):
        return _sum_op(tuple(c for _, c in node.terms), node.const)
    if isinstance(node, FloorDiv):
        c = node.c
        if _is_pow2(c):
            shift = c.bit_length() - 1
            return lambda x, out=None: np.right_shift(x, shift, out=out)
        return lambda x, out=None: np.floor_divide(x, c, out=out)
    if isinstance(node, FloorMod):
        c = node.c
        if _is_pow2(c):
            return lambda x, out=None: np.bitwise_and(x, c - 1, out=out)
        return lambda x, out=None: np.remainder(x, c, out=out)
    if isinstance(node, Mul):
        return np.multiply
    if isinstance(node, Xor):
        return np.bitwise_xor
    if isinstance(node, And):
        return np.bitwise_and
    if isinstance(node, Or):
        return np.bitwise_or
    raise ExprError(f"cannot evaluate expression node {node!r}")


def _nodes(exprs: tuple[Expr, ...], variables: tuple[Var, ...]) -> list[Expr]:
    """The non-input nodes of ``exprs`` in evaluation order."""
    nodes = []
    for node in topological(exprs):
        if node in variables:
            continue
        if isinstance(node, Var):
            raise ExprError(f"expression uses variable {node.name} which is not an input of this map")
        nodes.append(node)
    return nodes


def _program(exprs: tuple[Expr, ...], variables: tuple[Var, ...], dtype: Callable[[int], Any],
             instruction: Callable[[Expr], Callable[..., Any]]) -> Callable[..., tuple[Any, ...]]:
    """Straight-line program over ``variables``; constants are ``dtype``, operands are used as given
    and every instruction (``instruction(node)``) allocates its result (operands may broadcast)."""
    slot: dict[Expr, int] = {v: k for k, v in enumerate(variables)}
    program: list[tuple[Callable[..., Any], tuple[int, ...]]] = []
    for node in _nodes(exprs, variables):
        slot[node] = len(variables) + len(program)
        if isinstance(node, Const):
            value = dtype(node.value)
            program.append((lambda v=value: v, ()))
            continue
        program.append((instruction(node), tuple(slot[c] for c in node.children())))
    outputs = tuple(slot[e] for e in exprs)

    def run(*arrays: NDArray[Any]) -> tuple[Any, ...]:
        regs: list[Any] = list(arrays)
        for fn, args in program:
            regs.append(fn(*(regs[a] for a in args)))
        return tuple(regs[k] for k in outputs)

    return run


def _buffered_program(
    exprs: tuple[Expr, ...], variables: tuple[Var, ...], dtype: type
) -> tuple[int, Callable[..., Any]]:
    """``(buffers, run)``: ``run(arrays, scratch, out)`` evaluates 1-d operands of one length ``L``
    into the rows of ``scratch`` (``[buffers, L]``) and writes output ``k`` into ``out[:, k]`` as soon
    as it is computed.  A row is reused once its value is dead, so a chunked evaluation allocates
    nothing per chunk and little in all (fresh temporaries cost page faults, not arithmetic).  Row 0
    is the scratch of scaled Sum terms when some Sum needs one."""
    nodes = _nodes(exprs, variables)
    slot: dict[Expr, int] = {v: k for k, v in enumerate(variables)}
    slot.update((node, len(variables) + k) for k, node in enumerate(nodes))
    emits: dict[int, list[int]] = {}
    for k, e in enumerate(exprs):
        emits.setdefault(slot[e], []).append(k)
    last = {slot[c]: k for k, node in enumerate(nodes) for c in node.children()}
    tmp = 0 if any(_needs_tmp(node) for node in nodes) else None
    count = 0 if tmp is None else 1
    free: list[int] = []
    row: dict[int, int] = {}
    program: list[tuple[Any, ...]] = []
    for k, node in enumerate(nodes):
        own = slot[node]
        args = tuple(slot[c] for c in node.children())
        if isinstance(node, Const):
            program.append((None, args, None, dtype(node.value), False, tuple(emits.get(own, ()))))
        else:
            if free:
                dst = free.pop()
            else:
                dst, count = count, count + 1
            row[own] = dst
            program.append((_instruction(node), args, dst, None, _needs_tmp(node), tuple(emits.get(own, ()))))
        # rows are freed only after this instruction, so none writes over its own operand; a value
        # nobody reads (an output, already written out) frees its row at once
        free.extend(row[a] for a in {*args, own} if a in row and last.get(a, k) == k)
    from_inputs = tuple((s, k) for s, ks in emits.items() if s < len(variables) for k in ks)

    def run(arrays: Sequence[NDArray[Any]], scratch: NDArray[Any], out: NDArray[np.int64]) -> None:
        regs: list[Any] = list(arrays)
        for s, k in from_inputs:
            out[:, k] = regs[s]
        for fn, args, dst, value, needs_tmp, cols in program:
            if fn is None:
                v = value
            elif needs_tmp:
                v = fn(*(regs[a] for a in args), out=scratch[dst], tmp=scratch[tmp])
            else:
                v = fn(*(regs[a] for a in args), out=scratch[dst])
            regs.append(v)
            for k in cols:
                out[:, k] = v

    return count, run


@functools.lru_cache(maxsize=4096)
def compile_numpy(exprs: tuple[Expr, ...], variables: tuple[Var, ...]) -> Callable[..., tuple[NDArray[Any], ...]]:
    """Compile ``exprs`` over ``variables`` into ``f(*arrays) -> tuple of int64 arrays``.

    Results broadcast against each other only as far as the inputs do: an output that does not
    depend on a variable keeps that axis at size 1 (callers use ``np.broadcast_to``).  Exact: int64
    where it provably cannot overflow, Python ints otherwise (see the module doc).

    >>> from layoutkit.algebra import Var
    >>> i = Var("_i", 4)
    >>> [a.tolist() for a in compile_numpy((i * (1 << 62) // (1 << 61),), (i,))(np.arange(4))]
    [[0, 2, 4, 6]]
    """
    program: Callable[..., tuple[Any, ...]] | None
    try:
        program = _program(exprs, variables, np.int64, _instruction)
    except OverflowError:  # a constant past int64 (``2**63``): only the exact path can evaluate these
        program = None
    proven = program is not None and fits(exprs, INT64)

    def run(*arrays: NDArray[Any]) -> tuple[NDArray[Any], ...]:
        ints = _int64_inputs(arrays)
        if program is not None and ints is not None and _int64_safe(exprs, variables, ints, proven):
            outs = program(*ints)
            return tuple(np.asarray(o, dtype=np.int64) for o in outs)
        return _exact(exprs, variables, arrays)

    return run


def fits_int32(exprs: tuple[Expr, ...]) -> bool:
    """Whether every intermediate value, and every constant operand, of ``exprs`` fits in int32
    when each variable lies in ``[0, extent)`` (from the interval every node carries).

    >>> from layoutkit.algebra import Var
    >>> i = Var("_i", 1 << 16)
    >>> fits_int32((i * 4096 + 7,)), fits_int32((i * 65536,)), fits_int32((Var("_k", 1 << 40) // 2,))
    (True, False, False)
    """
    return fits(exprs, INT32)


def fits_int64(exprs: tuple[Expr, ...]) -> bool:
    """:func:`fits_int32` for int64.

    >>> from layoutkit.algebra import Var
    >>> i = Var("_i", 4)
    >>> fits_int64((i * (1 << 60),)), fits_int64((i * (1 << 62),)), fits_int64((i * (1 << 61) + (1 << 62),))
    (True, False, False)
    """
    return fits(exprs, INT64)


def _int64_inputs(arrays: Sequence[Any]) -> list[NDArray[np.int64]] | None:
    """The inputs as int64 arrays, or None when some value does not fit int64."""
    try:
        return [np.asarray(a, dtype=np.int64) for a in arrays]
    except OverflowError:
        return None


def _int64_safe(exprs: tuple[Expr, ...], variables: tuple[Var, ...], ints: Sequence[NDArray[np.int64]],
                proven: bool) -> bool:
    """Whether int64 evaluation of ``exprs`` at these inputs is exact: proven from the node intervals
    when the inputs lie in their variables' ranges, else from the intervals the inputs span."""
    # viewed as unsigned, a negative input is huge: one max per input checks both ends of its range
    if proven and all(not a.size or int(a.view(np.uint64).max()) <= v.hi for v, a in zip(variables, ints)):
        return True
    spans = [(int(a.min()), int(a.max())) if a.size else (0, 0) for a in ints]
    return fits_values(exprs, variables, spans, INT64)


def _exact_instruction(node: Expr) -> Callable[..., Any]:
    """``node`` with Python's operators, which are exact on Python ints and object arrays of them (numpy's
    functions would turn a Python int into an int64)."""
    if isinstance(node, Sum):
        terms, const = tuple(c for _, c in node.terms), node.const

        def total(*xs: Any) -> Any:
            acc: Any = const
            for x, c in zip(xs, terms):
                acc = acc + x * c
            return acc

        return total
    if isinstance(node, FloorDiv):
        return lambda x, c=node.c: x // c
    if isinstance(node, FloorMod):
        return lambda x, c=node.c: x % c
    if isinstance(node, Lookup):
        return functools.partial(_exact_lookup, node)
    ops: dict[type, Callable[..., Any]] = {Mul: operator.mul, Xor: operator.xor, And: operator.and_,
                                           Or: operator.or_}
    if type(node) in ops:
        return ops[type(node)]
    raise ExprError(f"cannot evaluate expression node {node!r}")


def _exact_lookup(node: Lookup, x: Any) -> Any:
    """``table[x]`` over Python ints (an object array, or one int): the entries come back as Python ints."""
    picked = node.table.values[_checked_index(node, x)]  # checked before the cast: Python ints past int64 too
    return picked.astype(object) if picked.ndim else int(picked)


@functools.lru_cache(maxsize=1024)
def _exact_program(exprs: tuple[Expr, ...], variables: tuple[Var, ...]) -> Callable[..., tuple[Any, ...]]:
    return _program(exprs, variables, int, _exact_instruction)


def _as_objects(a: Any) -> Any:
    """An input as Python ints: an object array (or a Python int for a scalar)."""
    arr = np.asarray(a)
    if arr.dtype == object:
        return arr if arr.ndim else int(arr[()])
    if arr.dtype.kind not in "iu":
        arr = arr.astype(np.int64)
    return arr.astype(object) if arr.ndim else int(arr[()])


def _exact(exprs: tuple[Expr, ...], variables: tuple[Var, ...], arrays: Sequence[Any]) -> tuple[NDArray[Any], ...]:
    """``exprs`` evaluated over Python ints, then narrowed to int64 (or refused)."""
    outs = _exact_program(exprs, variables)(*(_as_objects(a) for a in arrays))
    return tuple(narrow_int64(o, e) for o, e in zip(outs, exprs))


@functools.lru_cache(maxsize=4096)
def _column_program(
    exprs: tuple[Expr, ...], variables: tuple[Var, ...], in_range: bool
) -> tuple[type, bool, int, Callable[..., Any]]:
    dtype = np.int32 if in_range and fits(exprs, INT32) else np.int64
    return (dtype, fits(exprs, INT64), *_buffered_program(exprs, variables, dtype))


def evaluate(expr: Expr, env: dict[Var, int]) -> int:
    """Value of ``expr`` at one point, exactly (Python ints).

    >>> from layoutkit.algebra import Var
    >>> i = Var("_i", 16)
    >>> evaluate(i % 8 * 4, {i: 11}), evaluate(i * (1 << 62) + (1 << 62), {i: 3})
    (12, 18446744073709551616)
    """
    variables = tuple(env)
    values = []
    for v in variables:
        x = env[v]
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise ExprError(f"evaluate: {v.name} must be an integer; found {x!r}")
        values.append(int(x))
    (out,) = _exact_program((expr,), variables)(*values)
    return int(out)


def grid(shape: Sequence[int]) -> tuple[NDArray[np.int64], ...]:
    """Open-mesh coordinate arrays for a row-major domain (``np.ogrid`` as int64)."""
    n = len(shape)
    return tuple(
        np.arange(e, dtype=np.int64).reshape((1,) * d + (e,) + (1,) * (n - d - 1)) for d, e in enumerate(shape)
    )


CHUNK = 1 << 16
"""Most coordinates per evaluation chunk: every int32 temporary (256 KiB) stays in the L2 cache."""

MIN_CHUNK = 1 << 12
"""Fewest coordinates per chunk: below this the per-instruction Python overhead dominates."""

SCRATCH_BYTES = 1 << 18
"""Scratch bytes every evaluation may use, however small its result."""


def _chunk(n: int, out_bytes: int, bytes_per_point: int) -> int:
    """Points per chunk: at most :data:`CHUNK`, and few enough that the scratch stays within
    :data:`SCRATCH_BYTES` or half the result.  A scratch much larger than the result it is freed
    next to leaves a free heap top large enough for malloc to hand back to the OS, and every call
    then faults it in again (at 16K points that costs more than the arithmetic).

    >>> _chunk(1 << 20, 3 << 23, 28), _chunk(1 << 14, 3 << 17, 28), _chunk(100, 2400, 28)
    (65536, 9362, 100)
    """
    budget = max(out_bytes // 2, SCRATCH_BYTES)
    return max(1, min(n, CHUNK, max(MIN_CHUNK, budget // max(1, bytes_per_point))))


def evaluate_columns(
    exprs: tuple[Expr, ...], variables: tuple[Var, ...], columns: Sequence[ArrayLike], *, in_range: bool = False
) -> NDArray[np.int64]:
    """Evaluate ``exprs`` at N points given as one int column per variable -> int64 ``[N, len(exprs)]``.

    A 0-d column is one value shared by every point.  Works in chunks (:func:`_chunk`) through one
    scratch allocated per call, writing each output straight into the result: far faster than one
    pass over a large array, whose temporaries fall out of cache and through the allocator's
    release/fault cycle.  ``in_range=True`` promises that every column lies inside its variable's
    ``[0, extent)``; the chunks are then computed in int32 when :func:`fits_int32` proves no
    intermediate can overflow (half the memory traffic), and widened on the write into the result.

    >>> from layoutkit.algebra import Var
    >>> i, j = Var("_i", 4), Var("_j", 4)
    >>> evaluate_columns((i * 4 + j, j), (i, j), [np.array([1, 2]), np.array(3)], in_range=True).tolist()
    [[7, 3], [11, 3]]
    """
    exprs, variables = tuple(exprs), tuple(variables)
    dtype, proven, buffers, run = _column_program(exprs, variables, in_range)
    cols = [np.asarray(c) for c in columns]
    n = next((c.shape[0] for c in cols if c.ndim), 1)
    out = np.empty((n, len(exprs)), dtype=np.int64)
    if not (in_range and proven):
        ints = _int64_inputs(cols)
        if ints is None or not _int64_safe(exprs, variables, ints, proven):
            for k, o in enumerate(_exact(exprs, variables, cols)):
                out[:, k] = o
            return out
    # columns of another dtype are converted chunk by chunk into extra scratch rows
    convert = [k for k, c in enumerate(cols) if c.ndim and c.dtype != dtype]
    rows = buffers + len(convert)
    chunk = _chunk(n, out.nbytes, rows * np.dtype(dtype).itemsize)
    scratch: NDArray[Any] = np.empty((rows, chunk), dtype=dtype)
    part: list[Any] = [c.astype(dtype) if not c.ndim else c for c in cols]
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        block = scratch[:, : stop - start]
        for k, c in enumerate(cols):
            if c.ndim:
                part[k] = c[start:stop]
        for r, k in enumerate(convert, buffers):
            part[k] = block[r]
            np.copyto(part[k], cols[k][start:stop], casting="unsafe")
        run(part, block, out[start:stop])
    return out
