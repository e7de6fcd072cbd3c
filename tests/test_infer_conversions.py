"""Free mode weighs a layout conversion through shared memory against re-rooting a component: the
shared-memory-aware model prices it (store + load wavefronts), the result records it, explain() shows
it, and a model that prices no conversion only converts when no plain attempt works."""

from __future__ import annotations

from layoutkit import codegen, cost, infer
from layoutkit.backends.nv import Conversion, SharedMemoryAwareModel
from layoutkit.cost import IOAwareModel

from .test_cost import transposed_store


def transpose_through(dtype: str = "float32", n: int = 64) -> infer.Program:
    """Load ``x`` from global memory, ``y = x^T``, store ``y``: both copies coalesce only if ``x`` and
    ``y`` are laid out alike, which the transposed read forbids unless ``x`` is converted."""
    p = infer.Program(threads=128)
    Gi = p.tensor("Gi", (256, 256), dtype)
    Go = p.tensor("Go", (256, 256), dtype)
    x = p.alloc_fragment("x", (n, n), dtype)
    y = p.alloc_fragment("y", (n, n), dtype)
    p.copy(Gi[0:n, 0:n], x)
    p.parallel((n, n), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (j, i))])
    p.copy(y, Go[0:n, 0:n])
    return p


def _free_score(result, buffer: str):
    (step,) = [d for d in result.explain(buffer) if d.level == "free" and d.rule != "conversion"]
    return step.cost


def test_smem_aware_converts_rather_than_reroots():
    r = infer.infer_layouts(transpose_through(), cost_model="smem-aware")
    (conv,) = r.conversions
    assert (conv.buffer, conv.op) == ("x", "parallel#1")
    assert conv.src.is_equal(r.layout_map["x"])
    assert str(conv.src.forward_thread) == "_i % 8 * 16 + _j // 4"        # x loads coalesced ...
    assert str(conv.dst.forward_thread) == "_j % 2 * 64 + _i"             # ... the transpose reads x'
    assert str(r.layout_map["y"].forward_thread) == "_i % 2 * 64 + _j"    # y stores coalesced
    # priced figures: 128 store + 512 load wavefronts of 128 B, plus x' (32 register slots)
    assert (conv.detail.store_wavefronts, conv.detail.load_wavefronts) == (128, 512)
    assert conv.detail == SharedMemoryAwareModel().conversion_cost(conv.src, conv.dst, "float32")
    assert conv.cost == cost.AttemptCost(640 * 128, 32)
    # the chosen attempt: 2 x 16 KiB coalesced global traffic + the conversion, 96 register slots;
    # every plain attempt moves 16 KiB + 256 KiB (one side uncoalesced), with 64 slots
    assert _free_score(r, "x") == cost.AttemptCost(2 * 16384 + 81920, 96)
    plain = infer.infer_layouts(transpose_through(), cost_model="io-aware")
    assert plain.conversions == () and _free_score(plain, "x") == cost.AttemptCost(16384 + 262144, 64)
    last = r.explain("x")[-1]
    assert (last.rule, last.op, last.action, last.cost) == ("conversion", "parallel#1", "converted", conv.cost)
    assert str(conv).startswith("convert x for parallel#1: ") and "store_wavefronts=128" in str(conv)


class CostlyConversions(SharedMemoryAwareModel):
    """Shared-memory aware, but a conversion costs four times the wavefronts (a busy shared memory)."""

    def conversion_cost(self, src, dst, dtype, smem=None):
        c = super().conversion_cost(src, dst, dtype, smem)
        return Conversion(4 * c.store_wavefronts, 4 * c.load_wavefronts)


def test_costlier_conversion_reroots_instead():
    r = infer.infer_layouts(transpose_through(), cost_model=CostlyConversions())
    plain = infer.infer_layouts(transpose_through(), cost_model="io-aware")
    assert r.conversions == ()
    for name in ("x", "y"):
        assert r.layout_map[name].is_equal(plain.layout_map[name])
    # 4 x 640 wavefronts = 327,680 B + 32 KiB coalesced > 278,528 B of the best plain attempt
    assert _free_score(r, "x") == cost.AttemptCost(278528, 64)


def test_smem_aware_reroots_when_that_is_free():
    """The transposed store can be re-rooted at the store: coalesced with no conversion at all."""
    r = infer.infer_layouts(transposed_store(1), cost_model="smem-aware")
    io = infer.infer_layouts(transposed_store(1), cost_model=IOAwareModel())
    assert r.conversions == ()
    assert r.layout_map["x"].is_equal(io.layout_map["x"])
    assert _free_score(r, "x") == cost.AttemptCost(16384, 32)


def test_conversion_rescues_a_free_mode_conflict():
    """``y = x^T; x = y``: every root conflicts (TileLang 0.1.15 reports "no available layout
    found"); reading ``x`` through a converted view solves it, even under register-count, which
    charges the view's registers only."""
    p = infer.Program(threads=128)
    x = p.alloc_fragment("x", (32, 32), "float32")
    y = p.alloc_fragment("y", (32, 32), "float32")
    p.parallel((32, 32), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (j, i))])
    p.parallel((32, 32), writes=[(x, lambda i, j: (i, j))], reads=[(y, lambda i, j: (i, j))])
    r = infer.infer_layouts(p)
    (conv,) = r.conversions
    assert (conv.buffer, conv.op, conv.detail) == ("x", "parallel#0", None)
    assert conv.cost == cost.AttemptCost(0, 8)
    assert r.layout_map["x"].is_equal(r.layout_map["y"])
    assert str(conv.dst.forward_thread) == "_j % 4 * 32 + _i"
    smem = infer.infer_layouts(p, cost_model="smem-aware")
    (priced,) = smem.conversions
    assert (priced.detail.store_wavefronts, priced.detail.load_wavefronts) == (32, 128)
    assert priced.cost == cost.AttemptCost(160 * 128, 8)


def test_default_model_never_converts_a_solvable_program():
    """TileLang never converts: with plain attempts available the default model keeps them."""
    r = infer.infer_layouts(transpose_through())
    assert r.conversions == ()
    assert str(r.layout_map["y"].forward_thread) == "_j % 8 * 16 + _i // 4"


def test_row_max_read_as_a_column_bias_is_converted():
    """``s = reduce_sum(x, dim=1)`` then ``y[i, j] = x[i, j] + s[j]``: the row sums are replicated
    along rows, the loop needs them along columns.  TileLang 0.1.15 finds no layout (checked against
    it in a differential run); the default model converts ``s`` for the loop and nothing else."""
    p = infer.Program(threads=128)
    G = p.tensor("G", (256, 256), "float32")
    x = p.alloc_fragment("x", (32, 32), "float32")
    s = p.alloc_fragment("s", (32,), "float32")
    y = p.alloc_fragment("y", (32, 32), "float32")
    p.copy(G[0:32, 0:32], x)
    p.reduce(x, s, dim=1, kind="sum")
    loop = p.parallel((32, 32), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (i, j)),
                                                                         (s, lambda i, j: (j,))])
    p.copy(y, G[0:32, 0:32])
    r = infer.infer_layouts(p)
    (conv,) = r.conversions
    assert (conv.buffer, conv.op) == ("s", loop.name)
    assert conv.src.is_equal(r.layout_map["s"]) and not conv.dst.is_equal(conv.src)
    assert r.loop_layouts[loop].is_equal(r.layout_map["x"]) and r.layout_map["y"].is_equal(r.layout_map["x"])
    # the view holds every s[j] the loop's threads read: each thread finds its element
    t_loop = r.loop_layouts[loop].thread_table()[0]
    owners = conv.dst.thread_table()          # [replica, j]
    assert all(t_loop[i, j] in owners[:, j] for i in range(32) for j in range(32))


def test_codegen_lowers_a_conversion_through_shared_memory():
    """The NVIDIA lowering stages ``x`` through the tile the model priced (padded here): 8 vector stores,
    a barrier, 32 loads into ``x__conv``, which the transpose reads (numbers and wavefronts:
    tests/test_codegen_conversions.py)."""
    p = transpose_through()
    r = infer.infer_layouts(p, cost_model="smem-aware")
    k = codegen.lower(p, r)
    (stage,) = k.scoped("shared")
    assert (stage.name, stage.size, r.conversions[0].detail.staging) == ("x__stage1", 63 * 68 + 64, "padded")
    src = codegen.emit_cuda(p, r)
    assert src.count("__syncthreads();") == 1 and "x__conv[p] = x__stage1[" in src
