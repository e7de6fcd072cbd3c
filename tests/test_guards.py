"""The collection guard of tests/conftest.py: an empty parameter set fails the run instead of skipping."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

GUARD = "from tests.guards import refuse_empty_parameter_sets as pytest_generate_tests\n"


def test_an_empty_parameter_set_fails_collection(pytester):
    pytester.makeconftest(GUARD)
    pytester.makepyfile(test_empty="""
        import pytest
        CASES = [c for c in range(3) if c > 5]

        @pytest.mark.parametrize("case", CASES)
        def test_nothing(case):
            assert case
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*test_nothing: parametrize('case') collected an empty parameter set*"])


def test_non_empty_and_iterator_parameter_sets_pass(pytester):
    pytester.makeconftest(GUARD)
    pytester.makepyfile(test_full="""
        import pytest

        @pytest.mark.parametrize("case", [1, 2])
        def test_listed(case):
            assert case

        @pytest.mark.parametrize("case", (c for c in (3, 4)))
        def test_generated(case):
            assert case
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
