"""Hostile command lines and program files: exit 0, 1 or 2; on 2 one error line and no traceback."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutkit.cli import main

from .test_fuzz_program_json import mutated

WORDS = st.sampled_from(["show", "check", "infer", "demo", "--shape", "--thread", "--replicate", "--method", "isl",
                         "--table-cells", "-1", "0", "8,8", "4x4", "2**70", "99999999999999999999", "lambda i: i",
                         "lambda i, j: (j, i)", "lambda i: i << 10**8", "lambda i: abs(i)", "lambda i,", "", "x",
                         "--json", "--target", "sm_1", "--plot"])


def _check(code: int, err: str) -> None:
    assert code in (0, 1, 2), err
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), err
        assert "internal error" not in err, err


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(WORDS, st.text(max_size=8)), max_size=6))
def test_command_lines(capsys, argv):
    if "--plot" in argv or "demo" in argv or "infer" in argv:
        return  # files and the demo are exercised below and in the CLI tests
    code = main(argv)
    _check(code, capsys.readouterr().err)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_program_documents(tmp_path_factory, capsys, text):
    path = tmp_path_factory.mktemp("doc") / "program.json"
    path.write_text(text)
    code = main(["infer", str(path), "--json"])
    _check(code, capsys.readouterr().err)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=60), st.sampled_from([
    "def program(:\n", "def program():\n    return undefined\n", "raise SystemError('x')\n", "import sys\n",
    "PROGRAM = 3\n", "def program():\n    return []\n", "def program():\n    raise KeyError('k')\n"])))
def test_program_scripts(tmp_path_factory, capsys, source):
    path = tmp_path_factory.mktemp("py") / "program.py"
    path.write_text(source)
    code = main(["infer", str(path)])
    _check(code, capsys.readouterr().err)
    json.dumps(code)


def test_a_loop_past_the_table_limit_is_refused_not_enumerated(tmp_path, capsys):
    # found by `make fuzz`: a copy whose loop extent was mutated to 2**31 made a rule enumerate
    # 2**36 loop points (1 TiB) and the process was killed for memory
    from layoutkit.infer import programs

    doc = programs.gemm(bM=64, bN=64, bK=32).to_dict()
    copy_op = next(o for o in doc["ops"] if o["kind"] == "copy")
    copy_op["loop"][0] = 2**31
    path = tmp_path / "program.json"
    path.write_text(json.dumps(doc))
    assert main(["infer", str(path), "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: copy#") and "at most 67108864" in err and "\n" not in err
