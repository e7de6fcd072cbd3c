"""``annotate_layout`` refuses, naming the buffer, a layout that cannot be the buffer's: another input shape,
a plain Layout on a register fragment, a fragment wider than the thread block or with two elements (or two
replicas) on one thread register."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import infer


def _annotated_program():
    p = infer.Program(threads=32)
    x = p.alloc_fragment("x", (8, 8), "float32")
    s = p.alloc_shared("s", (16, 16), "float16")
    return p, x, s


@pytest.mark.parametrize("layout,buffer,message", [
    (lk.Fragment([4, 4], forward_thread_fn=lambda i, j: i * 4 + j), "x",
     r"x has shape \[8, 8\]; the layout's input shape is \[4, 4\]"),
    (lk.Layout([8, 16], lambda i, j: i * 16 + j), "s",
     r"s has shape \[16, 16\]; the layout's input shape is \[8, 16\]"),
    (lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i * 8 + j), "x",
     r"the fragment for x reaches thread 63, outside the 32 threads of the block \(element \(4, 0\), replica 0 is on "
     r"thread 32\)"),
    (lk.Fragment([8, 8], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i % 4), "x",
     r"the fragment for x puts two elements on one thread register: \(0, 0\) and \(4, 0\) are both in thread 0"),
    (lk.Fragment([8, 8], forward_thread_fn=lambda i, j, r: j % 4, replicate=2, forward_index_fn=lambda i, j: i * 2
                 + j // 4), "x", r"the fragment for x puts two replicas \(0 and 1\) of element \(0, 0\) on thread 0"),
    (lk.Layout([8, 8], lambda i, j: i * 8 + j), "x",
     "x is a register fragment and needs a Fragment; found a plain Layout"),
])
def test_annotate_layout_refuses_what_cannot_be_the_buffers_layout(layout, buffer, message):
    p, x, s = _annotated_program()
    with pytest.raises(infer.OpValidationError, match=message) as e:
        p.annotate_layout({p.buffers[buffer]: layout})
    assert (e.value.op, e.value.buffer) == ("annotate_layout", buffer)
    assert isinstance(e.value, lk.ShapeError) and buffer not in p.annotations


def test_annotate_layout_still_takes_sound_layouts():
    p, x, s = _annotated_program()
    frag = lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)
    p.annotate_layout({x: frag, s: lk.Layout([16, 16], lambda i, j: j * 16 + i)})
    assert p.annotations["x"] is frag
    p.annotate_layout({x: lk.make_fully_replicated_fragment((8, 8), 32)})
    with pytest.raises(infer.OpValidationError, match="needs a Layout or Fragment; found str"):
        p.annotate_layout({x: "row-major"})


@given(rows=st.sampled_from([2, 4, 8]), cols=st.sampled_from([2, 4, 8]), stride=st.integers(1, 16),
       regs=st.integers(1, 8))
def test_annotate_layout_accepts_exactly_the_sound_fragments(rows, cols, stride, regs):
    """An annotation is accepted iff it places every element once on the block's threads (by enumeration)."""
    p = infer.Program(threads=32)
    x = p.alloc_fragment("x", (rows, cols), "float32")
    f = lk.Fragment([rows, cols], forward_thread_fn=lambda i, j: (i * cols + j) // regs * stride % 64,
                    forward_index_fn=lambda i, j: (i * cols + j) % regs)
    t, k = f.thread_table()[0].ravel(), f.index_table().ravel()
    sound = t.max() < 32 and len(set(zip(t.tolist(), k.tolist()))) == t.size
    try:
        p.annotate_layout({x: f})
    except infer.OpValidationError:
        assert not sound
    else:
        assert sound


@pytest.mark.parametrize("mapping,message", [
    (None, "expects a {buffer: layout} mapping; found NoneType"),
    ([("x", 1)], "expects a {buffer: layout} mapping; found list"),
])
def test_annotate_layout_needs_a_mapping(mapping, message):
    p, x, s = _annotated_program()
    with pytest.raises(infer.OpValidationError, match=message.replace("{", r"\{").replace("}", r"\}")):
        p.annotate_layout(mapping)


def test_annotate_layout_keys_are_whole_buffers():
    p, x, s = _annotated_program()
    frag = lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)
    with pytest.raises(infer.OpValidationError, match="the key for x must be the buffer itself; found Region"):
        p.annotate_layout({x[0:4, 0:8]: frag})
    with pytest.raises(lk.ShapeError, match="expected a Buffer"):
        p.annotate_layout({"x": frag})
