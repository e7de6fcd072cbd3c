"""CATLASS TLA layouts and the CuTe algebra (coming with the TLA issue)."""
