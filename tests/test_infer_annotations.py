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


# ---- pinned loop layouts, alignment and vector caps (TileLang's loop_layout=, T.assume, atomics) -----

def _row_per_thread():
    from layoutkit.fragment.fragment import Fragment as F

    return F([8, 4], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)


def test_annotate_loop_pins_the_loop_and_completes_its_fragment():
    from layoutkit.infer import Program, infer_layouts

    p = Program(threads=8)
    A = p.tensor("A", (8, 4), "float32")
    x = p.alloc_fragment("x", (8, 4), "float32")
    op = p.parallel((8, 4), writes=[(x, lambda i, j: (i, j))], reads=[(A, lambda i, j: (i, j))])
    p.annotate_loop(op, _row_per_thread())
    r = infer_layouts(p)
    assert r.loop_layouts[op.name].thread_table()[0].tolist() == [[k] * 4 for k in range(8)]
    assert r.layout_map["x"].index_table().tolist() == [[0, 1, 2, 3]] * 8
    again = Program.from_json(p.to_json())
    assert again.loop_annotations[op.name].is_equal(p.loop_annotations[op.name])


def test_annotate_loop_refuses_a_layout_of_another_loop():
    import pytest

    from layoutkit.infer import OpValidationError, Program

    p = Program(threads=8)
    x = p.alloc_fragment("x", (8, 8), "float32")
    op = p.parallel((8, 8), writes=[(x, lambda i, j: (i, j))])
    with pytest.raises(OpValidationError, match="the loop layout of parallel#0 lays out the shape"):
        p.annotate_loop(op, _row_per_thread())
    fill = p.fill(x, 0.0)
    with pytest.raises(OpValidationError, match="expected a loop op of this program"):
        Program(threads=8).annotate_loop(fill, _row_per_thread())


def test_align_and_vector_cap_narrow_the_planned_vector():
    from layoutkit.infer import Program, infer_layouts

    def width(**kw):
        p = Program(threads=128)
        A = p.tensor("A", (64, 576), "uint8")
        B = p.tensor("B", (64, 576), "uint8")
        op = p.parallel((64, 576), writes=[(B, lambda i, j: (i, j))], reads=[(A, lambda i, j: (i, j))], **kw)
        lay = infer_layouts(p).loop_layouts[op.name]
        row = lay.thread_table()[0, 0]
        return int((row != row[0]).argmax())  # the run of columns on thread 0: one vector

    assert width() == 16
    assert width(align={"A": 8}) == 8
    assert width(vector_cap=2) == 2
