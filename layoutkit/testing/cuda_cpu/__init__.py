"""A CPU execution harness for printed CUDA: the ``.cu`` text compiled with the host C++ compiler.

The inline PTX of the printed kernels (``mma.sync``, ``ldmatrix``, ``cp.async``) is rewritten into calls
of a header that implements it after the PTX ISA, with every thread of a block run as a fiber: barriers
and warp collectives are real rendezvous points, cp.async lands at its wait_group, shared memory starts as
garbage, and every access is bounds-, alignment- and race-checked.  sm_90 kernels add tensor maps (encoded by
the kernel's own host encoder against the harness's ``cuTensorMapEncodeTiled``), TMA tile loads, mbarriers,
``setmaxnreg`` and ``wgmma`` (``lk_cuda_cpu_sm90.h``), and their epilogues ``stmatrix``, named barriers, the
async proxy fence, TMA stores and bulk async-groups (``lk_cuda_cpu_sm90_store.h``).  See :func:`run_cuda`.
"""

from .harness import HEADER, CudaRun, HarnessError, build, compiler, run_cuda
from .translate import KernelInfo, Translation, TranslationError, translate

__all__ = ["HEADER", "CudaRun", "HarnessError", "KernelInfo", "Translation", "TranslationError", "build", "compiler",
           "run_cuda", "translate"]
