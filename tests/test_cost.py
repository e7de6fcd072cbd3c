"""Cost models: register-count, io-aware, shared-memory aware; exact figures against an independent
enumeration; the registry and user models."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import cost, infer
from layoutkit.algebra.shapes import placeholder
from layoutkit.backends.nv import SharedMemoryAwareModel, conversion_cost
from layoutkit.backends.nv.smem_cost import shared_rows
from layoutkit.cost import IOAwareModel, Operand, RegisterCountModel, Statement
from layoutkit.infer import programs
from layoutkit.infer.engine import solve
from layoutkit.infer.free import statements

# ---- programs whose choice the models change ---------------------------------------------------


def transposed_store(order: int) -> infer.Program:
    """``x`` is written in a loop, then stored to global memory through a transposed read of ``x``."""
    p = infer.Program(threads=128)
    G = p.tensor("G", (256, 256), "float32")
    x = p.alloc_fragment("x", (64, 64), "float32")
    ops = [lambda: p.parallel((64, 64), writes=[(x, lambda i, j: (i, j))]),
           lambda: p.parallel((64, 64), writes=[(G, lambda i, j: (i, j))], reads=[(x, lambda i, j: (j, i))])]
    for f in ops[::order]:
        f()
    return p


def conflicted_shared_read(perm) -> infer.Program:
    """``x = s`` from a row-major shared tile, ``y = x^T``, ``w = x + z[i]`` (ops in ``perm`` order).
    Rooting at the transposed loop gives ``x`` columns per warp: 32-way conflicted shared reads, but
    ``z`` replicated only twice (97 register slots); rooting at ``x = s`` reads 16-byte vectors
    conflict free with ``z`` replicated 16 times (104 slots)."""
    p = infer.Program(threads=128)
    s = p.alloc_shared("s", (64, 64), "float32")
    x, y, w = (p.alloc_fragment(n, (64, 64), "float32") for n in "xyw")
    z = p.alloc_fragment("z", (64,), "float32")
    p.annotate_layout({s: lk.Layout([64, 64], lambda i, j: i * 64 + j)})
    ops = [lambda: p.parallel((64, 64), writes=[(x, lambda i, j: (i, j))], reads=[(s, lambda i, j: (i, j))]),
           lambda: p.parallel((64, 64), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (j, i))]),
           lambda: p.parallel((64, 64), writes=[(w, lambda i, j: (i, j))],
                              reads=[(x, lambda i, j: (i, j)), (z, lambda i, j: (i,))])]
    for k in perm:
        ops[k]()
    return p


def _modelled(model, p, cost_model):
    ctx = solve(p, cost_model=cost_model)
    return ctx, model.cost(dict(ctx.layouts), p, statements(ctx, p.ops))


def test_io_aware_picks_coalesced_store():
    io = IOAwareModel()
    reg_ctx, reg_cost = _modelled(io, transposed_store(1), "register-count")
    io_ctx, io_cost = _modelled(io, transposed_store(1), "io-aware")
    assert not reg_ctx.layouts["x"].is_equal(io_ctx.layouts["x"])       # a different layout
    assert io_cost.regs == reg_cost.regs                                 # same registers ...
    assert io_cost.mem * 16 == reg_cost.mem                              # ... 16x fewer modelled bytes
    lines = io.explain(dict(io_ctx.layouts), io_ctx.program, statements(io_ctx, io_ctx.program.ops))
    # the transposed read of x keeps TileLang's vectoriser at width 1 (contiguity analysis)
    assert "vector 1, 128 instructions, 128 segments, 16384 B" in lines[0]
    assert "vector 1, 128 instructions, 2048 segments, 262144 B" in io.explain(
        dict(reg_ctx.layouts), reg_ctx.program, statements(reg_ctx, reg_ctx.program.ops))[0]


def test_register_count_ties_keep_the_earliest_root():
    """Both roots of the transposed store cost 32 register slots: register-count keeps the earliest
    (TileLang's rule), so with the store first it lands on the coalesced layout io-aware picks."""
    io = IOAwareModel()
    first, _ = _modelled(io, transposed_store(1), "register-count")
    store_first, reg_cost = _modelled(io, transposed_store(-1), "register-count")
    io_ctx, io_cost = _modelled(io, transposed_store(-1), "io-aware")
    assert store_first.layouts["x"].is_equal(io_ctx.layouts["x"]) and reg_cost == io_cost
    assert not first.layouts["x"].is_equal(store_first.layouts["x"])
    assert (reg_cost.mem, reg_cost.regs) == (16384, 32)


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))), ids=str)
def test_smem_aware_avoids_bank_conflicts(perm):
    sm = SharedMemoryAwareModel()
    reg_ctx, reg_cost = _modelled(sm, conflicted_shared_read(perm), "register-count")
    io_ctx, _ = _modelled(sm, conflicted_shared_read(perm), "io-aware")      # no global memory: same pick
    sm_ctx, sm_cost = _modelled(sm, conflicted_shared_read(perm), "smem-aware")
    assert reg_ctx.layouts["x"].is_equal(io_ctx.layouts["x"])
    assert not sm_ctx.layouts["x"].is_equal(reg_ctx.layouts["x"])
    (bad,) = shared_rows(statements(reg_ctx, reg_ctx.program.ops))
    (good,) = shared_rows(statements(sm_ctx, sm_ctx.program.ops))
    assert (bad.wavefronts, good.wavefronts) == (4096, 128)
    assert "ld.shared.b32, 128 instructions, 32-way" in bad.what
    assert "ld.shared.b128, 32 instructions, 1-way" in good.what
    assert (reg_cost.regs, sm_cost.regs) == (97, 104)       # fewer registers, 32x the wavefronts
    assert (reg_cost.mem, sm_cost.mem) == (4096 * 128, 128 * 128)


def test_instance_and_name_agree():
    a = infer.infer_layouts(transposed_store(1), cost_model="io-aware")
    b = infer.infer_layouts(transposed_store(1), cost_model=IOAwareModel())
    assert a.layout_map["x"].is_equal(b.layout_map["x"])


def test_user_model_registered_by_name_changes_result():
    class LanesDownRows:
        """Prefer fragments whose consecutive threads walk dim 0."""

        def cost(self, layouts, program):
            x = layouts.get("x")
            down = isinstance(x, lk.Fragment) and int(x.thread_table()[0, 1, 0]) == 1
            return cost.AttemptCost(0, 0, (0 if down else 1,))

    infer.register_cost_model("lanes-down-rows-test", LanesDownRows)
    default = infer.infer_layouts(transposed_store(1))
    mine = infer.infer_layouts(transposed_store(1), cost_model="lanes-down-rows-test")
    assert int(default["x"].thread_table()[0, 1, 0]) != 1
    assert int(mine["x"].thread_table()[0, 1, 0]) == 1
    assert not default["x"].is_equal(mine["x"])


def test_gemm_kernel_unchanged_by_models():
    """The reference kernel's layouts are fixed by the MMA rules: every model keeps them."""
    base = infer.infer_layouts(programs.gemm_rowmax_bias())
    for name in ("io-aware", "smem-aware"):
        r = infer.infer_layouts(programs.gemm_rowmax_bias(), cost_model=name)
        for k, lay in base.layout_map.items():
            assert lay.is_equal(r.layout_map[k]), (name, k)


# ---- register count ----------------------------------------------------------------------------

def test_register_budget_and_spill():
    f = lk.Fragment([64, 64], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
    assert RegisterCountModel().cost({"x": f}, None) == cost.AttemptCost(0, 64)
    assert RegisterCountModel(budget=60).cost({"x": f, "y": f}, None) == cost.AttemptCost((128 - 60) * 4, 128)
    p = infer.Program(threads=64)
    p.alloc_fragment("d", (64, 64), "float64")
    assert RegisterCountModel(budget=100).cost({"d": f}, p).mem == (128 - 100) * 4    # 64-bit: two registers
    assert "64 register slots" in RegisterCountModel().explain({"x": f}, None)[0]
    with pytest.raises(cost.CostModelError):
        RegisterCountModel(budget=-1)


def test_registry_errors_and_names():
    assert {"register-count", "io-aware", "smem-aware"} <= set(cost.cost_model_names())
    with pytest.raises(lk.UnsupportedError):
        cost.register_cost_model("broken", 3)
    with pytest.raises(lk.UnsupportedError):
        cost.get_cost_model(object())
    with pytest.raises(cost.CostModelError):
        IOAwareModel().cost({}, None, ["not a statement"])


def test_unmodelled_statement_is_worst_case_and_explained():
    G = Operand("G", "global", "float16", (128, 128), False)
    st = Statement("gemm#3", "gemm", None, None, (G,))
    c = IOAwareModel().cost({}, None, [st])
    assert c.mem == 128 * 128 * 128
    assert "worst case" in IOAwareModel().explain({}, None, [st])[0]


def test_conversion_cost():
    rows = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
    cols = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
    conv = conversion_cost(rows, cols, "float32")
    assert (conv.store_wavefronts, conv.load_wavefronts) == (256, 32)     # st.shared.b128 rows: 8-way
    assert conv.bytes == 288 * 128
    swz = lk.Layout([32, 32], lambda i, j: i * 32 + (j ^ (i % 8 * 4)))   # keeps 16-byte vectors
    assert conversion_cost(rows, cols, "float32", swz).wavefronts == 64


# ---- exact figures against an independent enumeration -----------------------------------------

def _bit_fragment(shape, perm, thread_bits, rep_bits=0):
    """A fragment whose flat-index bits go, in ``perm`` order, to thread bits then register bits;
    ``rep_bits`` extra thread bits come from the replica index."""
    n = len(perm)

    def bits(i, j):
        flat = i * shape[1] + j
        return [(flat // (1 << k)) % 2 for k in range(n)]

    def thread(i, j, rep=None):
        b = bits(i, j)
        t = sum(b[perm[k]] * (1 << k) for k in range(thread_bits))
        return t if rep is None else t + rep * (1 << thread_bits)

    def index(i, j):
        b = bits(i, j)
        return sum(b[perm[k]] * (1 << (k - thread_bits)) for k in range(thread_bits, n))

    if rep_bits:
        return lk.Fragment(list(shape), forward_thread_fn=thread, replicate=1 << rep_bits, forward_index_fn=index)
    return lk.Fragment(list(shape), forward_thread_fn=lambda i, j: thread(i, j), forward_index_fn=index)


def _enumerate(frag):
    """(thread, register, (i, j)) of every slot, replicas included, by plain Python loops."""
    t = frag.thread_table()
    r = frag.index_table()
    out = []
    for rep in range(frag.replicate_size):
        for i, j in itertools.product(range(frag.input_shape[0]), range(frag.input_shape[1])):
            out.append((int(t[rep, i, j]), int(r[i, j]), (i, j)))
    return out


def _vector(slots, addr, eb, regs):
    per = {}
    for t, r, p in slots:
        per.setdefault(t, {})[r] = addr(p)
    v = max(1, 16 // eb)
    while v > 1:
        ok = regs % v == 0
        for regmap in per.values():
            for g in range(0, regs, v):
                have = [g + k in regmap for k in range(v)]
                if any(have) and not all(have):
                    ok = False
                elif all(have):
                    a0 = regmap[g]
                    ok &= a0 % v == 0 and all(regmap[g + k] == a0 + k for k in range(v))
        if ok:
            return v
        v //= 2
    return 1


def _ref_global(frag, fn, shape, eb):
    slots = _enumerate(frag)

    def addr(p):
        c = fn(*p)
        return c[0] * shape[1] + c[1]

    v = _vector(slots, addr, eb, frag.local_size)
    insts = {(t // 32, r // v) for t, r, _ in slots}
    segs = {(t // 32, r // v, addr(p) * eb // 128) for t, r, p in slots}
    return max(len(insts) * 32 * v * eb, len(segs) * 128)


def _ref_shared(frag, fn, smem, bits, store):
    eb = bits // 8
    table = smem.linear_table()
    slots = _enumerate(frag)

    def off(p):
        return int(table[fn(*p)])

    v = _vector(slots, off, eb, frag.local_size)
    lane_bytes = min(16, max(4, v * eb))
    rpi, phase_lanes = lane_bytes // 4, 32 * 4 // lane_bytes
    words: dict = {}
    for t, r, p in slots:
        o = off(p)
        pairs = [(r // (32 // bits), o * bits // 32)] if bits < 32 else [
            (r * (bits // 32) + h, o * (bits // 32) + h) for h in range(bits // 32)]
        for rw, mw in pairs:
            words.setdefault((t // 32, rw // rpi, (t % 32) // phase_lanes), set()).add(mw)
    total = 0
    for ws in words.values():
        banks: dict = {}
        for w in ws:
            banks[w % 32] = banks.get(w % 32, 0) + 1
        total += max(banks.values())
    return total


CASES = []
_rng = random.Random(8)
for _k in range(24):
    _shape = _rng.choice([(32, 32), (64, 16), (16, 64), (8, 128), (32, 64)])
    _n = int(np.log2(_shape[0] * _shape[1]))
    _perm = list(range(_n))
    _rng.shuffle(_perm)
    _tb = _rng.choice([5, 6, 7])
    if _k % 2 == 0:  # structured: the low flat bits in the low register bits (vectors), threads next
        _vb = _rng.choice([0, 1, 2, 3])
        _perm = list(range(_vb, _vb + _tb)) + list(range(_vb)) + list(range(_vb + _tb, _n))
    _rep = _rng.choice([0, 0, 1]) if _tb < 7 else 0
    _dtype = _rng.choice(["float32", "float16", "int8", "float64"])
    _transpose = _rng.random() < 0.4
    CASES.append((_shape, tuple(_perm), _tb, _rep, _dtype, _transpose, _k))


@pytest.mark.parametrize("shape, perm, tb, rep, dtype, transpose, k", CASES)
def test_global_bytes_match_enumeration(shape, perm, tb, rep, dtype, transpose, k):
    frag = _bit_fragment(shape, perm, tb, rep)
    i, j = placeholder(0, shape[0]), placeholder(1, shape[1])
    gshape = (256, 256)
    if transpose:
        idx, fn = (j + 8, i), (lambda a, b: (b + 8, a))
    else:
        idx, fn = (i + 16, j + 32), (lambda a, b: (a + 16, b + 32))
    st = Statement(f"s{k}", "parallel", shape, frag, (Operand("G", "global", dtype, gshape, bool(k % 2), idx),))
    want = _ref_global(frag, fn, gshape, lk.dtypes.element_bits(dtype) // 8)
    assert IOAwareModel().cost({}, None, [st]).mem == want


@pytest.mark.parametrize("shape, perm, tb, rep, dtype, transpose, k", CASES)
def test_shared_wavefronts_match_enumeration(shape, perm, tb, rep, dtype, transpose, k):
    frag = _bit_fragment(shape, perm, tb, rep)
    i, j = placeholder(0, shape[0]), placeholder(1, shape[1])
    rows, cols = (shape[1], shape[0]) if transpose else shape
    if k % 3 == 0:
        smem = lk.Layout([rows, cols], lambda a, b: a * cols + b)
    elif k % 3 == 1:
        smem = lk.Layout([rows, cols], lambda a, b: a * cols + (b ^ (a % 8)))
    else:
        smem = lk.Layout([rows, cols], lambda a, b: a * cols + (b ^ (a % 8 * 4)))
    idx, fn = ((j, i), lambda a, b: (b, a)) if transpose else ((i, j), lambda a, b: (a, b))
    store = bool(k % 2)
    st = Statement(f"s{k}", "parallel", shape, frag, (
        Operand("s", "shared.dyn", dtype, (rows, cols), store, idx, smem),
        Operand("f", "local.fragment", dtype, shape, not store, (i, j))))
    (row,) = shared_rows([st])
    assert row.wavefronts == _ref_shared(frag, fn, smem, lk.dtypes.element_bits(dtype), store)
    assert row.bytes == row.wavefronts * 128


def test_smem_explain_and_instance_in_infer():
    r = infer.infer_layouts(conflicted_shared_read((0, 1, 2)), cost_model=SharedMemoryAwareModel())
    steps = [d for d in r.explain("x") if d.level == "free"]
    assert steps and steps[-1].cost == cost.AttemptCost(128 * 128, 104)
    p = conflicted_shared_read((0, 1, 2))
    ctx = solve(p, cost_model="smem-aware")
    lines = SharedMemoryAwareModel().explain(dict(ctx.layouts), p, statements(ctx, p.ops))
    assert lines[0].startswith("parallel#0: load s (float32) ld.shared.b128") and "128 wavefronts" in lines[0]
    assert lines[-1] == "total AttemptCost(mem=16384, regs=104)"


def test_user_model_with_statements():
    seen = []

    class CountsGlobal:
        wants_statements = True

        def cost(self, layouts, program, statements=None):
            seen.append(sum(s.touches_global for s in statements))
            return cost.AttemptCost(0, 0)

    infer.infer_layouts(transposed_store(1), cost_model=CountsGlobal())
    assert seen and set(seen) == {1}


def test_register_count_charges_thread_indexed_register_arrays():
    """TileLang's ``CountSpilledBytes``: a loop whose register slot of ``f`` differs between the
    threads running it demotes ``f`` to local memory; the charge is max(array bytes, 2 x threads x
    loop registers x element bytes)."""
    i, j = placeholder(0, 32), placeholder(1, 32)
    rows = lk.Fragment([32, 32], forward_thread_fn=lambda a, b: a, forward_index_fn=lambda a, b: b)
    cols = lk.Fragment([32, 32], forward_thread_fn=lambda a, b: b, forward_index_fn=lambda a, b: a)

    def st(frag, idx):
        return Statement("parallel#0", "parallel", (32, 32), rows, (
            Operand("f", "local.fragment", "float32", (32, 32), False, idx, frag),))

    model = RegisterCountModel()
    assert model.cost({"f": cols}, None, [st(cols, (i, j))]) == cost.AttemptCost(2 * 32 * 32 * 4, 32)
    assert model.cost({"f": rows}, None, [st(rows, (i, j))]) == cost.AttemptCost(0, 32)
    assert model.cost({"f": rows}, None, [st(rows, (j, i))]).mem == 8192      # transposed read
    lines = model.explain({"f": cols}, None, [st(cols, (i, j))])
    assert "f register array indexed by the thread, 8192 B" in lines[1]
    io = IOAwareModel().explain({"f": cols}, None, [st(cols, (i, j))])
    assert io[0].startswith("parallel#0: f register array indexed by the thread, 8192 B")
    assert io[-1] == "total AttemptCost(mem=8192, regs=32)"
