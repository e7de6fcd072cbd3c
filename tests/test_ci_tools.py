"""The type-check gate of CI (tools/check_types.py): what counts as a new error."""

from __future__ import annotations

import doctest
import importlib.util
from collections import Counter
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("check_types", Path(__file__).resolve().parents[1] / "tools" /
                                              "check_types.py")
check_types = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(check_types)

STRICT = ("layoutkit/algebra/", "layoutkit/fragment/", "layoutkit/tla/")

OUTPUT = """\
layoutkit/cli.py:187: error: Incompatible types in assignment (expression has type "str")  [assignment]
layoutkit/cli.py:200: error: Incompatible types in assignment (expression has type "str")  [assignment]
layoutkit/algebra/layout.py:3: error: Function is missing a return type annotation  [no-untyped-def]
layoutkit/plot/draw.py:9: note: see https://mypy.readthedocs.io
Found 3 errors in 2 files (checked 98 source files)
"""


def test_doctests():
    assert doctest.testmod(check_types).failed == 0


def test_a_baselined_error_is_not_new_but_one_more_of_it_is():
    errors = check_types.parse(OUTPUT)
    assert [line for _, line, _ in errors] == [187, 200, 3]
    key = errors[0][0]
    assert key == 'layoutkit/cli.py: [assignment] Incompatible types in assignment (expression has type "str")'
    fresh = check_types.new_errors(errors[:2], Counter({key: 1}), strict=STRICT)
    assert fresh == [errors[1][2]]
    assert check_types.new_errors(errors[:2], Counter({key: 2}), strict=STRICT) == []


def test_strict_packages_take_no_baseline():
    errors = check_types.parse(OUTPUT)
    assert check_types.new_errors(errors[2:], Counter({errors[2][0]: 5}), strict=STRICT) == [errors[2][2]]


def test_baseline_round_trip(tmp_path):
    counts = Counter({"a.py: [x] m": 2, "b.py: [y] n\twith a tab": 1})
    check_types.write_baseline(counts, tmp_path / "b.txt")
    assert check_types.read_baseline(tmp_path / "b.txt") == counts


def test_strict_packages_are_read_from_the_mypy_overrides(tmp_path):
    (tmp_path / "p.toml").write_text('[[tool.mypy.overrides]]\nmodule = ["layoutkit.tla.*", "layoutkit.algebra.*"]\n'
                                     'strict = true\n[[tool.mypy.overrides]]\nmodule = "layoutkit.cli"\n'
                                     'ignore_errors = true\n')
    assert check_types.strict_packages(tmp_path / "p.toml") == ("layoutkit/tla/", "layoutkit/algebra/")
