"""Layout inference over tile programs (coming with the inference issue)."""
