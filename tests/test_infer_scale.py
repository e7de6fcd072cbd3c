"""Free mode within one connected component: rule runs grow linearly on a chain of loops, and skipping
the roots :mod:`layoutkit.infer.settle` proves redundant changes no result."""

from __future__ import annotations

import random

import pytest

from layoutkit import infer
from layoutkit.errors import ProofBudgetError
from layoutkit.infer import engine, free
from layoutkit.infer.engine import solve
from layoutkit.infer.rules import EMPTY, Conflict


def _ident(i, j):
    return (i, j)


def _chain(n: int, shape=(64, 64), dtype="float32") -> infer.Program:
    p = infer.Program(threads=128, target="sm_80")
    frags = [p.alloc_fragment(f"f{k}", shape, dtype) for k in range(n + 1)]
    for a, b in zip(frags, frags[1:]):
        p.parallel(shape, writes=[(b, _ident)], reads=[(a, _ident)])
    return p


def _every_root(monkeypatch) -> None:
    """Free mode as before the proof: every root of every component is tried."""
    monkeypatch.setattr(free, "covered_roots", lambda *args: frozenset())


def test_a_150_op_chain_runs_linearly_many_rules():
    p = _chain(150)
    ctx = solve(p)
    # strict + common (2 runs an op), one attempt (2), five views an op: 9 runs an op; every root: ~300
    assert ctx.counts["rule runs"] <= 10 * len(p.ops), ctx.counts
    first = ctx.layouts["f0"]
    assert all(ctx.layouts[f"f{k}"] == first for k in range(151))


def test_the_chain_count_is_able_to_fail(monkeypatch):
    _every_root(monkeypatch)
    p = _chain(30)
    assert solve(p).counts["rule runs"] > 10 * len(p.ops)


def test_the_chain_matches_trying_every_root(monkeypatch):
    p = _chain(12, (100, 7))
    got = solve(p)
    _every_root(monkeypatch)
    want = solve(p)
    assert dict(got.layouts) == dict(want.layouts) and dict(got.loops) == dict(want.loops)
    assert dict(got.predicates) == dict(want.predicates) and dict(got.derivations) == dict(want.derivations)


def _two_plans(n: int) -> infer.Program:
    """A chain whose first half is float16 and second half float32: roots in either half plan differently
    (vector widths 8 and 4), so only the roots of one half cover one another."""
    p = infer.Program(threads=128, target="sm_80")
    frags = [p.alloc_fragment(f"f{k}", (64, 64), "float16" if k < n // 2 else "float32") for k in range(n + 1)]
    for a, b in zip(frags, frags[1:]):
        p.parallel((64, 64), writes=[(b, _ident)], reads=[(a, _ident)])
    return p


def test_a_chain_with_two_plans_runs_linearly_many_rules(monkeypatch):
    p = _two_plans(90)  # tried from every root, within free mode's budget (FREE_RULE_RUNS)
    got = solve(p)
    assert got.counts["rule runs"] <= 20 * len(p.ops), got.counts
    _every_root(monkeypatch)
    want = solve(p)
    assert want.counts["rule runs"] > 50 * len(p.ops)
    assert dict(got.layouts) == dict(want.layouts) and dict(got.loops) == dict(want.loops)
    assert dict(got.derivations) == dict(want.derivations)


def test_converted_attempts_match_trying_every_root(monkeypatch):
    """A model that prices conversions tries every edge converted; the covered roots of those attempts
    are skipped too (each edge then costs one attempt and a check, not one attempt per root)."""
    p = _chain(16)
    got = solve(p, cost_model="smem-aware")
    _every_root(monkeypatch)
    want = solve(p, cost_model="smem-aware")
    assert got.counts["rule runs"] * 4 < want.counts["rule runs"], (got.counts, want.counts)
    assert dict(got.layouts) == dict(want.layouts) and dict(got.loops) == dict(want.loops)
    assert [str(c) for c in got.conversions] == [str(c) for c in want.conversions]
    assert dict(got.derivations) == dict(want.derivations)


def test_a_rule_not_registered_local_is_run_from_every_root():
    def rule(op, ctx, level):  # proposes nothing, but free mode cannot know what it reads
        return EMPTY

    infer.register_rule("scale_test_opaque", "*", rule)
    p = _chain(20)
    p.ops.append(infer.Op("scale_test_opaque", 10_000, {}, None, (), ("f0",)))
    runs = solve(p).counts["rule runs"]
    assert runs > 20 * len(p.ops), runs


def _random_component(seed: int) -> infer.Program:
    """One connected component of loops, fills, reductions and copies over fragments of one tile,
    read as is, transposed or broadcast, in mixed dtypes (so roots may plan differently)."""
    rng = random.Random(seed)
    p = infer.Program(threads=rng.choice([64, 128, 256]), target="sm_80")
    M, N = rng.choice([(16, 16), (32, 32), (64, 64), (32, 64), (8, 128), (12, 20), (100, 7)])
    X = p.tensor("X", (1024, 1024), "float16")
    tiles = [(p.alloc_fragment("t0", (M, N), "float32"), False)]
    vecs: list = []
    for k in range(rng.randint(2, 10)):
        kind = rng.choice(["loop", "loop", "loop", "fill", "reduce", "copy", "bcast"])
        src, tr = rng.choice(tiles)
        reads = [(src, (lambda i, j: (j, i)) if tr else _ident)]
        if kind == "loop":
            transposed = rng.random() < 0.2
            dst = p.alloc_fragment(f"t{k + 1}", (N, M) if transposed else (M, N), rng.choice(["float16", "float32"]))
            tiles.append((dst, transposed))
            p.parallel((M, N), writes=[(dst, (lambda i, j: (j, i)) if transposed else _ident)], reads=reads)
        elif kind == "fill":
            p.fill(src, 0.0)
        elif kind == "reduce":
            dim = rng.choice([0, 1])
            v = p.alloc_fragment(f"v{k}", (src.shape[1 - dim],), "float32")
            vecs.append((v, (1 - dim) if not tr else dim))
            p.reduce(src, v, dim=dim, kind="sum")
        elif kind == "copy":
            p.copy(X[0:src.shape[0], 0:src.shape[1]], src)
        elif vecs:
            v, axis = rng.choice(vecs)
            vec = (v, (lambda i, j: (i,)) if axis == 0 else (lambda i, j: (j,)))
            p.parallel((M, N), writes=reads, reads=[*reads, vec])
    return p


def _snapshot(seed: int, model: str):
    try:
        ctx = solve(_random_component(seed), cost_model=model)
    except Exception as err:  # noqa: BLE001  (both ways must fail alike)
        return type(err).__name__, str(err)
    return (dict(ctx.layouts), dict(ctx.loops), {k: str(v) for k, v in ctx.predicates.items()},
            {k: [str(d) for d in v] for k, v in ctx.derivations.items()}, [str(c) for c in ctx.conversions])


@pytest.mark.parametrize("model,count", [("register-count", 60), ("smem-aware", 25)])
def test_skipping_covered_roots_changes_no_result(monkeypatch, model, count):
    seeds = range(count)
    got = [_snapshot(seed, model) for seed in seeds]
    _every_root(monkeypatch)
    want = [_snapshot(seed, model) for seed in seeds]
    for seed, g, w in zip(seeds, got, want):
        assert g == w, seed


def test_every_covered_root_ends_where_its_cover_did(monkeypatch):
    """With a check after every finished attempt, each root a check covers is run anyway: it raises
    nothing and ends with the covering attempt's layouts, loop layouts and views."""
    covered_roots = free.covered_roots
    verified = []

    def verify(base, trial, comp, fallback):
        covered = covered_roots(base, trial, comp, fallback)
        users: dict = {}
        for op in base.program.ops:
            for b in op.buffers:
                users.setdefault(b, []).append(op)
        for root in (op for op in comp if op.uid in covered):
            t = free.attempt(base, comp, root, {op.uid for op in comp}, users, trial.convert, fallback)
            assert dict(t.written("layouts")) == dict(trial.written("layouts")), root.name
            assert dict(t.written("loops")) == dict(trial.written("loops")), root.name
            assert t.views == trial.views, root.name
            verified.append(root.name)
        return covered

    monkeypatch.setattr(free, "covered_roots", verify)
    monkeypatch.setattr(free, "check_runs", lambda comp: 0)
    for seed in range(40):
        for model in ("register-count", "smem-aware"):
            try:
                solve(_random_component(seed), cost_model=model)
            except Conflict:
                pass
    assert len(verified) > 100


def _opaque_chain(n: int) -> infer.Program:
    """A chain of ``n`` loops and one op whose rule free mode cannot prove local: every root is run."""
    infer.register_rule("scale_test_opaque", "*", lambda op, ctx, level: EMPTY)
    p = _chain(n)
    p.ops.append(infer.Op("scale_test_opaque", 10_000, {}, None, (), ("f0",)))
    return p


def _free_runs(monkeypatch, p: infer.Program) -> int:
    """The rule runs free mode spends on ``p`` (its one component)."""
    spent = []
    inner = engine.free_component

    def measured(ctx, comp, model, users):
        start = ctx.counts["rule runs"]
        inner(ctx, comp, model, users)
        spent.append(ctx.counts["rule runs"] - start)

    with monkeypatch.context() as m:
        m.setattr(engine, "free_component", measured)
        solve(p)
    assert len(spent) == 1
    return spent[0]


def test_free_mode_stops_typed_past_its_rule_run_budget(monkeypatch):
    p = _opaque_chain(12)
    runs = _free_runs(monkeypatch, p)
    assert runs > 12 * 12  # every root runs every op
    monkeypatch.setattr(free, "FREE_RULE_RUNS", runs)  # just within: solves as without a budget
    assert solve(p).layouts["f0"] == solve(_chain(12)).layouts["f0"]
    monkeypatch.setattr(free, "FREE_RULE_RUNS", runs - 1)
    refusal = (r"free-mode inference over a component of 13 ops \(parallel#0, parallel#1, scale_test_opaque#10000, "
               r"parallel#2, \.\.\.\) stopped undecided after \d+ rule runs in 13 of its 338 possible attempts .* past "
               r"its budget of \d+ \(FREE_RULE_RUNS\); annotate the layout of one of its fragments "
               r"\(Program.annotate_layout, e.g. f0\)")
    with pytest.raises(ProofBudgetError, match=refusal) as err:
        infer.infer_layouts(p)
    assert err.value.limit == runs - 1 and err.value.found > runs - 1


def test_the_free_mode_budget_is_far_above_a_long_chain_tried_from_every_root(monkeypatch):
    _every_root(monkeypatch)
    runs = _free_runs(monkeypatch, _chain(40))
    assert 40 * 40 < runs < free.FREE_RULE_RUNS / 4
