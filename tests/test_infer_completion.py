"""A fragment read through an index that drops digits of the loop variables (the dequant access
``B_deq[i, j] = f(B_local[i, j // 2])``): its layout is completed from the loop layout with the
unused digits as replication, as TileLang 0.1.15's ``CompleteBufferFragment`` does (the TileLang
kernels of the same shapes are compared table for table in test_frontend_tilelang.py)."""

from __future__ import annotations

import numpy as np
import pytest

from layoutkit.algebra.shapes import placeholder
from layoutkit.errors import UnsupportedError
from layoutkit.fragment.fragment import Fragment
from layoutkit.infer import Program, infer_layouts
from layoutkit.infer.completion import invert_completion, unused_digits
from layoutkit.infer.ops import Region


def _dequant(bN: int, bK: int, pack_rows: int = 1, threads: int = 128) -> tuple[Program, str]:
    """The Program of ``tilelang_kernels.dequant_int4``: global -> shared -> fragment, unpacked in a
    loop (whose op name comes back too), stored."""
    p = Program(threads=threads)
    B = p.tensor("B", (256 // pack_rows, 128), "uint8")
    C = p.tensor("C", (256, 256), "float16")
    shared = p.alloc_shared("B_shared", (bN // pack_rows, bK // 2), "uint8")
    local = p.alloc_fragment("B_local", (bN // pack_rows, bK // 2), "uint8")
    deq = p.alloc_fragment("B_deq", (bN, bK), "float16")
    p.copy(Region(B, (0, 0), (bN // pack_rows, bK // 2)), shared)
    p.copy(shared, local)
    op = p.parallel((bN, bK), writes=[(deq, lambda i, j: (i, j))],
                    reads=[(local, lambda i, j: (i // pack_rows, j // 2))])
    p.copy(deq, Region(C, (0, 0), (bN, bK)))
    return p, op.name


def _owners_hold_every_read(loop: Fragment, buf: Fragment, index) -> bool:
    """Each loop point's thread owns (some replica of) the element it reads."""
    lt = loop.thread_table().reshape(loop.replicate_size, -1)
    bt = buf.thread_table().reshape(buf.replicate_size, -1)
    pts = np.indices(loop.input_shape).reshape(len(loop.input_shape), -1)
    flat = np.ravel_multi_index(tuple(index(*pts)), buf.input_shape)
    return bool(all(np.isin(lt[:, k], bt[:, flat[k]]).all() for k in range(pts.shape[1])))


def test_unused_digits_follow_tilelangs_order():
    i, j = placeholder(0, 16), placeholder(1, 64)
    assert unused_digits((i, j // 2), (16, 64)) == ((1, 1, 2),)
    assert unused_digits((i // 2, j // 2), (16, 64)) == ((0, 1, 2), (1, 1, 2))
    # a middle gap of j and the whole of i; higher digits of one variable first
    assert unused_digits((j % 4 + j // 16 * 4,), (16, 64)) == ((0, 1, 16), (1, 4, 4))
    assert unused_digits((j // 8 % 2, j % 2), (16, 64)) == ((0, 1, 16), (1, 16, 4), (1, 2, 4))
    assert unused_digits((i * 64 + j,), (16, 64)) == ()
    assert unused_digits((i * j,), (16, 64)) is None  # no digit sum
    assert unused_digits((j, j // 2), (16, 64)) is None  # overlapping digits


def test_dequant_access_gets_the_loop_layout_through_its_unused_digit():
    p, op = _dequant(64, 64)
    r = infer_layouts(p)
    local, loop = r.layout_map["B_local"], r.loop_layouts[op]
    assert str(local.forward_thread) == "_i * 2 + _j // 16" and local.replicate_size == 1
    assert _owners_hold_every_read(loop, local, lambda i, j: (i, j // 2))


@pytest.mark.parametrize("pack_rows, thread, replicas", [(1, "_i * 8 + _j * 2 + _rep", 2),
                                                         (2, "_i * 16 + _rep % 2 * 8 + _j * 2 + _rep // 2", 4)])
def test_dequant_access_replicates_where_the_unused_digit_picks_a_thread(pack_rows, thread, replicas):
    # TileLang 0.1.15 gives these tables (test_frontend_tilelang: dequant_int4_replicated / _packed_rows)
    p, op = _dequant(16, 8, pack_rows)
    r = infer_layouts(p)
    local, loop = r.layout_map["B_local"], r.loop_layouts[op]
    assert str(local.forward_thread) == thread and local.replicate_size == replicas
    assert local.prove_injective()
    assert _owners_hold_every_read(loop, local, lambda i, j: (i // pack_rows, j // 2))


def test_read_completion_two_replicas_cannot_hold_is_fully_replicated():
    # TileLang's issue #1729 shape: 1280 replicas of each element wrap around 256 threads, so some
    # thread would hold one element in two registers; read-only, so every thread holds the buffer
    i, j = placeholder(0, 2), placeholder(1, 2560)
    loop = Fragment.from_exprs((2, 2560), None, (i * 2560 + j) % 256)
    f = invert_completion(loop, (i, j // 1280), (2, 2), (2, 2560), False)
    assert f.is_fully_replicated() and f.thread_extent == 256


def test_bijective_access_is_inverted_without_replication():
    i, j = placeholder(0, 4), placeholder(1, 64)
    loop = Fragment.from_exprs((4, 64), None, j % 32 + i * 32, 2)
    f = invert_completion(loop, (i * 2 + j // 32, j % 32), (8, 32), (4, 64), False)
    # the loop's replica digit reads no thread: condensed away, as TileLang's CondenseReplicateVar does
    assert str(f.forward_thread) == "_i // 2 * 32 + _j" and f.replicate_size == 1


def test_access_that_misses_part_of_the_buffer_is_refused_by_name():
    i, j = placeholder(0, 16), placeholder(1, 16)
    loop = Fragment.from_exprs((16, 16), None, i * 8 + j // 2)
    with pytest.raises(UnsupportedError, match=r"cannot invert the access .* does not cover the buffer \(128, 2\)"):
        invert_completion(loop, (i * 8 + j // 2, j * 0), (128, 2), (16, 16), False)
