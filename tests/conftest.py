import os

from hypothesis import HealthCheck, settings

from .guards import refuse_empty_parameter_sets

# The CI profile is derandomised (examples are a function of the test alone) and keeps no example database, so
# a run on a fresh machine tries exactly what a run here tried.
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
    print_blob=True,
)
settings.register_profile("dev", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# `make fuzz`: the hostile-input suite (tests/fuzz) at length; an input that takes over 5 s counts as a hang
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "10000")),
    deadline=5000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    database=None,
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_generate_tests(metafunc):
    refuse_empty_parameter_sets(metafunc)
