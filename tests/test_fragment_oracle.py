"""Fragment rules checked against TileLang 0.1.15 itself (optional: needs ``tilelang``).

Two rules, each over a few dozen seeded random thread maps, compared as whole tables (threads of
every replica, register indices of every coordinate):

* the register index TileLang infers from the digits the thread map leaves unused, including
  those of *fused* sums read through ``%`` / ``//`` (``DivideUnusedIterators``);
* ``condense_rep_var``, which re-orders the replica digits even when it drops none
  (``CondenseReplicateVar``).

TileLang's expressions are evaluated here by a small numpy walker over its TIR nodes, so the
comparison does not go through layoutkit's own TileLang frontend.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from .tilelang_env import require_tilelang  # noqa: E402

tilelang = require_tilelang()

import layoutkit as lk  # noqa: E402

tl_layout = pytest.importorskip("tilelang.layout", reason="TileLang without tilelang.layout")
tvm = tilelang.tvm
tirx = tvm.tirx

CASES = 36  # accepted random maps per family


# ---- evaluating TileLang's expressions ------------------------------------------------------------

def evaluate_tir(expr, env: dict[str, np.ndarray]) -> np.ndarray:
    """Evaluate a TIR integer expression on numpy arrays (floor semantics, as TIR's floordiv/mod)."""
    if isinstance(expr, (int, tirx.IntImm)):
        return np.asarray(int(expr), dtype=np.int64)
    if isinstance(expr, tirx.Var):
        return env[expr.name]
    binary = {tirx.Add: np.add, tirx.Sub: np.subtract, tirx.Mul: np.multiply,
              tirx.FloorDiv: np.floor_divide, tirx.FloorMod: np.mod}
    for node, fn in binary.items():
        if isinstance(expr, node):
            return fn(evaluate_tir(expr.a, env), evaluate_tir(expr.b, env))
    raise TypeError(f"no evaluator for TIR node {type(expr).__name__}: {expr}")


def tilelang_tables(frag, shape: tuple[int, ...], replicate: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(thread table (replicate,)+shape, index table shape, local size)`` of a TileLang fragment."""
    names = [str(v) for v in frag.get_forward_vars()]
    coords = np.indices(shape, dtype=np.int64)
    env = {name: coords[d][None] for d, name in enumerate(n for n in names if n != "_rep")}
    env["_rep"] = np.arange(replicate, dtype=np.int64).reshape((-1,) + (1,) * len(shape))
    thread = np.broadcast_to(evaluate_tir(frag.thread, env), (replicate,) + shape)
    (index_expr,) = list(frag.index)
    index = np.broadcast_to(evaluate_tir(index_expr, env), (1,) + shape)[0]
    (local,) = [int(n) for n in frag.get_output_shape()]
    return thread, index, local


def assert_same_tables(ours: lk.Fragment, theirs, what: str) -> None:
    assert ours.replicate_size == int(theirs.replicate_size), f"{what}: replicas {ours.replicate_size}"
    thread, index, local = tilelang_tables(theirs, ours.input_shape, ours.replicate_size)
    assert np.array_equal(ours.thread_table(), thread), f"{what}: threads {ours.forward_thread} vs {theirs.thread}"
    assert ours.output_shape == (local,), f"{what}: local size {ours.output_shape} vs {local}"
    assert np.array_equal(ours.table()[..., 0], index), f"{what}: index {ours.forward_index} vs {theirs.index}"


def build_both(shape, thread_fn, replicate: int):
    """``(ours, theirs)`` or None where TileLang refuses the map (its iterator analysis fails)."""
    try:
        theirs = tl_layout.Fragment(list(shape), forward_thread_fn=thread_fn, replicate=replicate)
    except Exception:  # noqa: BLE001 - any TileLang refusal: the map is outside both rules
        return None
    return lk.Fragment(list(shape), forward_thread_fn=thread_fn, replicate=replicate), theirs


# ---- random thread maps ---------------------------------------------------------------------------

def fused_maps(rng: random.Random):
    """Thread maps reading the fused iterator ``j * (m // b) + i // b`` (dense, as TileLang's
    iterator analysis needs) through ``%`` (and sometimes ``//``), optionally with a replica term
    outside or inside the sum."""
    while True:
        m, n = rng.choice([8, 16, 24, 32, 48]), rng.choice([8, 12, 16, 24, 32])
        b = rng.choice([d for d in (1, 2, 4, 8) if m % d == 0 and d < m])
        a = m // b
        # TileLang sizes the top unused digit by floor division (a non-injective index when the
        # modulus does not divide the fused extent); layoutkit keeps every element, so only
        # divisible maps are compared
        # ... and the stride a must straddle the modulus, else both simplifiers split the sum apart
        mods = [d for d in (4, 8, 16, 32, 64) if d < n * a and n * a % d == 0 and d % a and a % d]
        if not mods:
            continue
        mod = rng.choice(mods)
        kind = rng.choice(["plain", "plain", "div", "rep_outside", "rep_inside", "transposed"])
        if kind == "plain":
            yield (m, n), (lambda i, j, a=a, b=b, mod=mod: (j * a + i // b) % mod), 1
        elif kind == "div":
            low = rng.choice([2, 4])
            yield (m, n), (lambda i, j, a=a, b=b, mod=mod, low=low: (j * a + i // b) % mod // low), 1
        elif kind == "transposed":
            yield (n, m), (lambda j, i, a=a, b=b, mod=mod: (j * a + i // b) % mod), 1
        elif kind == "rep_outside":
            yield (m, n), (lambda i, j, r, a=a, b=b, mod=mod: (j * a + i // b) % mod + r * mod), 2
        else:
            yield (m, n), (lambda i, j, r, a=a, b=b, mod=mod: (r * (mod + mod // 2) + j * a + i // b) % mod), 2


def replica_maps(rng: random.Random):
    """Sums of replica digits with distinct thread strides plus a dim term; some digits skipped
    (condense drops them), others all kept (condense only re-orders them)."""
    while True:
        radices = [rng.choice([2, 4, 8]) for _ in range(rng.choice([2, 3]))]
        replicate = int(np.prod(radices))
        n = rng.choice([4, 8])
        dim_stride = rng.choice([1, 2, 4])
        strides = rng.sample([8, 16, 32, 64, 128, 256], len(radices))
        keep = [True] * len(radices) if rng.random() < 0.5 else [rng.random() < 0.7 for _ in radices]

        def thread(i, r, radices=tuple(radices), strides=tuple(strides), keep=tuple(keep), dim_stride=dim_stride,
                   replicate=replicate):
            total = i * dim_stride
            lower = 1
            for radix, stride, kept in zip(radices, strides, keep):
                upper = lower * radix
                digit = r // lower if upper == replicate else r % upper // lower
                if kept:
                    total = total + digit * stride
                lower = upper
            return total

        yield (n,), thread, replicate


def take(gen, count: int):
    out, tries = [], 0
    for shape, fn, replicate in gen:
        tries += 1
        pair = build_both(shape, fn, replicate)
        if pair is not None:
            out.append((shape, fn, replicate, pair))
        if len(out) == count or tries > 50 * count:
            return out
    return out


FUSED = take(fused_maps(random.Random(20261129)), CASES)
REPLICA = take(replica_maps(random.Random(15)), CASES)


def test_enough_maps_were_accepted_by_tilelang():
    assert len(FUSED) == CASES and len(REPLICA) == CASES


@pytest.mark.parametrize("k", range(len(FUSED)))
def test_unused_digits_of_fused_sums_match_tilelang(k):
    _, _, _, (ours, theirs) = FUSED[k]
    assert_same_tables(ours, theirs, f"fused map {k}: {theirs.thread}")


@pytest.mark.parametrize("k", range(len(REPLICA)))
def test_condense_rep_var_matches_tilelang(k):
    _, _, _, (ours, theirs) = REPLICA[k]
    assert_same_tables(ours, theirs, f"replica map {k}: {theirs.thread}")
    c_ours, c_theirs = ours.condense_rep_var(), theirs.condense_rep_var()
    assert_same_tables(c_ours, c_theirs, f"condensed replica map {k}: {c_theirs.thread}")


def test_the_worked_examples_match_tilelang():
    ours, theirs = build_both((48, 24), lambda i, j: (j * 12 + i // 4) % 32, 1)
    assert str(theirs.index[0]) == str(ours.forward_index[0]) == "_i % 4 * 9 + (_j * 12 + _i // 4) // 32"
    ours, theirs = build_both((8,), lambda i, r: r // 8 * 64 + i * 8 + r % 8, 16)
    c_ours, c_theirs = ours.condense_rep_var(), theirs.condense_rep_var()
    assert str(c_theirs.thread) == str(c_ours.forward_thread) == "_rep % 2 * 64 + _i * 8 + _rep // 2"
    assert_same_tables(c_ours, c_theirs, "worked replica example")
