"""Hypothesis strategies of hostile values, shared by the fuzz tests of every API group."""

from __future__ import annotations

import json

from hypothesis import strategies as st

HUGE_INTS = st.sampled_from([2**31, 2**32, 2**40, 2**62, 2**63, 2**64, 2**70, 10**30, -(2**63), -1, 0])
"""Integers at and past the sizes the library computes with."""

HOSTILE_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    HUGE_INTS,
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(max_magnitude=4),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.sampled_from([object(), (), [], {}, slice(None), Ellipsis, "lambda i: i", "_i", "1 << 10**8"]),
)
"""Values of every wrong kind: None, bools, huge and negative integers, floats (NaN, inf), complex, strings,
bytes and objects."""

JSON_SCALARS = st.one_of(st.none(), st.booleans(), HUGE_INTS, st.integers(-3, 3),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6))


def deep(depth: int, leaf: object = 0) -> object:
    """``[[[...leaf...]]]`` nested ``depth`` times."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


JSON_VALUES = st.one_of(
    JSON_SCALARS,
    st.lists(JSON_SCALARS, max_size=3),
    st.dictionaries(st.text(max_size=4), JSON_SCALARS, max_size=3),
    st.sampled_from([deep(40), deep(3, None), {"a": deep(30)}, [[1, 2], [3]], [[0, 0], [8]]]),
)
"""JSON values of every type, deep nesting included."""


def paths(doc: object, prefix: tuple = ()) -> list[tuple]:
    """Every path (a tuple of keys and indices) into a JSON document, the root excluded."""
    out = []
    if isinstance(doc, dict):
        items = list(doc.items())
    elif isinstance(doc, list):
        items = list(enumerate(doc))
    else:
        return out
    for key, value in items:
        out.append(prefix + (key,))
        out.extend(paths(value, prefix + (key,)))
    return out


def replaced(doc: object, path: tuple, value: object, delete: bool = False) -> object:
    """A copy of ``doc`` with the value at ``path`` replaced (or removed, with ``delete``)."""
    doc = json.loads(json.dumps(doc))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def attempt(fn):
    """``fn()``, or None when it raises a LayoutError; any other exception fails the test."""
    import layoutkit as lk

    try:
        return fn()
    except lk.LayoutError:  # IntegerOverflowError included: exact evaluation refuses past int64, typed
        return None
