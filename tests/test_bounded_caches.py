"""A long-running compiler process keeps its memory bounded: every memo cache has a size limit, and the tables
keyed by target string forget past theirs.  (The process-level measurement, 5,000 distinct solves, is
``benchmarks/memory.py``; these tests check the bounds through the caches' sizes, never through timing.)"""

from __future__ import annotations

from layoutkit import caches, infer
from layoutkit.infer import target as target_module
from layoutkit.infer import tileop
from layoutkit.infer.library import TILE_OPS
from layoutkit.infer.programs import elementwise, tile_reduce


def test_every_registered_cache_has_a_size_limit():
    infer.infer_layouts(elementwise(bM=32, bN=32))  # registers the rule modules' caches
    limits = caches.limits()
    assert "layoutkit.infer.loops.loop_agrees" in limits
    assert [name for name, limit in limits.items() if limit is None] == []


def test_caches_stay_within_their_limits_over_distinct_programs():
    caches.clear_all()
    for k in range(12):
        infer.infer_layouts(tile_reduce(M=512 + 16 * k, N=512, bM=16, bN=32, dim=k % 2, threads=64))
        infer.infer_layouts(elementwise(M=512 + 16 * k, N=512, bM=16, bN=16, threads=64, dtype="float32"))
    sizes = caches.sizes()
    limits = caches.limits()
    assert sum(sizes.values()) > 0
    assert {name: n for name, n in sizes.items() if n > limits[name]} == {}
    caches.clear_all()
    assert sum(caches.sizes().values()) == 0


def test_target_resolutions_are_forgotten_past_their_limit(monkeypatch):
    monkeypatch.setattr(target_module, "RESOLVED_LIMIT", 8)
    monkeypatch.setattr(tileop, "RESOLVED_LIMIT", 8)
    for k in range(40):
        target = f"sm_{80 + k % 10}{'a' * (k // 10)}"
        assert target_module.get_target(target) is not None
        TILE_OPS.rule_is_local("copy", target)
        assert len(target_module._RESOLVED) <= 8  # the table's size is what is bounded
        if k >= 10:  # sm_80 .. sm_89 may be remembered from earlier solves; the first new string bounds the table
            assert len(TILE_OPS._chosen) <= 8
