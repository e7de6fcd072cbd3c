"""Hostile arguments to Fragment and PartialFragment: every outcome is a result or a LayoutError."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk

from .hostile import HOSTILE_SCALARS, attempt
from .test_fuzz_layout import COORDS, SHAPES, index_fns

_try = attempt


@given(SHAPES, index_fns(), st.one_of(st.none(), index_fns()), st.one_of(st.integers(1, 4), HOSTILE_SCALARS),
       st.one_of(st.none(), HOSTILE_SCALARS, st.tuples(st.integers(-1, 64), st.integers(-1, 64))), st.data())
def test_fragments_from_hostile_functions(shape, thread_fn, index_fn, replicate, thread_range, data):
    frag = _try(lambda: lk.Fragment(shape, forward_thread_fn=thread_fn, forward_index_fn=index_fn,
                                    replicate=replicate, thread_range=thread_range))
    if frag is None:
        return
    value = lambda: data.draw(st.one_of(COORDS, HOSTILE_SCALARS))  # noqa: E731
    for call in (lambda: frag.thread_table(), lambda: frag.thread_extent, lambda: frag.prove_injective(),
                 lambda: str(frag), lambda: frag.text(), lambda: frag.map_forward_thread(value(), value()),
                 lambda: frag.apply_thread(value()), lambda: frag.repeat(value()), lambda: frag.replicate(value()),
                 lambda: frag.condense_rep_var(), lambda: frag.bind_thread_range(value(), value()),
                 lambda: lk.PartialFragment(frag, value()), lambda: lk.PartialFragment(frag).combine(value())):
        _try(call)


@given(st.one_of(HOSTILE_SCALARS, st.lists(HOSTILE_SCALARS, max_size=3)), st.one_of(HOSTILE_SCALARS, st.integers(1, 9)))
def test_fully_replicated_fragment_arguments(shape, threads):
    _try(lambda: lk.make_fully_replicated_fragment(shape, threads).thread_table())
