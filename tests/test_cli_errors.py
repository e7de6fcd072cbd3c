"""Every bad input to the ``layoutkit`` command: exit code 2, one ``error:`` line on stderr, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from layoutkit.cli import main
from layoutkit.infer import programs

BAD_PROGRAMS = {
    "name_error.py": "def program():\n    return undefined_name\n",
    "syntax_error.py": "def program(:\n    pass\n",
    "raises_at_import.py": "import json\njson.loads('{')\n",
    "neither.py": "x = 1\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    "wrong_type.py": "def program():\n    return 42\n",
    "builder_error.py": ("from layoutkit import infer\ndef program():\n    p = infer.Program(threads=32)\n"
                         "    return p.alloc_fragment('x', (0,), 'float32')\n"),
    "ops_only.json": json.dumps({"ops": []}),
    "garbage.json": b"\xff\xfe\x00\x01",
    "deep.json": "[" * 50_000 + "]" * 50_000,
    "huge_number.json": '{"threads": ' + "9" * 6000 + "}",
    "null.json": "null",
    "wrong_types.json": json.dumps({**programs.elementwise().to_dict(), "buffers": {"a": 1}}),
    "not_a_program.txt": "hello",
}


def _write(tmp_path, name: str, content: str | bytes):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _check_one_line_exit_2(code: int, err: str, out: str = "") -> None:
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("error:") and "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("name", sorted(BAD_PROGRAMS))
def test_bad_program_files(name, tmp_path, capsys):
    path = _write(tmp_path, name, BAD_PROGRAMS[name])
    code = main(["infer", str(path)])
    captured = capsys.readouterr()
    _check_one_line_exit_2(code, captured.err)


def test_program_errors_name_file_and_line(tmp_path, capsys):
    path = _write(tmp_path, "name_error.py", BAD_PROGRAMS["name_error.py"])
    assert main(["infer", str(path)]) == 2
    err = capsys.readouterr().err
    assert "name_error.py:2: NameError: name 'undefined_name' is not defined" in err
    path = _write(tmp_path, "syntax_error.py", BAD_PROGRAMS["syntax_error.py"])
    assert main(["infer", str(path)]) == 2
    assert "syntax_error.py:1: SyntaxError" in capsys.readouterr().err


def test_json_errors_name_the_field(tmp_path, capsys):
    path = _write(tmp_path, "ops_only.json", BAD_PROGRAMS["ops_only.json"])
    assert main(["infer", str(path)]) == 2
    assert "$: expected the field 'threads'; found no such field" in capsys.readouterr().err


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path, capsys):
    path = _write(tmp_path, "p.json", "{}")
    path.chmod(0)
    code = main(["infer", str(path)])
    _check_one_line_exit_2(code, capsys.readouterr().err)


def test_directory_is_not_a_program(tmp_path, capsys):
    (tmp_path / "d.json").mkdir()
    code = main(["infer", str(tmp_path / "d.json")])
    _check_one_line_exit_2(code, capsys.readouterr().err)


BAD_ARGS = [
    ["show", "lambda i: i", "--shape", "a,b"],
    ["show", "lambda i: i", "--shape", "-1"],
    ["show", "lambda i: i", "--shape", ""],
    ["show", "lambda i: i", "--shape", "4", "--replicate", "x"],
    ["show", "lambda i: i", "--shape", "4", "--thread", "lambda i: i", "--replicate", "0"],
    ["check", "lambda i: i +", "--shape", "4"],
    ["check", "lambda i: i / 2", "--shape", "4"],
    ["check", "lambda i: i ** 2", "--shape", "4"],
    ["check", "lambda i: abs(i)", "--shape", "4"],
    ["check", "lambda i: (", "--shape", "4"],
    ["check", "", "--shape", "4"],
    ["check", "lambda i: i", "--shape", "4", "--method", "nope"],
    ["check", "lambda i: j", "--shape", "4"],
    ["infer"],
    [],
    ["frobnicate"],
]


@pytest.mark.parametrize("argv", BAD_ARGS, ids=[" ".join(a) or "no-args" for a in BAD_ARGS])
def test_bad_arguments(argv, capsys):
    code = main(argv)
    _check_one_line_exit_2(code, capsys.readouterr().err)


def test_installed_command_bad_json_one_line(tmp_path):
    path = _write(tmp_path, "ops_only.json", BAD_PROGRAMS["ops_only.json"])
    for argv in (["infer", str(path)], ["show", "lambda i: i", "--shape", "x"]):
        out = subprocess.run([sys.executable, "-m", "layoutkit.cli", *argv], capture_output=True, text=True,
                             timeout=60)
        _check_one_line_exit_2(out.returncode, out.stderr)
        assert out.stdout == ""


def test_inference_failure_is_the_only_stderr_line(tmp_path, capsys):
    doc = programs.gemm(bM=64, bN=64, bK=32).to_dict()
    doc["threads"] = 1  # valid document, refused by the GEMM rule
    path = _write(tmp_path, "one_thread.json", json.dumps(doc))
    code = main(["infer", str(path)])
    err = capsys.readouterr().err
    _check_one_line_exit_2(code, err)
    assert "whole warps" in err
