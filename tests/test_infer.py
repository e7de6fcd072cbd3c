"""Layout inference: program IR, validation, JSON, the engine on the reference kernels, conflicts,
guards, explain, registries."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import infer
from layoutkit.infer import RuleConflict, engine, programs
from layoutkit.infer.validate import OpValidationError


def _same_tables(ours: lk.Fragment, want: lk.Fragment) -> None:
    assert ours.input_shape == want.input_shape
    assert ours.replicate_size == want.replicate_size
    assert np.array_equal(ours.thread_table(), want.thread_table())
    assert np.array_equal(ours.index_table(), want.index_table())


# ---- program IR, validation, JSON -------------------------------------------------------------

def test_pipelined_adds_stage_dim_only_to_shared_written_inside():
    p = programs.gemm(bM=64, bN=64, bK=32)
    assert p.shape_of("A_shared") == (2, 64, 32)
    assert p.shape_of("B_shared") == (2, 32, 64)
    assert p.shape_of("C_local") == (64, 64)


@pytest.mark.parametrize("build", [programs.gemm, programs.elementwise, programs.gemm_rowmax_bias])
def test_json_round_trip(build):
    p = build()
    q = infer.Program.from_json(p.to_json())
    assert q.to_json() == p.to_json()
    a, b = infer.infer_layouts(p), infer.infer_layouts(q)
    assert set(a.layout_map) == set(b.layout_map)
    for k in a.layout_map:
        assert a.layout_map[k].is_equal(b.layout_map[k])


def test_json_annotations_round_trip():
    p = infer.Program(threads=32)
    x = p.alloc_fragment("x", (8, 4), "float32")
    frag = lk.Fragment([8, 4], forward_thread_fn=lambda i, j: i * 4 + j, forward_index_fn=lambda i, j: 0)
    p.annotate_layout({x: frag})
    q = infer.Program.from_json(p.to_json())
    assert q.annotations["x"].is_equal(p.annotations["x"])


def test_from_json_rejects_code():
    p = infer.Program(threads=32)
    x = p.alloc_fragment("x", (8,), "float32")
    p.parallel((8,), writes=[(x, lambda i: (i,))])
    text = p.to_json().replace('"_i"', '"__import__(\'os\')"')
    with pytest.raises(lk.LayoutError):
        infer.Program.from_json(text)


def test_copy_validation():
    p = infer.Program()
    A = p.tensor("A", (128, 128), "float16")
    s = p.alloc_shared("s", (32, 32), "float16")
    f = p.alloc_fragment("f", (32, 16), "float32")
    op = p.copy(A[32, 64], s)                       # start point completed from the other side
    assert op.args["src_region"] == ((32, 64), (32, 32))
    assert p.copy(s, f if False else p.alloc_fragment("g", (32, 32), "float32")).args["cast"]
    with pytest.raises(OpValidationError) as e:
        p.copy(s, f)                                # whole buffers of different shapes
    assert e.value.op.startswith("copy#") and e.value.buffer == "f"
    with pytest.raises(OpValidationError):
        p.copy(A[120, 0], s)                        # out of bounds
    with pytest.raises(OpValidationError):
        p.copy(A[0:32, 0:16], s[0:16, 0:32])        # extents differ


def test_gemm_and_reduce_validation():
    p = infer.Program()
    a = p.alloc_shared("a", (64, 32), "float16")
    b = p.alloc_shared("b", (64, 32), "float16")
    c = p.alloc_fragment("c", (64, 64), "float32")
    p.gemm(a, b, c, transpose_B=True)               # B [N, K]
    with pytest.raises(OpValidationError, match="K differs"):
        p.gemm(a, b, c)
    r = p.alloc_fragment("r", (64,), "float32")
    assert p.reduce(c, r, dim=-1, kind="max").args["dim"] == 1
    with pytest.raises(OpValidationError):
        p.reduce(c, r, dim=1, kind="median")
    with pytest.raises(OpValidationError):
        p.reduce(c, p.alloc_fragment("r2", (32,), "float32"), dim=1)
    assert p.reduce(c, p.alloc_fragment("r3", (64, 1), "float32"), dim=1, clear=False).args["clear"] is False


def test_atomic_add_forms():
    p = infer.Program()
    g = p.tensor("g", (64,), "float32")
    f = p.alloc_fragment("f", (64,), "float32")
    p.atomic_add(g[3], 1.0, return_prev=True)       # scalar form may return the previous value
    p.atomic_add(g[0:64], f)
    with pytest.raises(OpValidationError, match="tile-region"):
        p.atomic_add(g[0:64], f, return_prev=True)


def test_parallel_index_validation():
    p = infer.Program()
    x = p.alloc_fragment("x", (8, 8), "float32")
    with pytest.raises(OpValidationError):
        p.parallel((8, 8), writes=[(x, lambda i, j: (i + 1, j))])
    with pytest.raises(OpValidationError):
        p.parallel((8, 8), writes=[(x, lambda i, j: (i,))])


# ---- the engine on the reference kernels ---------------------------------------------------------

def test_gemm_bias_rowmax_matches_reference_section_4():
    r = infer.infer_layouts(programs.gemm_rowmax_bias(bM=64, bN=64, bK=32))
    bias = lk.Fragment([64], forward_thread_fn=lambda i, rep: i // 32 * 64 + rep % 2 * 32 + rep // 2 * 4 + i % 8 // 2,
                       replicate=16, forward_index_fn=lambda i: i % 32 // 8 * 2 + i % 2)
    row = lk.Fragment([64], forward_thread_fn=lambda i, rep: rep % 2 * 64 + i // 32 * 32 + i % 8 * 4 + rep // 2,
                      replicate=8, forward_index_fn=lambda i: i % 32 // 8)
    _same_tables(r.layout_map["bias_frag"], bias)
    _same_tables(r.layout_map["row_max"], row)
    assert r.layout_map["row_max"].thread_range == (0, 128)


def test_elementwise_free_mode_rule():
    r = infer.infer_layouts(programs.elementwise(bM=64, bN=64))
    want = lk.Fragment([64, 64], forward_thread_fn=lambda i, j: i % 16 * 8 + j // 8,
                       forward_index_fn=lambda i, j: i // 16 * 8 + j % 8)
    for name in ("A_frag", "B_frag"):
        _same_tables(r.layout_map[name], want)
    assert len(r.loop_layouts) == 3


def test_sm90_consumer_thread_range():
    r = infer.infer_layouts(programs.gemm(bM=64, bN=64, bK=32, target="sm_90"))
    assert r.layout_map["C_local"].thread_range == (128, 128)


@pytest.mark.parametrize("policy", ["square", "fullrow", "fullcol"])
@pytest.mark.parametrize("tile,threads", [(32, 128), (64, 128), (128, 256)])
def test_gemm_variants_solve(policy, tile, threads):
    r = infer.infer_layouts(programs.gemm(bM=tile, bN=tile, bK=32, threads=threads, policy=policy))
    c = r.layout_map["C_local"]
    assert c.thread_extent == threads and c.prove_injective()
    assert r.layout_map["A_shared"].input_shape == (2, tile, 32)


def test_int8_transpose_b_and_sm70():
    r = infer.infer_layouts(programs.gemm(bM=64, bN=64, bK=64, dtype="int8", accum_dtype="int32", transpose_B=True))
    assert r.layout_map["B_shared"].input_shape == (2, 64, 64)
    r = infer.infer_layouts(programs.gemm(bM=64, bN=64, bK=32, target="sm_70"))
    assert r.layout_map["C_local"].prove_injective()


def test_explain_chain():
    r = infer.infer_layouts(programs.gemm_rowmax_bias())
    steps = r.explain("C_local")
    assert steps[0].rule == "gemm" and steps[0].level == "strict" and steps[0].op.startswith("gemm#")
    assert r.explain("bias_frag")[0].op.startswith("parallel#")
    assert "gemm rule" in str(steps[0])


# ---- guards for partial tiles ------------------------------------------------------------------

def test_ragged_parallel_loop_gets_guard():
    p = infer.Program(threads=128)
    x = p.alloc_fragment("x", (100, 7), "float32")
    X = p.tensor("X", (100, 7), "float32")
    p.copy(X[0:100, 0:7], x)
    loop = p.parallel((100, 7), writes=[(x, lambda i, j: (i, j))], reads=[(x, lambda i, j: (i, j))])
    r = infer.infer_layouts(p)
    f = r.layout_map["x"]
    assert f.prove_injective()
    assert r.predicates[loop] == "_thread < 100"
    assert r.loop_layouts[loop].is_equal(f)


def test_reduction_width_not_dividing_threads():
    p = infer.Program(threads=128)
    x = p.alloc_fragment("x", (100, 7), "float32")
    y = p.alloc_fragment("y", (100,), "float32")
    p.fill(x, 1.0)
    red = p.reduce(x, y, dim=1, kind="sum")
    r = infer.infer_layouts(p)
    assert r.layout_map["y"].prove_injective()
    assert red.name in r.predicates
    # each row lives in one thread: the reduction is thread-local
    t = r.layout_map["x"].thread_table()
    assert (t == t[..., :1]).all()


def test_straddling_rows_are_dealt_whole():
    p = infer.Program(threads=128)
    x = p.alloc_fragment("x", (128, 7), "float32")
    y = p.alloc_fragment("y", (128,), "float32")
    p.fill(x, 1.0)
    p.reduce(x, y, dim=1, kind="max")
    r = infer.infer_layouts(p)
    assert r.layout_map["y"].prove_injective() and r.predicates == {}


# ---- conflicts ---------------------------------------------------------------------------------

def test_conflict_has_minimal_constraints():
    p = infer.Program(threads=128)
    a = p.alloc_fragment("a", (32, 32), "float32")
    b = p.alloc_fragment("b", (32, 32), "float32")
    As = p.alloc_shared("As", (32, 32), "float16")
    Bs = p.alloc_shared("Bs", (32, 32), "float16")
    p.fill(b, 0)
    p.gemm(As, Bs, a)
    p.gemm(As, Bs, b)
    p.annotate_layout({b: lk.make_fully_replicated_fragment((32, 32), 128)})
    p.parallel((32, 32), writes=[(a, lambda i, j: (i, j))], reads=[(b, lambda i, j: (j, i))])
    with pytest.raises(lk.LayoutConflictError) as e:
        infer.infer_layouts(p)
    err = e.value
    assert err.buffer == "b"
    assert set(err.constraints) == {"gemm#2", "annotate_layout(b)"}
    # minimality: the set fails on its own, and dropping any one of it makes the rest solvable
    ops = [o for o in p.ops if o.name in err.constraints]
    with pytest.raises(lk.LayoutError):
        infer.solve(p, ops, p.annotations)
    infer.solve(p, ops, {})
    infer.solve(p, [o for o in ops if o.name != "gemm#2"], p.annotations)


def test_loop_conflict_between_two_gemm_accumulators():
    p = infer.Program(threads=128)
    As = p.alloc_shared("As", (64, 32), "float16")
    Bs = p.alloc_shared("Bs", (32, 64), "float16")
    Bt = p.alloc_shared("Bt", (32, 32), "float16")
    c1 = p.alloc_fragment("c1", (64, 64), "float32")
    c2 = p.alloc_fragment("c2", (64, 32), "float32")
    p.gemm(As, Bs, c1)
    p.gemm(As, Bt, c2, policy="fullrow")
    p.parallel((64, 32), writes=[(c1, lambda i, j: (i, j * 2))], reads=[(c2, lambda i, j: (i, j))])
    with pytest.raises(lk.LayoutConflictError) as e:
        infer.infer_layouts(p)
    assert len(e.value.constraints) == 3


def _conflict_before_a_chain(n: int) -> infer.Program:
    """Two GEMMs that lay their accumulator out differently, then a chain of ``n`` loops reading it."""
    p = infer.Program(threads=128)
    A, B = p.alloc_shared("A", (64, 32), "float16"), p.alloc_shared("B", (32, 64), "float16")
    frags = [p.alloc_fragment("C", (64, 64), "float32")] + [p.alloc_fragment(f"f{k}", (64, 64), "float32")
                                                             for k in range(n)]
    p.gemm(A, B, frags[0], policy="square")
    p.gemm(A, B, frags[0], policy="fullrow")
    for a, b in zip(frags, frags[1:]):
        p.parallel((64, 64), writes=[(b, lambda i, j: (i, j))], reads=[(a, lambda i, j: (i, j))])
    return p


def test_the_conflict_explanation_stops_at_its_work_budget(monkeypatch):
    p = _conflict_before_a_chain(12)
    with pytest.raises(lk.LayoutConflictError, match=r"minimal conflicting constraints: gemm#0, gemm#1$"):
        infer.infer_layouts(p)
    # each re-solve costs its ops (about 13) plus its rule runs: a budget of 100 stops after a few of them
    monkeypatch.setattr(engine, "EXPLAIN_WORK", 100)
    with pytest.raises(lk.LayoutConflictError, match=r"conflicting constraints \(not minimised: past 200 constraints "
                       r"or 100 rule runs and ops of re-solving \(EXPLAIN_WORK\), the deletion search stops\): "
                       r"gemm#0, gemm#1, parallel#4, .*parallel#13$") as e:
        infer.infer_layouts(p)
    kept = [o for o in p.ops if o.name in e.value.constraints]
    assert {"gemm#0", "gemm#1"} < set(e.value.constraints) and len(kept) < len(p.ops)
    with pytest.raises(lk.LayoutError, match="Get different layout for C"):  # what it reports still conflicts
        infer.solve(p, kept, {})


# ---- registries --------------------------------------------------------------------------------

def test_cost_model_registry():
    calls = []

    class Flat:
        def cost(self, layouts, program):
            calls.append(len(layouts))
            return infer.AttemptCost(0, 0)

    infer.register_cost_model("flat-test", Flat)
    infer.infer_layouts(programs.elementwise(), cost_model="flat-test")
    assert calls
    with pytest.raises(lk.UnsupportedError):
        infer.infer_layouts(programs.elementwise(), cost_model="nope")


def test_rule_registry_is_target_keyed():
    with pytest.raises(lk.UnsupportedError):
        infer.get_rule("gemm", "tpu")
    assert infer.get_rule("gemm", "sm_80") is infer.get_rule("gemm", "sm_90")
    assert infer.get_rule("gemm", "ascend") is not infer.get_rule("gemm", "sm_80")


def test_alias_gets_layout():
    p = infer.Program(threads=128)
    x = p.alloc_fragment("x", (64, 64), "float16")
    v = p.alias("x_view", x)
    p.fill(x, 0)
    r = infer.infer_layouts(p)
    assert r.layout_map[v].is_equal(r.layout_map[x])
    assert r.explain("x_view")[0].rule == "alias"


def test_alias_rescales_by_element_width():
    p = programs.gemm(bM=32, bN=32, bK=32)
    v = p.alias("A_words", p.buffers["A_shared"], shape=(32, 16), dtype="float32")
    assert p.shape_of(v) == (2, 32, 16)                 # the alias shares the stage dim
    r = infer.infer_layouts(p)
    half = r.layout_map["A_shared"].table()[..., -1]
    word = r.layout_map[v].table()[..., -1]
    assert np.array_equal(word, half[..., ::2] // 2)    # fp32 word k holds fp16 elements 2k, 2k+1


def test_from_record_ignores_unknown_kernel_fields():
    p = programs.from_record({"kernel": "elementwise", "M": 256, "N": 256, "block_M": 32, "block_N": 32,
                             "threads": 128, "dtype": "float16", "accum_dtype": "float32"}, {"arch": "sm_80"})
    assert p.buffers["A_frag"].shape == (32, 32)


def test_floating_fragment_fully_replicated():
    p = infer.Program(threads=64)
    p.alloc_fragment("lonely", (4,), "float32")
    f = infer.infer_layouts(p).layout_map["lonely"]
    assert f.is_fully_replicated() and f.replicate_size == 64


def _context(p: infer.Program):
    from layoutkit.infer.engine import thread_range
    from layoutkit.infer.state import Context

    return Context(p, thread_range(p))


def test_containment_upgrade_and_swizzle_merge():
    from layoutkit.targets import nv

    p = infer.Program(threads=128)
    f = p.alloc_fragment("f", (8, 16), "float32")
    s = p.alloc_shared("s", (16, 64), "float16")
    ctx = _context(p)
    small = lk.Fragment([8, 16], forward_thread_fn=lambda i, j: i * 4 + j // 4, forward_index_fn=lambda i, j: j % 4)
    ctx.commit(f.name, small, "op#0", infer.COMMON, "test")
    wide = small.replicate(2)
    assert ctx.commit(f.name, wide, "op#1", infer.COMMON, "test")
    assert ctx.layouts["f"] is wide and ctx.derivations["f"][-1].action == "widened"
    full = nv.make_full_bank_swizzled_layout((16, 64), "float16")
    quarter = nv.make_quarter_bank_swizzled_layout((16, 64), "float16")
    ctx.commit(s.name, full, "op#2", infer.COMMON, "test")
    assert ctx.commit(s.name, quarter, "op#3", infer.COMMON, "test")
    assert ctx.layouts["s"].is_equal(quarter)
    assert not ctx.commit(s.name, full, "op#4", infer.COMMON, "test")     # merging only downgrades


def test_transpose_op_layouts():
    p = infer.Program(threads=128)
    a = p.alloc_fragment("a", (32, 64), "float32")
    b = p.alloc_fragment("b", (64, 32), "float32")
    p.fill(a, 0.0)
    p.transpose(a, b)
    r = infer.infer_layouts(p)
    ta = r.layout_map["a"].thread_table()[0]
    tb = r.layout_map["b"].thread_table()[0]
    assert np.array_equal(ta, tb.T)                      # b[j, i] lives with a[i, j]


def test_alias_layout_reaches_the_views_users_during_inference():
    """A view of a GEMM accumulator gets the accumulator's layout when the GEMM commits it (as
    TileLang propagates aliases on every commit), so a loop over the view follows the MMA layout."""
    p = infer.Program(threads=128)
    As = p.alloc_shared("As", (64, 32), "float16")
    Bs = p.alloc_shared("Bs", (32, 64), "float16")
    c = p.alloc_fragment("c", (64, 64), "float32")
    y = p.alloc_fragment("y", (64, 64), "float32")
    view = p.alias("c_view", c)
    p.gemm(As, Bs, c)
    loop = p.parallel((64, 64), writes=[(y, lambda i, j: (i, j))], reads=[(view, lambda i, j: (i, j))])
    r = infer.infer_layouts(p)
    assert r.layout_map[view].is_equal(r.layout_map[c])
    assert r.loop_layouts[loop].is_equal(r.layout_map[c]) and r.layout_map[y].is_equal(r.layout_map[c])
    assert r.explain(view)[0].rule == "alias" and r.explain(view)[0].level == "strict"


def test_bijective_reshaping_access_is_inverted():
    """``x[i * 2 + j // 32, j % 32]`` maps the (4, 64) loop one-to-one onto x (8, 32): x follows the
    loop point each element comes from (TileLang's bijective ``CompleteBufferFragment`` path)."""
    p = infer.Program(threads=128)
    G = p.tensor("G", (4, 64), "float32")
    y = p.alloc_fragment("y", (4, 64), "float32")
    x = p.alloc_fragment("x", (8, 32), "float32")
    p.copy(G[0:4, 0:64], y)
    p.parallel((4, 64), writes=[(x, lambda i, j: (i * 2 + j // 32, j % 32))], reads=[(y, lambda i, j: (i, j))])
    r = infer.infer_layouts(p)
    ty, tx = r.layout_map["y"].thread_table()[0], r.layout_map["x"].thread_table()[0]
    i, j = np.indices((4, 64))
    assert np.array_equal(tx[i * 2 + j // 32, j % 32], ty)
    assert r.layout_map["x"].prove_injective()


def test_ragged_rows_go_to_threads_that_divide_them():
    """200 x 7 on 128 threads (TileLang finds no layout): 100 threads take two whole rows each, so no
    register slot is empty and the layout lowers as an exact partition; the rest are guarded off."""
    p = infer.Program(threads=128)
    X = p.tensor("X", (200, 7), "float32")
    x = p.alloc_fragment("x", (200, 7), "float32")
    p.copy(X[0:200, 0:7], x)
    loop = p.parallel((200, 7), writes=[(x, lambda i, j: (i, j))], reads=[(x, lambda i, j: (i, j))])
    r = infer.infer_layouts(p)
    f = r.layout_map["x"]
    assert (f.thread_extent, f.local_size) == (100, 14) and f.prove_injective()
    assert f.thread_extent * f.local_size == 200 * 7
    assert r.predicates[loop] == "_thread < 100"
    t = f.thread_table()[0]
    assert (t == t[:, :1]).all()                       # a row stays in one thread


# ---- a transpose feeding a reduction: reduced layouts TileLang cannot invert -------------------

def test_reduced_layout_of_a_mixed_thread_map_puts_two_rows_on_one_register():
    """The transpose loop planned first gives ``y`` the thread ``(_i * 48 + _j) % 128``; reducing
    along ``i`` turns ``i`` into replicas that wrap around the 128 threads, so rows 0 and 32 share
    thread 0's only register: no inverse, so TileLang's containment proofs throw."""
    from layoutkit.infer import loops, reduce

    y = lk.Fragment([16, 48], forward_thread_fn=lambda i, j, rep: (i * 48 + j) % 128,
                    forward_index_fn=lambda i, j: ((i * 48 + j) // 128,))
    red = reduce.reducer_layout(y, 0, (48,))
    assert (red.replicate_size, str(red.forward_thread)) == (16, "(_rep * 48 + _i) % 128")
    assert not loops.has_inverse(red)
    assert red.prove_injective().witness == {"collision": (((0,), 0), ((32,), 2), (0, 0))}
    # a fully replicated fragment needs no inverse (TileLang returns before inverting it)
    assert loops.has_inverse(lk.Fragment([48], forward_thread_fn=lambda i, rep: rep, replicate=128))
    with pytest.raises(RuleConflict, match="has no inverse"):
        loops.require_inverse(red, "copy#3", "r", "fragment r")


def test_transpose_reduce_discards_the_root_whose_reduced_layout_has_no_inverse():
    """Rooted at the transpose loop, the attempt scores 2 registers fewer but reduces into a layout
    without inverse (above); TileLang discards it and keeps the copy-rooted attempt, as we do now
    (the whole tables are on record: fragment_transpose_reduce/sm_80/16x48_t128/dim0_sum)."""
    res = infer.infer_layouts(programs.fragment_transpose_reduce(M=960, bM=16, bN=48, dim=0, threads=128))
    r, y = res.layout_map["r"], res.layout_map["y"]
    assert str(y.forward_thread) == "_j % 16 * 8 + _i // 2"
    assert (r.replicate_size, str(r.forward_thread), [str(e) for e in r.forward_index]) == (
        8, "_i % 16 * 8 + _rep", ["_i // 16"])
    assert r.prove_injective()


TILELANG_ON_24x40_T64 = "Check failed: (has_best) is false: no available layout found"
"""TileLang 0.1.15's answer for fragment_transpose_reduce(bM=24, bN=40, dim=1, threads=64)."""


@pytest.mark.parametrize("bM,bN,dim,threads", [(24, 40, 1, 64), (40, 24, 0, 64), (48, 24, 1, 128)])
def test_transpose_reduce_without_an_invertible_reduced_layout_indexes_the_rows_row_major(bM, bN, dim, threads):
    """Every TileLang-like attempt reduces into (or stores from) a layout with two elements on one
    register, so TileLang finds no layout (``TILELANG_ON_24x40_T64``; the same for the other two
    shapes).  The attempts beyond TileLang give each row sum its own register instead: the replicas
    keep TileLang's threads, and every fragment is injective."""
    p = programs.fragment_transpose_reduce(M=960, bM=bM, bN=bN, dim=dim, threads=threads)
    res = infer.infer_layouts(p)
    r = res.layout_map["r"]
    width = bN if dim == 1 else bM
    assert str(r.forward_thread) == f"(_i * {width} + _rep) % {threads}"
    assert [str(e) for e in r.forward_index] == ["_i"] and r.replicate_size == width
    assert all(f.prove_injective() for f in res.fragments().values())


def test_reduce_into_a_laid_out_destination_needs_every_holder_filled():
    # TileLang 0.1.15 (ProveFragmentContains(orig_dst, reducer)) finds no layout for this kernel: the
    # reduction leaves each row sum in the 16 threads of its row, but y's annotation has all 128 threads
    # hold every element, so 112 of them would read a value nobody wrote.
    def program(annotate: bool):
        p = infer.Program(threads=128, target="sm_80")
        A = p.tensor("A", (64, 64), "float32")
        R = p.tensor("R", (64,), "float32")
        x = p.alloc_fragment("x", (64, 64), "float32")
        y = p.alloc_fragment("y", (64,), "float32")
        if annotate:
            p.annotate_layout({y: lk.make_fully_replicated_fragment((64,), 128)})
        p.copy(A[0:64, 0:64], x)
        p.reduce(x, y, dim=1, kind="sum")
        p.copy(y, R[0:64])
        return p

    y = infer.infer_layouts(program(False)).layout_map["y"]
    assert (str(y.forward_thread), y.replicate_size) == ("_i % 8 * 16 + _rep", 16)   # equal to TileLang's
    with pytest.raises(lk.LayoutConflictError, match=r"reduce#\d+: y's layout .* replicate: 128, .* puts elements in "
                                                     r"threads the reduction layout"):
        infer.infer_layouts(program(True))
