"""NVIDIA target: swizzles, MMA fragments, warp partition, bank model (coming with the NV issue)."""
