"""Collection-time guards of the test-suite (wired in by ``tests/conftest.py``).

A ``@pytest.mark.parametrize`` over a list that happens to be empty (a filter that matches no record, a
data file that lost its error cases) collects one skipped item and can never fail: the run stays green
while the test checks nothing.  :func:`refuse_empty_parameter_sets` turns that into a collection error
naming the test and the argument names.
"""

from __future__ import annotations

from collections.abc import Sized

import pytest


class EmptyParameterSetError(pytest.Collector.CollectError):
    """A parametrised test whose parameter list is empty at collection."""


def refuse_empty_parameter_sets(metafunc: pytest.Metafunc) -> None:
    """Raise :class:`EmptyParameterSetError` when a ``parametrize`` marker of ``metafunc``'s test has no values."""
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames")
        values = mark.args[1] if len(mark.args) > 1 else mark.kwargs.get("argvalues")
        # an iterator cannot be measured without being used up: only lists, tuples and the like are checked
        if isinstance(values, Sized) and len(values) == 0:
            raise EmptyParameterSetError(
                f"{metafunc.definition.nodeid}: parametrize({names!r}) collected an empty parameter set; a test "
                "with no cases can never fail: give it its cases or remove it"
            )
