"""Fragment = Layout + thread map + replication (coming with the Fragment issue)."""
