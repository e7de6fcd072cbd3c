"""The recording tools run under a Python with TileLang installed (an optional oracle, never a
dependency): pytest's doctest collection does not import them."""

collect_ignore = ["record_inferred.py", "record_ascend.py"]
