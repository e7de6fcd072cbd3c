"""``infer --target`` accepts every target a registered backend serves, spelled as that backend spells it,
and the solve runs on it (sm_100 included); one parser reads NVIDIA arch strings."""

from __future__ import annotations

import json

import pytest

from layoutkit.backends import served_targets, target_name
from layoutkit.cli import main
from layoutkit.errors import TargetError
from layoutkit.targets.nv import ARCH_RANGE, parse_arch


@pytest.mark.parametrize("target", ["sm_70", "sm_75", "sm_80", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120"])
def test_infer_runs_on_every_nvidia_target(target, capsys):
    assert main(["infer", "examples/gemm.py", "--target", target, "--json"]) == 0
    out = capsys.readouterr()
    assert f"target {target}" in out.err
    assert json.loads(out.out)["C_local"]["forward_thread"]


@pytest.mark.parametrize("text, name, example", [("SM_100A", "sm_100a", "gemm.py"), (" sm_100F", "sm_100f", "gemm.py"),
                                                  (" Ascend ", "ascend", "ascend_gemm.py")])
def test_targets_are_spelled_as_their_backend_spells_them(text, name, example, capsys):
    assert target_name(text) == name
    assert main(["infer", f"examples/{example}", "--target", text]) == 0
    assert f"target {name}" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["sm_69", "sm_121", "sm_90b", "sm90", "cuda", "sm_9o", ""])
def test_a_target_no_backend_serves_is_one_error_naming_it(target, capsys):
    with pytest.raises(TargetError, match=f"found '{target}'"):
        target_name(target)
    assert main(["infer", "examples/gemm.py", "--target", target]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and f"found '{target}'" in err and " or ".join(served_targets()) in err


def test_the_arch_parser_round_trips():
    lo, hi = ARCH_RANGE
    for number in range(lo, hi + 1):
        for suffix in ("", "a", "f"):
            assert parse_arch(f"sm_{number}{suffix}") == (number, suffix)
            assert target_name(f"sm_{number}{suffix}") == f"sm_{number}{suffix}"
    with pytest.raises(TargetError, match="found 'sm_8x'"):
        parse_arch("sm_8x")
