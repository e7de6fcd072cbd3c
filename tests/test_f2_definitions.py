"""Triton's LinearLayout operations that its Python bindings do not expose, checked on 500 random layouts
each against the definition Triton's ``LinearLayout.h`` documents (quoted in each test), by brute force
over every input."""

from __future__ import annotations

import itertools

import numpy as np

from layoutkit.algebra.linear import F2Linear

from .test_f2_triton import random_map

N_LAYOUTS = 500


def inputs(f: F2Linear):
    return itertools.product(*(range(s) for _, s in f.in_dims))


def columns(f: F2Linear) -> list[int]:
    return [f.pack(im) for per in f.bases for im in per]


def rank(vectors: list[int]) -> int:
    rows = np.array([[(v >> k) & 1 for k in range(32)] for v in vectors], dtype=np.uint8).reshape(-1, 32)
    r = 0
    for c in range(32):
        pivot = next((i for i in range(r, len(rows)) if rows[i, c]), None)
        if pivot is None:
            continue
        rows[[r, pivot]] = rows[[pivot, r]]
        for i in range(len(rows)):
            if i != r and rows[i, c]:
                rows[i] ^= rows[r]
        r += 1
    return r


def test_divide_left_and_right():
    """"Compute a C such that A = B * C if it exists ... C will always have the same input/output
    dimensions as A" (divideRight: A = C * B)."""
    rng = np.random.default_rng(10)
    for _ in range(N_LAYOUTS):
        B = random_map(rng, max_bits=5)
        C = random_map(rng, out_dims=tuple((n, 1 << int(rng.integers(0, 3))) for n in B.out_names), max_bits=5,
                       in_names=list(B.in_names))
        A = B * C
        left = A.divide_left(B)
        assert left is not None and B * left == A
        right = A.divide_right(C)
        assert right is not None and right * C == A


def test_sublayout():
    """"Gets a layout where the in-dims not mentioned in inDimNames are set to 0, and the out-dims not
    mentioned in outDimNames are omitted.  The output-dim sizes are unchanged.  The order of the in/out
    dims in the returned layout matches the order of the original layout."""
    rng = np.random.default_rng(11)
    for _ in range(N_LAYOUTS):
        f = random_map(rng)
        ins = [n for n in f.in_names if rng.random() < 0.6]
        outs = [n for n in f.out_names if rng.random() < 0.6]
        s = f.sublayout(list(reversed(ins)), list(reversed(outs)))
        assert s.in_names == tuple(ins) and s.out_dims == tuple(d for d in f.out_dims if d[0] in outs)
        for x in inputs(s):
            full = [x[ins.index(n)] if n in ins else 0 for n in f.in_names]
            y = dict(zip(f.out_names, f.apply(full)))
            assert s.apply(list(x)) == tuple(y[n] for n in outs)


def test_free_variable_masks():
    """"For each in-dim, returns a bitmask of the free variables ... the bits in the input that can be
    changed without changing the output.  If all of the free variables are 0, then the layout is
    injective."  (Free: a column in the span of the columns before it, in RREF order.)"""
    rng = np.random.default_rng(12)
    for _ in range(N_LAYOUTS):
        f = random_map(rng)
        cols = columns(f)
        masks = f.free_variable_masks()
        j = 0
        for name, per in zip(f.in_names, f.bases):
            for b in range(len(per)):
                free = rank(cols[:j + 1]) == rank(cols[:j])
                assert bool(masks[name] >> b & 1) == free
                j += 1
        assert (not any(masks.values())) == f.is_injective()


def test_concat_ins_and_outs():
    """concatIns: "the input dimensions of this layout are placed before those of other" and the images
    xor; concatOuts: same in dims, the out dims of this layout, then those of other."""
    rng = np.random.default_rng(13)
    for _ in range(N_LAYOUTS):
        f = random_map(rng, in_names=["register", "lane"], max_bits=6)
        g = random_map(rng, out_dims=f.out_dims, in_names=["warp", "block"], max_bits=6)
        h = f.concat_ins(g)
        assert h.in_names == f.in_names + g.in_names
        for x in itertools.islice(inputs(h), 64):
            fx, gx = f.apply(list(x[:2])), g.apply(list(x[2:]))
            assert h.apply(list(x)) == tuple(a ^ b for a, b in zip(fx, gx))
        k = random_map(rng, out_dims=(("dim7", 4),), in_names=list(f.in_names), max_bits=6)
        k = F2Linear(f.in_dims, k.out_dims, tuple(per[:len(fp)] + ((0,),) * (len(fp) - len(per))
                                                  for per, fp in zip(k.bases, f.bases)))
        both = f.concat_outs(k)
        assert both.out_dims == f.out_dims + k.out_dims
        for x in itertools.islice(inputs(f), 64):
            assert both.apply(list(x)) == f.apply(list(x)) + k.apply(list(x))


def test_transpose_ins_and_outs():
    """"Reorders the in/out dimensions of the layout.  This is mostly cosmetic"": the same map."""
    rng = np.random.default_rng(14)
    for _ in range(N_LAYOUTS):
        f = random_map(rng)
        pi = list(rng.permutation(len(f.in_names)))
        po = list(rng.permutation(len(f.out_names)))
        t = f.transpose_ins([f.in_names[i] for i in pi]).transpose_outs([f.out_names[k] for k in po])
        for x in itertools.islice(inputs(f), 64):
            y = f.apply(list(x))
            assert t.apply([x[i] for i in pi]) == tuple(y[k] for k in po)


def test_num_consecutive():
    """"Finds the maximum value V such that for any a, b, c, and for all v in [0,V),
    L(a*V + v, b, c, ...) = L(a*V, b, c, ...) + (v, 0, ..., 0)" (V a power of two here)."""
    rng = np.random.default_rng(15)

    def holds(f: F2Linear, V: int) -> bool:
        for x in inputs(f):
            base = list(x)
            base[0] -= base[0] % V
            v = x[0] % V
            want = list(f.apply(base))
            want[0] += v
            if f.apply(list(x)) != tuple(want):
                return False
        return True

    for _ in range(N_LAYOUTS):
        f = random_map(rng, max_bits=7)
        if rng.random() < 0.5 and f.bases[0]:  # give the first dim a run of unit images
            first = tuple(tuple((1 << b) if k == 0 else 0 for k in range(len(f.out_dims))) for b in range(2))
            per = first[:len(f.bases[0])] + f.bases[0][2:]
            outs = ((f.out_dims[0][0], max(f.out_dims[0][1], 4)),) + f.out_dims[1:]
            f = F2Linear(f.in_dims, outs, (per,) + f.bases[1:])
        V = f.num_consecutive()
        assert holds(f, V)
        if 2 * V <= f.in_dims[0][1]:
            assert not holds(f, 2 * V)


def test_a_map_with_no_output_bits_has_an_empty_matrix():
    f = F2Linear.from_bases({"register": [[], []], "lane": [[]]}, {})
    assert f.matrix().shape == (0, 3) and f.matrix().dtype == np.uint8
    assert f.rank() == 0 and f.is_surjective() and not f.is_injective()
    assert F2Linear.zeros(8).matrix().shape == (0, 3)
