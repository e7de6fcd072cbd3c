"""The ``layoutkit`` command's help, version and entry points, and the notes it prints instead of
silently dropping output."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from layoutkit import __version__
from layoutkit.cli import TABLE_CELLS, build_parser, main, parse_target
from layoutkit.cost.registry import cost_model_names


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    return lines[0]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_no_command_prints_usage_and_one_error_line(capsys):
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("usage: layoutkit") and all(c in out for c in ("show", "check", "infer", "demo"))
    assert "give a command: show, check, infer or demo" in _one_error_line(err)
    assert "required: cmd" not in err


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:  # argparse's version action exits 0 after printing
        build_parser().parse_args(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"layoutkit {__version__}"
    assert main(["--version"]) == 0


def test_python_dash_m_layoutkit():
    out = subprocess.run([sys.executable, "-m", "layoutkit", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for command in ("show", "check", "infer", "demo"):
        assert f"\n    {command} " in out.stdout
    assert "``" not in out.stdout and ":mod:" not in out.stdout  # plain text, not RST
    run = subprocess.run([sys.executable, "-m", "layoutkit", "check", "lambda i: i", "--shape", "4"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "verdict: bijective" in run.stdout


def test_every_option_has_help_text():
    parser = build_parser()
    for name, sub in _subparsers(parser).items():
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help text"


def test_help_lists_the_choices(capsys):
    for argv in (["infer", "--help"], ["show", "--help"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
    text = " ".join(capsys.readouterr().out.split())
    for model in cost_model_names():  # from the registry, so a target's model is listed too
        assert model in text
    assert "smem-aware" in text
    assert "ascend or sm_70 .. sm_120 (an a or f suffix too)" in text
    assert "png, svg, pdf, all" in text and f"(default: {TABLE_CELLS})" in text


@pytest.mark.parametrize("target", ["sm_60", "sm_130", "sm_", "gfx90a", "sm_80x"])
def test_target_outside_the_accepted_range_is_refused(target, capsys):
    assert main(["infer", "examples/gemm.py", "--target", target]) == 2
    assert f"target must be ascend or sm_70 .. sm_120 (an a or f suffix too); found '{target}'" in _one_error_line(
        capsys.readouterr().err)


def test_accepted_targets():
    assert [parse_target(t) for t in ("sm_70", "sm_75", "sm_86", "SM_90A", "sm_100", "sm_100f", " ascend ")] == [
        "sm_70", "sm_75", "sm_86", "sm_90a", "sm_100", "sm_100f", "ascend"]


def test_unknown_cost_model_is_one_line_listing_the_known(capsys):
    assert main(["infer", "examples/gemm.py", "--cost-model", "fastest"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "invalid choice: 'fastest'" in line and "register-count" in line and "io-aware" in line


def test_show_with_an_unsupported_call_is_one_readable_line(capsys):
    assert main(["show", "lambda i, j: foo(i)", "--shape", "4,4"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "unsupported syntax 'foo(i)' (a function call)" in line
    assert "Call(" not in line and "ctx=" not in line


def test_replicate_without_thread_is_an_error(capsys):
    assert main(["show", "lambda i, j: i * 4 + j", "--shape", "4,4", "--replicate", "2"]) == 2
    assert "--replicate 2 needs --thread" in _one_error_line(capsys.readouterr().err)
    assert main(["show", "lambda i: 0", "--shape", "4", "--thread", "lambda i, r: i + 4 * r", "--replicate",
                 "2"]) == 0
    assert "replicate: 2" in capsys.readouterr().out


def test_table_over_the_limit_says_so(capsys):
    assert main(["show", "lambda i, j: i * 32 + j", "--shape", "32,32"]) == 0
    out = capsys.readouterr().out
    assert "table: not printed (1024 cells > --table-cells 256;" in out
    assert main(["show", "lambda i, j: i * 32 + j", "--shape", "32,32", "--table-cells", "1024"]) == 0
    out = capsys.readouterr().out
    assert "table: not printed" not in out and "  31   992   993" in out


def test_bad_formats_and_table_cells_are_usage_errors(capsys):
    assert main(["show", "lambda i: i", "--shape", "4", "--formats", "gif"]) == 2
    assert "formats must be among png, svg, pdf, all" in _one_error_line(capsys.readouterr().err)
    assert main(["show", "lambda i: i", "--shape", "4", "--table-cells", "0"]) == 2
    assert "expected a positive integer; found '0'" in _one_error_line(capsys.readouterr().err)


def test_comma_separated_formats(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["show", "lambda i: i", "--shape", "4", "--plot", str(tmp_path), "--formats", "svg,png"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "layout_input.png", "layout_input.svg", "layout_output.png", "layout_output.svg"]
