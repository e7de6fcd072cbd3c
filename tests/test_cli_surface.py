"""The ``layoutkit`` command as a Unix tool: several program files per call, every target inference
serves, a refusal that names what to change, a pipe closed early, thread ranges as ``[start, end)``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from layoutkit.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GEMM, ELEMENTWISE = str(EXAMPLES / "gemm.py"), str(EXAMPLES / "elementwise.py")


def test_infer_takes_several_program_files(capsys):
    assert main(["infer", GEMM, ELEMENTWISE]) == 0
    out, err = capsys.readouterr()
    assert out.index(f"### {GEMM}") < out.index("== C_local") < out.index(f"### {ELEMENTWISE}")
    assert f"{GEMM}: inferred 5 ops" in err and f"{ELEMENTWISE}: inferred 4 ops" in err


def test_infer_json_of_several_files_is_keyed_by_file(capsys):
    assert main(["infer", GEMM, ELEMENTWISE, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert list(payload) == [GEMM, ELEMENTWISE]
    assert payload[GEMM]["C_local"]["thread_range"] == [0, 128]  # [start, end)


def test_several_files_plot_under_their_stems(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from layoutkit.infer import programs

    small = programs.elementwise(M=64, N=64, bM=8, bN=8, threads=32).to_json()  # small figures: a fast test
    (tmp_path / "first.json").write_text(small)
    (tmp_path / "second.json").write_text(small)
    out = tmp_path / "figs"
    assert main(["infer", str(tmp_path / "first.json"), str(tmp_path / "second.json"), "--plot", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["first.A_frag.png", "first.B_frag.png", "second.A_frag.png",
                                                     "second.B_frag.png"]


@pytest.mark.parametrize("target", ["sm_70", "sm_90", "sm_100", "sm_120"])
def test_every_nvidia_target_infers_the_gemm(target, capsys):
    assert main(["infer", GEMM, "--target", target]) == 0
    assert f"target {target}" in capsys.readouterr().err


def test_ascend_refusal_names_what_to_change(capsys):
    assert main(["infer", GEMM, "--target", "ascend"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "is built for sm_80" in err and "A_shared" in err and "must live in l0a or l1" in err
    assert "examples/ascend_gemm.py" in err
    assert "plain Layout" not in err and "internal" not in err


def test_thread_ranges_print_as_start_end(capsys):
    assert main(["infer", GEMM, "--target", "sm_90"]) == 0
    out = capsys.readouterr().out
    assert "bound to threads [128, 256)" in out  # the four-line view says what the repr says
    assert "(128, 128)" not in out and "bound to threads (" not in out


def test_a_pipe_closed_early_ends_quietly():
    """``layoutkit show ... | head -1``: the reader closes the pipe after one line; the command ends with exit
    0 and nothing on stderr (the output is larger than a pipe buffer, so the write after the close fails)."""
    proc = subprocess.Popen([sys.executable, "-m", "layoutkit", "show", "lambda i, j: (j, i)", "--shape", "128,128",
                             "--table-cells", "16384"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0
    assert first.startswith(b"Layout((128, 128) -> (128, 128)")
    assert err == b""
