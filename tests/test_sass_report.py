"""The SASS report's reading of a ``cuobjdump -sass`` listing (benchmarks/sass_report.py): instruction counts,
the k loop and its tiles per iteration; and its skip when the CUDA tools are absent."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "sass_report.py"


@pytest.fixture(scope="module")
def sass_report():
    spec = importlib.util.spec_from_file_location("sass_report", _PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sass_report"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("sass_report", None)


def _listing(lines) -> str:
    return "\n".join(f"        /*{16 * i:04x}*/                   {t} ;  /* 0x000 */" for i, t in enumerate(lines))


PTXAS = ("ptxas info    : Function properties for k\n    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill "
         "loads\nptxas info    : Used 96 registers, used 1 barriers, 376 bytes cmem[0]")


def test_counts_and_a_loop_of_two_tiles(sass_report):
    body = ["BAR.SYNC.DEFER_BLOCKING 0x0", "LDGSTS.E.BYPASS.128 [R1], [R2.64]", "LDSM.16.M88.4 R4, [R8]",
            "HMMA.16816.F32 R12, R4, R6, R12", "IMAD.IADD R8, R8, 0x1, R9", "HMMA.16816.F32 R16, R4, R6, R16",
            "@P0 IADD3 R2, R2, 0x40, RZ", "ISETP.NE.AND P0, PT, R3, 0x1f, PT"]
    text = _listing(["IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]", *body, "@P0 BRA 0x10", "STG.E [R2.64], R12", "EXIT"])
    s = sass_report.parse_sass(text, mma_per_tile=1, smem=1024, ptxas=PTXAS)
    assert (s.regs, s.spill, s.smem) == (96, 12, 1024)
    assert s.counts["HMMA"] == 2 and s.counts["LDGSTS"] == 1 and s.counts["BAR"] == 1 and s.counts["IMMA"] == 0
    assert s.loop == len(body) + 1 and s.tiles_per_iter == 2 and s.per_tile == (len(body) + 1) / 2
    assert s.loop_int == 3  # IMAD, IADD3 (predicated), ISETP


def test_a_rolled_inner_k_step_loop_counts_once_per_step(sass_report):
    inner = ["LDSM.16.M88.4 R4, [R8]", "HMMA.16816.F32 R12, R4, R6, R12", "IADD3 R8, R8, 0x20, RZ",
             "ISETP.NE.AND P1, PT, R8, 0x40, PT", "@P1 BRA 0x10"]
    outer = ["BAR.SYNC.DEFER_BLOCKING 0x0", *inner, "IADD3 R3, R3, 0x1, RZ", "@P0 BRA 0x0"]
    s = sass_report.parse_sass(_listing(outer + ["EXIT"]), mma_per_tile=2, smem=0, ptxas=PTXAS)
    assert s.tiles_per_iter == 1 and s.loop == len(outer) + len(inner)


def test_no_cuda_tools_is_a_skip_with_a_note(sass_report, monkeypatch, capsys):
    monkeypatch.setattr(sass_report, "find_tool", lambda name: None)
    assert sass_report.report(list(sass_report.CONFIGS), None, None) == 0
    assert "skipped" in capsys.readouterr().out
