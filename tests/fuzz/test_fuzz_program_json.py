"""Hostile program documents: every outcome of ``Program.from_json`` is a program or a LayoutError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import infer
from layoutkit.infer import programs

from .hostile import JSON_VALUES, deep, paths, replaced

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
