"""Ascend target: C0 and fractal layouts, data movement (coming with the Ascend issue)."""
