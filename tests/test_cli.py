"""The ``layoutkit`` command: the installed entry point in a subprocess, and ``main()`` in process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from layoutkit.cli import main

_BIN = os.path.join(os.path.dirname(sys.executable), "layoutkit")


def _command() -> list[str]:
    """The installed entry point next to this interpreter, else ``python -m layoutkit.cli``."""
    if os.path.exists(_BIN) and os.access(_BIN, os.X_OK):
        return [_BIN]
    found = shutil.which("layoutkit")
    return [found] if found else [sys.executable, "-m", "layoutkit.cli"]


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    # generous: a shared CI machine can be slow to start matplotlib and draw five figures
    return subprocess.run(_command() + list(args), capture_output=True, text=True, timeout=180, cwd=cwd)


# ---- the installed command (subprocess) ---------------------------------------------------------


def test_show_new_form_with_table_and_plot(tmp_path):
    out = run("show", "lambda i, j: i * 8 + (j ^ i)", "--shape", "4,8", "--plot", str(tmp_path), "--formats", "svg")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Layout((4, 8) -> (32,), transform: (_i, _j) -> (_i * 8 + (_j ^ _i),))"
    assert "  1   9   8  11  10  13  12  15  14" in lines
    assert "bijective onto the output box: proved by f2" in out.stdout
    assert "inverse: Layout((32,) -> (4, 8)" in out.stdout
    assert sorted(os.listdir(tmp_path)) == ["layout_input.svg", "layout_output.svg"]
    ET.parse(tmp_path / "layout_input.svg")  # well-formed
    assert out.stderr == ""


def test_show_old_positional_form():
    out = run("show", "8x8", "lambda i, j: (j, i)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Layout((8, 8) -> (8, 8), transform: (_i, _j) -> (_j, _i))")
    assert "inverse: Layout((8, 8) -> (8, 8), transform: (_i, _j) -> (_j, _i))" in out.stdout


def test_check_exit_codes():
    ok = run("check", "lambda i, j: i * 8 + (j ^ i)", "--shape", "8x8")
    assert ok.returncode == 0 and "verdict: bijective" in ok.stdout and "method:  f2" in ok.stdout
    bad = run("check", "lambda i, j: i + j", "--shape", "8,8")
    assert bad.returncode == 1
    assert "verdict: not bijective" in bad.stdout and "witness: (0, 1) and (1, 0) both map to (1,)" in bad.stdout


@pytest.mark.parametrize("args, message", [
    (["check", "lambda i, j: i +", "--shape", "8,8"], "cannot parse index function"),
    (["check", "lambda i, j: __import__('os')", "--shape", "2,2"], "unsupported syntax"),
    (["check", "lambda i: i"], "missing --shape"),
    (["show", "lambda i, j: i", "--shape", "0,4"], "shape must be positive integers"),
    (["show", "lambda i: i", "--shape", "4,4"], "must take 2 arguments"),
    (["infer", "no_such_program.py"], "no such program file"),
    (["frobnicate"], "invalid choice"),
])
def test_errors_go_to_stderr_with_exit_2(args, message):
    out = run(*args)
    assert out.returncode == 2
    assert message in out.stderr and out.stdout == ""


def test_module_fallback_runs():
    out = subprocess.run([sys.executable, "-m", "layoutkit.cli", "check", "lambda i: i", "--shape", "4"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "verdict: bijective" in out.stdout


# ---- in process (fast) ---------------------------------------------------------------------------


def test_show_fragment_four_line_view(capsys):
    assert main(["show", "lambda i, j: j % 2", "--shape", "4,4", "--thread", "lambda i, j: i * 2 + j // 2"]) == 0
    out = capsys.readouterr().out
    assert "Shape:     [4, 4] -> [2] registers per thread" in out
    assert "Replicate: 1" in out and "  0  T0:L0  T0:L1  T1:L0  T1:L1" in out
    assert "injective (one element per thread register): proved" in out


def test_check_fragment_injectivity(capsys):
    assert main(["check", "lambda i, j: 0", "--shape", "2,2", "--thread", "lambda i, j: i"]) == 1
    assert "not injective" in capsys.readouterr().out


def test_large_layout_skips_table_and_isl_method(capsys):
    # 48 rows: not affine over F2, so islpy decides (on a power-of-two shape the F2 rank would)
    assert main(["show", "lambda i, j: i * 64 + j", "--shape", "48,64", "--method", "isl"]) == 0
    out = capsys.readouterr().out
    assert "proved by isl" in out and len(out.splitlines()) == 4
    assert "table: not printed (3072 cells > --table-cells 256;" in out


def test_shape_given_twice_is_an_error(capsys):
    assert main(["show", "8x8", "lambda i, j: (j, i)", "--shape", "8,8"]) == 2
    assert "give the shape once" in capsys.readouterr().err


def test_demo_still_runs(capsys):
    assert main(["demo"]) == 0
    assert "== layoutkit demo ==" in capsys.readouterr().out


def test_plot_without_matplotlib_is_exit_2(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["show", "lambda i: i", "--shape", "4", "--plot", str(tmp_path)]) == 2
    assert "pip install layoutkit[plot]" in capsys.readouterr().err


EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[1] / "examples"


def test_infer_prints_four_line_views_and_plots(tmp_path):
    out = run("infer", str(EXAMPLES / "gemm_bias_rowmax.py"), "--plot", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "== row_max" in out.stdout and "Replicate: 8" in out.stdout
    assert "Thread:    _rep % 2 * 64 + _i // 32 * 32 + _i % 8 * 4 + _rep // 2" in out.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "A_shared.png", "B_shared.png", "C_local.png", "bias_frag.png", "row_max.png"]


def test_infer_json_and_program_json_round_trip(tmp_path, capsys):
    import json
    import runpy

    prog = runpy.run_path(str(EXAMPLES / "gemm.py"))["program"](block_m=32, block_n=32)
    path = tmp_path / "gemm.json"
    path.write_text(prog.to_json())
    assert main(["infer", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["C_local"]["forward_thread"] == "_j // 16 * 64 + _i // 16 * 32 + _i % 8 * 4 + _j % 8 // 2"
    assert data["A_shared"]["input_shape"] == [2, 32, 32]


def test_infer_ascend_example(capsys):
    assert main(["infer", str(EXAMPLES / "ascend_gemm.py")]) == 0
    out, err = capsys.readouterr()
    # A in MajorK (CATLASS zN), B in MajorMN (CATLASS nZ), set by the MAD rule
    section = {block.split("\n")[0]: block for block in out.split("== ")[1:]}
    assert "(_i, _j) -> (_j // 16, _i // 16, _i % 16, _j % 16)" in section["A_l0"]
    assert "(_i, _j) -> (_i // 16, _j // 16, _j % 16, _i % 16)" in section["B_l0"]
    # one AI core and memory layouts only: no thread count to report
    assert "threads" not in err and "target ascend" in err


def test_infer_summary_names_threads_on_nv_only(capsys):
    assert main(["infer", str(EXAMPLES / "ascend_gemm.py")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("inferred ") and err.rstrip().endswith("ops, target ascend") and "threads" not in err
    assert main(["infer", str(EXAMPLES / "elementwise.py")]) == 0
    assert " ops on 128 threads, target sm_80" in capsys.readouterr().err


def test_infer_emits_cuda(tmp_path, capsys):
    assert main(["infer", str(EXAMPLES / "gemm.py"), "--emit", str(tmp_path)]) == 0
    (cu,) = tmp_path.glob("*.cu")
    text = cu.read_text()
    assert "__global__" in text and "mma.sync" in text and "ldmatrix" in text
    assert capsys.readouterr().err.count(f"wrote {cu}") == 1


def test_infer_emits_the_sm90_kernel_the_copies_imply_or_the_gemm_instruction_asked(tmp_path, capsys):
    gemm = str(EXAMPLES / "gemm.py")
    assert main(["infer", gemm, "--target", "sm_90", "--emit", str(tmp_path / "ws")]) == 0
    (ws,) = (tmp_path / "ws").glob("*.cu")
    assert "wgmma.mma_async" in ws.read_text() and "__launch_bounds__(256, 1)" in ws.read_text()
    assert main(["infer", gemm, "--target", "sm_90", "--gemm-instruction", "mma", "--emit", str(tmp_path / "m")]) == 0
    (mma,) = (tmp_path / "m").glob("*.cu")
    assert "mma.sync" in mma.read_text() and "wgmma" not in mma.read_text()
    capsys.readouterr()
    assert main(["infer", gemm, "--gemm-instruction", "wgmma", "--emit", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "gemm_instruction='wgmma': no warp-specialised wgmma kernel: the target is 'sm_80'" in err


def test_infer_emits_ascend_c(tmp_path, capsys):
    assert main(["infer", str(EXAMPLES / "ascend_gemm.py"), "--emit", str(tmp_path)]) == 0
    (cpp,) = tmp_path.glob("*.cpp")
    text = cpp.read_text()
    assert '#include "kernel_operator.h"' in text and "Nd2NzParams" in text and "Mmad(" in text
    assert capsys.readouterr().err.count(f"wrote {cpp}") == 1
