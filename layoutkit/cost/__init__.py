"""Pluggable cost models for layout inference (coming with the cost-model issue)."""
