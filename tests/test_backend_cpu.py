"""Adding a target is one backend folder plus a registration: the scalar "cpu" backend of tests/backends_cpu."""

from __future__ import annotations

import pytest

from layoutkit import codegen, infer
from layoutkit.backends import get_backend
from layoutkit.errors import UnsupportedError
from layoutkit.infer import programs

from .backends_cpu import CpuBackend, register


@pytest.fixture(scope="module")
def cpu():
    return register()


@pytest.mark.parametrize("build", [programs.elementwise, programs.gemm_rowmax_bias, programs.tile_reduce])
def test_every_fragment_and_loop_on_one_thread(cpu, build):
    p = build(target="cpu")
    r = infer.infer_layouts(p)
    frags = r.fragments()
    assert frags and set(frags) == {n for n, b in p.buffers.items() if b.is_fragment}
    for name, frag in frags.items():
        assert frag.thread_extent == 1 and frag.thread_range == (0, 1), name
        assert frag.local_size == frag.size, name  # one thread holds every element
    loops = [op.name for op in p.ops if op.loop is not None]
    assert loops and all(r.loop_layouts[n].thread_extent == 1 for n in loops)


def test_other_targets_are_untouched(cpu):
    p = programs.gemm_rowmax_bias()
    frag = infer.infer_layouts(p).layout_map["C_local"]
    assert frag.thread_extent == 128 and frag.thread_range == (0, 128)


def test_the_facade_dispatches_to_it(cpu):
    assert isinstance(get_backend("cpu"), CpuBackend)
    p = programs.elementwise(target="cpu")
    with pytest.raises(UnsupportedError, match="no code generation for target 'cpu'"):
        codegen.lower(p, infer.infer_layouts(p))
