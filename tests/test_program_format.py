"""The JSON program format of docs/program_format.md: the complete example (``examples/gemm.json``) loads,
is the program of ``examples/gemm.py``, and infers the same layouts; the page's examples run."""

from __future__ import annotations

import doctest
import json
import runpy
from pathlib import Path

from layoutkit import cli
from layoutkit.fragment import Fragment
from layoutkit.infer import Program, infer_layouts

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gemm.json"


def test_gemm_json_is_the_program_of_gemm_py():
    loaded = Program.from_json(EXAMPLE.read_text())
    built = runpy.run_path(str(ROOT / "examples" / "gemm.py"))["program"]()
    assert loaded.to_json() == built.to_json()
    assert json.loads(EXAMPLE.read_text()) == json.loads(built.to_json())  # the file is the same document


def test_gemm_json_infers_the_layouts_of_gemm_py():
    loaded = Program.from_json(EXAMPLE.read_text())
    built = runpy.run_path(str(ROOT / "examples" / "gemm.py"))["program"]()
    got, want = infer_layouts(loaded), infer_layouts(built)
    assert sorted(got.layout_map) == ["A_shared", "B_shared", "C_local"]
    acc = got.layout_map["C_local"]
    assert isinstance(acc, Fragment) and acc.thread_extent == 128 and acc.input_shape == (128, 128)
    assert got.layout_map["A_shared"].input_shape == (2, 128, 32)  # the two-stage pipeline's stage dim
    for name in got.layout_map:
        assert got.layout_map[name].is_equal(want.layout_map[name]), name


def test_the_command_infers_the_json_example(capsys):
    assert cli.main(["infer", str(EXAMPLE)]) == 0
    captured = capsys.readouterr()
    assert "== C_local" in captured.out and "inferred 5 ops on 128 threads, target sm_80" in captured.err


def test_program_format_page_examples_run():
    result = doctest.testfile(str(ROOT / "docs" / "program_format.md"), module_relative=False)
    assert result.attempted >= 2 and result.failed == 0
