"""Vectorised evaluation: expressions compiled once into a straight-line numpy program.

The program is a list of numpy calls over the expression DAG (shared sub-expressions are computed
once); power-of-two divisors use shifts and masks, which are exact floor division and floor modulo on
two's-complement integers.  Inputs broadcast, so evaluating ``(i, j)`` over a 128x128 domain with
``i`` of shape ``(128, 1)`` and ``j`` of shape ``(1, 128)`` computes ``i % 8`` on 128 values only.

>>> import numpy as np
>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 4), Var("_j", 4)
>>> run = compile_numpy((i * 4 + j, j), (i, j))
>>> [a.tolist() for a in run(np.array([1, 2]), np.array([3, 0]))]
[[7, 8], [3, 0]]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import ExprError
from .nodes import And, Const, Expr, FloorDiv, FloorMod, Mul, Or, Sum, Var, Xor


def _topological(exprs: Sequence[Expr]) -> list[Expr]:
    order: list[Expr] = []
    seen: set[Expr] = set()
    for root in exprs:
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in seen:
                continue
            if expanded:
                seen.add(node)
                order.append(node)
                continue
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children()) if c not in seen)
    return order


def _is_pow2(c: int) -> bool:
    return c > 0 and c & (c - 1) == 0


def _sum_op(coeffs: tuple[int, ...], const: int) -> Callable:
    def run(*xs):
        acc = None
        for x, c in zip(xs, coeffs):
            term = x if c == 1 else x * c
            acc = term if acc is None else acc + term
        return acc + const if const else acc

    return run


def _instruction(node: Expr) -> Callable:
    if isinstance(node, Sum):
        return _sum_op(tuple(c for _, c in node.terms), node.const)
    if isinstance(node, FloorDiv):
        c = node.c
        if _is_pow2(c):
            shift = c.bit_length() - 1
            return lambda x: np.right_shift(x, shift)
        return lambda x: np.floor_divide(x, c)
    if isinstance(node, FloorMod):
        c = node.c
        if _is_pow2(c):
            return lambda x: np.bitwise_and(x, c - 1)
        return lambda x: np.remainder(x, c)
    if isinstance(node, Mul):
        return np.multiply
    if isinstance(node, Xor):
        return np.bitwise_xor
    if isinstance(node, And):
        return np.bitwise_and
    if isinstance(node, Or):
        return np.bitwise_or
    raise ExprError(f"cannot evaluate expression node {node!r}")


@functools.lru_cache(maxsize=4096)
def compile_numpy(exprs: tuple[Expr, ...], variables: tuple[Var, ...]) -> Callable[..., tuple[np.ndarray, ...]]:
    """Compile ``exprs`` over ``variables`` into ``f(*arrays) -> tuple of int64 arrays``.

    Results broadcast against each other only as far as the inputs do: an output that does not
    depend on a variable keeps that axis at size 1 (callers use ``np.broadcast_to``).
    """
    order = _topological(exprs)
    slot = {v: k for k, v in enumerate(variables)}
    program: list[tuple[Callable, tuple[int, ...]]] = []
    for node in order:
        if node in slot:
            continue
        if isinstance(node, Var):
            raise ExprError(f"expression uses variable {node.name} which is not an input of this map")
        if isinstance(node, Const):
            slot[node] = len(variables) + len(program)
            value = np.int64(node.value)
            program.append((lambda v=value: v, ()))
            continue
        slot[node] = len(variables) + len(program)
        program.append((_instruction(node), tuple(slot[c] for c in node.children())))
    outputs = tuple(slot[e] for e in exprs)

    def run(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        regs: list = [np.asarray(a, dtype=np.int64) for a in arrays]
        for fn, args in program:
            regs.append(fn(*(regs[a] for a in args)))
        return tuple(np.asarray(regs[k], dtype=np.int64) for k in outputs)

    return run


def evaluate(expr: Expr, env: dict[Var, int]) -> int:
    """Value of ``expr`` at one point.

    >>> from layoutkit.algebra import Var
    >>> i = Var("_i", 16)
    >>> evaluate(i % 8 * 4, {i: 11})
    12
    """
    variables = tuple(env)
    (out,) = compile_numpy((expr,), variables)(*(np.int64(env[v]) for v in variables))
    return int(out)


def grid(shape: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Open-mesh coordinate arrays for a row-major domain (``np.ogrid`` as int64)."""
    n = len(shape)
    return tuple(
        np.arange(e, dtype=np.int64).reshape((1,) * d + (e,) + (1,) * (n - d - 1)) for d, e in enumerate(shape)
    )


CHUNK = 8192
"""Coordinates per evaluation chunk: small enough for every temporary to stay in cache."""


def evaluate_columns(exprs: tuple[Expr, ...], variables: tuple[Var, ...], columns: Sequence[np.ndarray]) -> np.ndarray:
    """Evaluate ``exprs`` at N points given as one int64 column per variable -> ``[N, len(exprs)]``.

    Works in chunks of :data:`CHUNK` points: far faster than one pass over a large array, whose
    temporaries fall out of cache and through the allocator's release/fault cycle.
    """
    run = compile_numpy(exprs, variables)
    n = columns[0].shape[0] if columns else 1
    out = np.empty((n, len(exprs)), dtype=np.int64)
    for start in range(0, n, CHUNK):
        part = [c[start : start + CHUNK] for c in columns]
        for k, o in enumerate(run(*part)):
            out[start : start + CHUNK, k] = o
    return out
