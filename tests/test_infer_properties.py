"""Order independence: permuting independent ops (ops that share no buffer keep no relative order)
gives identical layout maps and loop layouts, on 200 random programs."""

from __future__ import annotations

import copy
import random

from layoutkit import infer


def _group(p: infer.Program, rng: random.Random, g: int) -> None:
    kind = rng.choice(["elementwise", "gemm", "bias", "reduce", "ragged"])
    n = rng.choice([16, 32, 64])
    if kind == "elementwise":
        X = p.tensor(f"X{g}", (1024, 1024), "float16")
        a = p.alloc_fragment(f"a{g}", (n, n), "float16")
        b = p.alloc_fragment(f"b{g}", (n, n), "float16")
        p.copy(X[0:n, 0:n], a)
        p.parallel((n, n), writes=[(b, lambda i, j: (i, j))], reads=[(a, lambda i, j: (i, j))])
        p.copy(b, X[0:n, 0:n])
    elif kind in ("gemm", "bias"):
        m = max(n, 32)
        As = p.alloc_shared(f"As{g}", (m, 32), "float16")
        Bs = p.alloc_shared(f"Bs{g}", (32, m), "float16")
        C = p.alloc_fragment(f"C{g}", (m, m), "float32")
        p.clear(C)
        p.gemm(As, Bs, C, policy=rng.choice(["square", "fullrow", "fullcol"]))
        if kind == "bias":
            bias = p.alloc_fragment(f"bias{g}", (m,), "float32")
            mx = p.alloc_fragment(f"max{g}", (m,), "float32")
            p.fill(bias, 1.0)
            p.parallel((m, m), writes=[(C, lambda i, j: (i, j))], reads=[(bias, lambda i, j: (j,))])
            p.reduce(C, mx, dim=1, kind="max")
    elif kind == "reduce":
        x = p.alloc_fragment(f"x{g}", (n, 2 * n), "float32")
        y = p.alloc_fragment(f"y{g}", (n,), "float32")
        p.fill(x, 0.0)
        p.reduce(x, y, dim=1, kind=rng.choice(["sum", "max"]))
    else:
        r, c = rng.choice([(100, 7), (12, 5), (33, 3)])
        x = p.alloc_fragment(f"r{g}", (r, c), "float32")
        p.fill(x, 0.0)
        p.parallel((r, c), writes=[(x, lambda i, j: (i, j))], reads=[(x, lambda i, j: (i, j))])


def _random_topological(ops, rng: random.Random):
    """A random order in which ops sharing a buffer keep their relative order."""
    last: dict[str, int] = {}
    deps = [set() for _ in ops]
    for k, op in enumerate(ops):
        for b in op.buffers:
            if b in last:
                deps[k].add(last[b])
            last[b] = k
    done: set[int] = set()
    out = []
    while len(out) < len(ops):
        ready = [k for k in range(len(ops)) if k not in done and deps[k] <= done]
        k = rng.choice(ready)
        done.add(k)
        out.append(ops[k])
    return out


def _snapshot(r: infer.InferenceResult):
    return ({k: str(v) for k, v in r.layout_map.items()}, {k: str(v) for k, v in r.loop_layouts.items()},
            dict(r.predicates))


def test_order_independence_on_200_random_programs():
    checked = 0
    for seed in range(200):
        rng = random.Random(seed)
        p = infer.Program(threads=128, target="sm_80")
        for g in range(rng.randint(2, 4)):
            _group(p, rng, g)
        want = _snapshot(infer.infer_layouts(p))
        q = copy.copy(p)
        q.ops = _random_topological(p.ops, rng)
        assert _snapshot(infer.infer_layouts(q)) == want, seed
        checked += 1
    assert checked == 200


def test_order_independence_with_conversions_priced():
    """The shared-memory-aware model also tries conversions; the answer still ignores op order."""
    for seed in range(200):
        rng = random.Random(1000 + seed)
        p = infer.Program(threads=128, target="sm_80")
        for g in range(rng.randint(2, 4)):
            _group(p, rng, g)
        want = infer.infer_layouts(p, cost_model="smem-aware")
        q = copy.copy(p)
        q.ops = _random_topological(p.ops, rng)
        got = infer.infer_layouts(q, cost_model="smem-aware")
        assert _snapshot(got) == _snapshot(want), seed
        assert [(c.buffer, c.op) for c in got.conversions] == [(c.buffer, c.op) for c in want.conversions]
