"""Hostile program documents and builder arguments: every outcome of ``Program.from_json`` and of each
builder is a program (an op) or a LayoutError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import infer
from layoutkit.infer import programs

from .hostile import HOSTILE_SCALARS, JSON_VALUES, attempt, deep, paths, replaced

BASES = [programs.gemm(bM=64, bN=64, bK=32).to_dict(), programs.softmax().to_dict(),
         programs.elementwise_binary().to_dict(), programs.ascend_gemm(M=128, N=128, K=128).to_dict()]


def _load(text: str | bytes) -> None:
    try:
        infer.Program.from_json(text)
    except lk.LayoutError:
        pass


@st.composite
def mutated(draw) -> str:
    doc = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(1, 3))):
        where = paths(doc)
        if not where:
            break
        path = draw(st.sampled_from(where))
        doc = replaced(doc, path, draw(JSON_VALUES), delete=draw(st.booleans()))
    return json.dumps(doc)


@given(mutated())
def test_mutated_documents_load_or_raise_typed(text):
    _load(text)


@given(st.one_of(st.text(max_size=40), st.binary(max_size=40), JSON_VALUES.map(json.dumps)))
def test_arbitrary_text_loads_or_raises_typed(text):
    _load(text)


@pytest.mark.parametrize("text", [
    '{"threads": 32, "target": "sm_80", "buffers": [], "ops": [], "annotations": null}',
    '{"threads": 1e999, "target": "sm_80", "buffers": [], "ops": []}',
    '{"threads": NaN, "target": "sm_80", "buffers": [], "ops": []}',
    '{"threads": ' + "9" * 5000 + ', "target": "sm_80", "buffers": [], "ops": []}',
    "[" * 100_000 + "]" * 100_000,
    json.dumps({"threads": 32, "target": "sm_80", "buffers": [], "ops": deep(50)}),
    b"\xff\xfe\x00",
    None,
    json.dumps({"threads": 32, "target": "sm_80", "buffers": [{"name": "x", "shape": [2**70], "dtype": "float32",
                                                               "scope": "local.fragment"}], "ops": []}),
    # an op of no registered kind whose region has a null extent list (found by `make fuzz`)
    json.dumps({"threads": 128, "target": "sm_80",
                "buffers": [{"name": "F", "shape": [64, 64], "dtype": "float16", "scope": "local.fragment"},
                            {"name": "C", "shape": [64, 64], "dtype": "float16", "scope": "global"}],
                "ops": [{"kind": "", "uid": 3, "args": {"src": "F", "dst": "C", "src_region": [[0, 0], [64, 64]],
                                                        "dst_region": [[0, 0], None]}}]}),
])
def test_reproducers_raise_program_format_error(text):
    with pytest.raises(lk.ProgramFormatError) as info:
        infer.Program.from_json(text)
    assert "expected" in str(info.value) and "found" in str(info.value)


def test_error_names_the_field_path():
    doc = programs.softmax().to_dict()
    doc["ops"][1]["uid"] = "seven"
    with pytest.raises(lk.ProgramFormatError) as info:
        infer.Program.from_json(json.dumps(doc))
    assert info.value.path == "$.ops[1].uid" and "str 'seven'" in info.value.found


def test_unknown_buffer_in_args_is_named():
    doc = programs.softmax().to_dict()
    doc["ops"][0]["args"]["src"] = "nope"
    with pytest.raises(lk.ProgramFormatError, match=r"\$\.ops\[0\]\.args\.src"):
        infer.Program.from_json(json.dumps(doc))


def test_valid_documents_still_round_trip():
    for doc in BASES:
        text = json.dumps(doc, sort_keys=True)
        assert infer.Program.from_json(text).to_json() == text


# ---- the builders ----------------------------------------------------------------------------------------

_VALUES = st.one_of(HOSTILE_SCALARS, st.integers(-2, 20), st.floats(-4, 4), st.sampled_from([float("-inf"), 0.5]))


def _subscript(data, extent: int):
    """A subscript of one dim: an int (in or out of range), an open or closed slice, or a hostile value."""
    bound = st.one_of(st.none(), st.integers(-2, extent + 2))
    return data.draw(st.one_of(st.integers(-1, extent), st.builds(slice, bound, bound), HOSTILE_SCALARS))


def _operand(data, bufs):
    """A buffer, a region of one (with hostile subscripts), or a value that is neither."""
    kind = data.draw(st.integers(0, 3))
    buf = data.draw(st.sampled_from(bufs))
    if kind == 0:
        return buf
    if kind == 1:
        key = tuple(_subscript(data, n) for n in buf.shape)
        return attempt(lambda: buf[key if len(key) > 1 else key[0]]) or buf
    if kind == 2:
        return data.draw(HOSTILE_SCALARS)
    return buf.name


@given(st.data())
def test_builders_with_hostile_arguments(data):
    p = infer.Program(threads=32)
    G = p.tensor("G", (64, 64), "float32")
    bufs = [G, p.alloc_fragment("f", (8, 16), "float32"), p.alloc_fragment("r", (8,), "float32"),
            p.alloc_shared("s", (8, 16), "float32"), p.alloc_fragment("c", (16, 16), "float32")]
    value = lambda: data.draw(_VALUES)  # noqa: E731
    operand = lambda: _operand(data, bufs)  # noqa: E731
    calls = [
        lambda: p.copy(operand(), operand()),
        lambda: p.fill(operand(), value()),
        lambda: p.clear(operand()),
        lambda: p.reduce(operand(), operand(), dim=value(), kind=data.draw(st.sampled_from(["sum", "max", None, 3])),
                         clear=value()),
        lambda: p.gemm(operand(), operand(), operand(), transpose_A=value(), transpose_B=value(),
                       policy=data.draw(st.one_of(st.sampled_from(["square", "fullrow"]), HOSTILE_SCALARS))),
        lambda: p.parallel(data.draw(st.one_of(st.lists(st.integers(-1, 16), max_size=2), HOSTILE_SCALARS)),
                           writes=data.draw(st.one_of(st.just([(bufs[2], "lambda i: (i,)")]), HOSTILE_SCALARS,
                                                      st.lists(HOSTILE_SCALARS, max_size=2)))),
        lambda: p.transpose(operand(), operand()),
        lambda: p.atomic_add(operand(), data.draw(st.one_of(_VALUES, st.just(bufs[1])))),
        lambda: p.alias(data.draw(st.one_of(st.text(max_size=3), HOSTILE_SCALARS)), operand()),
        lambda: p.alloc_fragment(data.draw(st.one_of(st.text(max_size=3), HOSTILE_SCALARS)),
                                 data.draw(st.one_of(st.lists(_VALUES, max_size=3), HOSTILE_SCALARS)),
                                 data.draw(st.one_of(st.just("float16"), HOSTILE_SCALARS))),
        lambda: p.shape_of(operand()),
        lambda: infer.infer_layouts(data.draw(st.one_of(HOSTILE_SCALARS, st.just(G)))),
    ]
    for _ in range(data.draw(st.integers(1, 4))):
        attempt(data.draw(st.sampled_from(calls)))
    if data.draw(st.integers(0, 9)) == 0:  # inference is the slow part: one program in ten
        attempt(lambda: infer.infer_layouts(p))
