"""CUDA and Ascend C code generation (coming with the codegen issue)."""
