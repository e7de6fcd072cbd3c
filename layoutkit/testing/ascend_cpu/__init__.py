"""A CPU model of the Ascend C API subset the layoutkit printer emits (``kernel_operator.h``), and a runner that
compiles a printed kernel with the host C++ compiler against it and runs every AI core of a launch on numpy
arrays (:func:`run_ascend_c`).  See the header's opening comment for the modelled semantics: fractal
addressing with C0 = 32 bytes / element size, burst lengths and strides in 32-byte blocks, one in-order queue
per pipe (MTE2 / MTE1 / M / FIX on the cube, MTE2 / V / MTE3 on each vector core) ordered only by the flags,
garbage-filled and bounds-checked buffers, and races between AI cores on global memory.
"""

from .harness import HEADER_DIR, AscendCpuError, build, compiler, run_ascend_c, run_kernel

__all__ = ["HEADER_DIR", "AscendCpuError", "build", "compiler", "run_ascend_c", "run_kernel"]
